import * as Option from "effect/Option"
import type * as RecordV2 from "../RecordV2.js"

type Entry = RecordV2.SessionEntry
type Message = RecordV2.Message
type MessageEntry = RecordV2.MessageEntry

export interface Group {
  readonly role: Message["role"]
  readonly entries: ReadonlyArray<MessageEntry>
  readonly messages: ReadonlyArray<Message>
}

export interface Model {
  readonly provider?: string
  readonly model?: string
  readonly thinking?: string
}

export type Estimate = (messages: ReadonlyArray<Message>) => number

export interface BuildOptions {
  readonly budget?: number | undefined
  readonly estimate?: Estimate | undefined
}

export interface CompactionPoint {
  readonly firstKeptEntryId: string | null
  readonly summarised: ReadonlyArray<Message>
  readonly kept: ReadonlyArray<Message>
}

export const SUMMARY_PREFIX = "The conversation before this point was compacted into the following summary:\n\n<summary>\n"
export const SUMMARY_SUFFIX = "\n</summary>"

/** A file costs about as much as an image of ordinary size, whatever its encoded length. */
export const FILE_TOKENS = 1_000

const messageOf = (entry: Entry): Message | undefined => entry.kind === "message" ? entry.message : undefined

/** Each position's last position that must share its group: the last answer to any call made there. */
const closings = (entries: ReadonlyArray<Entry>): Int32Array => {
  const close = new Int32Array(entries.length)
  const callAt = new Map<string, number>()
  for (let i = 0; i < entries.length; i++) {
    close[i] = i
    const message = messageOf(entries[i]!)
    if (message === undefined) continue
    if (message.role === "assistant") {
      for (const part of message.content) {
        if (part.type === "tool-call" && part.providerExecuted !== true) callAt.set(part.id, i)
      }
    } else if (message.role === "tool") {
      const at = callAt.get(message.toolCallId)
      if (at !== undefined) close[at] = i
    }
  }
  return close
}

/**
 * Where each group lies in the branch, as positions in the entries: group `g` opens at `starts[g]`
 * and ends at `ends[g]`, both inclusive. Kept as numbers, so that building a context allocates
 * nothing per group.
 */
interface Bounds {
  readonly starts: Int32Array
  readonly ends: Int32Array
  readonly count: number
}

const boundsOf = (entries: ReadonlyArray<Entry>): Bounds => {
  const close = closings(entries)
  const starts = new Int32Array(entries.length)
  const ends = new Int32Array(entries.length)
  let count = 0
  let i = 0
  while (i < entries.length) {
    if (entries[i]!.kind !== "message") {
      i++
      continue
    }
    let end = close[i]!
    for (let j = i + 1; j <= end; j++) if (close[j]! > end) end = close[j]!
    starts[count] = i
    ends[count] = end
    count++
    i = end + 1
  }
  return { starts, ends, count }
}

/** The messages of the entries from `from` (inclusive) to `to` (exclusive), after `head`. */
const messagesBetween = (head: ReadonlyArray<Message>, entries: ReadonlyArray<Entry>, from: number, to: number): Array<Message> => {
  const out = head.slice()
  for (let i = from; i < to; i++) {
    const entry = entries[i]!
    if (entry.kind === "message") out.push(entry.message)
  }
  return out
}

export const groups = (entries: ReadonlyArray<Entry>): ReadonlyArray<Group> => {
  const { count, ends, starts } = boundsOf(entries)
  const out: Array<Group> = []
  for (let g = 0; g < count; g++) {
    const groupEntries: Array<MessageEntry> = []
    const messages: Array<Message> = []
    for (let i = starts[g]!; i <= ends[g]!; i++) {
      const entry = entries[i]!
      if (entry.kind === "message") {
        groupEntries.push(entry)
        messages.push(entry.message)
      }
    }
    out.push({ role: messages[0]!.role, entries: groupEntries, messages })
  }
  return out
}

const textTokens = (characters: number): number => Math.ceil(characters / 4)

const partCharacters = (part: RecordV2.AssistantPart): number => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return part.text.length
    case "file":
      return 0
    case "tool-call":
      return part.name.length + JSON.stringify(part.arguments).length
    case "tool-result":
      return part.toolName.length + (JSON.stringify(part.result)?.length ?? 0)
  }
}

export const approximateTokens = (message: Message): number => {
  if (message.role === "system") return textTokens(message.content.length)
  let characters = 0
  let files = 0
  for (const part of message.content) {
    if (part.type === "file") files++
    else characters += partCharacters(part)
  }
  if (message.role === "tool") {
    characters += message.toolName.length
    if (message.result !== undefined) characters += JSON.stringify(message.result)?.length ?? 0
  }
  return textTokens(characters) + files * FILE_TOKENS
}

const sumApproximate = (messages: ReadonlyArray<Message>, from = 0): number => {
  let total = 0
  for (let i = from; i < messages.length; i++) total += approximateTokens(messages[i]!)
  return total
}

export const estimate: Estimate = (messages) => {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!
    if (message.role === "assistant" && message.meta?.usage !== undefined) {
      const { inputTokens, outputTokens } = message.meta.usage
      return inputTokens + outputTokens + sumApproximate(messages, i + 1)
    }
  }
  return sumApproximate(messages)
}

export const isSummary = (message: Message): boolean =>
  message.role === "user" && message.content.length === 1 && message.content[0]!.type === "text" &&
  message.content[0]!.text.startsWith(SUMMARY_PREFIX) && message.content[0]!.text.endsWith(SUMMARY_SUFFIX)

export const summaryMessage = (compaction: RecordV2.CompactionEntry): RecordV2.UserMessage => ({
  role: "user",
  id: compaction.id,
  content: [{ type: "text", text: SUMMARY_PREFIX + compaction.summary + SUMMARY_SUFFIX }]
})

/** The branch seen through its newest compaction: the opening system messages, the summary, and the groups kept. */
interface View {
  readonly bounds: Bounds
  /** The opening system messages, then the summary if there is a compaction. */
  readonly head: ReadonlyArray<Message>
  readonly summary: RecordV2.UserMessage | undefined
  /** The first group kept after the head. */
  readonly keptFrom: number
}

const view = (entries: ReadonlyArray<Entry>): View => {
  const bounds = boundsOf(entries)
  const { count, ends, starts } = bounds
  const pinned: Array<Message> = []
  let leading = 0
  for (; leading < count; leading++) {
    const entry = entries[starts[leading]!]!
    if (entry.kind !== "message" || entry.message.role !== "system") break
    pinned.push(entry.message)
  }

  let compaction: RecordV2.CompactionEntry | undefined
  let at = -1
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.kind === "compaction") {
      compaction = entry
      at = i
      break
    }
  }
  let keptFrom = leading
  if (compaction !== undefined) {
    let cut = at + 1
    if (compaction.firstKeptEntryId !== null) {
      const kept = entries.findIndex((entry) => entry.id === compaction.firstKeptEntryId)
      if (kept !== -1 && kept < at) cut = kept
    }
    // The first group that ends at or after the cut: a cut inside a group moves back to its start.
    while (keptFrom < count && ends[keptFrom]! < cut) keptFrom++
  }
  const summary = compaction === undefined ? undefined : summaryMessage(compaction)
  return { bounds, head: summary === undefined ? pinned : [...pinned, summary], summary, keptFrom }
}

/** Where group `g` opens, or the end of the entries for the position after the last group. */
const startOf = (bounds: Bounds, g: number, entries: ReadonlyArray<Entry>): number =>
  g < bounds.count ? bounds.starts[g]! : entries.length

/**
 * Where a budget may cut: the groups that open with a user message, and the first kept group when a
 * summary precedes it (the summary is then the user message the context opens with). A cut
 * elsewhere would open the context on an answer whose question was dropped, which providers refuse.
 */
const cuts = (entries: ReadonlyArray<Entry>, view: View): Array<number> => {
  const { bounds, keptFrom, summary } = view
  const out: Array<number> = []
  for (let g = keptFrom; g < bounds.count; g++) {
    const opening = entries[bounds.starts[g]!]!
    if ((g === keptFrom && summary !== undefined) || (opening.kind === "message" && opening.message.role === "user")) out.push(g)
  }
  return out
}

export const build = (entries: ReadonlyArray<Entry>, options?: BuildOptions): ReadonlyArray<Message> => {
  const seen = view(entries)
  const { bounds, head, keptFrom } = seen
  const from = (g: number) => messagesBetween(head, entries, startOf(bounds, g, entries), entries.length)
  const budget = options?.budget
  if (budget === undefined) return from(keptFrom)
  const allowed = cuts(entries, seen)
  // No user message to open with: nothing can be dropped without opening on an answer.
  if (allowed.length === 0) return from(keptFrom)
  const custom = options?.estimate
  let at = 0
  if (custom === undefined) {
    // A response's usage counts the whole context it answered, so it cannot be re-read for a shorter one:
    // the rest costs the whole's estimate less the approximate cost of the groups dropped.
    let total = estimate(from(keptFrom)) - sumApproximate(messagesBetween([], entries, startOf(bounds, keptFrom, entries), startOf(bounds, allowed[0]!, entries)))
    while (total > budget && at < allowed.length - 1) {
      total -= sumApproximate(messagesBetween([], entries, bounds.starts[allowed[at]!]!, bounds.starts[allowed[at + 1]!]!))
      at++
    }
  } else {
    // Fewer messages never cost more, so the fewest groups to drop are found by bisection over the cuts.
    let high = allowed.length - 1
    while (at < high) {
      const middle = (at + high) >>> 1
      if (custom(from(allowed[middle]!)) <= budget) high = middle
      else at = middle + 1
    }
  }
  return from(allowed[at]!)
}

export const model = (entries: ReadonlyArray<Entry>): Option.Option<Model> => {
  let fromMeta: Model | undefined
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.kind === "model") {
      return Option.some(
        entry.thinking === undefined
          ? { provider: entry.provider, model: entry.model }
          : { provider: entry.provider, model: entry.model, thinking: entry.thinking }
      )
    }
    if (fromMeta === undefined && entry.kind === "message" && entry.message.role === "assistant") {
      const meta = entry.message.meta
      if (meta !== undefined && (meta.provider !== undefined || meta.model !== undefined)) {
        const found: { provider?: string; model?: string } = {}
        if (meta.provider !== undefined) found.provider = meta.provider
        if (meta.model !== undefined) found.model = meta.model
        fromMeta = found
      }
    }
  }
  return Option.fromNullable(fromMeta)
}

export const compactionPoint = (
  entries: ReadonlyArray<Entry>,
  keep: number,
  options?: { readonly estimate?: Estimate | undefined }
): Option.Option<CompactionPoint> => {
  const { bounds, keptFrom, summary } = view(entries)
  const cost = options?.estimate ?? sumApproximate
  const rest = (g: number) => messagesBetween([], entries, startOf(bounds, g, entries), entries.length)
  // The oldest group from which the rest fits in `keep`, measured whole as it will be sent; fewer messages
  // never cost more, so it is found by bisection.
  let from = keptFrom
  let high = bounds.count
  while (from < high) {
    const middle = (from + high) >>> 1
    if (cost(rest(middle)) <= keep) high = middle
    else from = middle + 1
  }
  if (from === keptFrom) return Option.none()
  const cut = startOf(bounds, from, entries)
  return Option.some({
    firstKeptEntryId: from < bounds.count ? entries[cut]!.id : null,
    summarised: messagesBetween(summary === undefined ? [] : [summary], entries, bounds.starts[keptFrom]!, cut),
    kept: rest(from)
  })
}

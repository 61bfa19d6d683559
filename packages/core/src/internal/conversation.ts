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

/** A group with where it lies in the branch: `start` and `end` are positions in the entries, both inclusive. */
interface Span extends Group {
  readonly start: number
  readonly end: number
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

const spansOf = (entries: ReadonlyArray<Entry>): Array<Span> => {
  const close = closings(entries)
  const spans: Array<Span> = []
  let i = 0
  while (i < entries.length) {
    const first = messageOf(entries[i]!)
    if (first === undefined) {
      i++
      continue
    }
    let end = close[i]!
    for (let j = i + 1; j <= end; j++) if (close[j]! > end) end = close[j]!
    const groupEntries: Array<MessageEntry> = []
    const messages: Array<Message> = []
    for (let j = i; j <= end; j++) {
      const entry = entries[j]!
      if (entry.kind === "message") {
        groupEntries.push(entry)
        messages.push(entry.message)
      }
    }
    spans.push({ role: first.role, entries: groupEntries, messages, start: i, end })
    i = end + 1
  }
  return spans
}

export const groups = (entries: ReadonlyArray<Entry>): ReadonlyArray<Group> =>
  spansOf(entries).map(({ entries, messages, role }) => ({ role, entries, messages }))

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

/** The branch seen through its newest compaction: what is pinned, the summary, and the groups kept after the cut. */
interface View {
  readonly pinned: ReadonlyArray<Message>
  readonly summary: RecordV2.UserMessage | undefined
  readonly kept: ReadonlyArray<Span>
  /** The first kept group's position in `spans`. */
  readonly keptFrom: number
  readonly spans: ReadonlyArray<Span>
}

const view = (entries: ReadonlyArray<Entry>): View => {
  const spans = spansOf(entries)
  let leading = 0
  while (leading < spans.length && spans[leading]!.role === "system") leading++
  const pinned = spans.slice(0, leading).map((span) => span.messages[0]!)

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
    let g = leading
    while (g < spans.length && spans[g]!.end < cut) g++
    keptFrom = g
  }
  return {
    pinned,
    summary: compaction === undefined ? undefined : summaryMessage(compaction),
    kept: spans.slice(keptFrom),
    keptFrom,
    spans
  }
}

const flatten = (head: ReadonlyArray<Message>, spans: ReadonlyArray<Group>, from: number): Array<Message> => {
  const out = head.slice()
  for (let i = from; i < spans.length; i++) for (const message of spans[i]!.messages) out.push(message)
  return out
}

export const build = (entries: ReadonlyArray<Entry>, options?: BuildOptions): ReadonlyArray<Message> => {
  const { kept, pinned, summary } = view(entries)
  const head = summary === undefined ? pinned : [...pinned, summary]
  const budget = options?.budget
  if (budget === undefined || kept.length <= 1) return flatten(head, kept, 0)
  const custom = options?.estimate
  let drop = 0
  if (custom === undefined) {
    // A response's usage counts the whole context it answered, so it cannot be re-read for a shorter one:
    // the rest costs the whole's estimate less the approximate cost of the groups dropped.
    let total = estimate(flatten(head, kept, 0))
    while (total > budget && drop < kept.length - 1) {
      total -= sumApproximate(kept[drop]!.messages)
      drop++
    }
  } else {
    // Fewer messages never cost more, so the fewest groups to drop are found by bisection.
    let low = 0
    let high = kept.length - 1
    while (low < high) {
      const middle = (low + high) >>> 1
      if (custom(flatten(head, kept, middle)) <= budget) high = middle
      else low = middle + 1
    }
    drop = low
  }
  return flatten(head, kept, drop)
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
  const { kept, summary } = view(entries)
  const cost = options?.estimate ?? sumApproximate
  // The oldest group from which the rest fits in `keep`, measured whole as it will be sent; fewer messages
  // never cost more, so it is found by bisection.
  let from = 0
  let high = kept.length
  while (from < high) {
    const middle = (from + high) >>> 1
    if (cost(flatten([], kept, middle)) <= keep) high = middle
    else from = middle + 1
  }
  if (from === 0) return Option.none()
  const summarised = flatten(summary === undefined ? [] : [summary], kept.slice(0, from), 0)
  return Option.some({
    firstKeptEntryId: from < kept.length ? kept[from]!.entries[0]!.id : null,
    summarised,
    kept: flatten([], kept, from)
  })
}

/**
 * A Claude Code transcript → version-2 sessions (`docs/import.md`, "Claude Code transcripts"):
 * the conversation of the file, and one session per subagent whose lines the file holds inline.
 *
 * Two passes over the parsed lines. The first routes every line to its session (a sidechain's
 * lines to the subagent's, by the chain they hang from), gathers the lines of each API response
 * (Claude Code writes one content block per line, chained by `parentUuid`, all with the
 * response's `message.id`) and pairs each compaction boundary with its summary line. The second
 * emits entries in file order, each session on its own.
 *
 * A source that is still being written (`final: false`) is converted up to what may still change:
 * a response is stored once a later line shows it complete (another response, a user's prompt, a
 * system line, a stop reason), a compaction once its summary line is there; from the first thing
 * that may still change, every later line of that session waits. What an earlier conversion
 * already stored (`stored`) is converted again exactly as it was, so that a grown source gives
 * the entries stored before, then new ones: the blocks of a response that arrive after it was
 * stored become a message of their own that says which one it continues.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { checkLoads } from "./importCheck.js"
import { deepFreeze, isCanonicalTimestamp } from "../Record.js"
import * as RecordV2 from "../RecordV2.js"
import { type CorruptError, sessionError } from "../SessionError.js"
import { plainTitle, SUBAGENT, SUBAGENT_OF } from "./links.js"
import { type JsonRecord, own, restOf } from "./piFile.js"
import type { SourceLine } from "./source.js"

/** The entry with ID `id` that an earlier conversion stored in session `session`, if any. */
export type StoredEntries = (session: string, id: string) => RecordV2.SessionEntry | undefined

export interface ClaudeOptions {
  /** Store the lines that have no place in version 2 as `custom` entries `claude:<kind>`. */
  readonly keepAll?: boolean | undefined
  /** Whether the source is complete (the default): false withholds what may still be arriving. */
  readonly final?: boolean | undefined
  /** Lines to leave out as damaged (the caller records them): their children hang from their parent. */
  readonly skip?: ReadonlySet<number> | undefined
  /** What an earlier conversion of this source stored, to convert it again the same way. */
  readonly stored?: StoredEntries | undefined
  /**
   * A line whose `parentUuid` names no line of the file follows the conversation where the file's
   * order puts it, instead of being refused (with `--skip-damaged`: its parent may be a damaged line).
   */
  readonly followOrphans?: boolean | undefined
  /**
   * For a subagent's own file: the lines of its parent session's transcript, where the tool call
   * that started the subagent is looked for (`startingCall`). A transcript of another session names none.
   */
  readonly parent?: ReadonlyArray<SourceLine> | undefined
}

/** One converted session, frozen. */
export interface ConvertedSession {
  readonly header: RecordV2.SessionHeader
  readonly entries: ReadonlyArray<RecordV2.SessionEntry>
  /** The source line of each entry. */
  readonly origins: ReadonlyArray<number>
}

export interface ConvertedClaude extends ConvertedSession {
  /** The sessions of the subagents whose lines the file holds inline (sidechains), in the order they start. */
  readonly subagents: ReadonlyArray<ConvertedSession>
  /** Every line read, per kind (`user`, `assistant`, `progress`, `system:turn_duration`, …). */
  readonly read: Readonly<Record<string, number>>
  /** The lines not stored, per kind: they have no place in version 2 (without `keepAll`), or repeat what is stored. */
  readonly skipped: Readonly<Record<string, number>>
  /** The lines stored whole as `custom` entries `claude:<kind>` (with `keepAll`), per kind. */
  readonly kept: Readonly<Record<string, number>>
  /** The lines withheld because what they belong to may still change (`final: false`). */
  readonly pending: number
}

/** The prefix of the custom type of a line kept whole: `claude:` and its kind. */
export const KEPT_PREFIX = "claude:"

type Mutable = Record<string, unknown>
const hasOwn = Object.prototype.hasOwnProperty
const isObject = (v: unknown): v is JsonRecord => typeof v === "object" && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0
const isId = (v: unknown): v is string => typeof v === "string" && v !== ""

const strict = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeHeader = Schema.decodeUnknownEither(RecordV2.SessionHeader, strict)
const decodeEntry = Schema.decodeUnknownEither(RecordV2.SessionEntry, strict)
const explain = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")

type Line = SourceLine

/** `value` with the block's other fields under `options.anthropic` (they are the Messages API's). */
const withApi = (value: Mutable, block: JsonRecord, used: ReadonlyArray<string>): Mutable => {
  const rest = restOf(block, ["type", ...used])
  return rest === undefined ? value : { ...value, options: { anthropic: rest } }
}

/** An image or document block's `source` → file data. */
const fileData = (source: unknown): Mutable | string => {
  if (!isObject(source)) return "a file block without a source"
  switch (own(source, "type")) {
    case "base64":
      return { base64: own(source, "data") }
    case "url":
      return { url: own(source, "url") }
    default:
      return `a file source of type ${JSON.stringify(own(source, "type")) ?? "(none)"}`
  }
}

const filePart = (block: JsonRecord): Mutable | string => {
  const source = own(block, "source")
  const data = fileData(source)
  if (typeof data === "string") return data
  // A URL source names no media type; the block's type still says what it is.
  const mediaType = isObject(source) && hasOwn.call(source, "media_type") ? source.media_type : own(block, "type") === "image" ? "image/*" : "application/pdf"
  const part: Mutable = { type: "file", mediaType, data }
  // The block's other fields, and the source's beyond its type, media type and data, stay with the part.
  const sourceRest = isObject(source) ? restOf(source, ["type", "media_type", "data", "url"]) : undefined
  const api = { ...restOf(block, ["type", "source"]), ...(sourceRest === undefined ? {} : { source: sourceRest }) }
  return Object.keys(api).length === 0 ? part : { ...part, options: { anthropic: api } }
}

/** Content of a user message or a tool result: text, images and documents. */
const userPart = (block: unknown, index: number): Mutable | string => {
  if (typeof block === "string") return { type: "text", text: block }
  if (!isObject(block)) return `block ${index} is not an object`
  switch (own(block, "type")) {
    case "text":
      return withApi({ type: "text", text: own(block, "text") }, block, ["text"])
    case "image":
    case "document":
      return filePart(block)
    default:
      return `block ${index} has type ${JSON.stringify(own(block, "type")) ?? "(none)"}, which a user message cannot hold`
  }
}

/** One assistant content block → a part; `calls` names every call made so far (a result part needs its name). */
const assistantPart = (block: unknown, index: number, calls: Map<string, string>): Mutable | string => {
  if (!isObject(block)) return `block ${index} is not an object`
  const type = own(block, "type")
  switch (type) {
    case "text":
      return withApi({ type: "text", text: own(block, "text") }, block, ["text"])
    case "thinking":
      // As @effect/ai-anthropic names what it sends back: the block's type and its signature, then any other field.
      return {
        type: "reasoning",
        text: own(block, "thinking"),
        options: { anthropic: { type: "thinking", signature: own(block, "signature"), ...restOf(block, ["type", "thinking", "signature"]) } }
      }
    case "redacted_thinking":
      // Redacted reasoning has no text: its encrypted payload goes back to the API as it came.
      return { type: "reasoning", text: "", options: { anthropic: { type: "redacted_thinking", redactedData: own(block, "data"), ...restOf(block, ["type", "data"]) } } }
    case "tool_use":
    case "server_tool_use": {
      const id = own(block, "id")
      if (isId(id) && typeof own(block, "name") === "string") calls.set(id, own(block, "name") as string)
      const part: Mutable = { type: "tool-call", id, name: own(block, "name"), arguments: own(block, "input") }
      if (type === "server_tool_use") part.providerExecuted = true
      return withApi(part, block, ["id", "name", "input"])
    }
    default: {
      // The API's results of server-run tools (`web_search_tool_result`, …) answer a call of the same message.
      const callId = own(block, "tool_use_id")
      if (typeof type === "string" && type.endsWith("_tool_result") && isId(callId) && calls.has(callId)) {
        return withApi(
          { type: "tool-result", toolCallId: callId, toolName: calls.get(callId), isError: false, result: own(block, "content") ?? null },
          block,
          ["tool_use_id", "content"]
        )
      }
      return `block ${index} has type ${JSON.stringify(type) ?? "(none)"}, which an assistant message cannot hold`
    }
  }
}

/** Claude's usage object → `Usage`, when its two required counts are there. */
const usageOf = (usage: unknown): Mutable | undefined => {
  if (!isObject(usage) || !isCount(own(usage, "input_tokens")) || !isCount(own(usage, "output_tokens"))) return undefined
  const out: Mutable = { inputTokens: usage.input_tokens, outputTokens: usage.output_tokens }
  if (isCount(own(usage, "cache_read_input_tokens"))) out.cachedInputTokens = usage.cache_read_input_tokens
  if (isCount(own(usage, "cache_creation_input_tokens"))) out.cacheWriteTokens = usage.cache_creation_input_tokens
  return out
}

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
    ? content.flatMap((b) => (isObject(b) && own(b, "type") === "text" && typeof own(b, "text") === "string" ? [b.text as string] : [])).join("\n")
    : ""

const invalid = (code: "SESSION_INVALID_RECORD" | "SESSION_INVALID_MESSAGE", reason: string, line: number): CorruptError =>
  sessionError(code, reason, { line })

const isConversation = (r: JsonRecord) => r.type === "user" || r.type === "assistant"
const isBoundary = (r: JsonRecord) => r.type === "system" && own(r, "subtype") === "compact_boundary"
const uuidOf = (l: Line): unknown => own(l.record, "uuid")
const messageOf = (l: Line): JsonRecord | undefined => {
  const message = own(l.record, "message")
  return isObject(message) ? message : undefined
}

/** The kind a line is counted under: its type, `system:<subtype>` for system lines. */
const kindOf = (r: JsonRecord): string => {
  const type = own(r, "type")
  return type === "system" ? `system:${String(own(r, "subtype"))}` : String(type)
}

/** The title a line gives the session: `ai-title`, `summary` and `custom-title` lines. */
const TITLES: ReadonlyMap<string, string> = new Map([["ai-title", "aiTitle"], ["summary", "summary"], ["custom-title", "customTitle"]])

/** Whether a user line holds anything but tool results: a prompt, which comes only once the response before it is complete. */
const isPrompt = (r: JsonRecord): boolean => {
  const message = own(r, "message")
  const content = isObject(message) ? own(message, "content") : undefined
  return typeof content === "string" || (Array.isArray(content) && content.some((b) => !(isObject(b) && own(b, "type") === "tool_result")))
}

/** The lines of one API response, in file order (chained by `parentUuid`, one `message.id`). */
interface Group {
  readonly messageId: string | undefined
  readonly lines: Array<Line>
}

/** What the first pass finds for one session: its lines and the link items in file order, its responses, its compactions' summaries. */
interface Plan {
  readonly id: string
  readonly timestamp: unknown
  readonly items: Array<Item>
  readonly groupOf: Map<Line, Group>
  readonly summaries: Map<string, Line>
  /** Each line's place in `items`. */
  readonly position: Map<Line, number>
  /** For a subagent's session: its first entry's data (who started it). */
  readonly startedBy: Mutable | undefined
  /** For a subagent's session: the line its chain starts with, whose parent (in the parent session) is not its own. */
  readonly root: Line | undefined
}

/** A line of the session, or (in the parent) the start of a subagent whose lines the file holds inline. */
type Item =
  | { readonly kind: "line"; readonly l: Line }
  | { readonly kind: "link"; readonly l: Line; readonly child: string; readonly toolCallId: string | undefined }

const newPlan = (id: string, timestamp: unknown, startedBy: Mutable | undefined, root?: Line): Plan => ({
  id,
  timestamp,
  items: [],
  groupOf: new Map(),
  summaries: new Map(),
  position: new Map(),
  startedBy,
  root
})

/** The ID of a subagent's session: the parent's, and the agent's ID (or the uuid its chain starts with). */
const subagentId = (sessionId: string, root: Line): string => {
  const agentId = own(root.record, "agentId")
  return isId(agentId) ? `${sessionId}.agent-${agentId}` : `${sessionId}.sidechain-${String(uuidOf(root))}`
}

/** Pass 1's index of one plan as lines are added: the responses (by the chain of their lines) and the summaries. */
class Indexer {
  private readonly groupByUuid = new Map<string, Group>()
  constructor(readonly plan: Plan, private readonly skip: ReadonlySet<number> | undefined) {}
  add(l: Line): void {
    this.plan.position.set(l, this.plan.items.length)
    this.plan.items.push({ kind: "line", l })
    const r = l.record
    const uuid = own(r, "uuid")
    const parentUuid = own(r, "parentUuid")
    if (r.type === "assistant" && this.skip?.has(l.line) !== true) {
      const message = messageOf(l)
      const messageId = message !== undefined && isId(own(message, "id")) ? (message.id as string) : undefined
      // A block continues the response of the line it hangs from when both carry the same message ID.
      let group = typeof parentUuid === "string" ? this.groupByUuid.get(parentUuid) : undefined
      if (group === undefined || messageId === undefined || group.messageId !== messageId) group = { messageId, lines: [] }
      group.lines.push(l)
      this.plan.groupOf.set(l, group)
      if (typeof uuid === "string") this.groupByUuid.set(uuid, group)
    } else if ((r.type !== "user" || !isPrompt(r)) && typeof uuid === "string" && typeof parentUuid === "string") {
      // A line between two blocks (progress, a hook's system line, the result of a call the response made while it was
      // still streaming) passes the response on to what hangs from it.
      const inherited = this.groupByUuid.get(parentUuid)
      if (inherited !== undefined) this.groupByUuid.set(uuid, inherited)
    }
    if (
      r.type === "user" && own(r, "isCompactSummary") === true && typeof parentUuid === "string" && !this.plan.summaries.has(parentUuid) &&
      this.skip?.has(l.line) !== true
    ) {
      this.plan.summaries.set(parentUuid, l)
    }
  }
}

/** Pass 2 for one session: its entries, emitted in file order; `process` takes one item and answers its problem, if any. */
class Conversion {
  readonly entries: Array<RecordV2.SessionEntry> = []
  readonly origins: Array<number> = []
  pending = 0
  private blocked = false
  private started = false
  private readonly byId = new Map<string, RecordV2.SessionEntry>()
  /** Claude line uuid → the entry its children hang from. */
  private readonly attach = new Map<string, string | null>()
  /** An entry inserted after another takes its place as the parent of what comes later (`null`: the roots). */
  private readonly redirect = new Map<string | null, string>()
  /** Where the conversation is in file order: the entry the next line most likely follows. */
  private tip: string | null = null
  /** A response's entry → the newest entry chained after it (its results, its continuations); and each chained entry → its response. */
  private readonly tails = new Map<string, string>()
  private readonly chainOf = new Map<string, string>()
  private readonly callsOf = new Map<string, Set<string>>()
  /** Tool-call ID → the tool's name, for every call made so far. */
  private readonly calls = new Map<string, string>()
  private readonly consumed = new Set<Line>()
  /** Each response's entries, by the group, as stored or about to be: the first is the response's own. */
  private readonly cuts = new Map<Group, Array<Array<Line>>>()
  private readonly groupEntry = new Map<Group, string>()
  private title: string | undefined

  constructor(
    private readonly plan: Plan,
    private readonly header: RecordV2.SessionHeader,
    private readonly sessionId: string,
    private readonly options: ClaudeOptions,
    private readonly counts: { readonly skipped: Record<string, number>; readonly kept: Record<string, number> }
  ) {}

  private stored(id: string): RecordV2.SessionEntry | undefined {
    return this.options.stored?.(this.plan.id, id)
  }

  private resolve(at: string | null): string | null {
    let to: string | null = at
    for (let next = this.redirect.get(to); next !== undefined; next = this.redirect.get(to)) to = next
    return to
  }

  private responseOf(at: string | null): string | undefined {
    return at === null ? undefined : this.tails.has(at) ? at : this.chainOf.get(at)
  }

  private emit(l: Line, id: string, parentId: string | null, timestamp: unknown, body: Mutable): CorruptError | undefined {
    if (this.byId.has(id)) return sessionError("SESSION_DUPLICATE_ID", `the entry ID "${id}" is already used`, { line: l.line })
    const decoded = decodeEntry({ type: "entry", version: RecordV2.VERSION, id, parentId, timestamp, ...body })
    if (Either.isLeft(decoded)) {
      return invalid(body.kind === "message" ? "SESSION_INVALID_MESSAGE" : "SESSION_INVALID_RECORD", `line "${id}", converted: ${explain(decoded.left)}`, l.line)
    }
    const entry = deepFreeze(decoded.right)
    this.byId.set(id, entry)
    this.entries.push(entry)
    this.origins.push(l.line)
    return undefined
  }

  /** The timestamp of an entry made of a line that has none of its own: the line's, else the newest entry's before it. */
  private timestampFor(l: Line): string {
    const own_ = own(l.record, "timestamp")
    if (typeof own_ === "string" && isCanonicalTimestamp(own_)) return own_
    const at = this.resolve(this.tip)
    return at === null ? this.header.timestamp : this.byId.get(at)!.timestamp
  }

  /**
   * An entry that has no parent line of its own (a title, a kept line, a link): inserted where the
   * conversation is, and what would have followed there follows it instead, so it never forks.
   */
  private insert(l: Line, id: string, body: Mutable): CorruptError | undefined {
    const parent = this.resolve(this.tip)
    const problem = this.emit(l, id, parent, this.timestampFor(l), body)
    if (problem !== undefined) return problem
    this.redirect.set(parent, id)
    const response = this.responseOf(parent)
    if (response !== undefined) this.chainOf.set(id, response)
    this.tip = id
    return undefined
  }

  private parentOf(l: Line): Either.Either<string | null, CorruptError> {
    const parentUuid = own(l.record, "parentUuid")
    if (parentUuid === null || l === this.plan.root) return Either.right(null)
    const parent = typeof parentUuid === "string" ? this.attach.get(parentUuid) : undefined
    if (parent === undefined) {
      if (this.options.followOrphans === true) return Either.right(this.tip)
      return Either.left(sessionError("SESSION_UNKNOWN_PARENT", `parentUuid ${JSON.stringify(parentUuid)} is not an earlier line`, { line: l.line }))
    }
    return Either.right(parent)
  }

  /** A line left out: its children hang from its parent's entry (a parent missing from the file: a root). */
  private passOver(l: Line): void {
    const uuid = uuidOf(l)
    if (typeof uuid !== "string" || this.attach.has(uuid)) return
    const parentUuid = own(l.record, "parentUuid")
    const parent = typeof parentUuid === "string" ? this.attach.get(parentUuid) : undefined
    this.attach.set(uuid, parent ?? (parentUuid !== null && this.options.followOrphans === true ? this.tip : null))
  }

  private count(map: Record<string, number>, kind: string): void {
    map[kind] = (map[kind] ?? 0) + 1
  }

  process(item: Item): CorruptError | undefined {
    if (this.blocked) {
      if (item.kind === "line" && !this.consumed.has(item.l)) this.pending++
      return undefined
    }
    if (!this.started) {
      this.started = true
      if (this.plan.startedBy !== undefined) {
        // A link stored before stays as it was: the parent's transcript may have appeared, or gone, since.
        const stored = this.stored("subagent-of")
        const data = stored !== undefined && stored.kind === "custom" && stored.customType === SUBAGENT_OF ? stored.data : this.plan.startedBy
        const problem = this.insert(item.l, "subagent-of", { kind: "custom", customType: SUBAGENT_OF, data })
        if (problem !== undefined) return problem
      }
    }
    if (item.kind === "link") {
      const data: Mutable = { session: item.child }
      if (item.toolCallId !== undefined) data.toolCallId = item.toolCallId
      return this.insert(item.l, `${String(uuidOf(item.l))}:subagent`, { kind: "custom", customType: SUBAGENT, data })
    }
    const l = item.l
    if (this.consumed.has(l)) return undefined
    if (this.options.skip?.has(l.line) === true) {
      // A damaged line (the caller records it): its children hang from its parent.
      this.passOver(l)
      return undefined
    }
    const r = l.record
    const type = r.type as string
    if (!isConversation(r) && !isBoundary(r)) return this.other(l, type)
    const uuid = own(r, "uuid")
    if (!isId(uuid)) return invalid("SESSION_INVALID_RECORD", `a ${type} line without a uuid`, l.line)
    if (this.attach.has(uuid)) return sessionError("SESSION_DUPLICATE_ID", `the uuid "${uuid}" is already used`, { line: l.line })
    const timestamp = own(r, "timestamp")
    if (typeof timestamp !== "string" || !isCanonicalTimestamp(timestamp)) {
      return invalid("SESSION_INVALID_RECORD", `a ${type} line without an ISO-8601 UTC timestamp`, l.line)
    }
    if (isBoundary(r)) return this.boundary(l, uuid, timestamp)
    const message = own(r, "message")
    if (!isObject(message) || own(message, "role") !== type) {
      return invalid("SESSION_INVALID_MESSAGE", `a ${type} line whose message is not an object of role "${type}"`, l.line)
    }
    return type === "assistant" ? this.assistant(l, uuid, timestamp) : this.user(l, message, uuid, timestamp)
  }

  /** A line that is not part of the conversation: a title, a line kept whole, or one skipped and counted. */
  private other(l: Line, type: string): CorruptError | undefined {
    const r = l.record
    const kind = kindOf(r)
    const titleKey = TITLES.get(type)
    const titleText = titleKey === undefined ? undefined : own(r, titleKey)
    if (typeof titleText === "string") {
      const title = plainTitle(titleText)
      // An empty title has no version-2 form; one the session has already is no change.
      if (title !== "" && title !== this.title) {
        this.title = title
        return this.insert(l, `${type}:${l.line}`, { kind: "title", title })
      }
      this.count(this.counts.skipped, kind)
      this.passOver(l)
      return undefined
    }
    if (this.options.keepAll === true) {
      const uuid = uuidOf(l)
      const id = isId(uuid) && !this.byId.has(uuid) && !this.attach.has(uuid) ? uuid : `line:${l.line}`
      const problem = this.insert(l, id, { kind: "custom", customType: KEPT_PREFIX + kind, data: r })
      if (problem !== undefined) return problem
      this.count(this.counts.kept, kind)
      if (typeof uuid === "string" && !this.attach.has(uuid)) this.attach.set(uuid, id)
      return undefined
    }
    this.count(this.counts.skipped, kind)
    this.passOver(l)
    return undefined
  }

  /** A compaction boundary: a compaction entry holding its summary's text. */
  private boundary(l: Line, uuid: string, timestamp: string): CorruptError | undefined {
    const r = l.record
    const summary = this.plan.summaries.get(uuid)
    const stored = this.stored(uuid)
    // Without its summary line the compaction may still change: it waits, unless stored or the source is complete.
    if (summary === undefined && stored === undefined && this.options.final === false) return this.block(l)
    const summaryText = summary === undefined ? undefined : textOf(messageOf(summary)?.content)
    const takes = summaryText !== undefined && (stored === undefined || (stored.kind === "compaction" && stored.summary === summaryText))
    // Claude Code starts the compacted conversation at a new root; its logical parent keeps it on the branch it ends,
    // and where that line is not in the file, the compaction follows the conversation as the file's order has it.
    const logical = own(r, "logicalParentUuid")
    const known = typeof logical === "string" ? this.attach.get(logical) : undefined
    const parent = known !== undefined ? this.resolve(known) : this.resolve(this.tip)
    const metadata = own(r, "compactMetadata")
    const body: Mutable = { kind: "compaction", summary: takes ? summaryText : "", firstKeptEntryId: null }
    if (isObject(metadata) && isCount(own(metadata, "preTokens"))) body.tokensBefore = metadata.preTokens
    const problem = this.emit(l, uuid, parent, timestamp, body)
    if (problem !== undefined) return problem
    this.attach.set(uuid, uuid)
    this.tip = uuid
    if (takes) {
      this.consumed.add(summary!)
      if (isId(uuidOf(summary!))) this.attach.set(uuidOf(summary!) as string, uuid)
    }
    return undefined
  }

  private block(l: Line): undefined {
    this.blocked = true
    if (!this.consumed.has(l)) this.pending++
    return undefined
  }

  /** A response's entries: the lines each stored entry took, then the rest as one (`docs/import.md`). */
  private cut(group: Group): Array<Array<Line>> {
    let cut = this.cuts.get(group)
    if (cut !== undefined) return cut
    cut = []
    let rest = group.lines
    while (rest.length > 0) {
      const first = uuidOf(rest[0]!)
      const stored = isId(first) ? this.stored(first) : undefined
      if (stored === undefined || stored.kind !== "message" || stored.message.role !== "assistant") {
        cut.push(rest)
        break
      }
      const claude = stored.message.options?.claude
      const listed: ReadonlyArray<unknown> = isObject(claude) && Array.isArray(own(claude, "lines")) ? own(claude, "lines") as ReadonlyArray<unknown> : [first]
      let n = 0
      while (n < rest.length && n < listed.length && uuidOf(rest[n]!) === listed[n]) n++
      n = Math.max(n, 1)
      cut.push(rest.slice(0, n))
      rest = rest.slice(n)
    }
    this.cuts.set(group, cut)
    return cut
  }

  /** Whether the lines of `part` (the last of its response's) can change no more: a stop reason, or a later line that comes only after a response. */
  private isComplete(group: Group, part: ReadonlyArray<Line>): boolean {
    if (this.options.final !== false) return true
    const last = messageOf(part[part.length - 1]!)
    if (last !== undefined && typeof own(last, "stop_reason") === "string") return true
    const start = this.plan.position.get(part[0]!)!
    for (let i = start + 1; i < this.plan.items.length; i++) {
      const item = this.plan.items[i]!
      if (item.kind !== "line") continue
      const r = item.l.record
      if (r.type === "assistant" && this.plan.groupOf.get(item.l) !== group) return true
      if (r.type === "system" || (r.type === "user" && isPrompt(r))) return true
    }
    return false
  }

  /** An assistant line: the first line of a response (or of its part stored apart) emits it whole; the others were taken with it. */
  private assistant(l: Line, uuid: string, timestamp: string): CorruptError | undefined {
    const group = this.plan.groupOf.get(l)!
    const parts = this.cut(group)
    const index = parts.findIndex((part) => part[0] === l)
    // A later block of a part is taken with its part's first line, which comes before it.
    if (index < 0) return undefined
    const part = parts[index]!
    if (this.stored(uuid) === undefined && !this.isComplete(group, part)) return this.block(l)
    const content: Array<Mutable> = []
    const madeCalls = new Set<string>()
    const written = new Map<string, string>()
    for (const member of part) {
      const blocks = own(messageOf(member)!, "content")
      const list = typeof blocks === "string" ? [{ type: "text", text: blocks }] : blocks
      if (!Array.isArray(list)) return invalid("SESSION_INVALID_MESSAGE", "an assistant's content is neither a string nor an array of blocks", member.line)
      for (let i = 0; i < list.length; i++) {
        const block: unknown = list[i]
        const callId = isObject(block) && (block.type === "tool_use" || block.type === "server_tool_use") ? own(block, "id") : undefined
        if (typeof callId === "string") {
          // Claude Code has been seen writing a block twice: the same block again is one part; another block under its ID is refused.
          const text = JSON.stringify(block)
          const before = written.get(callId)
          if (before === text) {
            this.count(this.counts.skipped, "repeated block")
            continue
          }
          if (before !== undefined) {
            return invalid("SESSION_INVALID_MESSAGE", `tool call ID ${JSON.stringify(callId)} is written twice in one response, with different content`, member.line)
          }
          written.set(callId, text)
        }
        const converted = assistantPart(block, i, this.calls)
        if (typeof converted === "string") return invalid("SESSION_INVALID_MESSAGE", converted, member.line)
        if (converted.type === "tool-call" && typeof converted.id === "string") madeCalls.add(converted.id)
        content.push(converted)
      }
    }
    const first = messageOf(part[0]!)!
    const last = messageOf(part[part.length - 1]!)!
    const meta: Mutable = {}
    if (typeof own(last, "model") === "string") meta.model = last.model
    if (isId(own(first, "id"))) meta.responseId = first.id
    const usage = usageOf(own(last, "usage"))
    if (usage !== undefined) meta.usage = usage
    const stop = [...part].reverse().map((m) => own(messageOf(m)!, "stop_reason")).find((s) => typeof s === "string")
    if (stop !== undefined) meta.stopReason = stop
    const claude: Mutable = {}
    if (typeof own(l.record, "requestId") === "string") claude.requestId = l.record.requestId
    if (part.length > 1) claude.lines = part.map((m) => uuidOf(m))
    if (hasOwn.call(last, "usage")) claude.usage = last.usage
    if (own(l.record, "isApiErrorMessage") === true) claude.isApiErrorMessage = true
    // A part of the response stored after the response itself: it follows the response's chain and says so.
    const response = index === 0 ? undefined : this.groupEntry.get(group)!
    if (response !== undefined) claude.continues = response
    const value: Mutable = { role: "assistant", id: uuid, content }
    if (Object.keys(meta).length > 0) value.meta = meta
    if (Object.keys(claude).length > 0) value.options = { claude }
    let parent: string | null
    if (response === undefined) {
      const found = this.parentOf(l)
      if (Either.isLeft(found)) return found.left
      parent = this.resolve(found.right)
    } else {
      parent = this.resolve(this.tails.get(response)!)
    }
    const problem = this.emit(l, uuid, parent, timestamp, { kind: "message", message: value })
    if (problem !== undefined) return problem
    for (const member of part) {
      this.consumed.add(member)
      const memberUuid = uuidOf(member)
      if (typeof memberUuid === "string" && !this.attach.has(memberUuid)) this.attach.set(memberUuid, uuid)
    }
    if (response === undefined) {
      this.groupEntry.set(group, uuid)
      this.tails.set(uuid, uuid)
      this.callsOf.set(uuid, madeCalls)
    } else {
      this.chainOf.set(uuid, response)
      this.tails.set(response, uuid)
      for (const call of madeCalls) this.callsOf.get(response)!.add(call)
    }
    this.tip = uuid
    return undefined
  }

  /** A user line: its tool results become tool messages, the rest one user message after them. */
  private user(l: Line, message: JsonRecord, uuid: string, timestamp: string): CorruptError | undefined {
    const r = l.record
    const blocks = own(message, "content")
    const list: ReadonlyArray<unknown> = typeof blocks === "string" ? [blocks] : Array.isArray(blocks) ? blocks : []
    if (typeof blocks !== "string" && !Array.isArray(blocks)) return invalid("SESSION_INVALID_MESSAGE", "a user's content is neither a string nor an array of blocks", l.line)
    const found = this.parentOf(l)
    if (Either.isLeft(found)) return found.left
    const results = list.filter((b) => isObject(b) && own(b, "type") === "tool_result") as Array<JsonRecord>
    const rest = list.filter((b) => !(isObject(b) && own(b, "type") === "tool_result"))
    // Results of a response's parallel calls each name the block that made the call: they are chained after the response instead.
    const response = this.responseOf(found.right)
    const firstCall = results.length > 0 ? own(results[0]!, "tool_use_id") : undefined
    let at = response !== undefined && typeof firstCall === "string" && this.callsOf.get(response)?.has(firstCall) === true
      ? this.resolve(this.tails.get(response)!)
      : this.resolve(found.right)
    let n = 0
    const nextId = () => (n++ === 0 ? uuid : `${uuid}:${n - 1}`)
    for (const block of results) {
      const callId = own(block, "tool_use_id")
      const name = typeof callId === "string" ? this.calls.get(callId) : undefined
      if (name === undefined) {
        return sessionError("SESSION_TOOL_LINK", `a tool_result for ${JSON.stringify(callId)}, which no earlier tool_use made`, { line: l.line })
      }
      const resultContent = own(block, "content")
      const parts: Array<Mutable> = []
      const items: ReadonlyArray<unknown> = resultContent === undefined ? [] : typeof resultContent === "string" ? [resultContent] : Array.isArray(resultContent) ? resultContent : [null]
      for (let i = 0; i < items.length; i++) {
        const part = userPart(items[i], i)
        if (typeof part === "string") return invalid("SESSION_INVALID_MESSAGE", `a tool_result's ${part}`, l.line)
        parts.push(part)
      }
      const id = nextId()
      const value: Mutable = { role: "tool", id, toolCallId: callId, toolName: name, isError: own(block, "is_error") === true, content: parts }
      // The structured result Claude Code keeps beside the block belongs to the line's only result.
      if (results.length === 1 && hasOwn.call(r, "toolUseResult")) value.result = r.toolUseResult
      const api = restOf(block, ["type", "tool_use_id", "content", "is_error"])
      if (api !== undefined) value.options = { anthropic: api }
      const problem = this.emit(l, id, at, timestamp, { kind: "message", message: value })
      if (problem !== undefined) return problem
      if (response !== undefined) {
        this.chainOf.set(id, response)
        this.tails.set(response, id)
      }
      at = id
    }
    this.tip = at
    // A subagent's result names the agent, whose transcript is a file of its own: the link follows the result.
    const agent = isObject(own(r, "toolUseResult")) ? own(r.toolUseResult as JsonRecord, "agentId") : undefined
    if (results.length > 0 && isId(agent)) {
      const data: Mutable = { session: `${this.sessionId}.agent-${agent}` }
      if (results.length === 1) data.toolCallId = own(results[0]!, "tool_use_id")
      const problem = this.insert(l, `${uuid}:subagent`, { kind: "custom", customType: SUBAGENT, data })
      if (problem !== undefined) return problem
      at = this.tip
    }
    if (rest.length > 0 || results.length === 0) {
      const parts: Array<Mutable> = []
      for (let i = 0; i < rest.length; i++) {
        const part = userPart(rest[i], i)
        if (typeof part === "string") return invalid("SESSION_INVALID_MESSAGE", part, l.line)
        parts.push(part)
      }
      const id = nextId()
      const value: Mutable = { role: "user", id, content: parts }
      const claude: Mutable = {}
      if (typeof blocks === "string") claude.content = "string"
      if (own(r, "isMeta") === true) claude.isMeta = true
      if (own(r, "isCompactSummary") === true) claude.isCompactSummary = true
      if (Object.keys(claude).length > 0) value.options = { claude }
      const problem = this.emit(l, id, at, timestamp, { kind: "message", message: value })
      if (problem !== undefined) return problem
      at = id
    }
    this.attach.set(uuid, at)
    this.tip = at
    return undefined
  }
}

/** The text of a sidechain's first line: the prompt its Task call was given. */
const promptOf = (l: Line): string | undefined => {
  const message = messageOf(l)
  return message === undefined ? undefined : textOf(own(message, "content"))
}

/** A Task call's prompt, for each call of the main conversation that can start a subagent. */
interface TaskCall {
  readonly id: string
  readonly prompt: string
  used: boolean
}

const tasksOf = (l: Line): ReadonlyArray<TaskCall> => {
  const content = messageOf(l)?.content
  if (!Array.isArray(content)) return []
  return content.flatMap((b) =>
    isObject(b) && b.type === "tool_use" && isId(own(b, "id")) && isObject(own(b, "input")) && typeof own(b.input as JsonRecord, "prompt") === "string"
      ? [{ id: b.id as string, prompt: (b.input as JsonRecord).prompt as string, used: false }]
      : []
  )
}

/** The session a Claude Code transcript's lines name (the first `sessionId`), and whether it is a subagent's own file. */
export const sessionOfLines = (lines: ReadonlyArray<SourceLine>): { readonly sessionId: string; readonly subagent: boolean } | undefined => {
  let sessionId: string | undefined
  for (const l of lines) {
    if (sessionId === undefined && isId(own(l.record, "sessionId"))) sessionId = l.record.sessionId as string
    if (isConversation(l.record)) return sessionId === undefined ? undefined : { sessionId, subagent: own(l.record, "isSidechain") === true }
  }
  return sessionId === undefined ? undefined : { sessionId, subagent: false }
}

/**
 * The tool call of a parent transcript that started the subagent `agentId`, whose first prompt is
 * `prompt` (`docs/import.md`, "Subagents"): the call whose result names the agent (a line holding
 * that one result, its `toolUseResult.agentId`); else the call an `agent_progress` line names for
 * the agent (`parentToolUseID`, written while it runs); else the one call given that prompt that no
 * other agent is known to answer. None when it is not one call.
 */
export const startingCall = (parent: ReadonlyArray<SourceLine>, agentId: string | undefined, prompt: string | undefined): string | undefined => {
  const byAgent = new Map<string, Set<string>>()
  const claim = (agent: unknown, call: unknown) => {
    if (!isId(agent) || !isId(call)) return
    const calls = byAgent.get(agent) ?? new Set<string>()
    calls.add(call)
    byAgent.set(agent, calls)
  }
  const prompted: Array<TaskCall> = []
  for (const l of parent) {
    const r = l.record
    if (own(r, "isSidechain") === true) continue
    if (r.type === "assistant") prompted.push(...tasksOf(l))
    else if (r.type === "progress" && isObject(own(r, "data")) && own(r.data as JsonRecord, "type") === "agent_progress") {
      claim(own(r.data as JsonRecord, "agentId"), own(r, "parentToolUseID"))
    } else if (r.type === "user" && isObject(own(r, "toolUseResult"))) {
      const content = messageOf(l)?.content
      const results = Array.isArray(content) ? content.filter((b) => isObject(b) && b.type === "tool_result") as Array<JsonRecord> : []
      if (results.length === 1) claim(own(r.toolUseResult as JsonRecord, "agentId"), own(results[0]!, "tool_use_id"))
    }
  }
  const named = agentId === undefined ? undefined : byAgent.get(agentId)
  if (named !== undefined) return named.size === 1 ? [...named][0] : undefined
  if (prompt === undefined) return undefined
  const others = new Set([...byAgent.values()].flatMap((calls) => [...calls]))
  const candidates = new Set(prompted.filter((t) => t.prompt === prompt && !others.has(t.id)).map((t) => t.id))
  return candidates.size === 1 ? [...candidates][0] : undefined
}

export const fromClaudeLines = (
  lines: ReadonlyArray<SourceLine>,
  options: ClaudeOptions = {}
): Either.Either<ConvertedClaude, CorruptError> => {
  // Pass 1: what every line must be, the session ID and the first timestamp, the kind of file.
  let sessionId: unknown
  let started: unknown
  let first: Line | undefined
  const read: Record<string, number> = {}
  for (const l of lines) {
    const r = l.record
    const type = own(r, "type")
    if (typeof type !== "string") return Either.left(invalid("SESSION_INVALID_RECORD", "not a Claude Code transcript line: no string type", l.line))
    if (type === "session" || type === "entry") {
      return Either.left(sessionError("SESSION_INVALID_HEADER", "a session file (Pi or session-tree), not a Claude Code transcript", { line: l.line }))
    }
    if (sessionId === undefined && hasOwn.call(r, "sessionId")) sessionId = r.sessionId
    if (started === undefined && hasOwn.call(r, "timestamp")) started = r.timestamp
    if (first === undefined && isConversation(r) && options.skip?.has(l.line) !== true) first = l
    read[kindOf(r)] = (read[kindOf(r)] ?? 0) + 1
  }
  if (sessionId === undefined) return Either.left(sessionError("SESSION_INVALID_HEADER", "not a Claude Code transcript: no line names a sessionId", { line: 1 }))
  if (!isId(sessionId)) return Either.left(sessionError("SESSION_INVALID_HEADER", `the transcript's sessionId ${JSON.stringify(sessionId)} is not a non-empty string`, { line: 1 }))
  // A subagent's own file (every line a sidechain) is the subagent's session; it names the parent's session.
  const subagentFile = first !== undefined && own(first.record, "isSidechain") === true && isId(uuidOf(first))
  const mainId = subagentFile ? subagentId(sessionId, first!) : sessionId
  let startedBy: Mutable | undefined
  if (subagentFile) {
    startedBy = { session: sessionId }
    const agentId = own(first!.record, "agentId")
    // The file does not name the call that started it: its parent's transcript, where given, does.
    const parent = options.parent === undefined ? undefined : sessionOfLines(options.parent)
    const call = parent !== undefined && parent.sessionId === sessionId && !parent.subagent
      ? startingCall(options.parent!, isId(agentId) ? agentId : undefined, promptOf(first!))
      : undefined
    if (call !== undefined) startedBy.toolCallId = call
    if (isId(agentId)) startedBy.agentId = agentId
  }
  const main = new Indexer(newPlan(mainId, started, startedBy), options.skip)
  const children: Array<Indexer> = []
  const sideRoot = new Map<string, Indexer>()
  const tasks: Array<TaskCall> = []
  for (const l of lines) {
    const r = l.record
    const uuid = own(r, "uuid")
    const parentUuid = own(r, "parentUuid")
    if (subagentFile || own(r, "isSidechain") !== true || options.skip?.has(l.line) === true) {
      if (!subagentFile && r.type === "assistant") tasks.push(...tasksOf(l))
      main.add(l)
      continue
    }
    // A sidechain's line belongs to the subagent whose chain it hangs from; a line that starts a chain starts a subagent.
    let owner = typeof parentUuid === "string" ? sideRoot.get(parentUuid) : undefined
    if (owner === undefined) {
      if (!isId(uuid)) {
        main.add(l)
        continue
      }
      const child = subagentId(sessionId, l)
      const prompt = promptOf(l)
      const task = prompt === undefined ? undefined : tasks.find((t) => !t.used && t.prompt === prompt)
      if (task !== undefined) task.used = true
      const data: Mutable = { session: sessionId }
      if (task !== undefined) data.toolCallId = task.id
      if (isId(own(r, "agentId"))) data.agentId = r.agentId
      owner = new Indexer(newPlan(child, own(r, "timestamp"), data, l), options.skip)
      children.push(owner)
      main.plan.items.push({ kind: "link", l, child, toolCallId: task?.id })
    }
    if (typeof uuid === "string") sideRoot.set(uuid, owner)
    owner.add(l)
  }

  // Pass 2: each session's entries, in file order.
  const skipped: Record<string, number> = {}
  const kept: Record<string, number> = {}
  const counts = { skipped, kept }
  const made: Array<{ readonly plan: Plan; readonly header: RecordV2.SessionHeader; readonly conversion: Conversion }> = []
  for (const { plan } of [main, ...children]) {
    const header = decodeHeader({ type: "session", version: RecordV2.VERSION, id: plan.id, timestamp: plan.timestamp })
    if (Either.isLeft(header)) {
      const at = plan === main.plan ? 1 : plan.items[0]!.l.line
      return Either.left(sessionError("SESSION_INVALID_HEADER", `the transcript's session ID and first timestamp: ${explain(header.left)}`, { line: at }))
    }
    made.push({ plan, header: header.right, conversion: new Conversion(plan, header.right, sessionId, options, counts) })
  }
  // Items in file order across the sessions, so that each problem reported is the first in the file.
  const queue = made.flatMap(({ conversion, plan }) => plan.items.map((item) => ({ item, conversion })))
  queue.sort((a, b) => a.item.l.line - b.item.l.line || (a.item.kind === "link" ? -1 : 1))
  for (const { conversion, item } of queue) {
    const problem = conversion.process(item)
    if (problem !== undefined) return Either.left(problem)
  }
  const sessions: Array<ConvertedSession> = []
  let pending = 0
  for (const { conversion, header } of made) {
    const problem = checkLoads(header, conversion.entries, conversion.origins, "transcript")
    if (Either.isLeft(problem)) return Either.left(problem.left)
    pending += conversion.pending
    sessions.push(Object.freeze({ header: Object.freeze(header), entries: Object.freeze(conversion.entries), origins: Object.freeze(conversion.origins) }))
  }
  const [mainSession, ...subagents] = sessions
  return Either.right(Object.freeze({
    ...mainSession!,
    subagents: Object.freeze(subagents),
    read: Object.freeze(read),
    skipped: Object.freeze(skipped),
    kept: Object.freeze(kept),
    pending
  }))
}

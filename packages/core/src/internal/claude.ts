/**
 * A Claude Code transcript → a version-2 session (`docs/import.md`, "Claude
 * Code transcripts"). Two passes over the parsed lines: the first gathers the
 * lines of each API response (Claude Code writes one content block per line,
 * all with the response's `message.id`) and pairs each compaction boundary
 * with its summary; the second emits entries in file order.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { firstInexactNumber, parseObjectLine } from "../Json.js"
import { checkLoads } from "./importCheck.js"
import { deepFreeze, isCanonicalTimestamp } from "../Record.js"
import * as RecordV2 from "../RecordV2.js"
import { type CorruptError, sessionError } from "../SessionError.js"
import { decodeUtf8, type JsonRecord, own, restOf, splitLines } from "./piFile.js"

export interface ConvertedClaude {
  readonly header: RecordV2.SessionHeader
  readonly entries: ReadonlyArray<RecordV2.SessionEntry>
  /** Lines that are not part of the conversation, per kind (`progress`, `system:turn_duration`, `sidechain`, …). */
  readonly skipped: Readonly<Record<string, number>>
}

type Mutable = Record<string, unknown>
const hasOwn = Object.prototype.hasOwnProperty
const isObject = (v: unknown): v is JsonRecord => typeof v === "object" && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0
const isId = (v: unknown): v is string => typeof v === "string" && v !== ""

const strict = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeHeader = Schema.decodeUnknownEither(RecordV2.SessionHeader, strict)
const decodeEntry = Schema.decodeUnknownEither(RecordV2.SessionEntry, strict)
const explain = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")


/** `value` with the block's other fields under `options.anthropic` (they are the Messages API's). */
const withApi = (value: Mutable, block: JsonRecord, used: ReadonlyArray<string>): Mutable => {
  const rest = restOf(block, ["type", ...used])
  return rest === undefined ? value : { ...value, options: { anthropic: rest } }
}

interface Line {
  readonly line: number
  readonly record: JsonRecord
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
      return withApi({ type: "reasoning", text: own(block, "thinking") }, block, ["thinking"])
    case "redacted_thinking":
      // Redacted reasoning has no text: its encrypted payload goes back to the API as it came.
      return { type: "reasoning", text: "", options: { anthropic: { redactedData: own(block, "data"), ...restOf(block, ["type", "data"]) } } }
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

/** The kinds of line that matter: a side chain's (a subagent's, skipped), a turn of the conversation, a compaction boundary. */
const isSidechain = (r: JsonRecord) => own(r, "isSidechain") === true
const isConversation = (r: JsonRecord) => (r.type === "user" || r.type === "assistant") && !isSidechain(r)
const isBoundary = (r: JsonRecord) => r.type === "system" && own(r, "subtype") === "compact_boundary" && !isSidechain(r)

/** What the first pass finds: every line parsed, the session's ID and the first timestamp. */
interface Read {
  readonly lines: ReadonlyArray<Line>
  readonly sessionId: unknown
  readonly started: unknown
}

/** Pass 1: every line parsed and held to the rules every line must meet, in file order. */
const readLines = (texts: ReadonlyArray<string>): Either.Either<Read, CorruptError> => {
  const lines: Array<Line> = []
  let sessionId: unknown
  let started: unknown
  for (let i = 0; i < texts.length; i++) {
    const line = i + 1
    if (texts[i] === "" && i === texts.length - 1) break
    const parsed = parseObjectLine(texts[i]!)
    if (Either.isLeft(parsed)) return Either.left(sessionError("SESSION_INVALID_JSON", parsed.left, { line }))
    const record = parsed.right
    const type = own(record, "type")
    if (typeof type !== "string") return Either.left(invalid("SESSION_INVALID_RECORD", "not a Claude Code transcript line: no string type", line))
    if (type === "session" || type === "entry") {
      return Either.left(sessionError("SESSION_INVALID_HEADER", "a session file (Pi or session-tree), not a Claude Code transcript", { line }))
    }
    const inexact = firstInexactNumber(texts[i]!)
    if (inexact !== undefined) {
      return Either.left(invalid("SESSION_INVALID_RECORD", `the number ${inexact.literal} cannot be held exactly (it would become ${JSON.stringify(Number(inexact.literal))})`, line))
    }
    if (sessionId === undefined && hasOwn.call(record, "sessionId")) sessionId = record.sessionId
    if (started === undefined && hasOwn.call(record, "timestamp")) started = record.timestamp
    lines.push({ line, record })
  }
  return Either.right({ lines, sessionId, started })
}

/** The lines of each API response, by its message ID, and each compaction's summary line, by the boundary's uuid. */
interface Index {
  readonly responses: ReadonlyMap<string, ReadonlyArray<Line>>
  readonly summaries: ReadonlyMap<string, Line>
}

const indexLines = (lines: ReadonlyArray<Line>): Index => {
  const responses = new Map<string, Array<Line>>()
  const summaries = new Map<string, Line>()
  for (const l of lines) {
    const r = l.record
    if (r.type === "assistant" && !isSidechain(r) && isObject(r.message) && isId(own(r.message, "id"))) {
      const id = r.message.id as string
      const group = responses.get(id)
      if (group === undefined) responses.set(id, [l])
      else group.push(l)
    }
    if (r.type === "user" && own(r, "isCompactSummary") === true && typeof own(r, "parentUuid") === "string" && !summaries.has(r.parentUuid as string)) {
      summaries.set(r.parentUuid as string, l)
    }
  }
  return { responses, summaries }
}

/** Pass 2: the entries of the lines, emitted in file order; `add` takes one line and answers its problem, if any. */
class Conversion {
  readonly entries: Array<RecordV2.SessionEntry> = []
  /** The transcript line each entry comes from, to report what the loader finds where it comes from. */
  readonly origins: Array<number> = []
  readonly skipped: Record<string, number> = {}
  private readonly seen = new Set<string>()
  /** Claude line uuid → the entry its children hang from. */
  private readonly attach = new Map<string, string | null>()
  /** A response's entry and the tool messages answering it so far: results are chained after it in file order. */
  private readonly tails = new Map<string, string>()
  private readonly chainOf = new Map<string, string>()
  private readonly callsOf = new Map<string, ReadonlySet<string>>()
  /** Tool-call ID → the tool's name, for every call made so far. */
  private readonly calls = new Map<string, string>()
  /** Summary lines already taken into their compaction. */
  private readonly consumed = new Set<Line>()

  constructor(private readonly index: Index) {}

  private emit(l: Line, id: string, parentId: string | null, timestamp: unknown, body: Mutable): CorruptError | undefined {
    if (this.seen.has(id)) return sessionError("SESSION_DUPLICATE_ID", `the entry ID "${id}" is already used`, { line: l.line })
    const decoded = decodeEntry({ type: "entry", version: RecordV2.VERSION, id, parentId, timestamp, ...body })
    if (Either.isLeft(decoded)) {
      return invalid(body.kind === "message" ? "SESSION_INVALID_MESSAGE" : "SESSION_INVALID_RECORD", `line "${id}", converted: ${explain(decoded.left)}`, l.line)
    }
    this.seen.add(id)
    this.entries.push(deepFreeze(decoded.right))
    this.origins.push(l.line)
    return undefined
  }

  private parentOf(l: Line): Either.Either<string | null, CorruptError> {
    const parentUuid = own(l.record, "parentUuid")
    if (parentUuid === null) return Either.right(null)
    const parent = typeof parentUuid === "string" ? this.attach.get(parentUuid) : undefined
    if (parent === undefined) {
      return Either.left(sessionError("SESSION_UNKNOWN_PARENT", `parentUuid ${JSON.stringify(parentUuid)} is not an earlier line`, { line: l.line }))
    }
    return Either.right(parent)
  }

  private skip(l: Line, kind: string): void {
    this.skipped[kind] = (this.skipped[kind] ?? 0) + 1
    // A skipped line's children hang from its own parent's entry (a parent missing from the file: a root).
    const uuid = own(l.record, "uuid")
    if (typeof uuid !== "string") return
    const parentUuid = own(l.record, "parentUuid")
    const parent = typeof parentUuid === "string" ? this.attach.get(parentUuid) : undefined
    this.attach.set(uuid, parent ?? null)
  }

  add(l: Line): CorruptError | undefined {
    const r = l.record
    const type = r.type as string
    if (this.consumed.has(l)) return undefined
    if (isSidechain(r)) {
      this.skip(l, "sidechain")
      return undefined
    }
    if (!isConversation(r) && !isBoundary(r)) {
      this.skip(l, type === "system" ? `system:${String(own(r, "subtype"))}` : type)
      return undefined
    }
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
    const parent = this.parentOf(l)
    if (Either.isLeft(parent)) return parent.left
    return type === "assistant"
      ? this.assistant(l, message, uuid, parent.right, timestamp)
      : this.user(l, message, uuid, parent.right, timestamp)
  }

  /** A compaction boundary: a compaction entry holding its summary's text. */
  private boundary(l: Line, uuid: string, timestamp: string): CorruptError | undefined {
    const r = l.record
    // Claude Code starts the compacted conversation at a new root; its logical parent keeps it on the branch it ends.
    const logical = own(r, "logicalParentUuid")
    const parent = typeof logical === "string" ? this.attach.get(logical) ?? null : null
    const summary = this.index.summaries.get(uuid)
    const metadata = own(r, "compactMetadata")
    const body: Mutable = { kind: "compaction", summary: summary === undefined ? "" : textOf(isObject(summary.record.message) ? summary.record.message.content : undefined), firstKeptEntryId: null }
    if (isObject(metadata) && isCount(own(metadata, "preTokens"))) body.tokensBefore = metadata.preTokens
    const problem = this.emit(l, uuid, parent, timestamp, body)
    if (problem !== undefined) return problem
    this.attach.set(uuid, uuid)
    if (summary !== undefined) {
      this.consumed.add(summary)
      if (isId(own(summary.record, "uuid"))) this.attach.set(summary.record.uuid as string, uuid)
    }
    return undefined
  }

  /** The first line of an API response: one assistant message of all its lines' blocks. */
  private assistant(l: Line, message: JsonRecord, uuid: string, parent: string | null, timestamp: string): CorruptError | undefined {
    const r = l.record
    const responseId = own(message, "id")
    const group = isId(responseId) ? this.index.responses.get(responseId)! : [l]
    if (group[0] !== l) {
      // A later block of a response already emitted whole: its children hang from that response's entry.
      this.attach.set(uuid, this.attach.get(own(group[0]!.record, "uuid") as string)!)
      return undefined
    }
    const content: Array<Mutable> = []
    const madeCalls = new Set<string>()
    for (const member of group) {
      const blocks = own(member.record.message as JsonRecord, "content")
      const list = typeof blocks === "string" ? [{ type: "text", text: blocks }] : blocks
      if (!Array.isArray(list)) return invalid("SESSION_INVALID_MESSAGE", "an assistant's content is neither a string nor an array of blocks", member.line)
      for (let i = 0; i < list.length; i++) {
        const part = assistantPart(list[i], i, this.calls)
        if (typeof part === "string") return invalid("SESSION_INVALID_MESSAGE", part, member.line)
        if (part.type === "tool-call" && typeof part.id === "string") madeCalls.add(part.id)
        content.push(part)
      }
    }
    const last = group[group.length - 1]!.record.message as JsonRecord
    const meta: Mutable = {}
    if (typeof own(last, "model") === "string") meta.model = last.model
    if (isId(responseId)) meta.responseId = responseId
    const usage = usageOf(own(last, "usage"))
    if (usage !== undefined) meta.usage = usage
    const stop = [...group].reverse().map((m) => own(m.record.message as JsonRecord, "stop_reason")).find((s) => typeof s === "string")
    if (stop !== undefined) meta.stopReason = stop
    const claude: Mutable = {}
    if (typeof own(r, "requestId") === "string") claude.requestId = r.requestId
    if (group.length > 1) claude.lines = group.map((m) => own(m.record, "uuid"))
    if (hasOwn.call(last, "usage")) claude.usage = last.usage
    if (own(r, "isApiErrorMessage") === true) claude.isApiErrorMessage = true
    const value: Mutable = { role: "assistant", id: uuid, content }
    if (Object.keys(meta).length > 0) value.meta = meta
    if (Object.keys(claude).length > 0) value.options = { claude }
    const problem = this.emit(l, uuid, parent, timestamp, { kind: "message", message: value })
    if (problem !== undefined) return problem
    this.attach.set(uuid, uuid)
    this.tails.set(uuid, uuid)
    this.callsOf.set(uuid, madeCalls)
    return undefined
  }

  /** A user line: its tool results become tool messages, the rest one user message after them. */
  private user(l: Line, message: JsonRecord, uuid: string, parent: string | null, timestamp: string): CorruptError | undefined {
    const r = l.record
    const blocks = own(message, "content")
    const list: ReadonlyArray<unknown> = typeof blocks === "string" ? [blocks] : Array.isArray(blocks) ? blocks : []
    if (typeof blocks !== "string" && !Array.isArray(blocks)) return invalid("SESSION_INVALID_MESSAGE", "a user's content is neither a string nor an array of blocks", l.line)
    const results = list.filter((b) => isObject(b) && own(b, "type") === "tool_result") as Array<JsonRecord>
    const rest = list.filter((b) => !(isObject(b) && own(b, "type") === "tool_result"))
    // Results of a response's parallel calls each name the block that made the call: they are chained after the response instead.
    let at = parent
    const response = at === null ? undefined : this.tails.has(at) ? at : this.chainOf.get(at)
    const firstCall = results.length > 0 ? own(results[0]!, "tool_use_id") : undefined
    if (response !== undefined && typeof firstCall === "string" && this.callsOf.get(response)?.has(firstCall) === true) at = this.tails.get(response)!
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
    return undefined
  }
}

export const fromClaude = (bytes: Uint8Array): Either.Either<ConvertedClaude, CorruptError> => {
  const text = decodeUtf8(bytes)
  if (Either.isLeft(text)) return Either.left(text.left)
  const read = readLines(splitLines(text.right))
  if (Either.isLeft(read)) return Either.left(read.left)
  const { lines, sessionId, started } = read.right
  if (sessionId === undefined) return Either.left(sessionError("SESSION_INVALID_HEADER", "not a Claude Code transcript: no line names a sessionId", { line: 1 }))
  const header = decodeHeader({ type: "session", version: RecordV2.VERSION, id: sessionId, timestamp: started })
  if (Either.isLeft(header)) return Either.left(sessionError("SESSION_INVALID_HEADER", `the transcript's sessionId and first timestamp: ${explain(header.left)}`, { line: 1 }))
  const conversion = new Conversion(indexLines(lines))
  for (const l of lines) {
    const problem = conversion.add(l)
    if (problem !== undefined) return Either.left(problem)
  }
  const { entries, origins, skipped } = conversion
  const problem = checkLoads(header.right, entries, origins, "transcript")
  if (Either.isLeft(problem)) return Either.left(problem.left)
  return Either.right(Object.freeze({ header: Object.freeze(header.right), entries: Object.freeze(entries), skipped: Object.freeze(skipped) }))
}

/**
 * A Codex CLI rollout (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) → a
 * version-2 session (`docs/import.md`, "Codex rollouts", gives the mapping). Pure: parsed
 * lines in, records out.
 *
 * One pass in file order, and each line's entries depend on that line and the
 * lines before it only: so the entries of the first k lines of a file are the
 * first entries of the whole file's, with the same IDs, which is what lets a
 * sync append a grown rollout's new lines. Entry IDs are `<session ID>:<line>`
 * (`.1`, `.2`, … for a line's further entries); the session is one branch.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { firstInexactNumber, parseObjectLine } from "../Json.js"
import * as RecordV2 from "../RecordV2.js"
import { type CorruptError, sessionError } from "../SessionError.js"
import { checkLoads } from "./importCheck.js"
import { SUBAGENT, SUBAGENT_OF } from "./links.js"
import { decodeUtf8, splitLines } from "./piFile.js"
import { isCanonicalTimestamp } from "./timestamp.js"
import { copyJson, deepFreeze } from "./values.js"

type JsonRecord = { readonly [key: string]: unknown }
type Mutable = { [key: string]: unknown }

/** One line of a source file: its 1-based number and the JSON object it holds. */
export interface SourceLine {
  readonly line: number
  readonly record: JsonRecord
}

export interface CodexOptions {
  /** Store the lines that have no version-2 place (and repeats) as `custom` entries `codex:<kind>`: nothing of the file is lost. */
  readonly keepAll?: boolean | undefined
  /** For a subagent's rollout: its parent thread's rollout, where the `spawn_agent` call that started it is looked for. */
  readonly parent?: ReadonlyArray<SourceLine> | undefined
  /** What an earlier conversion stored, by session and entry ID: a subagent's link (`subagent-of`) stays as it was stored. */
  readonly stored?: ((session: string, id: string) => RecordV2.SessionEntry | undefined) | undefined
}

/** The thread a rollout's session meta says spawned it (`source.subagent.thread_spawn.parent_thread_id`, or `parent_thread_id`). */
export const parentThreadOf = (payload: JsonRecord): string | undefined => {
  const source = own(payload, "source")
  const subagent = isObject(source) ? own(source, "subagent") : undefined
  const spawn = isObject(subagent) ? own(subagent, "thread_spawn") : undefined
  const fromSpawn = isObject(spawn) ? own(spawn, "parent_thread_id") : undefined
  if (isName(fromSpawn)) return fromSpawn
  const direct = own(payload, "parent_thread_id")
  return isName(direct) ? direct : undefined
}

/** The agent a `spawn_agent` call's output names (`{"agent_id": …}`), if it does. */
const spawnedAgent = (output: unknown): string | undefined => {
  if (typeof output !== "string") return undefined
  const parsed = parseObjectLine(output)
  return Either.isRight(parsed) && isName(own(parsed.right, "agent_id")) ? parsed.right.agent_id as string : undefined
}

/** The session ID a rollout's lines name: its session meta's `id`. */
const threadOf = (lines: ReadonlyArray<SourceLine>): string | undefined => {
  const first = lines[0]?.record
  const payload = first === undefined ? undefined : own(first, "type") === "session_meta" ? own(first, "payload") : first
  return isObject(payload) && isName(own(payload, "id")) ? payload.id as string : undefined
}

/**
 * The `spawn_agent` call of a parent thread's rollout that started thread `child`: the call whose
 * output names it as its `agent_id`; undefined when the rollout is not `thread`'s or names none.
 */
export const spawningCall = (parent: ReadonlyArray<SourceLine>, thread: string, child: string): string | undefined => {
  if (threadOf(parent) !== thread) return undefined
  const spawns = new Set<string>()
  for (const { record } of parent) {
    const item = own(record, "type") === "response_item" ? own(record, "payload") : undefined
    if (!isObject(item)) continue
    if (own(item, "type") === "function_call" && own(item, "name") === "spawn_agent" && isName(own(item, "call_id"))) spawns.add(item.call_id as string)
    if (own(item, "type") === "function_call_output" && spawns.has(own(item, "call_id") as string) && spawnedAgent(own(item, "output")) === child) {
      return item.call_id as string
    }
  }
  return undefined
}

export interface ConvertedCodex {
  readonly header: RecordV2.SessionHeader
  readonly entries: ReadonlyArray<RecordV2.SessionEntry>
  readonly origins: ReadonlyArray<number>
  readonly read: Readonly<Record<string, number>>
  readonly skipped: Readonly<Record<string, number>>
}

/** The custom type of the entry holding a `session_meta` line. */
export const SESSION_META = "codex:session_meta"
/** The custom type of the entry after a compaction holding the `compacted` line's other fields. */
export const COMPACTION_FIELDS = "codex:compaction-fields"
/** The prefix of the custom type of a line kept whole: `codex:` and its kind. */
export const WHOLE_PREFIX = "codex:"
/** The provider of the model entries when the session names none: Codex's default. */
export const DEFAULT_PROVIDER = "openai"

/**
 * The `event_msg` kinds that repeat a response item (or a `compacted` line) written beside them, for
 * Codex's own display: counted, not stored twice. Like every kind without a place of its own, they
 * go to `skipped` (to `custom` entries with keepAll).
 */
export const REPEATS: ReadonlySet<string> = new Set([
  "event_msg:user_message",
  "event_msg:agent_message",
  "event_msg:agent_reasoning",
  "event_msg:agent_reasoning_raw_content",
  "event_msg:context_compacted"
])

const hasOwn = Object.prototype.hasOwnProperty
const own = (o: JsonRecord, key: string): unknown => (hasOwn.call(o, key) ? o[key] : undefined)
const isObject = (v: unknown): v is JsonRecord => typeof v === "object" && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0
const isName = (v: unknown): v is string => typeof v === "string" && v !== ""

/** Sets a key as an own property whatever its name (`__proto__` included), as `JSON.parse` does. */
const put = (target: Mutable, key: string, value: unknown): void => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** The fields of `o` other than `used`, in their order; undefined when none is left. */
const rest = (o: JsonRecord, used: ReadonlyArray<string>): Mutable | undefined => {
  let out: Mutable | undefined
  for (const key of Object.keys(o)) {
    if (used.includes(key)) continue
    put(out ??= {}, key, o[key])
  }
  return out
}

/** `a` and then `b`'s keys, undefined when both are. */
const merge = (a: Mutable | undefined, b: Mutable | undefined): Mutable | undefined => {
  if (a === undefined) return b
  if (b === undefined) return a
  const out: Mutable = { ...a }
  for (const key of Object.keys(b)) put(out, key, b[key])
  return out
}

const withOptions = (value: Mutable, options: Mutable | undefined): Mutable =>
  options === undefined || Object.keys(options).length === 0 ? value : { ...value, options }

const codexOptions = (codex: Mutable | undefined): Mutable | undefined => (codex === undefined ? undefined : { codex })

const strict = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeHeader = Schema.decodeUnknownEither(RecordV2.SessionHeader, strict)
const decodeEntry = Schema.decodeUnknownEither(RecordV2.SessionEntry, strict)
const explain = (error: ParseResult.ParseError): string => ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")

/** What one line becomes: entries to store (their bodies, given their IDs), or a reason it is counted only. */
type Outcome =
  | { readonly _tag: "store"; readonly bodies: (ids: Ids) => ReadonlyArray<Mutable> }
  | { readonly _tag: "skip" }
  /** A kind with a place whose line does not fit it: kept whole, whatever `keepAll` says. */
  | { readonly _tag: "whole" }

/** The IDs of a line's entries: `<session>:<line>`, then `.1`, `.2`, … */
type Ids = (k: number) => string

const store = (bodies: (ids: Ids) => ReadonlyArray<Mutable>): Outcome => ({ _tag: "store", bodies })
const SKIP: Outcome = { _tag: "skip" }
const WHOLE: Outcome = { _tag: "whole" }

// ---------------------------------------------------------------------------
// Content

/** `data:<media type>;base64,<canonical base64>`: the only image URL held as bytes (it is written back exactly). */
const DATA_URL = /^data:([^;,]+);base64,(.*)$/s

/** An image URL → a file part: inline bytes for a data URL of canonical base64, the URL as written otherwise. */
const imagePart = (url: string): Mutable => {
  const m = DATA_URL.exec(url)
  return m !== null && RecordV2.isCanonicalBase64(m[2]!)
    ? { type: "file", mediaType: m[1], data: { base64: m[2] } }
    : { type: "file", mediaType: "image/*", data: { url } }
}

/**
 * Content items (`input_text`, `output_text`, `input_image`) → parts; `text` is the item type a text
 * part stands for by default (another one is kept in the part's `options.codex.type`). Undefined
 * when an item has no place.
 */
const contentParts = (items: unknown, text: string): Array<Mutable> | undefined => {
  if (!Array.isArray(items)) return undefined
  const parts: Array<Mutable> = []
  for (const item of items) {
    if (!isObject(item)) return undefined
    const type = own(item, "type")
    if ((type === "input_text" || type === "output_text") && typeof own(item, "text") === "string") {
      parts.push(withOptions({ type: "text", text: item.text }, codexOptions(rest(item, type === text ? ["type", "text"] : ["text"]))))
    } else if (type === "input_image" && typeof own(item, "image_url") === "string") {
      parts.push(withOptions(imagePart(item.image_url as string), codexOptions(rest(item, ["type", "image_url"]))))
    } else return undefined
  }
  return parts
}

/** Line fields beyond `timestamp`, `type` and `payload` (none in the files seen), kept with the message under `options.codex.envelope`. */
const envelopeOf = (record: JsonRecord): Mutable | undefined => {
  const extra = rest(record, ["timestamp", "type", "payload"])
  return extra === undefined ? undefined : { envelope: extra }
}

// ---------------------------------------------------------------------------
// The conversion

type Layout = "rollout" | "legacy"

interface Started {
  readonly header: RecordV2.SessionHeader
  readonly layout: Layout
}

/** What line 1 must be; a file whose first line is not is refused as not a Codex rollout. */
const EXPECTED =
  `a session_meta line ({"timestamp", "type": "session_meta", "payload": {"id", "timestamp", …}}), or the bare {"id", "timestamp", …} of the early layout`

/** The header from the first line, or why the file is not a Codex rollout. */
const start = (first: SourceLine | undefined): Either.Either<Started, CorruptError> => {
  if (first === undefined) return Either.left(sessionError("SESSION_INVALID_HEADER", `not a Codex rollout: the file is empty (expected ${EXPECTED})`, { line: 1 }))
  const { line, record } = first
  const notCodex = (what: string) => Either.left(sessionError("SESSION_INVALID_HEADER", `not a Codex rollout: ${what}; expected ${EXPECTED}`, { line }))
  const type = own(record, "type")
  let layout: Layout
  let meta: JsonRecord
  if (type === "session_meta") {
    const payload = own(record, "payload")
    if (!isObject(payload)) return notCodex("a session_meta line without a payload object")
    layout = "rollout"
    meta = payload
  } else if (type === undefined && !hasOwn.call(record, "record_type") && hasOwn.call(record, "id")) {
    layout = "legacy"
    meta = record
  } else if (type === "session" || type === "entry") {
    return notCodex("the first line is a session header of Pi or session-tree")
  } else if (hasOwn.call(record, "sessionId") || hasOwn.call(record, "parentUuid")) {
    return notCodex("the first line is a Claude Code transcript line")
  } else {
    return notCodex(`the first line is ${typeof type === "string" ? `of type ${JSON.stringify(type)}` : "no session_meta"}`)
  }
  const id = own(meta, "id")
  const timestamp = own(meta, "timestamp")
  if (!isName(id) || typeof timestamp !== "string" || !isCanonicalTimestamp(timestamp)) {
    return notCodex("its session meta needs a non-empty string id and an ISO-8601 UTC timestamp (as toISOString writes it)")
  }
  const header = decodeHeader({ type: "session", version: RecordV2.VERSION, id, timestamp })
  if (Either.isLeft(header)) return Either.left(sessionError("SESSION_INVALID_HEADER", explain(header.left), { line }))
  return Either.right({ header: header.right, layout })
}

/** A model and reasoning effort in effect, as a turn context names them. */
interface Turn {
  readonly model: string
  readonly effort: string | undefined
}

interface Call {
  readonly name: string
  readonly providerExecuted: boolean
  answered: boolean
}

/** A message body: `value` with its ID, and the item's fields not mapped (`used` are) under `options.codex`. */
type MessageOf = (ids: Ids, value: Mutable, used: ReadonlyArray<string>, extra?: Mutable) => Mutable

class Conversion {
  readonly entries: Array<RecordV2.SessionEntry> = []
  readonly origins: Array<number> = []
  readonly read: Record<string, number> = {}
  readonly skipped: Record<string, number> = {}
  private readonly seen = new Set<string>()
  private parent: string | null = null
  /** The provider the newest session meta names (`model_provider`). */
  private provider = DEFAULT_PROVIDER
  /** The newest turn context's model and effort: a model entry is written when they change. */
  private turn: Turn | undefined
  /** The newest token count's cumulative usage (as JSON): a count that repeats it is a repeat. */
  private total: string | undefined
  /** Every tool call stored so far, by call ID. */
  private readonly calls = new Map<string, Call>()

  constructor(
    private readonly sessionId: string,
    private readonly layout: Layout,
    /** The header's timestamp: the time of every entry of the early layout, whose lines have none. */
    private readonly started: string,
    private readonly firstLine: number,
    private readonly keepAll: boolean,
    private readonly options: CodexOptions = {}
  ) {}

  /** Converts one line: stores its entries, or counts it as skipped; or the problem that refuses the file. */
  add(l: SourceLine): CorruptError | undefined {
    const { line, record } = l
    const kind = this.kindOf(record, line)
    if (typeof kind !== "string") return kind
    this.read[kind] = (this.read[kind] ?? 0) + 1
    let timestamp = this.started
    if (this.layout === "rollout") {
      const ts = own(record, "timestamp")
      if (typeof ts !== "string" || !isCanonicalTimestamp(ts)) {
        return sessionError("SESSION_INVALID_RECORD", `a ${kind} line without an ISO-8601 UTC timestamp (as toISOString writes it)`, { line })
      }
      timestamp = ts
    }
    const ids: Ids = (k) => (k === 0 ? `${this.sessionId}:${line}` : `${this.sessionId}:${line}.${k}`)
    const outcome = this.convert(kind, record)
    if (outcome._tag === "store") {
      const bodies = outcome.bodies(ids)
      const decoded: Array<RecordV2.SessionEntry> = []
      for (let k = 0; k < bodies.length; k++) {
        const entry = this.decode(ids(k), k === 0 ? this.parent : ids(k - 1), timestamp, bodies[k]!)
        if (typeof entry === "string") break
        decoded.push(entry)
      }
      // A line of a kind with a place that does not fit it once mapped is kept whole.
      if (decoded.length === bodies.length) return this.push(this.linked(decoded, record, ids, timestamp), line)
    } else if (outcome._tag === "skip" && !this.keepAll) {
      this.skipped[kind] = (this.skipped[kind] ?? 0) + 1
      return undefined
    }
    const entry = this.decode(ids(0), this.parent, timestamp, { kind: "custom", customType: WHOLE_PREFIX + kind, data: this.dataOf(record) })
    if (typeof entry === "string") return sessionError("SESSION_INVALID_RECORD", `a ${kind} line, kept whole: ${entry}`, { line })
    return this.push([entry], line)
  }

  /**
   * A line's entries with the links to other threads it makes (`docs/import.md`, "Subagents"): a
   * subagent's session meta starts with its `subagent-of` entry; the output of a `spawn_agent`
   * call that names the agent it started is followed by a `subagent` entry naming it and the call.
   */
  private linked(decoded: Array<RecordV2.SessionEntry>, record: JsonRecord, ids: Ids, timestamp: string): Array<RecordV2.SessionEntry> {
    const first = decoded[0]!
    if (first.kind === "custom" && first.customType === SESSION_META && this.entries.length === 0) {
      const payload = (this.layout === "legacy" ? record : own(record, "payload")) as JsonRecord
      const thread = parentThreadOf(payload)
      if (thread === undefined) return decoded
      const stored = this.options.stored?.(this.sessionId, "subagent-of")
      let data: unknown = stored !== undefined && stored.kind === "custom" && stored.customType === SUBAGENT_OF ? stored.data : undefined
      if (data === undefined) {
        const call = this.options.parent === undefined ? undefined : spawningCall(this.options.parent, thread, this.sessionId)
        data = call === undefined ? { session: thread } : { session: thread, toolCallId: call }
      }
      const link = this.decode("subagent-of", null, timestamp, { kind: "custom", customType: SUBAGENT_OF, data })
      if (typeof link === "string") return decoded
      return [link, ...decoded.map((e, k) => k === 0 ? deepFreeze({ ...e, parentId: "subagent-of" }) : e)]
    }
    if (first.kind !== "message" || first.message.role !== "tool" || first.message.toolName !== "spawn_agent") return decoded
    const agent = spawnedAgent(own(own(record, "payload") as JsonRecord, "output"))
    if (agent === undefined) return decoded
    const last = decoded[decoded.length - 1]!
    const link = this.decode(ids(decoded.length), last.id, timestamp, { kind: "custom", customType: SUBAGENT, data: { session: agent, toolCallId: first.message.toolCallId } })
    return typeof link === "string" ? decoded : [...decoded, link]
  }

  /** A line kept whole: all of it but the timestamp, which is the entry's (the early layout's lines, which have none, as they are). */
  private dataOf(record: JsonRecord): Mutable {
    return this.layout === "legacy" ? { ...record } : rest(record, ["timestamp"]) ?? {}
  }

  private push(entries: ReadonlyArray<RecordV2.SessionEntry>, line: number): CorruptError | undefined {
    for (const entry of entries) {
      if (this.seen.has(entry.id)) {
        return sessionError("SESSION_DUPLICATE_ID", `the entry ID "${entry.id}" is already used: a line number given twice`, { line })
      }
      this.seen.add(entry.id)
      this.entries.push(entry)
      this.origins.push(line)
      this.parent = entry.id
      if (entry.kind !== "message") continue
      const message = entry.message
      if (message.role === "assistant") {
        for (const part of message.content) {
          if (part.type === "tool-call") this.calls.set(part.id, { name: part.name, providerExecuted: part.providerExecuted === true, answered: false })
        }
      } else if (message.role === "tool") {
        const call = this.calls.get(message.toolCallId)
        if (call !== undefined) call.answered = true
      }
    }
    return undefined
  }

  /**
   * An entry as the loader reads it: a fresh, frozen record in canonical key order; or why it does
   * not fit. The bodies are built in canonical order, so the loader's direct decoder takes them; the
   * Schema decides (and explains) what it declines.
   */
  private decode(id: string, parentId: string | null, timestamp: string, body: Mutable): RecordV2.SessionEntry | string {
    const record = { type: "entry", version: RecordV2.VERSION, id, parentId, timestamp, ...body }
    const text = JSON.stringify(record)
    const direct = RecordV2.decodeCanonicalLine(JSON.parse(text), text)
    if (direct !== undefined) return direct.entry as RecordV2.SessionEntry
    const decoded = decodeEntry(record)
    if (Either.isLeft(decoded)) return explain(decoded.left)
    // Unknown values (options, arguments, data) pass the Schema by reference: the copy shares nothing with the caller's records.
    const copy = copyJson(decoded.right)
    return copy === undefined ? "it holds a number JSON cannot write" : deepFreeze(copy as RecordV2.SessionEntry)
  }

  /** The kind a line is counted under, or why it is not a line of its layout. */
  private kindOf(record: JsonRecord, line: number): string | CorruptError {
    if (this.layout === "legacy") {
      if (line === this.firstLine) return "session_meta"
      const recordType = own(record, "record_type")
      if (typeof recordType === "string") return recordType
      const type = own(record, "type")
      if (typeof type === "string") return `response_item:${type}`
      return sessionError("SESSION_INVALID_RECORD", "not a line of an early Codex rollout: neither a string type nor a string record_type", { line })
    }
    const type = own(record, "type")
    if (typeof type !== "string") return sessionError("SESSION_INVALID_RECORD", "not a Codex rollout line: no string type", { line })
    if (!ENVELOPED.has(type)) return type
    const payload = own(record, "payload")
    if (!isObject(payload)) return sessionError("SESSION_INVALID_RECORD", `a ${type} line without a payload object`, { line })
    if (type !== "response_item" && type !== "event_msg") return type
    const inner = own(payload, "type")
    if (typeof inner !== "string") return sessionError("SESSION_INVALID_RECORD", `a ${type} line whose payload has no string type`, { line })
    return `${type}:${inner}`
  }

  /** A line's outcome, by its kind. */
  private convert(kind: string, record: JsonRecord): Outcome {
    const payload = this.layout === "legacy" ? record : own(record, "payload") as JsonRecord
    const envelope = this.layout === "legacy" ? undefined : envelopeOf(record)
    if (kind === "session_meta") return this.sessionMeta(payload, record)
    if (kind === "turn_context") return this.turnContext(payload, record)
    if (kind === "compacted") return this.compacted(payload, envelope)
    if (kind === "event_msg:token_count") return this.tokenCount(payload, envelope)
    if (kind.startsWith("response_item:")) return this.responseItem(payload, envelope)
    // The repeats of items and every other kind: counted (kept whole with keepAll).
    return SKIP
  }

  /** The session meta, kept whole; its base instructions (the model's system prompt) a system message after it, stored once. */
  private sessionMeta(payload: JsonRecord, record: JsonRecord): Outcome {
    if (isName(own(payload, "model_provider"))) this.provider = payload.model_provider as string
    const data = this.dataOf(record)
    const base = own(payload, "base_instructions")
    if (!isObject(base) || typeof own(base, "text") !== "string") return store(() => [{ kind: "custom", customType: SESSION_META, data }])
    const kept = { ...payload, base_instructions: rest(base, ["text"]) ?? {} }
    const meta = this.layout === "legacy" ? kept : { ...data, payload: kept }
    return store((ids) => [
      { kind: "custom", customType: SESSION_META, data: meta },
      { kind: "message", message: { role: "system", id: ids(1), content: base.text, options: { codex: { from: "session_meta.base_instructions" } } } }
    ])
  }

  /** A turn context: a model entry when its model or reasoning effort changes; the rest of it is Codex's state, kept with keepAll. */
  private turnContext(payload: JsonRecord, record: JsonRecord): Outcome {
    const model = own(payload, "model")
    if (!isName(model)) return SKIP
    const effort = isName(own(payload, "effort")) ? payload.effort as string : undefined
    const changed = this.turn === undefined || this.turn.model !== model || this.turn.effort !== effort
    this.turn = { model, effort }
    if (!changed) return SKIP
    const body: Mutable = { kind: "model", provider: this.provider, model }
    if (effort !== undefined) body.thinking = effort
    return store(() => this.keepAll ? [body, { kind: "custom", customType: `${WHOLE_PREFIX}turn_context`, data: this.dataOf(record) }] : [body])
  }

  /** A compaction: its message the summary, nothing before it kept; its other fields in an entry after it. */
  private compacted(payload: JsonRecord, envelope: Mutable | undefined): Outcome {
    const message = own(payload, "message")
    if (typeof message !== "string") return WHOLE
    const fields = merge(rest(payload, ["message"]), envelope)
    const body: Mutable = { kind: "compaction", summary: message, firstKeptEntryId: null }
    return store(() => fields === undefined ? [body] : [body, { kind: "custom", customType: COMPACTION_FIELDS, data: fields }])
  }

  /** A token count: a new one is the usage of an assistant message of its own, at its place; a repeat (the same cumulative usage) is counted. */
  private tokenCount(payload: JsonRecord, envelope: Mutable | undefined): Outcome {
    const info = own(payload, "info")
    // A count without info holds the rate limits only.
    if (!isObject(info)) return SKIP
    const total = JSON.stringify(own(info, "total_token_usage"))
    if (total !== undefined && total === this.total) return SKIP
    this.total = total
    const last = own(info, "last_token_usage")
    if (!isObject(last) || !isCount(own(last, "input_tokens")) || !isCount(own(last, "output_tokens"))) return WHOLE
    const usage: Mutable = {}
    const used: Array<string> = []
    for (const [codex, key] of USAGE) {
      if (!isCount(own(last, codex))) continue
      usage[key] = last[codex]
      used.push(codex)
    }
    const infoRest: Mutable = rest(info, ["last_token_usage"]) ?? {}
    put(infoRest, "last_token_usage", rest(last, used) ?? {})
    const codex = merge(merge(rest(payload, ["type", "info"]), { info: infoRest }), envelope)
    return store((ids) => [{ kind: "message", message: { role: "assistant", id: ids(0), content: [], meta: { usage }, options: { codex } } }])
  }

  /** A response item, by its type. */
  private responseItem(item: JsonRecord, envelope: Mutable | undefined): Outcome {
    const message: MessageOf = (ids, { role, ...fields }, used, extra) => ({
      kind: "message",
      message: withOptions({ role, id: ids(0), ...fields }, codexOptions(merge(merge(rest(item, used), extra), envelope)))
    })
    const itemId = isName(own(item, "id")) ? { openai: { itemId: item.id } } : undefined
    const idUsed = itemId === undefined ? [] : ["id"]
    switch (own(item, "type")) {
      case "message":
        return this.message(item, message, itemId, idUsed)
      case "reasoning":
        return this.reasoning(item, message, idUsed)
      case "function_call": {
        const args = own(item, "arguments")
        if (typeof args !== "string") return WHOLE
        const parsed = parseObjectLine(args)
        // The arguments string stays in options.codex when the object does not give it back exactly.
        const exact = Either.isRight(parsed) && JSON.stringify(parsed.right) === args
        const value = Either.isRight(parsed) ? parsed.right : {}
        return this.call(item.call_id, item.name, value, message, itemId, ["type", "call_id", "name", ...idUsed, ...(exact ? ["arguments"] : [])])
      }
      case "custom_tool_call":
        return typeof own(item, "input") === "string"
          ? this.call(item.call_id, item.name, { input: item.input }, message, itemId, ["call_id", "name", "input", ...idUsed])
          : WHOLE
      case "local_shell_call":
        return this.call(item.call_id, "local_shell", own(item, "action"), message, itemId, ["call_id", "action", ...idUsed])
      case "tool_search_call":
        return this.call(item.call_id, "tool_search", own(item, "arguments"), message, itemId, ["call_id", "arguments", ...idUsed])
      case "web_search_call": {
        // Run by the provider, whose result is not written: a provider-executed call under the item's ID, else the entry's.
        const action = own(item, "action")
        const known = isName(own(item, "id")) ? item.id as string : undefined
        if (!isObject(action) || (known !== undefined && this.calls.has(known))) return WHOLE
        return store((ids) => [message(ids, {
          role: "assistant",
          content: [withOptions({ type: "tool-call", id: known ?? ids(0), name: "web_search", arguments: action, providerExecuted: true }, itemId)]
        }, ["action", ...idUsed])])
      }
      case "function_call_output":
        return this.output(item, message, ["type", "call_id", "output"])
      case "custom_tool_call_output":
        return this.output(item, message, ["call_id", "output"])
      case "tool_search_output": {
        const call = this.answerable(own(item, "call_id"))
        if (call === undefined) return WHOLE
        const value: Mutable = { role: "tool", toolCallId: item.call_id, toolName: call.name, isError: false, content: [] }
        if (hasOwn.call(item, "tools")) value.result = item.tools
        return store((ids) => [message(ids, value, ["call_id", "tools"])])
      }
      default:
        return SKIP
    }
  }

  /** A message item, by its role. */
  private message(item: JsonRecord, message: MessageOf, itemId: Mutable | undefined, idUsed: ReadonlyArray<string>): Outcome {
    const content = own(item, "content")
    switch (own(item, "role")) {
      case "user": {
        const parts = contentParts(content, "input_text")
        return parts === undefined || parts.length === 0 ? WHOLE : store((ids) => [message(ids, { role: "user", content: parts }, ["type", "role", "content"])])
      }
      case "assistant": {
        // The item's ID goes with each text part, where @effect/ai-openai looks for it.
        const parts = contentParts(content, "output_text")
        if (parts === undefined) return WHOLE
        const withId = itemId === undefined ? parts : parts.map((part) => ({ ...part, options: { ...itemId, ...(part.options as Mutable | undefined) } }))
        return store((ids) => [message(ids, { role: "assistant", content: withId }, ["type", "role", "content", ...idUsed])])
      }
      case "developer":
      case "system": {
        // Instructions: a system message of its text items joined by a line break, their lengths kept when there are several.
        if (!Array.isArray(content) || content.length === 0) return WHOLE
        const texts: Array<string> = []
        for (const part of content) {
          if (!isObject(part) || own(part, "type") !== "input_text" || typeof own(part, "text") !== "string" || rest(part, ["type", "text"]) !== undefined) return WHOLE
          texts.push(part.text as string)
        }
        const split = texts.length === 1 ? undefined : { split: texts.map((t) => t.length) }
        return store((ids) => [message(ids, { role: "system", content: texts.join("\n") }, ["type", "content"], split)])
      }
      default:
        return WHOLE
    }
  }

  /** A reasoning item: one reasoning part per summary text (one empty part when there is none), each with the item's ID and encrypted content, as @effect/ai-openai gives them. */
  private reasoning(item: JsonRecord, message: MessageOf, idUsed: ReadonlyArray<string>): Outcome {
    const summary = own(item, "summary")
    if (!Array.isArray(summary)) return WHOLE
    const encrypted = own(item, "encrypted_content")
    const openai: Mutable = {}
    if (idUsed.length > 0) openai.itemId = item.id
    if (typeof encrypted === "string") openai.encryptedContent = encrypted
    const provider = Object.keys(openai).length === 0 ? undefined : { openai }
    const parts: Array<Mutable> = []
    for (const s of summary) {
      if (!isObject(s) || own(s, "type") !== "summary_text" || typeof own(s, "text") !== "string") return WHOLE
      parts.push(withOptions({ type: "reasoning", text: s.text }, merge(provider, codexOptions(rest(s, ["type", "text"])))))
    }
    // Without a summary one empty part carries the payload, and `summary: []` stays in the message's options.codex.
    const used = ["type", ...idUsed, ...(typeof encrypted === "string" ? ["encrypted_content"] : []), ...(parts.length === 0 ? [] : ["summary"])]
    if (parts.length === 0) parts.push(withOptions({ type: "reasoning", text: "" }, provider))
    return store((ids) => [message(ids, { role: "assistant", content: parts }, used)])
  }

  /** A call the client runs: an assistant message of one tool-call part; kept whole when its call ID is already used. */
  private call(
    callId: unknown,
    name: unknown,
    args: unknown,
    message: MessageOf,
    itemId: Mutable | undefined,
    used: ReadonlyArray<string>
  ): Outcome {
    if (!isName(callId) || !isName(name) || !isObject(args) || this.calls.has(callId)) return WHOLE
    const part = withOptions({ type: "tool-call", id: callId, name, arguments: args }, itemId)
    return store((ids) => [message(ids, { role: "assistant", content: [part] }, used)])
  }

  /** The call an output may answer: stored earlier, run by the client, not answered yet. */
  private answerable(callId: unknown): Call | undefined {
    const call = isName(callId) ? this.calls.get(callId) : undefined
    return call === undefined || call.answered || call.providerExecuted ? undefined : call
  }

  /** A call's output: a tool message answering it; kept whole when it answers no call it may answer. */
  private output(item: JsonRecord, message: MessageOf, used: ReadonlyArray<string>): Outcome {
    const call = this.answerable(own(item, "call_id"))
    if (call === undefined) return WHOLE
    const output = own(item, "output")
    let content: Array<Mutable> | undefined
    let isError = false
    let extra: Mutable | undefined
    if (typeof output === "string") content = [{ type: "text", text: output }]
    else if (Array.isArray(output)) content = contentParts(output, "input_text")
    else if (isObject(output) && typeof own(output, "content") === "string") {
      // The older shape of an output: { content, success }, success false for a failure.
      content = [{ type: "text", text: output.content }]
      isError = own(output, "success") === false
      extra = { output: rest(output, ["content"]) ?? {} }
    }
    if (content === undefined) return WHOLE
    const value: Mutable = { role: "tool", toolCallId: item.call_id, toolName: call.name, isError, content }
    return store((ids) => [message(ids, value, used, extra)])
  }
}

/** Codex's token counts with a key in `Usage`, in `Usage`'s order (input and output are required). */
const USAGE = [
  ["input_tokens", "inputTokens"],
  ["output_tokens", "outputTokens"],
  ["reasoning_output_tokens", "reasoningTokens"],
  ["cached_input_tokens", "cachedInputTokens"]
] as const

/** The line types whose payload is an object the conversion reads. */
const ENVELOPED: ReadonlySet<string> = new Set(["session_meta", "turn_context", "compacted", "response_item", "event_msg"])

export const fromCodexLines = (lines: ReadonlyArray<SourceLine>, options?: CodexOptions): Either.Either<ConvertedCodex, CorruptError> => {
  const started = start(lines[0])
  if (Either.isLeft(started)) return Either.left(started.left)
  const { header, layout } = started.right
  const conversion = new Conversion(header.id, layout, header.timestamp, lines[0]!.line, options?.keepAll === true, options)
  for (const l of lines) {
    const problem = conversion.add(l)
    if (problem !== undefined) return Either.left(problem)
  }
  const { entries, origins, read, skipped } = conversion
  const problem = checkLoads(header, entries, origins, "Codex rollout")
  if (Either.isLeft(problem)) return Either.left(problem.left)
  return Either.right(Object.freeze({
    header: deepFreeze(header),
    entries: Object.freeze(entries),
    origins: Object.freeze(origins),
    read: Object.freeze(read),
    skipped: Object.freeze(skipped)
  }))
}

export const fromCodex = (bytes: Uint8Array, options?: CodexOptions): Either.Either<ConvertedCodex, CorruptError> => {
  const text = decodeUtf8(bytes)
  if (Either.isLeft(text)) return Either.left(text.left)
  const texts = splitLines(text.right)
  const lines: Array<SourceLine> = []
  for (let i = 0; i < texts.length; i++) {
    const line = i + 1
    if (texts[i] === "" && i === texts.length - 1) break
    const parsed = parseObjectLine(texts[i]!)
    if (Either.isLeft(parsed)) return Either.left(sessionError("SESSION_INVALID_JSON", parsed.left, { line }))
    // Storing a number is writing it again: a literal no number holds exactly would change.
    const inexact = firstInexactNumber(texts[i]!)
    if (inexact !== undefined) {
      return Either.left(sessionError(
        "SESSION_INVALID_RECORD",
        `the number ${inexact.literal} cannot be held exactly (it would become ${JSON.stringify(Number(inexact.literal))})`,
        { line }
      ))
    }
    lines.push({ line, record: parsed.right })
  }
  return fromCodexLines(lines, options)
}

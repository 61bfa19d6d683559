/**
 * A Pi session file (format 3) → a version-2 session, keeping every field Pi
 * wrote (`docs/import.md` gives the mapping field by field). The rule that makes
 * it lossless: each Pi object's fields go to the version-2 key made for them
 * when the value fits that key, and every other field of that object is kept
 * verbatim under `options.pi` of the part or message it belongs to. An entry
 * that has no kind of its own, or does not fit its kind, becomes a `custom`
 * entry `pi:<type>` holding all of its fields. Only what cannot be placed at all
 * (an unknown entry type, role or part, a message that is not valid Message IR
 * v2 once mapped) refuses the file, naming its line.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { checkLoads } from "./importCheck.js"
import { deepFreeze } from "../Record.js"
import * as RecordV2 from "../RecordV2.js"
import { type CorruptError, sessionError } from "../SessionError.js"
import { checkEntry, checkHeader, type JsonRecord, own, restOf } from "./piFile.js"
import { readSource, type SourceLine, strictly, type TornLine } from "./source.js"

/** The ID and custom type of the root entry that holds the Pi header's own fields (`cwd`, …). */
export const SESSION_ENTRY = "pi:session"
/** The custom type of the entry after a compaction that holds the compaction's fields without a key (`details`, `fromHook`). */
export const COMPACTION_FIELDS = "pi:compaction-fields"
/** The prefix of the custom type of a Pi entry kept whole: `pi:` and its Pi type. */
export const WHOLE_PREFIX = "pi:"
/** The value of `options.pi.content` when Pi wrote a message's content as one string instead of parts. */
export const STRING_CONTENT = "string"

export interface ConvertedV2 {
  readonly header: RecordV2.SessionHeader
  readonly entries: ReadonlyArray<RecordV2.SessionEntry>
  /** The Pi entries read, per Pi type (`message` entries per role: `message:user`, …). */
  readonly read: Readonly<Record<string, number>>
  /** The Pi entries kept whole as `custom` entries `pi:<type>`, per Pi type: no kind of their own, or not fitting it. */
  readonly whole: Readonly<Record<string, number>>
  /** The source line of each entry. */
  readonly origins: ReadonlyArray<number>
  /** A last line cut short, left out (Pi still writing it). */
  readonly torn: TornLine | undefined
}

export interface PiV2Options {
  /** Lines to leave out as damaged (the caller records them): entries that hang from one hang from its parent. */
  readonly skip?: ReadonlySet<number> | undefined
  /** An entry whose parent is not in the file follows the entry before it (with `--skip-damaged`: its parent may be damaged). */
  readonly followOrphans?: boolean | undefined
}

type Mutable = Record<string, unknown>
type Model = { readonly provider: string; readonly model: string }

const hasOwn = Object.prototype.hasOwnProperty
const isObject = (v: unknown): v is JsonRecord => typeof v === "object" && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0
const isName = (v: unknown): v is string => typeof v === "string" && v !== ""

const ENVELOPE = ["type", "id", "parentId", "timestamp"] as const

const strict = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeHeader = Schema.decodeUnknownEither(RecordV2.SessionHeader, strict)
const decodeEntry = Schema.decodeUnknownEither(RecordV2.SessionEntry, strict)

const explain = (error: ParseResult.ParseError): string =>
  ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")


/** `value` with `rest` kept under `options.pi`, or `value` alone when nothing is left. */
const withRest = (value: Mutable, rest: Mutable | undefined): Mutable =>
  rest === undefined ? value : { ...value, options: { pi: rest } }

/** Pi's `api` values whose reasoning signatures are Anthropic's, and those whose signature is a serialized OpenAI Responses reasoning item. */
const ANTHROPIC_APIS: ReadonlySet<unknown> = new Set(["anthropic-messages"])
const RESPONSES_APIS: ReadonlySet<unknown> = new Set(["openai-responses", "azure-openai-responses", "openai-codex-responses"])

/**
 * What a provider's client needs to send a reasoning part back (SPEC E3), derived from Pi's
 * `thinkingSignature` by the message's API: Anthropic's signature or redacted payload, or an OpenAI
 * reasoning item's ID and encrypted content. Derived only: mapping back to Pi reads `options.pi`.
 */
const providerReasoning = (part: JsonRecord, api: unknown): Mutable | undefined => {
  const signature = own(part, "thinkingSignature")
  if (typeof signature !== "string") return undefined
  if (ANTHROPIC_APIS.has(api)) {
    return own(part, "redacted") === true
      ? { anthropic: { type: "redacted_thinking", redactedData: signature } }
      : { anthropic: { type: "thinking", signature } }
  }
  if (!RESPONSES_APIS.has(api)) return undefined
  let item: unknown
  try {
    item = JSON.parse(signature)
  } catch {
    return undefined
  }
  if (!isObject(item) || typeof own(item, "id") !== "string") return undefined
  const encrypted = own(item, "encrypted_content")
  return { openai: typeof encrypted === "string" ? { itemId: item.id, encryptedContent: encrypted } : { itemId: item.id } }
}

const PART_TYPES = {
  user: new Set(["text", "image"]),
  assistant: new Set(["text", "thinking", "toolCall"])
} as const

/** One Pi content part → a Message IR v2 part (left for the Schema to check), or why it has no place. */
const convertPart = (part: unknown, index: number, allowed: ReadonlySet<string>, api?: unknown): Mutable | string => {
  if (!isObject(part)) return `part ${index} is not an object`
  const type = own(part, "type")
  if (typeof type !== "string" || !allowed.has(type)) {
    return `part ${index} has type ${JSON.stringify(type) ?? "(none)"}, which this message cannot hold (only ${[...allowed].join(", ")})`
  }
  switch (type) {
    case "text":
      return withRest({ type: "text", text: own(part, "text") }, restOf(part, ["type", "text"]))
    case "image":
      return withRest(
        { type: "file", mediaType: own(part, "mimeType"), data: { base64: own(part, "data") } },
        restOf(part, ["type", "mimeType", "data"])
      )
    case "thinking": {
      // Redacted thinking has no text to show: its payload (and Pi's placeholder text) stay in options.
      const reasoning = own(part, "redacted") === true
        ? withRest({ type: "reasoning", text: "" }, restOf(part, ["type"]))
        : withRest({ type: "reasoning", text: own(part, "thinking") }, restOf(part, ["type", "thinking"]))
      const provider = providerReasoning(part, api)
      return provider === undefined ? reasoning : { ...reasoning, options: { ...(reasoning.options as Mutable | undefined), ...provider } }
    }
    default:
      return withRest(
        { type: "tool-call", id: own(part, "id"), name: own(part, "name"), arguments: own(part, "arguments") },
        restOf(part, ["type", "id", "name", "arguments"])
      )
  }
}

/** A message's content → parts, and whether Pi wrote it as one string; or why it has no place. */
const convertContent = (
  content: unknown,
  allowed: ReadonlySet<string>,
  api?: unknown
): { readonly parts: Array<Mutable>; readonly string: boolean } | string => {
  if (typeof content === "string") return { parts: [{ type: "text", text: content }], string: true }
  if (!Array.isArray(content)) return "content is neither a string nor an array of parts"
  const parts: Array<Mutable> = []
  for (let i = 0; i < content.length; i++) {
    const part = convertPart(content[i], i, allowed, api)
    if (typeof part === "string") return part
    parts.push(part)
  }
  return { parts, string: false }
}

/** The fields of a message besides `used`, with the mark of string content. */
const messageRest = (message: JsonRecord, used: ReadonlyArray<string>, string: boolean): Mutable | undefined => {
  const rest = restOf(message, used)
  return string ? { ...rest, content: STRING_CONTENT } : rest
}

/** Pi's assistant fields with a key in `meta`, by Pi name. */
const META_STRINGS = [["provider", "provider"], ["model", "model"], ["responseId", "responseId"], ["stopReason", "stopReason"], [
  "errorMessage",
  "error"
]] as const

const convertAssistant = (message: JsonRecord, id: string): Mutable | string => {
  const content = own(message, "content")
  if (!Array.isArray(content)) return "an assistant's content is not an array of parts"
  const converted = convertContent(content, PART_TYPES.assistant, own(message, "api"))
  if (typeof converted === "string") return converted
  const used: Array<string> = ["role", "content"]
  const meta: Mutable = {}
  for (const [pi, key] of META_STRINGS) {
    const value = own(message, pi)
    if (typeof value === "string") {
      meta[key] = value
      used.push(pi)
    }
  }
  // Usage fits when its two required counts do; the counts Usage has no key for (and the cost) stay in options.
  const usage = own(message, "usage")
  let usageRest: Mutable | undefined
  if (isObject(usage) && isCount(own(usage, "input")) && isCount(own(usage, "output"))) {
    const counted: Mutable = { inputTokens: usage.input, outputTokens: usage.output }
    const usageUsed = ["input", "output"]
    if (isCount(own(usage, "cacheRead"))) {
      counted.cachedInputTokens = usage.cacheRead
      usageUsed.push("cacheRead")
    }
    if (isCount(own(usage, "cacheWrite"))) {
      counted.cacheWriteTokens = usage.cacheWrite
      usageUsed.push("cacheWrite")
    }
    meta.usage = counted
    used.push("usage")
    usageRest = restOf(usage, usageUsed)
  }
  let rest = restOf(message, used)
  if (usageRest !== undefined) rest = { ...rest, usage: usageRest }
  const value: Mutable = { role: "assistant", id, content: converted.parts }
  if (Object.keys(meta).length > 0) value.meta = meta
  return withRest(value, rest)
}

/** What one Pi entry becomes: a body to store, or (a string) why it has no place. */
type Body = Mutable | string

/** A `message` entry's message → a message body, or a `custom` body for Pi's roles that are not messages to a model. */
const convertMessage = (entry: JsonRecord, id: string): Body => {
  const message = own(entry, "message")
  if (!isObject(message)) return "message is not an object"
  const role = own(message, "role")
  switch (role) {
    case "user":
    case "custom": {
      // Pi sends an extension's message to the model as the user's; its own fields stay in options.
      const content = convertContent(own(message, "content"), PART_TYPES.user)
      if (typeof content === "string") return content
      const rest = messageRest(message, role === "user" ? ["role", "content"] : ["content"], content.string)
      return { kind: "message", message: withRest({ role: "user", id, content: content.parts }, rest) }
    }
    case "assistant": {
      const value = convertAssistant(message, id)
      return typeof value === "string" ? value : { kind: "message", message: value }
    }
    case "toolResult": {
      const content = convertContent(own(message, "content"), PART_TYPES.user)
      if (typeof content === "string") return content
      const value: Mutable = {
        role: "tool",
        id,
        toolCallId: own(message, "toolCallId"),
        toolName: own(message, "toolName"),
        isError: own(message, "isError"),
        content: content.parts
      }
      if (hasOwn.call(message, "details")) value.result = message.details
      const rest = messageRest(message, ["role", "toolCallId", "toolName", "isError", "content", "details"], content.string)
      return { kind: "message", message: withRest(value, rest) }
    }
    case "bashExecution":
    case "branchSummary":
    case "compactionSummary":
      return whole("message", entry)
    default:
      return `unknown message role ${JSON.stringify(role) ?? "(none)"}`
  }
}

/** A Pi entry kept whole: a `custom` entry `pi:<type>` whose data is every field after the envelope. */
const whole = (type: string, entry: JsonRecord): Mutable => ({
  kind: "custom",
  customType: WHOLE_PREFIX + type,
  data: restOf(entry, ENVELOPE) ?? {}
})

/** The state of one conversion. */
interface Run {
  /** Output entry ID → its parent, for every entry so far. */
  readonly parents: Map<string, string | null>
  /** Pi entry ID → the output entry its children hang from. */
  readonly attach: Map<string, string>
  /** Output entry ID → the model in effect after it on its branch. */
  readonly models: Map<string, Model | undefined>
}

const isStrictAncestor = (run: Run, ancestor: unknown, parent: string | null): boolean => {
  for (let at: string | null | undefined = parent; at != null; at = run.parents.get(at)) {
    if (at === ancestor) return true
  }
  return false
}

/** A non-message Pi entry → the body of its kind, or undefined when it does not fit that kind exactly. */
const convertOther = (run: Run, type: string, entry: JsonRecord, parent: string | null): Mutable | undefined => {
  const extra = (keys: ReadonlyArray<string>) => restOf(entry, [...ENVELOPE, ...keys]) !== undefined
  switch (type) {
    case "model_change":
      return extra(["provider", "modelId"]) ? undefined : { kind: "model", provider: own(entry, "provider"), model: own(entry, "modelId") }
    case "thinking_level_change": {
      // A model entry names a model: the one in effect on this branch, when one is known.
      const model = parent === null ? undefined : run.models.get(parent)
      return extra(["thinkingLevel"]) || model === undefined
        ? undefined
        : { kind: "model", provider: model.provider, model: model.model, thinking: own(entry, "thinkingLevel") }
    }
    case "label": {
      if (extra(["targetId", "label"]) || !run.parents.has(own(entry, "targetId") as string)) return undefined
      // Pi clears a label with an absent or empty one.
      const label = own(entry, "label")
      return { kind: "label", targetId: own(entry, "targetId"), label: label === undefined || label === "" ? null : label }
    }
    case "session_info":
      return extra(["name"]) ? undefined : { kind: "title", title: own(entry, "name") }
    case "custom":
      return extra(["customType", "data"]) || !hasOwn.call(entry, "data")
        ? undefined
        : { kind: "custom", customType: own(entry, "customType"), data: own(entry, "data") }
    case "compaction": {
      if (!isStrictAncestor(run, own(entry, "firstKeptEntryId"), parent)) return undefined
      const body: Mutable = { kind: "compaction", summary: own(entry, "summary"), firstKeptEntryId: own(entry, "firstKeptEntryId") }
      if (hasOwn.call(entry, "tokensBefore")) body.tokensBefore = entry.tokensBefore
      return body
    }
    default:
      return undefined
  }
}

const KNOWN = new Set(["message", "model_change", "thinking_level_change", "label", "session_info", "custom", "compaction", "branch_summary", "custom_message"])

/** The body's entry decoded by the version-2 Schema: canonical key order, frozen; or the Schema's explanation. */
const decode = (envelope: Mutable, body: Mutable): RecordV2.SessionEntry | string => {
  const decoded = decodeEntry({ type: "entry", version: RecordV2.VERSION, ...envelope, ...body })
  return Either.isRight(decoded) ? deepFreeze(decoded.right) : explain(decoded.left)
}

/** What one Pi entry becomes: its entry, the model its children inherit, what it is counted as, whether it was kept whole. */
interface Converted {
  readonly entry: RecordV2.SessionEntry
  readonly model: Model | undefined
  /** The type it is counted under (`message:assistant`, `compaction`, …). */
  readonly key: string
  /** Kept whole, as a custom entry, for want of a place in this format. */
  readonly whole: boolean
}

/** One Pi entry, its envelope read and its parent known (`at`), → its entry. */
const convertEntry = (
  run: Run,
  record: JsonRecord,
  type: string,
  at: { readonly id: string; readonly parentId: string | null; readonly timestamp: unknown },
  line: number
): Either.Either<Converted, CorruptError> => {
  const { id } = at
  // The model of the parent's branch, which the entry runs on unless it changes it.
  const inherited = at.parentId === null ? undefined : run.models.get(at.parentId)
  if (type === "message" || type === "custom_message") {
    if (type === "message" && restOf(record, [...ENVELOPE, "message"]) !== undefined) {
      const fields = Object.keys(restOf(record, [...ENVELOPE, "message"])!).map((k) => JSON.stringify(k)).join(", ")
      return Either.left(sessionError("SESSION_INVALID_RECORD", `Pi entry "${id}" has fields with no place in a message entry: ${fields}`, { line }))
    }
    let body: Body
    let key: string = type
    if (type === "message") {
      const role = isObject(record.message) ? own(record.message, "role") : undefined
      key = `message:${typeof role === "string" ? role : "?"}`
      body = convertMessage(record, id)
    } else {
      // An extension's message that Pi sends to the model as the user's: its own fields stay in options.
      const content = convertContent(own(record, "content"), PART_TYPES.user)
      body = typeof content === "string"
        ? content
        : { kind: "message", message: withRest({ role: "user", id, content: content.parts }, messageRest(record, ["id", "parentId", "timestamp", "content"], content.string)) }
    }
    if (typeof body === "string") return Either.left(sessionError("SESSION_INVALID_MESSAGE", `Pi entry "${id}": ${body}`, { line }))
    const entry = decode(at, body)
    if (typeof entry === "string") return Either.left(sessionError("SESSION_INVALID_MESSAGE", `Pi entry "${id}", converted: ${entry}`, { line }))
    let model = inherited
    if (entry.kind === "message" && entry.message.role === "assistant") {
      const { meta } = entry.message
      if (isName(meta?.provider) && isName(meta?.model)) model = { provider: meta.provider, model: meta.model }
    }
    return Either.right({ entry, model, key, whole: entry.kind === "custom" })
  }
  const body = convertOther(run, type, record, at.parentId)
  const entry = body === undefined ? "" : decode(at, body)
  if (typeof entry !== "string") {
    return Either.right({ entry, model: entry.kind === "model" ? { provider: entry.provider, model: entry.model } : inherited, key: type, whole: false })
  }
  const kept = decode(at, whole(type, record))
  if (typeof kept === "string") return Either.left(sessionError("SESSION_INVALID_RECORD", `Pi entry "${id}", kept whole: ${kept}`, { line }))
  return Either.right({ entry: kept, model: inherited, key: type, whole: true })
}

export const fromPiV2 = (bytes: Uint8Array): Either.Either<ConvertedV2, CorruptError> => {
  const source = readSource(bytes)
  return Either.map(strictly(source, (lines) => fromPiV2Lines(lines)), (converted) => Object.freeze({ ...converted, torn: source.torn }))
}

export const fromPiV2Lines = (lines: ReadonlyArray<SourceLine>, options: PiV2Options = {}): Either.Either<ConvertedV2, CorruptError> => {
  const first = lines[0]
  if (first === undefined || first.line !== 1) {
    return Either.left(sessionError("SESSION_INVALID_HEADER", "the first line is not a Pi session header", { line: 1 }))
  }
  const read = checkHeader(first.record)
  if (Either.isLeft(read)) return Either.left(read.left)
  const piHeader = read.right
  const header = decodeHeader({ type: "session", version: RecordV2.VERSION, id: own(piHeader, "id"), timestamp: own(piHeader, "timestamp") })
  if (Either.isLeft(header)) return Either.left(sessionError("SESSION_INVALID_HEADER", explain(header.left), { line: 1 }))

  const run: Run = { parents: new Map(), attach: new Map(), models: new Map() }
  const counts: Record<string, number> = {}
  const wholes: Record<string, number> = {}
  const entries: Array<RecordV2.SessionEntry> = []
  // The Pi line each entry comes from, to report what the loader finds where it comes from.
  const origins: Array<number> = []
  let line = 1
  const add = (entry: RecordV2.SessionEntry, model: Model | undefined): void => {
    entries.push(entry)
    origins.push(line)
    run.parents.set(entry.id, entry.parentId)
    run.models.set(entry.id, model)
  }

  // The header's fields this project's header has no key for, kept in a root entry of their own.
  const root = decode(
    { id: SESSION_ENTRY, parentId: null, timestamp: header.right.timestamp },
    { kind: "custom", customType: SESSION_ENTRY, data: restOf(piHeader, ["type", "version", "id", "timestamp"]) ?? {} }
  )
  if (typeof root === "string") return Either.left(sessionError("SESSION_INVALID_HEADER", root, { line: 1 }))
  add(root, undefined)

  for (let i = 1; i < lines.length; i++) {
    line = lines[i]!.line
    if (options.skip?.has(line) === true) {
      // A damaged entry, left out: what hangs from it hangs from its parent.
      const { id, parentId } = lines[i]!.record
      if (typeof id === "string" && !run.attach.has(id)) {
        run.attach.set(id, parentId === null || typeof parentId !== "string" ? SESSION_ENTRY : run.attach.get(parentId) ?? SESSION_ENTRY)
      }
      continue
    }
    const read = checkEntry(lines[i]!.record, line)
    if (Either.isLeft(read)) return Either.left(read.left)
    const { record } = read.right
    const { id, parentId, timestamp, type } = read.right.entry
    if (!KNOWN.has(type)) return Either.left(sessionError("SESSION_INVALID_RECORD", `Pi entry "${id}" has an unknown type ${JSON.stringify(type)}`, { line }))
    if (run.parents.has(id)) return Either.left(sessionError("SESSION_DUPLICATE_ID", `Pi entry ID "${id}" is already used`, { line }))
    // Pi's roots hang from the entry holding its header's fields, so that a linear Pi session is one branch.
    let parent = parentId === null ? SESSION_ENTRY : run.attach.get(parentId)
    if (parent === undefined && options.followOrphans === true) parent = entries[entries.length - 1]!.id
    if (parent === undefined) {
      return Either.left(sessionError("SESSION_UNKNOWN_PARENT", `Pi entry "${id}": parent "${parentId}" is not an earlier entry`, { line }))
    }
    const converted = convertEntry(run, record, type, { id, parentId: parent, timestamp }, line)
    if (Either.isLeft(converted)) return Either.left(converted.left)
    const { entry, key, model } = converted.right
    if (converted.right.whole) wholes[key] = (wholes[key] ?? 0) + 1
    counts[key] = (counts[key] ?? 0) + 1
    add(entry, model)
    run.attach.set(id, id)

    // A compaction's fields without a key go to an entry of their own right after it, where its children then hang.
    const fields = entry.kind === "compaction" ? restOf(record, [...ENVELOPE, "summary", "firstKeptEntryId", "tokensBefore"]) : undefined
    if (fields !== undefined) {
      const companion = `${id}:fields`
      if (run.parents.has(companion)) return Either.left(sessionError("SESSION_DUPLICATE_ID", `the entry ID "${companion}" for Pi entry "${id}"'s fields is already used`, { line }))
      const kept = decode({ id: companion, parentId: id, timestamp }, { kind: "custom", customType: COMPACTION_FIELDS, data: fields })
      if (typeof kept === "string") return Either.left(sessionError("SESSION_INVALID_RECORD", `Pi entry "${id}", its fields: ${kept}`, { line }))
      add(kept, model)
      run.attach.set(id, companion)
    }
  }
  const problem = checkLoads(header.right, entries, origins, "Pi")
  if (Either.isLeft(problem)) return Either.left(problem.left)
  return Either.right(Object.freeze({
    header: Object.freeze(header.right),
    entries: Object.freeze(entries),
    read: Object.freeze(counts),
    whole: Object.freeze(wholes),
    origins: Object.freeze(origins),
    torn: undefined
  }))
}

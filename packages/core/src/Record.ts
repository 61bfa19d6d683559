/**
 * Records: the header, the entries and Message IR v1 (SPEC B1, B2).
 *
 * Decoders are built once at module level and run in their sync `Either` form:
 * the loader calls them thousands of times in a plain loop. Struct decoding
 * builds fresh objects in the canonical key order, which is also the order
 * `JSON.stringify` writes them back in.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { hasKeyTokens, MAX_DEPTH } from "./Json.js"
import { type SessionError, sessionError } from "./SessionError.js"

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** The two ASCII digits at `i` as a number, or -1. */
const twoDigits = (s: string, i: number): number => {
  const a = s.charCodeAt(i) - 48
  const b = s.charCodeAt(i + 1) - 48
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1
}

const inRange = (n: number, max: number): boolean => n >= 0 && n <= max

/**
 * True for exactly the strings `Date.prototype.toISOString()` writes (four-digit
 * years): `YYYY-MM-DDTHH:mm:ss.sssZ` with every field in range and the days of
 * each month of the proleptic Gregorian calendar. Checked by hand, without a
 * Date, because the loader checks one per entry.
 */
export const isCanonicalTimestamp = (s: string): boolean => {
  if (
    s.length !== 24 || s.charCodeAt(4) !== 0x2d || s.charCodeAt(7) !== 0x2d || s.charCodeAt(10) !== 0x54 ||
    s.charCodeAt(13) !== 0x3a || s.charCodeAt(16) !== 0x3a || s.charCodeAt(19) !== 0x2e || s.charCodeAt(23) !== 0x5a
  ) return false
  const century = twoDigits(s, 0)
  const yearOfCentury = twoDigits(s, 2)
  const month = twoDigits(s, 5)
  const day = twoDigits(s, 8)
  const lastMsDigit = s.charCodeAt(22) - 48
  if (
    century < 0 || yearOfCentury < 0 || twoDigits(s, 20) < 0 || lastMsDigit < 0 || lastMsDigit > 9 ||
    month < 1 || month > 12 || day < 1 ||
    !inRange(twoDigits(s, 11), 23) || !inRange(twoDigits(s, 14), 59) || !inRange(twoDigits(s, 17), 59)
  ) return false
  const year = century * 100 + yearOfCentury
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)
}

export const Id = Schema.String.pipe(Schema.minLength(1))
export const Timestamp = Schema.String.pipe(
  Schema.filter(isCanonicalTimestamp, { message: () => "expected a canonical ISO-8601 UTC timestamp" })
)

/** A JSON object; its values are checked to be JSON by the line parser (load) or the snapshot (append). */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const ToolCall = Schema.Struct({
  id: Id,
  name: Id,
  arguments: JsonObject
})
export type ToolCall = typeof ToolCall.Type

export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  id: Id,
  content: Schema.String
})
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  id: Id,
  content: Schema.String,
  toolCalls: Schema.Array(ToolCall)
})
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  id: Id,
  toolCallId: Id,
  toolName: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean
})
export const CourseMessage = Schema.Union(UserMessage, AssistantMessage, ToolMessage)
export type UserMessage = typeof UserMessage.Type
export type AssistantMessage = typeof AssistantMessage.Type
export type ToolMessage = typeof ToolMessage.Type
export type CourseMessage = typeof CourseMessage.Type

export const SessionHeader = Schema.Struct({
  type: Schema.Literal("session"),
  version: Schema.Literal(1),
  id: Id,
  timestamp: Timestamp
})
export type SessionHeader = typeof SessionHeader.Type

/** The entry with its message left undecoded, so a bad message gets its own code. */
const EntryEnvelope = Schema.Struct({
  type: Schema.Literal("entry"),
  version: Schema.Literal(1),
  id: Id,
  parentId: Schema.NullOr(Id),
  timestamp: Timestamp,
  message: Schema.Unknown
})

export const SessionEntry = Schema.Struct({
  type: Schema.Literal("entry"),
  version: Schema.Literal(1),
  id: Id,
  parentId: Schema.NullOr(Id),
  timestamp: Timestamp,
  message: CourseMessage
})
export type SessionEntry = typeof SessionEntry.Type

// `exact`: a missing key is an error even where the schema accepts undefined
// (the envelope's `message`), and the decoder never reads a missing key through
// the prototype chain, so nothing on Object.prototype can stand in for it.
const strict = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeHeaderEither = Schema.decodeUnknownEither(SessionHeader, strict)
const decodeEnvelopeEither = Schema.decodeUnknownEither(EntryEnvelope, strict)
const decodeMessageEither = Schema.decodeUnknownEither(CourseMessage, strict)

const explain = (error: ParseResult.ParseError): string =>
  ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")

/** An own property only: a key missing from parsed JSON must not be looked up on the prototype chain. */
const own = (record: { readonly [key: string]: unknown }, key: string): unknown =>
  Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined

/** Deep-freezes a value built by the decoders (plain objects and arrays only), without recursion. */
export const deepFreeze = <A>(value: A): A => {
  const stack: Array<unknown> = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
      Object.freeze(v)
      for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key])
    }
  }
  return value
}

export const decodeHeader = (
  record: { readonly [key: string]: unknown },
  line: number
): SessionHeader | SessionError => {
  const version = own(record, "version")
  if (own(record, "type") === "session" && typeof version === "number" && version !== 1) {
    return sessionError("SESSION_UNSUPPORTED_VERSION", `header version ${version} is not supported`, { line })
  }
  const decoded = decodeHeaderEither(record)
  return Either.isRight(decoded)
    ? Object.freeze(decoded.right)
    : sessionError("SESSION_INVALID_HEADER", explain(decoded.left), { line })
}

/**
 * Set when `decodeCanonicalLine` copies a number into tool-call arguments (cleared when it starts),
 * read by `takeCopiedNumber`. A flag rather than a result, so the canonical path allocates nothing for it.
 */
let copiedNumber = false

/**
 * Whether the last `decodeCanonicalLine` copied a number into tool-call arguments (a zero too:
 * `2e-324` reads as 0). Only then can its line hold a literal that a number cannot hold exactly
 * (SPEC C4), which the loader checks in the text, so most lines are never scanned for numbers.
 */
export const takeCopiedNumber = (): boolean => {
  const copied = copiedNumber
  copiedNumber = false
  return copied
}

/**
 * A fresh copy of JSON data (plain objects and arrays), without recursion, or
 * undefined when it holds a number JSON cannot write back (`1e400` parses to
 * Infinity, which `JSON.stringify` would turn into `null` on the next commit).
 * Tool-call arguments decode as `Unknown` values, which the schema passes
 * through by reference; copying them means no record shares an object with the
 * parsed line (or with an append's input). `-0` becomes `0`, as the append
 * snapshot does, since that is what a commit writes. A `__proto__` key (refused
 * earlier, on both paths) would be defined, never assigned, so it stays a key.
 */
const copyJson = (value: object): object | undefined => {
  const fresh = (source: object): Record<string, unknown> | Array<unknown> =>
    Array.isArray(source) ? new Array<unknown>(source.length) : {}
  const root = fresh(value)
  const stack: Array<readonly [object, Record<string, unknown> | Array<unknown>]> = [[value, root]]
  while (stack.length > 0) {
    const [source, target] = stack.pop()!
    for (const key of Object.keys(source)) {
      let child: unknown = (source as Record<string, unknown>)[key]
      if (typeof child === "object" && child !== null) {
        const copy = fresh(child)
        stack.push([child, copy])
        child = copy
      } else if (typeof child === "number") {
        if (!Number.isFinite(child)) return undefined
        if (child === 0) child = 0
      }
      if (key === "__proto__") Object.defineProperty(target, key, { value: child, writable: true, enumerable: true, configurable: true })
      else (target as Record<string, unknown>)[key] = child
    }
  }
  return root
}

/** Decodes one message (Message IR v1); tool-call IDs must be unique within it. */
export const decodeMessage = (message: unknown, line?: number): CourseMessage | SessionError => {
  const decoded = decodeMessageEither(message)
  if (Either.isLeft(decoded)) {
    return sessionError("SESSION_INVALID_MESSAGE", explain(decoded.left), { line })
  }
  const value = decoded.right
  if (value.role !== "assistant") return value
  const seen = new Set<string>()
  for (const call of value.toolCalls) {
    if (seen.has(call.id)) {
      return sessionError("SESSION_INVALID_MESSAGE", `tool call ID "${call.id}" repeats within one message`, { line })
    }
    seen.add(call.id)
  }
  const toolCalls: Array<ToolCall> = []
  for (const call of value.toolCalls) {
    const args = copyJson(call.arguments)
    if (args === undefined) {
      return sessionError("SESSION_INVALID_MESSAGE", `the arguments of tool call "${call.id}" hold a number out of range`, { line })
    }
    toolCalls.push({ id: call.id, name: call.name, arguments: args as ToolCall["arguments"] })
  }
  return { ...value, toolCalls }
}

/** Decodes one entry record; the result is a fresh, deeply frozen plain object. */
export const decodeEntry = (
  record: { readonly [key: string]: unknown },
  line?: number
): SessionEntry | SessionError => {
  const version = own(record, "version")
  if (own(record, "type") === "entry" && typeof version === "number" && version !== 1) {
    return sessionError("SESSION_UNSUPPORTED_VERSION", `entry version ${version} is not supported`, { line })
  }
  const envelope = decodeEnvelopeEither(record)
  if (Either.isLeft(envelope)) {
    return sessionError("SESSION_INVALID_RECORD", explain(envelope.left), { line })
  }
  const message = decodeMessage(envelope.right.message, line)
  if (message instanceof Error) return message
  const { id, parentId, timestamp } = envelope.right
  return deepFreeze({ type: "entry", version: 1, id, parentId, timestamp, message })
}

// ---------------------------------------------------------------------------
// The loader's path. A load decodes up to 4,096 records, and the generic Schema
// interpreter costs several times JSON.parse per record. A record that is
// already exactly canonical (own keys exactly the struct's, in schema order,
// every field valid) is rebuilt here directly: the same fresh, frozen objects
// the Schemas and `decodeMessage` build. Anything else goes through
// `decodeEntry`, which decides and explains.

const hasOwn = Object.prototype.hasOwnProperty
const isId = (v: unknown): v is string => typeof v === "string" && v.length > 0
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * Whether the keys of `o` are exactly `names`, in that order, all own. for-in
 * allocates nothing; it also lists inherited enumerable keys, which fail the
 * check. Only for what JSON.parse builds: every own key an enumerable string.
 */
const keysAre = (o: object, names: ReadonlyArray<string>): boolean => {
  let i = 0
  for (const key in o) {
    if (key !== names[i] || !hasOwn.call(o, key)) return false
    i++
  }
  return i === names.length
}

const ENTRY_KEYS = ["type", "version", "id", "parentId", "timestamp", "message"]
const USER_KEYS = ["role", "id", "content"]
const ASSISTANT_KEYS = ["role", "id", "content", "toolCalls"]
const TOOL_KEYS = ["role", "id", "toolCallId", "toolName", "content", "isError"]
const CALL_KEYS = ["id", "name", "arguments"]

/**
 * The frozen Message IR value of a message whose own keys are exactly the schema's, in schema order
 * (a canonical parsed line, or an append's snapshot), or undefined: the general path then decides.
 */
export const decodeCanonicalMessage = (m: unknown): CourseMessage | undefined => {
  if (!isPlainObject(m)) return undefined
  try {
    const message = copyMessage(m)
    if (message === undefined) return undefined
    while (made.length > 0) Object.freeze(made.pop())
    return Object.freeze(message)
  } finally {
    discardWork()
  }
}

/**
 * Decodes a record that JSON.parse has just built: a canonical one directly,
 * anything else through `decodeEntry`. The result is the same either way.
 */
export const decodeParsedEntry = (
  record: { readonly [key: string]: unknown },
  line?: number
): SessionEntry | SessionError => {
  if (hasCanonicalEntryFields(record)) {
    const message = decodeCanonicalMessage(record["message"])
    if (message !== undefined) return canonicalEntry(record, message)
  }
  return decodeEntry(record, line)
}

/**
 * Whether `v` is an object with the entry record's keys in schema order and a valid type, version,
 * ID, parent and timestamp: everything of a canonical entry but its message.
 */
const hasCanonicalEntryFields = (v: unknown): v is Record<string, unknown> & { id: string; parentId: string | null; timestamp: string } => {
  if (!isPlainObject(v) || !keysAre(v, ENTRY_KEYS) || v["type"] !== "entry" || v["version"] !== 1 || !isId(v["id"])) return false
  const parentId = v["parentId"]
  const timestamp = v["timestamp"]
  return (parentId === null || isId(parentId)) && typeof timestamp === "string" && isCanonicalTimestamp(timestamp)
}

const canonicalEntry = (
  fields: { readonly id: string; readonly parentId: string | null; readonly timestamp: string },
  message: CourseMessage
): SessionEntry => Object.freeze({ type: "entry", version: 1, id: fields.id, parentId: fields.parentId, timestamp: fields.timestamp, message })

// ---------------------------------------------------------------------------
// The loader's path for whole lines: everything `checkParsedLine` (the line
// checks) and `decodeParsedEntry` do for a canonical record, in one pass that
// builds the same fresh, frozen objects. The fixed record shape is checked key
// by key, so only tool-call arguments, the one free-form part, are walked
// generically; and since the shape gives the number of keys, one count of the
// key tokens in the text proves that no object repeated a key. Any doubt
// returns undefined and the caller takes the general path, which decides and
// explains.

type JsonContainer = Record<string, unknown> | Array<unknown>

// Work lists of the arguments walk, reused across calls (it is synchronous and
// never re-entered) and emptied after each use, so nothing parsed stays alive.
const walkSources: Array<object> = []
const walkCopies: Array<JsonContainer> = []
const walkDepths: Array<number> = []
/** Copies made by the current line, frozen once the whole line is accepted. */
const made: Array<object> = []

const freshContainer = (source: object): JsonContainer =>
  Array.isArray(source) ? new Array<unknown>(source.length) : {}

/**
 * A fresh copy of the arguments `args` (at depth `depth`) into `copy`, as
 * `copyJson` makes it (`-0` written as `0`); the number of own keys of all
 * objects in it, or -1 when the general path must decide: a `__proto__` key,
 * nesting beyond MAX_DEPTH, a non-finite number. Copies go to `made`.
 */
const copyArguments = (args: object, copy: JsonContainer, depth: number): number => {
  let keys = 0
  let numbers = false
  walkSources.push(args)
  walkCopies.push(copy)
  walkDepths.push(depth)
  while (walkSources.length > 0) {
    const source = walkSources.pop()!
    const target = walkCopies.pop()!
    const childDepth = walkDepths.pop()! + 1
    made.push(target)
    if (Array.isArray(source)) {
      for (let i = 0; i < source.length; i++) {
        const child = jsonChild(source[i], childDepth)
        if (child === REFUSED) return -1
        if (typeof child === "number") numbers = true
        ;(target as Array<unknown>)[i] = child
      }
    } else {
      // for-in lists inherited enumerable keys too: only own ones are JSON.
      for (const key in source) {
        if (!hasOwn.call(source, key) || key === "__proto__") return -1
        keys++
        const child = jsonChild((source as Record<string, unknown>)[key], childDepth)
        if (child === REFUSED) return -1
        if (typeof child === "number") numbers = true
        ;(target as Record<string, unknown>)[key] = child
      }
    }
  }
  if (numbers) copiedNumber = true
  return keys
}

const REFUSED: unique symbol = Symbol("refused")

/** What a copy holds for `child` at `depth`: a scalar as is (`-0` as `0`), or a fresh container queued for copying. */
const jsonChild = (child: unknown, depth: number): unknown => {
  if (typeof child === "object") {
    if (child === null) return null
    if (depth > MAX_DEPTH) return REFUSED
    const copy = freshContainer(child)
    walkSources.push(child)
    walkCopies.push(copy)
    walkDepths.push(depth)
    return copy
  }
  if (typeof child === "number") {
    if (child === 0) return 0
    if (!Number.isFinite(child)) return REFUSED
  }
  return child
}

/** Set by `copyMessage`: the own keys of all objects in the message it copied (a second result without an allocation). */
let messageKeys = 0

/** The fresh message of the canonical message `m` (depth 2), or undefined when it is not canonical. */
const copyMessage = (m: Record<string, unknown>): CourseMessage | undefined => {
  if (!hasOwn.call(m, "role")) return undefined
  switch (m["role"]) {
    case "user":
      if (!keysAre(m, USER_KEYS) || !isId(m["id"]) || typeof m["content"] !== "string") return undefined
      messageKeys = USER_KEYS.length
      return { role: "user", id: m["id"], content: m["content"] }
    case "tool":
      if (
        !keysAre(m, TOOL_KEYS) || !isId(m["id"]) || !isId(m["toolCallId"]) || typeof m["toolName"] !== "string" ||
        typeof m["content"] !== "string" || typeof m["isError"] !== "boolean"
      ) return undefined
      messageKeys = TOOL_KEYS.length
      return {
        role: "tool",
        id: m["id"],
        toolCallId: m["toolCallId"],
        toolName: m["toolName"],
        content: m["content"],
        isError: m["isError"]
      }
    case "assistant": {
      if (!keysAre(m, ASSISTANT_KEYS) || !isId(m["id"]) || typeof m["content"] !== "string") return undefined
      const calls = m["toolCalls"]
      if (!Array.isArray(calls)) return undefined
      let keys = ASSISTANT_KEYS.length
      const toolCalls: Array<ToolCall> = []
      for (let i = 0; i < calls.length; i++) {
        const c: unknown = calls[i]
        if (!isPlainObject(c) || !keysAre(c, CALL_KEYS) || !isId(c["id"]) || !isId(c["name"])) return undefined
        // A repeated call ID is an error: the general path reports it.
        for (let j = 0; j < i; j++) if (toolCalls[j]!.id === c["id"]) return undefined
        const args = c["arguments"]
        if (!isPlainObject(args)) return undefined
        const copy: Record<string, unknown> = {}
        // record 1, message 2, toolCalls 3, call 4, arguments 5
        const argKeys = copyArguments(args, copy, 5)
        if (argKeys < 0) return undefined
        keys += CALL_KEYS.length + argKeys
        const call = { id: c["id"], name: c["name"], arguments: copy }
        made.push(call)
        toolCalls.push(call)
      }
      made.push(toolCalls)
      messageKeys = keys
      return { role: "assistant", id: m["id"], content: m["content"], toolCalls }
    }
    default:
      return undefined
  }
}

/**
 * The entry of one line when `value` (what `JSON.parse(text)` returned) is a
 * canonical, valid entry record and `text` repeats no key: fresh and deeply
 * frozen, equal to what `checkParsedLine` + `decodeParsedEntry` give.
 * Otherwise undefined. Reads `value` only.
 */
export const decodeCanonicalLine = (value: unknown, text: string): SessionEntry | undefined => {
  copiedNumber = false
  if (!hasCanonicalEntryFields(value)) return undefined
  const message = decodeCanonicalMessage(value["message"])
  // `messageKeys` is what decoding that message counted.
  return message === undefined || !hasKeyTokens(text, ENTRY_KEYS.length + messageKeys) ? undefined : canonicalEntry(value, message)
}

/** Empties the work lists; only a message that was given up leaves anything in them. */
const discardWork = (): void => {
  if (made.length > 0) made.length = 0
  if (walkSources.length > 0) {
    walkSources.length = 0
    walkCopies.length = 0
    walkDepths.length = 0
  }
}

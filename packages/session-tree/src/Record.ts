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
import { type SessionError, sessionError } from "./SessionError.js"

const CANONICAL_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** True for exactly the strings `Date.prototype.toISOString()` writes (four-digit years). */
export const isCanonicalTimestamp = (s: string): boolean =>
  CANONICAL_TIMESTAMP.test(s) && new Date(s).toISOString() === s

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

const strict = { onExcessProperty: "error", errors: "first" } as const
const decodeHeaderEither = Schema.decodeUnknownEither(SessionHeader, strict)
const decodeEnvelopeEither = Schema.decodeUnknownEither(EntryEnvelope, strict)
const decodeMessageEither = Schema.decodeUnknownEither(CourseMessage, strict)

const explain = (error: ParseResult.ParseError): string =>
  ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")

const versionOf = (record: { readonly [key: string]: unknown }): unknown => record["version"]

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
  if (record["type"] === "session" && typeof versionOf(record) === "number" && versionOf(record) !== 1) {
    return sessionError("SESSION_UNSUPPORTED_VERSION", `header version ${String(versionOf(record))} is not supported`, { line })
  }
  const decoded = decodeHeaderEither(record)
  return Either.isRight(decoded)
    ? Object.freeze(decoded.right)
    : sessionError("SESSION_INVALID_HEADER", explain(decoded.left), { line })
}

/** Decodes one message (Message IR v1); tool-call IDs must be unique within it. */
export const decodeMessage = (message: unknown, line?: number): CourseMessage | SessionError => {
  const decoded = decodeMessageEither(message)
  if (Either.isLeft(decoded)) {
    return sessionError("SESSION_INVALID_MESSAGE", explain(decoded.left), { line })
  }
  const value = decoded.right
  if (value.role === "assistant" && value.toolCalls.length > 1) {
    const seen = new Set<string>()
    for (const call of value.toolCalls) {
      if (seen.has(call.id)) {
        return sessionError("SESSION_INVALID_MESSAGE", `tool call ID "${call.id}" repeats within one message`, { line })
      }
      seen.add(call.id)
    }
  }
  return value
}

/** Decodes one entry record; the result is a fresh, deeply frozen plain object. */
export const decodeEntry = (
  record: { readonly [key: string]: unknown },
  line?: number
): SessionEntry | SessionError => {
  const version = versionOf(record)
  if (record["type"] === "entry" && typeof version === "number" && version !== 1) {
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

/**
 * Records: the header, the entries and Message IR v1, defined once, as Schemas
 * (`docs/format.md`, "Records" and "Message IR v1"). Struct decoding builds
 * fresh objects in the canonical key order, which is also the order
 * `JSON.stringify` writes them back in.
 *
 * Decoders are built once at module level and run in their sync `Either` form:
 * the loader calls them thousands of times in a plain loop. A record that is
 * already exactly canonical takes a direct path built from these Schemas
 * (`decodeParsedEntry`); it gives the same entries and declines everything
 * else, which the Schemas decide and explain.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Direct from "./internal/decode.js"
import { isCanonicalTimestamp as checkTimestamp } from "./internal/timestamp.js"
import { copyJson, deepFreeze as freeze, hasText, own } from "./internal/values.js"
import * as V2 from "./RecordV2.js"
import { type CorruptError, sessionError } from "./SessionError.js"

/**
 * True for exactly the strings `Date.prototype.toISOString()` writes (four-digit years).
 *
 * @since 0.1.0
 * @category guards
 */
export const isCanonicalTimestamp: (s: string) => boolean = checkTimestamp

/**
 * The Schemas both format versions share: IDs, timestamps, JSON objects.
 *
 * @since 0.1.0
 * @category reexports
 */
export { Id, JsonObject, Timestamp } from "./internal/primitives.js"
import { Id, JsonObject, Timestamp } from "./internal/primitives.js"

/**
 * A tool call of an assistant message of Message IR v1.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolCall = Schema.Struct({
  id: Id,
  name: Id,
  arguments: JsonObject
})
/**
 * The decoded form of `ToolCall`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolCall = typeof ToolCall.Type

/**
 * A user message of Message IR v1.
 *
 * @since 0.1.0
 * @category models
 */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  id: Id,
  content: Schema.String
})
/**
 * An assistant message of Message IR v1.
 *
 * @since 0.1.0
 * @category models
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  id: Id,
  content: Schema.String,
  toolCalls: Schema.Array(ToolCall)
})
/**
 * A tool message of Message IR v1.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  id: Id,
  toolCallId: Id,
  toolName: Schema.String,
  content: Schema.String,
  isError: Schema.Boolean
})
/**
 * A message: Message IR v1.
 *
 * @since 0.1.0
 * @category models
 */
export const Message = Schema.Union(UserMessage, AssistantMessage, ToolMessage)
/**
 * The decoded form of `UserMessage`.
 *
 * @since 0.1.0
 * @category models
 */
export type UserMessage = typeof UserMessage.Type
/**
 * The decoded form of `AssistantMessage`.
 *
 * @since 0.1.0
 * @category models
 */
export type AssistantMessage = typeof AssistantMessage.Type
/**
 * The decoded form of `ToolMessage`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolMessage = typeof ToolMessage.Type
/**
 * The decoded form of `Message`.
 *
 * @since 0.1.0
 * @category models
 */
export type Message = typeof Message.Type
/**
 * The course's name for `Message`, kept for its facade and tests.
 *
 * @since 0.1.0
 * @category models
 */
export const CourseMessage = Message
/**
 * The course's name for `Message`, kept for its facade and tests.
 *
 * @since 0.1.0
 * @category models
 */
export type CourseMessage = Message

/** The roles of Message IR v1, as the Schema's errors list them. */
const ROLES = Message.members.map((member) => JSON.stringify(member.fields.role.literals[0])).join(" | ")

/**
 * The header of a version-1 session: its first line.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionHeader = Schema.Struct({
  type: Schema.Literal("session"),
  version: Schema.Literal(1),
  id: Id,
  timestamp: Timestamp
})
/**
 * The decoded form of `SessionHeader`.
 *
 * @since 0.1.0
 * @category models
 */
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

/**
 * An entry: the envelope's fields in the same order, its message Message IR v1.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionEntry = Schema.Struct({ ...EntryEnvelope.fields, message: Message })
/**
 * The decoded form of `SessionEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionEntry = typeof SessionEntry.Type

// `exact`: a missing key is an error even where the schema accepts undefined
// (the envelope's `message`), and the decoder never reads a missing key through
// the prototype chain, so nothing on Object.prototype can stand in for it.
const strict = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeHeaderEither = Schema.decodeUnknownEither(SessionHeader, strict)
const decodeEnvelopeEither = Schema.decodeUnknownEither(EntryEnvelope, strict)
const decodeMessageEither = Schema.decodeUnknownEither(Message, strict)

/**
 * Deep-freezes a value built by the decoders (plain objects and arrays only), without recursion.
 *
 * @since 0.1.0
 * @category utils
 */
export const deepFreeze: <A>(value: A) => A = freeze

const explain = (error: ParseResult.ParseError): string =>
  ParseResult.TreeFormatter.formatErrorSync(error).replace(/\s+/g, " ")

/**
 * Decodes a header record of either version: the header, or why the record is not one.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeHeader = (
  record: { readonly [key: string]: unknown },
  line: number
): Either.Either<Header, CorruptError> => {
  const version = own(record, "version")
  if (own(record, "type") === "session" && version === 2) return V2.decodeHeader(record, line)
  if (own(record, "type") === "session" && typeof version === "number" && version !== 1) {
    return Either.left(sessionError("SESSION_UNSUPPORTED_VERSION", `header version ${version} is not supported`, { line }))
  }
  const decoded = decodeHeaderEither(record)
  return Either.isRight(decoded)
    ? Either.right(Object.freeze(decoded.right))
    : Either.left(sessionError("SESSION_INVALID_HEADER", explain(decoded.left), { line }))
}

/**
 * Decodes one message (Message IR v1); tool-call IDs must be unique within it.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeMessage = (message: unknown, line?: number): Either.Either<Message, CorruptError> => {
  const role = typeof message === "object" && message !== null ? own(message as { readonly [key: string]: unknown }, "role") : undefined
  if (typeof role === "object" && role !== null && !hasText(role)) {
    // The union picks its member by the text of `role`, which an object holding its own `toString`
    // key does not have; no object is a role, so the answer is known without asking the union.
    return Either.left(sessionError("SESSION_INVALID_MESSAGE", `["role"] Expected ${ROLES}, actual ${JSON.stringify(role)}`, { line }))
  }
  const decoded = decodeMessageEither(message)
  if (Either.isLeft(decoded)) {
    return Either.left(sessionError("SESSION_INVALID_MESSAGE", explain(decoded.left), { line }))
  }
  const value = decoded.right
  if (value.role !== "assistant") return Either.right(value)
  const seen = new Set<string>()
  for (const call of value.toolCalls) {
    if (seen.has(call.id)) {
      return Either.left(sessionError("SESSION_INVALID_MESSAGE", `tool call ID "${call.id}" repeats within one message`, { line }))
    }
    seen.add(call.id)
  }
  const toolCalls: Array<ToolCall> = []
  for (const call of value.toolCalls) {
    const args = copyJson(call.arguments)
    if (args === undefined) {
      return Either.left(sessionError("SESSION_INVALID_MESSAGE", `the arguments of tool call "${call.id}" hold a number out of range`, { line }))
    }
    toolCalls.push({ id: call.id, name: call.name, arguments: args as ToolCall["arguments"] })
  }
  return Either.right({ ...value, toolCalls })
}

/**
 * Decodes one entry record into a fresh, deeply frozen plain object, or says why the record is not an entry.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEntry = (
  record: { readonly [key: string]: unknown },
  line?: number
): Either.Either<SessionEntry, CorruptError> => {
  const version = own(record, "version")
  if (own(record, "type") === "entry" && typeof version === "number" && version !== 1) {
    return Either.left(sessionError("SESSION_UNSUPPORTED_VERSION", `entry version ${version} is not supported`, { line }))
  }
  const envelope = decodeEnvelopeEither(record)
  if (Either.isLeft(envelope)) {
    return Either.left(sessionError("SESSION_INVALID_RECORD", explain(envelope.left), { line }))
  }
  const { id, parentId, timestamp } = envelope.right
  return Either.map(
    decodeMessage(envelope.right.message, line),
    (message): SessionEntry => deepFreeze({ type: "entry", version: 1, id, parentId, timestamp, message })
  )
}


const direct = Direct.make({ entry: SessionEntry, user: UserMessage, assistant: AssistantMessage, tool: ToolMessage, call: ToolCall })

/**
 * The frozen Message IR value of a message whose own keys are exactly the schema's, in schema order
 * (a canonical parsed line, or an append's snapshot), or undefined: `decodeMessage` then decides.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeCanonicalMessage: (message: unknown) => Message | undefined = direct.message

/**
 * Decodes a record that JSON.parse has just built: a canonical one directly,
 * anything else through `decodeEntry`. The result is the same either way.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeParsedEntry = (
  record: { readonly [key: string]: unknown },
  line?: number
): Either.Either<SessionEntry, CorruptError> => {
  const entry = direct.entry(record)
  return entry === undefined ? decodeEntry(record, line) : Either.right(entry)
}

/**
 * The loader's one pass over an entry line: when `value` (what `JSON.parse(text)` returned) is a
 * canonical, valid entry record and `text` repeats no key, its fresh, deeply frozen entry and
 * whether numbers were copied into its tool-call arguments; otherwise undefined.
 * @internal
 * @since 0.1.0
 * @category decoding
 */
export const decodeCanonicalLine: (value: unknown, text: string) => Direct.CanonicalLine | undefined = direct.line

/**
 * A session's header in either version: `version` tells which.
 *
 * @since 0.1.0
 * @category models
 */
export type Header = SessionHeader | V2.SessionHeader
/**
 * An entry in either version (a session holds entries of its header's version only).
 *
 * @since 0.1.0
 * @category models
 */
export type Entry = SessionEntry | V2.SessionEntry
/**
 * A message in either version's Message IR.
 *
 * @since 0.1.0
 * @category models
 */
export type AnyMessage = Message | V2.Message

/**
 * The message an entry holds: every version-1 entry holds one, a version-2 entry of kind `message` does.
 *
 * @since 0.1.0
 * @category accessors
 */
export const messageOf = (entry: Entry): AnyMessage | undefined =>
  entry.version === 1 ? entry.message : entry.kind === "message" ? entry.message : undefined

/**
 * A message's text: version 1's `content`, version 2's system `content` or its text parts joined by a newline.
 *
 * @since 0.1.0
 * @category accessors
 */
export const textOf = (message: AnyMessage): string => {
  if (typeof message.content === "string") return message.content
  let text: string | undefined
  for (const part of message.content) {
    if (part.type === "text") text = text === undefined ? part.text : `${text}\n${part.text}`
  }
  return text ?? ""
}

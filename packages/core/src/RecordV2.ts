/**
 * Version 2, the agent format: its header, its six entry kinds and Message IR v2,
 * defined once, as Schemas (`docs/format.md`, "Version 2"). As in version 1,
 * struct decoding builds fresh objects in the canonical key order, which is the
 * order `JSON.stringify` writes them back in; an optional key is omitted when
 * absent, never written as `null` or `undefined`.
 *
 * The rules a Schema cannot see alone (tool links, a compaction's kept entry, a
 * label's target) belong to the history (`History.ts`); the ones inside one
 * message (a call ID once per message, a `tool-result` part answering a
 * provider-executed call before it) to `decodeMessage` in `Codec.ts`.
 */
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Direct from "./internal/decodeV2.js"
import { copyJson, deepFreeze, hasText, own } from "./internal/values.js"
import type * as V1 from "./Record.js"
import { Id, JsonObject, Timestamp } from "./internal/primitives.js"
import { type CorruptError, sessionError } from "./SessionError.js"

/**
 * The format's number: `"version":2` in the header and in every entry.
 *
 * @since 0.1.0
 * @category constants
 */
export const VERSION = 2 as const

/**
 * Any JSON value; the line parser (load) and the snapshot (append) check that it is JSON.
 *
 * @since 0.1.0
 * @category models
 */
export const Json = Schema.Unknown

/**
 * A provider's opaque payload (a reasoning signature, encrypted reasoning, a
 * cache-control hint): a JSON object kept exactly as given.
 *
 * @since 0.1.0
 * @category models
 */
export const Opaque = JsonObject
/**
 * The decoded form of `Opaque`.
 *
 * @since 0.1.0
 * @category models
 */
export type Opaque = typeof Opaque.Type

const options = { options: Schema.optionalWith(Opaque, { exact: true }) }

const NonEmpty = Schema.String.pipe(Schema.minLength(1))
const Count = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

/**
 * Whether `s` is canonical padded base64: the only spelling of its bytes, unused bits zero.
 *
 * @since 0.1.0
 * @category guards
 */
export const isCanonicalBase64 = (s: string): boolean => {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return false
  if (s.endsWith("==")) return (ALPHABET.indexOf(s[s.length - 3]!) & 0x0f) === 0
  if (s.endsWith("=")) return (ALPHABET.indexOf(s[s.length - 2]!) & 0x03) === 0
  return true
}
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

/**
 * Canonical padded base64 text: the inline form of file data.
 *
 * @since 0.1.0
 * @category models
 */
export const Base64 = Schema.String.pipe(
  Schema.filter(isCanonicalBase64, { message: () => "expected canonical padded base64" })
)

/**
 * `sha256:` and 64 lowercase hexadecimal digits: the name of a blob.
 *
 * @since 0.1.0
 * @category models
 */
export const BlobRef = Schema.String.pipe(Schema.pattern(/^sha256:[0-9a-f]{64}$/))

/**
 * File data held inline, as base64.
 *
 * @since 0.1.0
 * @category models
 */
export const InlineData = Schema.Struct({ base64: Base64 })
/**
 * File data named by a URL.
 *
 * @since 0.1.0
 * @category models
 */
export const UrlData = Schema.Struct({ url: Schema.String })
/**
 * File data held in a blob of the session: its reference and its size.
 *
 * @since 0.1.0
 * @category models
 */
export const BlobData = Schema.Struct({ blob: BlobRef, size: Count })
/**
 * Where a file's bytes are: inline, at a URL, or in a blob.
 *
 * @since 0.1.0
 * @category models
 */
export const FileData = Schema.Union(InlineData, UrlData, BlobData)
/**
 * The decoded form of `FileData`.
 *
 * @since 0.1.0
 * @category models
 */
export type FileData = typeof FileData.Type

/**
 * A text part of a message.
 *
 * @since 0.1.0
 * @category models
 */
export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String, ...options })
/**
 * Reasoning; redacted reasoning is `""` with its payload in `options`.
 *
 * @since 0.1.0
 * @category models
 */
export const ReasoningPart = Schema.Struct({ type: Schema.Literal("reasoning"), text: Schema.String, ...options })
/**
 * A file part of a message: its media type, an optional name and its data (inline, a URL or a
 * blob).
 *
 * @since 0.1.0
 * @category models
 */
export const FilePart = Schema.Struct({
  type: Schema.Literal("file"),
  mediaType: NonEmpty,
  name: Schema.optionalWith(Schema.String, { exact: true }),
  data: FileData,
  ...options
})
/**
 * A tool call part of an assistant message.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolCallPart = Schema.Struct({
  type: Schema.Literal("tool-call"),
  id: Id,
  name: NonEmpty,
  arguments: JsonObject,
  providerExecuted: Schema.optionalWith(Schema.Literal(true), { exact: true }),
  ...options
})
/**
 * The result of a provider-executed call, in the assistant message that made the call.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolResultPart = Schema.Struct({
  type: Schema.Literal("tool-result"),
  toolCallId: Id,
  toolName: NonEmpty,
  isError: Schema.Boolean,
  result: Json,
  ...options
})
/**
 * The decoded form of `TextPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type TextPart = typeof TextPart.Type
/**
 * The decoded form of `ReasoningPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type ReasoningPart = typeof ReasoningPart.Type
/**
 * The decoded form of `FilePart`.
 *
 * @since 0.1.0
 * @category models
 */
export type FilePart = typeof FilePart.Type
/**
 * The decoded form of `ToolCallPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolCallPart = typeof ToolCallPart.Type
/**
 * The decoded form of `ToolResultPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolResultPart = typeof ToolResultPart.Type

/**
 * The parts a user message may hold: text and files.
 *
 * @since 0.1.0
 * @category models
 */
export const UserPart = Schema.Union(TextPart, FilePart)
/**
 * The parts an assistant message may hold: text, reasoning, files, tool calls and tool results.
 *
 * @since 0.1.0
 * @category models
 */
export const AssistantPart = Schema.Union(TextPart, ReasoningPart, FilePart, ToolCallPart, ToolResultPart)
/**
 * The parts a tool message may hold: text and files.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolPart = Schema.Union(TextPart, FilePart)
/**
 * The decoded form of `UserPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type UserPart = typeof UserPart.Type
/**
 * The decoded form of `AssistantPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type AssistantPart = typeof AssistantPart.Type
/**
 * The decoded form of `ToolPart`.
 *
 * @since 0.1.0
 * @category models
 */
export type ToolPart = typeof ToolPart.Type

/**
 * The tokens of one model call: input and output, and where the provider gives them, reasoning,
 * cached input and cache writes.
 *
 * @since 0.1.0
 * @category models
 */
export const Usage = Schema.Struct({
  inputTokens: Count,
  outputTokens: Count,
  reasoningTokens: Schema.optionalWith(Count, { exact: true }),
  cachedInputTokens: Schema.optionalWith(Count, { exact: true }),
  cacheWriteTokens: Schema.optionalWith(Count, { exact: true })
})
/**
 * The decoded form of `Usage`.
 *
 * @since 0.1.0
 * @category models
 */
export type Usage = typeof Usage.Type

/**
 * Who answered and what it cost; at least one key.
 *
 * @since 0.1.0
 * @category models
 */
export const Meta = Schema.Struct({
  provider: Schema.optionalWith(Schema.String, { exact: true }),
  model: Schema.optionalWith(Schema.String, { exact: true }),
  responseId: Schema.optionalWith(Schema.String, { exact: true }),
  usage: Schema.optionalWith(Usage, { exact: true }),
  stopReason: Schema.optionalWith(Schema.String, { exact: true }),
  error: Schema.optionalWith(Schema.String, { exact: true })
}).pipe(Schema.filter((meta) => Object.keys(meta).length > 0, { message: () => "meta holds at least one key" }))
/**
 * The decoded form of `Meta`.
 *
 * @since 0.1.0
 * @category models
 */
export type Meta = typeof Meta.Type

/**
 * A system message of Message IR v2.
 *
 * @since 0.1.0
 * @category models
 */
export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  id: Id,
  content: Schema.String,
  ...options
})
/**
 * A user message of Message IR v2.
 *
 * @since 0.1.0
 * @category models
 */
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  id: Id,
  content: Schema.Array(UserPart).pipe(Schema.minItems(1)),
  ...options
})
/**
 * An assistant message of Message IR v2.
 *
 * @since 0.1.0
 * @category models
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  id: Id,
  content: Schema.Array(AssistantPart),
  meta: Schema.optionalWith(Meta, { exact: true }),
  ...options
})
/**
 * A tool message of Message IR v2.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  id: Id,
  toolCallId: Id,
  toolName: NonEmpty,
  isError: Schema.Boolean,
  content: Schema.Array(ToolPart),
  result: Schema.optionalWith(Json, { exact: true }),
  ...options
})
/**
 * A message: Message IR v2.
 *
 * @since 0.1.0
 * @category models
 */
export const Message = Schema.Union(SystemMessage, UserMessage, AssistantMessage, ToolMessage)
/**
 * The decoded form of `SystemMessage`.
 *
 * @since 0.1.0
 * @category models
 */
export type SystemMessage = typeof SystemMessage.Type
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
 * Where a forked session came from: the source's session ID and the chosen leaf.
 *
 * @since 0.1.0
 * @category models
 */
export const ForkedFrom = Schema.Struct({ session: Id, entry: Id })
/**
 * The decoded form of `ForkedFrom`.
 *
 * @since 0.1.0
 * @category models
 */
export type ForkedFrom = typeof ForkedFrom.Type

/**
 * The header of a version-2 session: its first line.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionHeader = Schema.Struct({
  type: Schema.Literal("session"),
  version: Schema.Literal(VERSION),
  id: Id,
  timestamp: Timestamp,
  forkedFrom: Schema.optionalWith(ForkedFrom, { exact: true })
})
/**
 * The decoded form of `SessionHeader`.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionHeader = typeof SessionHeader.Type

/**
 * The fields every entry starts with, in this order.
 *
 * @since 0.1.0
 * @category models
 */
export const envelope = {
  type: Schema.Literal("entry"),
  version: Schema.Literal(VERSION),
  id: Id,
  parentId: Schema.NullOr(Id),
  timestamp: Timestamp
} as const

/**
 * The fields of each kind after `kind`, in canonical order.
 *
 * @since 0.1.0
 * @category models
 */
export const kinds = {
  message: { message: Message },
  compaction: {
    summary: Schema.String,
    firstKeptEntryId: Schema.NullOr(Id),
    tokensBefore: Schema.optionalWith(Count, { exact: true }),
    usage: Schema.optionalWith(Usage, { exact: true })
  },
  label: { targetId: Id, label: Schema.NullOr(NonEmpty) },
  title: { title: NonEmpty },
  model: { provider: NonEmpty, model: NonEmpty, thinking: Schema.optionalWith(NonEmpty, { exact: true }) },
  custom: { customType: NonEmpty, data: Json }
} as const
/**
 * The kind of a version-2 entry.
 *
 * @since 0.1.0
 * @category models
 */
export type Kind = keyof typeof kinds
/**
 * The six kinds of entry of version 2.
 *
 * @since 0.1.0
 * @category constants
 */
export const KINDS: ReadonlyArray<Kind> = Object.keys(kinds) as Array<Kind>

/**
 * An entry of kind `message`.
 *
 * @since 0.1.0
 * @category models
 */
export const MessageEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("message"), ...kinds.message })
/**
 * An entry of kind `compaction`.
 *
 * @since 0.1.0
 * @category models
 */
export const CompactionEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("compaction"), ...kinds.compaction })
/**
 * An entry of kind `label`.
 *
 * @since 0.1.0
 * @category models
 */
export const LabelEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("label"), ...kinds.label })
/**
 * An entry of kind `title`.
 *
 * @since 0.1.0
 * @category models
 */
export const TitleEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("title"), ...kinds.title })
/**
 * An entry of kind `model`.
 *
 * @since 0.1.0
 * @category models
 */
export const ModelEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("model"), ...kinds.model })
/**
 * An entry of kind `custom`.
 *
 * @since 0.1.0
 * @category models
 */
export const CustomEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("custom"), ...kinds.custom })
/**
 * The decoded form of `MessageEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type MessageEntry = typeof MessageEntry.Type
/**
 * The decoded form of `CompactionEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type CompactionEntry = typeof CompactionEntry.Type
/**
 * The decoded form of `LabelEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type LabelEntry = typeof LabelEntry.Type
/**
 * The decoded form of `TitleEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type TitleEntry = typeof TitleEntry.Type
/**
 * The decoded form of `ModelEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type ModelEntry = typeof ModelEntry.Type
/**
 * The decoded form of `CustomEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type CustomEntry = typeof CustomEntry.Type

/**
 * A version-2 entry: the envelope, its `kind`, then exactly the keys of that kind.
 *
 * @since 0.1.0
 * @category models
 */
export const SessionEntry = Schema.Union(MessageEntry, CompactionEntry, LabelEntry, TitleEntry, ModelEntry, CustomEntry)
/**
 * The decoded form of `SessionEntry`.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionEntry = typeof SessionEntry.Type

/**
 * What an append of each kind gives: the keys after `kind`, with `kind` first.
 *
 * @since 0.1.0
 * @category models
 */
export type Body =
  | { readonly kind: "message"; readonly message: Message }
  | Omit<CompactionEntry, keyof typeof envelope>
  | Omit<LabelEntry, keyof typeof envelope>
  | Omit<TitleEntry, keyof typeof envelope>
  | Omit<ModelEntry, keyof typeof envelope>
  | Omit<CustomEntry, keyof typeof envelope>

// The Schema path: exact, and explains the first problem. `exact`: a missing key is an error even
// where the schema accepts undefined, and nothing on Object.prototype can stand in for a key.
const strict = { onExcessProperty: "error", errors: "first", exact: true } as const

/** The first issue of a parse error, with its path: a union's full tree would list every member. */
const explain = (error: ParseResult.ParseError): string => {
  const issue = ParseResult.ArrayFormatter.formatErrorSync(error)[0]
  if (issue === undefined) return error.message
  const path = issue.path.map((key) => `[${JSON.stringify(key)}]`).join("")
  return (path === "" ? issue.message : `${path} ${issue.message}`).replace(/\s+/g, " ")
}

const decodeHeaderEither = Schema.decodeUnknownEither(SessionHeader, strict)

/**
 * Decodes a version-2 header record (its `version` already read as 2).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeHeader = (record: { readonly [key: string]: unknown }, line: number): Either.Either<SessionHeader, CorruptError> => {
  const decoded = decodeHeaderEither(record)
  return Either.isRight(decoded)
    ? Either.right(deepFreeze(decoded.right))
    : Either.left(sessionError("SESSION_INVALID_HEADER", explain(decoded.left), { line }))
}

type Decode<A> = (u: unknown) => Either.Either<A, ParseResult.ParseError>

const roles: { readonly [R in Message["role"]]: Decode<Message> } = {
  system: Schema.decodeUnknownEither(SystemMessage, strict),
  user: Schema.decodeUnknownEither(UserMessage, strict),
  assistant: Schema.decodeUnknownEither(AssistantMessage, strict),
  tool: Schema.decodeUnknownEither(ToolMessage, strict)
}
const ROLES = Object.keys(roles).map((role) => JSON.stringify(role)).join(" | ")

/** The part types of a union of parts, as the Schema's errors list them. */
const typesOf = (union: { readonly members: ReadonlyArray<{ readonly fields: { readonly type: { readonly literals: ReadonlyArray<unknown> } } }> }) =>
  union.members.map((member) => JSON.stringify(member.fields.type.literals[0])).join(" | ")
const PART_TYPES: { readonly [R in Message["role"]]: string } = {
  system: "",
  user: typesOf(UserPart),
  assistant: typesOf(AssistantPart),
  tool: typesOf(ToolPart)
}

/**
 * `decode(message)`, or the error of its first part whose `type` is an object without a text (one
 * holding its own `toString` key, which JSON can spell): the union of parts picks its member by
 * the text of `type` and throws on such an object. The parts are decoded in order, so the one it
 * threw on is the first such part; no object is a part type, and it is refused as the union
 * refuses any other value there.
 */
const decodeParts = (decode: Decode<Message>, message: unknown, role: Message["role"]): Either.Either<Message, string> => {
  try {
    return Either.mapLeft(decode(message), explain)
  } catch (e) {
    const content = (message as { readonly [key: string]: unknown })["content"]
    if (!Array.isArray(content)) throw e
    for (let i = 0; i < content.length; i++) {
      const part: unknown = content[i]
      const type = typeof part === "object" && part !== null ? own(part as { readonly [key: string]: unknown }, "type") : undefined
      if (typeof type === "object" && type !== null && !hasText(type)) {
        return Either.left(`["content"][${i}]["type"] Expected ${PART_TYPES[role]}, actual ${JSON.stringify(type)}`)
      }
    }
    throw e
  }
}

/** The rules within one assistant message: a call ID once; a tool-result part answers a provider-executed call before it, once. */
const checkParts = (message: AssistantMessage, line: number | undefined): CorruptError | undefined => {
  const calls = new Map<string, ToolCallPart>()
  const answered = new Set<string>()
  for (const part of message.content) {
    if (part.type === "tool-call") {
      if (calls.has(part.id)) {
        return sessionError("SESSION_INVALID_MESSAGE", `tool call ID "${part.id}" repeats within one message`, { line })
      }
      calls.set(part.id, part)
    } else if (part.type === "tool-result") {
      const call = calls.get(part.toolCallId)
      if (call === undefined || call.providerExecuted !== true) {
        return sessionError(
          "SESSION_TOOL_LINK",
          `tool-result part answers "${part.toolCallId}", which no provider-executed call earlier in the message makes`,
          { line }
        )
      }
      if (call.name !== part.toolName) {
        return sessionError("SESSION_TOOL_LINK", `tool-result part names "${part.toolName}" but call "${part.toolCallId}" is to "${call.name}"`, { line })
      }
      if (answered.has(part.toolCallId)) {
        return sessionError("SESSION_TOOL_LINK", `call "${part.toolCallId}" is answered twice within the message`, { line })
      }
      answered.add(part.toolCallId)
    }
  }
  return undefined
}

/**
 * Decodes one message (Message IR v2) into a fresh, deeply frozen value; the rules within one message included.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeMessage = (message: unknown, line?: number): Either.Either<Message, CorruptError> => {
  const role = typeof message === "object" && message !== null && !Array.isArray(message)
    ? own(message as { readonly [key: string]: unknown }, "role")
    : undefined
  const decode = typeof role === "string" && Object.prototype.hasOwnProperty.call(roles, role) ? roles[role as keyof typeof roles] : undefined
  if (decode === undefined) {
    const actual = typeof role === "object" && role !== null && !hasText(role) ? "an object" : JSON.stringify(role) ?? String(role)
    return Either.left(sessionError("SESSION_INVALID_MESSAGE", `["role"] Expected ${ROLES}, actual ${actual}`, { line }))
  }
  const decoded = decodeParts(decode, message, role as Message["role"])
  if (Either.isLeft(decoded)) return Either.left(sessionError("SESSION_INVALID_MESSAGE", decoded.left, { line }))
  // Arguments, results and options decode as `Unknown`, passed by reference: the copy makes them fresh.
  const value = copyJson(decoded.right) as Message | undefined
  if (value === undefined) return Either.left(sessionError("SESSION_INVALID_MESSAGE", "the message holds a number JSON cannot write", { line }))
  if (value.role === "assistant") {
    const problem = checkParts(value, line)
    if (problem !== undefined) return Either.left(problem)
  }
  return Either.right(deepFreeze(value))
}

type Envelope = { readonly [K in keyof typeof envelope]: (typeof envelope)[K]["Type"] }
type Undecoded = SessionEntry | (Envelope & { readonly kind: "message"; readonly message: unknown })

const entryKinds: { readonly [K in Kind]: Decode<Undecoded> } = {
  message: Schema.decodeUnknownEither(Schema.Struct({ ...envelope, kind: Schema.Literal("message"), message: Schema.Unknown }), strict),
  compaction: Schema.decodeUnknownEither(CompactionEntry, strict),
  label: Schema.decodeUnknownEither(LabelEntry, strict),
  title: Schema.decodeUnknownEither(TitleEntry, strict),
  model: Schema.decodeUnknownEither(ModelEntry, strict),
  custom: Schema.decodeUnknownEither(CustomEntry, strict)
}
const KIND_LIST = KINDS.map((kind) => JSON.stringify(kind)).join(" | ")

/**
 * Decodes a version-2 entry record (its `version` already read as 2) into a fresh, deeply frozen
 * entry. The rules that need the history (tool links, a compaction's kept entry, a label's target)
 * are the history's.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeEntry = (record: { readonly [key: string]: unknown }, line?: number): Either.Either<SessionEntry, CorruptError> => {
  const kind = own(record, "kind")
  const decode = typeof kind === "string" && Object.prototype.hasOwnProperty.call(entryKinds, kind)
    ? entryKinds[kind as Kind]
    : undefined
  if (decode === undefined) {
    const actual = typeof kind === "object" && kind !== null && !hasText(kind) ? "an object" : JSON.stringify(kind) ?? String(kind)
    return Either.left(sessionError("SESSION_INVALID_RECORD", `["kind"] Expected ${KIND_LIST}, actual ${actual}`, { line }))
  }
  const decoded = decode(record)
  if (Either.isLeft(decoded)) return Either.left(sessionError("SESSION_INVALID_RECORD", explain(decoded.left), { line }))
  const entry = decoded.right
  if (entry.kind === "message") {
    const { id, parentId, timestamp } = entry
    return Either.map(
      decodeMessage(entry.message, line),
      (message): SessionEntry => deepFreeze({ type: "entry", version: VERSION, id, parentId, timestamp, kind: "message", message })
    )
  }
  const value = copyJson(entry) as SessionEntry | undefined
  if (value === undefined) return Either.left(sessionError("SESSION_INVALID_RECORD", "the entry holds a number JSON cannot write", { line }))
  return Either.right(deepFreeze(value))
}

/**
 * The version-2 form of a Message IR v1 message (`docs/format.md`, "Upgrade"): `content` becomes one
 * text part (an assistant's empty content none), each tool call a `tool-call` part after it. The
 * result is not checked here: a v1 value that breaks a v2 rule (an empty tool name) is refused by
 * `decodeMessage`.
 *
 * @since 0.1.0
 * @category conversions
 */
export const upgradeMessage = (message: V1.Message): Message => {
  switch (message.role) {
    case "user":
      return { role: "user", id: message.id, content: [{ type: "text", text: message.content }] }
    case "tool":
      return {
        role: "tool",
        id: message.id,
        toolCallId: message.toolCallId,
        toolName: message.toolName,
        isError: message.isError,
        content: [{ type: "text", text: message.content }]
      }
    case "assistant": {
      const content: Array<AssistantPart> = message.content === "" ? [] : [{ type: "text", text: message.content }]
      for (const call of message.toolCalls) content.push({ type: "tool-call", id: call.id, name: call.name, arguments: call.arguments })
      return { role: "assistant", id: message.id, content }
    }
  }
}

/**
 * Whether a value is shaped as Message IR v1 (a string `content` where version 2 has parts, or `toolCalls`), so an append upgrades it.
 *
 * @since 0.1.0
 * @category guards
 */
export const isVersion1Shaped = (message: unknown): boolean => {
  if (typeof message !== "object" || message === null) return false
  const role = own(message as { readonly [key: string]: unknown }, "role")
  if (role === "assistant") return Object.prototype.hasOwnProperty.call(message, "toolCalls")
  return (role === "user" || role === "tool") && typeof own(message as { readonly [key: string]: unknown }, "content") === "string"
}

/**
 * The blobs a message refers to, in the order of its parts.
 *
 * @since 0.1.0
 * @category blobs
 */
export const blobsOf = (message: Message): ReadonlyArray<BlobData> => {
  if (message.role === "system") return NONE
  let found: Array<BlobData> | undefined
  for (const part of message.content) {
    if (part.type === "file" && "blob" in part.data) (found ??= []).push(part.data)
  }
  return found ?? NONE
}
const NONE: ReadonlyArray<BlobData> = []
/**
 * The decoded form of `BlobData`.
 *
 * @since 0.1.0
 * @category models
 */
export type BlobData = typeof BlobData.Type

/**
 * The hash of a blob reference (`sha256:` and 64 hexadecimal digits): its 64 digits.
 *
 * @since 0.1.0
 * @category blobs
 */
export const hashOf = (ref: string): string => ref.slice(7)

/**
 * Why an entry cannot be held: a blob it refers to that `blobs` (the session's, by hash) does not
 * hold with the size the reference gives. `line` names the entry's line on load.
 *
 * @since 0.1.0
 * @category blobs
 */
export const missingBlob = (
  entry: Body | SessionEntry,
  blobs: ReadonlyMap<string, number> | undefined,
  line?: number
): CorruptError | undefined => {
  if (entry.kind !== "message") return undefined
  for (const blob of blobsOf(entry.message)) {
    const size = blobs?.get(hashOf(blob.blob))
    if (size === blob.size) continue
    return sessionError(
      "SESSION_BLOB_MISSING",
      size === undefined
        ? `blob "${blob.blob}" is not in the session's store`
        : `blob "${blob.blob}" holds ${size} bytes, not the ${blob.size} its reference gives`,
      { line }
    )
  }
  return undefined
}

/**
 * The version-2 form of a version-1 entry: the same envelope, kind `message`, the message upgraded.
 *
 * @since 0.1.0
 * @category conversions
 */
export const upgradeEntry = (entry: V1.SessionEntry): MessageEntry => ({
  type: "entry",
  version: VERSION,
  id: entry.id,
  parentId: entry.parentId,
  timestamp: entry.timestamp,
  kind: "message",
  message: upgradeMessage(entry.message)
})

const direct = Direct.make({
  entry: SessionEntry,
  message: Message,
  assistantPart: AssistantPart,
  userPart: UserPart,
  toolPart: ToolPart,
  fileData: FileData,
  meta: Meta,
  usage: Usage
})

/**
 * The loader's one pass over a version-2 entry line: its fresh, deeply frozen entry when `value`
 * (what `JSON.parse(text)` returned) is a canonical, valid record and `text` repeats no key, with
 * whether number literals are left to check in the text; otherwise undefined (the Schemas decide).
 * @internal
 * @since 0.1.0
 * @category decoding
 */
export const decodeCanonicalLine: (value: unknown, text: string) => Direct.CanonicalLine | undefined = direct.line

/**
 * The frozen Message IR v2 value of a canonical message (an append's snapshot), or undefined: `decodeMessage` then decides.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeCanonicalMessage: (message: unknown) => Message | undefined = direct.message

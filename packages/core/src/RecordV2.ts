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
import * as Schema from "effect/Schema"
import { Id, JsonObject, Timestamp } from "./Record.js"

/** The format's number: `"version":2` in the header and in every entry. */
export const VERSION = 2 as const

/** Any JSON value; the line parser (load) and the snapshot (append) check that it is JSON. */
export const Json = Schema.Unknown

/**
 * A provider's opaque payload (a reasoning signature, encrypted reasoning, a
 * cache-control hint): a JSON object kept exactly as given.
 */
export const Opaque = JsonObject
export type Opaque = typeof Opaque.Type

const options = { options: Schema.optionalWith(Opaque, { exact: true }) }

const NonEmpty = Schema.String.pipe(Schema.minLength(1))
const Count = Schema.Number.pipe(Schema.int(), Schema.nonNegative())

/** Whether `s` is canonical padded base64: the only spelling of its bytes, unused bits zero. */
export const isCanonicalBase64 = (s: string): boolean => {
  if (s.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(s)) return false
  if (s.endsWith("==")) return (ALPHABET.indexOf(s[s.length - 3]!) & 0x0f) === 0
  if (s.endsWith("=")) return (ALPHABET.indexOf(s[s.length - 2]!) & 0x03) === 0
  return true
}
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

export const Base64 = Schema.String.pipe(
  Schema.filter(isCanonicalBase64, { message: () => "expected canonical padded base64" })
)

/** `sha256:` and 64 lowercase hexadecimal digits: the name of a blob. */
export const BlobRef = Schema.String.pipe(Schema.pattern(/^sha256:[0-9a-f]{64}$/))

export const InlineData = Schema.Struct({ base64: Base64 })
export const UrlData = Schema.Struct({ url: Schema.String })
export const BlobData = Schema.Struct({ blob: BlobRef, size: Count })
/** Where a file's bytes are: inline, at a URL, or in a blob. */
export const FileData = Schema.Union(InlineData, UrlData, BlobData)
export type FileData = typeof FileData.Type

export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String, ...options })
/** Reasoning; redacted reasoning is `""` with its payload in `options`. */
export const ReasoningPart = Schema.Struct({ type: Schema.Literal("reasoning"), text: Schema.String, ...options })
export const FilePart = Schema.Struct({
  type: Schema.Literal("file"),
  mediaType: NonEmpty,
  name: Schema.optionalWith(Schema.String, { exact: true }),
  data: FileData,
  ...options
})
export const ToolCallPart = Schema.Struct({
  type: Schema.Literal("tool-call"),
  id: Id,
  name: NonEmpty,
  arguments: JsonObject,
  providerExecuted: Schema.optionalWith(Schema.Literal(true), { exact: true }),
  ...options
})
/** The result of a provider-executed call, in the assistant message that made the call. */
export const ToolResultPart = Schema.Struct({
  type: Schema.Literal("tool-result"),
  toolCallId: Id,
  toolName: NonEmpty,
  isError: Schema.Boolean,
  result: Json,
  ...options
})
export type TextPart = typeof TextPart.Type
export type ReasoningPart = typeof ReasoningPart.Type
export type FilePart = typeof FilePart.Type
export type ToolCallPart = typeof ToolCallPart.Type
export type ToolResultPart = typeof ToolResultPart.Type

export const UserPart = Schema.Union(TextPart, FilePart)
export const AssistantPart = Schema.Union(TextPart, ReasoningPart, FilePart, ToolCallPart, ToolResultPart)
export const ToolPart = Schema.Union(TextPart, FilePart)
export type UserPart = typeof UserPart.Type
export type AssistantPart = typeof AssistantPart.Type
export type ToolPart = typeof ToolPart.Type

export const Usage = Schema.Struct({
  inputTokens: Count,
  outputTokens: Count,
  reasoningTokens: Schema.optionalWith(Count, { exact: true }),
  cachedInputTokens: Schema.optionalWith(Count, { exact: true }),
  cacheWriteTokens: Schema.optionalWith(Count, { exact: true })
})
export type Usage = typeof Usage.Type

/** Who answered and what it cost; at least one key. */
export const Meta = Schema.Struct({
  provider: Schema.optionalWith(Schema.String, { exact: true }),
  model: Schema.optionalWith(Schema.String, { exact: true }),
  responseId: Schema.optionalWith(Schema.String, { exact: true }),
  usage: Schema.optionalWith(Usage, { exact: true }),
  stopReason: Schema.optionalWith(Schema.String, { exact: true }),
  error: Schema.optionalWith(Schema.String, { exact: true })
}).pipe(Schema.filter((meta) => Object.keys(meta).length > 0, { message: () => "meta holds at least one key" }))
export type Meta = typeof Meta.Type

export const SystemMessage = Schema.Struct({
  role: Schema.Literal("system"),
  id: Id,
  content: Schema.String,
  ...options
})
export const UserMessage = Schema.Struct({
  role: Schema.Literal("user"),
  id: Id,
  content: Schema.Array(UserPart).pipe(Schema.minItems(1)),
  ...options
})
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  id: Id,
  content: Schema.Array(AssistantPart),
  meta: Schema.optionalWith(Meta, { exact: true }),
  ...options
})
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
/** A message: Message IR v2. */
export const Message = Schema.Union(SystemMessage, UserMessage, AssistantMessage, ToolMessage)
export type SystemMessage = typeof SystemMessage.Type
export type UserMessage = typeof UserMessage.Type
export type AssistantMessage = typeof AssistantMessage.Type
export type ToolMessage = typeof ToolMessage.Type
export type Message = typeof Message.Type

/** Where a forked session came from: the source's session ID and the chosen leaf. */
export const ForkedFrom = Schema.Struct({ session: Id, entry: Id })
export type ForkedFrom = typeof ForkedFrom.Type

export const SessionHeader = Schema.Struct({
  type: Schema.Literal("session"),
  version: Schema.Literal(VERSION),
  id: Id,
  timestamp: Timestamp,
  forkedFrom: Schema.optionalWith(ForkedFrom, { exact: true })
})
export type SessionHeader = typeof SessionHeader.Type

/** The fields every entry starts with, in this order. */
export const envelope = {
  type: Schema.Literal("entry"),
  version: Schema.Literal(VERSION),
  id: Id,
  parentId: Schema.NullOr(Id),
  timestamp: Timestamp
} as const

/** The fields of each kind after `kind`, in canonical order. */
export const kinds = {
  message: { message: Message },
  compaction: {
    summary: Schema.String,
    firstKeptEntryId: Schema.NullOr(Id),
    tokensBefore: Schema.optionalWith(Count, { exact: true })
  },
  label: { targetId: Id, label: Schema.NullOr(NonEmpty) },
  title: { title: NonEmpty },
  model: { provider: NonEmpty, model: NonEmpty, thinking: Schema.optionalWith(NonEmpty, { exact: true }) },
  custom: { customType: NonEmpty, data: Json }
} as const
export type Kind = keyof typeof kinds
export const KINDS: ReadonlyArray<Kind> = Object.keys(kinds) as Array<Kind>

export const MessageEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("message"), ...kinds.message })
export const CompactionEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("compaction"), ...kinds.compaction })
export const LabelEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("label"), ...kinds.label })
export const TitleEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("title"), ...kinds.title })
export const ModelEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("model"), ...kinds.model })
export const CustomEntry = Schema.Struct({ ...envelope, kind: Schema.Literal("custom"), ...kinds.custom })
export type MessageEntry = typeof MessageEntry.Type
export type CompactionEntry = typeof CompactionEntry.Type
export type LabelEntry = typeof LabelEntry.Type
export type TitleEntry = typeof TitleEntry.Type
export type ModelEntry = typeof ModelEntry.Type
export type CustomEntry = typeof CustomEntry.Type

/** A version-2 entry: the envelope, its `kind`, then exactly the keys of that kind. */
export const SessionEntry = Schema.Union(MessageEntry, CompactionEntry, LabelEntry, TitleEntry, ModelEntry, CustomEntry)
export type SessionEntry = typeof SessionEntry.Type

/** What an append of each kind gives: the keys after `kind`, with `kind` first. */
export type Body =
  | { readonly kind: "message"; readonly message: Message }
  | Omit<CompactionEntry, keyof typeof envelope>
  | Omit<LabelEntry, keyof typeof envelope>
  | Omit<TitleEntry, keyof typeof envelope>
  | Omit<ModelEntry, keyof typeof envelope>
  | Omit<CustomEntry, keyof typeof envelope>

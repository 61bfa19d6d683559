/**
 * The lossless codec between session-tree's Message IR v2 (`RecordV2.Message`)
 * and `@effect/ai`'s `Prompt`, and from a `generateText` response to the
 * messages it gives.
 *
 * **Options.** A message's or part's `options` (any JSON object) become the
 * `Prompt`'s per-provider options: each value that is an object stays under
 * its key, where the provider adapters read it (`{"anthropic":{…}}`). Whatever
 * that alone would not give back (a value that is not an object, empty
 * options, the key `"session-tree"`) is carried whole under the key
 * `"session-tree"`, which adapters ignore, together with what the `Prompt` has
 * no field for: a message's ID and `meta`, a blob's name, a URL's original
 * spelling, a tool message's content. `fromPrompt` reads it back, so that
 * `fromPrompt(toPrompt(messages))` gives the same messages, key for key.
 *
 * **Parts.** Every part is a part of its own, in order: several text parts stay
 * several. File data becomes bytes (`base64`, and blobs through the caller's
 * reader) or a `URL` (`url`); a URL that does not parse cannot be sent and is
 * `SESSION_INVALID_MESSAGE`. A tool message becomes a `Prompt` tool message of
 * one result: its `result` when it has one (its content parts are then kept in
 * the options), else its one text part's text, else its content parts as JSON.
 *
 * **Reasoning.** A reasoning part is sent in the form its provider's client
 * needs (`{"anthropic":{"type":"thinking","signature":…}}`,
 * `{"anthropic":{"type":"redacted_thinking","redactedData":…}}`,
 * `{"openai":{"itemId":…,"encryptedContent":…}}`); forms stored before (Claude
 * Code imports' untyped `anthropic` options, Pi imports' `pi.thinkingSignature`)
 * are repaired when the prompt is built, by the rules of docs/ai.md, the stored
 * options kept whole under `"session-tree"`.
 *
 * **Responses.** `fromResponse` keeps each content part with its provider
 * `metadata` as the part's `options` (reasoning signatures, encrypted
 * reasoning), so that the next prompt sends them back. A streamed response's
 * parts are put together first: each text or reasoning from its start, deltas
 * and end, its metadata gathered from all of them. An OpenAI reasoning item
 * without its encrypted content is logged as a warning (it cannot be sent back
 * when nothing is stored server-side). A tool keeps its
 * toolkit name, which provider adapters expect in a prompt (a provider-defined
 * tool's own name, when it differs, is kept under `"session-tree"` as
 * `providerName`). The finish part gives `stopReason` and `usage`
 * (when both counts are known), the response-metadata part `model` and
 * `responseId`, an error part `error`. Source (citation) parts and a tool
 * call's parameter deltas have no place in a message and are not kept, nor is
 * the metadata of the finish and response-metadata parts, which describes the
 * response and is not sent back.
 */
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import type { InputError, RecordV2 } from "@session-tree/core"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/codec.js"
import * as internalErrors from "./internal/codecErrors.js"

/**
 * The options key under which the codec keeps what a `Prompt` has no field for.
 *
 * @since 0.2.0
 * @category constants
 */
export const NAMESPACE: typeof internalErrors.NAMESPACE = internalErrors.NAMESPACE

/**
 * A file's data was in a blob that could not be read (code `SESSION_BLOB_MISSING`).
 *
 * @since 0.2.0
 * @category errors
 */
export const BlobMissingError: typeof internalErrors.BlobMissingError = internalErrors.BlobMissingError
/**
 * A file part held in a blob that could not be read (no reader given, or the blob missing).
 *
 * @since 0.2.0
 * @category errors
 */
export type BlobMissingError = internalErrors.BlobMissingError

/**
 * Reads a blob's bytes when a prompt is built.
 *
 * @since 0.1.0
 * @category models
 */
export type BlobResolver<E, R> = (blob: { readonly blob: string; readonly size: number }) => Effect.Effect<Uint8Array, E, R>

/**
 * The reader of a session's own blobs: `store.blob` (a `SessionStore`, or a loaded session),
 * whose bytes are checked against their hash; SESSION_BLOB_MISSING or SESSION_BLOB_CORRUPT
 * when they cannot be given. It fails as the reader does (a store's `BlobError`).
 *
 * @since 0.1.0
 * @category conversions
 */
export const storeBlobs: <E>(store: {
  readonly blob: (ref: string) => Effect.Effect<Uint8Array, E>
}) => BlobResolver<E, never> = internal.storeBlobs

/**
 * Options of `toPrompt`: how file data held in blobs is read.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToPromptOptions<E, R> {
  /** Reads file data held in blobs; without it, a blob is a `BlobMissingError`. */
  readonly blobs?: BlobResolver<E, R> | undefined
}

/**
 * Options of `fromPrompt`: IDs for messages that carry none.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromPromptOptions {
  /** Gives an ID to a message that does not carry one (a prompt not built by `toPrompt`); without it, such a message is `SESSION_INVALID_MESSAGE`. */
  readonly newId?: (() => string) | undefined
}

/**
 * Options of `fromResponse`: the assistant message's ID and its provider.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromResponseOptions {
  /** The assistant message's ID. */
  readonly id: string
  /** The provider's name for `meta.provider`; a response does not name it. */
  readonly provider?: string | undefined
}

/**
 * The response of `generateText`, or anything with its content parts.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResponseLike {
  readonly content: ReadonlyArray<Response.AnyPart>
}

/**
 * The messages as a `Prompt`: every part in order, every `options` kept, blobs read.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toPrompt: <E = never, R = never>(
  messages: ReadonlyArray<RecordV2.Message>,
  options?: ToPromptOptions<E, R>
) => Effect.Effect<Prompt.Prompt, E | InputError | BlobMissingError, R> = internal.toPrompt

/**
 * A `Prompt`'s messages as Message IR v2; the inverse of `toPrompt`. A tool
 * message of several results gives a tool message each. Fails with
 * `SESSION_INVALID_MESSAGE` when a message is not valid Message IR v2.
 *
 * @since 0.1.0
 * @category conversions
 */
export const fromPrompt: (
  prompt: Prompt.Prompt,
  options?: FromPromptOptions
) => Effect.Effect<ReadonlyArray<RecordV2.Message>, InputError> = internal.fromPrompt

/**
 * The assistant message of a `generateText` response: its text, reasoning,
 * files, tool calls and provider-executed results, each with its provider
 * metadata as `options`; its usage, finish reason, model and response ID in
 * `meta`.
 *
 * @since 0.1.0
 * @category conversions
 */
export const fromResponse: (
  response: ResponseLike,
  options: FromResponseOptions
) => Effect.Effect<RecordV2.AssistantMessage, InputError> = internal.fromResponse

/**
 * The tool messages of a `generateText` response whose toolkit ran the calls:
 * one per result not executed by the provider, in order, holding the tool's
 * encoded result as `result`.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toolMessages: (
  response: ResponseLike,
  options: { readonly newId: () => string }
) => Effect.Effect<ReadonlyArray<RecordV2.ToolMessage>, InputError> = internal.toolMessages

/**
 * A persisted agent loop: a session tree as the memory of an `@effect/ai`
 * agent. Each turn commits the user's message, then repeats one step (build
 * the context with `Conversation.build`, call the model, run the tools it asks
 * for, commit the assistant message and its tool results in one
 * `appendChain`) until the model stops calling tools or the step limit is
 * reached. The rules are in docs/ai.md.
 *
 * **How tools run.** The model is called with the toolkit and
 * `disableToolCallResolution`, and the agent runs each call through the
 * toolkit's handler itself, then turns the results into tool messages with
 * `Codec.toolMessages`. A call the model got wrong (parameters that do not
 * decode, a tool the toolkit does not hold) goes back to it as an error result
 * on its next step; a failing handler of the caller's is a `ToolError` naming
 * the tool and the call. A tool whose failure mode is `"return"` gives a tool
 * message with `isError: true` that is committed like any other.
 *
 * **Failures.** Nothing of a step is written before the model has answered
 * and every tool has run: a failed or interrupted model call or tool leaves
 * the session at its last committed entry. The same `send` run again
 * continues its turn without committing its message twice; `resume` answers a
 * committed message. No error holds a request's headers, its body or a key.
 * The store's errors pass through unchanged.
 *
 * **Streaming.** `sendStream` gives the response's parts as they arrive; a
 * step is committed once its response is complete and its tools have run, and
 * a stream cut short stores nothing of its step.
 *
 * **Blobs.** File data the session holds as a blob is read from the session's
 * own store (`SessionStore.blob`, hash checked) when a prompt is built, so the
 * model gets its bytes; a blob that cannot be read fails the step with the
 * store's SESSION_BLOB_MISSING or SESSION_BLOB_CORRUPT, before the model is called.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import type { InputError, Record, RecordV2, SessionError, SessionTree } from "@session-tree/core"
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import type { BlobMissingError } from "./Codec.js"
import * as internal from "./internal/agent.js"

/**
 * The model call of a step failed. It holds the provider, the HTTP status when there was one, a
 * short reason and whether a second try may succeed (a transport failure, 408, 409, 429, 5xx):
 * never the request's headers, its body, the prompt or the key, which `@effect/ai`'s own errors
 * carry and which are not copied.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelError extends Schema.TaggedError<ModelError>("@session-tree/ai/ModelError")("ModelError", {
  provider: Schema.optional(Schema.String),
  status: Schema.optional(Schema.Number),
  reason: Schema.String,
  retryable: Schema.Boolean
}) {
  override get message(): string {
    return `model call failed${this.provider === undefined ? "" : ` (${this.provider})`}: ${this.reason}`
  }
}

/**
 * A tool's handler failed (in the tool's `"error"` failure mode), or its result did not match the
 * tool's schemas; nothing of the step was committed. `reason` says what kind of failure it was;
 * the handler's own value is `failure`, for the caller's code, and is never serialized or printed.
 * A call of the model's making that cannot run (an unknown tool, parameters that do not decode) is
 * not a `ToolError`: it goes back to the model as an error result.
 *
 * @since 0.1.0
 * @category errors
 */
export class ToolError extends Schema.TaggedError<ToolError>("@session-tree/ai/ToolError")("ToolError", {
  toolName: Schema.String,
  toolCallId: Schema.String,
  reason: Schema.String
}) {
  /** The handler's own failure (not enumerable: never serialized, never printed). */
  declare readonly failure: unknown
  override get message(): string {
    return `tool ${this.toolName} (call ${this.toolCallId}) failed: ${this.reason}`
  }
}

/**
 * The model still called tools after `maxSteps` steps. Every step was
 * committed (`entryIds`, in order); the leaf is the last tool result.
 *
 * @since 0.1.0
 * @category errors
 */
export class StepLimitError extends Schema.TaggedError<StepLimitError>("@session-tree/ai/StepLimitError")(
  "StepLimitError",
  {
    maxSteps: Schema.Number,
    entryIds: Schema.Array(Schema.String)
  }
) {
  override get message(): string {
    return `the model was still calling tools after ${this.maxSteps} steps`
  }
}

/**
 * What a turn of the agent can fail with.
 *
 * @since 0.1.0
 * @category errors
 */
export type AgentError = ModelError | ToolError | StepLimitError | BlobMissingError | SessionError

/**
 * A system prompt with its own provider options (`{ anthropic: { cacheControl: { type: "ephemeral" } } }`).
 *
 * @since 0.2.0
 * @category models
 */
export interface SystemPrompt {
  readonly content: string
  readonly options?: RecordV2.Opaque | undefined
}

/**
 * What an agent is made with: its system prompt, step limit, toolkit, token budget, provider name
 * and the schedule its model calls are retried on.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options<Tools extends globalThis.Record<string, Tool.Any> = {}> {
  /** The system message committed first on a branch that has none, with its options when given as an object. */
  readonly system?: string | SystemPrompt | undefined
  /** The most model calls of one turn; 10 by default. Calls of the model's making that cannot run count too. */
  readonly maxSteps?: number | undefined
  /** The tools the model may call; their handlers are needed by `make`. */
  readonly toolkit?: Toolkit.Toolkit<Tools> | undefined
  /** The token budget of the context sent to the model (`Conversation.build`); none by default. */
  readonly budget?: number | undefined
  /**
   * The provider's name, for `meta.provider` and errors. By default `@effect/ai`'s
   * `Model.ProviderName` when the model was provided as a `Model` (`AnthropicLanguageModel.model`),
   * else the one provider a response's metadata names.
   */
  readonly provider?: string | undefined
  /**
   * Runs a failed model call again, inside the step, while the failure is `retryable`: nothing is
   * committed twice and the turn goes on. A streamed call is run again only when none of its
   * parts had reached the caller yet.
   */
  readonly retry?: Schedule.Schedule<unknown, ModelError> | undefined
}

/**
 * Options of one `send`.
 *
 * @since 0.2.0
 * @category models
 */
export interface SendOptions {
  /** The user message's own provider options (`{ anthropic: { cacheControl: { type: "ephemeral" } } }`). */
  readonly options?: RecordV2.Opaque | undefined
}

/**
 * Options of one `compact`.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompactOptions {
  /** The tokens of the newest groups kept after the summary (by `Conversation.approximateTokens`); 0 by default. */
  readonly keep?: number | undefined
  /** The instruction that asks the model for the summary; a default one otherwise. */
  readonly instruction?: string | undefined
}

/**
 * Told by `sendStream` after each commit: the entries it made, in order.
 *
 * @since 0.2.0
 * @category models
 */
export interface Committed {
  readonly type: "committed"
  readonly entries: ReadonlyArray<Record.Entry>
}

/**
 * What `sendStream` gives: the model's response parts as they arrive, each tool's result, each commit.
 *
 * @since 0.2.0
 * @category models
 */
export type StreamPart = Response.AnyPart | Committed

/**
 * An agent over the session tree it was made with. Its operations run one at a time.
 *
 * @since 0.2.0
 * @category models
 */
export interface Service {
  /**
   * Commits a user message (after the system message when the branch has none)
   * and runs the turn; resolves with every entry committed, in order.
   *
   * Run again (`Effect.retry`) after a failure, the same effect does not commit its
   * message a second time: while that message is still on the active branch with no
   * later user message, it runs the turn on from the current leaf, and resolves with
   * every entry of the turn, the first run's included.
   */
  readonly send: (
    content: string | ReadonlyArray<RecordV2.UserPart>,
    options?: SendOptions
  ) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
  /**
   * `send`, streamed: the user message's commit, then each step's response parts as
   * they arrive, the results of the tools it called, and the step's commit, which
   * happens once its response is complete and its tools have run. A step whose stream
   * is interrupted, fails or ends before the response is complete stores nothing.
   * Run again (`Stream.retry`), it continues as `send` does.
   */
  readonly sendStream: (
    content: string | ReadonlyArray<RecordV2.UserPart>,
    options?: SendOptions
  ) => Stream.Stream<StreamPart, AgentError>
  /**
   * Runs the turn from the current leaf without committing anything first: after a
   * failed or interrupted turn whose user message (or tool results) is committed, the
   * model answers it. SESSION_INVALID_MESSAGE when the branch does not end with a user
   * or tool message, which leaves nothing to answer.
   */
  readonly resume: () => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError | InputError>
  /**
   * Runs again the turn an assistant message belongs to: moves to the user
   * message that turn answers (the newest one before it; the entry's parent
   * when there is none) and runs the turn on a new branch, tool calls
   * included. Nothing is deleted.
   */
  readonly regenerate: (entryId: string) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
  /**
   * Replaces a user message on a new branch: moves to its parent, commits a
   * user message with `content` and runs the turn. Nothing is deleted.
   */
  readonly edit: (
    entryId: string,
    content: string | ReadonlyArray<RecordV2.UserPart>,
    options?: SendOptions
  ) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
  /**
   * Summarises the oldest groups with the model (`Conversation.compactionPoint`)
   * and appends a compaction entry holding the summary and the usage of the call
   * that wrote it; resolves with it, or with nothing when there was nothing to
   * summarise. The request carries the branch's system messages and the toolkit's
   * tools (without a toolkit, tool calls and results are sent as text).
   */
  readonly compact: (options?: CompactOptions) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
}

/**
 * The agent of a program, as a service: `Agent.layer(options)` provides it.
 *
 * @since 0.2.0
 * @category tags
 */
export class Agent extends Context.Tag("@session-tree/ai/Agent")<Agent, Service>() {}

/**
 * The instruction `compact` sends after the messages it summarises, unless given one.
 *
 * @since 0.1.0
 * @category constants
 */
export const SUMMARY_INSTRUCTION: string = internal.SUMMARY_INSTRUCTION

/**
 * What an agent needs: the session tree, the model, and the toolkit's handlers and their services.
 *
 * @since 0.2.0
 * @category models
 */
export type Requirements<Tools extends globalThis.Record<string, Tool.Any>> =
  | SessionTree.SessionTree
  | LanguageModel.LanguageModel
  | Tool.HandlersFor<Tools>
  | Tool.Requirements<Tools[keyof Tools]>

/**
 * An agent over the `SessionTree` (of a version-2 session) and the
 * `LanguageModel` in context, with the toolkit's handlers when there are tools.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: <Tools extends globalThis.Record<string, Tool.Any> = {}>(
  options?: Options<Tools>
) => Effect.Effect<Service, never, Requirements<Tools>> = internal.make

/**
 * The `Agent` service, made by `make` from the same services.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = <Tools extends globalThis.Record<string, Tool.Any> = {}>(
  options?: Options<Tools>
): Layer.Layer<Agent, never, Requirements<Tools>> => Layer.effect(Agent, internal.make(options))

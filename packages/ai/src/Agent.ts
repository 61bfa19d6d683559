/**
 * A persisted agent loop: a session tree as the memory of an `@effect/ai`
 * agent. Each turn commits the user's message, then repeats one step (build
 * the context with `Conversation.build`, call the model, run the tools it asks
 * for, commit the assistant message and its tool results in one
 * `appendChain`) until the model stops calling tools or the step limit is
 * reached.
 *
 * **How tools run.** The model is called with the toolkit and
 * `disableToolCallResolution`, and the agent runs each call through the
 * toolkit's handler itself, then turns the results into tool messages with
 * `Codec.toolMessages`. The outcome is the one `generateText` gives when it
 * runs the handlers, but a failing tool is told apart from a failing model
 * (`ToolError` names the tool and the call), whatever the tool's failure type.
 * A tool whose failure mode is `"return"` gives a tool message with
 * `isError: true` that is committed like any other.
 *
 * **Failures.** Nothing of a step is written before the model has answered
 * and every tool has run: a failed or interrupted model call or tool leaves
 * the session at its last committed entry, and `send` again continues from
 * there. The store's errors pass through unchanged.
 *
 * **Blobs.** File data the session holds as a blob is read from the session's
 * own store (`SessionStore.blob`, hash checked) when a prompt is built, so the
 * model gets its bytes; a blob that cannot be read fails the step with the
 * store's SESSION_BLOB_MISSING or SESSION_BLOB_CORRUPT, before the model is called.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import type { Record, RecordV2, SessionError, SessionTree } from "@session-tree/core"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { BlobMissingError } from "./Codec.js"
import * as internal from "./internal/agent.js"

/** The model call of a step failed (the provider's `AiError`, or a response that could not be read). */
export class ModelError extends Schema.TaggedError<ModelError>("@session-tree/ai/ModelError")("ModelError", {
  reason: Schema.String,
  cause: Schema.Unknown
}) {
  override get message(): string {
    return `model call failed: ${this.reason}`
  }
}

/** A tool's handler failed (or its parameters did not decode); nothing of the step was committed. */
export class ToolError extends Schema.TaggedError<ToolError>("@session-tree/ai/ToolError")("ToolError", {
  toolName: Schema.String,
  toolCallId: Schema.String,
  reason: Schema.String,
  cause: Schema.Unknown
}) {
  override get message(): string {
    return `tool ${this.toolName} (call ${this.toolCallId}) failed: ${this.reason}`
  }
}

/**
 * The model still called tools after `maxSteps` steps. Every step was
 * committed (`entryIds`, in order); the leaf is the last tool result.
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

/** What a turn of the agent can fail with. */
export type AgentError = ModelError | ToolError | StepLimitError | BlobMissingError | SessionError

export interface Options<Tools extends globalThis.Record<string, Tool.Any> = {}> {
  /** The system message committed first on a branch that has none. */
  readonly system?: string | undefined
  /** The most model calls of one turn; 10 by default. */
  readonly maxSteps?: number | undefined
  /** The tools the model may call; their handlers are needed by `make`. */
  readonly toolkit?: Toolkit.Toolkit<Tools> | undefined
  /** The token budget of the context sent to the model (`Conversation.build`); none by default. */
  readonly budget?: number | undefined
}

export interface CompactOptions {
  /** The tokens of the newest groups kept after the summary (by `Conversation.approximateTokens`); 0 by default. */
  readonly keep?: number | undefined
  /** The instruction that asks the model for the summary; a default one otherwise. */
  readonly instruction?: string | undefined
}

/** An agent over the session tree it was made with. Its operations run one at a time. */
export interface Agent {
  /**
   * Commits a user message (after the system message when the branch has none)
   * and runs the turn; resolves with every entry committed, in order.
   */
  readonly send: (
    content: string | ReadonlyArray<RecordV2.UserPart>
  ) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
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
    content: string | ReadonlyArray<RecordV2.UserPart>
  ) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
  /**
   * Summarises the oldest groups with the model (`Conversation.compactionPoint`)
   * and appends a compaction entry; resolves with it, or with nothing when
   * there was nothing to summarise.
   */
  readonly compact: (options?: CompactOptions) => Effect.Effect<ReadonlyArray<Record.Entry>, AgentError>
}

/** The instruction `compact` sends after the messages it summarises, unless given one. */
export const SUMMARY_INSTRUCTION: string = internal.SUMMARY_INSTRUCTION

/**
 * An agent over the `SessionTree` (of a version-2 session) and the
 * `LanguageModel` in context, with the toolkit's handlers when there are tools.
 */
export const make: <Tools extends globalThis.Record<string, Tool.Any> = {}>(
  options?: Options<Tools>
) => Effect.Effect<
  Agent,
  never,
  SessionTree.SessionTree | LanguageModel.LanguageModel | Tool.HandlersFor<Tools> | Tool.Requirements<Tools[keyof Tools]>
> = internal.make

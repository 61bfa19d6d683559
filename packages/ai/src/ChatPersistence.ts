/**
 * `@effect/ai`'s `Chat.Persistence` backed by session trees: an unmodified
 * `Chat` program that gets its chats from `Chat.Persistence` (`getOrCreate`,
 * `get`, the chat's `generateText`, `streamText`, `generateObject` and `save`)
 * keeps them in version-2 sessions of the journal in context (files with
 * `@session-tree/file`, PostgreSQL with `@session-tree/pg`), one session per
 * chat, and finds its history again after a restart.
 *
 * **Appends, never rewrites.** Each save appends only the messages the history
 * gained since it was loaded or last saved, in one commit. A history that
 * differs from what is stored (a message changed, removed or put before the
 * stored ones) is stored as a new branch from the last message both share;
 * nothing stored is rewritten or deleted, and the newest branch is the one a
 * later load resumes. A history made shorter without a new message stores
 * nothing.
 *
 * **Lossless.** `Chat` keeps a response in its history without the parts'
 * provider metadata (`Prompt.fromResponseParts`), so its next request would
 * go out without the reasoning signatures and encrypted reasoning providers
 * need back. The chats given here put that metadata (and the response's usage,
 * model and finish reason) back into the history once a response is complete,
 * through the codec; what is stored is what the provider sent.
 *
 * **Loading.** A chat's history is the context of its session's active branch
 * (`Conversation.build`: a compaction's summary stands for what it replaced).
 * A session is loaded once per chat ID and held until the layer's scope
 * closes; a blob is read from the session when the history is built.
 *
 * **Failures.** A chat ID must be a plain name (`CHAT_ID`): letters, digits,
 * `.`, `_` and `-`, at most 128, not starting with a dot, so that no location
 * made from it leaves its directory. An ID that is not, a store failure and a
 * `timeToLive` (a session tree does not expire) are `PersistenceBackingError`s
 * whose `cause` is the store's typed error; a missing chat is
 * `ChatNotFoundError`. As in `@effect/ai`'s own persisted chats, a save run
 * by `generateText`, `streamText` or `generateObject` that fails is a defect.
 */
import type * as Chat from "@effect/ai/Chat"
import type { Ids, SessionJournal } from "@session-tree/core"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as internal from "./internal/chatPersistence.js"
import { Persistence } from "@effect/ai/Chat"

/**
 * Where each chat's session is kept.
 *
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /**
   * Where the session of chat `chatId` is: its path with `FileJournal`
   * (`(id) => path.join(dir, `${id}.jsonl`)`), its session ID with `PgJournal`. The chat ID itself by
   * default. The session is created with the chat ID as its session ID.
   */
  readonly location?: ((chatId: string) => string) | undefined
}

/**
 * The chat IDs accepted: a plain name of at most 128 characters.
 *
 * @since 0.2.0
 * @category constants
 */
export const CHAT_ID: RegExp = internal.CHAT_ID

/**
 * The `Chat.Persistence` service over the journal in context; its sessions are held in the scope.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make: (
  options?: Options
) => Effect.Effect<Chat.Persistence.Service, never, SessionJournal.SessionJournal | Ids.Ids | Scope.Scope> = internal.make

/**
 * `Chat.Persistence`, provided by session trees of the journal in context.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options?: Options): Layer.Layer<Chat.Persistence, never, SessionJournal.SessionJournal | Ids.Ids> =>
  Layer.scoped(Persistence, internal.make(options))

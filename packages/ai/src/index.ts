/**
 * A session tree as the memory of an Effect agent: the lossless codec between
 * Message IR v2 and `@effect/ai`'s `Prompt` and responses, and the persisted
 * agent loop over it.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Codec from "./Codec.js"
/**
 * A persisted agent loop: a session tree as the memory of an `@effect/ai` agent.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Agent from "./Agent.js"
/**
 * `@effect/ai`'s `Chat.Persistence` backed by session trees: an unmodified `Chat` program that
 * gets its chats from `Chat.Persistence` (`getOrCreate`, `get`, the chat's `generateText`,
 * `streamText`, `generateObject` and `save`) keeps them in version-2 sessions of the journal in
 * context (files with `@session-tree/file`, PostgreSQL with `@session-tree/pg`), one session per
 * chat, and finds its history again after a restart.
 *
 * @since 0.2.0
 * @category modules
 */
export * as ChatPersistence from "./ChatPersistence.js"

/**
 * A session tree as the memory of an Effect agent: the lossless codec between
 * Message IR v2 and `@effect/ai`'s `Prompt` and responses, and the persisted
 * agent loop over it.
 */
export * as Codec from "./Codec.js"
export * as Agent from "./Agent.js"
export * as ChatPersistence from "./ChatPersistence.js"

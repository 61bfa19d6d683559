/**
 * A session tree as the memory of an Effect agent: the lossless codec between
 * Message IR v2 and `@effect/ai`'s `Prompt` and responses.
 */
export * as Codec from "./Codec.js"

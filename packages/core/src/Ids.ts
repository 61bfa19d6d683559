/**
 * Where session and entry IDs come from. Production uses random UUIDs; tests use
 * `layerDeterministic` so record order and chosen parents can be asserted directly.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { InputError } from "./SessionError.js"

/**
 * A source of IDs. Its failures are the caller's (a factory the caller supplied): `InputError`.
 *
 * @since 0.1.0
 * @category models
 */
export interface IdsService {
  readonly sessionId: Effect.Effect<string, InputError>
  readonly entryId: Effect.Effect<string, InputError>
}

/**
 * The source of IDs in the context.
 *
 * @since 0.1.0
 * @category tags
 */
export class Ids extends Context.Tag("@session-tree/Ids")<Ids, IdsService>() {}

/**
 * A random UUID (version 4) from the Web Crypto API, which Node, Deno, Bun and browsers all provide.
 *
 * @since 0.1.0
 * @category utils
 */
export const randomUUID = (): string => globalThis.crypto.randomUUID()

/**
 * Random UUIDs for sessions and entries.
 *
 * @since 0.1.0
 * @category constructors
 */
export const random: IdsService = {
  sessionId: Effect.sync(randomUUID),
  entryId: Effect.sync(randomUUID)
}

/**
 * `session-001`, `session-002`, … and `entry-001`, `entry-002`, … in call order.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeDeterministic = (): IdsService => {
  let sessions = 0
  let entries = 0
  const pad = (n: number) => String(n).padStart(3, "0")
  return {
    sessionId: Effect.sync(() => `session-${pad(++sessions)}`),
    entryId: Effect.sync(() => `entry-${pad(++entries)}`)
  }
}

/**
 * Random UUIDs (`random`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerRandom: Layer.Layer<Ids> = Layer.succeed(Ids, random)
/**
 * Deterministic IDs (`makeDeterministic`), fresh per build of the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerDeterministic: Layer.Layer<Ids> = Layer.sync(Ids, makeDeterministic)

/**
 * Caller-supplied options of the Promise facade: `now` (epoch
 * milliseconds, for timestamps) and `createId` (entry IDs), turned into the
 * `CallerClock` and `Ids` services the Effect API reads.
 *
 * Reading the options never runs caller code: the object must be a plain object
 * (not a Proxy, not a class instance) with no keys but `now` and `createId`
 * (a misspelt option would otherwise silently fall back to the default), each an
 * own data property holding a function or `undefined`. Anything else is
 * SESSION_INVALID_OPTIONS before any backend is touched. The functions themselves run only when a record
 * needs a time or an ID; a throw or an unusable result is SESSION_INVALID_OPTIONS
 * for that operation, which then writes nothing (the store checks the results
 * before it builds a record, and rejects an entry ID it already holds).
 *
 * The session ID of a new header always comes from a random UUID: `createId`
 * names entries, and drawing the header's ID from it would shift every entry ID
 * a deterministic factory hands out.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { Ids, type IdsService, random, randomUUID } from "./Ids.js"
import { isProxy } from "./internal/runtime.js"
import { type InputError, sessionError } from "./SessionError.js"

/**
 * The options a caller of the Promise facade may give: the clock and the entry IDs.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionOptions {
  /** Current time in epoch milliseconds (an integer Date can represent with a four-digit year). */
  readonly now?: () => number
  /** A fresh, non-empty entry ID per call. */
  readonly createId?: () => string
}

/**
 * Options after validation: the functions only, detached from the caller's object.
 *
 * @since 0.1.0
 * @category models
 */
export interface ValidOptions {
  readonly now: (() => unknown) | undefined
  readonly createId: (() => unknown) | undefined
}

const KEYS: ReadonlyArray<keyof SessionOptions> = ["now", "createId"]

const invalid = (reason: string): InputError => sessionError("SESSION_INVALID_OPTIONS", reason)

/**
 * Validates `options` by descriptor, without calling any getter, trap or function of the caller.
 *
 * @since 0.1.0
 * @category options
 */
export const validate = (options: unknown): Either.Either<ValidOptions, InputError> => {
  if (options === undefined) return Either.right({ now: undefined, createId: undefined })
  if (typeof options !== "object" || options === null) return Either.left(invalid("the options must be an object"))
  // Checked first: every other inspection of a Proxy would run its traps.
  if (isProxy(options)) return Either.left(invalid("the options must be a plain object, not a Proxy"))
  const proto = Object.getPrototypeOf(options)
  if ((proto !== Object.prototype && proto !== null) || Array.isArray(options)) {
    return Either.left(invalid("the options must be a plain object"))
  }
  for (const key of Reflect.ownKeys(options)) {
    if (typeof key === "symbol" || !(KEYS as ReadonlyArray<string>).includes(key)) {
      return Either.left(invalid(`unknown option ${String(key)}; expected now or createId`))
    }
  }
  const found: { now: (() => unknown) | undefined; createId: (() => unknown) | undefined } = {
    now: undefined,
    createId: undefined
  }
  for (const key of KEYS) {
    const d = Object.getOwnPropertyDescriptor(options, key)
    if (d === undefined) continue
    if (!("value" in d)) return Either.left(invalid(`option ${key} is an accessor, not a data property`))
    if (d.value === undefined) continue
    if (typeof d.value !== "function") return Either.left(invalid(`option ${key} must be a function`))
    found[key] = d.value as () => unknown
  }
  return Either.right(found)
}

/**
 * A Clock whose time is `now()`. A throw or a value that is not an integer
 * millisecond within Date's four-digit years dies with SESSION_INVALID_OPTIONS,
 * which the store turns into a failure of the operation that asked for the time.
 * Sleeping and nanosecond time stay with the system clock.
 *
 * @since 0.1.0
 * @category options
 */
export const clockFrom = (now: () => unknown): Clock.Clock => {
  const system = Clock.make()
  const read = (): number => {
    let value: unknown
    try {
      value = now()
    } catch (cause) {
      throw sessionError("SESSION_INVALID_OPTIONS", "the clock threw", { cause })
    }
    if (typeof value !== "number" || !Number.isSafeInteger(value) || value < MIN_TIME || value > MAX_TIME) {
      throw invalid(`the clock returned ${describe(value)}, not an epoch millisecond in years 0000-9999`)
    }
    return value
  }
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: read,
    currentTimeMillis: Effect.sync(read),
    unsafeCurrentTimeNanos: () => system.unsafeCurrentTimeNanos(),
    currentTimeNanos: system.currentTimeNanos,
    sleep: (duration) => system.sleep(duration)
  }
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z: the range `toISOString` writes with four-digit years. */
const MIN_TIME = -62_167_219_200_000
const MAX_TIME = 253_402_300_799_999

const describe = (value: unknown): string =>
  typeof value === "string" ? JSON.stringify(value) : typeof value === "object" && value !== null ? "an object" : String(value)

/**
 * Ids whose entry IDs come from `createId`; session IDs are random UUIDs.
 *
 * @since 0.1.0
 * @category options
 */
export const idsFrom = (createId: () => unknown): IdsService => ({
  sessionId: Effect.sync(randomUUID),
  entryId: Effect.suspend(() => {
    let value: unknown
    try {
      value = createId()
    } catch (cause) {
      return Effect.fail(sessionError("SESSION_INVALID_OPTIONS", "the ID factory threw", { cause }))
    }
    return typeof value === "string" && value.length > 0
      ? Effect.succeed(value)
      : Effect.fail(invalid(`the ID factory returned ${describe(value)}, not a non-empty string`))
  })
})

/**
 * A clock the caller supplies (the facade's `now`). When one is provided, stores
 * read their timestamps from it; otherwise from the running Effect Clock, which
 * is the system clock, or `TestClock` in tests.
 *
 * An ordinary service rather than `Layer.setClock`: a layer that sets the Clock
 * restores it only when it is not built inside a `Layer.merge`, so merged with
 * other layers it would leave the caller's fiber on this clock after the provide.
 * A service is scoped to its provide however it is composed.
 *
 * @since 0.1.0
 * @category models
 */
export class CallerClock extends Context.Reference<CallerClock>()("@session-tree/CallerClock", {
  defaultValue: (): Clock.Clock | undefined => undefined
}) {}

/**
 * The clock stores stamp records with: the caller's when one is provided, else the running Effect Clock.
 *
 * @since 0.1.0
 * @category options
 */
export const currentClock: Effect.Effect<Clock.Clock> = Effect.flatMap(CallerClock, (clock) => clock === undefined ? Effect.clock : Effect.succeed(clock))

/**
 * The services of validated options: `Ids`, and the caller's clock when `now` is given (none otherwise).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerValid = (options: ValidOptions): Layer.Layer<Ids | CallerClock> => {
  const ids = Layer.succeed(Ids, options.createId === undefined ? random : idsFrom(options.createId))
  return Layer.merge(ids, Layer.succeed(CallerClock, options.now === undefined ? undefined : clockFrom(options.now)))
}

/**
 * Validates `options` and provides `Ids` and the clock they describe.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: unknown): Layer.Layer<Ids | CallerClock, InputError> =>
  Either.match(validate(options), {
    onLeft: (error) => Layer.fail(error),
    onRight: layerValid
  })

/**
 * Facade options → Clock and Ids (SPEC B7): reading the options runs no caller
 * code, and a clock or ID factory that misbehaves fails the operation that used
 * it with SESSION_INVALID_OPTIONS, writing nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { Ids, random } from "../src/Ids.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import * as Options from "../src/Options.js"
import { isSessionError, type SessionError } from "../src/SessionError.js"
import * as SessionStore from "../src/SessionStore.js"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const refused = (options: unknown): SessionError => {
  const result = Options.validate(options)
  if (Either.isRight(result)) throw new Error("expected the options to be refused")
  expect(result.left.code).toBe("SESSION_INVALID_OPTIONS")
  return result.left
}

describe("validate", () => {
  it("accepts no options, an empty object, and functions or undefined under the two known keys", () => {
    const now = () => 1
    const createId = () => "x"
    expect(Options.validate(undefined)).toEqual(Either.right({ now: undefined, createId: undefined }))
    expect(Options.validate({})).toEqual(Either.right({ now: undefined, createId: undefined }))
    expect(Options.validate({ now, createId })).toEqual(Either.right({ now, createId }))
    expect(Options.validate({ now: undefined, createId })).toEqual(Either.right({ now: undefined, createId }))
    const bare = Object.assign(Object.create(null), { now }) as object
    expect(Options.validate(bare)).toEqual(Either.right({ now, createId: undefined }))
  })

  it("refuses accessors without calling them", () => {
    let calls = 0
    const getter = { get: () => (calls++, () => 1), enumerable: true }
    refused(Object.defineProperty({}, "now", getter))
    refused(Object.defineProperty({}, "createId", getter))
    refused(Object.defineProperty({}, "now", { set: () => void calls++, enumerable: true }))
    expect(calls).toBe(0)
  })

  it("refuses a Proxy without running any of its traps", () => {
    let traps = 0
    const handler = new Proxy({}, { get: () => () => { traps++; throw new Error("trap ran") } })
    refused(new Proxy({ now: () => 1 }, handler))
    refused(new Proxy(() => 1, handler))
    expect(traps).toBe(0)
  })

  it("refuses what is not a plain object and values that are not functions", () => {
    class Opts {
      now = () => 1
    }
    for (const options of [
      null, 0, "now", true, [], [() => 1], () => 1, new Opts(), Object.create({ now: () => 1 }), new Date(),
      { now: 1 }, { now: null }, { createId: "entry-001" }, { createId: {} },
      { nowMs: () => 1 }, { [Symbol("now")]: () => 1 }
    ]) {
      refused(options)
    }
  })
})

describe("clockFrom", () => {
  it("reads the caller's time, through both the effect and the unsafe read", () => {
    let t = 1_767_323_045_006
    const clock = Options.clockFrom(() => t++)
    expect(Effect.runSync(clock.currentTimeMillis)).toBe(1_767_323_045_006)
    expect(clock.unsafeCurrentTimeMillis()).toBe(1_767_323_045_007)
  })

  it("accepts exactly the milliseconds toISOString writes with a four-digit year", () => {
    const at = (ms: unknown) => Effect.runSyncExit(Options.clockFrom(() => ms).currentTimeMillis)
    const first = Date.parse("0000-01-01T00:00:00.000Z")
    const last = Date.parse("9999-12-31T23:59:59.999Z")
    expect(at(first)._tag).toBe("Success")
    expect(at(last)._tag).toBe("Success")
    for (const bad of [first - 1, last + 1, NaN, Infinity, 1.5, -0.5, "1", null, undefined, 2 ** 53]) {
      const exit = at(bad)
      expect(exit._tag).toBe("Failure")
      // A Clock cannot fail: the error travels as a defect the store turns back into a failure.
      const defect = exit._tag === "Failure" && exit.cause._tag === "Die" ? exit.cause.defect : undefined
      expect(isSessionError(defect) && defect.code).toBe("SESSION_INVALID_OPTIONS")
    }
  })

  it("a throwing clock becomes SESSION_INVALID_OPTIONS carrying the thrown value", () => {
    const thrown = new Error("no time")
    const exit = Effect.runSyncExit(Options.clockFrom(() => { throw thrown }).currentTimeMillis)
    const defect = exit._tag === "Failure" && exit.cause._tag === "Die" ? exit.cause.defect : undefined
    expect(defect).toMatchObject({ code: "SESSION_INVALID_OPTIONS", cause: thrown })
  })
})

describe("idsFrom", () => {
  it("entry IDs come from the factory; session IDs are random UUIDs that never call it", () => {
    let n = 0
    const ids = Options.idsFrom(() => `e${++n}`)
    const a = Effect.runSync(ids.sessionId)
    const b = Effect.runSync(ids.sessionId)
    expect(a).toMatch(UUID)
    expect(a).not.toBe(b)
    expect(n).toBe(0)
    expect(Effect.runSync(ids.entryId)).toBe("e1")
    expect(Effect.runSync(ids.entryId)).toBe("e2")
  })

  it("a factory that throws or returns an empty or non-string ID fails with SESSION_INVALID_OPTIONS", () => {
    for (const factory of [() => "", () => 1, () => null, () => ({ toString: () => "x" }), () => { throw new Error("no") }]) {
      const error = Effect.runSync(Effect.flip(Options.idsFrom(factory).entryId))
      expect(error.code).toBe("SESSION_INVALID_OPTIONS")
    }
  })
})

/** The time a store would stamp a record with. */
const storeTime = Effect.flatMap(Options.currentClock, (clock) => clock.currentTimeMillis)

describe("layer", () => {
  it.effect("provides the caller's clock and IDs, and keeps the running clock without `now`", () =>
    Effect.gen(function*() {
      const withNow = yield* Effect.gen(function*() {
        return [yield* storeTime, yield* (yield* Ids).entryId] as const
      }).pipe(Effect.provide(Options.layer({ now: () => 42_000, createId: () => "given" })))
      expect(withNow).toEqual([42_000, "given"])
      // Under it.effect the running clock is the TestClock at 0.
      const without = yield* Effect.gen(function*() {
        return [yield* storeTime, yield* (yield* Ids).entryId] as const
      }).pipe(Effect.provide(Options.layer(undefined)))
      expect(without[0]).toBe(0)
      expect(without[1]).toMatch(UUID)
    }))

  it.effect("the caller's clock does not outlive the provide, however the layer is composed", () =>
    Effect.gen(function*() {
      const layer = Options.layer({ now: () => 7_000 })
      const compositions = [
        layer,
        Layer.merge(layer, MemoryJournal.layer),
        Layer.mergeAll(MemoryJournal.layer, layer, Layer.succeed(Ids, random)),
        Layer.provideMerge(MemoryJournal.layer, layer)
      ]
      for (const composed of compositions) {
        expect(yield* storeTime.pipe(Effect.provide(composed))).toBe(7_000)
        expect(yield* storeTime).toBe(0)
        expect(yield* Clock.currentTimeMillis).toBe(0)
      }
    }))

  it.effect("fails to build for invalid options", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Effect.provide(Ids, Options.layer({ now: "soon" })))
      expect(error.code).toBe("SESSION_INVALID_OPTIONS")
    }))

  it.scoped("a store built with the layer stamps the caller's time, and a bad reading fails the append, writing nothing", () =>
    Effect.gen(function*() {
      const storage: MemoryJournal.Storage = new Map()
      let reading: unknown = Date.parse("2026-01-02T03:04:05.006Z")
      let id = 0
      const options = { now: () => reading as number, createId: () => `entry-${++id}` }
      const store = yield* SessionStore.create("s").pipe(
        Effect.provide(Layer.merge(MemoryJournal.layerStorage(storage), Options.layer(options)))
      )
      expect(store.header.timestamp).toBe("2026-01-02T03:04:05.006Z")
      const first = yield* store.append(null, { role: "user", id: "m1", content: "root" })
      expect([first.id, first.timestamp]).toEqual(["entry-1", "2026-01-02T03:04:05.006Z"])
      const lines = storage.get("s")
      expect(lines).toHaveLength(2)
      for (const bad of [NaN, 0.5, -1e16, "x"]) {
        reading = bad
        const error = yield* Effect.flip(store.append(first.id, { role: "user", id: "m2", content: "x" }))
        expect(error.code).toBe("SESSION_INVALID_OPTIONS")
      }
      expect(storage.get("s")).toBe(lines)
      expect([...storage.keys()]).toEqual(["s"])
      expect(store.entries).toEqual([first])
      reading = Date.parse("2026-01-02T03:04:06.000Z")
      const second = yield* store.append(first.id, { role: "user", id: "m2", content: "x" })
      expect(second.timestamp).toBe("2026-01-02T03:04:06.000Z")
    }))
})

/**
 * Loads and reads can be stopped: only the taking of a resource (a descriptor, the lock's
 * registration, the directory) is protected from interruption, so a load interrupted while it
 * reads ends at once and holds nothing. A read that appends keep overlapping is tried again on a
 * `Schedule` (`readRetries`), which the `TestClock` drives here.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Ids from "@session-tree/core/Ids"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "../src/FileJournal.js"
import type * as Fs from "../src/Fs.js"
import * as Locks from "../src/internal/locks.js"
import * as Marker from "../src/internal/marker.js"
import { hashDir, openFds, tempDir, user } from "./fixtures/helpers.js"

/** The file journal on the real filesystem, every step of it seen through `around`. */
const through = (around: Fs.Around) => Layer.merge(FileJournal.layerIntercepted(around), Ids.layerDeterministic)

/** A version-2 session of a few entries at `path`, made through the real filesystem. */
const session = (path: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path)
    let leaf: string | null = null
    for (let i = 0; i < 5; i++) leaf = (yield* store.append(leaf, user(`m${i}`, "x".repeat(2000)))).id
  })).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)))

/** An interceptor that stops every read of `path` for good, saying so through `reading`. */
const stopReadsOf = (path: string, reading: Deferred.Deferred<void>): Fs.Around => (step, run) =>
  step.op === "read" && step.path === path ? Effect.zipRight(Deferred.succeed(reading, undefined), Effect.never) : run

describe("interruption", () => {
  const operations: ReadonlyArray<readonly [string, (path: string) => Effect.Effect<unknown, unknown, SessionJournal | Ids.Ids>]> = [
    ["SessionStore.load", (path) => Effect.scoped(SessionStore.load(path))],
    ["SessionStore.read", (path) => SessionStore.read(path)]
  ]
  for (const [name, operation] of operations) {
    it.live(`${name} interrupted while it reads ends at once, holding nothing and changing nothing`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const path = Path.join(dir, "s.jsonl")
        yield* session(path)
        const before = { fds: openFds(), locks: Locks.processLocks().held(), bytes: hashDir(dir) }
        const reading = yield* Deferred.make<void>()
        const fiber = yield* Effect.fork(Effect.provide(operation(path), through(stopReadsOf(path, reading))))
        yield* Deferred.await(reading)
        // The read never returns: an uninterruptible load would wait for it for ever.
        const exit = yield* Fiber.interrupt(fiber).pipe(Effect.timeout(Duration.seconds(10)))
        expect(Exit.isInterrupted(exit)).toBe(true)
        expect({ fds: openFds(), locks: Locks.processLocks().held(), bytes: hashDir(dir) }).toEqual(before)
      }).pipe(Effect.scoped))
  }
})

describe("a read that appends keep overlapping", () => {
  it.scoped("is tried again on its schedule, which the TestClock drives, then gives SESSION_BUSY", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      yield* session(path)
      // An append intent beside the file, which every look at it finds changed: each read overlapped an append.
      const size = NFS.statSync(path).size
      NFS.symlinkSync(Marker.encodeIntent({ from: size, to: size + 10, sha256: "0".repeat(64) }), `${path}.marker`)
      let looks = 0
      const changing: Fs.Around = (step, run) =>
        step.op === "readlink" && step.path === `${path}.marker`
          ? Effect.map(run, (text) => (`${text}`.replace(/:\d+$/, `:${++looks}`)) as never)
          : run
      const fiber = yield* Effect.fork(Effect.either(Effect.provide(SessionStore.read(path), through(changing))))
      // Each attempt looks at the marker twice, before and after its read.
      const attempts = () => looks / 2
      yield* waitFor(() => attempts() >= 1)
      expect(attempts()).toBe(1)
      // The first retry waits 1 ms of the TestClock, the next 2 ms: nothing runs before they pass.
      yield* TestClock.adjust(Duration.micros(900n))
      expect(attempts()).toBe(1)
      yield* TestClock.adjust(Duration.micros(100n))
      yield* waitFor(() => attempts() === 2)
      yield* TestClock.adjust(Duration.millis(2))
      yield* waitFor(() => attempts() === 3)
      expect(fiber.unsafePoll()).toBeNull()
      // Past the whole schedule (delays doubling up to 100 ms, 19 retries), the read gives up.
      yield* TestClock.adjust(Duration.seconds(5))
      const result = yield* Fiber.join(fiber)
      expect(attempts()).toBe(20)
      expect(result._tag === "Left" && [result.left.code, result.left.reason]).toEqual([
        "SESSION_BUSY",
        "the session is being appended to without a pause long enough to read it; try again"
      ])
    }))
})

/** Lets the forked read run (it waits on real system calls between the clock's ticks) until `done`. */
const waitFor = (done: () => boolean) =>
  Effect.gen(function*() {
    for (let i = 0; i < 200 && !done(); i++) yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    expect(done()).toBe(true)
  })

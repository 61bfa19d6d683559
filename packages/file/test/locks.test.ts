/**
 * The in-process locks of session files (`internal/locks.ts`): one holder at a
 * time, a free lock taken at once, waiters served after the holder whatever
 * happens to it, one lock per file for every store of the process whatever
 * layer built its journal, and locks forgotten once nobody holds them.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import * as Locks from "../src/internal/locks.js"
import * as Recovery from "../src/Recovery.js"
import { makeTempDir, tempDir, user } from "./fixtures/helpers.js"
import { messageOf } from "@session-tree/core/Record"

/** The lock of one key in a registry of its own, held for the test's scope. */
const aLock = Effect.suspend(() => Locks.make().lockFor("k"))

/** Runs `n` fibers that each hold the lock across a yield; returns the most that held it at once. */
const contend = (lock: Effect.Semaphore, n: number) =>
  Effect.gen(function*() {
    let inside = 0
    let most = 0
    const holder = lock.withPermits(1)(Effect.gen(function*() {
      inside++
      most = Math.max(most, inside)
      yield* Effect.yieldNow()
      yield* Effect.sleep("1 millis")
      inside--
    }))
    yield* Effect.all(Array.from({ length: n }, () => holder), { concurrency: "unbounded", discard: true })
    return most
  })

describe("the lock of a file", () => {
  it.scopedLive("lets one fiber at a time hold it, and serves every waiter", () =>
    Effect.gen(function*() {
      expect(yield* contend(yield* aLock, 20)).toBe(1)
    }))

  it.scoped("a free lock is taken without the fiber suspending", () =>
    Effect.gen(function*() {
      const lock = yield* aLock
      // runSync fails on any async step: taking and releasing a free lock has none.
      expect(Effect.runSync(lock.withPermits(1)(Effect.succeed(7)))).toBe(7)
      expect(Effect.runSync(lock.withPermits(1)(Effect.succeed(8)))).toBe(8)
    }))

  it.scopedLive("is released when the holder fails, dies or is interrupted", () =>
    Effect.gen(function*() {
      const lock = yield* aLock
      expect(Exit.isFailure(yield* Effect.exit(lock.withPermits(1)(Effect.fail("no"))))).toBe(true)
      expect(Exit.isFailure(yield* Effect.exit(lock.withPermits(1)(Effect.die("bug"))))).toBe(true)
      const holding = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(lock.withPermits(1)(Effect.zipRight(Deferred.succeed(holding, undefined), Effect.never)))
      yield* Deferred.await(holding)
      yield* Fiber.interrupt(holder)
      expect(yield* lock.withPermits(1)(Effect.succeed("free"))).toBe("free")
    }))

  it.scopedLive("a waiter interrupted while waiting, or just after being woken, leaves the others served", () =>
    Effect.gen(function*() {
      const lock = yield* aLock
      const release = yield* Deferred.make<void>()
      const holding = yield* Deferred.make<void>()
      yield* Effect.fork(lock.withPermits(1)(Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(release))))
      yield* Deferred.await(holding)
      const order: Array<string> = []
      const waiter = (name: string) => lock.withPermits(1)(Effect.sync(() => void order.push(name)))
      const a = yield* Effect.fork(waiter("a"))
      const b = yield* Effect.fork(waiter("b"))
      const c = yield* Effect.fork(waiter("c"))
      yield* Effect.sleep("10 millis")
      // `a` leaves while waiting; `b` is interrupted in the same step that frees the lock, so it is
      // woken and then interrupted before it runs again.
      yield* Fiber.interrupt(a)
      yield* Effect.zipRight(Deferred.succeed(release, undefined), Fiber.interruptFork(b))
      yield* Fiber.join(c)
      yield* Fiber.await(b)
      expect(order).not.toContain("a")
      expect(order).toContain("c")
      expect(yield* lock.withPermits(1)(Effect.succeed("free"))).toBe("free")
    }))
})

describe("the locks of files", () => {
  it.scoped("are shared while held and forgotten once nobody holds them, whatever ends the holding", () =>
    Effect.gen(function*() {
      const locks = Locks.make()
      const [a, b, c] = yield* Effect.scoped(Effect.gen(function*() {
        const a = yield* locks.lockFor("k")
        const b = yield* locks.lockFor("k")
        const c = yield* locks.lockFor("other")
        expect(locks.held()).toBe(2)
        return [a, b, c] as const
      }))
      expect(a).toBe(b)
      expect(a).not.toBe(c)
      expect(locks.held()).toBe(0)
      yield* Effect.exit(Effect.scoped(Effect.zipRight(locks.lockFor("k"), Effect.fail("boom"))))
      expect(locks.held()).toBe(0)
    }))

  it.scopedLive("are one per file for stores whose journals two layers built: the second commit waits for the first, then loses typed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      // The first store's commit waits inside its commit until the gate opens.
      const arrived = yield* Deferred.make<void>()
      const gate = yield* Deferred.make<void>()
      let holding = false
      const steps: Array<string> = []
      const gated = Fs.intercept(Fs.node, (step, run) =>
        Effect.suspend(() => {
          // Inside the commit of either protocol: the temp file's fsync, or the creation of the append intent.
          if (holding && ((step.op === "fsync" && step.path.includes(".tmp-")) || step.op === "symlink")) {
            holding = false
            return Effect.zipRight(Effect.zipRight(Deferred.succeed(arrived, undefined), Deferred.await(gate)), run)
          }
          return run
        }))
      const recorded = Fs.intercept(Fs.node, (step, run) => Effect.zipRight(Effect.sync(() => steps.push(step.op)), run))
      const first = yield* SessionStore.create(path).pipe(Effect.provide(FileJournal.layerWithFs(gated)), Effect.provide(Ids.layerDeterministic))
      const second = yield* SessionStore.load(path).pipe(Effect.provide(FileJournal.layerWithFs(recorded)), Effect.provide(Ids.layerDeterministic))
      holding = true
      const committing = yield* Effect.fork(first.append(null, user("m1", "first")))
      yield* Deferred.await(arrived)
      steps.length = 0
      const losing = yield* Effect.fork(second.append(null, user("m2", "second")))
      yield* Effect.sleep("30 millis")
      // Waiting for the lock: not one step of the second commit has run.
      expect(steps).toEqual([])
      expect(losing.unsafePoll()).toBeNull()
      yield* Deferred.succeed(gate, undefined)
      yield* Fiber.join(committing)
      const lost = yield* Effect.either(Fiber.join(losing))
      // After the first commit: the held generation is gone (SESSION_REPLACED), not a marker in the way (SESSION_BUSY).
      expect(Either.isLeft(lost) && lost.left.code).toBe("SESSION_REPLACED")
      expect(steps.length).toBeGreaterThan(0)
      expect(second.entries).toEqual([])
      expect(first.entries.map((e) => messageOf(e)!.id)).toEqual(["m1"])
    }))

  it.scoped("of hundreds of sessions opened and closed one after the other are all forgotten", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => makeTempDir()),
        (d) => Effect.sync(() => NFS.rmSync(d, { recursive: true, force: true }))
      )
      const base = Locks.processLocks().held()
      for (let i = 0; i < 500; i++) {
        const path = Path.join(dir, `s${i}.jsonl`)
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(path)
          yield* store.append(null, { role: "user", id: "m", content: "x" })
          expect(Locks.processLocks().held()).toBe(base + 1)
          yield* Effect.scoped(SessionStore.load(path))
        }))
        yield* Recovery.recover(path)
      }
      expect(Locks.processLocks().held()).toBe(base)
    }).pipe(Effect.provide(FileJournal.layerWithFs()), Effect.provide(Ids.layerDeterministic)))
})

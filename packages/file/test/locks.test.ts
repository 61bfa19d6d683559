/**
 * The in-process lock of a session file (`internal/locks.ts`): one holder at a
 * time, a free lock taken at once, waiters served after the holder whatever
 * happens to it, and a waiter that is interrupted leaves the others waiting on
 * a lock they do get.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import { heldLocks, Lock, lockFor } from "../src/internal/locks.js"
import * as Recovery from "../src/Recovery.js"
import { makeTempDir } from "./fixtures/helpers.js"

/** Runs `n` fibers that each hold the lock across a yield; returns the most that held it at once. */
const contend = (lock: Lock, n: number) =>
  Effect.gen(function*() {
    let inside = 0
    let most = 0
    const holder = lock.withLock(Effect.gen(function*() {
      inside++
      most = Math.max(most, inside)
      yield* Effect.yieldNow()
      yield* Effect.sleep("1 millis")
      inside--
    }))
    yield* Effect.all(Array.from({ length: n }, () => holder), { concurrency: "unbounded", discard: true })
    return most
  })

describe("Lock", () => {
  it.live("lets one fiber at a time hold it, and serves every waiter", () =>
    Effect.gen(function*() {
      expect(yield* contend(new Lock(), 20)).toBe(1)
    }))

  it.effect("a free lock is taken without the fiber suspending", () =>
    Effect.gen(function*() {
      const lock = new Lock()
      // runSync fails on any async step: taking and releasing a free lock has none.
      expect(Effect.runSync(lock.withLock(Effect.succeed(7)))).toBe(7)
      expect(Effect.runSync(lock.withLock(Effect.succeed(8)))).toBe(8)
    }))

  it.live("is released when the holder fails, dies or is interrupted", () =>
    Effect.gen(function*() {
      const lock = new Lock()
      expect(Exit.isFailure(yield* Effect.exit(lock.withLock(Effect.fail("no"))))).toBe(true)
      expect(Exit.isFailure(yield* Effect.exit(lock.withLock(Effect.die("bug"))))).toBe(true)
      const holding = yield* Deferred.make<void>()
      const holder = yield* Effect.fork(lock.withLock(Effect.zipRight(Deferred.succeed(holding, undefined), Effect.never)))
      yield* Deferred.await(holding)
      yield* Fiber.interrupt(holder)
      expect(yield* lock.withLock(Effect.succeed("free"))).toBe("free")
    }))

  it.live("a waiter interrupted while waiting, or just after being woken, leaves the others served", () =>
    Effect.gen(function*() {
      const lock = new Lock()
      const release = yield* Deferred.make<void>()
      const holding = yield* Deferred.make<void>()
      yield* Effect.fork(lock.withLock(Effect.zipRight(Deferred.succeed(holding, undefined), Deferred.await(release))))
      yield* Deferred.await(holding)
      const order: Array<string> = []
      const waiter = (name: string) => lock.withLock(Effect.sync(() => void order.push(name)))
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
      expect(yield* lock.withLock(Effect.succeed("free"))).toBe("free")
    }))
})

describe("the locks of files", () => {
  it.scoped("are shared while held and forgotten once nobody holds them, whatever ends the holding", () =>
    Effect.gen(function*() {
      const base = heldLocks()
      const [a, b] = yield* Effect.scoped(Effect.gen(function*() {
        const a = yield* lockFor("k")
        const b = yield* lockFor("k")
        expect(heldLocks()).toBe(base + 1)
        return [a, b] as const
      }))
      expect(a).toBe(b)
      expect(heldLocks()).toBe(base)
      yield* Effect.exit(Effect.scoped(Effect.zipRight(lockFor("k"), Effect.fail("boom"))))
      expect(heldLocks()).toBe(base)
    }))

  it.scoped("of hundreds of sessions opened and closed one after the other are all forgotten", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => makeTempDir()),
        (d) => Effect.sync(() => NFS.rmSync(d, { recursive: true, force: true }))
      )
      const base = heldLocks()
      for (let i = 0; i < 500; i++) {
        const path = Path.join(dir, `s${i}.jsonl`)
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(path)
          yield* store.append(null, { role: "user", id: "m", content: "x" })
          expect(heldLocks()).toBe(base + 1)
          yield* Effect.scoped(SessionStore.load(path))
        }))
        yield* Recovery.recover(path)
      }
      expect(heldLocks()).toBe(base)
    }).pipe(Effect.provide(FileJournal.layerWithFs()), Effect.provide(Ids.layerDeterministic)))
})

/**
 * Group commit: the generic module with a commit of its own, then the store
 * over the memory journal (with a probe that sees, holds and fails its
 * commits): batching, a failed commit failing exactly its appends, the
 * interruption of a waiting append, and the scope closing with appends queued.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Scope from "effect/Scope"
import * as GroupCommit from "../src/internal/groupCommit.js"
import { type Message, messageOf } from "../src/Record.js"
import { type SessionError, sessionError } from "../src/SessionError.js"
import * as SessionStore from "../src/SessionStore.js"
import { makeProbed } from "./support/journal.js"

/**
 * A commit of numbers that records its batches: a negative number is refused on its own, a
 * batch holding 99 fails as a whole, one holding 98 dies, and the commit waits at `gate` while one is set.
 */
const makeCommit = () => {
  const batches: Array<ReadonlyArray<number>> = []
  let gate: { readonly arrived: Deferred.Deferred<void>; readonly release: Deferred.Deferred<void> } | undefined
  const commit = (batch: ReadonlyArray<number>): Effect.Effect<GroupCommit.Outcomes<number, string>, string> =>
    Effect.suspend(() => {
      batches.push(batch)
      const held = gate
      gate = undefined
      const run = batch.includes(99)
        ? Effect.fail("boom")
        : batch.includes(98)
        ? Effect.die("defect")
        : Effect.succeed(batch.map((n) => (n < 0 ? Exit.fail(`refused ${n}`) : Exit.succeed(n * 10))))
      return held === undefined ? run : Effect.zipRight(Effect.zipRight(Deferred.succeed(held.arrived, undefined), Deferred.await(held.release)), run)
    })
  const hold = Effect.map(Effect.zip(Deferred.make<void>(), Deferred.make<void>()), ([arrived, release]) => (gate = { arrived, release }))
  return { batches, commit, hold }
}

const make = (commit: GroupCommit.Options<number, number, string>["commit"]) => GroupCommit.make({ commit, closed: () => "closed" })

describe("GroupCommit", () => {
  it.scoped("submissions started together share one commit, each with its own outcome", () =>
    Effect.gen(function*() {
      const { batches, commit } = makeCommit()
      const group = yield* make(commit)
      const outcomes = yield* Effect.all([1, -2, 3, 4].map((n) => Effect.either(group.submit(n))), { concurrency: "unbounded" })
      expect(outcomes).toEqual([Either.right(10), Either.left("refused -2"), Either.right(30), Either.right(40)])
      expect(batches).toEqual([[1, -2, 3, 4]])
    }))

  it.scoped("a submission made while no commit is in flight commits on its caller's fiber; one queued behind a commit, on its own", () =>
    Effect.gen(function*() {
      const committers: Array<string> = []
      const { batches, commit, hold } = makeCommit()
      const group = yield* make((batch) =>
        Effect.flatMap(Effect.fiberId, (id) => {
          committers.push(FiberId.threadName(id))
          return commit(batch)
        }))
      const caller = yield* Effect.fiberId
      expect(yield* group.submit(1)).toBe(10)
      expect(committers).toEqual([FiberId.threadName(caller)])
      const held = yield* hold
      const first = yield* Effect.fork(group.submit(2))
      yield* Deferred.await(held.arrived)
      const second = yield* Effect.fork(group.submit(3))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      yield* Deferred.succeed(held.release, undefined)
      expect([yield* Fiber.join(first), yield* Fiber.join(second)]).toEqual([20, 30])
      // No fiber of the group commit's own: each batch ran on the fiber of its first submission.
      expect(committers.slice(1)).toEqual([FiberId.threadName(first.id()), FiberId.threadName(second.id())])
      expect(batches).toEqual([[1], [2], [3]])
    }))

  it.scoped("submissions made while a commit runs wait for it and form the next batch, in order", () =>
    Effect.gen(function*() {
      const { batches, commit, hold } = makeCommit()
      const group = yield* make(commit)
      const held = yield* hold
      const first = yield* Effect.fork(group.submit(1))
      yield* Deferred.await(held.arrived)
      const next = yield* Effect.fork(Effect.all([2, 3, 4].map((n) => group.submit(n)), { concurrency: "unbounded" }))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(batches).toEqual([[1]])
      yield* Deferred.succeed(held.release, undefined)
      expect(yield* Fiber.join(first)).toBe(10)
      expect(yield* Fiber.join(next)).toEqual([20, 30, 40])
      expect(batches).toEqual([[1], [2, 3, 4]])
    }))

  it.scoped("a failed commit fails exactly the submissions of its batch, and the next batch commits", () =>
    Effect.gen(function*() {
      const { batches, commit, hold } = makeCommit()
      const group = yield* make(commit)
      const held = yield* hold
      const first = yield* Effect.fork(group.submit(1))
      yield* Deferred.await(held.arrived)
      const failing = yield* Effect.fork(Effect.all([2, 99].map((n) => Effect.either(group.submit(n))), { concurrency: "unbounded" }))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      yield* Deferred.succeed(held.release, undefined)
      expect(yield* Fiber.join(first)).toBe(10)
      expect(yield* Fiber.join(failing)).toEqual([Either.left("boom"), Either.left("boom")])
      // A defect fails its batch with the defect; the committer goes on.
      const died = yield* Effect.exit(group.submit(98))
      expect(Exit.isFailure(died) && died.cause._tag === "Die").toBe(true)
      expect(yield* group.submit(5)).toBe(50)
      expect(batches).toEqual([[1], [2, 99], [98], [5]])
    }))

  it.scoped("a submission interrupted while queued is withdrawn: its input never reaches the commit", () =>
    Effect.gen(function*() {
      const { batches, commit, hold } = makeCommit()
      const group = yield* make(commit)
      const held = yield* hold
      const first = yield* Effect.fork(group.submit(1))
      yield* Deferred.await(held.arrived)
      const withdrawn = yield* Effect.fork(group.submit(2))
      const kept = yield* Effect.fork(group.submit(3))
      yield* Effect.yieldNow()
      // The interruption does not wait for the commit in flight.
      const exit = yield* Fiber.interrupt(withdrawn)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(batches).toEqual([[1]])
      yield* Deferred.succeed(held.release, undefined)
      expect([yield* Fiber.join(first), yield* Fiber.join(kept)]).toEqual([10, 30])
      expect(batches).toEqual([[1], [3]])
    }))

  it.scoped("a submission interrupted once its batch is taken is committed, and its interruption waits for the commit", () =>
    Effect.gen(function*() {
      const { batches, commit, hold } = makeCommit()
      const group = yield* make(commit)
      const held = yield* hold
      const taken = yield* Effect.fork(group.submit(4))
      yield* Deferred.await(held.arrived)
      const interrupting = yield* Effect.fork(Fiber.interrupt(taken))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(interrupting.unsafePoll()).toBeNull()
      yield* Deferred.succeed(held.release, undefined)
      const exit = yield* Fiber.join(interrupting)
      expect(Exit.isInterrupted(exit)).toBe(true)
      expect(batches).toEqual([[4]])
      // The committer is free again.
      expect(yield* group.submit(5)).toBe(50)
    }))

  it.effect("once the scope closes, queued and new submissions fail and nothing more is committed; the close waits for the commit in flight", () =>
    Effect.gen(function*() {
      const { batches, commit, hold } = makeCommit()
      const scope = yield* Scope.make()
      const group = yield* Scope.extend(make(commit), scope)
      const held = yield* hold
      const first = yield* Effect.fork(group.submit(1))
      yield* Deferred.await(held.arrived)
      const queued = yield* Effect.fork(Effect.all([2, 3].map((n) => Effect.either(group.submit(n))), { concurrency: "unbounded" }))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
      for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
      expect(closing.unsafePoll()).toBeNull()
      expect(yield* group.isClosed).toBe(true)
      yield* Deferred.succeed(held.release, undefined)
      yield* Fiber.join(closing)
      expect(yield* Fiber.join(first)).toBe(10)
      expect(yield* Fiber.join(queued)).toEqual([Either.left("closed"), Either.left("closed")])
      expect(yield* Effect.either(group.submit(4))).toEqual(Either.left("closed"))
      expect(batches).toEqual([[1]])
    }))
})

// ---------------------------------------------------------------------------------------------
// The store's group commit over the memory journal.

const user = (id: string, content: string): Message => ({ role: "user", id, content })
const codeOf = (result: Either.Either<unknown, SessionError>) => (Either.isLeft(result) ? result.left.code : "ok")
const LOCATION = "s"

describe("the store's group commit", () => {
  it.scoped("appends started together share one commit; 50 concurrent appends are all committed, in order, in fewer commits", () =>
    Effect.gen(function*() {
      const { layer, probe, storage } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create(LOCATION)
        const root = yield* store.append(null, user("root", "root"))
        const before = probe.commits
        const together = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) => store.append(root.id, user(`t${i}`, `together ${i}`))),
          { concurrency: "unbounded" }
        )
        expect(probe.commits - before).toBe(1)
        expect(probe.batches[probe.batches.length - 1]).toEqual(together.map((e) => e.id))
        const results = yield* Effect.all(
          Array.from({ length: 50 }, (_, i) => store.append(root.id, user(`m${i}`, `message ${i}`))),
          { concurrency: "unbounded" }
        )
        expect(probe.commits - before - 1).toBeLessThan(50)
        expect(store.entries.slice(9)).toEqual(results)
        for (const r of results) expect(store.get(r.id)).toBe(r)
        expect(results.map((r) => messageOf(r)!.id)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`))
        expect((yield* SessionStore.read(LOCATION)).entries).toEqual(store.entries)
        expect(storage.get(LOCATION)!.length).toBe(1 + 1 + 8 + 50)
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("a batch queued behind a commit is checked in order against the growing history, and a failed commit fails exactly its appends", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create(LOCATION)
        const root = yield* store.append(null, user("m0", "root"))
        const { fiber: first, release } = yield* probe.forkHeld(store.append(root.id, user("m1", "first")))
        // The batch behind it fails at the backend.
        probe.failNext(sessionError("SESSION_IO", "the disk failed"))
        // Deterministic IDs: the first append takes entry-002, the batch's accepted ones entry-003 and entry-004.
        const batch = yield* Effect.fork(Effect.all([
          Effect.either(store.append("entry-002", user("b1", "on first"))),
          Effect.either(store.append("entry-003", user("b2", "on the batch's first"))),
          Effect.either(store.append("nowhere", user("b3", "unknown parent"))),
          Effect.either(store.append("entry-004", user("b4", "on the batch's second")))
        ], { concurrency: "unbounded" }))
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
        yield* release
        const firstEntry = yield* Fiber.join(first)
        // b2 and b4 name parents that exist only in the batch: accepted, then failed with the commit.
        expect((yield* Fiber.join(batch)).map(codeOf)).toEqual(["SESSION_IO", "SESSION_IO", "SESSION_UNKNOWN_PARENT", "SESSION_IO"])
        expect(probe.batches.slice(-2)).toEqual([["entry-002"], ["entry-003", "entry-004", "entry-005"]])
        expect(firstEntry.id).toBe("entry-002")
        expect(store.entries.map((e) => e.id)).toEqual([root.id, firstEntry.id])
        expect(store.get("entry-003")).toBeUndefined()
        expect((yield* SessionStore.read(LOCATION)).entries).toEqual(store.entries)
        // Nothing of the failed batch is left in the history: its IDs' parents are unknown again.
        expect(codeOf(yield* Effect.either(store.append("entry-003", user("c1", "late"))))).toBe("SESSION_UNKNOWN_PARENT")
        const after = yield* store.append(firstEntry.id, user("c2", "after"))
        expect(store.entries.map((e) => e.id)).toEqual([root.id, firstEntry.id, after.id])
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("memory changes only after the commit: entries and get stay old while the commit is in flight", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create(LOCATION)
        const first = yield* store.append(null, user("m1", "one"))
        const before = store.entries
        const { fiber, release } = yield* probe.forkHeld(store.append(first.id, user("m2", "two")))
        expect(store.get("entry-002")).toBeUndefined()
        expect(store.entries).toBe(before)
        yield* release
        const second = yield* Fiber.join(fiber)
        expect(second.id).toBe("entry-002")
        expect(store.get("entry-002")).toBe(second)
        expect(store.entries).toEqual([first, second])
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("an append interrupted while queued commits nothing; one interrupted once its batch is handed over is committed", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create(LOCATION)
        const root = yield* store.append(null, user("m0", "root"))
        const { fiber: inFlight, release } = yield* probe.forkHeld(store.append(root.id, user("m1", "in flight")))
        const queued = yield* Effect.fork(store.append(root.id, user("m2", "queued")))
        yield* Effect.yieldNow()
        expect(Exit.isInterrupted(yield* Fiber.interrupt(queued))).toBe(true)
        const interrupting = yield* Effect.fork(Fiber.interrupt(inFlight))
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
        expect(interrupting.unsafePoll()).toBeNull()
        yield* release
        expect(Exit.isInterrupted(yield* Fiber.join(interrupting))).toBe(true)
        // The handed-over append is committed; the queued one never reached the backend.
        expect(store.entries.map((e) => messageOf(e)!.id)).toEqual(["m0", "m1"])
        expect((yield* SessionStore.read(LOCATION)).entries).toEqual(store.entries)
        expect(probe.batches.slice(-1)).toEqual([["entry-002"]])
        const next = yield* store.append(root.id, user("m3", "next"))
        expect(next.id).toBe("entry-003")
      }).pipe(Effect.provide(layer))
    }))

  it.effect("the scope closing with appends queued: they fail with SESSION_IO, and nothing commits after the one in flight", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const scope = yield* Scope.make()
        const store = yield* Scope.extend(SessionStore.create(LOCATION), scope)
        const root = yield* store.append(null, user("m0", "root"))
        const { fiber: inFlight, release } = yield* probe.forkHeld(store.append(root.id, user("m1", "in flight")))
        const queued = yield* Effect.fork(Effect.all([
          Effect.either(store.append(root.id, user("m2", "queued"))),
          Effect.either(store.flush)
        ], { concurrency: "unbounded" }))
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
        const closing = yield* Effect.fork(Scope.close(scope, Exit.void))
        for (let i = 0; i < 5; i++) yield* Effect.yieldNow()
        yield* release
        yield* Fiber.join(closing)
        expect(messageOf(yield* Fiber.join(inFlight))!.id).toBe("m1")
        const outcomes: ReadonlyArray<Either.Either<unknown, SessionError>> = yield* Fiber.join(queued)
        expect(outcomes.map(codeOf)).toEqual(["SESSION_IO", "SESSION_IO"])
        for (const outcome of outcomes) expect(Either.isLeft(outcome) && outcome.left.reason).toBe("the store's scope is closed")
        const commits = probe.commits
        const late = [
          yield* Effect.either(store.append(root.id, user("m3", "late"))),
          yield* Effect.either(store.append(root.id, { role: "nobody" })),
          yield* Effect.either(store.flush)
        ]
        expect(late.map(codeOf)).toEqual(["SESSION_IO", "SESSION_IO", "SESSION_IO"])
        expect(probe.commits).toBe(commits)
        expect((yield* SessionStore.read(LOCATION)).entries.map((e) => messageOf(e)!.id)).toEqual(["m0", "m1"])
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("SESSION_ROLLBACK_FAILED locks the store: later appends and flushes fail with it and reach no backend", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create(LOCATION)
        const root = yield* store.append(null, user("m0", "root"))
        probe.failNext(sessionError("SESSION_ROLLBACK_FAILED", "the rollback failed"))
        expect(codeOf(yield* Effect.either(store.append(root.id, user("m1", "lost"))))).toBe("SESSION_ROLLBACK_FAILED")
        const commits = probe.commits
        const after = [
          yield* Effect.either(store.append(root.id, user("m2", "after"))),
          yield* Effect.either(store.append(root.id, { role: "nobody" })),
          yield* Effect.either(store.flush)
        ]
        expect(after.map(codeOf)).toEqual(["SESSION_ROLLBACK_FAILED", "SESSION_ROLLBACK_FAILED", "SESSION_ROLLBACK_FAILED"])
        expect(probe.commits).toBe(commits)
        expect(store.entries).toEqual([root])
      }).pipe(Effect.provide(layer))
    }))
})

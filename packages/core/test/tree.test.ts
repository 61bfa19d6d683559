/**
 * SessionTree over a store on the memory journal: the leaf, the projections,
 * the order of tree operations under concurrency and interruption, and a
 * property test that the projection and a reload agree with a model computed
 * from `entries` alone. Time comes from TestClock, IDs from `Ids.layerDeterministic`.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import type { Entry, Message, SessionEntry } from "../src/Record.js"
import type { SessionError } from "../src/SessionError.js"
import * as SessionStore from "../src/SessionStore.js"
import * as SessionTree from "../src/SessionTree.js"
import * as V1 from "@session-tree/testing/Version1"
import { makeProbed, type Probe } from "./support/journal.js"

const user = (content: string): Message => ({ role: "user", id: `m-${content}`, content })
const pad = (n: number) => String(n).padStart(3, "0")

const path = "session"

/** A new session and a tree over it. */
const fresh = Effect.gen(function*() {
  const store = yield* SessionStore.create(path, { version: 1 })
  const tree = yield* SessionTree.make(store)
  return { path, store, tree }
})

/** Runs `test` over a memory journal of its own, with the probe that can hold its next commit. */
const withJournal = <A, E, R>(test: (probe: Probe) => Effect.Effect<A, E, R>) =>
  Effect.suspend(() => {
    const { layer, probe } = makeProbed()
    return Effect.provide(test(probe), layer)
  })

/** The root-to-`leaf` path computed from the entry list alone. */
const modelPath = (entries: ReadonlyArray<SessionEntry>, leaf: string | null): ReadonlyArray<SessionEntry> => {
  const byId = new Map(entries.map((e) => [e.id, e]))
  const path: Array<SessionEntry> = []
  for (let id = leaf; id !== null;) {
    const entry = byId.get(id)!
    path.unshift(entry)
    id = entry.parentId
  }
  return path
}

describe("SessionTree", () => {
  it.scoped("starts at the newest entry after a load, and at null on an empty session", () =>
    withJournal(() => Effect.gen(function*() {
      const { path, store, tree } = yield* fresh
      expect(tree.activeLeafId).toBeNull()
      expect(tree.activeEntries).toEqual([])
      const root = yield* tree.append(user("root"))
      yield* tree.append(user("a"))
      yield* tree.moveTo(root.id)
      const b = yield* tree.append(user("b"))
      yield* tree.moveTo(null)
      const loaded = yield* SessionStore.load(path)
      const reloaded = yield* SessionTree.make(loaded)
      // The newest entry in commit order, not the leaf the first tree had moved to.
      expect(reloaded.activeLeafId).toBe(b.id)
      expect(reloaded.activeMessages.map((m) => m.content)).toEqual(["root", "b"])
      expect(reloaded.entries).toEqual(store.entries)
    })))

  it.scoped("timestamps come from the Clock and parents from the leaf", () =>
    withJournal(() => Effect.gen(function*() {
      const { tree } = yield* fresh
      const a = yield* tree.append(user("a"))
      yield* TestClock.adjust("1500 millis")
      const b = yield* tree.append(user("b"))
      expect([a.timestamp, b.timestamp]).toEqual(["1970-01-01T00:00:00.000Z", "1970-01-01T00:00:01.500Z"])
      expect([a.id, a.parentId, b.id, b.parentId]).toEqual(["entry-001", null, "entry-002", "entry-001"])
    })))

  it.scoped("children, leaves and pathTo navigate every branch", () =>
    withJournal(() => Effect.gen(function*() {
      const { tree } = yield* fresh
      const r = yield* tree.append(user("r"))
      const a = yield* tree.append(user("a"))
      yield* tree.moveTo(r.id)
      const b = yield* tree.append(user("b"))
      yield* tree.moveTo(null)
      const s = yield* tree.append(user("s"))
      expect(tree.children(null)).toEqual([r, s])
      expect(tree.children(r.id)).toEqual([a, b])
      expect(tree.children(a.id)).toEqual([])
      expect(tree.leaves).toEqual([a, b, s])
      expect(tree.pathTo(b.id)).toEqual([r, b])
      expect(tree.pathTo("entry-404")).toEqual([])
      expect(Object.isFrozen(tree.pathTo(b.id))).toBe(true)
      expect(Object.isFrozen(tree.children(r.id))).toBe(true)
    })))

  it.scoped("an operation interrupted while it waits keeps the order of the ones after it", () =>
    withJournal((probe) => Effect.gen(function*() {
      const { tree } = yield* fresh
      const root = yield* tree.append(user("root"))
      const { fiber: first, release } = yield* probe.forkHeld(tree.append(user("first")))
      const waiting = yield* Effect.fork(tree.moveTo(null))
      const last = yield* Effect.fork(tree.append(user("last")))
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(waiting)
      yield* release
      const a = yield* Fiber.join(first)
      const b = yield* Fiber.join(last)
      expect(a.parentId).toBe(root.id)
      // The interrupted moveTo(null) never ran, and `last` waited for `first`.
      expect(b.parentId).toBe(a.id)
      expect(tree.activeLeafId).toBe(b.id)
    })))

  it.scoped("an entry whose commit is still in flight is not in the tree yet", () =>
    withJournal((probe) => Effect.gen(function*() {
      const { store, tree } = yield* fresh
      const root = yield* tree.append(user("root"))
      const { fiber: pending, release } = yield* probe.forkHeld(store.append(root.id, user("pending")))
      // entry-002 is built and being committed, but not durable: the tree refuses it.
      const refused = yield* Effect.flip(tree.moveTo("entry-002"))
      expect(refused.code).toBe("SESSION_UNKNOWN_ENTRY")
      expect(tree.pathTo("entry-002")).toEqual([])
      yield* release
      const entry = yield* Fiber.join(pending)
      yield* tree.moveTo(entry.id)
      expect(tree.activeEntries).toEqual([root, entry])
    })))

  it.scoped("append snapshots its message when called, before waiting for its turn", () =>
    withJournal((probe) => Effect.gen(function*() {
      const { tree } = yield* fresh
      yield* tree.append(user("root"))
      const { fiber: first, release } = yield* probe.forkHeld(tree.append(user("first")))
      const message = { role: "user", id: "m", content: "as called" }
      const second = yield* Effect.fork(tree.append(message))
      yield* Effect.yieldNow()
      message.content = "changed while waiting"
      yield* release
      yield* Fiber.join(first)
      const entry = yield* Fiber.join(second)
      expect(V1.entry(entry).message).toEqual({ role: "user", id: "m", content: "as called" })
    })))
})

// ---------------------------------------------------------------------------------------------
// Random operation sequences against a sequential model.

type Op =
  | { readonly kind: "append"; readonly text: string }
  /** Move to the n-th entry appended so far (1-based), to null, or (n = 0) to an ID that does not exist. */
  | { readonly kind: "move"; readonly target: number | null }

const opArb: FastCheck.Arbitrary<Op> = FastCheck.oneof(
  FastCheck.record({ kind: FastCheck.constant("append" as const), text: FastCheck.string({ maxLength: 6 }) }),
  FastCheck.record({
    kind: FastCheck.constant("move" as const),
    target: FastCheck.oneof(FastCheck.constant(null), FastCheck.integer({ min: 0, max: 12 }))
  })
)

/** The ID a move targets: deterministic IDs let a move name an entry an earlier op of the same batch appends. */
const targetId = (op: Extract<Op, { kind: "move" }>, appendedBefore: number): string | null =>
  op.target === null ? null : op.target === 0 || appendedBefore === 0 ? "entry-404" : `entry-${pad(1 + ((op.target - 1) % appendedBefore))}`

interface Outcome {
  readonly appended: ReadonlyArray<readonly [string, string | null]>
  readonly refused: number
  readonly leaf: string | null
}

/** What a strictly sequential tree would do. */
const model = (ops: ReadonlyArray<Op>): Outcome => {
  const appended: Array<readonly [string, string | null]> = []
  let refused = 0
  let leaf: string | null = null
  for (const op of ops) {
    if (op.kind === "append") {
      const id = `entry-${pad(appended.length + 1)}`
      appended.push([id, leaf])
      leaf = id
    } else {
      const id = targetId(op, appended.length)
      if (id === "entry-404") refused++
      else leaf = id
    }
  }
  return { appended, refused, leaf }
}

const withJournalOf = <A, E, R>(test: Effect.Effect<A, E, R>) => withJournal(() => test)

const toEffects = (tree: SessionTree.SessionTree, ops: ReadonlyArray<Op>) => {
  let appendedBefore = 0
  return ops.map((op): Effect.Effect<Either.Either<Entry | void, SessionError>> => {
    if (op.kind === "append") {
      appendedBefore++
      return Effect.either(tree.append(user(op.text)))
    }
    return Effect.either(tree.moveTo(targetId(op, appendedBefore)))
  })
}

const outcomeOf = (tree: SessionTree.SessionTree, results: ReadonlyArray<Either.Either<Entry | void, SessionError>>): Outcome => ({
  appended: results.flatMap((r) => (Either.isRight(r) && r.right !== undefined ? [[r.right.id, r.right.parentId] as const] : [])),
  refused: results.filter((r) => Either.isLeft(r) && r.left.code === "SESSION_UNKNOWN_ENTRY").length,
  leaf: tree.activeLeafId
})

/** The projection equals the model path computed from `entries`, and a reload reproduces `entries` exactly. */
const checkAgainstEntries = (path: string, tree: SessionTree.SessionTree) =>
  Effect.gen(function*() {
    const expected = modelPath(V1.entries(tree.entries), tree.activeLeafId)
    expect(tree.activeEntries).toEqual(expected)
    tree.activeEntries.forEach((e, i) => expect(e).toBe(expected[i]))
    expect(tree.activeMessages).toEqual(expected.map((e) => e.message))
    expect(tree.leaves.map((e) => e.id)).toEqual(
      tree.entries.filter((e) => !tree.entries.some((c) => c.parentId === e.id)).map((e) => e.id)
    )
    const loaded = yield* SessionStore.read(path)
    expect(loaded.entries).toEqual(tree.entries)
    expect(JSON.stringify(loaded.entries)).toBe(JSON.stringify(tree.entries))
    expect(loaded.tail).toBe("none")
  })

describe("SessionTree against a sequential model", () => {
  it.effect.prop(
    "operations run one by one: activeMessages is the path from entries, and a reload gives the same entries",
    [FastCheck.array(opArb, { minLength: 1, maxLength: 14 })],
    ([ops]) =>
      Effect.gen(function*() {
        const { path, tree } = yield* fresh
        const results: Array<Either.Either<Entry | void, SessionError>> = []
        for (const effect of toEffects(tree, ops)) {
          results.push(yield* effect)
          yield* TestClock.adjust("1 second")
          yield* checkAgainstEntries(path, tree)
        }
        expect(outcomeOf(tree, results)).toEqual(model(ops))
      }).pipe(Effect.scoped, withJournalOf),
    { fastCheck: { numRuns: 25 } }
  )

  it.effect.prop(
    "operations started together (Effect.all, unbounded concurrency) behave as if run in start order",
    [FastCheck.array(opArb, { minLength: 2, maxLength: 16 })],
    ([ops]) =>
      Effect.gen(function*() {
        const { path, tree } = yield* fresh
        const results = yield* Effect.all(toEffects(tree, ops), { concurrency: "unbounded" })
        expect(outcomeOf(tree, results)).toEqual(model(ops))
        yield* checkAgainstEntries(path, tree)
      }).pipe(Effect.scoped, withJournalOf),
    { fastCheck: { numRuns: 25 } }
  )
})

describe("pure navigation", () => {
  const entry = (id: string, parentId: string | null): SessionEntry => ({
    type: "entry",
    version: 1,
    id,
    parentId,
    timestamp: "2026-01-02T03:04:05.006Z",
    message: user(id)
  })
  const list = Object.freeze([entry("a", null), entry("b", "a"), entry("c", "a"), entry("d", "c"), entry("e", null)])

  it("pathTo, childrenOf and leavesOf follow parent links in commit order", () => {
    expect(SessionTree.pathTo(list, "d").map((e) => e.id)).toEqual(["a", "c", "d"])
    expect(SessionTree.pathTo(list, "x")).toEqual([])
    expect(SessionTree.childrenOf(list, "a").map((e) => e.id)).toEqual(["b", "c"])
    expect(SessionTree.childrenOf(list, null).map((e) => e.id)).toEqual(["a", "e"])
    expect(SessionTree.childrenOf(list, "x")).toEqual([])
    expect(SessionTree.leavesOf(list).map((e) => e.id)).toEqual(["b", "d", "e"])
  })

  it("answers for a frozen list are computed once; other lists are read afresh", () => {
    expect(SessionTree.leavesOf(list)).toBe(SessionTree.leavesOf(list))
    const mutable = [entry("a", null)]
    expect(SessionTree.leavesOf(mutable).map((e) => e.id)).toEqual(["a"])
    mutable.push(entry("b", "a"))
    expect(SessionTree.leavesOf(mutable).map((e) => e.id)).toEqual(["b"])
  })

  it("an index is the same navigation as a value: built once, answering every question about its list", () => {
    const navigation = SessionTree.index(list)
    expect(navigation.entries).toBe(list)
    expect(navigation.pathTo("d").map((e) => e.id)).toEqual(["a", "c", "d"])
    expect(navigation.children("a").map((e) => e.id)).toEqual(["b", "c"])
    expect(navigation.children(null).map((e) => e.id)).toEqual(["a", "e"])
    expect(navigation.leaves.map((e) => e.id)).toEqual(["b", "d", "e"])
    expect(navigation.get("c")?.parentId).toBe("a")
    expect(navigation.get("x")).toBeUndefined()
    // It answers for the list it was built from: a list that changes afterwards needs a new one.
    const mutable = [entry("a", null)]
    const before = SessionTree.index(mutable)
    mutable.push(entry("b", "a"))
    expect([before.leaves.map((e) => e.id), SessionTree.index(mutable).leaves.map((e) => e.id)]).toEqual([["a"], ["b"]])
  })

  it("a list that is not in commit order cannot make pathTo loop", () => {
    const cyclic = [entry("a", "b"), entry("b", "a")]
    expect(SessionTree.pathTo(cyclic, "a")).toEqual([])
    expect(SessionTree.pathTo([entry("a", "missing")], "a")).toEqual([])
  })
})

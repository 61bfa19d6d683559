/**
 * What an append does with its input before it is queued: checked and copied
 * without running caller code (getters, proxies, class instances, cycles and
 * anything JSON cannot carry are refused, and nothing is committed), measured
 * as JSON measures it, and frozen, so that a later change to the input never
 * reaches the entry. Over the memory journal, with deterministic IDs.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as TestClock from "effect/TestClock"
import { type SessionError, sessionError } from "../src/SessionError.js"
import * as SessionStore from "../src/SessionStore.js"
import * as V1 from "@session-tree/testing/Version1"
import { makeProbed } from "./support/journal.js"

const path = "s"
const T = "2026-01-02T03:04:05.006Z"
const atT = TestClock.setTime(Date.parse(T))
const user = (id: string, content: string) => ({ role: "user", id, content })
const codeOf = (result: Either.Either<unknown, SessionError>) => (Either.isLeft(result) ? result.left.code : "ok")

describe("create", () => {
  it.scoped("a refused append uses up no entry ID", () => {
    const { layer } = makeProbed()
    return Effect.gen(function*() {
      yield* atT
      const store = yield* SessionStore.create(path, { version: 1 })
      const root = yield* store.append(null, user("m1", "root"))
      const orphan = { role: "tool", id: "m2", toolCallId: "c1", toolName: "ls", content: "", isError: false }
      expect(codeOf(yield* Effect.either(store.append(root.id, orphan)))).toBe("SESSION_TOOL_LINK")
      expect(codeOf(yield* Effect.either(store.append("nope", user("m3", "x"))))).toBe("SESSION_UNKNOWN_PARENT")
      const next = yield* store.append(root.id, user("m4", "next"))
      expect([root.id, next.id]).toEqual(["entry-001", "entry-002"])
    }).pipe(Effect.provide(layer))
  })
})

describe("prepared appends", () => {
  it.scoped("are checked and copied when prepared, committed under the parent given later, and only by their own store", () => {
    const { layer, probe } = makeProbed()
    return Effect.gen(function*() {
      yield* atT
      const store = yield* SessionStore.create(path)
      const other = yield* SessionStore.create("other")
      const root = yield* store.append(null, user("m1", "root"))
      const message = { role: "user", id: "m2", content: "before" }
      const prepared = Either.getOrThrow(store.prepareMessage(message))
      // A change after the preparation never reaches the entry; nothing was committed yet.
      message.content = "after"
      const commits = probe.commits
      const entry = yield* store.appendPrepared(root.id, prepared)
      expect(probe.commits).toBe(commits + 1)
      expect([entry.parentId, JSON.stringify(entry)]).toEqual([root.id, expect.stringContaining("before")])
      // Committed again, it is a new entry, under the parent given then.
      const again = yield* store.appendPrepared(entry.id, prepared)
      expect([again.parentId, again.id === entry.id]).toEqual([entry.id, false])
      // A refusal of the input is known when preparing; a parent when committing.
      expect(Either.isLeft(store.prepareMessage({ role: "nobody" }))).toBe(true)
      expect(codeOf(yield* Effect.either(store.appendPrepared("nowhere", prepared)))).toBe("SESSION_UNKNOWN_PARENT")
      // Another store's preparation is refused, and nothing is committed.
      const foreign = Either.getOrThrow(other.prepareMessage(user("m3", "elsewhere")))
      expect(codeOf(yield* Effect.either(store.appendPrepared(root.id, foreign)))).toBe("SESSION_INVALID_OPTIONS")
      const chain = Either.getOrThrow(store.prepareChain([{ kind: "title", title: "t" }, { kind: "label", targetId: root.id, label: "l" }]))
      const added = yield* store.appendPrepared(root.id, chain)
      expect(added.map((e) => e.parentId)).toEqual([root.id, added[0]!.id])
      expect(store.entries.length).toBe(5)
    }).pipe(Effect.provide(layer))
  })
})

describe("the canonical lines a batch brings its backend", () => {
  it.scoped("come only after loading lines spelled otherwise, with every batch until one commits", () => {
    const { layer, probe, storage } = makeProbed()
    return Effect.gen(function*() {
      yield* atT
      const created = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        yield* store.append(null, user("m1", "caf\u00e9 1.0"))
        return store.entries
      }))
      // Created and committed through the store: no batch brought canonical lines.
      expect(probe.canonical).toEqual([undefined])
      const canonical = storage.get(path)!
      // The same records, spelled otherwise: whitespace and an escape.
      storage.set(path, [canonical[0]!, ` ${canonical[1]!.replace("é", "\\u00e9")}`])
      const store = yield* SessionStore.load(path)
      expect(store.entries).toEqual(created)
      probe.failNext(sessionError("SESSION_IO", "the disk is gone"))
      expect(codeOf(yield* Effect.either(store.append(created[0]!.id, user("m2", "fails"))))).toBe("SESSION_IO")
      expect(codeOf(yield* Effect.either(store.flush))).toBe("ok")
      yield* store.append(created[0]!.id, user("m3", "after"))
      yield* store.flush
      // The failed batch and the flush after it brought them; the flush committed, so nothing after it does.
      expect(probe.canonical.slice(1)).toEqual([canonical, canonical, undefined, undefined])
      // The memory journal keeps lines as they were written, so a load of them brings them again.
      const stored = storage.get(path)!
      yield* (yield* SessionStore.load(path)).flush
      expect(probe.canonical.at(-1)).toEqual([canonical[0], canonical[1], stored[2]])
      // Lines loaded as they are spelled canonically bring nothing.
      storage.set(path, canonical)
      const again = yield* SessionStore.load(path)
      yield* again.append(created[0]!.id, user("m4", "again"))
      expect(probe.canonical.at(-1)).toBeUndefined()
    }).pipe(Effect.provide(layer))
  })
})

describe("append snapshots its input before queueing, without running caller code", () => {
  let calls = 0
  const count = () => void calls++
  const getter = <T>(value: T) => ({
    enumerable: true,
    get() {
      count()
      throw new Error("a getter was called")
      return value
    }
  })
  const trapAll = <T extends object>(target: T): T =>
    new Proxy(target, {
      get: (t, k, r) => (count(), Reflect.get(t, k, r)),
      getOwnPropertyDescriptor: (t, k) => (count(), Reflect.getOwnPropertyDescriptor(t, k)),
      ownKeys: (t) => (count(), Reflect.ownKeys(t)),
      getPrototypeOf: (t) => (count(), Reflect.getPrototypeOf(t)),
      has: (t, k) => (count(), Reflect.has(t, k))
    })
  const call = (args: unknown) => ({
    role: "assistant",
    id: "a1",
    content: "",
    toolCalls: [{ id: "c1", name: "tool", arguments: args }]
  })
  class UserMessage {
    role = "user"
    id = "m1"
    content = "class"
  }
  const sparse: Array<number> = [1, 2, 3]
  delete sparse[1]
  const cyclic: Record<string, unknown> = { a: 1 }
  cyclic["self"] = cyclic
  const deepCycle: Record<string, unknown> = { inner: { list: [] as Array<unknown> } }
  ;((deepCycle["inner"] as { list: Array<unknown> }).list).push(deepCycle)
  const revocable = Proxy.revocable({ role: "user", id: "m1", content: "x" }, {})
  revocable.revoke()
  const withExtraArrayKey = Object.assign([1, 2], { extra: true })

  const cases: ReadonlyArray<readonly [string, () => unknown]> = [
    ["a getter on the message", () => Object.defineProperty({ role: "user", id: "m1" }, "content", getter("x"))],
    ["a getter deep in the arguments", () => call({ nested: Object.defineProperty({}, "g", getter(1)) })],
    ["a getter on an array index", () => call({ list: Object.defineProperty([0, 0], 1, getter(1)) })],
    ["a Proxy as the message", () => trapAll({ role: "user", id: "m1", content: "x" })],
    ["a Proxy deep in the arguments", () => call({ nested: trapAll({ a: 1 }) })],
    ["a Proxy as the tool-call array", () => ({ role: "assistant", id: "a1", content: "", toolCalls: trapAll([]) })],
    ["a revoked Proxy", () => revocable.proxy],
    ["a class instance as the message", () => new UserMessage()],
    ["a Date in the arguments", () => call({ when: new Date(0) })],
    ["a Map in the arguments", () => call({ map: new Map([["a", 1]]) })],
    ["a cycle", () => call(cyclic)],
    ["a cycle through an array", () => call(deepCycle)],
    ["a symbol key", () => call({ [Symbol("s")]: 1 })],
    ["a symbol value", () => call({ s: Symbol("s") })],
    ["NaN", () => call({ n: NaN })],
    ["Infinity", () => call({ n: Infinity })],
    ["-Infinity", () => call({ n: -Infinity })],
    ["an undefined value", () => call({ u: undefined })],
    ["an undefined field of the message", () => ({ role: "user", id: "m1", content: undefined })],
    ["a sparse array", () => call({ list: sparse })],
    ["an array with an extra property", () => call({ list: withExtraArrayKey })],
    ["a bigint", () => call({ n: 1n })],
    ["a function", () => call({ f: () => 1 })],
    ["a non-enumerable property", () => Object.defineProperty({ role: "user", id: "m1" }, "content", { value: "x" })],
    ["an extra field", () => ({ role: "user", id: "m1", content: "x", extra: 1 })]
  ]

  for (const [name, make] of cases) {
    it.scoped(`refuses ${name}: SESSION_INVALID_MESSAGE, no call, nothing written`, () =>
      Effect.gen(function*() {
        const { layer, probe, storage } = makeProbed()
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.create(path, { version: 1 })
          const first = yield* store.append(null, user("m0", "kept"))
          const before = { lines: storage.get(path), commits: probe.commits, entries: store.entries }
          const input = make()
          calls = 0
          const result = yield* Effect.either(store.append(first.id, input))
          expect(probe.commits).toBe(before.commits)
          expect(calls).toBe(0)
          expect(codeOf(result)).toBe("SESSION_INVALID_MESSAGE")
          expect(store.entries).toBe(before.entries)
          expect(storage.get(path)).toBe(before.lines)
          // The store still appends.
          yield* store.append(first.id, user("m2", "after"))
          expect(store.entries.length).toBe(2)
        }).pipe(Effect.provide(layer))
      }))
  }

  it.scoped("accepts null-prototype objects and values shared (not cyclic) between places", () => {
    const { layer: layerMemory } = makeProbed()
    return Effect.gen(function*() {
      const store = yield* SessionStore.create(path, { version: 1 })
      const shared = { k: [1, 2] }
      const bare = Object.assign(Object.create(null) as Record<string, unknown>, { role: "user", id: "m1", content: "bare" })
      yield* store.append(null, bare)
      const e = yield* store.append(null, {
        role: "assistant",
        id: "a1",
        content: "",
        toolCalls: [{ id: "c1", name: "t", arguments: { a: shared, b: shared } }]
      })
      const args = (V1.entry(e).message as unknown as { toolCalls: Array<{ arguments: { a: unknown; b: unknown } }> }).toolCalls[0]!
        .arguments
      expect(args).toEqual({ a: { k: [1, 2] }, b: { k: [1, 2] } })
      expect(args.a).not.toBe(shared)
    }).pipe(Effect.provide(layerMemory))
  })

  it.scoped("measures size as JSON does: a long array well under the line cap is accepted, one over it is not", () => {
    const { layer: layerMemory, storage } = makeProbed()
    return Effect.gen(function*() {
      const store = yield* SessionStore.create(path, { version: 1 })
      const withList = (list: Array<unknown>) => ({
        role: "assistant",
        id: "a1",
        content: "",
        toolCalls: [{ id: "c1", name: "t", arguments: { list } }]
      })
      // 15,000 one-digit numbers and 4,000 booleans: about 50 KB of JSON.
      const fits = withList([...Array.from({ length: 15_000 }, () => 0), ...Array.from({ length: 4_000 }, () => true)])
      const entry = yield* store.append(null, fits)
      const line = storage.get(path)![1]!
      expect(Buffer.byteLength(line)).toBeLessThan(65_536)
      expect(store.entries).toEqual([entry])
      const over = withList(Array.from({ length: 40_000 }, () => 0))
      expect(codeOf(yield* Effect.either(store.append(null, over)))).toBe("SESSION_LINE_TOO_LONG")
      expect(store.entries).toEqual([entry])
    }).pipe(Effect.provide(layerMemory))
  })

  it.scoped("a change to the input after append (or after the call, before it runs) never reaches the entry", () => {
    const { layer: layerMemory, storage } = makeProbed()
    return Effect.gen(function*() {
      yield* atT
      const store = yield* SessionStore.create(path, { version: 1 })
      const input = {
        role: "assistant",
        id: "a1",
        content: "original",
        toolCalls: [{ id: "c1", name: "t", arguments: { list: [1, { deep: "x" }] } }]
      }
      const entry = yield* store.append(null, input)
      const lines = storage.get(path)
      input.content = "changed"
      input.toolCalls[0]!.arguments.list.push(3)
      ;(input.toolCalls[0]!.arguments.list[1] as { deep: string }).deep = "changed"
      input.toolCalls.push({ id: "c2", name: "t", arguments: { list: [] } })
      const expected = {
        role: "assistant",
        id: "a1",
        content: "original",
        toolCalls: [{ id: "c1", name: "t", arguments: { list: [1, { deep: "x" }] } }]
      }
      expect(V1.entry(entry).message).toEqual(expected)
      expect(store.entries[0]).toBe(entry)
      expect(storage.get(path)).toBe(lines)
      expect(V1.entry((yield* SessionStore.read(path)).entries[0]!).message).toEqual(expected)

      const later = { role: "user", id: "m2", content: "at the call" }
      const pending = store.append(entry.id, later)
      later.content = "after the call"
      expect(V1.entry(yield* pending).message).toEqual({ role: "user", id: "m2", content: "at the call" })
    }).pipe(Effect.provide(layerMemory))
  })

  it.scoped("entries are deeply frozen, and the resolved entry is the one in entries and get", () => {
    const { layer: layerMemory } = makeProbed()
    return Effect.gen(function*() {
      const store = yield* SessionStore.create(path, { version: 1 })
      const entry = yield* store.append(null, {
        role: "assistant",
        id: "a1",
        content: "",
        toolCalls: [{ id: "c1", name: "t", arguments: { list: [{ deep: [1] }] } }]
      })
      const objects: Array<unknown> = []
      const walk = (v: unknown) => {
        if (typeof v === "object" && v !== null) {
          objects.push(v)
          for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k])
        }
      }
      walk(entry)
      // entry, message, toolCalls, the call, arguments, list, { deep }, deep
      expect(objects.length).toBe(8)
      for (const o of objects) expect(Object.isFrozen(o)).toBe(true)
      expect(Object.isFrozen(store.entries)).toBe(true)
      expect(() => {
        ;(V1.entry(entry).message as { content: string }).content = "x"
      }).toThrow(TypeError)
      expect(store.entries[0]).toBe(entry)
      expect(store.get(entry.id)).toBe(entry)
    }).pipe(Effect.provide(layerMemory))
  })
})


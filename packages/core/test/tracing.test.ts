/**
 * Spans: every public operation of the store, the tree and the memory backend runs in a span
 * named after it, carrying its session, its batch's size where it has one and its outcome (its
 * error's code when it fails), as a tracer provided by the caller receives them.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Ids from "../src/Ids.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import * as SessionStore from "../src/SessionStore.js"
import * as SessionTree from "../src/SessionTree.js"
import { BATCH_SIZE, OUTCOME, SESSION } from "../src/Tracing.js"
import { type Recorded, recording } from "@session-tree/testing/Spans"

const user = (id: string, content: string) => ({ role: "user", id, content })

/** A span's attributes of the library, as one record. */
const ours = (span: Recorded) => ({
  name: span.name,
  session: span.attributes.get(SESSION),
  batch: span.attributes.get(BATCH_SIZE),
  outcome: span.attributes.get(OUTCOME),
  ended: span.ended
})

describe("spans", () => {
  it.scoped("name each public operation, its session, its batch's size and its outcome, as the caller's tracer receives them", () => {
    const { layer, spans } = recording()
    return Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const root = yield* store.append(null, user("m1", "root"))
      // A refused append: its span ends with the refusal's code.
      expect(Either.isLeft(yield* Effect.either(store.append("nowhere", user("m2", "lost"))))).toBe(true)
      yield* store.appendChain(root.id, [{ kind: "title", title: "t" }, { kind: "label", targetId: root.id, label: "l" }])
      const tree = yield* SessionTree.make(store)
      yield* tree.append(user("m3", "through the tree"))
      yield* Effect.either(tree.moveTo("nowhere"))
      yield* SessionStore.read("s")
      expect(Either.isLeft(yield* Effect.either(SessionStore.read("missing")))).toBe(true)
    }).pipe(Effect.provide(Layer.mergeAll(MemoryJournal.layer, Ids.layerDeterministic, layer)), Effect.andThen(() => {
      const seen = spans.map(ours)
      const named = (name: string) => seen.filter((s) => s.name === name)
      expect(named("SessionStore.create")).toEqual([{ name: "SessionStore.create", session: "s", batch: undefined, outcome: "success", ended: true }])
      expect(named("MemoryJournal.create")).toEqual([{ name: "MemoryJournal.create", session: "s", batch: 0, outcome: "success", ended: true }])
      // One span per append (its entries: one, or a chain's), and one per batch the backend commits.
      expect(named("SessionStore.append").map((s) => [s.session, s.batch, s.outcome])).toEqual([
        ["s", 1, "success"],
        ["s", 1, "SESSION_UNKNOWN_PARENT"],
        ["s", 2, "success"],
        ["s", 1, "success"]
      ])
      expect(named("SessionJournal.append").map((s) => [s.session, s.batch, s.outcome])).toEqual([["s", 1, "success"], ["s", 2, "success"], [
        "s",
        1,
        "success"
      ]])
      expect(named("SessionTree.append").map((s) => [s.session, s.outcome])).toEqual([["s", "success"]])
      expect(named("SessionTree.moveTo").map((s) => s.outcome)).toEqual(["SESSION_UNKNOWN_ENTRY"])
      expect(named("SessionStore.read").map((s) => [s.session, s.outcome])).toEqual([["s", "success"], ["missing", "SESSION_NOT_FOUND"]])
      // A span parents what it causes: the backend's read runs under the store's.
      expect(spans.filter((s) => s.name === "MemoryJournal.read").map((s) => [s.parent, s.attributes.get(OUTCOME)])).toEqual([
        ["SessionStore.read", "success"],
        ["SessionStore.read", "SESSION_NOT_FOUND"]
      ])
      expect(seen.every((s) => s.ended)).toBe(true)
    }))
  })
})

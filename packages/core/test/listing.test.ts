/**
 * The listing a store hands a backend that keeps listings: by default the
 * summary `Sessions` lists, made with each commit from the records it commits;
 * none at all where the hook provides none.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { none, SessionLister } from "../src/internal/listing.js"
import * as Summary from "../src/internal/summary.js"
import { sessionError } from "../src/SessionError.js"
import * as Sessions from "../src/Sessions.js"
import * as SessionStore from "../src/SessionStore.js"
import { makeProbed } from "./support/journal.js"

const user = (id: string, content: string) => ({ role: "user", id, content })

describe("listings handed to the backend", () => {
  it.scoped("by default each create and commit offers the summary of the session as it will then be", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create("s")
        const empty = Sessions.summarize("s", { header: store.header, entries: [] })
        expect(probe.listings.map((text) => text && JSON.parse(text))).toEqual([empty])
        const first = yield* store.append(null, user("m1", "a title"))
        yield* Effect.all([store.append(first.id, user("m2", "two")), store.append(first.id, user("m3", "three"))], {
          concurrency: "unbounded"
        })
        const listed = probe.listings.map((text) => text && JSON.parse(text))
        expect(listed).toEqual([
          empty,
          Sessions.summarize("s", { header: store.header, entries: store.entries.slice(0, 1) }),
          Sessions.summarize("s", { header: store.header, entries: store.entries })
        ])
        expect(listed[2]).toMatchObject({ entries: 3, title: "a title", leaf: store.entries[2]!.id })
        // A failed commit offers the listing of what it would have committed; the next one of what it commits.
        probe.failNext(sessionError("SESSION_IO", "the disk failed"))
        expect(Either.isLeft(yield* Effect.either(store.append(first.id, user("m4", "lost"))))).toBe(true)
        yield* store.append(first.id, user("m5", "kept"))
        expect(JSON.parse(probe.listings[probe.listings.length - 1]!)).toEqual(
          Sessions.summarize("s", { header: store.header, entries: store.entries })
        )
      }).pipe(Effect.provide(layer))
    }))

  it.scoped("where the hook provides none, no create or commit offers a listing", () =>
    Effect.gen(function*() {
      const { layer, probe } = makeProbed()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create("s")
        yield* store.append(null, user("m1", "one"))
        yield* store.flush
        expect(probe.listings).toEqual([undefined, undefined, undefined])
      }).pipe(Effect.provide(layer), Effect.provideService(SessionLister, none))
    }))
})

describe("the summary kept across a store's commits", () => {
  const header = { type: "session", version: 2, id: "s", timestamp: "2026-01-02T03:04:05.006Z" } as const
  const entry = (id: string, body: Record<string, unknown>) =>
    ({ type: "entry", version: 2, id, parentId: null, timestamp: "2026-01-02T03:04:05.007Z", ...body }) as never
  const userEntry = (id: string, text: string) => entry(id, { kind: "message", message: { role: "user", id: `m-${id}`, content: [{ type: "text", text }] } })
  const titleEntry = (id: string, title: string) => entry(id, { kind: "title", title })

  it("scans only what was added, and equals a summary made from scratch at every step, a replaced batch included", () => {
    const scan = Summary.emptyScan()
    const entries: Array<never> = []
    const check = () => {
      const kept = Summary.summarize("s", { header, entries }, scan)
      expect(kept).toEqual(Summary.summarize("s", { header, entries }))
      return kept
    }
    expect(check().title).toBe("")
    entries.push(userEntry("a", "first question"), userEntry("b", "second"))
    expect(check().title).toBe("first question")
    expect(scan.scanned).toBe(2)
    entries.push(titleEntry("t1", "named"))
    expect(check().title).toBe("named")
    // A batch rolled back and another one of the same length appended: scanned again.
    entries.pop()
    entries.push(userEntry("c", "not a title"))
    expect(check().title).toBe("first question")
    entries.push(titleEntry("t2", "renamed"), userEntry("d", "more"))
    expect(check().title).toBe("renamed")
    entries.length = 1
    expect(check().title).toBe("first question")
  })
})

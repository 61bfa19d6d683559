/**
 * The listing a store hands a backend that keeps listings: by default the
 * summary `Sessions` lists, made with each commit from the records it commits;
 * none at all where the hook provides none.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { none, SessionListing } from "../src/internal/listing.js"
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
      }).pipe(Effect.provide(layer), Effect.provideService(SessionListing, none))
    }))
})

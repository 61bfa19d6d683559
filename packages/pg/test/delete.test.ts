/**
 * Deleting a session in PostgreSQL: one transaction that takes the session row and, by cascade,
 * its entries and kept listing; a store that loaded it over other connections (as another
 * process would) fails its next append with SESSION_REPLACED and never brings it back, even
 * when a new session was created under the same ID meanwhile.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as PgJournal from "../src/PgJournal.js"
import { codeOf, layer, TestDatabase, user } from "./support/database.js"

const rowsOf = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [counts] = yield* sql<{ readonly sessions: number; readonly entries: number; readonly listings: number }>`
      SELECT (SELECT count(*) FROM session_tree_sessions WHERE id = ${id})::int4 AS sessions,
             (SELECT count(*) FROM session_tree_entries WHERE session_id = ${id})::int4 AS entries,
             (SELECT count(*) FROM session_tree_listings WHERE session_id = ${id})::int4 AS listings`
    return counts!
  })

describe("PgCatalog.delete", () => {
  it.layer(layer("delete"), { timeout: "60 seconds" })("on a fresh database", (it) => {
    it.scoped("removes the session row, its entries and its listing; other sessions stay; twice is SESSION_NOT_FOUND", () =>
      Effect.gen(function*() {
        const sessions = yield* Sessions.make
        const store = yield* SessionStore.create("doomed")
        const a = yield* store.append(null, user("m1", "one"))
        yield* store.append(a.id, user("m2", "two"))
        const other = yield* SessionStore.create("kept")
        yield* other.append(null, user("k1", "kept"))
        yield* sessions.list()
        expect(yield* rowsOf("doomed")).toEqual({ sessions: 1, entries: 2, listings: 1 })
        expect(yield* sessions.delete("doomed")).toBe("doomed")
        expect(yield* rowsOf("doomed")).toEqual({ sessions: 0, entries: 0, listings: 0 })
        expect(yield* rowsOf("kept")).toMatchObject({ sessions: 1, entries: 1 })
        expect((yield* sessions.list()).sessions.map((s) => s.location)).toEqual(["kept"])
        expect(codeOf((yield* Effect.flip(sessions.delete("doomed"))))).toBe("SESSION_NOT_FOUND")
        expect(codeOf((yield* Effect.flip(sessions.delete("never\u0000there"))))).toBe("SESSION_NOT_FOUND")
        expect(codeOf((yield* Effect.flip(SessionStore.read("doomed"))))).toBe("SESSION_NOT_FOUND")
      }))

    it.scoped("a store of another client that holds the session: its next append is SESSION_REPLACED and recreates nothing", () =>
      Effect.gen(function*() {
        const { url } = yield* TestDatabase
        const sessions = yield* Sessions.make
        // The holder runs on connections of its own, as another process would.
        const holder = yield* Layer.build(Layer.merge(PgJournal.layerClient({ url: Redacted.make(url), maxConnections: 2 }), Ids.layerRandom))
        const created = yield* SessionStore.create("held")
        yield* created.append(null, user("h1", "one"))
        const held = yield* Effect.provide(SessionStore.load("held"), holder)
        yield* sessions.delete("held")
        const late = yield* Effect.flip(Effect.provide(held.append(held.entries.at(-1)!.id, user("h2", "late")), holder))
        expect(codeOf(late)).toBe("SESSION_REPLACED")
        expect(yield* rowsOf("held")).toEqual({ sessions: 0, entries: 0, listings: 0 })
        // A new session under the same ID is not the one the holder loaded either.
        const again = yield* SessionStore.create("held")
        const late2 = yield* Effect.flip(Effect.provide(held.append(held.entries.at(-1)!.id, user("h3", "later")), holder))
        expect(codeOf(late2)).toBe("SESSION_REPLACED")
        expect((yield* SessionStore.read("held")).entries).toEqual([])
        expect(again.entries).toEqual([])
      }))
  })
})

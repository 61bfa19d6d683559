/**
 * The PostgreSQL catalog (SPEC C5 `list --db`): `scan` lists every session row
 * with a version (`incarnation:head`) that changes with every commit and with a
 * session created again under its ID, and `readMany` reads many sessions in few
 * statements, each as `read` would, errors in their places.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import { isSessionError } from "@session-tree/core/SessionError"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as PgCatalog from "../src/PgCatalog.js"
import { layer, user } from "./support/database.js"

describe("PgCatalog", () => {
  it.layer(layer("catalog"), { timeout: "60 seconds" })("on a fresh database", (it) => {
    it.scoped("scan: a version that changes with every commit and with a new incarnation, and when it changed", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const versionOf = (id: string) => Effect.map(catalog.scan(undefined), (all) => all.find((e) => e.location === id)!)
        const store = yield* SessionStore.create("versioned")
        const created = yield* versionOf("versioned")
        expect(created.version).toMatch(/^[0-9a-f-]{36}:0$/)
        const [row] = yield* sql<{ ms: number }>`
          SELECT (extract(epoch FROM changed_at) * 1000)::float8 AS ms FROM session_tree_sessions WHERE id = 'versioned'`
        expect(created.changed).toBe(row!.ms)
        expect(Math.abs(created.changed - Date.now())).toBeLessThan(60_000)
        yield* store.append(null, user("m1", "one"))
        const appended = yield* versionOf("versioned")
        expect(appended.version).toBe(created.version.replace(/:0$/, ":1"))
        expect(appended.changed).toBeGreaterThan(created.changed)
        // Removed and created again: the same head (0) under the same ID, and still another version.
        yield* sql`DELETE FROM session_tree_sessions WHERE id = 'versioned'`
        yield* Effect.scoped(SessionStore.create("versioned"))
        const reborn = yield* versionOf("versioned")
        expect(reborn.version).not.toBe(created.version)
        expect(reborn.version.endsWith(":0")).toBe(true)
      }))

    it.scoped("readMany: many sessions in order, each as read gives it, a missing or broken one as its error in its place", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const journal = yield* SessionJournal
        const count = PgCatalog.READ_CHUNK * 2 + 7
        const locations = Array.from({ length: count }, (_, i) => `many-${i}`)
        for (const [i, location] of locations.entries()) {
          const store = yield* SessionStore.create(location)
          for (let k = 0; k < i % 4; k++) yield* store.append(null, user(`m${k}`, `${location} ${k}`))
        }
        yield* sql`UPDATE session_tree_sessions SET head = head + 1 WHERE id = 'many-5'`
        const wanted = ["nowhere", ...locations, "many-3", "a\u0000b"]
        // The same catalog over a client that counts the statements it is asked to build.
        let statements = 0
        const counting: SqlClient.SqlClient = new Proxy(sql, {
          apply: (target, self, args) => {
            statements++
            return Reflect.apply(target, self, args)
          },
          get: (target, key, receiver) => (key === "withoutTransforms" ? () => counting : Reflect.get(target, key, receiver))
        })
        const started = Date.now()
        const read = yield* PgCatalog.make(counting).readMany(wanted)
        const ms = Date.now() - started
        console.log(`readMany: ${wanted.length} locations (${count} sessions) in ${statements} statements, ${ms} ms`)
        expect(statements).toBe(Math.ceil((count + 1) / PgCatalog.READ_CHUNK))
        expect(read).toEqual(yield* catalog.readMany(wanted))
        expect(read).toHaveLength(wanted.length)
        for (const [i, location] of wanted.entries()) {
          const expected = yield* Effect.either(journal.read(location))
          const got = read[i]!
          if (expected._tag === "Right") expect(got).toEqual(expected.right)
          else expect(isSessionError(got) && [got.code, got.line]).toEqual([expected.left.code, expected.left.line])
        }
        expect(read.filter(isSessionError).map((e) => e.code)).toEqual(["SESSION_NOT_FOUND", "SESSION_INVALID_RECORD", "SESSION_NOT_FOUND"])
      }))

    it.scoped("Sessions.list over the database: every session once, newest change first, a broken one with its error", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const service = yield* Sessions.make
        const older = yield* SessionStore.create("list-older")
        yield* older.append(null, user("m1", "older title"))
        const newer = yield* SessionStore.create("list-newer")
        yield* newer.append(null, user("m1", "newer title"))
        yield* Effect.scoped(SessionStore.create("list-broken"))
        yield* sql`UPDATE session_tree_sessions SET header = 'not-json' WHERE id = 'list-broken'`
        const listing = yield* service.list()
        const [total] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM session_tree_sessions`
        expect(listing.total).toBe(total!.n)
        const mine = listing.sessions.filter((s) => s.location.startsWith("list-"))
        expect(mine.map((s) => s.location)).toEqual(["list-broken", "list-newer", "list-older"])
        expect(mine[0]).toMatchObject({ error: { code: "SESSION_INVALID_JSON" } })
        expect(mine[1]).toMatchObject({ id: "list-newer", title: "newer title", entries: 1 })
      }))
  })
})

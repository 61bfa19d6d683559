/**
 * The PostgreSQL catalog (SPEC C5 `list --db`): `scan` lists every session row
 * with a version (`incarnation:head`) that changes with every commit and with a
 * session created again under its ID, and `readMany` reads many sessions in few
 * statements, each as `read` would, errors in their places.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import { SessionJournal, type Stored } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestServices from "effect/TestServices"
import { versionOf } from "../src/internal/rows.js"
import * as PgCatalog from "../src/PgCatalog.js"
import { codeOf, layer, user } from "./support/database.js"

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
        // What each store wrote, as a backend must give it back: the header's line, then each entry's.
        const wrote = new Map<string, Stored>()
        for (const [i, location] of locations.entries()) {
          const store = yield* SessionStore.create(location)
          for (let k = 0; k < i % 4; k++) yield* store.append(null, user(`m${k}`, `${location} ${k}`))
          const lines = [JSON.stringify(store.header), ...store.entries.map((e) => JSON.stringify(e))]
          const sizes = lines.map((l) => Buffer.byteLength(l))
          const size = sizes.reduce((sum, n) => sum + n + 1, 0)
          wrote.set(location, { location, lines, sizes, ids: store.entries.map((e) => e.id), tail: "none", size })
        }
        // many-5 (one entry) now counts two: the first line that is not as written is line 3.
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
        // Each read's mark (for readAfter) is the database's own: the rest is what was written.
        const unmarked = (stored: Stored) => {
          const { mark: _mark, ...rest } = stored
          return rest
        }
        expect(read.map((r) => (Either.isLeft(r) ? [r.left.code, r.left.line] : unmarked(r.right)))).toEqual(wanted.map((location) =>
          location === "many-5" ? ["SESSION_INVALID_RECORD", 3] : wrote.get(location) ?? ["SESSION_NOT_FOUND", undefined]
        ))
        for (const [i, location] of wanted.entries()) {
          const expected = yield* Effect.either(journal.read(location))
          const got = read[i]!
          if (expected._tag === "Right") expect(got).toEqual(Either.right(expected.right))
          else expect(Either.isLeft(got) && [got.left.code, got.left.line]).toEqual([expected.left.code, expected.left.line])
        }
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

    it.scoped("every commit keeps the session's listing under the version it makes: create, appends, a group commit, an import", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const sessions = yield* Sessions.make
        /** The kept listing of `id`, which must be the one for its version now and equal what reading it gives. */
        const keptMatches = (id: string) =>
          Effect.gen(function*() {
            const [kept] = yield* sql<{ version: string; listing: string }>`SELECT version, listing FROM session_tree_listings WHERE session_id = ${id}`
            const version = (yield* catalog.scan(undefined)).find((e) => e.location === id)!.version
            expect(kept?.version).toBe(version)
            expect(JSON.parse(kept!.listing)).toEqual(Sessions.summarize(id, yield* SessionStore.read(id)))
            return JSON.parse(kept!.listing) as Sessions.Summary
          })
        const store = yield* SessionStore.create("kept-always")
        expect(yield* keptMatches("kept-always")).toMatchObject({ entries: 0, title: "" })
        const first = yield* store.append(null, user("m1", "a title"))
        expect(yield* keptMatches("kept-always")).toMatchObject({ entries: 1, leaf: first.id, title: "a title" })
        yield* Effect.all(Array.from({ length: 5 }, (_, i) => store.append(first.id, user(`g${i}`, `g${i}`))), { concurrency: "unbounded" })
        expect(yield* keptMatches("kept-always")).toMatchObject({ entries: 6 })
        yield* sessions.import({ header: { ...store.header, id: "kept-imported" }, entries: store.entries })
        expect(yield* keptMatches("kept-imported")).toMatchObject({ entries: 6, title: "a title" })
        // A failed append keeps nothing: the listing stays the one of the last commit.
        const other = yield* SessionStore.load("kept-always")
        yield* other.append(null, user("o1", "from another writer"))
        expect(codeOf(yield* Effect.flip(store.append(null, user("late", "late"))))).toBe("SESSION_REPLACED")
        expect(yield* keptMatches("kept-always")).toMatchObject({ entries: 7 })
      }))

    it.scoped("listings kept in the database: a new service takes the one kept for a session's version, never a damaged or a stale one", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* SessionStore.create("kept")
        yield* store.append(null, user("m1", "the real title"))
        const mine = (listing: Sessions.ListingPage) => listing.sessions.find((s) => s.location === "kept")
        expect(mine(yield* (yield* Sessions.make).list())).toMatchObject({ title: "the real title", entries: 1 })
        const [kept] = yield* sql<{ version: string; listing: string }>`SELECT version, listing FROM session_tree_listings WHERE session_id = 'kept'`
        const [scanned] = (yield* (yield* SessionCatalog).scan(undefined)).filter((e) => e.location === "kept")
        expect(kept!.version).toBe(scanned!.version)
        expect(JSON.parse(kept!.listing)).toMatchObject({ id: "kept", location: "kept", title: "the real title" })
        // What is kept is what a new service shows, without reading the session: proven by a kept title the session does not hold.
        const other = JSON.stringify({ ...JSON.parse(kept!.listing), title: "the kept title" })
        yield* sql`UPDATE session_tree_listings SET listing = ${other} WHERE session_id = 'kept'`
        expect(mine(yield* (yield* Sessions.make).list())).toMatchObject({ title: "the kept title" })
        // Damaged, of another shape, or naming another session: ignored, the session read, the listing kept anew.
        for (const damaged of ["not json", JSON.stringify({ title: "x" }), JSON.stringify({ ...JSON.parse(kept!.listing), location: "elsewhere" })]) {
          yield* sql`UPDATE session_tree_listings SET listing = ${damaged} WHERE session_id = 'kept'`
          expect(mine(yield* (yield* Sessions.make).list())).toMatchObject({ title: "the real title", entries: 1 })
          const [again] = yield* sql<{ listing: string }>`SELECT listing FROM session_tree_listings WHERE session_id = 'kept'`
          expect(JSON.parse(again!.listing)).toEqual(JSON.parse(kept!.listing))
        }
        // After an append the kept listing is for an older version: read again.
        yield* sql`UPDATE session_tree_listings SET listing = ${other} WHERE session_id = 'kept'`
        yield* store.append(null, user("m2", "more"))
        expect(mine(yield* (yield* Sessions.make).list())).toMatchObject({ title: "the real title", entries: 2 })
      }))

    it.scoped("remember keeps a listing only under the session's current version: a late one made before a commit leaves the commit's", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const listings = catalog.listings!
        const keptOf = (id: string) =>
          Effect.map(sql<{ version: string; listing: string }>`SELECT version, listing FROM session_tree_listings WHERE session_id = ${id}`, (rows) => rows[0])
        const versionOf = (id: string) => Effect.map(catalog.scan(undefined), (all) => all.find((e) => e.location === id)!.version)
        const store = yield* SessionStore.create("remembered-late")
        yield* store.append(null, user("m1", "first"))
        // What a slow node read: the session at its first entry, with the listing of that version.
        const old = { location: "remembered-late", version: yield* versionOf("remembered-late"), listing: (yield* keptOf("remembered-late"))!.listing }
        yield* store.append(null, user("m2", "second"))
        const newer = yield* keptOf("remembered-late")
        expect(newer!.version).toBe(yield* versionOf("remembered-late"))
        expect(newer!.version).not.toBe(old.version)
        yield* listings.remember([old])
        expect(yield* keptOf("remembered-late")).toEqual(newer)
        // Under the current version remember still writes: the refusal above is for the old version alone.
        const current = { location: "remembered-late", version: newer!.version, listing: JSON.stringify({ ...JSON.parse(newer!.listing), title: "remembered" }) }
        yield* listings.remember([old, current])
        expect(yield* keptOf("remembered-late")).toEqual({ version: current.version, listing: current.listing })
      }))

    it.scoped("remember while a commit holds the session: the commit's listing stays, whichever ends first", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const listings = (yield* SessionCatalog).listings!
        const keptOf = (id: string) =>
          Effect.map(sql<{ version: string; listing: string }>`SELECT version, listing FROM session_tree_listings WHERE session_id = ${id}`, (rows) => rows[0])
        const store = yield* SessionStore.create("remembered-racing")
        yield* store.append(null, user("m1", "first"))
        const old = yield* keptOf("remembered-racing")
        // A commit in flight, as an append makes it: the head moved and a listing kept under the new version, not yet committed.
        const inFlight = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const commit = yield* Effect.fork(sql.withTransaction(Effect.gen(function*() {
          yield* sql`UPDATE session_tree_sessions SET head = head + 1 WHERE id = 'remembered-racing'`
          yield* sql`
            UPDATE session_tree_listings
               SET version = (SELECT ${versionOf("s")} FROM session_tree_sessions s WHERE s.id = 'remembered-racing'), listing = 'the commit''s'
             WHERE session_id = 'remembered-racing'`
          yield* Deferred.succeed(inFlight, undefined)
          yield* Deferred.await(release)
        })))
        yield* Deferred.await(inFlight)
        const remembering = yield* Effect.fork(listings.remember([{ location: "remembered-racing", ...old! }]))
        // Time for the remember to take its snapshot and reach the session's row (the test clock would never move).
        yield* TestServices.provideLive(Effect.sleep("200 millis"))
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(commit)
        yield* Fiber.join(remembering)
        const kept = yield* keptOf("remembered-racing")
        expect(kept?.listing).toBe("the commit's")
        expect(kept?.version).not.toBe(old!.version)
      }))

    it.scoped("rows changed behind the library draw a new incarnation: every listing reads the session again, a writer that loaded it is told", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const versionOf = (id: string) => Effect.map(catalog.scan(undefined), (all) => all.find((e) => e.location === id)!.version)
        const service = yield* Sessions.make
        const listed = (id: string) => Effect.map(service.list(), (listing) => listing.sessions.find((s) => s.location === id))
        const changes: ReadonlyArray<readonly [string, (id: string) => Effect.Effect<unknown, unknown>, string | undefined]> = [
          ["a line edited", (id) => sql`UPDATE session_tree_entries SET line = replace(line, 'first', 'FIRST') WHERE session_id = ${id} AND seq = 1`, undefined],
          ["a line made invalid", (id) => sql`UPDATE session_tree_entries SET line = 'not-json' WHERE session_id = ${id} AND seq = 2`, "SESSION_INVALID_JSON"],
          ["an entry removed", (id) => sql`DELETE FROM session_tree_entries WHERE session_id = ${id} AND seq = 2`, "SESSION_INVALID_RECORD"],
          ["a row past the head", (id) => sql`INSERT INTO session_tree_entries (session_id, seq, entry_id, line) VALUES (${id}, 3, 'x', '{}')`, "SESSION_INVALID_RECORD"],
          ["the header edited", (id) => sql`UPDATE session_tree_sessions SET header = 'not-json' WHERE id = ${id}`, "SESSION_INVALID_JSON"],
          // Back to the head of an earlier version, which a node that listed the session then still holds.
          ["the head lowered", (id) => sql`UPDATE session_tree_sessions SET head = head - 1 WHERE id = ${id}`, "SESSION_INVALID_RECORD"],
          ["a line edited and the incarnation put back", (id) =>
            Effect.gen(function*() {
              const [row] = yield* sql<{ incarnation: string }>`SELECT incarnation::text FROM session_tree_sessions WHERE id = ${id}`
              yield* sql`UPDATE session_tree_entries SET line = replace(line, 'first', 'FIRST') WHERE session_id = ${id} AND seq = 1`
              yield* sql`UPDATE session_tree_sessions SET incarnation = ${row!.incarnation}::uuid WHERE id = ${id}`
            }), undefined]
        ]
        const incarnationOf = (version: string) => version.split(":")[0]
        for (const [what, change, code] of changes) {
          const id = `behind-${what.replace(/ /g, "-")}`
          const store = yield* SessionStore.create(id)
          const versions = [yield* versionOf(id)]
          const first = yield* store.append(null, user("m1", "first"))
          versions.push(yield* versionOf(id))
          // A node that listed the session at its first entry and not since.
          const earlier = yield* Sessions.make
          const listedEarlier = () => Effect.map(earlier.list(), (listing) => listing.sessions.find((s) => s.location === id))
          expect(yield* listedEarlier(), what).toMatchObject({ title: "first", entries: 1 })
          yield* store.append(first.id, user("m2", "second"))
          expect(yield* listed(id), what).toMatchObject({ title: "first", entries: 2 })
          const before = yield* versionOf(id)
          versions.push(before)
          yield* change(id)
          const after = yield* versionOf(id)
          expect(versions, what).not.toContain(after)
          expect(incarnationOf(after), what).not.toBe(incarnationOf(before))
          for (const shown of [yield* listed(id), yield* listedEarlier()]) {
            if (code === undefined) expect(shown, what).toMatchObject({ title: "FIRST", entries: 2 })
            else expect(shown, what).toMatchObject({ error: { code } })
          }
          const refused = yield* Effect.flip(store.append(null, user("m3", "third")))
          expect(refused.code, what).toBe("SESSION_REPLACED")
        }
        // The library's own append moves the head and keeps the incarnation.
        const own = yield* SessionStore.create("behind-own")
        const before = yield* versionOf("behind-own")
        yield* own.append(null, user("m1", "mine"))
        expect(yield* versionOf("behind-own")).toBe(before.replace(/:0$/, ":1"))
      }))
  })
})

describe("PgCatalog on a database whose entries are truncated", () => {
  it.layer(layer("truncated"), { timeout: "60 seconds" })("", (it) => {
    it.scoped("TRUNCATE draws every session a new incarnation", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const store = yield* SessionStore.create("t")
        yield* store.append(null, user("m1", "one"))
        const before = (yield* catalog.scan(undefined))[0]!.version
        yield* sql`TRUNCATE session_tree_entries`
        const after = (yield* catalog.scan(undefined))[0]!.version
        expect(after).not.toBe(before)
        expect(yield* Effect.map((yield* Sessions.make).list(), (l) => l.sessions[0])).toMatchObject({ error: { code: "SESSION_INVALID_RECORD" } })
      }))
  })
})

/**
 * Search and changes in PostgreSQL: the full-text index gives the answers the
 * library gives on the same sessions held in memory; it is made by the first
 * search that needs it, kept up to date by the next ones (an append, a row
 * changed behind the library's back), and used by the query plan. Every commit
 * (create, append, delete) is heard by a listener once it commits, and not at
 * all when it rolls back.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import type * as Search from "@session-tree/core/Search"
import type { Change } from "@session-tree/core/SessionChanges"
import { SessionChanges } from "@session-tree/core/SessionChanges"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Codec from "@session-tree/core/Codec"
import * as Database from "./support/database.js"

const inMemory = (options: Search.SearchOptions) =>
  Effect.flatMap(Sessions.Sessions, (s) => s.search(options)).pipe(
    Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(MemoryJournal.layerStorage(new Map(Corpus.corpus.map((s) => [s.id, s.lines]))), Ids.layerRandom))))
  )

/** The corpus stored under each session's ID, as an import stores it. */
const storeCorpus = Effect.gen(function*() {
  const sessions = yield* Sessions.Sessions
  for (const session of Corpus.corpus) {
    const decoded = Codec.decodeLines({ lines: session.lines, sizes: session.lines.map(Codec.utf8Length), tail: "none" })
    if (decoded._tag === "Left") return yield* decoded.left
    yield* sessions.import({ header: decoded.right.header, entries: decoded.right.history.entries })
  }
})

const QUERIES = Corpus.QUERIES as ReadonlyArray<Search.SearchOptions>

const live = (label: string) => Layer.provideMerge(Sessions.layer, Database.layer(label))

describe("search in PostgreSQL", () => {
  it.live("gives the answers the library gives on the same sessions in memory; the index is made once and kept up to date", () =>
    Effect.gen(function*() {
      yield* storeCorpus
      const sessions = yield* Sessions.Sessions
      const sql = yield* SqlClient.SqlClient
      for (const options of QUERIES) {
        const result = yield* sessions.search(options)
        // The corpus in memory is stored under the session IDs too: locations are equal.
        const memory = yield* inMemory(options)
        expect(result, options.query).toEqual({ ...memory, searched: result.searched })
      }
      const kept = yield* sql<{ readonly n: number }>`SELECT count(*)::int4 AS n FROM session_tree_search`
      expect(kept[0]!.n).toBe(Corpus.corpus.reduce((n, s) => n + s.lines.length - 1, 0))

      // An append: the next search finds it, and the index keeps one more row.
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.load("s-pooling")
        yield* store.append("p3", { role: "user", id: "n4", content: "and the zebra connection?" })
      }))
      expect((yield* sessions.search({ query: "zebra" })).hits.map((h) => h.entry)).toEqual([expect.any(String)])
      const after = yield* sql<{ readonly n: number }>`SELECT count(*)::int4 AS n FROM session_tree_search`
      expect(after[0]!.n).toBe(kept[0]!.n + 1)

      // A row changed behind the library's back draws a new incarnation: the session is indexed again, and the change found.
      yield* sql`UPDATE session_tree_entries SET line = replace(line, 'saturated', 'okapi') WHERE session_id = 's-pooling'`
      expect((yield* sessions.search({ query: "okapi" })).hits.map((h) => h.entry)).toEqual(["p3"])
      expect((yield* sessions.search({ query: "saturated" })).total).toBe(0)

      // The query goes through the GIN index.
      // (A table this small is read whole unless sequential scans are ruled out.)
      yield* sql`SET enable_seqscan = off`
      const indexed = yield* sql<{ readonly "QUERY PLAN": string }>`
        EXPLAIN SELECT session_id, seq FROM session_tree_search WHERE lexemes @@ ${"'zebra'"}::tsquery`
      expect(indexed.map((row) => row["QUERY PLAN"]).join("\n")).toContain("session_tree_search_lexemes")
      yield* sql`SET enable_seqscan = on`
    }).pipe(Effect.provide(live("search"))))

  it.live("reports a session whose matching row does not decode, as every backend does", () =>
    Effect.gen(function*() {
      yield* storeCorpus
      const sessions = yield* Sessions.Sessions
      const sql = yield* SqlClient.SqlClient
      // Written behind the library's back, with the triggers' renewal: the session is indexed again.
      yield* sql`UPDATE session_tree_entries SET line = replace(line, '"kind":"message"', '"kind":"message","extra":1') WHERE session_id = 's-incident' AND seq = 4`
      const result = yield* sessions.search({ query: "service" })
      expect(result.hits).toEqual([])
      expect(result.unreadable).toEqual([{ location: "s-incident", error: { code: "SESSION_INVALID_RECORD", message: expect.stringContaining("(line 5)") } }])
      expect((yield* sessions.search({ query: "ECONNREFUSED" })).unreadable).toEqual([])
    }).pipe(Effect.provide(live("search_bad"))))
})

describe("changes in PostgreSQL", () => {
  it.live("hears every create, append and delete once committed, none rolled back", () =>
    Effect.gen(function*() {
      const queue = yield* Queue.unbounded<Change>()
      const changes = yield* SessionChanges
      const fiber = yield* Stream.runForEach(changes.watch(undefined), (batch) => Queue.offerAll(queue, batch)).pipe(Effect.fork)
      const next = (wanted: (c: Change) => boolean) =>
        Effect.gen(function*() {
          const started = Date.now()
          for (;;) {
            const change = yield* Queue.take(queue).pipe(Effect.timeout("3 seconds"))
            if (wanted(change)) return { change, ms: Date.now() - started }
          }
        })
      expect((yield* next(() => true)).change).toEqual({ _tag: "Resync" })
      const sessions = yield* Sessions.Sessions
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create("live-1")
        const created = yield* next((c) => c._tag === "Changed" && c.entry.location === "live-1")
        expect(created.ms).toBeLessThan(1_000)
        yield* store.append(null, { role: "user", id: "m1", content: "hello" })
        const appended = yield* next((c) => c._tag === "Changed" && c.entry.location === "live-1" && c.entry.version.endsWith(":1"))
        expect(appended.ms).toBeLessThan(1_000)
      }))
      // A transaction that rolls back sends nothing.
      const sql = yield* SqlClient.SqlClient
      yield* Effect.exit(sql.withTransaction(Effect.zipRight(
        sql`UPDATE session_tree_sessions SET changed_at = now() WHERE id = 'live-1'`,
        Effect.fail("rolled back")
      )))
      yield* sessions.delete("live-1")
      const removed = yield* next(() => true)
      expect(removed.change).toEqual({ _tag: "Removed", location: "live-1" })
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(live("changes"))))
})

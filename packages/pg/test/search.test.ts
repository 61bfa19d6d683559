/**
 * Search and changes in PostgreSQL: the full-text index gives the answers the
 * library gives on the same sessions held in memory; it is made by the first
 * search that needs it, kept up to date by the next ones (an append, a row
 * changed behind the library's back), and used by the query plan; a query of
 * words is counted from the facts it keeps, and only the page's lines are read
 * and checked, under the incarnation they were kept for. Every commit
 * (create, append, delete) is heard by a listener once it commits, and not at
 * all when it rolls back.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { describe, expect, it } from "@effect/vitest"
import * as Codec from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import * as Search from "@session-tree/core/Search"
import type { Change } from "@session-tree/core/SessionChanges"
import { SessionChanges } from "@session-tree/core/SessionChanges"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as Migrations from "../src/Migrations.js"
import * as PgJournal from "../src/PgJournal.js"
import * as PgSearch from "../src/PgSearch.js"
import * as Schema from "../src/internal/schema.js"
import * as Database from "./support/database.js"

/**
 * The search of `storage` held in memory, run apart from the test's context: a `SearchIndex` there
 * (PostgreSQL's) would otherwise be the one `Sessions` narrows with, and the answer would be the
 * database's again.
 */
const searchInMemory = (storage: ReadonlyMap<string, ReadonlyArray<string>>, options: Search.SearchOptions) =>
  Effect.promise(() =>
    Effect.runPromise(Effect.flatMap(Sessions.Sessions, (s) => s.search(options)).pipe(
      Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(MemoryJournal.layerStorage(new Map(storage)), Ids.layerRandom))))
    ))
  )

const inMemory = (options: Search.SearchOptions) => searchInMemory(new Map(Corpus.corpus.map((s) => [s.id, s.lines])), options)

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

/** `effect`'s result and the text of every SQL statement it ran (from the spans `@effect/sql` makes). */
const withStatements = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const texts: Array<string> = []
    const base = yield* Effect.tracer
    const tracer = Tracer.make({
      context: (f, fiber) => base.context(f, fiber),
      span: (name, parent, context, links, startTime, kind, options) => {
        const span = base.span(name, parent, context, links, startTime, kind, options)
        const attribute = span.attribute.bind(span)
        span.attribute = (key, value) => {
          if (key === "db.query.text") texts.push(String(value))
          attribute(key, value)
        }
        return span
      }
    })
    const result = yield* Effect.withTracer(effect, tracer)
    return { result, statements: texts }
  })

/** What a search's statements did: the facts of a decidable query, the lines of every candidate, a fetch of a page's lines. */
const stepsOf = (statements: ReadonlyArray<string>) => ({
  facts: statements.some((t) => t.includes("json_agg(h.seq")),
  lines: statements.some((t) => t.includes("JOIN session_tree_entries e ON e.session_id = t.session_id")),
  fetches: statements.filter((t) => t.includes("seq = ANY(")).length
})

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

  it.live("counts and ranks a query of words from the index's facts, and reads and checks only the page's lines", () =>
    Effect.gen(function*() {
      yield* storeCorpus
      const sessions = yield* Sessions.Sessions
      const sql = yield* SqlClient.SqlClient
      const truth = yield* inMemory({ query: "connection", limit: 1 })
      expect(truth.total).toBeGreaterThan(2)
      yield* sessions.search({ query: "connection" }) // (the index made)
      const first = yield* withStatements(sessions.search({ query: "connection", limit: 1 }))
      expect(first.result).toEqual({ ...truth, searched: expect.any(Number) })
      // Decided from the facts, the page's line read with them (a session of few hits): no candidate's line read otherwise.
      expect(stepsOf(first.statements)).toEqual({ facts: true, lines: false, fetches: 0 })
      // Every entry with searched text was indexed with its facts: the index decides it.
      const facts = yield* sql<{ readonly decided: number; readonly searched: number }>`
        SELECT count(*) FILTER (WHERE ts IS NOT NULL)::int4 AS decided, count(*) FILTER (WHERE lexemes <> ''::tsvector)::int4 AS searched
          FROM session_tree_search`
      expect(facts[0]!.decided).toBeGreaterThan(0)
      expect(facts[0]!.decided).toBe(facts[0]!.searched)

      // An entry off the page is counted by its facts alone: one said to be a title is not counted as the user's it is.
      const page = truth.hits[0]!
      const [other] = yield* sql<{ readonly session_id: string; readonly seq: number; readonly role: string }>`
        SELECT session_id, seq, role FROM session_tree_search
         WHERE lexemes @@ 'connection'::tsquery AND ts IS NOT NULL AND role = 'user'
           AND NOT (session_id = ${page.location} AND seq = (SELECT seq FROM session_tree_entries WHERE session_id = ${page.location} AND entry_id = ${page.entry}))
         ORDER BY session_id, seq LIMIT 1`
      const users = (yield* inMemory({ query: "connection", roles: ["user"] })).total
      yield* sql`UPDATE session_tree_search SET role = 'title' WHERE session_id = ${other!.session_id} AND seq = ${other!.seq}`
      expect((yield* sessions.search({ query: "connection", roles: ["user"] })).total).toBe(users - 1)
      // A query that is not one of words alone (a phrase of two) is decided from the lines: the same answer as in memory.
      const phrase = yield* inMemory({ query: `"connection refused"`, roles: ["user"] })
      const [tampered] = yield* sql<{ readonly entry_id: string }>`SELECT entry_id FROM session_tree_entries WHERE session_id = ${other!.session_id} AND seq = ${other!.seq}`
      expect(phrase.hits.map((h) => h.entry)).toContain(tampered!.entry_id)
      expect(yield* sessions.search({ query: `"connection refused"`, roles: ["user"] })).toEqual({ ...phrase, searched: expect.any(Number) })

      // An index that puts an entry on the page it does not belong to is contradicted by the page's
      // line (its timestamp): the search runs again over the lines, and gives the library's answer.
      yield* sql`UPDATE session_tree_search SET role = ${other!.role}, ts = '2999-01-01T00:00:00.000Z' WHERE session_id = ${other!.session_id} AND seq = ${other!.seq}`
      const contradicted = yield* withStatements(sessions.search({ query: "connection", limit: 1 }))
      expect(contradicted.result).toEqual({ ...truth, searched: expect.any(Number) })
      expect(stepsOf(contradicted.statements)).toEqual({ facts: true, lines: true, fetches: 0 })
    }).pipe(Effect.provide(live("search_facts"))))

  it.live("reads the page's lines after the facts for a session of many hits, and with them for one of few: the same answers as in memory", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const stored = new Map<string, ReadonlyArray<string>>()
      // 30 hits in one session (read after the facts), 3 in another (read with them).
      for (const [id, hits] of [["s-many", 30], ["s-few", 3]] as const) {
        const lines = Corpus.linearLines(id, 40).map((line, i) => (i >= 1 && i <= hits ? line.replace("Step", "Okapi step") : line))
        const decoded = Codec.decodeLines({ lines, sizes: lines.map(Codec.utf8Length), tail: "none" })
        if (decoded._tag === "Left") return yield* decoded.left
        yield* sessions.import({ header: decoded.right.header, entries: decoded.right.history.entries })
        stored.set(id, lines)
      }
      const memory = (options: Search.SearchOptions) => searchInMemory(stored, options)
      for (const options of [{ query: "okapi" }, { query: "okapi", limit: 5, offset: 3 }, { query: "okapi", limit: 40 }, { query: "okapi step", roles: ["assistant" as const], limit: 7 }]) {
        const expected = yield* memory(options)
        expect(expected.total).toBeGreaterThan(0)
        const { result, statements } = yield* withStatements(sessions.search(options))
        expect(result, JSON.stringify(options)).toEqual({ ...expected, searched: expect.any(Number) })
        // The session of many hits on the page: its lines read by one statement after the facts; never every candidate's.
        const many = expected.hits.some((hit) => hit.location === "s-many")
        expect(stepsOf(statements), JSON.stringify(options)).toEqual({ facts: true, lines: false, fetches: many ? 1 : 0 })
      }
    }).pipe(Effect.provide(live("search_fetch"))))

  it.live("fails a page's fetch with SESSION_REPLACED once the session has another incarnation than its facts were read under", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const sql = yield* SqlClient.SqlClient
      const lines = Corpus.linearLines("s-race", 30).map((line, i) => (i >= 1 ? line.replace("Step", "Okapi step") : line))
      const decoded = Codec.decodeLines({ lines, sizes: lines.map(Codec.utf8Length), tail: "none" })
      if (decoded._tag === "Left") return yield* decoded.left
      yield* sessions.import({ header: decoded.right.header, entries: decoded.right.history.entries })
      const request: Search.CandidateRequest = {
        directory: undefined,
        words: ["okapi"],
        lexemes: ["okapi"],
        pattern: Search.patternOf(["okapi"]),
        sessions: undefined,
        decidable: true,
        trusted: true
      }
      const [answer] = Chunk.toReadonlyArray(yield* Stream.runCollect(PgSearch.make(sql).candidates(request)))
      if (answer === undefined || !("entries" in answer)) return expect.fail("no session answered from its facts")
      const orders = [answer.entries.order(0), answer.entries.order(1)]
      expect((yield* answer.fetch(orders)).map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(["e29", "e28"])
      // Rewritten behind the library's back, its lines where they were: another incarnation, so another session.
      yield* sql`UPDATE session_tree_entries SET line = line WHERE session_id = 's-race' AND seq = 1`
      const refused = yield* Effect.either(answer.fetch(orders))
      expect(refused._tag === "Left" && refused.left.code).toBe("SESSION_REPLACED")
    }).pipe(Effect.provide(live("search_race"))))

  it.live("decides nothing from facts kept under another incarnation or beyond the head kept: those entries are read as lines", () =>
    Effect.gen(function*() {
      yield* storeCorpus
      const sessions = yield* Sessions.Sessions
      const sql = yield* SqlClient.SqlClient
      // Every fact written says `title`, a lie a search would count for a role filter if it trusted it.
      yield* sql`CREATE FUNCTION lie() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.ts IS NOT NULL THEN NEW.role := 'title'; END IF; RETURN NEW; END $$`
      yield* sql`CREATE TRIGGER lie BEFORE INSERT ON session_tree_search FOR EACH ROW EXECUTE FUNCTION lie()`
      const options: Search.SearchOptions = { query: "connection", roles: ["user"] }
      const truth = yield* inMemory(options)
      expect(truth.total).toBeGreaterThan(0)
      for (const stale of [
        // The state written names another incarnation than the session's (as one written before a rewrite would).
        `BEGIN NEW.incarnation := gen_random_uuid(); RETURN NEW; END`,
        // The state written names a head below the session's (rows past it were never indexed under it).
        `BEGIN NEW.head := 0; RETURN NEW; END`
      ]) {
        yield* sql.unsafe(`CREATE OR REPLACE FUNCTION stale() RETURNS trigger LANGUAGE plpgsql AS $$ ${stale} $$`)
        yield* sql`CREATE OR REPLACE TRIGGER stale BEFORE INSERT OR UPDATE ON session_tree_search_state FOR EACH ROW EXECUTE FUNCTION stale()`
        const { result, statements } = yield* withStatements(sessions.search(options))
        expect(result, stale).toEqual({ ...truth, searched: expect.any(Number) })
        expect(stepsOf(statements), stale).toEqual({ facts: true, lines: false, fetches: 0 })
      }
      // Control: with the state as written, the lie is believed (off the page nothing is read again).
      yield* sql`DROP TRIGGER stale ON session_tree_search_state`
      yield* sql`DELETE FROM session_tree_search_state`
      expect((yield* sessions.search(options)).total).toBe(0)
    }).pipe(Effect.provide(live("search_stale"))))

  it.live("keeps no fact a text column cannot hold as it is: such an entry is read as a line, and found by its model", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const odd = "model\\u0000x"
      const lone = "model\\ud800y"
      const header = JSON.stringify({ type: "session", version: 2, id: "s-odd", timestamp: "2026-03-01T00:00:00.000Z" })
      const entry = (id: string, parentId: string | null, model: string) =>
        `{"type":"entry","version":2,"id":"${id}","parentId":${parentId === null ? "null" : `"${parentId}"`},"timestamp":"2026-03-01T00:00:0${id.length}.000Z","kind":"message","message":{"role":"assistant","id":"m-${id}","content":[{"type":"text","text":"an okapi answer"}],"meta":{"provider":"p","model":"${model}"}}}`
      const lines = [header, entry("a", null, odd), entry("bb", "a", lone), entry("ccc", "bb", "plain")]
      const decoded = Codec.decodeLines({ lines, sizes: lines.map(Codec.utf8Length), tail: "none" })
      if (decoded._tag === "Left") return yield* decoded.left
      yield* sessions.import({ header: decoded.right.header, entries: decoded.right.history.entries })
      const sql = yield* SqlClient.SqlClient
      expect((yield* sessions.search({ query: "okapi" })).total).toBe(3)
      const kept = yield* sql<{ readonly seq: number; readonly model: string | null }>`SELECT seq, model FROM session_tree_search WHERE session_id = 's-odd' ORDER BY seq`
      expect(kept).toEqual([{ seq: 1, model: null }, { seq: 2, model: null }, { seq: 3, model: "plain" }])
      for (const model of [odd, lone, "plain"].map((m) => JSON.parse(`"${m}"`) as string)) {
        expect((yield* sessions.search({ query: "okapi", models: [model] })).total, JSON.stringify(model)).toBe(1)
      }
    }).pipe(Effect.provide(live("search_odd"))))

  it.live("indexes again, with their facts, the sessions a database at version 4 had indexed, once it is migrated", () =>
    Effect.scoped(Effect.gen(function*() {
      const url = yield* Database.freshDatabase("search_v4")
      const client = PgClient.layer({ url: Redacted.make(url), maxConnections: 2 })
      // The schema and the index as version 4 made them: lexemes only.
      yield* Effect.provide(
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          yield* sql.unsafe(Schema.VERSION_TABLE)
          for (const migration of Schema.migrations.filter((m) => m.version <= 4)) {
            for (const statement of migration.statements) yield* sql.unsafe(statement)
            yield* sql`INSERT INTO session_tree_migrations (version, name) VALUES (${migration.version}::int4, ${migration.name})`
          }
          for (const session of Corpus.corpus) {
            const entries = session.lines.slice(1)
            const ids = entries.map((line) => (JSON.parse(line) as { id: string }).id)
            const lexemes = entries.map((line, i) => Search.lineLexemes(session.lines[0], line, i + 2).join(" "))
            yield* sql`INSERT INTO session_tree_sessions (id, header, head, incarnation) VALUES (${session.id}, ${session.lines[0]!}, ${entries.length}::int4, gen_random_uuid())`
            yield* sql`
              INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
              SELECT ${session.id}, e.ord::int4, e.entry_id, e.line FROM unnest(${ids}::text[], ${entries}::text[]) WITH ORDINALITY AS e(entry_id, line, ord)`
            yield* sql`
              INSERT INTO session_tree_search (session_id, seq, lexemes)
              SELECT ${session.id}, r.ord::int4, array_to_tsvector(array_remove(string_to_array(r.lexemes, ' '), ''))
                FROM unnest(${lexemes}::text[]) WITH ORDINALITY AS r(lexemes, ord)`
            yield* sql`
              INSERT INTO session_tree_search_state (session_id, incarnation, head)
              SELECT id, incarnation, head FROM session_tree_sessions WHERE id = ${session.id}`
          }
        }),
        client
      )
      expect(yield* Migrations.migrateUrl(url)).toEqual({ applied: [5], version: 5 })
      yield* Effect.provide(
        Effect.gen(function*() {
          const sessions = yield* Sessions.Sessions
          const sql = yield* SqlClient.SqlClient
          for (const options of QUERIES) {
            expect(yield* sessions.search(options), options.query).toEqual({ ...(yield* inMemory(options)), searched: expect.any(Number) })
          }
          const kept = yield* sql<{ readonly decided: number; readonly sessions: number }>`
            SELECT (SELECT count(*) FROM session_tree_search WHERE ts IS NOT NULL)::int4 AS decided,
                   (SELECT count(*) FROM session_tree_search_state)::int4 AS sessions`
          expect(kept[0]!.decided).toBeGreaterThan(0)
          expect(kept[0]!.sessions).toBe(Corpus.corpus.length)
        }),
        Layer.provideMerge(Sessions.layer, Layer.merge(PgJournal.layerUrl(url), Ids.layerRandom))
      )
    })))

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

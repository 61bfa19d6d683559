/**
 * The PostgreSQL journal on a real server: what the rows hold after create and
 * append, one transaction per group-commit batch, the compare-and-set that makes
 * the loser of a race write nothing, SESSION_BUSY after a lock wait, SESSION_EXISTS,
 * incarnations, and typed errors for every failure of the database.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Ids from "@session-tree/core/Ids"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionError } from "@session-tree/core/SessionError"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Migrations from "../src/Migrations.js"
import * as PgJournal from "../src/PgJournal.js"
import { freshDatabase, layer, TestDatabase, user } from "./support/database.js"

const codeOf = <A>(result: Either.Either<A, SessionError>) => (Either.isLeft(result) ? result.left.code : "ok")

interface EntryRow {
  readonly seq: number
  readonly entry_id: string
  readonly line: string
}

/** Everything stored for session `id`, for comparing before and after. */
const snapshot = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sessions = yield* sql`SELECT id, header, head, incarnation::text, changed_at FROM session_tree_sessions WHERE id = ${id}`
    const entries = yield* sql<EntryRow>`SELECT seq, entry_id, line FROM session_tree_entries WHERE session_id = ${id} ORDER BY seq`
    return { sessions, entries }
  })

describe("PgJournal", () => {
  it.layer(layer("journal"), { timeout: "60 seconds" })("on a fresh database", (it) => {
    it.scoped("create stores the header row; appends store each canonical line as a row numbered 1..head", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* SessionStore.create("rows")
        const [created] = yield* sql<{ header: string; head: number; incarnation: string }>`
          SELECT header, head, incarnation::text AS incarnation FROM session_tree_sessions WHERE id = 'rows'`
        expect(created).toEqual({ header: JSON.stringify(store.header), head: 0, incarnation: expect.stringMatching(/^[0-9a-f-]{36}$/) })
        const root = yield* store.append(null, user("m1", "root ✓"))
        const child = yield* store.append(root.id, user("m2", "child"))
        const rows = yield* sql<EntryRow>`SELECT seq, entry_id, line FROM session_tree_entries WHERE session_id = 'rows' ORDER BY seq`
        expect(rows).toEqual([
          { seq: 1, entry_id: root.id, line: JSON.stringify(root) },
          { seq: 2, entry_id: child.id, line: JSON.stringify(child) }
        ])
        const [after] = yield* sql<{ head: number; incarnation: string }>`
          SELECT head, incarnation::text AS incarnation FROM session_tree_sessions WHERE id = 'rows'`
        expect(after).toEqual({ head: 2, incarnation: created!.incarnation })
        const journal = yield* SessionJournal
        const stored = yield* journal.read("rows")
        const lines = [JSON.stringify(store.header), JSON.stringify(root), JSON.stringify(child)]
        expect(stored).toEqual({
          location: "rows",
          lines,
          sizes: lines.map((l) => Buffer.byteLength(l)),
          ids: [root.id, child.id],
          tail: "none",
          size: lines.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0),
          // Where the read ended, for readAfter: the incarnation and the head.
          mark: { _tag: "PgMark", incarnation: created!.incarnation, head: 2 }
        })
        expect(journal.locations).toBe("sessionId")
      }))

    it.scoped("appends started together are one transaction: every row of the batch carries one xmin", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* SessionStore.create("group")
        const root = yield* store.append(null, user("root", "root"))
        const results = yield* Effect.all(
          Array.from({ length: 50 }, (_, i) => store.append(root.id, user(`m${i}`, `message ${i}`))),
          { concurrency: "unbounded" }
        )
        // xmin is the ID of the transaction that inserted a row: rows of one commit share it.
        const [counted] = yield* sql<{ transactions: number; rows: number; same: boolean }>`
          SELECT count(DISTINCT e.xmin::text)::int4 AS transactions, count(*)::int4 AS rows,
                 bool_and(e.xmin::text = s.xmin::text) AS same
            FROM session_tree_entries e JOIN session_tree_sessions s ON s.id = e.session_id
           WHERE e.session_id = 'group' AND e.seq > 1`
        console.log(`group commit: 50 appends started together -> ${counted!.transactions} transaction(s) for ${counted!.rows} rows`)
        expect(counted).toEqual({ transactions: 1, rows: 50, same: true })
        expect(store.entries.slice(1)).toEqual(results)
        const [root2] = yield* sql<{ transactions: number }>`
          SELECT count(DISTINCT xmin::text)::int4 AS transactions FROM session_tree_entries WHERE session_id = 'group'`
        expect(root2!.transactions).toBe(2)
      }))

    it.scoped("the loser of a race writes no row, keeps its memory, and appends after a reload", () =>
      Effect.gen(function*() {
        const first = yield* SessionStore.create("race")
        const root = yield* first.append(null, user("m1", "root"))
        const second = yield* SessionStore.load("race")
        yield* second.append(root.id, user("m2", "won"))
        const before = yield* snapshot("race")
        const entries = first.entries
        const lost = yield* Effect.either(first.append(root.id, user("m3", "lost")))
        expect(codeOf(lost)).toBe("SESSION_REPLACED")
        expect(first.entries).toBe(entries)
        expect(yield* snapshot("race")).toEqual(before)
        const again = yield* SessionStore.load("race")
        yield* again.append(root.id, user("m3", "retried"))
        expect((yield* snapshot("race")).entries.map((r) => r.seq)).toEqual([1, 2, 3])
      }))

    it.scoped("rows written after the head behind a writer's back make its next append SESSION_REPLACED, writing nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* SessionStore.create("outrun")
        const root = yield* store.append(null, user("m1", "root"))
        yield* sql`
          INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
          SELECT session_id, 2, 'intruder', line FROM session_tree_entries WHERE session_id = 'outrun' AND seq = 1`
        const before = yield* snapshot("outrun")
        const outcome = yield* Effect.either(store.append(root.id, user("m2", "mine")))
        expect(codeOf(outcome)).toBe("SESSION_REPLACED")
        expect(yield* snapshot("outrun")).toEqual(before)
        expect(store.entries).toEqual([root])

        // Rows copied in with the insert trigger off keep the incarnation, so the compare-and-set passes
        // and only the primary key stops the append: SESSION_REPLACED all the same, saying why.
        const untriggered = yield* SessionStore.create("outrun-untriggered")
        const first = yield* untriggered.append(null, user("m1", "root"))
        const [seen] = yield* sql<{ incarnation: string }>`SELECT incarnation::text FROM session_tree_sessions WHERE id = 'outrun-untriggered'`
        yield* Effect.acquireUseRelease(
          sql`ALTER TABLE session_tree_entries DISABLE TRIGGER session_tree_entries_inserted`,
          () =>
            sql`
              INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
              SELECT session_id, 2, 'intruder', line FROM session_tree_entries WHERE session_id = 'outrun-untriggered' AND seq = 1`,
          () => Effect.orDie(sql`ALTER TABLE session_tree_entries ENABLE TRIGGER session_tree_entries_inserted`)
        )
        const copied = yield* snapshot("outrun-untriggered")
        expect(copied.sessions).toMatchObject([{ incarnation: seen!.incarnation, head: 1 }])
        const refused = yield* Effect.flip(untriggered.append(first.id, user("m2", "mine")))
        expect([refused.code, refused.reason]).toEqual(["SESSION_REPLACED", "the session holds rows this store did not see; reload it"])
        expect(yield* snapshot("outrun-untriggered")).toEqual(copied)
        expect(untriggered.entries).toEqual([first])
      }))

    it.scoped("a session removed and created again under its ID is a new incarnation: an old writer gets SESSION_REPLACED", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const old = yield* SessionStore.create("reborn")
        yield* sql`DELETE FROM session_tree_sessions WHERE id = 'reborn'`
        const reborn = yield* SessionStore.create("reborn")
        // Both see head 0; only the incarnation tells them apart.
        expect(codeOf(yield* Effect.either(old.append(null, user("m1", "old"))))).toBe("SESSION_REPLACED")
        const entry = yield* reborn.append(null, user("m1", "new"))
        expect((yield* SessionStore.read("reborn")).entries).toEqual([entry])
      }))

    it.scoped("create on a taken ID is SESSION_EXISTS and changes no row; a create with entries is one transaction", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const journal = yield* SessionJournal
        yield* SessionStore.create("taken")
        const before = yield* snapshot("taken")
        expect(codeOf(yield* Effect.either(SessionStore.create("taken")))).toBe("SESSION_EXISTS")
        expect(yield* snapshot("taken")).toEqual(before)

        // A fork or an import creates a session with its entries at once.
        const header = `{"type":"session","version":1,"id":"whole","timestamp":"1970-01-01T00:00:00.000Z"}`
        const entries = Array.from({ length: 300 }, (_, i) =>
          `{"type":"entry","version":1,"id":"e${i}","parentId":${i === 0 ? "null" : `"e${i - 1}"`},"timestamp":"1970-01-01T00:00:00.000Z","message":{"role":"user","id":"m${i}","content":"x"}}`)
        const lines = [header, ...entries]
        yield* journal.create("whole", { lines, sizes: lines.map((l) => Buffer.byteLength(l)), ids: entries.map((_, i) => `e${i}`) })
        const [counted] = yield* sql<{ transactions: number; rows: number }>`
          SELECT count(DISTINCT xmin::text)::int4 AS transactions, count(*)::int4 AS rows FROM session_tree_entries WHERE session_id = 'whole'`
        expect(counted).toEqual({ transactions: 1, rows: 300 })
        const loaded = yield* SessionStore.read("whole")
        expect(loaded.entries.map((e) => e.id)).toEqual(entries.map((_, i) => `e${i}`))
        expect(codeOf(yield* Effect.either(journal.create("whole", { lines: [header], sizes: [header.length], ids: [] })))).toBe(
          "SESSION_EXISTS"
        )
        // A create and an append that ask for no listing commit all the same, and keep none.
        const opened = yield* journal.hold("whole")
        const next = `{"type":"entry","version":1,"id":"e300","parentId":"e299","timestamp":"1970-01-01T00:00:00.000Z","message":{"role":"user","id":"m300","content":"x"}}`
        yield* opened.writer.append({ lines: [next], sizes: [next.length], ids: ["e300"] })
        expect((yield* SessionStore.read("whole")).entries).toHaveLength(301)
        expect(yield* sql`SELECT count(*)::int4 AS n FROM session_tree_listings WHERE session_id = 'whole'`).toEqual([{ n: 0 }])
      }))

    it.scoped("a commit that waits longer than lockTimeout for another writer's commit is SESSION_BUSY and writes nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* SessionStore.create("busy").pipe(
          Effect.provideServiceEffect(SessionJournal, Effect.map(SqlClient.SqlClient, (sql) => PgJournal.make(sql, { lockTimeout: "150 millis" })))
        )
        const root = yield* store.append(null, user("m1", "root"))
        const held = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // Another writer's transaction holds the session row, as a commit in flight does.
        const holder = yield* Effect.fork(sql.withTransaction(
          sql`SELECT head FROM session_tree_sessions WHERE id = 'busy' FOR UPDATE`.pipe(
            Effect.zipRight(Deferred.succeed(held, undefined)),
            Effect.zipRight(Deferred.await(release))
          )
        ))
        yield* Deferred.await(held)
        const before = yield* snapshot("busy")
        const entries = store.entries
        const started = Date.now()
        const busy = yield* Effect.either(store.append(root.id, user("m2", "waits")))
        const waited = Date.now() - started
        console.log(`SESSION_BUSY after a lock wait of ${waited} ms (lockTimeout 150 ms)`)
        expect(codeOf(busy)).toBe("SESSION_BUSY")
        expect(waited).toBeGreaterThanOrEqual(140)
        expect(store.entries).toBe(entries)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(holder)
        expect(yield* snapshot("busy")).toEqual(before)
        // The holder changed nothing, so the same store appends once the lock is free.
        const next = yield* store.append(root.id, user("m2", "after"))
        expect(store.entries).toEqual([root, next])
      }))

    it.scoped("a writer whose scope has closed refuses every batch with SESSION_IO and writes nothing", () =>
      Effect.gen(function*() {
        const journal = yield* SessionJournal
        yield* Effect.scoped(SessionStore.create("closed"))
        const opened = yield* Effect.scoped(journal.hold("closed"))
        const line = `{"type":"entry","version":1,"id":"late","parentId":null,"timestamp":"1970-01-01T00:00:00.000Z","message":{"role":"user","id":"m","content":"late"}}`
        const batch = { lines: [line], sizes: [line.length], ids: ["late"] }
        const refused = yield* Effect.either(opened.writer.append(batch))
        expect(Either.isLeft(refused) && [refused.left.code, refused.left.reason]).toEqual(["SESSION_IO", "the store's scope is closed"])
        expect((yield* snapshot("closed")).entries).toEqual([])
      }))

    it.scoped("session IDs a text column cannot hold are refused typed, and no row is written", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [before] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM session_tree_sessions`
        for (const id of ["a\u0000b", "lone \ud800 surrogate", ""]) {
          expect(codeOf(yield* Effect.either(SessionStore.create(id)))).toBe("SESSION_INVALID_HEADER")
          expect(codeOf(yield* Effect.either(SessionStore.read(id)))).toBe("SESSION_NOT_FOUND")
        }
        const [after] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM session_tree_sessions`
        expect(after).toEqual(before)
      }))

    it.scoped("reading a session that does not exist is SESSION_NOT_FOUND; the database's own row order changes nothing", () =>
      Effect.gen(function*() {
        expect(codeOf(yield* Effect.either(SessionStore.read("nowhere")))).toBe("SESSION_NOT_FOUND")
        expect(codeOf(yield* Effect.either(SessionStore.load("nowhere")))).toBe("SESSION_NOT_FOUND")
        const { url } = yield* TestDatabase
        expect(url).toContain("st_journal_")
      }))
  })

  it.live("a database without the schema is SESSION_IO naming the migration, never a defect", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase("unmigrated")
      const outcome = yield* Effect.either(
        Effect.scoped(SessionStore.read("any")).pipe(Effect.provide(PgJournal.layerUrl(Redacted.make(url))))
      )
      expect(Either.isLeft(outcome) && [outcome.left.code, /migrate/.test(outcome.left.message)]).toEqual(["SESSION_IO", true])
      const cause = Either.isLeft(outcome) ? (outcome.left.cause as { _tag?: string; cause?: { code?: string } }) : undefined
      expect([cause?._tag, cause?.cause?.code]).toEqual(["SqlError", "42P01"])
    }).pipe(Effect.scoped))

  it.live("layerConfig reads the client's configuration from Config, and gives the journal, the catalog and the client", () =>
    Effect.gen(function*() {
      const url = yield* freshDatabase("config")
      const layer = PgJournal.layerConfig({ url: Config.redacted("SESSION_TREE_DB"), maxConnections: Config.succeed(2) })
      const program = Effect.gen(function*() {
        yield* Migrations.migrate
        yield* Effect.scoped(SessionStore.create("configured"))
        const scanned = yield* (yield* SessionCatalog).scan(undefined)
        return scanned.map((s) => s.location)
      })
      const locations = yield* program.pipe(
        Effect.provide(Layer.merge(layer, Ids.layerRandom)),
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["SESSION_TREE_DB", url]])))
      )
      expect(locations).toEqual(["configured"])
    }).pipe(Effect.scoped))

  it.live("a server that cannot be reached is SESSION_IO when the layer is built", () =>
    Effect.gen(function*() {
      const built = yield* Effect.either(
        Layer.build(PgJournal.layerClient({ host: "127.0.0.1", port: 1, connectTimeout: "2 seconds" }))
      )
      expect(Either.isLeft(built) && built.left.code).toBe("SESSION_IO")
    }).pipe(Effect.scoped))
})

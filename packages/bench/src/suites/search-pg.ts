/**
 * S2. Search in PostgreSQL at a million entries: `Sessions.search` over
 * `PgSearch` (the GIN index of the migration to version 4, brought up to date by
 * the first search; then the library decodes and matches the rows the index
 * finds) against the bare SQL of the index lookup it starts from (the floor:
 * the candidate rows' count), same run, same server.
 *
 * The sessions are written as rows straight into a fresh database (the bench
 * does not measure imports), then the first search makes the index: its time is
 * reported on its own. The rows are the canonical lines of the same agent
 * sessions as S1.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as Migrations from "@session-tree/pg/Migrations"
import * as PgJournal from "@session-tree/pg/PgJournal"
import { bootServer } from "@session-tree/testing/Postgres"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import { now, quantile, rounds, type Row, summarize } from "../harness.js"
import { agentSession, COMMON, PHRASE, RARE } from "../serveData.js"

export interface SearchPgOptions {
  readonly rounds: number
  /** Entries in all (default 10^6), in sessions of 1,000. */
  readonly entries?: number
}

const PER_SESSION = 1_000
const FLOOR = "SQL: the index lookup alone (count of candidate rows)"

const urlOf = (adminUrl: string, database: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${database}`
  return url.toString()
}

export const benchSearchPg = async (options: SearchPgOptions): Promise<{ readonly rows: Array<Row>; readonly note: string; readonly indexMs: number; readonly p50: number; readonly p95: number }> => {
  const total = options.entries ?? 1_000_000
  const external = process.env["SESSION_TREE_TEST_DB"]
  const server = external !== undefined && external !== "" ? undefined : await bootServer("bench-search")
  const adminUrl = server?.url() ?? external!
  const name = `st_bench_search_${process.pid}`
  const admin = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 }))
  await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE DATABASE ${sql(name)}`))
  const url = urlOf(adminUrl, name)
  const runtime = ManagedRuntime.make(Layer.provideMerge(Sessions.layer, Layer.merge(PgJournal.layerUrl(url), Ids.layerRandom)))
  try {
    await Effect.runPromise(Migrations.migrateUrl(url))
    let rare = 0
    let phrase = 0
    const sessions = Math.ceil(total / PER_SESSION)
    await runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (let n = 0; n < sessions; n++) {
        const made = agentSession(n, PER_SESSION)
        rare += made.rare
        phrase += made.phrase
        const entries = made.lines.slice(1)
        const ids = entries.map((line) => (JSON.parse(line) as { id: string }).id)
        yield* sql`
          WITH s AS (
            INSERT INTO session_tree_sessions (id, header, head, incarnation)
            VALUES (${`s${String(n).padStart(6, "0")}`}, ${made.lines[0]!}, ${entries.length}::int4, gen_random_uuid())
            RETURNING id
          )
          INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
          SELECT s.id, e.ord::int4, e.entry_id, e.line FROM s, unnest(${ids}::text[], ${entries}::text[]) WITH ORDINALITY AS e(entry_id, line, ord)`
      }
      yield* sql`ANALYZE`
    }))
    const search = (query: string, expected?: number) =>
      runtime.runPromise(Effect.flatMap(Sessions.Sessions, (s) => s.search({ query, limit: 20 }))).then((result) => {
        if (expected !== undefined && result.total !== expected) throw new Error(`ours found ${result.total} for ${query}, not ${expected}`)
        return result
      })
    const started = now()
    await search(RARE, rare)
    const indexMs = now() - started
    await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`VACUUM ANALYZE session_tree_search`))
    const floor = (lexemes: ReadonlyArray<string>) => () =>
      runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql`SELECT count(*)::int4 AS n FROM session_tree_search WHERE lexemes @@ ${lexemes.map((l) => `'${l}'`).join(" & ")}::tsquery`)).then(() => undefined)
    const rows: Array<Row> = []
    const all: Array<number> = []
    for (const [group, query, lexemes, expected] of [
      [`a rare word (${rare} entries)`, RARE, [RARE], rare],
      [`a phrase (${phrase} entries)`, `"${PHRASE.join(" ")}"`, [...PHRASE], phrase]
    ] as const) {
      const samples = await rounds([
        { name: FLOOR, run: floor(lexemes) },
        { name: `ours: Sessions.search(${query})`, run: () => search(query, expected).then(() => undefined) }
      ], { rounds: options.rounds, warmup: 2 })
      all.push(...samples[1]!.ms)
      rows.push(...summarize(group, samples, FLOOR))
    }
    // A common word: thousands of candidate rows, each decoded and matched (the page is 20, the count exact).
    const common = await rounds([
      { name: FLOOR, run: floor([COMMON]) },
      { name: `ours: Sessions.search(${COMMON})`, run: () => search(COMMON).then(() => undefined) }
    ], { rounds: Math.max(3, Math.floor(options.rounds / 4)), warmup: 1 })
    rows.push(...summarize(`a common word (every third entry or more)`, common, FLOOR))
    return {
      rows,
      note: `${(sessions * PER_SESSION).toLocaleString("en-US")} entries in ${sessions.toLocaleString("en-US")} sessions; the index made by the first search in ${(indexMs / 1000).toFixed(1)} s`,
      indexMs,
      p50: quantile(all, 0.5),
      p95: quantile(all, 0.95)
    }
  } finally {
    await runtime.dispose()
    await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`)).catch(() => {})
    await admin.dispose()
    server?.dispose()
  }
}

/**
 * Migrations (SPEC C2, C5 `migrate`): idempotent, and safe when several
 * processes start at once. Six OS processes migrate the same fresh database at
 * the same moment, for several databases in a row: every one of them must
 * succeed, exactly one must have applied each version, and the version table
 * must hold one row per version. (Without the advisory lock, plain
 * `CREATE TABLE IF NOT EXISTS` run like this fails in most processes with
 * 42P07/23505/42710.)
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { expect, it } from "vitest"
import * as Migrations from "../src/Migrations.js"
import { prepareChild, spawnChild } from "./support/children.js"
import { freshDatabase } from "./support/database.js"

const PROCESSES = 6
const ROUNDS = 4

const inDatabase = <A, E>(url: string, f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.provide(Effect.flatMap(SqlClient.SqlClient, f), PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })))

it(`${PROCESSES} processes migrating a fresh database at once all succeed, and each version is applied once (${ROUNDS} databases)`, async () => {
  const migrator = await prepareChild("migrator.ts")
  const children = Array.from({ length: PROCESSES }, () => spawnChild(migrator, []))
  await Promise.all(children.map((c) => c.waitFor("loaded")))
  const outcomes: Array<Record<string, number>> = []
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const url = yield* freshDatabase(`migrate_${round}`)
        const before = children.map((c) => c.lines.length)
        for (const c of children) c.send(`migrate ${url}`)
        const answers = yield* Effect.promise(() =>
          Promise.all(children.map((c, i) => c.waitForCount("", before[i]! + 1).then(() => c.lines[before[i]!]!)))
        )
        const tally: Record<string, number> = {}
        for (const answer of answers) tally[answer] = (tally[answer] ?? 0) + 1
        outcomes.push(tally)
        // Every process succeeded; exactly one applied the versions, the others found nothing to do.
        expect(tally).toEqual({ [`ok ${JSON.stringify(Migrations.versions.map((v) => v.version))}`]: 1, "ok []": PROCESSES - 1 })
        const rows = yield* inDatabase(url, (sql) =>
          sql<{ version: number; name: string }>`SELECT version, name FROM session_tree_migrations ORDER BY version`)
        expect(rows).toEqual(Migrations.versions)
        const tables = yield* inDatabase(url, (sql) =>
          sql<{ name: string }>`SELECT tablename AS name FROM pg_tables WHERE tablename LIKE 'session_tree_%' ORDER BY 1`)
        expect(tables.map((t) => t.name)).toEqual([
          "session_tree_blobs",
          "session_tree_entries",
          "session_tree_listings",
          "session_tree_migrations",
          "session_tree_search",
          "session_tree_search_state",
          "session_tree_sessions"
        ])
        // Idempotent: once more, from this process, nothing is applied and nothing changes.
        const again = yield* Migrations.migrateUrl(url)
        expect(again).toEqual({ applied: [], version: Migrations.LATEST })
        expect(yield* inDatabase(url, (sql) => sql`SELECT version, name FROM session_tree_migrations ORDER BY version`)).toEqual(rows)
        expect(yield* inDatabase(url, (sql) => Effect.provideService(Migrations.version, SqlClient.SqlClient, sql))).toBe(Migrations.LATEST)
      })))
    }
  } finally {
    for (const c of children) c.proc.stdin!.end()
    await Promise.all(children.map((c) => c.exited))
  }
  console.log(`[pg:migrations] ${PROCESSES} processes x ${ROUNDS} fresh databases: ${JSON.stringify(outcomes)}`)
})

it("control: the same DDL without the advisory lock, run by the same processes at once, fails in some of them", async () => {
  // This shows that the processes above really race; it is about the test, not the library.
  const migrator = await prepareChild("migrator.ts")
  const children = Array.from({ length: PROCESSES }, () => spawnChild(migrator, []))
  await Promise.all(children.map((c) => c.waitFor("loaded")))
  const tally: Record<string, number> = {}
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
        const url = yield* freshDatabase(`unlocked_${round}`)
        const before = children.map((c) => c.lines.length)
        for (const c of children) c.send(`unlocked ${url}`)
        const answers = yield* Effect.promise(() =>
          Promise.all(children.map((c, i) => c.waitForCount("", before[i]! + 1).then(() => c.lines[before[i]!]!)))
        )
        for (const answer of answers) tally[answer] = (tally[answer] ?? 0) + 1
      })))
    }
  } finally {
    for (const c of children) c.proc.stdin!.end()
    await Promise.all(children.map((c) => c.exited))
  }
  console.log(`[pg:migrations] control without the lock, ${PROCESSES} processes x ${ROUNDS} databases: ${JSON.stringify(tally)}`)
  expect(tally["ok"] ?? 0).toBeLessThan(PROCESSES * ROUNDS)
})

it("a database at a newer schema version than this library knows is refused with SESSION_IO, changing nothing", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const url = yield* freshDatabase("migrate_newer")
    yield* Migrations.migrateUrl(url)
    yield* inDatabase(url, (sql) => sql`INSERT INTO session_tree_migrations (version, name) VALUES (${Migrations.LATEST + 1}, 'from the future')`)
    const versionsOf = inDatabase(url, (sql) => sql`SELECT version, name, applied_at FROM session_tree_migrations ORDER BY version`)
    const before = yield* versionsOf
    const refused = yield* Effect.either(Migrations.migrateUrl(url))
    expect(refused._tag === "Left" && [refused.left.code, /newer/.test(refused.left.message)]).toEqual(["SESSION_IO", true])
    expect(yield* versionsOf).toEqual(before)
    const checked = yield* inDatabase(url, (sql) => Effect.either(Effect.provideService(Migrations.check, SqlClient.SqlClient, sql)))
    expect(checked._tag === "Left" && checked.left.code).toBe("SESSION_IO")
  })))
})

it("an unreachable database is SESSION_IO for migrate, never a defect", async () => {
  const refused = await Effect.runPromise(Effect.either(Migrations.migrateUrl("postgres://nobody:x@127.0.0.1:1/none")))
  expect(refused._tag === "Left" && refused.left.code).toBe("SESSION_IO")
})

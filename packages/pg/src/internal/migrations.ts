import * as SqlClient from "@effect/sql/SqlClient"
import { type ConflictError, type IoError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import { ioError, type Progress, transaction, writeError } from "./errors.js"
import { MIGRATION_LOCK, migrations, VERSION_TABLE } from "./schema.js"

export interface Migrated {
  /** The versions this call applied, in order; empty when the schema was already current. */
  readonly applied: ReadonlyArray<number>
  /** The schema version the database is at now. */
  readonly version: number
}

export const LATEST: number = migrations[migrations.length - 1]!.version

/**
 * Applies every missing migration in one transaction, behind a transaction-scoped advisory lock:
 * processes that start at once queue on the lock, and each finds the version table as the one
 * before it left it, so the DDL runs once and the rest see nothing to do. Plain
 * `CREATE TABLE IF NOT EXISTS` is not enough for that: run at the same moment it fails with
 * 42P07/23505 in all but one process.
 */
export const migrate: Effect.Effect<Migrated, ConflictError | IoError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  const progress: Progress = { committing: false }
  return yield* transaction(
    sql,
    progress,
    Effect.gen(function*() {
      yield* sql`SELECT set_config('synchronous_commit', 'on', true)`
      yield* sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK}::int8)`
      yield* sql.unsafe(VERSION_TABLE)
      const rows = yield* sql<{ readonly version: number }>`SELECT version FROM session_tree_migrations ORDER BY version`
      const done = new Set(rows.map((row) => row.version))
      const newest = rows.length === 0 ? 0 : rows[rows.length - 1]!.version
      if (newest > LATEST) {
        return yield* sessionError(
          "SESSION_IO",
          `the database schema is at version ${newest}, newer than this library's ${LATEST}: upgrade the library`
        )
      }
      const applied: Array<number> = []
      for (const migration of migrations) {
        if (done.has(migration.version)) continue
        for (const statement of migration.statements) yield* sql.unsafe(statement)
        yield* sql`INSERT INTO session_tree_migrations (version, name) VALUES (${migration.version}::int4, ${migration.name})`
        applied.push(migration.version)
      }
      return { applied, version: LATEST }
    })
  ).pipe(Effect.mapError((error) => writeError("migrating the database failed", error, progress)))
})

/** The schema version of the database: 0 when it has never been migrated. */
export const version: Effect.Effect<number, IoError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = (yield* SqlClient.SqlClient).withoutTransforms()
  // The table is looked up first: a statement that names a missing table fails as a whole.
  const [probe] = yield* sql<{ readonly exists: boolean }>`
    SELECT to_regclass('session_tree_migrations') IS NOT NULL AS exists`.pipe(
    Effect.mapError((error) => ioError("reading the schema version failed", error))
  )
  if (probe?.exists !== true) return 0
  const [row] = yield* sql<{ readonly version: number }>`
    SELECT coalesce(max(version), 0)::int4 AS version FROM session_tree_migrations`.pipe(
    Effect.mapError((error) => ioError("reading the schema version failed", error))
  )
  return row?.version ?? 0
})

/** SESSION_IO unless the database is at the schema version this library writes. */
export const check: Effect.Effect<void, IoError, SqlClient.SqlClient> = Effect.flatMap(version, (current) =>
  current === LATEST
    ? Effect.void
    : Effect.fail(
      sessionError(
        "SESSION_IO",
        current < LATEST
          ? `the database schema is at version ${current}, this library needs ${LATEST}: run \`session-tree migrate --db URL\``
          : `the database schema is at version ${current}, newer than this library's ${LATEST}: upgrade the library`
      )
    ))

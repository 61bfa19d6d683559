/**
 * The schema of the PostgreSQL backend, created and upgraded by versioned
 * migrations (`session-tree migrate --db URL`). `migrate` is
 * idempotent and safe when several processes run it at once: it applies every
 * missing version in one transaction behind an advisory lock, and records each
 * in `session_tree_migrations`, one row per version.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import type { ConflictError, IoError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { ioError } from "./internal/errors.js"
import * as internal from "./internal/migrations.js"
import { migrations } from "./internal/schema.js"

/**
 * What a migration did: the versions it applied and the version the database is at now.
 *
 * @since 0.1.0
 * @category models
 */
export type Migrated = internal.Migrated

/**
 * The versions this library knows, oldest first, with what each one adds.
 *
 * @since 0.1.0
 * @category migrations
 */
export const versions: ReadonlyArray<{ readonly version: number; readonly name: string }> = migrations.map((m) => ({
  version: m.version,
  name: m.name
}))

/**
 * The schema version this library reads and writes.
 *
 * @since 0.1.0
 * @category constants
 */
export const LATEST: number = internal.LATEST

/**
 * Creates or upgrades the schema of the `SqlClient`'s database to `LATEST`.
 * Running it again does nothing; a database at a newer version than this
 * library knows is SESSION_IO, as is any failure of the database (nothing is
 * then changed: all versions apply in one transaction).
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrate: Effect.Effect<Migrated, ConflictError | IoError, SqlClient.SqlClient> = internal.migrate

/**
 * The schema version of the database; 0 when it was never migrated.
 *
 * @since 0.1.0
 * @category migrations
 */
export const version: Effect.Effect<number, IoError, SqlClient.SqlClient> = internal.version

/**
 * SESSION_IO (saying what to run) unless the database is at `LATEST`.
 *
 * @since 0.1.0
 * @category migrations
 */
export const check: Effect.Effect<void, IoError, SqlClient.SqlClient> = internal.check

/**
 * `migrate` on the database at `url`, over a connection of its own that is
 * closed afterwards: what `session-tree migrate --db URL` runs.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrateUrl = (url: string | Redacted.Redacted): Effect.Effect<Migrated, ConflictError | IoError> =>
  Effect.scoped(
    Effect.flatMap(
      Layer.build(
        PgClient.layer({ url: typeof url === "string" ? Redacted.make(url) : url, maxConnections: 1 }).pipe(
          Layer.mapError((error) => ioError("connecting to the database failed", error))
        )
      ),
      (context) => Effect.provide(migrate, context)
    )
  )

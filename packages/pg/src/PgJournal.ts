/**
 * The PostgreSQL backend: a session is a row of
 * `session_tree_sessions` (its ID, its header's canonical line, its head = the
 * number of entries) and one row of `session_tree_entries` per entry (its
 * canonical line as text, exactly). The location of a session is its ID.
 *
 * - create inserts the session row and its entry rows in one transaction:
 *   all of it or nothing; SESSION_EXISTS when the ID is taken.
 * - read and open use one statement, so one snapshot: a commit is seen whole
 *   or not at all. Rows must number the entries 1..head; the lines are then
 *   validated by the core as any file's lines are.
 * - an append (a group-commit batch) is one transaction with
 *   `synchronous_commit` on: a compare-and-set of the head against what the
 *   writer last saw, then the new rows. The loser of a race writes nothing and
 *   fails with SESSION_REPLACED, or SESSION_BUSY when another writer's commit
 *   holds the session longer than `lockTimeout`. The same statement keeps the
 *   session's listing (`Batch.listing`) under the version the commit makes, as
 *   create does, so that a listing reads no session that has not changed.
 * - a session's blobs are rows of `session_tree_blobs` (its ID, the blob's
 *   SHA-256, its size and bytes), inserted in the transaction of the append
 *   (or the create, for a fork, which copies the rows of its path) that first
 *   refers to them, and removed with their session. The statement that reads
 *   a session's lines also reads the hash and length of each of its blobs, so
 *   the core checks every reference against the same snapshot; reading a
 *   blob checks its bytes against its hash (SESSION_BLOB_CORRUPT).
 * - every failure of the database or the connection is SESSION_IO with the
 *   `SqlError` as its cause; when the connection failed while COMMIT was in
 *   flight the message says the outcome is unknown, and the writer keeps what
 *   it saw, so its next append fails with SESSION_REPLACED if the batch did commit.
 *
 * Session IDs and lines only ever travel as query parameters. A session ID is
 * non-empty text of at most 1,024 UTF-8 bytes without U+0000 or a lone
 * surrogate: create refuses any other with SESSION_INVALID_HEADER, and read and
 * open answer SESSION_NOT_FOUND. The schema comes from `Migrations.migrate`
 * (`session-tree migrate --db URL`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import type { SearchIndex } from "@session-tree/core/Search"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionChanges } from "@session-tree/core/SessionChanges"
import type { SessionError } from "@session-tree/core/SessionError"
import { SessionJournal, type SessionJournalService } from "@session-tree/core/SessionJournal"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { ioError } from "./internal/errors.js"
import * as internal from "./internal/journal.js"
import * as PgCatalog from "./PgCatalog.js"
import * as PgChanges from "./PgChanges.js"
import * as PgSearch from "./PgSearch.js"

/**
 * The journal's settings: `lockTimeout`, how long a commit waits for another writer's before SESSION_BUSY (5 seconds).
 *
 * @since 0.1.0
 * @category models
 */
export type Options = internal.Options

/**
 * The journal over `sql`: sessions in the first schema of its connections' `search_path`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (sql: SqlClient.SqlClient, options?: Options) => SessionJournalService = internal.make

/**
 * The journal over the `SqlClient` in context, with `options`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWith = (options?: Options): Layer.Layer<SessionJournal, never, SqlClient.SqlClient> =>
  Layer.effect(SessionJournal, Effect.map(SqlClient.SqlClient, (sql) => make(sql, options)))

/**
 * The journal over the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SessionJournal, never, SqlClient.SqlClient> = layerWith()

/**
 * What the convenience layers provide: the journal, the catalog, search, changes, and the client they run on.
 *
 * @since 0.2.0
 * @category models
 */
export type Services = SessionJournal | SessionCatalog | SearchIndex | SessionChanges | SqlClient.SqlClient | PgClient.PgClient

// Layers made anew per call: a constant layer is built once per memo map, so a second database's
// layer in the same program (or the same test file) would get the first one's catalog.
const over = <E>(client: Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, E>, options?: Options) =>
  Layer.mergeAll(layerWith(options), Layer.fresh(PgCatalog.layer), Layer.fresh(PgSearch.layer), Layer.fresh(PgChanges.layer)).pipe(
    Layer.provideMerge(client)
  )

/**
 * The journal and catalog over a new `PgClient` (a pool) made from `config`; a failed connect is SESSION_IO.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerClient = (config: PgClient.PgClientConfig, options?: Options): Layer.Layer<Services, SessionError> =>
  over(PgClient.layer(config).pipe(Layer.mapError((error) => ioError("connecting to the database failed", error))), options)

/**
 * The journal and catalog over a new `PgClient` for the database at `url` (`postgres://user:password@host:port/db`).
 * A `connect_timeout` parameter in the URL (whole seconds, as libpq reads it: at least 2) bounds the
 * wait for a connection, 5 seconds by default; one that is not a whole number of seconds of at least
 * 1 is SESSION_INVALID_OPTIONS.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerUrl = (url: string | Redacted.Redacted, options?: Options): Layer.Layer<Services, SessionError> => {
  const redacted = typeof url === "string" ? Redacted.make(url) : url
  const timeout = internal.connectTimeoutOf(Redacted.value(redacted))
  return typeof timeout === "object"
    ? Layer.fail(timeout)
    : layerClient({ url: redacted, ...(timeout === undefined ? {} : { connectTimeout: Duration.seconds(timeout) }) }, options)
}

/**
 * The journal and catalog over a new `PgClient` whose configuration is read from `Config`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<PgClient.PgClientConfig>,
  options?: Options
): Layer.Layer<Services, SessionError | ConfigError.ConfigError> =>
  over(
    PgClient.layerConfig(config).pipe(
      Layer.mapError((error) => (error._tag === "SqlError" ? ioError("connecting to the database failed", error) : error))
    ),
    options
  )

/**
 * The catalog of a PostgreSQL database (`session-tree list --db`): every session row
 * with a version that changes whenever the session does (`incarnation:head`: an
 * append moves the head; a session created again under the same ID, or whose
 * rows anything but an append changed, draws a new incarnation), reads of many
 * sessions in few statements, and listings kept in the database for every node
 * under the version they were made for. Like the journal, it never parses a
 * record.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SessionCatalog, type SessionCatalogService } from "@session-tree/core/SessionCatalog"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as internal from "./internal/catalog.js"

/**
 * The catalog over `sql`. `scan` ignores its directory (a database holds one set of
 * sessions: those in the first schema of the connection's `search_path`); a
 * session's `changed` is the time of its last commit in epoch milliseconds,
 * with the database's microseconds as a fraction. `readMany` reads up to
 * `READ_CHUNK` sessions per statement, each as `SessionJournal.read` would; `delete`
 * removes a session row in one transaction, its entries and listing by cascade.
 * `listings` keeps summaries in `session_tree_listings`: each commit of the
 * journal keeps its session's listing in its own transaction, and `remember`
 * keeps those a listing had to read, under the session's current version
 * only, without waiting for the disk (a cache: losing one costs a read).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (sql: SqlClient.SqlClient) => SessionCatalogService = internal.make

/**
 * Sessions read by one statement of `readMany`.
 *
 * @since 0.1.0
 * @category constants
 */
export const READ_CHUNK: number = internal.READ_CHUNK

/**
 * The catalog over the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SessionCatalog, never, SqlClient.SqlClient> = Layer.effect(
  SessionCatalog,
  Effect.map(SqlClient.SqlClient, make)
)

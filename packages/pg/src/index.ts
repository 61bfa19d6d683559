/**
 * The schema of the PostgreSQL backend, created and upgraded by versioned migrations
 * (`session-tree migrate --db URL`).
 *
 * @since 0.1.0
 * @category modules
 */
export * as Migrations from "./Migrations.js"
/**
 * The catalog of a PostgreSQL database (`session-tree list --db`): every session row with a
 * version that changes whenever the session does (`incarnation:head`: an append moves the head; a
 * session created again under the same ID, or whose rows anything but an append changed, draws a
 * new incarnation), reads of many sessions in few statements, and listings kept in the database
 * for every node under the version they were made for.
 *
 * @since 0.1.0
 * @category modules
 */
export * as PgCatalog from "./PgCatalog.js"
/**
 * What changes in a PostgreSQL database, as it changes (`SessionChanges`): the migration's
 * trigger sends a session's ID on the channel `session_tree_changes` in the transaction of every
 * create, append, delete and new incarnation, so a `LISTEN` hears of a commit when it commits,
 * from any node.
 *
 * @since 0.2.0
 * @category modules
 */
export * as PgChanges from "./PgChanges.js"
/**
 * The PostgreSQL backend: a session is a row of `session_tree_sessions` (its ID, its header's
 * canonical line, its head = the number of entries) and one row of `session_tree_entries` per
 * entry (its canonical line as text, exactly).
 *
 * @since 0.1.0
 * @category modules
 */
export * as PgJournal from "./PgJournal.js"
/**
 * Search in a PostgreSQL database (`Sessions.search`): the database's own full-text index (a GIN
 * index over a `tsvector` per entry, created by the migration to version 4) narrows the entries
 * to look at; the library decides every hit from the entry's line, or, for a query of whole words,
 * from the facts it kept of the entry when it indexed it (version 5), and then checks the page's lines.
 *
 * @since 0.2.0
 * @category modules
 */
export * as PgSearch from "./PgSearch.js"

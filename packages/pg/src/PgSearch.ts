/**
 * Search in a PostgreSQL database (`Sessions.search`): the database's own
 * full-text index (a GIN index over a `tsvector` per entry, created by the
 * migration to version 4) narrows the entries to look at; the library decides
 * every hit from the entry's line, or, for a query of whole words, from the
 * facts it kept of the entry when it indexed it (version 5), and then checks
 * the page's lines.
 *
 * The lexemes of each entry are made by the library (`Search.lineLexemes`), not
 * by PostgreSQL's parser, so that what the index finds is what the matcher
 * would take whatever the database's locale; they are written by the first
 * search that needs them (`session_tree_search`, under the session's
 * incarnation and head in `session_tree_search_state`), never by a commit, so
 * appends cost what they cost before. A session whose row moved on (an append,
 * a new incarnation) is brought up to date before the query, in a transaction
 * of its own behind an advisory lock, so concurrent searches take turns.
 *
 * Since the migration to version 5 each entry's row also keeps what the
 * library decided of it (`Search.entryFacts`: timestamp, role, model), so a
 * query of whole words is counted and ranked from the index and only the
 * page's lines are read and checked (`docs/serve.md`, "Search").
 *
 * @since 0.2.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { SearchIndex, type SearchIndexService } from "@session-tree/core/Search"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as internal from "./internal/search.js"

/**
 * The search of the sessions over `sql`.
 * @since 0.2.0
 * @category constructors
 */
export const make: (sql: SqlClient.SqlClient) => SearchIndexService = internal.make

/**
 * The search over the `SqlClient` in context.
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<SearchIndex, never, SqlClient.SqlClient> = Layer.effect(SearchIndex, Effect.map(SqlClient.SqlClient, make))

/**
 * Reading sessions back: one statement returns the session rows, their entry rows and the names
 * and sizes of their blobs (so all of it comes from one snapshot), and the rows of each session
 * become its lines. The rows' own
 * structure is checked here (entries numbered 1..head, one row each); what the lines say is the
 * core's to check, as for any backend.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import { type CorruptError, type InputError, sessionError } from "@session-tree/core/SessionError"
import type { Stored } from "@session-tree/core/SessionJournal"
import * as Tracing from "@session-tree/core/Tracing"
import * as Effect from "effect/Effect"

/**
 * The version of the session row `row` (a table name or alias) as SQL: `incarnation:head`. Every
 * statement that reports or keeps a version builds it here, so a kept listing and the catalog's scan
 * can only agree when they name the same state of the row.
 */
export const versionOf = (row: string): Statement.Fragment =>
  Statement.unsafeFragment(`(${row}.incarnation::text || ':' || ${row}.head::text)`)

/**
 * One row of `selectSessions`: a session's own row (`is_header`), one of its entries, or one of
 * its blobs (`seq` 0: `entry_id` its hash, `size` the length of its bytes as stored).
 */
interface Row {
  readonly id: string
  readonly is_header: boolean
  readonly seq: number
  readonly entry_id: string | null
  readonly line: string | null
  readonly size: number | null
  readonly head: number | null
  readonly incarnation: string | null
}

/**
 * The rows of the sessions `ids`, in no particular order (`inOrder` sorts them). One statement, so
 * one snapshot: a commit is seen whole or not at all. The server does not sort them: a sort of a
 * session's lines outgrows `work_mem` and spills to disk, which costs more than the rest of the read.
 */
const selectSessions = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
  sql<Row>`
    SELECT s.id, true AS is_header, 0 AS seq, NULL::text AS entry_id, s.header AS line,
           octet_length(s.header) AS size, s.head, s.incarnation::text AS incarnation
      FROM session_tree_sessions s
     WHERE s.id = ANY(${ids}::text[])
    UNION ALL
    SELECT e.session_id, false, e.seq, e.entry_id, e.line, octet_length(e.line), NULL, NULL
      FROM session_tree_entries e
     WHERE e.session_id = ANY(${ids}::text[])
    UNION ALL
    SELECT b.session_id, false, 0, b.hash, NULL, octet_length(b.bytes), NULL, NULL
      FROM session_tree_blobs b
     WHERE b.session_id = ANY(${ids}::text[])`

// With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u

/**
 * The longest session ID, in UTF-8 bytes. The ID is in every index of the schema, and a btree
 * index row holds about 2,700 bytes after compression: a longer ID that does not compress would
 * fail at the database (54000) as SESSION_IO. One bound well inside that holds for every ID.
 */
export const MAX_ID_BYTES = 1_024

/**
 * Whether `id` can name a session in the database at all: a text column holds neither U+0000 nor
 * a lone surrogate (the driver would store U+FFFD for it, so two IDs would share one row), and the
 * indexes take no ID longer than `MAX_ID_BYTES`.
 */
export const storableId = (id: string): boolean =>
  id !== "" && id.length <= MAX_ID_BYTES && Buffer.byteLength(id, "utf8") <= MAX_ID_BYTES && !id.includes("\u0000") &&
  !LONE_SURROGATE.test(id)

const notFound = (id: string): InputError => sessionError("SESSION_NOT_FOUND", "no session with this ID", { path: id })

/** Why a session's rows are not one: none (SESSION_NOT_FOUND), or rows changed behind the library's back. */
export type Unread = InputError | CorruptError

/** What one session's rows hold: its lines as `Stored`, and the head and incarnation a writer starts from. */
export interface Read {
  readonly stored: Stored
  readonly head: number
  readonly incarnation: string
}

const corrupt = (id: string, line: number, reason: string): CorruptError =>
  sessionError("SESSION_INVALID_RECORD", reason, { line, path: id })

/**
 * The lines of session `id` from its rows (`rows[from]` is its own row, the next `count` rows its
 * blobs, then its entries). Entries must be numbered 1..head with no gap and no repeat: anything else means rows
 * were changed behind the library's back, and the line named is the first one that is not as
 * the library wrote it (entry `seq` is line seq + 1).
 */
const readOf = (id: string, rows: ReadonlyArray<Row>, from: number, count: number): Read | Unread => {
  const own = rows[from]
  if (own === undefined || !own.is_header || own.head === null || own.incarnation === null) return notFound(id)
  if (own.line === null) return sessionError("SESSION_INVALID_HEADER", "the session row holds no header", { line: 1, path: id })
  const lines: Array<string> = [own.line]
  const sizes: Array<number> = [own.size!]
  const ids: Array<string> = []
  const blobs = new Map<string, number>()
  let size = own.size! + 1
  let i = 1
  for (; i < count && rows[from + i]!.seq === 0; i++) blobs.set(rows[from + i]!.entry_id!, rows[from + i]!.size!)
  const firstEntry = i
  for (; i < count; i++) {
    const row = rows[from + i]!
    const expected = i - firstEntry + 1
    if (row.seq !== expected) {
      return corrupt(
        id,
        expected + 1,
        row.seq < expected ? `entry ${row.seq} is stored twice` : `entry ${expected} is missing: the next stored entry is ${row.seq}`
      )
    }
    lines.push(row.line!)
    sizes.push(row.size!)
    ids.push(row.entry_id!)
    size += row.size! + 1
  }
  const entries = count - firstEntry
  if (entries !== own.head) {
    return corrupt(
      id,
      Math.min(entries, own.head) + 2,
      `the session row counts ${own.head} entries but ${entries} are stored`
    )
  }
  return {
    stored: { location: id, lines, sizes, ids, tail: "none", size, mark: markOf(own.incarnation, own.head), ...(blobs.size === 0 ? {} : { blobs }) },
    head: own.head,
    incarnation: own.incarnation
  }
}

/** Where a read of a session ended: its incarnation and head (`Stored.mark`). */
interface Mark {
  readonly _tag: "PgMark"
  readonly incarnation: string
  readonly head: number
}

const markOf = (incarnation: string, head: number): Mark => ({ _tag: "PgMark", incarnation, head })

const isMark = (mark: unknown): mark is Mark =>
  typeof mark === "object" && mark !== null && (mark as Mark)._tag === "PgMark"

/**
 * The session's own row, its blobs' names and sizes and its entry rows after `head`, in one
 * statement (one snapshot), in no particular order.
 */
const selectAfter = (sql: SqlClient.SqlClient, id: string, head: number): Effect.Effect<ReadonlyArray<Row>, SqlError> =>
  sql<Row>`
    SELECT s.id, true AS is_header, 0 AS seq, NULL::text AS entry_id, s.header AS line,
           octet_length(s.header) AS size, s.head, s.incarnation::text AS incarnation
      FROM session_tree_sessions s
     WHERE s.id = ${id}
    UNION ALL
    SELECT e.session_id, false, e.seq, e.entry_id, e.line, octet_length(e.line), NULL, NULL
      FROM session_tree_entries e
     WHERE e.session_id = ${id} AND e.seq > ${head}
    UNION ALL
    SELECT b.session_id, false, 0, b.hash, NULL, octet_length(b.bytes), NULL, NULL
      FROM session_tree_blobs b
     WHERE b.session_id = ${id}`

/**
 * The entries appended to session `id` after the read `before`, read by sequence: only when the
 * session row still has the incarnation it had then and a head at least as high. The library
 * never changes an entry row, a header or an ID in place, and the migration's triggers draw a new
 * incarnation for whatever else changes one (`schema.ts`), so under the same incarnation rows
 * 1..head of `before` are the rows read then. Undefined whenever that cannot be told (no mark, a
 * new incarnation, a lower head, rows that are not exactly head..new head): the caller reads whole.
 */
export const readAfter = (
  sql: SqlClient.SqlClient,
  id: string,
  before: Stored
): Effect.Effect<Stored | undefined, SqlError> => {
  const mark = before.mark
  if (!isMark(mark) || !storableId(id) || before.tail !== "none") return Effect.succeed(undefined)
  return Effect.map(selectAfter(sql, id, mark.head), (unordered): Stored | undefined => {
    const rows = inOrder(unordered)
    const own = rows[0]
    if (own === undefined || !own.is_header || own.incarnation !== mark.incarnation || own.head === null || own.head < mark.head) return undefined
    const lines: Array<string> = []
    const sizes: Array<number> = []
    const ids: Array<string> = []
    const blobs = new Map<string, number>()
    let size = before.size
    let i = 1
    for (; i < rows.length && rows[i]!.seq === 0; i++) blobs.set(rows[i]!.entry_id!, rows[i]!.size!)
    for (; i < rows.length; i++) {
      const row = rows[i]!
      if (row.seq !== mark.head + lines.length + 1) return undefined
      lines.push(row.line!)
      sizes.push(row.size!)
      ids.push(row.entry_id!)
      size += row.size! + 1
    }
    if (mark.head + lines.length !== own.head) return undefined
    return { location: id, lines, sizes, ids, tail: "none", size, mark: markOf(own.incarnation, own.head), ...(blobs.size === 0 ? {} : { blobs }) }
  }).pipe(Tracing.span("PgJournal.readAfter", { session: id }))
}

/** Rows by session (in no order of IDs; only equal IDs need to be together), each session's own row first, then its blobs (`seq` 0), then its entries by `seq`. */
const byRow = (a: Row, b: Row): number =>
  a.id !== b.id ? (a.id < b.id ? -1 : 1) : a.is_header !== b.is_header ? (a.is_header ? -1 : 1) : a.seq - b.seq

/**
 * `rows` grouped and ordered as `byRow` says. The entries of a session come back from its table
 * mostly in `seq` order already, which a merge sort passes over in one comparison a row.
 */
const inOrder = (rows: ReadonlyArray<Row>): ReadonlyArray<Row> => rows.slice().sort(byRow)

/** The sessions `ids` from the rows of `selectSessions` in order (`inOrder`), each as its `Read` or the reason it is not one. */
const readsOf = (ids: ReadonlyArray<string>, rows: ReadonlyArray<Row>): Map<string, Read | Unread> => {
  const found = new Map<string, Read | Unread>()
  let i = 0
  while (i < rows.length) {
    const id = rows[i]!.id
    let j = i + 1
    while (j < rows.length && rows[j]!.id === id) j++
    found.set(id, readOf(id, rows, i, j - i))
    i = j
  }
  for (const id of ids) if (!found.has(id)) found.set(id, notFound(id))
  return found
}

/**
 * Reads the sessions `ids` in one statement: each ID maps to its `Read` or the reason it is not one
 * (SESSION_NOT_FOUND for an ID that no row can hold, without asking the database). Fails only when
 * the statement does.
 */
export const readSessions = (
  sql: SqlClient.SqlClient,
  ids: ReadonlyArray<string>
): Effect.Effect<ReadonlyMap<string, Read | Unread>, SqlError> => {
  const storable = ids.filter(storableId)
  return (storable.length === 0
    ? Effect.succeed(readsOf(ids, []))
    : Effect.map(selectSessions(sql, storable), (rows) => readsOf(ids, inOrder(rows)))).pipe(
      Tracing.span("PgJournal.readSessions", { session: ids.length === 1 ? ids[0]! : `${ids.length} sessions`, batch: ids.length })
    )
}

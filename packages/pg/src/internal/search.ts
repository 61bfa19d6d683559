import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type { CandidateRequest, Candidates, SearchIndexService } from "@session-tree/core/Search"
import * as Search from "@session-tree/core/Search"
import type { IoError } from "@session-tree/core/SessionError"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { ioError, type Progress, transaction } from "./errors.js"

/** Entry rows read (and their lexemes written) per statement while the index is brought up to date. */
export const INDEX_CHUNK = 2_000

/** An entry whose lexemes would take more than this (as text) is kept as NULL: looked at by every search. */
const MAX_LEXEME_TEXT = 512 * 1024

/** A session whose lexemes are behind its row. */
interface Behind {
  readonly id: string
  readonly header: string | null
  readonly head: number
  readonly incarnation: string
  /** How many of its entries are kept under this incarnation (0: none, or under another one). */
  readonly kept: number
  readonly renewed: boolean
}

/**
 * The advisory lock that makes the indexers of one session take turns (the key names the session;
 * two sessions whose keys collide only wait for each other).
 */
const lockOf = (id: string) => `session_tree_search:${id}`

export const make = (client: SqlClient.SqlClient): SearchIndexService => {
  const sql = client.withoutTransforms()

  /** The sessions whose row is ahead of what the index keeps of them. */
  const behind = (sessions: ReadonlyArray<string> | undefined): Effect.Effect<ReadonlyArray<Behind>, SqlError> =>
    sql<Behind>`
      SELECT s.id, s.header, s.head, s.incarnation::text AS incarnation,
             CASE WHEN st.incarnation = s.incarnation THEN st.head ELSE 0 END AS kept,
             st.session_id IS NOT NULL AND st.incarnation <> s.incarnation AS renewed
        FROM session_tree_sessions s
        LEFT JOIN session_tree_search_state st ON st.session_id = s.id
       WHERE (st.session_id IS NULL OR st.incarnation <> s.incarnation OR st.head <> s.head)
         AND (${sessions === undefined}::bool OR s.id = ANY(${sessions ?? []}::text[]))
       ORDER BY s.id`

  /**
   * Brings one session's lexemes up to date in one transaction, behind the session's advisory lock:
   * what another search kept meanwhile is seen, and its work is not done twice. A cache, so its
   * commit does not wait for the disk. Entries are read up to the head the row shows now.
   */
  const catchUp = (session: Behind): Effect.Effect<void, SqlError | IoError> => {
    const progress: Progress = { committing: false }
    return transaction(
      sql,
      progress,
      Effect.gen(function*() {
        yield* sql`SELECT set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock(hashtext(${lockOf(session.id)}))`
        const [now] = yield* sql<{ readonly head: number; readonly incarnation: string; readonly header: string | null; readonly kept: number | null; readonly kept_incarnation: string | null }>`
          SELECT s.head, s.incarnation::text AS incarnation, s.header, st.head AS kept, st.incarnation::text AS kept_incarnation
            FROM session_tree_sessions s
            LEFT JOIN session_tree_search_state st ON st.session_id = s.id
           WHERE s.id = ${session.id}`
        // Deleted meanwhile: its rows went with it.
        if (now === undefined) return
        let from = now.kept_incarnation === now.incarnation ? now.kept ?? 0 : 0
        if (from === 0) yield* sql`DELETE FROM session_tree_search WHERE session_id = ${session.id}`
        // Rows past the head the index kept cannot be trusted to be this incarnation's: made again.
        else yield* sql`DELETE FROM session_tree_search WHERE session_id = ${session.id} AND seq > ${from}::int4`
        const header = now.header ?? undefined
        while (from < now.head) {
          const rows = yield* sql<{ readonly seq: number; readonly line: string }>`
            SELECT seq, line FROM session_tree_entries
             WHERE session_id = ${session.id} AND seq > ${from}::int4 AND seq <= ${Math.min(now.head, from + INDEX_CHUNK)}::int4
             ORDER BY seq`
          if (rows.length === 0) break
          const seqs: Array<number> = []
          const texts: Array<string | null> = []
          for (const row of rows) {
            const text = Search.lineLexemes(header, row.line, row.seq + 1).join(" ")
            seqs.push(row.seq)
            texts.push(text.length > MAX_LEXEME_TEXT ? null : text)
          }
          yield* sql`
            INSERT INTO session_tree_search (session_id, seq, lexemes)
            SELECT ${session.id}, r.seq, CASE WHEN r.lexemes IS NULL THEN NULL
                                              ELSE array_to_tsvector(array_remove(string_to_array(r.lexemes, ' '), '')) END
              FROM unnest(${seqs}::int4[], ${texts}::text[]) AS r(seq, lexemes)
            ON CONFLICT (session_id, seq) DO UPDATE SET lexemes = EXCLUDED.lexemes`
          from = rows[rows.length - 1]!.seq
        }
        yield* sql`
          INSERT INTO session_tree_search_state (session_id, incarnation, head)
          VALUES (${session.id}, ${now.incarnation}::uuid, ${from}::int4)
          ON CONFLICT (session_id) DO UPDATE SET incarnation = EXCLUDED.incarnation, head = EXCLUDED.head`
      })
    ).pipe(Effect.asVoid)
  }

  /** One candidate row: its session, the session's header, its number, its line. */
  interface Row {
    readonly session_id: string
    readonly header: string | null
    readonly seq: number
    readonly line: string
  }

  /** The rows whose lexemes hold every one of `lexemes`, and those kept as NULL, session by session. */
  const rows = (request: CandidateRequest): Stream.Stream<Row, SqlError> => {
    // Lexemes are letters, marks and digits only: quoted, they are the query's terms as they are.
    const query = request.lexemes.map((lexeme) => `'${lexeme}'`).join(" & ")
    const sessions = request.sessions
    return sql<Row>`
      SELECT t.session_id, s.header, t.seq, e.line
        FROM (SELECT session_id, seq FROM session_tree_search WHERE lexemes @@ ${query}::tsquery
              UNION ALL
              SELECT session_id, seq FROM session_tree_search WHERE lexemes IS NULL) t
        JOIN session_tree_entries e ON e.session_id = t.session_id AND e.seq = t.seq
        JOIN session_tree_sessions s ON s.id = t.session_id
       WHERE (${sessions === undefined}::bool OR t.session_id = ANY(${sessions ?? []}::text[]))
       ORDER BY t.session_id, t.seq`.stream
  }

  return {
    candidates: (request) =>
      Stream.unwrap(Effect.gen(function*() {
        for (const session of yield* behind(request.sessions)) yield* catchUp(session)
        return rows(request).pipe(
          Stream.groupAdjacentBy((row) => row.session_id),
          Stream.map(([id, group]): Candidates => {
            const list = Chunk.toReadonlyArray(group)
            return {
              location: id,
              header: list[0]!.header ?? "",
              lines: list.map((row) => ({ order: row.seq, line: row.seq + 1, text: row.line }))
            }
          })
        )
      })).pipe(Stream.mapError((error) => (error._tag === "SqlError" ? ioError("searching the sessions failed", error) : error)))
  }
}

import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Statement from "@effect/sql/Statement"
import type { CandidateRequest, Candidates, SearchIndexService } from "@session-tree/core/Search"
import * as Search from "@session-tree/core/Search"
import { type IoError, type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { ioError, type Progress, transaction } from "./errors.js"

/** Entry rows read (and their lexemes written) per statement while the index is brought up to date. */
export const INDEX_CHUNK = 2_000

/**
 * A session with at most this many entries decided by a query has their lines read in the query's
 * own statement: a rare word's page then costs no round trip more.
 */
const PREFETCHED = 8

/** An entry whose lexemes would take more than this (as text) is kept as NULL: looked at by every search. */
const MAX_LEXEME_TEXT = 512 * 1024

/**
 * Whether the facts can be kept as they are: a text column holds neither U+0000 nor a lone
 * surrogate (the driver would keep U+FFFD for it, and a filter by that model would then be
 * decided wrongly). An entry whose facts cannot be kept is handed over as a line.
 */
const storable = (facts: { readonly timestamp: string; readonly role: string; readonly model: string | undefined }): boolean =>
  keepable(facts.timestamp) && keepable(facts.role) && (facts.model === undefined || keepable(facts.model))

// With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
const UNKEEPABLE = /[\u0000\uD800-\uDFFF]/u
const keepable = (text: string): boolean => !UNKEEPABLE.test(text)

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
        const factsOf = now.header === null ? undefined : Search.entryFacts(now.header)
        while (from < now.head) {
          const rows = yield* sql<{ readonly seq: number; readonly line: string }>`
            SELECT seq, line FROM session_tree_entries
             WHERE session_id = ${session.id} AND seq > ${from}::int4 AND seq <= ${Math.min(now.head, from + INDEX_CHUNK)}::int4
             ORDER BY seq`
          if (rows.length === 0) break
          const seqs: Array<number> = []
          const texts: Array<string | null> = []
          const timestamps: Array<string | null> = []
          const roles: Array<string | null> = []
          const models: Array<string | null> = []
          for (const row of rows) {
            const facts = factsOf === undefined ? undefined : factsOf(row.line, row.seq + 1)
            const text = (facts === undefined ? Search.lineLexemes(undefined, row.line, row.seq + 1) : facts.lexemes).join(" ")
            const decided = facts?.decoded !== undefined && facts.decoded.searched && storable(facts.decoded) ? facts.decoded : undefined
            seqs.push(row.seq)
            texts.push(text.length > MAX_LEXEME_TEXT ? null : text)
            timestamps.push(decided?.timestamp ?? null)
            roles.push(decided?.role ?? null)
            models.push(decided?.model ?? null)
          }
          yield* sql`
            INSERT INTO session_tree_search (session_id, seq, lexemes, ts, role, model)
            SELECT ${session.id}, r.seq, CASE WHEN r.lexemes IS NULL THEN NULL
                                              ELSE array_to_tsvector(array_remove(string_to_array(r.lexemes, ' '), '')) END,
                   r.ts, r.role, r.model
              FROM unnest(${seqs}::int4[], ${texts}::text[], ${timestamps}::text[], ${roles}::text[], ${models}::text[])
                AS r(seq, lexemes, ts, role, model)
            ON CONFLICT (session_id, seq) DO UPDATE
              SET lexemes = EXCLUDED.lexemes, ts = EXCLUDED.ts, role = EXCLUDED.role, model = EXCLUDED.model`
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

  /**
   * One session's answer to a decidable request: the entries the index decided (kept with their facts
   * under the incarnation and head the session has now), in rank order (newest first, then by
   * number) as columns; and the other candidate rows with their lines (a line that does not decode,
   * an entry whose lexemes were too many to keep), by number.
   */
  interface Answer {
    readonly session_id: string
    readonly header: string | null
    readonly seqs: ReadonlyArray<number>
    readonly timestamps: ReadonlyArray<string>
    readonly roles: ReadonlyArray<string>
    readonly models: ReadonlyArray<string | null>
    readonly lines: ReadonlyArray<readonly [number, string | null]>
    /** The session's incarnation in the statement: the one its facts were kept under. */
    readonly incarnation: string
    /** The decided entries' lines, read in the same statement when they are few (`PREFETCHED`). */
    readonly fetched: ReadonlyArray<readonly [number, string]> | null
  }

  /**
   * The answers of every session with a candidate, session by session. Only the decided entries'
   * facts travel, not their lines: a word in a million entries costs a million short rows of the
   * index, and the page's lines are read afterwards (`fetch`).
   */
  const answers = (request: CandidateRequest): Stream.Stream<Answer, SqlError> => {
    const query = request.lexemes.map((lexeme) => `'${lexeme}'`).join(" & ")
    const sessions = request.sessions
    // "C": the order of the bytes, which for the ASCII of a timestamp is the order the library compares them in.
    const rank = Statement.unsafeFragment(`ORDER BY h.ts COLLATE "C" DESC, h.seq`)
    return sql<Answer>`
      WITH h AS (
        SELECT t.session_id, t.seq, t.ts, t.role, t.model,
               coalesce(t.ts IS NOT NULL AND st.incarnation = s.incarnation AND t.seq <= st.head, false) AS decided
          FROM (SELECT session_id, seq, ts, role, model FROM session_tree_search WHERE lexemes @@ ${query}::tsquery
                UNION ALL
                -- (Lexemes not kept: nothing decided of the entry, whatever its facts.)
                SELECT session_id, seq, NULL, NULL, NULL FROM session_tree_search WHERE lexemes IS NULL) t
          JOIN session_tree_sessions s ON s.id = t.session_id
          LEFT JOIN session_tree_search_state st ON st.session_id = t.session_id
         WHERE (${sessions === undefined}::bool OR t.session_id = ANY(${sessions ?? []}::text[]))
      ), g AS (
        SELECT h.session_id,
               coalesce(json_agg(h.seq ${rank}) FILTER (WHERE h.decided), '[]') AS seqs,
               coalesce(json_agg(h.ts ${rank}) FILTER (WHERE h.decided), '[]') AS timestamps,
               coalesce(json_agg(h.role ${rank}) FILTER (WHERE h.decided), '[]') AS roles,
               coalesce(json_agg(h.model ${rank}) FILTER (WHERE h.decided), '[]') AS models,
               coalesce(json_agg(json_build_array(h.seq, CASE WHEN NOT h.decided THEN
                          (SELECT e.line FROM session_tree_entries e WHERE e.session_id = h.session_id AND e.seq = h.seq) END)
                        ORDER BY h.seq) FILTER (WHERE NOT h.decided), '[]') AS lines
          FROM h
         GROUP BY h.session_id
      )
      SELECT g.session_id, s.header, s.incarnation::text AS incarnation, g.seqs, g.timestamps, g.roles, g.models, g.lines,
             CASE WHEN json_array_length(g.seqs) BETWEEN 1 AND ${PREFETCHED}::int4 THEN
               (SELECT json_agg(json_build_array(e.seq, e.line)) FROM session_tree_entries e
                 WHERE e.session_id = g.session_id AND e.seq IN (SELECT value::int4 FROM json_array_elements_text(g.seqs))) END AS fetched
        FROM g JOIN session_tree_sessions s ON s.id = g.session_id
       ORDER BY g.session_id`.stream
  }

  /**
   * The lines numbered `seqs` of session `id` while it still has the incarnation its facts were kept
   * under (rows 1..head of an incarnation never change), in that order; SESSION_REPLACED when the
   * session was rewritten or removed since, so that no answer counts one version and shows another.
   */
  const fetchOf = (id: string, incarnation: string) => (seqs: ReadonlyArray<number>): Effect.Effect<ReadonlyArray<string>, SessionError> =>
    sql<{ readonly seq: number; readonly line: string }>`
      SELECT e.seq, e.line FROM session_tree_entries e
        JOIN session_tree_sessions s ON s.id = e.session_id AND s.incarnation = ${incarnation}::uuid
       WHERE e.session_id = ${id} AND e.seq = ANY(${seqs}::int4[])`.pipe(
      Effect.mapError((error) => ioError("reading the lines of search hits failed", error)),
      Effect.flatMap((rows) => {
        const bySeq = new Map(rows.map((row) => [row.seq, row.line]))
        const lines = seqs.map((seq) => bySeq.get(seq))
        return lines.every((line) => line !== undefined)
          ? Effect.succeed(lines as Array<string>)
          : Effect.fail(sessionError("SESSION_REPLACED", "the session changed since it was indexed", { path: id }))
      })
    )

  /** The lines `fetched` holds, or else those `fetch` reads. */
  const fetchedOr = (fetched: ReadonlyMap<number, string>, fetch: ReturnType<typeof fetchOf>): ReturnType<typeof fetchOf> => (seqs) => {
    const lines = seqs.map((seq) => fetched.get(seq))
    return lines.every((line) => line !== undefined) ? Effect.succeed(lines as Array<string>) : fetch(seqs)
  }

  /** A session's candidates from its answer: its decided entries in rank order, and its other rows as lines. */
  const candidatesOf = (answer: Answer): Candidates => {
    const { models, roles, seqs, timestamps } = answer
    const n = seqs.length
    // The database sorted them; the order is the library's only if it compares the timestamps as the
    // library does, which a timestamp outside ASCII would not: checked, and sorted here if need be.
    let order: ReadonlyArray<number> | undefined
    for (let i = 1; i < n; i++) {
      const a = timestamps[i - 1]!
      const b = timestamps[i]!
      if (a < b || (a === b && seqs[i - 1]! > seqs[i]!)) {
        order = Array.from({ length: n }, (_, k) => k).sort((x, y) =>
          timestamps[x] !== timestamps[y] ? (timestamps[x]! > timestamps[y]! ? -1 : 1) : seqs[x]! - seqs[y]!)
        break
      }
    }
    const at = order === undefined ? (i: number) => i : (i: number) => order[i]!
    return {
      location: answer.session_id,
      header: answer.header ?? "",
      // (A row gone from under its index is no candidate: its session changed, as a join would drop it.)
      lines: answer.lines.flatMap(([seq, line]) => (line === null ? [] : [{ order: seq, line: seq + 1, text: line }])),
      entries: {
        size: n,
        order: (i) => seqs[at(i)]!,
        line: (i) => seqs[at(i)]! + 1,
        timestamp: (i) => timestamps[at(i)]!,
        role: (i) => roles[at(i)]!,
        model: (i) => models[at(i)] ?? undefined
      },
      fetch: answer.fetched === null
        ? fetchOf(answer.session_id, answer.incarnation)
        : fetchedOr(new Map(answer.fetched), fetchOf(answer.session_id, answer.incarnation))
    }
  }

  return {
    candidates: (request) =>
      Stream.unwrap(Effect.gen(function*() {
        for (const session of yield* behind(request.sessions)) yield* catchUp(session)
        if (request.decidable) return Stream.map(answers(request), candidatesOf)
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

import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import { type ConflictError, type CorruptError, type InputError, type IoError, sessionError } from "@session-tree/core/SessionError"
import type { AppendError, Batch, BlobBytes, NewBlob, ReadAfter, ReadError, SessionJournalService, Writer } from "@session-tree/core/SessionJournal"
import * as Tracing from "@session-tree/core/Tracing"
import * as Crypto from "node:crypto"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { ioError, type Progress, refusedStatement, sqlState, transaction, writeError } from "./errors.js"
import { MAX_ID_BYTES, type Read, readAfter, readSessions, storableId, versionOf } from "./rows.js"

export interface Options {
  /**
   * How long a commit waits while another writer's commit holds the same
   * session before it fails with SESSION_BUSY (PostgreSQL's `lock_timeout`,
   * set for each write transaction). Default: 5 seconds.
   */
  readonly lockTimeout?: Duration.DurationInput | undefined
}

const DEFAULT_LOCK_TIMEOUT: Duration.Duration = Duration.seconds(5)

/** What a writer last saw of its session: the compare-and-set of its next commit. */
interface Held {
  head: number
  readonly incarnation: string
  closed: boolean
}

/** `lock_timeout` in milliseconds as text, for `set_config`; "0" waits for ever. */
const lockTimeoutSetting = (timeout: Duration.Duration): string =>
  Duration.isFinite(timeout) ? String(Math.max(1, Math.ceil(Duration.toMillis(timeout)))) : "0"

/** Reads the session `id`: its lines, and what a writer needs to append after them. */
const readSession = (sql: SqlClient.SqlClient, id: string): Effect.Effect<Read, InputError | CorruptError | IoError> =>
  Effect.flatMap(
    Effect.mapError(readSessions(sql, [id]), (error) => ioError("reading the session failed", error, id)),
    (reads) => {
      const read = reads.get(id)!
      return "stored" in read ? Effect.succeed(read) : Effect.fail(read)
    }
  )

const sha256 = (bytes: Uint8Array): string => Crypto.createHash("sha256").update(bytes).digest("hex")

/**
 * Inserts the blobs `blobs` of session `id` (whose row exists in this transaction): the bytes
 * given, or copies of another session's rows (a fork). A blob the session holds already is kept;
 * one to be copied that its session does not hold with its size is SESSION_BLOB_MISSING, which
 * rolls the whole transaction back.
 */
const insertBlobs = (
  sql: SqlClient.SqlClient,
  id: string,
  blobs: ReadonlyArray<NewBlob> | undefined
): Effect.Effect<void, CorruptError | SqlError> =>
  Effect.gen(function*() {
    if (blobs === undefined) return
    const copies = new Map<string, Array<{ readonly hash: string; readonly size: number }>>()
    for (const blob of blobs) {
      if ("bytes" in blob) {
        yield* insertBlob(sql, id, blob)
      } else {
        const from = copies.get(blob.from) ?? []
        from.push(blob)
        copies.set(blob.from, from)
      }
    }
    for (const [from, wanted] of copies) {
      const [copied] = yield* sql<{ readonly copied: number }>`
        WITH copied AS (
          INSERT INTO session_tree_blobs (session_id, hash, size, bytes)
          SELECT ${id}, b.hash, b.size, b.bytes
            FROM session_tree_blobs b
            JOIN unnest(${wanted.map((w) => w.hash)}::text[], ${wanted.map((w) => w.size)}::int4[]) AS w(hash, size)
              ON b.hash = w.hash AND octet_length(b.bytes) = w.size
           WHERE b.session_id = ${from}
          ON CONFLICT (session_id, hash) DO NOTHING
          RETURNING 1
        )
        SELECT count(*)::int4 AS copied FROM copied`
      if (copied === undefined || copied.copied !== wanted.length) {
        return yield* sessionError("SESSION_BLOB_MISSING", "a blob of the forked path is no longer in its session", { path: from })
      }
    }
  })

/** Inserts one blob given by its bytes, unless the session holds it already. */
const insertBlob = (sql: SqlClient.SqlClient, id: string, blob: BlobBytes): Effect.Effect<unknown, SqlError> =>
  sql`
    INSERT INTO session_tree_blobs (session_id, hash, size, bytes)
    VALUES (${id}, ${blob.hash}, ${blob.size}::int4, ${blob.bytes})
    ON CONFLICT (session_id, hash) DO NOTHING`

export const make = (client: SqlClient.SqlClient, options?: Options): SessionJournalService => {
  // Column names are ours: a client that renames result columns (camelCase) must not rename them.
  const sql = client.withoutTransforms()
  const lockTimeout = lockTimeoutSetting(Duration.decode(options?.lockTimeout ?? DEFAULT_LOCK_TIMEOUT))

  /** The settings of a write transaction (a create; an append sets them in its statement): durable at COMMIT whatever the server's default, and a bounded lock wait. */
  const settings = sql`SELECT set_config('synchronous_commit', 'on', true), set_config('lock_timeout', ${lockTimeout}, true)`

  /**
   * The compare-and-set and the new rows in one statement: when the head is no longer the one
   * this writer saw (or the session was replaced), no row is inserted. The UPDATE waits for a
   * commit in flight on the same session (up to lock_timeout), then sees its result. The
   * session's listing is kept in the same statement, under the version the commit makes.
   *
   * The settings are made by the UPDATE's own condition, so that they also hold when the
   * statement is its own transaction: its scalar subquery runs once, before any row is locked (so
   * a lock wait is bounded by lock_timeout) and before the commit (which then waits for the WAL).
   */
  const moveHead = (id: string, held: Held, batch: Batch, listing: string | null) =>
    sql<{ readonly moved: number }>`
      WITH moved AS (
        UPDATE session_tree_sessions
           SET head = head + ${batch.lines.length}::int4, changed_at = now()
         WHERE id = ${id} AND head = ${held.head}::int4 AND incarnation = ${held.incarnation}::uuid
           AND (SELECT set_config('synchronous_commit', 'on', true) || set_config('lock_timeout', ${lockTimeout}, true)) IS NOT NULL
        RETURNING id, ${versionOf("session_tree_sessions")} AS version
      ), added AS (
        INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
        SELECT moved.id, ${held.head}::int4 + e.ord::int4, e.entry_id, e.line
          FROM moved, unnest(${batch.ids}::text[], ${batch.lines}::text[]) WITH ORDINALITY AS e(entry_id, line, ord)
      ), kept AS (
        INSERT INTO session_tree_listings (session_id, version, listing)
        SELECT moved.id, moved.version, k.listing FROM moved, (VALUES (${listing}::text)) AS k(listing) WHERE k.listing IS NOT NULL
        ON CONFLICT (session_id) DO UPDATE SET version = EXCLUDED.version, listing = EXCLUDED.listing
      )
      SELECT count(*)::int4 AS moved FROM moved`

  const append = (id: string, held: Held, batch: Batch): Effect.Effect<void, AppendError> =>
    Effect.suspend(() => {
      if (held.closed) return Effect.fail(sessionError("SESSION_IO", "the store's scope is closed", { path: id }))
      const n = batch.lines.length
      // An empty batch asks for the canonical generation to be written; rows always hold it.
      if (n === 0) return Effect.void
      const seen = held.head
      const listing = batch.listing?.(id) ?? null
      const progress: Progress = { committing: false }
      const moved = Effect.flatMap(moveHead(id, held, batch, listing), ([counts]) =>
        counts === undefined || counts.moved !== 1
          ? Effect.fail(sessionError("SESSION_REPLACED", "the session changed since this store read it", { path: id }))
          : Effect.void)
      const blobs = batch.blobs ?? []
      const commit: Effect.Effect<void, ConflictError | SqlError> = blobs.length === 0
        // Without blobs the statement is the whole transaction, one round trip: its commit is in
        // flight from the moment it is sent, and only a refusal the server reports proves that
        // nothing of it was committed.
        ? Effect.suspend(() => {
          progress.committing = true
          return Effect.tapError(moved, (error) => Effect.sync(() => (progress.committing = !refusedStatement(error))))
        })
        // The batch's blobs in the same transaction: they commit with the lines that first refer to them.
        : transaction(sql, progress, Effect.zipRight(moved, Effect.forEach(blobs, (blob) => insertBlob(sql, id, blob), { discard: true })))
      return commit.pipe(
        Effect.mapError((error: ConflictError | SqlError) => {
          // Rows beyond the head can only be there if something else wrote them: the session is not the one this writer read.
          // The insert trigger renews the incarnation for such rows, so this is reached when they came in with it disabled.
          if (!progress.committing && error._tag === "SqlError" && sqlState(error) === "23505") {
            return sessionError("SESSION_REPLACED", "the session holds rows this store did not see; reload it", {
              path: id,
              cause: error
            })
          }
          return writeError("appending to the session failed", error, progress, id)
        }),
        // Only a commit that succeeded moves what the writer saw; after any failure it stays.
        Effect.tap(() => Effect.sync(() => (held.head = seen + n)))
      )
    })

  /** A writer that holds `id` from what it saw until its scope closes. */
  const writerOf = (id: string, head: number, incarnation: string): Effect.Effect<Writer, never, Scope.Scope> =>
    Effect.map(
      Effect.acquireRelease(
        Effect.sync((): Held => ({ head, incarnation, closed: false })),
        (held) => Effect.sync(() => (held.closed = true))
      ),
      (held): Writer => ({ append: (batch) => append(id, held, batch) })
    )

  return {
    // In the database a session's location is its ID.
    locations: "sessionId",
    sha256,
    blob: (location, hash) =>
      sql<{ readonly bytes: Uint8Array }>`SELECT bytes FROM session_tree_blobs WHERE session_id = ${location} AND hash = ${hash}`.pipe(
        Effect.mapError((error) => ioError("reading the blob failed", error, location)),
        Effect.flatMap(([row]) =>
          row === undefined
            ? Effect.fail(sessionError("SESSION_BLOB_MISSING", `blob "sha256:${hash}" is not in the session's store`, { path: location }))
            : sha256(row.bytes) !== hash
            ? Effect.fail(sessionError("SESSION_BLOB_CORRUPT", `the bytes of blob "sha256:${hash}" do not match its hash`, { path: location }))
            : Effect.succeed(new Uint8Array(row.bytes.buffer, row.bytes.byteOffset, row.bytes.byteLength))
        ),
        Tracing.span("PgJournal.blob", { session: location })
      ),
    create: (location, session) =>
      Effect.gen(function*() {
        if (!storableId(location)) {
          return yield* sessionError(
            "SESSION_INVALID_HEADER",
            `a session ID in the database must be non-empty text of at most ${MAX_ID_BYTES} UTF-8 bytes, without U+0000 or a lone surrogate`,
            { path: location }
          )
        }
        const incarnation = globalThis.crypto.randomUUID()
        const head = session.lines.length - 1
        const listing = session.listing?.(location) ?? null
        const progress: Progress = { committing: false }
        yield* transaction(
          sql,
          progress,
          Effect.zipRight(
            settings,
            Effect.zipLeft(sql`
              WITH created AS (
                INSERT INTO session_tree_sessions (id, header, head, incarnation, changed_at)
                VALUES (${location}, ${session.lines[0]!}, ${head}::int4, ${incarnation}::uuid, now())
                RETURNING id, ${versionOf("session_tree_sessions")} AS version
              ), kept AS (
                INSERT INTO session_tree_listings (session_id, version, listing)
                SELECT created.id, created.version, k.listing FROM created, (VALUES (${listing}::text)) AS k(listing) WHERE k.listing IS NOT NULL
              )
              INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
              SELECT created.id, e.ord::int4, e.entry_id, e.line
                FROM created, unnest(${session.ids}::text[], ${session.lines.slice(1)}::text[]) WITH ORDINALITY AS e(entry_id, line, ord)`,
            insertBlobs(sql, location, session.blobs))
          )
        ).pipe(
          Effect.mapError((error) => {
            if (
              !progress.committing && error._tag === "SqlError" &&
              (error.cause as { constraint?: unknown })?.constraint === "session_tree_sessions_pkey"
            ) {
              return sessionError("SESSION_EXISTS", "a session with this ID exists", { path: location, cause: error })
            }
            return writeError("creating the session failed", error, progress, location)
          })
        )
        const writer = yield* writerOf(location, head, incarnation)
        return { location, writer }
      }).pipe(Tracing.span("PgJournal.create", { session: location, batch: session.ids.length })),
    hold: (location) =>
      Effect.flatMap(readSession(sql, location), (read) =>
        Effect.map(writerOf(location, read.head, read.incarnation), (writer) => ({ ...read.stored, writer }))).pipe(
          Tracing.span("PgJournal.hold", { session: location })
        ),
    read: (location) => Effect.map(readSession(sql, location), (read) => read.stored).pipe(Tracing.span("PgJournal.read", { session: location })),
    readAfter: (location, before) =>
      Effect.flatMap(
        Effect.mapError(readAfter(sql, location, before), (error) => ioError("reading the session failed", error, location)),
        (after): Effect.Effect<ReadAfter, ReadError> =>
          after !== undefined
            ? Effect.succeed({ _tag: "After", stored: after })
            : Effect.map(readSession(sql, location), (read): ReadAfter => ({ _tag: "Whole", stored: read.stored }))
      )
  }
}

/**
 * The seconds of a database URL's `connect_timeout` parameter, as libpq reads it (whole seconds,
 * at least 2: 1 is 2), undefined when it has none, or the error of one that is not a whole number
 * of seconds of at least 1. A URL that does not parse is left to the client, which refuses it: the
 * URL may hold a password, so no error here quotes it.
 */
export const connectTimeoutOf = (url: string): number | undefined | InputError => {
  let value: string | null
  try {
    value = new URL(url).searchParams.get("connect_timeout")
  } catch {
    return undefined
  }
  if (value === null) return undefined
  const seconds = /^[0-9]{1,6}$/.test(value) ? Number(value) : 0
  return seconds >= 1
    ? Math.max(2, seconds)
    : sessionError("SESSION_INVALID_OPTIONS", "the database URL's connect_timeout must be a whole number of seconds, at least 1")
}

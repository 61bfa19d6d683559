import type * as SqlClient from "@effect/sql/SqlClient"
import type { Listings, SessionCatalogService } from "@session-tree/core/SessionCatalog"
import { sessionError } from "@session-tree/core/SessionError"
import type { ReadError, Stored } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { ioError, type Progress, transaction, writeError } from "./errors.js"
import { readSessions, storableId, versionOf } from "./rows.js"

/** Sessions read by one statement: enough to save round trips, few enough that one reply stays bounded (32 × 4 MiB at most). */
export const READ_CHUNK = 32

export const make = (client: SqlClient.SqlClient): SessionCatalogService => {
  const sql = client.withoutTransforms()

  const readChunk = (ids: ReadonlyArray<string>): Effect.Effect<ReadonlyMap<string, Either.Either<Stored, ReadError>>> =>
    readSessions(sql, ids).pipe(
      Effect.map((reads) => {
        const found = new Map<string, Either.Either<Stored, ReadError>>()
        for (const [id, read] of reads) found.set(id, "stored" in read ? Either.right(read.stored) : Either.left(read))
        return found
      }),
      // A failed statement fails every session it would have read, each in its own place.
      Effect.catchAll((error) => {
        const failed = Either.left(ioError("reading the sessions failed", error))
        return Effect.succeed(new Map<string, Either.Either<Stored, ReadError>>(ids.map((id) => [id, failed])))
      })
    )

  const listings: Listings = {
    recall: (entries) =>
      sql<{ readonly session_id: string; readonly listing: string }>`
        SELECT l.session_id, l.listing
          FROM session_tree_listings l
          JOIN unnest(${entries.map((e) => e.location)}::text[], ${entries.map((e) => e.version)}::text[]) AS w(id, version)
            ON l.session_id = w.id AND l.version = w.version`.pipe(
        Effect.map((rows) => new Map(rows.map((row) => [row.session_id, row.listing]))),
        Effect.orElseSucceed(() => new Map<string, string>())
      ),
    // A cache: not worth a wait for the disk, and lost with no harm when the server stops first. A
    // listing is kept only under its session's current version, or a node that read the session
    // before a commit would replace the listing that commit kept with an older one. The share lock
    // closes the race with a commit: one that holds the row now is skipped (the session is about
    // to change), one that commits later waits for this, and the version is checked on the row as
    // last committed, not as this statement's snapshot saw it.
    remember: (remembered) => {
      const progress: Progress = { committing: false }
      return transaction(
        sql,
        progress,
        Effect.zipRight(
          sql`SELECT set_config('synchronous_commit', 'off', true)`,
          sql`
            INSERT INTO session_tree_listings (session_id, version, listing)
            SELECT r.id, r.version, r.listing
              FROM unnest(${remembered.map((r) => r.location)}::text[], ${remembered.map((r) => r.version)}::text[],
                          ${remembered.map((r) => r.listing)}::text[]) AS r(id, version, listing)
              JOIN session_tree_sessions s ON s.id = r.id AND ${versionOf("s")} = r.version
             ORDER BY r.id
               FOR SHARE OF s SKIP LOCKED
            ON CONFLICT (session_id) DO UPDATE SET version = EXCLUDED.version, listing = EXCLUDED.listing`
        )
      ).pipe(Effect.ignore)
    }
  }

  return {
    listings,
    // A database holds one set of sessions: a directory means nothing here.
    scan: () =>
      sql<{ readonly id: string; readonly version: string; readonly changed: number }>`
        SELECT s.id, ${versionOf("s")} AS version, (extract(epoch FROM s.changed_at) * 1000)::float8 AS changed
          FROM session_tree_sessions s
         ORDER BY s.id`.pipe(
        Effect.map((rows) => rows.map((row) => ({ location: row.id, version: row.version, changed: row.changed }))),
        Effect.mapError((error) => ioError("listing the sessions failed", error))
      ),
    readMany: (locations) =>
      Effect.gen(function*() {
        const wanted = [...new Set(locations)]
        const found = new Map<string, Either.Either<Stored, ReadError>>()
        for (let i = 0; i < wanted.length; i += READ_CHUNK) {
          for (const [id, read] of yield* readChunk(wanted.slice(i, i + READ_CHUNK))) found.set(id, read)
        }
        return locations.map((location) => found.get(location)!)
      }),
    // One statement in one transaction: the foreign keys cascade to the entries, the kept listing
    // and every other row of the session, so it is gone whole or not at all. A writer that loaded
    // it fails its next append on the compare-and-set (no row to move) and inserts nothing.
    delete: (location) => {
      const missing = sessionError("SESSION_NOT_FOUND", "no session with this ID", { path: location })
      // An ID that no row can hold is not asked for (the driver would refuse it, or store another).
      if (!storableId(location)) return Effect.fail(missing)
      const progress: Progress = { committing: false }
      return transaction(
        sql,
        progress,
        Effect.flatMap(
          sql<{ readonly id: string }>`DELETE FROM session_tree_sessions WHERE id = ${location} RETURNING id`,
          (rows) =>
            rows.length === 0
              ? Effect.fail(missing)
              : Effect.succeed(location)
        )
      ).pipe(Effect.mapError((error) => writeError("deleting the session failed", error, progress, location)))
    }
  }
}

/**
 * The port for many sessions: which sessions a backend holds, and a
 * token that changes whenever one of them changes, so that a listing knows
 * what it must read again. Like `SessionJournal`, a catalog never parses a
 * record: summaries, validation and order belong to the core's `Sessions`.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type { ConflictError, InputError, IoError, LockedError } from "./SessionError.js"
import type { ReadError, Stored } from "./SessionJournal.js"

/**
 * One session as a catalog sees it, without reading it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  /** The session's location, as the journal takes it. */
  readonly location: string
  /**
   * Changes whenever the stored session changes (a file: its identity, size, modification
   * and change times; a database: its head and incarnation). Equal versions mean equal contents.
   */
  readonly version: string
  /** When it last changed, in epoch milliseconds (a file's modification time; a database's commit time). */
  readonly changed: number
}

/**
 * What listing a backend's sessions can fail with: a scope that is no directory (`InputError`), a failed step (`IoError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type ScanError = InputError | IoError

/**
 * What deleting a session can fail with: nothing there, or not a session (`InputError`), a writer
 * committing or a delete already in progress (`ConflictError`), a failed step (`IoError`), an undo
 * that could not be proven (`LockedError`). Never `CorruptError`: a session that does not load is
 * deleted all the same.
 *
 * @since 0.1.0
 * @category errors
 */
export type DeleteError = InputError | ConflictError | IoError | LockedError

/**
 * The catalog of a backend: which sessions it holds, and a token that changes whenever one does.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionCatalogService {
  /**
   * Every session in `directory` (for files; the current one when undefined;
   * a database holds one set and ignores it). Reads no session.
   */
  readonly scan: (directory: string | undefined) => Effect.Effect<ReadonlyArray<Entry>, ScanError>
  /**
   * Reads several sessions, each as `SessionJournal.read` would, in one go where the backend can
   * (one query for a database): in its place, each session as read (Right) or the error reading
   * it failed with (Left), so that one unreadable session does not hide the others.
   */
  readonly readMany: (locations: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Either.Either<Stored, ReadError>>>
  /**
   * Removes the whole session at `location` and what belongs to it alone (its blobs, a kept
   * listing): atomically and durably, so that the session is there whole or gone, never in part;
   * SESSION_NOT_FOUND when there is none. Succeeds with the location as the backend resolved it.
   * A store that still holds the session fails its next append (SESSION_REPLACED) and never
   * brings it back. It belongs to the catalog, not the journal: it changes which sessions a
   * backend holds, never the lines of one, and it must work on a session that does not load.
   */
  readonly delete: (location: string) => Effect.Effect<string, DeleteError>
  /** Listings kept for every process that lists, where the backend can keep them (a database: for all its nodes). */
  readonly listings?: Listings | undefined
}

/**
 * A session's listing (a `Sessions.Summary` as JSON text), under the version of the session it was made from.
 *
 * @since 0.1.0
 * @category models
 */
export interface Remembered {
  readonly location: string
  readonly version: string
  readonly listing: string
}

/**
 * Listings a backend keeps between processes: a cache of what reading a session gave. The core
 * takes one only for the exact version it was made for, checks its shape and that it names its
 * own location, and otherwise reads the session again; so a listing kept here can be lost,
 * stale or damaged without a listing ever being wrong for a change of the session.
 *
 * @since 0.1.0
 * @category models
 */
export interface Listings {
  /** The remembered listings of those `entries` whose version is still the one remembered, by location. A failed read finds none. */
  readonly recall: (entries: ReadonlyArray<Entry>) => Effect.Effect<ReadonlyMap<string, string>>
  /** Keeps listings for later; best effort (a failure keeps nothing). */
  readonly remember: (listings: ReadonlyArray<Remembered>) => Effect.Effect<void>
}

/**
 * The catalog of the backend in use.
 *
 * @since 0.1.0
 * @category tags
 */
export class SessionCatalog extends Context.Tag("@session-tree/SessionCatalog")<SessionCatalog, SessionCatalogService>() {}

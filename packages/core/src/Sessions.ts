/**
 * Sessions: the many sessions of one backend — create, load and read
 * by location, list them newest change first, the most recently changed one,
 * fork a branch into a new session, delete a whole session, export the
 * canonical JSONL generation, import records from elsewhere. Written once over the `SessionJournal` and
 * `SessionCatalog` ports, so every backend lists, forks and imports alike.
 *
 * A listing is never wrong: a session that does not load is listed with its
 * error, never skipped or guessed; and a session is read again whenever the
 * catalog's version of it changed since the last listing (a file's identity,
 * size and times; a database's incarnation and head). Unchanged sessions come
 * from memory, or from the listings the backend keeps for that very version.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Ids } from "./Ids.js"
import * as internal from "./internal/sessions.js"
import * as summary from "./internal/summary.js"
import type { Entry, Header } from "./Record.js"
import type { DeleteError, ScanError, SessionCatalog } from "./SessionCatalog.js"
import type { InputError, SessionError, SessionErrorCode } from "./SessionError.js"
import type { ReadError, SessionJournal } from "./SessionJournal.js"
import type { CreateOptions, Loaded, LoadOptions, SessionStore } from "./SessionStore.js"
import type { Linked } from "./SessionTree.js"
import type { SearchOptions, SearchResult } from "./Search.js"
import type { StatsOptions, StatsResult } from "./Stats.js"

/**
 * What a listing shows of a session that loads (the fields of `session-tree list --json`).
 *
 * @since 0.1.0
 * @category models
 */
export type Summary = internal.Summary

/**
 * A session that does not load, listed with the reason.
 *
 * @since 0.1.0
 * @category models
 */
export interface Unreadable {
  readonly location: string
  readonly error: { readonly code: SessionErrorCode; readonly message: string }
}

/**
 * One session of a listing: its summary, or why it could not be read.
 *
 * @since 0.1.0
 * @category models
 */
export type Listed = Summary | Unreadable

/**
 * Whether a listed session is one that could not be read.
 *
 * @since 0.1.0
 * @category guards
 */
export const isUnreadable = (listed: Listed): listed is Unreadable => "error" in listed

/**
 * One page of the sessions `list` shows, newest change first.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListingPage {
  readonly sessions: ReadonlyArray<Listed>
  /** How many sessions there are in all. */
  readonly total: number
}

/**
 * Options of `list`: one page of the listing.
 *
 * @since 0.1.0
 * @category models
 */
export interface ListOptions {
  /** A directory for files (the current one by default); a database ignores it. */
  readonly directory?: string | undefined
  /**
   * @deprecated Use `directory`. Read only when `directory` is not given, so that a caller
   * written for this name still lists the directory it names.
   */
  readonly scope?: string | undefined
  readonly offset?: number | undefined
  readonly limit?: number | undefined
}

/**
 * A whole session's records, as an import takes them.
 *
 * @since 0.1.0
 * @category models
 */
export interface Records {
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
}

/**
 * The many sessions of one backend: create, load, read, list, fork, delete, export, import, mirror,
 * search and sum their usage.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionsService {
  /** Creates a session holding one header (see `SessionStore.create`). */
  readonly create: (location: string, options?: CreateOptions) => Effect.Effect<SessionStore, SessionError, Scope.Scope>
  /** Loads a session for appending (see `SessionStore.load`). */
  readonly load: (location: string, options?: LoadOptions) => Effect.Effect<SessionStore, ReadError, Scope.Scope>
  /** Loads a session read-only. */
  readonly read: (location: string) => Effect.Effect<Loaded, ReadError>
  /**
   * A page of the sessions of a directory (every session of a database), newest change first. A
   * session that does not load is listed with its error; the listing itself fails only for its
   * directory or options (`InputError`) or a failed step (`IoError`).
   */
  readonly list: (options?: ListOptions) => Effect.Effect<ListingPage, ScanError>
  /** The most recently changed session of a directory (unreadable ones included); SESSION_NOT_FOUND when there is none. */
  readonly latest: (directory?: string) => Effect.Effect<Listed, ScanError>
  /**
   * Creates `target` holding exactly the root→`leaf` path of `source` (the same entry IDs,
   * parents, timestamps and messages) under a new header (timestamp now; ID from `options.id`,
   * the backend, or `Ids`). `source` is not changed. SESSION_UNKNOWN_ENTRY for a leaf that is not
   * in the source; SESSION_EXISTS when `target` is taken. The target has the source's version
   * unless `options.version` is 2 (a version-1 source's entries in their version-2 form); a
   * version-2 target's header says where it came from (`forkedFrom`). Nothing converts down.
   */
  readonly fork: (
    source: string,
    leaf: string,
    target: string,
    options?: { readonly id?: string | undefined; readonly version?: 1 | 2 | undefined }
  ) => Effect.Effect<Summary, SessionError>
  /**
   * Deletes the whole session at `location` (see `SessionCatalog.delete`): durably, whole or not
   * at all, whether or not it loads; its entries are never changed one by one. Succeeds with the
   * location as the backend resolved it; SESSION_NOT_FOUND when there is no session there. A
   * fork of it keeps loading: it holds its own copy of everything it refers to.
   */
  readonly delete: (location: string) => Effect.Effect<string, DeleteError>
  /** The canonical JSONL generation of a session, byte for byte what a commit writes. */
  readonly exportJsonl: (location: string) => Effect.Effect<string, ReadError>
  /**
   * Stores `records` as a new session that keeps its header, validated as a load validates.
   * `to` is the location; a backend that names sessions by ID takes the header's ID by default.
   * With `options.version` 2, version-1 records are stored in their version-2 form.
   * `options.blobs` gives the bytes of the blobs the entries refer to, by reference
   * (`"sha256:…"`) or by hash, stored with the session: a blob referred to but not given (or
   * of another size) is SESSION_BLOB_MISSING, bytes that do not hash to their name
   * SESSION_BLOB_CORRUPT; blobs no entry refers to are not stored. File data given inline
   * (base64) over `Codec.MAX_INLINE_FILE_BYTES` decoded is stored as a blob, as an append stores
   * it, so an imported session holds the same records on every backend.
   */
  readonly import: (records: Records, to?: string, options?: ImportOptions) => Effect.Effect<Summary, SessionError>
  /**
   * The entries of every session of a directory (a database) that match `options.query`: a page of
   * hits, newest first, and how many there are (`Search`). The backend's `SearchIndex` narrows
   * the lines read where the context holds one (the file and database layers do); every hit is
   * decided by the library. SESSION_INVALID_OPTIONS for a query with no word or a bad filter.
   * @since 0.2.0
   */
  readonly search: (options: SearchOptions) => Effect.Effect<SearchResult, ScanError>
  /**
   * The usage recorded in every session of a directory (a database), summed per day, model or
   * session (`Stats`). Each session is read once per version, as a listing reads it; one that does
   * not load is listed with its error and counts nothing.
   * @since 0.2.0
   */
  readonly stats: (options?: StatsOptions) => Effect.Effect<StatsResult, ScanError>
  /**
   * Makes the session at `to` (by default: the header's ID, where the backend locates sessions by
   * ID) hold `records`, which extend what it holds: created whole when nothing is there; else the
   * entries it does not hold yet appended in one commit, all of them or none, and nothing when it
   * holds them all. What it holds is never changed: SESSION_SOURCE_CHANGED (a `ConflictError`)
   * when its header or any entry it holds is not the same record in `records`. Validated as an
   * import is; file data over the inline size is a blob, as on import. What a sync does with one
   * source's session (`Sync`).
   */
  readonly mirror: (records: Records, to?: string) => Effect.Effect<Mirrored, SessionError>
}

/**
 * What `mirror` did: where the session is, whether it was created, how many entries it appended.
 *
 * @since 0.2.0
 * @category models
 */
export interface Mirrored {
  readonly location: string
  readonly created: boolean
  readonly appended: number
}

/**
 * How `import` stores a session.
 *
 * @since 0.1.0
 * @category models
 */
export interface ImportOptions {
  readonly version?: 1 | 2 | undefined
  readonly blobs?: ReadonlyMap<string, Uint8Array> | undefined
}

/**
 * The sessions of the backend in use.
 *
 * @since 0.1.0
 * @category tags
 */
export class Sessions extends Context.Tag("@session-tree/Sessions")<Sessions, SessionsService>() {}

/**
 * The sessions of the backend in context; each service keeps its own listing cache.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<SessionsService, never, SessionJournal | SessionCatalog | Ids> = internal.make

/**
 * `Sessions` over the backend's journal and catalog.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Sessions, never, SessionJournal | SessionCatalog | Ids> = Layer.effect(Sessions, make)

/**
 * The summary of loaded records at `location`.
 *
 * @since 0.1.0
 * @category utils
 */
export const summarize: (location: string, records: Records) => Summary = summary.summarize

/**
 * The root→`leaf` path of `entries`; SESSION_UNKNOWN_ENTRY when `leaf` is not one of them. Named
 * apart from `SessionTree.pathTo`, which gives [] for an unknown entry instead of failing.
 *
 * @since 0.1.0
 * @category utils
 */
export const pathToOrFail: <E extends Linked>(entries: ReadonlyArray<E>, leaf: string) => Effect.Effect<ReadonlyArray<E>, InputError> =
  internal.pathToOrFail

/**
 * The canonical JSONL generation of `records`.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toJsonl: (records: Records) => string = internal.toJsonl

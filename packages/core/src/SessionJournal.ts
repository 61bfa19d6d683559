/**
 * The port between the store and a backend: a backend persists the
 * canonical lines of a session's records, reads them back, and says whether
 * another writer got there first. Records, validation, history, group commit
 * and the tree belong to the core and are written once; a backend never parses
 * a record, so it cannot accept what another backend would refuse.
 *
 * Backends: `FileJournal` (`@session-tree/file`, one JSONL file per session),
 * `MemoryJournal` (beside this module, for tests and examples) and the
 * PostgreSQL journal (`@session-tree/pg`).
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { RecordLines } from "./Codec.js"
import type { ConflictError, CorruptError, InputError, IoError, LockedError, SessionError } from "./SessionError.js"
import * as Hash from "./internal/sha256.js"

/**
 * What reading a session can fail with: nothing readable at the location (SESSION_NOT_FOUND,
 * SESSION_NOT_REGULAR_FILE: `InputError`), bytes that cannot be a session's (a cap, invalid
 * UTF-8: `CorruptError`), a session replaced or busy while it was read (`ConflictError`), a failed
 * step (`IoError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type ReadError = InputError | CorruptError | ConflictError | IoError

/**
 * What opening a session for appending can fail with: a read's failures (another store holding it is a `ConflictError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type OpenError = ReadError

/**
 * What creating a session can fail with: any class. A location that cannot hold one
 * (`InputError`), a name already taken (`ConflictError`), a blob `from` does not hold
 * (`CorruptError`), a failed step (`IoError`), a rollback that could not be proven (`LockedError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type CreateError = SessionError

/**
 * What an append through a writer can fail with: another writer got there first or is committing
 * (`ConflictError`), a failed step after which nothing was committed (`IoError`), a rollback that
 * could not be proven (`LockedError`); and, where the batch brings blobs, a blob store that is not
 * a directory (`InputError`). Never `CorruptError`: the store checked the batch before handing it
 * over, and a batch's blobs are bytes, not references to another session's.
 *
 * @since 0.1.0
 * @category errors
 */
export type AppendError = InputError | ConflictError | IoError | LockedError

/**
 * What reading a blob can fail with: the session's location (`InputError`), a missing or damaged blob (`CorruptError`), a failed step (`IoError`).
 *
 * @since 0.1.0
 * @category errors
 */
export type BlobError = InputError | CorruptError | ConflictError | IoError

/**
 * Canonical record lines: each text without its terminator, with its UTF-8 size in bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Lines {
  readonly lines: ReadonlyArray<string>
  readonly sizes: ReadonlyArray<number>
}

/**
 * What a backend read back: the lines of one session as stored, and where they are.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stored extends RecordLines {
  /** The session's location as the backend resolved it: an absolute path, a session ID. */
  readonly location: string
  /** Bytes the backend read: a file's size; elsewhere the lines with a newline each. */
  readonly size: number
  /**
   * Where this read ended, in the backend's own terms (a file's identity and offset, a database's
   * incarnation and head), for `readAfter` to read only what follows it: opaque to everyone else,
   * and absent where the backend cannot tell.
   */
  readonly mark?: unknown
}

/**
 * What `readAfter` read: either only what was appended after the read it was given (`After`), or
 * the session whole again (`Whole`), whenever the backend cannot prove that the lines read before
 * are still the session's first lines, unchanged.
 *
 * In `After`, `stored.lines`, `sizes` and `ids` hold only the lines after the ones read before
 * (none when nothing was appended); `size` is the whole session's, `tail` its tail now, `blobs`
 * the blobs the new lines can refer to (those the lines before referred to were checked by the
 * read before: blobs are never changed, and go only with their session), and `mark` where this
 * read ended. Nothing in it is decoded or checked: that is the caller's, as for `read`.
 *
 * @since 0.2.0
 * @category models
 */
export type ReadAfter =
  | { readonly _tag: "After"; readonly stored: Stored }
  | { readonly _tag: "Whole"; readonly stored: Stored }

/**
 * A blob a commit stores with its session (`docs/format.md`, "Blobs"): named by the SHA-256 of
 * its bytes as 64 lowercase hexadecimal digits, and `size` bytes long. Either its bytes, or the
 * same blob held by the session at `from` (a fork), which the backend shares or copies so that
 * either session can go without the other: SESSION_BLOB_MISSING when `from` does not hold it
 * with that size.
 *
 * @since 0.1.0
 * @category models
 */
export type NewBlob = BlobBytes | BlobCopy

/**
 * A new blob given by its bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface BlobBytes {
  readonly hash: string
  readonly size: number
  readonly bytes: Uint8Array
}

/**
 * A new blob taken from the session at `from`, which holds it (a fork).
 *
 * @since 0.1.0
 * @category models
 */
export interface BlobCopy {
  readonly hash: string
  readonly size: number
  readonly from: string
}

/**
 * A batch of new entries, in commit order.
 *
 * @since 0.1.0
 * @category models
 */
export interface Batch extends Lines {
  /** The entry ID of each line. */
  readonly ids: ReadonlyArray<string>
  /**
   * The canonical lines of everything accepted before this batch, the header's first, when the
   * lines the writer read (`Opened.lines`) are not all canonical (a value spelled otherwise,
   * whitespace): given with each batch after such a load until one commits, never after a
   * create. A backend that keeps the canonical form (a file) commits these in place of the lines
   * it read; one that keeps lines as they were written may ignore them. How the lines are laid
   * out (a file's line endings, a skipped tail) is the backend's own to know.
   */
  readonly canonical?: Lines | undefined
  /** The session's listing once this batch is committed, for a backend that keeps listings (`SessionCatalog.Listings`). */
  readonly listing?: ListingOf | undefined
  /**
   * Blobs the batch's entries are the first to refer to: durable before the batch's lines are
   * committed (in a database, in the same transaction). A failed commit may leave some of them
   * stored; nothing refers to them then, and a later commit may store them again. Always bytes:
   * only a create (a fork) takes blobs from another session.
   */
  readonly blobs?: ReadonlyArray<BlobBytes> | undefined
}

/**
 * Makes a session's listing (a `Sessions.Summary` as JSON text) under the location the backend
 * gives it; called only when a backend asks, so that one that keeps listings can keep it in the
 * same commit.
 *
 * @since 0.1.0
 * @category models
 */
export type ListingOf = (location: string) => string

/**
 * One session held for appending, by one store. Appends through a writer never
 * run concurrently: the store hands it one batch at a time.
 *
 * @since 0.1.0
 * @category models
 */
export interface Writer {
  /**
   * Adds `batch` after what the session held when this writer last read or
   * wrote it: durably, and all of it or nothing. When the session changed
   * meanwhile it writes nothing and fails with SESSION_REPLACED (or
   * SESSION_BUSY while another writer's commit is in flight); a failed step is
   * SESSION_IO; SESSION_ROLLBACK_FAILED when neither outcome can be proven.
   *
   * An empty batch commits the canonical generation of what is accepted when
   * the backend holds anything else (a file's CRLF endings, a torn tail), and
   * does nothing otherwise. Once the writer's scope has closed, every call
   * fails with SESSION_IO.
   */
  readonly append: (batch: Batch) => Effect.Effect<void, AppendError>
}

/**
 * A session held for appending: what was read, and the writer that appends after it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Held extends Stored {
  readonly writer: Writer
}

/**
 * A session created and held for appending: where it is, and its writer.
 *
 * @since 0.1.0
 * @category models
 */
export interface Created {
  readonly location: string
  readonly writer: Writer
}

/**
 * What a backend provides: sessions created, read, held for appending, and their blobs.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionJournalService {
  /**
   * How the backend's locations relate to the IDs of the sessions there: `"chosen"` where any
   * session may be at any location the caller names (a file path, a key in memory);
   * `"sessionId"` where a session's location is its ID (a database keyed by session ID), so a
   * session is created, imported and loaded only at the location that is its own ID.
   */
  readonly locations: "chosen" | "sessionId"
  /**
   * Creates a session holding exactly `session` (the header's line first, then
   * any entries, whose IDs `ids` gives): durable and complete, or nothing.
   * SESSION_EXISTS when something is at `location`. The writer is held until
   * the scope closes.
   */
  readonly create: (
    location: string,
    session: Lines & {
      readonly ids: ReadonlyArray<string>
      readonly listing?: ListingOf | undefined
      /** The blobs the entries refer to, stored before (or with) the session itself. */
      readonly blobs?: ReadonlyArray<NewBlob> | undefined
    }
  ) => Effect.Effect<Created, CreateError, Scope.Scope>
  /** Reads a session and holds it for appending until the scope closes. Reading never writes. */
  readonly hold: (location: string) => Effect.Effect<Held, OpenError, Scope.Scope>
  /** Reads a session without holding anything afterwards, and without writing. */
  readonly read: (location: string) => Effect.Effect<Stored, ReadError>
  /**
   * Reads a session again after `before` (what `read` or `readAfter` gave for the same location):
   * only what was appended since, when the backend can prove that the lines of `before` are still
   * the session's first lines as they were; the session whole otherwise (see `ReadAfter`).
   * Optional: `readAfter` below falls back to `read`. Reading never writes.
   */
  readonly readAfter?: ((location: string, before: Stored) => Effect.Effect<ReadAfter, ReadError>) | undefined
  /**
   * The bytes of the blob `hash` (64 lowercase hexadecimal digits) of the session at `location`
   * (as `Stored.location` gives it), checked against their name: SESSION_BLOB_MISSING when the
   * session holds no such blob, SESSION_BLOB_CORRUPT when the bytes do not hash to it.
   */
  readonly blob: (location: string, hash: string) => Effect.Effect<Uint8Array, BlobError>
  /**
   * A SHA-256 of the backend's own, as 64 lowercase hexadecimal digits, for the store to name new
   * blobs with; by default `sha256` (the platform's where there is one).
   */
  readonly sha256?: ((bytes: Uint8Array) => string) | undefined
}

/**
 * Reads the session at `location` again after `before`: through the backend's `readAfter` where it
 * has one, else whole (`read`).
 *
 * @since 0.2.0
 * @category utils
 */
export const readAfter = (journal: SessionJournalService, location: string, before: Stored): Effect.Effect<ReadAfter, ReadError> =>
  journal.readAfter !== undefined
    ? journal.readAfter(location, before)
    : Effect.map(journal.read(location), (stored): ReadAfter => ({ _tag: "Whole", stored }))

/**
 * The SHA-256 that names blobs (`docs/format.md`, "Blobs"), as 64 lowercase hexadecimal digits: the
 * platform's where the runtime has one (Node, Deno, Bun), else the core's own. Backends name and
 * check blobs with it.
 *
 * @since 0.1.0
 * @category utils
 */
export const sha256: (bytes: Uint8Array) => string = Hash.sha256

/**
 * The backend in the context.
 *
 * @since 0.1.0
 * @category tags
 */
export class SessionJournal extends Context.Tag("@session-tree/SessionJournal")<SessionJournal, SessionJournalService>() {}

/**
 * SessionStore: one session, its accepted history in memory, and durable
 * appends through whichever backend provides the `SessionJournal`.
 *
 * Every append is checked when it is called and again, against the history it
 * will follow, when its batch is built. Appends started together, or queued
 * behind a commit in flight, share one commit (group commit); each resolves
 * only once the commit that holds it is durable, and a failed commit fails
 * exactly those appends and changes neither memory nor the backend.
 *
 * An append interrupted while it waits for its batch is withdrawn: nothing of
 * it is committed. Once its batch is being committed it is committed either
 * way; its interruption then waits for that commit.
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { Ids } from "./Ids.js"
import * as internal from "./internal/sessionStore.js"
import type { Entry, Header } from "./Record.js"
import type { History } from "./History.js"
import type { CorruptError, InputError, SessionError } from "./SessionError.js"
import type { AppendError, BlobError, ReadError, SessionJournal, SessionJournalService, Stored } from "./SessionJournal.js"

/**
 * One session held by a store: its accepted history in memory, and durable appends through the backend.
 *
 * @since 0.1.0
 * @category models
 */
export interface SessionStore {
  /** Where the session is, as its backend resolved it: an absolute path, a session ID. */
  readonly location: string
  readonly header: Header
  /** Every accepted entry in commit order; a frozen array, replaced (never mutated) by each commit. */
  readonly entries: ReadonlyArray<Entry>
  /** Whether the loaded session ended in a skipped incomplete tail that no commit has removed yet. */
  readonly tail: "none" | "incomplete"
  readonly get: (id: string) => Entry | undefined
  /**
   * Appends one entry. The message is snapshot when `append` is called (own data
   * properties only, no caller code runs), so later changes to it never reach the
   * entry; the entry resolves once durable. Once the store's scope has closed,
   * `append` and `flush` fail with SESSION_IO, and so do those still queued then.
   *
   * In a version-2 session a file part's `data` may also be the bytes themselves (a
   * `Uint8Array`). Data over `Codec.MAX_INLINE_FILE_BYTES` decoded, as bytes or as base64,
   * is stored as a blob of the session and the entry holds its reference; bytes up to that
   * size are stored inline as base64. A reference given as is must name a blob the session
   * holds, with its size (SESSION_BLOB_MISSING otherwise).
   *
   * Fails with `InputError` for what the caller gave (the message, the parent, a cap it would
   * pass: whatever the code), `ConflictError` when another writer got there first, `IoError`,
   * or `LockedError`; never `CorruptError`, which only stored data can be.
   */
  readonly append: (parentId: string | null, message: unknown) => Effect.Effect<Entry, AppendError>
  /**
   * Appends one entry of any kind (version 2): `body` holds `kind` first, then exactly that kind's
   * keys (`RecordV2.Body`), snapshot like a message. A version-1 session holds messages only
   * (SESSION_UNSUPPORTED_VERSION).
   */
  readonly appendEntry: (parentId: string | null, body: unknown) => Effect.Effect<Entry, AppendError>
  /**
   * Appends a chain of entries in one commit, all of them or none: the first a child of
   * `parentId`, each next one a child of the one before (an agent's step: its assistant message,
   * then the results of its tool calls). Bodies as `appendEntry` takes them (version 2).
   */
  readonly appendChain: (parentId: string | null, bodies: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Entry>, AppendError>
  /**
   * Checks and copies a message now, exactly as `append` does when it is called, for
   * `appendPrepared` to commit later under the parent chosen then: how a caller that picks the
   * parent only when its turn comes (the tree: its leaf) appends with one check and one copy.
   */
  readonly prepareMessage: (message: unknown) => Either.Either<Prepared<Entry>, InputError>
  /** Checks and copies an entry body now, as `appendEntry` does (see `prepareMessage`). */
  readonly prepareEntry: (body: unknown) => Either.Either<Prepared<Entry>, InputError>
  /** Checks and copies the bodies of a chain now, as `appendChain` does (see `prepareMessage`). */
  readonly prepareChain: (bodies: ReadonlyArray<unknown>) => Either.Either<Prepared<ReadonlyArray<Entry>>, InputError>
  /**
   * Appends what this store prepared under `parentId`, as `append`, `appendEntry` or
   * `appendChain` would have; an append prepared by another store is SESSION_INVALID_OPTIONS.
   * The same prepared append may be committed more than once, each time as a new entry.
   */
  readonly appendPrepared: <A>(parentId: string | null, prepared: Prepared<A>) => Effect.Effect<A, AppendError>
  /** Commits the canonical generation of what is accepted, with no new entry; a no-op when already canonical. */
  readonly flush: Effect.Effect<void, AppendError>
  /**
   * The bytes of a blob of this session, by its reference (`"sha256:…"`, as a file part's
   * `data.blob` gives it), checked against their hash: SESSION_BLOB_MISSING when the session
   * holds no such blob, SESSION_BLOB_CORRUPT when the stored bytes do not match it.
   */
  readonly blob: (ref: string) => Effect.Effect<Uint8Array, BlobError>
}

/**
 * Marks an append prepared by a store (`SessionStore.prepareMessage` and the like).
 *
 * @since 0.1.0
 * @category symbols
 */
export const PreparedTypeId: unique symbol = Symbol.for("@session-tree/core/SessionStore/Prepared")
/**
 * The type of `PreparedTypeId`.
 *
 * @since 0.1.0
 * @category symbols
 */
export type PreparedTypeId = typeof PreparedTypeId

/**
 * An append a store has checked and copied, waiting for its parent (`SessionStore.appendPrepared`);
 * `A` is what committing it gives: an entry, or a chain's entries. Opaque: only its store reads it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Prepared<out A> {
  readonly [PreparedTypeId]: { readonly _A: (_: never) => A }
}

/**
 * The tag of a store in the context, a class as every tag of the library is. Its identifier is the
 * service's own interface (`SessionStore`), the name every caller already types a store with.
 *
 * @since 0.1.0
 * @category tags
 */
export class SessionStoreTag extends Context.Tag("@session-tree/SessionStore")<SessionStore, SessionStore>() {}

/**
 * The store in the context (see `SessionStoreTag`).
 *
 * @since 0.1.0
 * @category models
 */
export const SessionStore: typeof SessionStoreTag = SessionStoreTag

/**
 * How a new session starts.
 *
 * @since 0.1.0
 * @category models
 */
export interface CreateOptions {
  /** The session ID; by default the backend's or a fresh one from `Ids`. */
  readonly id?: string | undefined
  /** The format version: 2 (the agent format) unless 1 (the course format) is asked for. */
  readonly version?: 1 | 2 | undefined
  /** Where a fork came from, written into a version-2 header. */
  readonly forkedFrom?: { readonly session: string; readonly entry: string } | undefined
}

/**
 * How a session is loaded.
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadOptions {
  /** The only format version accepted: a session of another is SESSION_UNSUPPORTED_VERSION. Any by default. */
  readonly version?: 1 | 2 | undefined
}

/**
 * What a read-only load finds.
 *
 * @since 0.1.0
 * @category models
 */
export interface Loaded {
  readonly location: string
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
  readonly tail: "none" | "incomplete"
  /** Bytes the backend read (see `SessionJournal.Stored`). */
  readonly size: number
  /** The bytes of a blob of this session, as `SessionStore.blob` reads them. */
  readonly blob: (ref: string) => Effect.Effect<Uint8Array, BlobError>
}

/**
 * Loads a session read-only: it never writes, and holds nothing afterwards.
 *
 * @since 0.1.0
 * @category constructors
 */
export const read: (location: string) => Effect.Effect<Loaded, ReadError, SessionJournal> = internal.read

/**
 * The header and checked history of lines a backend read, as `read` decodes them (records,
 * history, caps, blobs, and the ID a backend that locates sessions by ID stores it under), or the
 * first reason they are not a valid session. For a reader that keeps the history to read only what
 * is appended later (`History.checkAndAdd`).
 *
 * @since 0.2.0
 * @category reading
 */
export const decodeStored: (
  journal: SessionJournalService,
  stored: Stored
) => Either.Either<{ readonly header: Header; readonly history: History }, CorruptError> = internal.decode

/**
 * What `read` gives for `stored` with `entries` as its entries (its blobs read through `journal`).
 *
 * @since 0.2.0
 * @category reading
 */
export const loadedOf: (
  journal: SessionJournalService,
  stored: Pick<Stored, "location" | "tail" | "size">,
  header: Header,
  entries: ReadonlyArray<Entry>
) => Loaded = internal.loadedOf

/**
 * Creates a new session holding one header, durably: SESSION_EXISTS when the
 * location is taken. Version 2 unless `options.version` is 1. The ID comes from
 * `options.id`, from the backend when it names sessions by ID, or from `Ids`;
 * the timestamp from the clock.
 *
 * @since 0.1.0
 * @category constructors
 */
export const create: (
  location: string,
  options?: CreateOptions
) => Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> = internal.create

/**
 * Loads a session for appending; the backend holds it until the scope closes.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load: (location: string, options?: LoadOptions) => Effect.Effect<SessionStore, ReadError, SessionJournal | Ids | Scope.Scope> =
  internal.load

/**
 * Loads the session at `location`, creating it first when nothing is there (with `options`; a
 * `version` given is then also the only one a load accepts).
 *
 * @since 0.1.0
 * @category constructors
 */
export const open: (location: string, options?: CreateOptions) => Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> =
  internal.open

/**
 * A layer of the store of the session at `location`, loaded (see `load`) for the layer's lifetime.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerLoad = (location: string, options?: LoadOptions): Layer.Layer<SessionStore, ReadError, SessionJournal | Ids> =>
  Layer.scoped(SessionStore, load(location, options))
/**
 * A layer of a new store at `location` (see `create`), held for the layer's lifetime.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerCreate = (
  location: string,
  options?: CreateOptions
): Layer.Layer<SessionStore, SessionError, SessionJournal | Ids> => Layer.scoped(SessionStore, create(location, options))
/**
 * A layer of the store at `location`, loaded or created (see `open`), held for the layer's lifetime.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerOpen = (location: string, options?: CreateOptions): Layer.Layer<SessionStore, SessionError, SessionJournal | Ids> =>
  Layer.scoped(SessionStore, open(location, options))

/**
 * The memory backend: sessions as arrays of canonical lines in a `Map`, for
 * tests and examples. Nothing is durable, but everything else holds as on the
 * other backends: a session is created whole or not at all, a writer appends
 * only after the lines it last saw (the loser of a race gets SESSION_REPLACED),
 * and loading validates every line, so lines put in the map by hand are held to
 * the same rules as a file's. Blobs are kept per session, in a map of their own.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { utf8Length } from "./Codec.js"
import { SessionCatalog, type SessionCatalogService } from "./SessionCatalog.js"
import { type CorruptError, type InputError, sessionError } from "./SessionError.js"
import { sha256 } from "./internal/sha256.js"
import * as Tracing from "./Tracing.js"
import { type AppendError, type BlobBytes, type Created, type CreateError, type NewBlob, type ReadAfter, SessionJournal, type SessionJournalService, type Stored, type Writer } from "./SessionJournal.js"

/**
 * Session location → its lines, the header's first, none with a terminator. A
 * commit replaces a session's array, so a writer knows the array it last wrote.
 *
 * @since 0.1.0
 * @category models
 */
export type Storage = Map<string, ReadonlyArray<string>>

/**
 * Session location → its blobs, by hash (64 lowercase hexadecimal digits).
 *
 * @since 0.1.0
 * @category models
 */
export type BlobStorage = Map<string, Map<string, Uint8Array>>

const missing = (location: string): InputError =>
  sessionError("SESSION_NOT_FOUND", "no session at this location", { path: location })

const storedOf = (location: string, lines: ReadonlyArray<string>, blobs: BlobStorage): Stored => {
  const sizes = lines.map(utf8Length)
  const held = blobs.get(location)
  return {
    location,
    lines,
    sizes,
    tail: "none",
    size: sizes.reduce((sum, size) => sum + size + 1, 0),
    // The array read: an append puts a new one in the map, which starts with the same strings.
    mark: lines,
    ...(held === undefined ? {} : { blobs: new Map([...held].map(([hash, bytes]) => [hash, bytes.length])) })
  }
}

/**
 * The lines of `now` after those of `before` (the array a read gave as its mark), or undefined
 * when `now` does not start with every one of them (a session replaced, or changed in the map).
 */
const linesAfter = (before: unknown, now: ReadonlyArray<string>): ReadonlyArray<string> | undefined => {
  if (!Array.isArray(before) || before.length > now.length) return undefined
  for (let i = 0; i < before.length; i++) if (before[i] !== now[i]) return undefined
  return now.slice(before.length)
}

/**
 * The bytes of each of `added`: its own, or those of the session it is taken from (a fork), which
 * must hold it with its size (else SESSION_BLOB_MISSING). Given bytes are copied, so the caller's
 * later changes cannot reach them; stored bytes are never changed or handed out, so a fork shares them.
 */
const resolveBlobs = (blobs: BlobStorage, added: ReadonlyArray<NewBlob>): Either.Either<ReadonlyArray<BlobBytes>, CorruptError> => {
  const found: Array<BlobBytes> = []
  for (const blob of added) {
    if ("bytes" in blob) {
      found.push({ ...blob, bytes: blob.bytes.slice() })
      continue
    }
    const bytes = blobs.get(blob.from)?.get(blob.hash)
    if (bytes === undefined || bytes.length !== blob.size) {
      return Either.left(sessionError("SESSION_BLOB_MISSING", `blob "sha256:${blob.hash}" is not in the session it is taken from`, {
        path: blob.from
      }))
    }
    found.push({ hash: blob.hash, size: blob.size, bytes })
  }
  return Either.right(found)
}

/** Puts `added` into the blobs of `location`; `copy` copies their bytes first (an append's, given by the caller). */
const putBlobs = (blobs: BlobStorage, location: string, added: ReadonlyArray<BlobBytes> | undefined, copy: boolean): void => {
  if (added === undefined || added.length === 0) return
  let held = blobs.get(location)
  if (held === undefined) blobs.set(location, held = new Map())
  for (const blob of added) if (!held.has(blob.hash)) held.set(blob.hash, copy ? blob.bytes.slice() : blob.bytes)
}

/**
 * A journal over `storage` and `blobs` (fresh maps by default).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (storage: Storage = new Map(), blobs: BlobStorage = new Map()): SessionJournalService => {
  const writerOf = (location: string, initial: ReadonlyArray<string>): Effect.Effect<Writer, never, Scope.Scope> =>
    Effect.map(
      Effect.acquireRelease(Effect.sync(() => ({ seen: initial, closed: false })), (held) => Effect.sync(() => (held.closed = true))),
      (held): Writer => ({
        append: (batch) =>
          Effect.suspend((): Effect.Effect<void, AppendError> => {
            if (held.closed) return Effect.fail(sessionError("SESSION_IO", "the store's scope is closed", { path: location }))
            if (storage.get(location) !== held.seen) {
              return Effect.fail(sessionError("SESSION_REPLACED", "the session changed since this store read it", { path: location }))
            }
            if (batch.lines.length === 0) return Effect.void
            putBlobs(blobs, location, batch.blobs, true)
            const next = [...held.seen, ...batch.lines]
            storage.set(location, next)
            held.seen = next
            return Effect.void
          })
      })
    )
  const journal: SessionJournalService = {
    locations: "chosen",
    create: (location, session) =>
      Effect.suspend((): Effect.Effect<Created, CreateError, Scope.Scope> => {
        if (location === "") return Effect.fail(missing(location))
        if (storage.has(location)) {
          return Effect.fail(sessionError("SESSION_EXISTS", "a session is already at this location", { path: location }))
        }
        const resolved = resolveBlobs(blobs, session.blobs ?? [])
        if (Either.isLeft(resolved)) return Effect.fail(resolved.left)
        putBlobs(blobs, location, resolved.right, false)
        const lines = session.lines.slice()
        storage.set(location, lines)
        return Effect.map(writerOf(location, lines), (writer) => ({ location, writer }))
      }),
    hold: (location) =>
      Effect.suspend(() => {
        const lines = storage.get(location)
        if (lines === undefined) return Effect.fail(missing(location))
        return Effect.map(writerOf(location, lines), (writer) => ({ ...storedOf(location, lines, blobs), writer }))
      }),
    read: (location) =>
      Effect.suspend(() => {
        const lines = storage.get(location)
        return lines === undefined ? Effect.fail(missing(location)) : Effect.succeed(storedOf(location, lines, blobs))
      }),
    readAfter: (location, before) =>
      Effect.suspend(() => {
        const lines = storage.get(location)
        if (lines === undefined) return Effect.fail(missing(location))
        const added = linesAfter(before.mark, lines)
        if (added === undefined) return Effect.succeed<ReadAfter>({ _tag: "Whole", stored: storedOf(location, lines, blobs) })
        // Only the new lines are measured: the size goes on from the read before's.
        const after = storedOf(location, added, blobs)
        return Effect.succeed<ReadAfter>({ _tag: "After", stored: { ...after, size: before.size + after.size, mark: lines } })
      }),
    blob: (location, hash) =>
      Effect.suspend(() => {
        const bytes = blobs.get(location)?.get(hash)
        if (bytes === undefined) {
          return Effect.fail(sessionError("SESSION_BLOB_MISSING", `blob "sha256:${hash}" is not in the session's store`, { path: location }))
        }
        if (sha256(bytes) !== hash) {
          return Effect.fail(sessionError("SESSION_BLOB_CORRUPT", `the bytes of blob "sha256:${hash}" do not match its hash`, { path: location }))
        }
        return Effect.succeed(bytes.slice())
      })
  }
  return {
    locations: journal.locations,
    create: (location, session) =>
      Tracing.span("MemoryJournal.create", { session: location, batch: session.ids.length })(journal.create(location, session)),
    hold: (location) => Tracing.span("MemoryJournal.hold", { session: location })(journal.hold(location)),
    read: (location) => Tracing.span("MemoryJournal.read", { session: location })(journal.read(location)),
    readAfter: (location, before) => Tracing.span("MemoryJournal.readAfter", { session: location })(journal.readAfter!(location, before)),
    blob: (location, hash) => Tracing.span("MemoryJournal.blob", { session: location })(journal.blob(location, hash))
  }
}

/**
 * The catalog of `storage`: every location in it. A session's version is the identity of its
 * array (a commit replaces it), numbered on first sight; its change time is when the catalog first
 * saw that array, so a session changed later lists before one changed earlier.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeCatalog = (storage: Storage, blobs: BlobStorage = new Map()): SessionCatalogService => {
  const seen = new WeakMap<ReadonlyArray<string>, { readonly version: number; readonly changed: number }>()
  let versions = 0
  let clock = 0
  const versionOf = (lines: ReadonlyArray<string>) => {
    let v = seen.get(lines)
    if (v === undefined) {
      // A logical clock that never runs backwards, so equal milliseconds still order the changes.
      clock = Math.max(clock + 1, Date.now())
      v = { version: ++versions, changed: clock }
      seen.set(lines, v)
    }
    return v
  }
  return {
    scan: () =>
      Effect.sync(() =>
        [...storage].map(([location, lines]) => {
          const v = versionOf(lines)
          return { location, version: String(v.version), changed: v.changed }
        })
      ),
    readMany: (locations) =>
      Effect.sync(() =>
        locations.map((location) => {
          const lines = storage.get(location)
          return lines === undefined ? Either.left(missing(location)) : Either.right(storedOf(location, lines, blobs))
        })
      ),
    // A writer holding the session compares the map's array with the one it last saw: once the
    // location is gone (or holds a new session), its next append is SESSION_REPLACED and writes nothing.
    delete: (location) =>
      Effect.suspend(() => {
        if (!storage.delete(location)) return Effect.fail(missing(location))
        // Its blobs go with it: a session created later at this location starts without them.
        blobs.delete(location)
        return Effect.succeed(location)
      })
  }
}

/**
 * A fresh, empty memory journal and its catalog per build of the layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SessionJournal | SessionCatalog> = Layer.suspend(() => layerStorage(new Map()))

/**
 * A memory journal and catalog over `storage` and `blobs`, which the caller can read and change.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerStorage = (storage: Storage, blobs: BlobStorage = new Map()): Layer.Layer<SessionJournal | SessionCatalog> =>
  Layer.merge(Layer.succeed(SessionJournal, make(storage, blobs)), Layer.succeed(SessionCatalog, makeCatalog(storage, blobs)))

/**
 * The version-2 append (`docs/files.md`, "The append intent"): a
 * batch's lines are written after the committed end of the file itself, behind an
 * intent at the marker's name: a symbolic link whose text says where the committed
 * end was, where the batch ends and the batch's SHA-256 (`Marker.encodeIntent`). A
 * link is created whole with its text, exclusively (it is the lock), and one
 * directory sync makes it durable. Its cost is the batch's, not the session's.
 *
 * The rule that every reader and `recover` apply to a file with an intent beside it
 * (`Marker.settle`): the file shows the batch only when it holds exactly the batch's
 * bytes after the committed end; otherwise it shows the committed end. The intent is
 * durable before any byte of the batch is written, so a file without one never holds
 * part of a batch; and the batch is durable before the append resolves, so an intent
 * that a crash brings back after that finds the batch whole and keeps it.
 *
 * Each step that changes something is a bracket whose release is its undo: the intent
 * (removed after a failure), the descriptor opened for writing (closed after a failure), and
 * the bytes written after the committed end (cut back after a failure, durably).
 */
import { type ConflictError, type IoError, sessionError } from "@session-tree/core/SessionError"
import { sha256 } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import { Flags, type FsService, type Handle, sameFile } from "../Fs.js"
import { type Directory, type Held, isLocked, lock, type OpenGeneration, provenOr, rollbackFailed } from "./held.js"
import { closeQuietly, expectIdentity, lstatNamed, removeOwn, step, stepError, writeAll, type WriteFailure } from "./io.js"
import * as Marker from "./marker.js"
import type * as Paths from "./paths.js"

export interface AppendInput {
  readonly paths: Paths.SessionPaths
  readonly dir: Directory
  /** The generation appended to: the one the writer holds. */
  readonly base: OpenGeneration
  /** The batch's lines, each with its newline. */
  readonly bytes: Uint8Array
  /** A descriptor of the held generation open for writing, from an earlier append; one is opened when absent. */
  readonly handle: Handle | undefined
}

export interface Appended {
  /** The generation appended: the one appended to, grown by the batch. */
  readonly generation: OpenGeneration
  /** The descriptor open for writing, for the next append. */
  readonly handle: Handle
  /** The intent, when its removal failed: the batch is durable, and the store removes it before its next commit. */
  readonly staleIntent: string | undefined
}

/**
 * The append: lock (create the intent), prove the file is still the one this writer holds, make
 * the intent durable (a directory sync), write the batch after the committed end and make it
 * durable, prove the file is still the one at the path, then remove the intent; the caller then
 * holds the generation appended (a rollback leaves what it did in `state`). Each step that changes something is acquired
 * with its undo as its release (`withIntent`, `withDescriptor`, `withBatch`), so a failure undoes
 * them in reverse order; one whose undo cannot be proven fails with SESSION_ROLLBACK_FAILED.
 *
 * The caller runs it uninterruptibly: once the intent exists, the outcome must reach the state
 * the next append starts from.
 */
export const append = <S extends Held>(fs: FsService, input: AppendInput, state: Ref.Ref<S>): Effect.Effect<Appended, WriteFailure> => {
  const { base, bytes, dir, paths } = input
  const text = Marker.encodeIntent({ from: base.size, to: base.size + bytes.length, sha256: sha256(bytes) })
  return withIntent(fs, state, paths, text, Effect.gen(function*() {
    yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
    yield* unchanged(fs, paths, base)
    yield* step("fsync directory", fs.fsync(dir.handle))
    return yield* withDescriptor(fs, input, (handle) => withBatch(fs, state, paths, handle, base, writeBatch(fs, input, handle, text)))
  })).pipe(Effect.catchAll(provenOr(state)))
}

/** The batch after the committed end, made durable and proven to be where the path leads; then the intent goes. */
const writeBatch = (fs: FsService, input: AppendInput, handle: Handle, text: string): Effect.Effect<Appended, WriteFailure> =>
  Effect.gen(function*() {
    const { base, bytes, dir, paths } = input
    const to = base.size + bytes.length
    yield* writeAll(fs, handle, bytes, 0, base.size)
    yield* step("fdatasync", fs.fdatasync(handle))
    const after = yield* step("fstat after append", fs.fstat(handle))
    if (after.size !== to) {
      return yield* sessionError("SESSION_IO", `the file holds ${after.size} bytes after the append, not ${to}`, { path: paths.path })
    }
    // The batch went to the file this store holds: prove it is still the one at the path, in the
    // same directory, or the append would resolve into a file nobody reads.
    yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
    yield* expectIdentity(fs, "file", paths.path, "file", base.id)
    // Durable from here on. An intent that stays (its removal failed, or a crash brings it back)
    // finds the batch whole, so every reader shows it.
    const gone = yield* removeOwn(fs, paths.marker)
    return { generation: { ...base, size: to, mtimeNs: after.mtimeNs }, handle, staleIntent: gone ? undefined : text }
  })

/**
 * The intent, created exclusively: the lock, held while `use` runs. Anything already at the
 * marker's name is SESSION_BUSY, saying why. After a failure it goes (it is ours: created
 * exclusively, and `recover` leaves the intent of a running writer alone), unless an undo before
 * it could not be proven; one that cannot be removed is kept, and the writer locked.
 */
const withIntent = <A, S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  paths: Paths.SessionPaths,
  text: string,
  use: Effect.Effect<A, WriteFailure>
): Effect.Effect<A, WriteFailure> =>
  Effect.acquireUseRelease(
    Effect.catchAll(fs.symlink(text, paths.marker), (e): Effect.Effect<never, WriteFailure> =>
      e.errno === "EEXIST"
        ? Effect.flatMap(Marker.busy(fs, paths, Marker.COMMIT), Effect.fail)
        : Effect.fail(stepError("lock (create intent)", e))),
    () => use,
    (_, exit) =>
      Exit.isSuccess(exit) ? Effect.void : Effect.flatMap(isLocked(state), (locked) =>
        locked ? Effect.void : Effect.flatMap(removeOwn(fs, paths.marker), (gone) =>
          gone ? Effect.void : lock(state, rollbackFailed(paths, "the append intent", "the append intent could not be removed", exit))))
  )

/** The descriptor to write through: the writer's, or the held generation opened for writing, closed again if the append fails. */
const withDescriptor = <A>(fs: FsService, input: AppendInput, use: (handle: Handle) => Effect.Effect<A, WriteFailure>): Effect.Effect<A, WriteFailure> =>
  input.handle !== undefined
    ? use(input.handle)
    : Effect.acquireUseRelease(openForWriting(fs, input.paths, input.base), use, (handle, exit) =>
      Exit.isSuccess(exit) ? Effect.void : closeQuietly(fs, handle))

/**
 * The bytes after the committed end, while `use` writes them: after a failure the file is cut
 * back to the committed end, durably, and `state` holds the generation as the cut left it (its
 * size, a new modification time). A cut that cannot be proven keeps the intent and locks the writer.
 */
const withBatch = <A, S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  paths: Paths.SessionPaths,
  handle: Handle,
  base: OpenGeneration,
  use: Effect.Effect<A, WriteFailure>
): Effect.Effect<A, WriteFailure> =>
  Effect.acquireUseRelease(Effect.void, () => use, (_, exit) =>
    Exit.isSuccess(exit) ? Effect.void : Effect.matchEffect(
      Effect.zipRight(
        Effect.zipRight(step("rollback: truncate", fs.ftruncate(handle, base.size)), step("rollback: fdatasync", fs.fdatasync(handle))),
        step("rollback: fstat", fs.fstat(handle))
      ),
      {
        onFailure: (e) => lock(state, rollbackFailed(paths, "the append intent", "the file could not be truncated back to its committed end", exit, e)),
        onSuccess: (cut) =>
          cut.size === base.size
            ? Ref.update(state, (h) => ({ ...h, base: { ...base, mtimeNs: cut.mtimeNs } }))
            : lock(state, rollbackFailed(paths, "the append intent", "the file could not be truncated back to its committed end", exit, cut))
      }
    ))

/** The file at the path is still the one this writer holds, unchanged since it last wrote or read it. */
const unchanged = (fs: FsService, paths: Paths.SessionPaths, base: OpenGeneration): Effect.Effect<void, WriteFailure> =>
  Effect.flatMap(lstatNamed(fs, "check file", paths.path), (stat) =>
    stat !== undefined && stat.kind === "file" && sameFile(stat, base.id) && stat.size === base.size && stat.mtimeNs === base.mtimeNs
      ? Effect.void
      : Effect.fail(sessionError(
        "SESSION_REPLACED",
        stat === undefined
          ? "the session file is gone (deleted or moved) since this store opened it"
          : "the file is no longer the one this store holds",
        { path: paths.path }
      )))

/** The held generation opened for writing, proven to be it (closed again when it is not). */
const openForWriting = (fs: FsService, paths: Paths.SessionPaths, base: OpenGeneration): Effect.Effect<Handle, WriteFailure> =>
  Effect.flatMap(step("open for append", fs.open(paths.path, Flags.writeNoFollow), { ELOOP: "SESSION_REPLACED", ENOENT: "SESSION_REPLACED" }), (handle) =>
    Effect.flatMap(step("fstat for append", fs.fstat(handle)), (stat): Effect.Effect<Handle, ConflictError | IoError> =>
      stat.kind === "file" && sameFile(stat, base.id)
        ? Effect.succeed(handle)
        : Effect.fail(sessionError("SESSION_REPLACED", "the file changed while it was opened", { path: paths.path }))).pipe(
        Effect.onError(() => closeQuietly(fs, handle))
      ))

/**
 * Removes the intent at the marker's name when it is still `text` (each is unique): true when it
 * is gone or is not that intent, false when it is still there.
 */
export const removeIntent = (fs: FsService, paths: Paths.SessionPaths, text: string): Effect.Effect<boolean> =>
  Effect.matchEffect(fs.readlink(paths.marker), {
    onFailure: (e) => Effect.succeed(e.errno === "ENOENT" || e.errno === "EINVAL"),
    onSuccess: (now) => (now === text ? removeOwn(fs, paths.marker) : Effect.succeed(true))
  })

/**
 * The version-2 append (`docs/format.md`, "Appending to a version-2 file"): a
 * batch's lines are written after the committed end of the file itself, behind an
 * intent at the marker's name: a symbolic link whose text says where the committed
 * end was, where the batch ends and the batch's SHA-256. A link is created whole
 * with its text, exclusively (it is the lock), and one directory sync makes it
 * durable. Its cost is the batch's, not the session's.
 *
 * The rule that every reader and `recover` apply to a file with an intent beside it
 * (`settle`): the file shows the batch only when it holds exactly the batch's bytes
 * after the committed end; otherwise it shows the committed end. The intent is durable
 * before any byte of the batch is written, so a file without one never holds part of
 * a batch; and the batch is durable before the append resolves, so an intent that a
 * crash brings back after that finds the batch whole and keeps it.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { type ConflictError, type LockedError, sessionError } from "@session-tree/core/SessionError"
import { sha256 } from "@session-tree/core/SessionJournal"
import { type FileId, Flags, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import type { OpenGeneration } from "./generation.js"
import { closeQuietly, expectIdentity, lstatOrMissing, removeOwn, step, writeAll, type WriteFailure } from "./io.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"

/** What an intent file says: the batch occupies bytes [from, to) of the file and hashes to `sha256`. */
export interface Intent {
  readonly from: number
  readonly to: number
  readonly sha256: string
  /** The writer (see `owner.ts`), so that `recover` leaves a running writer's intent alone. */
  readonly owner: Owner.Owner
}

/** An intent's text; a session file (what a version-1 commit links at the marker's name) is a regular file instead. */
const INTENT = /^session-tree-append-1:(\d+):(\d+):([0-9a-f]{64}):([0-9a-f]{8}-\d+-\d+):\d+$/

/** The text of a new intent; the sequence number makes each one unique, which readers rely on. */
export const encodeIntent = (intent: Omit<Intent, "owner">): string =>
  `session-tree-append-1:${intent.from}:${intent.to}:${intent.sha256}:${Owner.selfName()}:${Paths.nextSeq()}`

/** The intent a symbolic link's text holds, or undefined when it is not one. */
export const parseIntent = (text: string): Intent | undefined => {
  const m = INTENT.exec(text)
  const owner = m === null ? undefined : Owner.parse(m[4]!)
  if (m === null || owner === undefined) return undefined
  const from = Number(m[1])
  const to = Number(m[2])
  return Number.isSafeInteger(to) && from < to ? { from, to, sha256: m[3]!, owner } : undefined
}

/**
 * How many bytes of a file of `size` bytes a reader shows under `intent`, given the file's bytes
 * from `intent.from` on (`batch`): `to` when the file holds exactly the batch after `from`, else
 * `from`. A file shorter than `from`, or longer than `to`, is not one the intent's writer left:
 * SESSION_REPLACED. Every reader and `recover` judge by this one rule.
 */
export const settle = (size: number, batch: Uint8Array, intent: Intent, path: string): number | ConflictError => {
  if (size < intent.from || size > intent.to) {
    return sessionError(
      "SESSION_REPLACED",
      `the file holds ${size} bytes, which its append intent (bytes ${intent.from} to ${intent.to}) cannot explain`,
      { path }
    )
  }
  return size === intent.to && sha256(batch) === intent.sha256 ? intent.to : intent.from
}

/**
 * An append that could not undo what it wrote: the intent is kept, so that `recover` settles the
 * file, and the store commits nothing more. `error` is the SESSION_ROLLBACK_FAILED it reports.
 */
export class Locked extends Data.TaggedError("Locked")<{ readonly error: LockedError }> {}

export interface AppendInput {
  readonly paths: Paths.SessionPaths
  readonly dirHandle: Handle
  readonly dirId: FileId
  /** The file as this writer last wrote or read it. */
  readonly base: OpenGeneration
  /** The batch's lines, each with its newline. */
  readonly bytes: Uint8Array
  /** A descriptor of `base` open for writing, from an earlier append; one is opened when absent. */
  readonly handle: Handle | undefined
  /** Told the file as a rollback left it (its size `base.size` again, a new modification time). */
  readonly rolledBack: (generation: OpenGeneration) => void
}

export interface Appended {
  readonly generation: OpenGeneration
  /** The descriptor open for writing, for the next append. */
  readonly handle: Handle
  /** The intent, when its removal failed: the batch is durable, and the store removes it before its next commit. */
  readonly staleIntent: string | undefined
}

/** Creates the intent exclusively: the lock. Anything already at the marker's name is SESSION_BUSY, saying why. */
const createIntent = (
  fs: FsService,
  paths: Paths.SessionPaths,
  text: string,
  busy: Effect.Effect<WriteFailure>
): Effect.Effect<void, WriteFailure> =>
  Effect.catchAll(fs.symlink(text, paths.marker), (e) =>
    e.errno === "EEXIST"
      ? Effect.flatMap(busy, Effect.fail)
      : Effect.fail(sessionError("SESSION_IO", `lock (create intent) failed: ${e.errno} (${e.op} ${e.path})`, { path: e.path, cause: e })))

/**
 * Removes the intent at the marker's name when it is still `text` (each is unique): true when it
 * is gone or is not that intent, false when it is still there.
 */
export const removeIntent = (fs: FsService, paths: Paths.SessionPaths, text: string): Effect.Effect<boolean> =>
  Effect.matchEffect(fs.readlink(paths.marker), {
    onFailure: (e) => Effect.succeed(e.errno === "ENOENT" || e.errno === "EINVAL"),
    onSuccess: (now) => (now === text ? removeOwn(fs, paths.marker) : Effect.succeed(true))
  })

/**
 * The append: lock (create the intent), prove the file is still the one this writer holds, make
 * the intent durable (a directory sync), write the batch after the committed end and make it
 * durable, then remove the intent. A failure before the batch is written removes
 * the intent; one after truncates the file back to the committed end first, and when that cannot
 * be proven the intent is kept (`Locked`).
 *
 * The caller runs it uninterruptibly: once the intent exists, the outcome must reach the state
 * the next append starts from.
 */
export const append = (
  fs: FsService,
  input: AppendInput,
  busy: Effect.Effect<WriteFailure>
): Effect.Effect<Appended, WriteFailure | Locked> =>
  Effect.suspend(() => {
    const { base, bytes, dirHandle, dirId, paths } = input
    const from = base.size
    const to = from + bytes.length
    const intent = encodeIntent({ from, to, sha256: sha256(bytes) })

    const locked = (error: WriteFailure, reason: string, cause: unknown) =>
      new Locked({
        error: sessionError("SESSION_ROLLBACK_FAILED", `${reason}; the append intent ${paths.marker} is kept (${error.message})`, {
          path: paths.path,
          cause
        })
      })

    /**
     * Before the batch: the file is as it was, so the intent only has to go. It is ours: created
     * exclusively, and `recover` leaves the intent of a running writer alone.
     */
    const release = (failure: WriteFailure): Effect.Effect<never, WriteFailure | Locked> =>
      Effect.flatMap(removeOwn(fs, paths.marker), (gone): Effect.Effect<never, WriteFailure | Locked> =>
        gone ? Effect.fail(failure) : Effect.fail(locked(failure, "the append intent could not be removed", undefined)))

    /** After the batch was (maybe partly) written: the file goes back to the committed end, durably, then the intent. */
    const rollBack = (handle: Handle) => (failure: WriteFailure): Effect.Effect<never, WriteFailure | Locked> =>
      Effect.gen(function*() {
        const undone = yield* Effect.either(Effect.gen(function*() {
          yield* step("rollback: truncate", fs.ftruncate(handle, from))
          yield* step("rollback: fdatasync", fs.fdatasync(handle))
          return yield* step("rollback: fstat", fs.fstat(handle))
        }))
        if (undone._tag === "Left" || undone.right.size !== from) {
          return yield* locked(failure, "the file could not be truncated back to its committed end", undone._tag === "Left" ? undone.left : undone.right)
        }
        input.rolledBack({ ...base, mtimeNs: undone.right.mtimeNs })
        return yield* release(failure)
      })

    /** The file at the path is still the one this writer holds, unchanged since it last wrote or read it. */
    const checkFile = Effect.flatMap(step("check file", lstatOrMissing(fs, paths.path)), (stat) =>
      stat !== undefined && stat.kind === "file" && sameFile(stat, base.id) && stat.size === base.size && stat.mtimeNs === base.mtimeNs
        ? Effect.void
        : Effect.fail(sessionError(
          "SESSION_REPLACED",
          stat === undefined
            ? "the session file is gone (deleted or moved) since this store opened it"
            : "the file is no longer the one this store holds",
          { path: paths.path }
        )))

    const openForWriting: Effect.Effect<Handle, WriteFailure> = input.handle !== undefined
      ? Effect.succeed(input.handle)
      : Effect.flatMap(step("open for append", fs.open(paths.path, Flags.writeNoFollow), { ELOOP: "SESSION_REPLACED", ENOENT: "SESSION_REPLACED" }), (handle) =>
        Effect.flatMap(step("fstat for append", fs.fstat(handle)), (stat: Stat) =>
          stat.kind === "file" && sameFile(stat, base.id)
            ? Effect.succeed(handle)
            : Effect.fail(sessionError("SESSION_REPLACED", "the file changed while it was opened", { path: paths.path }))).pipe(
            Effect.onError(() => closeQuietly(fs, handle))
          ))

    return Effect.flatMap(createIntent(fs, paths, intent, busy), () =>
      Effect.gen(function*(): Effect.fn.Return<Appended, WriteFailure | Locked> {
        const prepared = yield* Effect.either(Effect.gen(function*() {
          yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
          yield* checkFile
          yield* step("fsync directory", fs.fsync(dirHandle))
          return yield* openForWriting
        }))
        if (prepared._tag === "Left") return yield* release(prepared.left)
        const handle = prepared.right
        const written = yield* Effect.either(Effect.gen(function*() {
          yield* writeAll(fs, handle, bytes, 0, from)
          yield* step("fdatasync", fs.fdatasync(handle))
          const stat = yield* step("fstat after append", fs.fstat(handle))
          if (stat.size !== to) {
            return yield* sessionError("SESSION_IO", `the file holds ${stat.size} bytes after the append, not ${to}`, { path: paths.path })
          }
          // The batch went to the file this store holds: prove it is still the one at the path, in the
          // same directory, or the append would resolve into a file nobody reads.
          yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
          yield* expectIdentity(fs, "file", paths.path, "file", base.id)
          return stat
        }))
        if (written._tag === "Left") {
          return yield* rollBack(handle)(written.left).pipe(Effect.ensuring(input.handle === undefined ? closeQuietly(fs, handle) : Effect.void))
        }
        // Durable from here on. An intent that stays (its removal failed, or a crash brings it back)
        // finds the batch whole, so every reader shows it.
        const gone = yield* removeOwn(fs, paths.marker)
        return {
          generation: { ...base, size: to, mtimeNs: written.right.mtimeNs },
          handle,
          staleIntent: gone ? undefined : intent
        }
      }))
  })

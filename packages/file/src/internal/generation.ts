/**
 * The file mechanics of one session. A generation is one complete version of
 * the file (see `docs/format.md`): this module opens one read-only without
 * following links or blocking, creates the first, and commits the next
 * atomically and durably, with its marker protocol and rollback.
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import { type ConflictError, type InputError, type IoError, type LockedError, sessionError } from "@session-tree/core/SessionError"
import { type FileId, Flags, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import {
  closeQuietly,
  expectIdentity,
  lstatNamed,
  lstatOrMissing,
  readSessionFile,
  removeOwn,
  step,
  stepError,
  type ReadFailure,
  type Whole,
  writeAll, type WriteFailure } from "./io.js"
import * as Append from "./append.js"
import { SESSION_CAPS, versionOfHead } from "./lines.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"

/** A generation this process holds open: the descriptor pins the inode, so its (dev, ino) cannot be reused. */
export interface OpenGeneration {
  readonly handle: Handle
  readonly id: FileId
  readonly size: number
  readonly mode: number
  /** Its modification time when this process last wrote or read it whole. */
  readonly mtimeNs: bigint
}

/** The generation a handle holds whole, as its own stat shows it. */
const held = (handle: Handle, stat: Stat, size: number): OpenGeneration => ({
  handle,
  id: stat,
  size,
  mode: stat.mode,
  mtimeNs: stat.mtimeNs
})

export interface Opened {
  readonly bytes: Uint8Array
  readonly generation: OpenGeneration
  readonly dir: FileId
}

export const statDirectory = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Stat, InputError | IoError> =>
  Effect.flatMap(lstatNamed(fs, "lstat directory", paths.dir), (dir) =>
    dir === undefined
      ? Effect.fail(sessionError("SESSION_NOT_FOUND", "the directory does not exist", { path: paths.dir }))
      : dir.kind !== "directory"
      ? Effect.fail(sessionError("SESSION_NOT_REGULAR_FILE", "the parent path is not a directory", { path: paths.dir }))
      : Effect.succeed(dir)
  )

/**
 * Opens the generation at `paths.path` for reading (see `readSettled`): never through a link,
 * never blocking, the same file from lstat to the last byte. The handle stays open for the
 * caller; on failure it is closed.
 */
export const open = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Opened, ReadFailure> =>
  Effect.flatMap(statDirectory(fs, paths), (dir) =>
    Effect.map(readSettled(fs, paths), ({ bytes, handle, stat }) => ({
      bytes,
      generation: held(handle, stat, bytes.length),
      dir
    })))

/** The bytes of the generation at `paths.path`, read as `open` reads them, holding nothing afterwards. */
export const read = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Uint8Array, ReadFailure> =>
  Effect.zipRight(
    statDirectory(fs, paths),
    Effect.acquireUseRelease(readSettled(fs, paths), ({ bytes }) => Effect.succeed(bytes), ({ handle }) => closeQuietly(fs, handle))
  )

/** What is at the marker's name: nothing, a version-1 commit's marker (a file), or an append intent (a link's text). */
type MarkerNow = undefined | { readonly _tag: "File"; readonly stat: Stat } | { readonly _tag: "Intent"; readonly text: string }

const markerNow = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<MarkerNow | "changing", ConflictError | IoError> =>
  Effect.flatMap(lstatNamed(fs, "lstat marker", paths.marker), (stat): Effect.Effect<MarkerNow | "changing", ConflictError | IoError> => {
    if (stat === undefined) return Effect.succeed(undefined)
    if (stat.kind === "file") return Effect.succeed({ _tag: "File" as const, stat })
    if (stat.kind === "symlink") {
      return Effect.matchEffect(fs.readlink(paths.marker), {
        // Gone or replaced between the lstat and the readlink: an append ended meanwhile.
        onFailure: (e) => e.errno === "ENOENT" || e.errno === "EINVAL" ? Effect.succeed("changing" as const) : Effect.fail(stepError("readlink marker", e)),
        onSuccess: (text) => Effect.succeed({ _tag: "Intent" as const, text })
      })
    }
    return Effect.fail(sessionError("SESSION_BUSY", `${paths.marker} is not a regular file: it blocks this session until it is removed`, { path: paths.path }))
  })

/** The same marker before and after a read: both absent, the same file unchanged, or the same intent (each is unique). */
const sameMarker = (a: MarkerNow, b: MarkerNow): boolean =>
  a === undefined || b === undefined
    ? a === b
    : a._tag === "File"
    ? b._tag === "File" && sameFile(a.stat, b.stat) && a.stat.size === b.stat.size && a.stat.mtimeNs === b.stat.mtimeNs
    : b._tag === "Intent" && a.text === b.text

/** Reads of a version-2 file that an append overlapped are tried again this many times, then SESSION_BUSY. */
const READ_ATTEMPTS = 100

/**
 * The session file read whole as a load must see it (`docs/format.md`, "Appending to a
 * version-2 file"). A version-1 file is read as it is, and one that grew while it was read is
 * SESSION_REPLACED. A version-2 file may grow under a running append: the marker is looked at
 * before and after the read, and a read that an append overlapped is tried again; with an
 * append intent there, the file shows what the intent's rule (`Append.settle`) allows.
 */
const readSettled = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Whole, ReadFailure> => {
  const attempt = (left: number): Effect.Effect<Whole, ReadFailure> =>
    Effect.gen(function*() {
      const before = yield* markerNow(fs, paths)
      const whole = yield* readSessionFile(fs, paths.path, SESSION_CAPS)
      const settled = yield* Effect.gen(function*() {
        if (versionOfHead(whole.bytes) === 1) {
          return whole.sizeAfter === whole.stat.size
            ? whole
            : yield* sessionError("SESSION_REPLACED", "the file grew while it was read", { path: paths.path })
        }
        const after = yield* markerNow(fs, paths)
        if (before === "changing" || after === "changing" || whole.sizeAfter !== whole.stat.size || !sameMarker(before, after)) {
          return undefined
        }
        if (after === undefined || after._tag === "File") return whole
        const intent = Append.parseIntent(after.text)
        if (intent === undefined) {
          return yield* sessionError("SESSION_BUSY", `${paths.marker} is a link but not an append intent: it blocks this session until it is removed`, {
            path: paths.path
          })
        }
        const end = Append.settle(whole.bytes.length, whole.bytes.subarray(Math.min(intent.from, whole.bytes.length)), intent, paths.path)
        if (typeof end !== "number") return yield* end
        return { ...whole, bytes: whole.bytes.subarray(0, end) }
      }).pipe(Effect.onError(() => closeQuietly(fs, whole.handle)))
      if (settled !== undefined) return settled
      yield* closeQuietly(fs, whole.handle)
      if (left <= 1) {
        return yield* sessionError("SESSION_BUSY", "the session is being appended to without a pause long enough to read it; try again", {
          path: paths.path
        })
      }
      return yield* attempt(left - 1)
    })
  return attempt(READ_ATTEMPTS)
}

/**
 * Opens the directory so commits can fsync it; the descriptor also pins its identity. Not
 * interruptible, so that the descriptor is either handed over or closed.
 */
export const openDirectory = (fs: FsService, paths: Paths.SessionPaths, id: FileId): Effect.Effect<Handle, ConflictError | IoError> =>
  Effect.uninterruptible(Effect.flatMap(step("open directory", fs.open(paths.dir, Flags.directory), { ELOOP: "SESSION_REPLACED" }), (handle) =>
    Effect.flatMap(step("fstat directory", fs.fstat(handle)), (stat) =>
      stat.kind !== "directory" || !sameFile(stat, id)
        ? Effect.fail(sessionError("SESSION_REPLACED", "the directory changed while it was opened", { path: paths.dir }))
        : Effect.succeed(handle)).pipe(Effect.onError(() => closeQuietly(fs, handle)))))

/** What `create` made: the first generation, held open, and own names it could not remove (for the store to retry). */
export interface Created {
  readonly generation: OpenGeneration
  readonly leftover: ReadonlyArray<string>
}

/** SESSION_EXISTS when anything is at the session's path (never followed). */
export const refuseExisting = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<void, ConflictError | IoError> =>
  Effect.flatMap(lstatNamed(fs, "lstat", paths.path), (existing) =>
    existing === undefined ? Effect.void : Effect.fail(sessionError("SESSION_EXISTS", "the path already exists", { path: paths.path })))

/**
 * Creates the first generation: the bytes go to an exclusive temp file that is
 * fsynced and then hard-linked into place, so the path either does not exist or
 * holds the whole header; an existing path fails with SESSION_EXISTS. The caller
 * takes the descriptor over, so it runs this uninterruptibly.
 */
export const create = (
  fs: FsService,
  paths: Paths.SessionPaths,
  bytes: Uint8Array,
  dirHandle: Handle,
  dirId: FileId
): Effect.Effect<Created, ConflictError | IoError> =>
  Effect.gen(function*() {
    yield* refuseExisting(fs, paths)
    const tmp = Paths.ownName(paths, "tmp", Paths.nextSeq())
    const handle = yield* step("create temp", fs.open(tmp, Flags.createExclusive, 0o600))
    return yield* Effect.gen(function*() {
      yield* writeAll(fs, handle, bytes, 0, 0)
      yield* step("fsync temp", fs.fsync(handle))
      const stat = yield* step("fstat temp", fs.fstat(handle))
      yield* expectIdentity(fs, "temp file", tmp, "file", stat)
      yield* step("link into place", fs.link(tmp, paths.path), { EEXIST: "SESSION_EXISTS" })
      yield* Effect.gen(function*() {
        yield* expectIdentity(fs, "new file", paths.path, "file", stat)
        yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
        yield* step("fsync directory", fs.fsync(dirHandle))
      }).pipe(
        // The path is ours to remove only while it is still the file this call linked there.
        Effect.onError(() =>
          Effect.gen(function*() {
            const now = yield* Effect.orElseSucceed(fs.fstat(handle), () => undefined)
            const atPath = yield* Effect.orElseSucceed(lstatOrMissing(fs, paths.path), () => undefined)
            if (now !== undefined && atPath !== undefined && sameFile(now, atPath)) {
              yield* removeOwn(fs, paths.path)
              yield* Effect.ignore(fs.fsync(dirHandle))
            }
          })
        )
      )
      // The file is durable from here on; a temp name that cannot be removed now is retried by the store.
      const gone = yield* removeOwn(fs, tmp)
      return { generation: held(handle, stat, bytes.length), leftover: gone ? [] : [tmp] }
    }).pipe(Effect.onError(() => Effect.zipRight(removeOwn(fs, tmp), closeQuietly(fs, handle))))
  })

export interface CommitInput {
  readonly paths: Paths.SessionPaths
  readonly dirHandle: Handle
  readonly dirId: FileId
  readonly base: OpenGeneration
  /** The whole next generation. */
  readonly bytes: Uint8Array
  /** When > 0, the first `copyPrefix` bytes equal the current file: copy them in the kernel. */
  readonly copyPrefix: number
}

/**
 * A commit that could not prove its rollback, or could not tell whether the marker is its own:
 * the marker is kept for `recover`, and the store commits nothing more. `error` is the
 * SESSION_ROLLBACK_FAILED the store reports from then on.
 */
export class Locked extends Data.TaggedError("Locked")<{ readonly error: LockedError }> {}

/** Opens an existing own name for writing, never through a link. */
const WRITE_NO_FOLLOW = NFS.constants.O_WRONLY | NFS.constants.O_NOFOLLOW

/** Runs `undo` when `effect` fails, then fails as it did, unless `undo` itself fails (a rollback that cannot be proven). */
const undoOnFailure = <A, E, E2>(effect: Effect.Effect<A, E>, undo: (failure: E) => Effect.Effect<void, E2>) =>
  Effect.catchAll(effect, (failure) => Effect.zipRight(undo(failure), Effect.fail(failure)))

/**
 * Why the marker exists, for the SESSION_BUSY of a commit that found it: another writer's commit
 * in flight (its temp file names a running process), or one that crashed or could not prove its
 * rollback, which only `recover` resolves.
 */
export const busy = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<ConflictError> =>
  // Unlisted, the marker is still there: the message then points at `recover`, which lists again.
  Effect.map(Effect.all([
    Effect.orElseSucceed(Paths.leftovers(fs, paths), () => undefined),
    Effect.orElseSucceed(fs.readlink(paths.marker), () => "")
  ]), ([found, link]) => {
    // A version-1 commit names its writer with its temp file, a version-2 append in its intent.
    const appender = Append.parseIntent(link)?.owner
    const live = found?.live?.owner ?? (appender !== undefined && Owner.isAlive(appender) ? appender : undefined)
    return live !== undefined
      ? sessionError(
        "SESSION_BUSY",
        `another writer (pid ${live.pid}) is committing to this session right now; reload and retry`,
        { path: paths.path }
      )
      : sessionError(
        "SESSION_BUSY",
        `a recovery marker (${paths.marker}) left by an interrupted commit blocks appends; ` +
          `no writer is running, so run \`session-tree recover ${paths.path}\` (Recovery.recover) to resolve it`,
        { path: paths.path }
      )
  })

/** Links the marker, the commit lock: a marker already there is SESSION_BUSY, saying why (`busy`). */
const linkMarker = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<void, WriteFailure> =>
  Effect.catchAll(fs.link(paths.path, paths.marker), (e) =>
    e.errno === "EEXIST"
      ? Effect.flatMap(busy(fs, paths), Effect.fail)
      // ENOENT: the path vanished (deleted, or its directory moved) since it was checked.
      : Effect.fail(stepError("lock (link marker)", e, { ENOENT: "SESSION_REPLACED" })))

/**
 * The writer's own names and descriptors in one commit: the temp file, the file that is
 * installed (the temp file, or the kernel copy at the next name), and whether the next name may
 * exist (from the step that makes it to the rename that takes it away).
 */
interface Own {
  readonly temp: Handle
  data: Handle
  nextMayExist: boolean
}

/**
 * The atomic commit (see `docs/format.md`): installs the next generation, or
 * leaves the old one intact and fails, or fails with `Locked` when neither can be
 * proven (the marker is then kept). Own names it could not remove go to `keep`,
 * for the next commit to retry.
 *
 * Each name is made with its undo beside it: the temp file (and the next name,
 * its second name) are removed by the temp file's step, the marker by its own
 * (only while it is still the link this commit made), and a failed install is
 * rolled back to the held generation. The temp file is created before the marker
 * and removed after it, so while the marker is ours a temp name of a running
 * process sits beside it and `recover` refuses to touch it. With `copyPrefix`,
 * the current generation is copied in the kernel from the marker (proven to be
 * the held generation) to the next name, which is then the file that is completed
 * and installed; the temp file only names the writer.
 *
 * The caller runs it uninterruptibly: once the marker is linked, the outcome must
 * reach the state the next commit starts from.
 */
export const commit = (
  fs: FsService,
  input: CommitInput,
  keep: (name: string) => void
): Effect.Effect<OpenGeneration, WriteFailure | Locked> =>
  Effect.suspend(() => {
    const { base, bytes, copyPrefix, dirHandle, dirId, paths } = input
    const n = Paths.nextSeq()
    const tmp = Paths.ownName(paths, "tmp", n)
    const next = Paths.ownName(paths, "next", n)

    const locked = (error: WriteFailure, reason: string, cause: unknown) =>
      new Locked({
        error: sessionError("SESSION_ROLLBACK_FAILED", `${reason}; the marker ${paths.marker} is kept (${error.message})`, {
          path: paths.path,
          cause
        })
      })

    /** Removes `name` if it is ours; on a plain failure, one that cannot be removed is kept for a retry. */
    const drop = (name: string, retry: boolean) =>
      Effect.map(removeOwn(fs, name), (gone) => {
        if (!gone && retry) keep(name)
      })

    /**
     * The temp file, created first and removed last. On failure the next name goes too, and both
     * descriptors are closed; after `Locked` nothing is kept for a retry, as nothing is retried.
     */
    const withTemp = (use: (own: Own) => Effect.Effect<OpenGeneration, WriteFailure | Locked>) =>
      Effect.flatMap(step("create temp", fs.open(tmp, Flags.createExclusive, base.mode)), (temp) => {
        // State of this one commit, read and written only by the fiber that runs it.
        const own: Own = { temp, data: temp, nextMayExist: false }
        return Effect.matchEffect(use(own), {
          onFailure: (failure) => {
            const retry = failure._tag !== "Locked"
            return Effect.gen(function*() {
              if (own.nextMayExist) yield* drop(next, retry)
              yield* drop(tmp, retry)
              if (own.data !== temp) yield* closeQuietly(fs, own.data)
              yield* closeQuietly(fs, temp)
              return yield* Effect.fail(failure)
            })
          },
          // A temp file that only named the writer is closed while it still has its name, so the close frees nothing.
          onSuccess: (generation) =>
            Effect.as(Effect.zipRight(own.data !== temp ? closeQuietly(fs, temp) : Effect.void, drop(tmp, true)), generation)
        })
      })

    /**
     * The marker, linked after the temp file. Whatever sits at the marker name after the link
     * succeeded is ours until we remove it (other writers fail on EEXIST and `recover` waits), but
     * it is removed only while it is still what was linked: `linked` is its stat, when that was seen.
     */
    const releaseMarker = (linked: Stat | undefined) => (failure: WriteFailure | Locked): Effect.Effect<void, Locked> =>
      failure._tag === "Locked" ? Effect.void : Effect.gen(function*() {
        const now = yield* Effect.either(lstatOrMissing(fs, paths.marker))
        if (Either.isLeft(now)) return yield* locked(failure, "the marker could not be checked", now.left)
        const stat = now.right
        // A name we linked and saw is ours whatever it links (a symlink swapped in before the link included).
        const ours = stat !== undefined && (linked === undefined ? stat.kind === "file" : sameFile(stat, linked))
        if (stat !== undefined && !ours) return yield* locked(failure, "the marker is not the link this commit made", undefined)
        if (ours && !(yield* removeOwn(fs, paths.marker))) return yield* locked(failure, "the marker could not be removed", undefined)
      })

    const withMarker = (use: (marker: Stat) => Effect.Effect<OpenGeneration, WriteFailure | Locked>) =>
      Effect.zipRight(
        linkMarker(fs, paths),
        Effect.matchEffect(step("lstat marker", fs.lstat(paths.marker)), {
          onFailure: (failure) => undoOnFailure(Effect.fail(failure), releaseMarker(undefined)),
          onSuccess: (marker) => undoOnFailure(use(marker), releaseMarker(marker))
        })
      )

    /** The kernel copy of the held generation (the marker) at the next name, completed with the new bytes. */
    const copyCurrent = (own: Own): Effect.Effect<Stat, WriteFailure> =>
      Effect.gen(function*() {
        own.nextMayExist = true
        yield* step("copy current generation", fs.copyFile(paths.marker, next))
        const copy = yield* step("open copy", fs.open(next, WRITE_NO_FOLLOW))
        own.data = copy
        const copied = yield* step("fstat copy", fs.fstat(copy))
        yield* expectIdentity(fs, "copy", next, "file", copied)
        if (copied.size !== copyPrefix) {
          return yield* sessionError("SESSION_REPLACED", "the current generation is not the one this store wrote", { path: paths.path })
        }
        yield* writeAll(fs, copy, bytes, copyPrefix, copyPrefix)
        yield* step("fsync copy", fs.fsync(copy))
        yield* expectIdentity(fs, "copy", next, "file", copied)
        return copied
      })

    /** The whole generation in the temp file, linked at the next name so that the temp name survives the install. */
    const writeWhole = (own: Own, temp: Stat): Effect.Effect<Stat, WriteFailure> =>
      Effect.gen(function*() {
        yield* writeAll(fs, own.temp, bytes, 0, 0)
        yield* step("fsync temp", fs.fsync(own.temp))
        yield* expectIdentity(fs, "temp file", tmp, "file", temp)
        own.nextMayExist = true
        yield* step("link next", fs.link(tmp, next))
        return temp
      })

    /**
     * After a failed install (the rename included, which may have happened): proves where the
     * path points before touching anything, and puts the held generation back if the new one is there.
     */
    const rollBack = (data: Stat) => (failure: WriteFailure): Effect.Effect<void, Locked> =>
      Effect.gen(function*() {
        const at = yield* Effect.either(lstatOrMissing(fs, paths.path))
        const stat = Either.getOrUndefined(at)
        if (stat !== undefined && sameFile(stat, data)) {
          const rollback = Paths.ownName(paths, "rollback", n)
          const restored = yield* Effect.either(Effect.gen(function*() {
            yield* step("rollback: link marker", fs.link(paths.marker, rollback))
            yield* step("rollback: rename", fs.rename(rollback, paths.path))
            yield* expectIdentity(fs, "restored generation", paths.path, "file", base.id)
            yield* step("rollback: fsync directory", fs.fsync(dirHandle))
          }))
          if (Either.isLeft(restored)) {
            yield* removeOwn(fs, rollback)
            return yield* locked(failure, "rollback could not be proven", restored.left)
          }
        } else if (stat === undefined || !sameFile(stat, base.id)) {
          return yield* locked(
            failure,
            "the path holds neither generation after a failed install",
            Either.isLeft(at) ? at.left : stat
          )
        }
      })

    /** Renames the next name onto the path and proves it there, durably; removing the marker is the last step. */
    const install = (own: Own, data: Stat): Effect.Effect<OpenGeneration, WriteFailure | Locked> =>
      undoOnFailure(
        Effect.gen(function*() {
          yield* step("rename", fs.rename(next, paths.path))
          own.nextMayExist = false
          const installed = yield* expectIdentity(fs, "installed generation", paths.path, "file", data)
          if (installed.size !== bytes.length) {
            return yield* sessionError("SESSION_IO", `installed generation holds ${installed.size} of ${bytes.length} bytes`, {
              path: paths.path
            })
          }
          // A directory swapped after the last check would have taken the rename: prove it did not.
          yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
          yield* step("fsync directory", fs.fsync(dirHandle))
          // Inside the install: a commit whose marker cannot be removed is rolled back.
          yield* step("unlock (unlink marker)", fs.unlink(paths.marker))
          return { handle: own.data, id: data, size: bytes.length, mode: base.mode, mtimeNs: installed.mtimeNs }
        }),
        rollBack(data)
      )

    return Effect.gen(function*() {
      yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
      yield* expectIdentity(fs, "file", paths.path, "file", base.id)
      return yield* withTemp((own) =>
        Effect.flatMap(step("fstat temp", fs.fstat(own.temp)), (temp) =>
          withMarker((marker) =>
            Effect.gen(function*() {
              // The marker must be the generation this store holds open, else another writer got there first;
              // its size and modification time must be the held ones, else someone wrote into the file in place
              // (the kernel copy would carry that edit on while memory keeps the old bytes).
              if (
                marker.kind !== "file" || !sameFile(marker, base.id) || marker.size !== base.size || marker.mtimeNs !== base.mtimeNs
              ) {
                return yield* sessionError("SESSION_REPLACED", "the file is no longer the generation this store holds", {
                  path: paths.path
                })
              }
              yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
              const data = copyPrefix > 0 ? yield* copyCurrent(own) : yield* writeWhole(own, temp)
              return yield* install(own, data)
            })
          ))
      )
    })
  })

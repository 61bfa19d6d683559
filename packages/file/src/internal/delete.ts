/**
 * Deleting a session file whole (see `docs/format.md`, "Deleting a session"): the file is
 * locked with the marker as a commit locks it, renamed to a tombstone beside it, and the marker
 * removed; from that removal on the session is gone, and what is left (the tombstone, the
 * session's blob directory) is garbage. Before it, `recover` puts the marker back onto the path
 * as it does for an interrupted commit, so a crash leaves the session whole or gone.
 */
import type { DeleteError } from "@session-tree/core/SessionCatalog"
import { sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Path from "node:path"
import { type FileId, Flags, type FsService, type Handle, sameFile } from "../Fs.js"
import * as Generation from "./generation.js"
import { closeQuietly, expectIdentity, lstatNamed, lstatOrMissing, removeOwn, step, stepError } from "./io.js"
import { processLocks } from "./locks.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"

/** The blob directory of the session file at `paths` (`NAME.blobs`). */
export const blobDirectory = (paths: Paths.SessionPaths): string => `${paths.path}.blobs`

const BLOBS = ".blobs"

/** A blob directory a delete moved aside, beside its tombstone (`NAME.deleted-OWNER-SEQ.blobs`). */
const asideName = (tombstone: string): string => `${tombstone}${BLOBS}`

/**
 * Removes the directory tree at `path`, never through a symlink: every name is looked at with
 * lstat, a link is removed as a name and never followed, and a directory is emptied before it
 * goes. A missing path is already gone.
 */
const removeTree = (fs: FsService, path: string): Effect.Effect<void, DeleteError> =>
  Effect.flatMap(lstatNamed(fs, "lstat", path), (stat): Effect.Effect<void, DeleteError> => {
    if (stat === undefined) return Effect.void
    if (stat.kind !== "directory") {
      return step("remove", fs.unlink(path).pipe(Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.void)))
    }
    return Effect.zipRight(
      Effect.flatMap(step("list directory", fs.readdir(path)), (names) =>
        Effect.forEach(names, (name) => removeTree(fs, Path.join(path, name)), { discard: true })),
      step("remove directory", fs.rmdir(path).pipe(Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.void)))
    )
  })

/** The SESSION_BUSY of a delete that found the marker: a commit in flight, or one `recover` must resolve. */
const busy = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<DeleteError> =>
  Effect.map(Effect.orElseSucceed(Paths.leftovers(fs, paths), () => undefined), (found) => {
    const live = found?.live?.owner
    return sessionError(
      "SESSION_BUSY",
      live !== undefined
        ? `another writer (pid ${live.pid}) is committing to this session right now; try again`
        : `a recovery marker (${paths.marker}) left by an interrupted commit blocks the delete; ` +
          `run \`session-tree recover ${paths.path}\` (Recovery.recover) first`,
      { path: paths.path }
    )
  })

/**
 * The steps of one delete, run uninterruptibly with the file's in-process lock held: once the
 * marker is linked, the outcome must be the session whole (and unlocked) or gone.
 */
const remove = (fs: FsService, paths: Paths.SessionPaths, dirHandle: Handle, dirId: FileId) =>
  Effect.gen(function*() {
    const n = Paths.nextSeq()
    const tmp = Paths.ownName(paths, "tmp", n)
    const tombstone = Paths.ownName(paths, "deleted", n)
    const syncDir = step("fsync directory", fs.fsync(dirHandle))

    // The temp name names this process for the whole delete, created first and removed last, so that
    // `recover` leaves the marker alone while the delete runs (as it does for a commit).
    const named = yield* step("create temp", fs.open(tmp, Flags.createExclusive, 0o600))
    yield* closeQuietly(fs, named)

    /** Unlocks a session that is still whole: the marker goes only while it is still the file this delete locked. */
    const unlock = (locked: FileId) =>
      Effect.gen(function*() {
        const now = yield* lstatOrMissing(fs, paths.marker)
        if (now !== undefined && sameFile(now, locked)) yield* fs.unlink(paths.marker)
        yield* fs.fsync(dirHandle)
      })

    /** Removes the tombstone name while it is the locked file: another name (the path, the marker) still holds the session. */
    const dropTombstone = (locked: FileId) =>
      Effect.gen(function*() {
        const stone = yield* Effect.orElseSucceed(lstatOrMissing(fs, tombstone), () => undefined)
        if (stone !== undefined && sameFile(stone, locked)) yield* removeOwn(fs, tombstone)
      })

    /** After a failure with the marker held: the file back at its path from the marker, then unlocked. */
    const undo = (locked: FileId) => (failure: DeleteError): Effect.Effect<never, DeleteError> =>
      Effect.gen(function*() {
        const at = yield* lstatOrMissing(fs, paths.path)
        if (at === undefined) {
          const rollback = Paths.ownName(paths, "rollback", n)
          yield* fs.link(paths.marker, rollback)
          yield* Effect.onError(fs.rename(rollback, paths.path), () => removeOwn(fs, rollback))
          yield* fs.fsync(dirHandle)
        } else if (!sameFile(at, locked)) {
          return yield* Effect.fail("the path holds another file" as const)
        }
        yield* unlock(locked)
      }).pipe(
        Effect.matchEffect({
          onFailure: (cause) =>
            Effect.gen(function*() {
              // Only the marker stays, holding the session whole: own names of a running process would keep `recover` away.
              const marker = yield* Effect.orElseSucceed(lstatOrMissing(fs, paths.marker), () => undefined)
              if (marker !== undefined && sameFile(marker, locked)) yield* dropTombstone(locked)
              yield* removeOwn(fs, tmp)
              return yield* sessionError(
                "SESSION_ROLLBACK_FAILED",
                `${failure.reason}; the session could not be put back, so the marker ${paths.marker} is kept: ` +
                  `run \`session-tree recover ${paths.path}\` (Recovery.recover), which puts it back whole`,
                { path: paths.path, cause: typeof cause === "string" ? failure : cause }
              )
            }),
          onSuccess: () => Effect.zipRight(Effect.zipRight(dropTombstone(locked), removeOwn(fs, tmp)), Effect.fail(failure))
        })
      )

    const locked = yield* Effect.gen(function*() {
      yield* fs.link(paths.path, paths.marker).pipe(
        Effect.catchAll((e) =>
          e.errno === "EEXIST"
            ? Effect.flatMap(busy(fs, paths), Effect.fail)
            // ENOENT: the file vanished since it was looked at (deleted by another process).
            : Effect.fail(stepError("lock (link marker)", e, { ENOENT: "SESSION_NOT_FOUND" }))
        )
      )
      const marker = yield* Effect.either(step("lstat marker", fs.lstat(paths.marker)))
      // Whatever the link made is this delete's, and the file it links is the one deleted: a newer
      // generation a commit installed since the path was looked at is the same session. A marker
      // that is not a regular file (a symlink swapped in: link never follows one) is undone at once.
      if (Either.isLeft(marker) || marker.right.kind !== "file") {
        const failure = Either.isLeft(marker)
          ? marker.left
          : sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${marker.right.kind}, not a regular file`, { path: paths.path })
        const unlinked = yield* removeOwn(fs, paths.marker)
        yield* Effect.ignore(fs.fsync(dirHandle))
        if (!unlinked) {
          return yield* sessionError(
            "SESSION_ROLLBACK_FAILED",
            `${failure.reason}; the marker ${paths.marker} could not be removed: run \`session-tree recover ${paths.path}\``,
            { path: paths.path, cause: failure }
          )
        }
        return yield* failure
      }
      return marker.right
    }).pipe(Effect.onError(() => removeOwn(fs, tmp)))

    // With the marker held no commit installs a file at the path, and the marker is the session whole.
    yield* Effect.gen(function*() {
      // The marker is durable before the file moves, so no crash finds the file moved and no marker.
      yield* syncDir
      yield* step("rename to tombstone", fs.rename(paths.path, tombstone))
      yield* expectIdentity(fs, "tombstone", tombstone, "file", locked)
      yield* expectIdentity(fs, "directory", paths.dir, "directory", dirId)
      yield* syncDir
      // The commit point: without the marker, nothing can put the file back at its path.
      yield* step("unlock (unlink marker)", fs.unlink(paths.marker))
    }).pipe(Effect.catchAll(undo(locked)))

    // The session is gone from here on: what remains is garbage, removed now or by `recover`.
    const synced = yield* Effect.either(syncDir)
    const aside = asideName(tombstone)
    yield* Effect.ignore(removeOwn(fs, tombstone))
    const blobs = blobDirectory(paths)
    // Moved to a name of this delete first: a new session at the same path may create its own.
    const moved = yield* Effect.either(fs.rename(blobs, aside))
    if (Either.isRight(moved)) yield* Effect.ignore(removeTree(fs, aside))
    yield* Effect.ignore(removeOwn(fs, tmp))
    yield* Effect.ignore(syncDir)
    if (Either.isLeft(synced)) {
      return yield* sessionError(
        "SESSION_IO",
        `the session was deleted, but syncing its directory failed (${synced.left.reason}): a crash now may bring it back, whole`,
        { path: paths.path, cause: synced.left }
      )
    }
  })

/**
 * Deletes the session file at `location` (see the module's comment): SESSION_NOT_FOUND when
 * there is none, SESSION_NOT_REGULAR_FILE for a symlink or anything but a regular file (never
 * followed), SESSION_BUSY while a commit holds the marker. Succeeds with the file's path.
 */
export const deleteSession = (fs: FsService, location: string): Effect.Effect<string, DeleteError> =>
  Effect.scoped(Effect.gen(function*() {
    const paths = yield* Paths.resolve(fs, location)
    const dir = yield* Generation.statDirectory(fs, paths)
    const lock = yield* processLocks.lockFor(paths.lockKey(dir.dev, dir.ino))
    return yield* lock.withPermits(1)(Effect.gen(function*() {
      const found = yield* lstatNamed(fs, "lstat", paths.path)
      if (found === undefined) return yield* sessionError("SESSION_NOT_FOUND", "no session file at this path", { path: paths.path })
      if (found.kind !== "file") {
        return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${found.kind}, not a regular file`, { path: paths.path })
      }
      const dirHandle = yield* Effect.acquireRelease(Generation.openDirectory(fs, paths, dir), (h) => closeQuietly(fs, h))
      yield* Effect.uninterruptible(remove(fs, paths, dirHandle, dir))
      return paths.path
    }))
  }))

/**
 * What `recover` removes of a delete that was interrupted after its commit point: the blob
 * directories deletes of gone processes moved aside, and the session's blob directory when no
 * session file is at the path and no process is writing beside it. (The tombstone is a
 * leftover name like a temp file, removed with them.) Returns the names removed.
 */
export const removeDeleted = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<ReadonlyArray<string>, DeleteError> =>
  Effect.gen(function*() {
    const names = yield* step("list directory", fs.readdir(paths.dir))
    const removed: Array<string> = []
    for (const name of names) {
      if (!name.endsWith(BLOBS)) continue
      const leftover = Paths.parseLeftover(paths, name.slice(0, -BLOBS.length))
      if (leftover === undefined || leftover.kind !== "deleted" || Owner.isAlive(leftover.owner)) continue
      yield* removeTree(fs, Path.join(paths.dir, name))
      removed.push(name)
    }
    const blobs = blobDirectory(paths)
    const session = yield* lstatNamed(fs, "lstat", paths.path)
    const live = yield* step("list directory", Paths.leftovers(fs, paths))
    if (session === undefined && live.live === undefined && (yield* lstatNamed(fs, "lstat", blobs)) !== undefined) {
      yield* removeTree(fs, blobs)
      removed.push(Path.basename(blobs))
    }
    return removed
  })

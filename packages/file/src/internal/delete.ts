/**
 * Deleting a session file whole (see `docs/format.md`, "Deleting a session"): the file is
 * locked with the marker as a commit locks it, renamed to a tombstone beside it, and the marker
 * removed; from that removal on the session is gone, and what is left (the tombstone, the
 * session's blob directory) is garbage. Before it, `recover` puts the marker back onto the path
 * as it does for an interrupted commit, so a crash leaves the session whole or gone.
 */
import type { DeleteError } from "@session-tree/core/SessionCatalog"
import { isSessionError, sessionError } from "@session-tree/core/SessionError"
import * as Tracing from "@session-tree/core/Tracing"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as Path from "node:path"
import { type FileId, Flags, type FsService, sameFile, type Stat } from "../Fs.js"
import * as Generation from "./generation.js"
import { type Directory, lock, ownName, provenOr, type Strays } from "./held.js"
import { closeQuietly, expectIdentity, lstatNamed, lstatOrMissing, removeOwn, step } from "./io.js"
import { processLocks } from "./locks.js"
import * as Marker from "./marker.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"
import * as SearchIndex from "./searchIndex.js"

/** A blob directory a delete moved aside, beside its tombstone (`NAME.deleted-OWNER-SEQ.blobs`). */
const asideName = (tombstone: string): string => `${tombstone}${Paths.BLOBS}`

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

/** The names of one delete: the temp name that names this process, and the tombstone the file is renamed to. */
interface Names {
  readonly tmp: string
  readonly tombstone: string
  readonly rollback: string
}

/**
 * The steps of one delete, run uninterruptibly with the file's in-process lock held: once the
 * marker is linked, the outcome must be the session whole (and unlocked) or gone. The temp name,
 * the marker and the move to the tombstone are resources of one scope; a failure undoes them.
 */
const remove = (fs: FsService, paths: Paths.SessionPaths, dir: Directory): Effect.Effect<void, DeleteError> =>
  Effect.gen(function*() {
    const n = Paths.nextSeq()
    const names: Names = {
      tmp: Paths.ownName(paths, "tmp", n),
      tombstone: Paths.ownName(paths, "deleted", n),
      rollback: Paths.ownName(paths, "rollback", n)
    }
    const syncDir = step("fsync directory", fs.fsync(dir.handle))
    const state = yield* Ref.make<Strays>({ strays: [], locked: undefined })
    yield* Effect.scoped(Effect.gen(function*() {
      // The temp name names this process for the whole delete, created first and removed last, so that
      // `recover` leaves the marker alone while the delete runs (as it does for a commit).
      yield* ownName(fs, state, names.tmp, Effect.flatMap(step("create temp", fs.open(names.tmp, Flags.createExclusive, 0o600)), (h) => closeQuietly(fs, h)), "failure")
      const locked = yield* lockForDelete(fs, state, paths, dir, names)
      // With the marker held no commit installs a file at the path, and the marker is the session whole.
      // The marker is durable before the file moves, so no crash finds the file moved and no marker.
      yield* syncDir
      yield* step("rename to tombstone", fs.rename(paths.path, names.tombstone))
      yield* expectIdentity(fs, "tombstone", names.tombstone, "file", locked)
      yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
      yield* syncDir
      // The commit point: without the marker, nothing can put the file back at its path.
      yield* step("unlock (unlink marker)", fs.unlink(paths.marker))
    })).pipe(Effect.catchAll(provenOr(state)))
    // The session is gone from here on: what remains is garbage, removed now or by `recover`.
    yield* removeGarbage(fs, paths, names, syncDir)
  })

/**
 * The marker of a delete (`Marker.link`): its file is the one deleted (a newer generation a commit
 * installed since the path was looked at is the same session). A marker that is not a regular file
 * (a symlink swapped in: link never follows one) is removed again at once. After a later failure the
 * file is put back at its path from the marker and the marker removed; what cannot be proven keeps
 * the marker, the session whole, for `recover`.
 */
const lockForDelete = (
  fs: FsService,
  state: Ref.Ref<Strays>,
  paths: Paths.SessionPaths,
  dir: Directory,
  names: Names
): Effect.Effect<Stat, DeleteError, Scope.Scope> =>
  Effect.flatMap(
    Effect.acquireRelease(
      Marker.link(fs, paths, Marker.DELETE, "SESSION_NOT_FOUND"),
      (linked, exit) =>
        Exit.isSuccess(exit) ? Effect.void : linked._tag === "Seen" && linked.stat.kind === "file"
          ? undo(fs, state, paths, dir, names, linked.stat, exit)
          : unlink(fs, state, paths, dir, exit)
    ),
    (linked): Effect.Effect<Stat, DeleteError> =>
      linked._tag === "Unseen"
        ? step("lstat marker", Effect.fail(linked.error))
        : linked.stat.kind !== "file"
        ? Effect.fail(sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${linked.stat.kind}, not a regular file`, { path: paths.path }))
        : Effect.succeed(linked.stat)
  )

/** The failure a scope closed with, as a delete's `reason`. */
const reasonOf = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.isSuccess(exit) ? "done" : Option.match(Cause.failureOption(exit.cause), {
    onNone: () => "interrupted",
    onSome: (e) => (isSessionError(e) ? e.reason : String(e))
  })

/** A marker that is not the session's file: removed at once; one that cannot be removed is kept, for `recover`. */
const unlink = (fs: FsService, state: Ref.Ref<Strays>, paths: Paths.SessionPaths, dir: Directory, exit: Exit.Exit<unknown, unknown>) =>
  Effect.flatMap(removeOwn(fs, paths.marker), (unlinked) =>
    Effect.zipRight(
      Effect.ignore(fs.fsync(dir.handle)),
      unlinked ? Effect.void : lock(state, sessionError(
        "SESSION_ROLLBACK_FAILED",
        `${reasonOf(exit)}; the marker ${paths.marker} could not be removed: run \`session-tree recover ${paths.path}\``,
        { path: paths.path, cause: Cause.squash(Exit.isFailure(exit) ? exit.cause : Cause.empty) }
      ))
    ))

/**
 * After a failure with the marker held: the file back at its path from the marker, then the marker
 * removed while it is still the file this delete locked. When that cannot be proven only the marker
 * stays, holding the session whole: own names of a running process would keep `recover` away.
 */
const undo = (
  fs: FsService,
  state: Ref.Ref<Strays>,
  paths: Paths.SessionPaths,
  dir: Directory,
  names: Names,
  locked: FileId,
  exit: Exit.Exit<unknown, unknown>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const at = yield* lstatOrMissing(fs, paths.path)
    if (at === undefined) {
      yield* fs.link(paths.marker, names.rollback)
      yield* Effect.onError(fs.rename(names.rollback, paths.path), () => removeOwn(fs, names.rollback))
      yield* fs.fsync(dir.handle)
    } else if (!sameFile(at, locked)) {
      return yield* Effect.fail(sessionError("SESSION_REPLACED", "the path holds another file", { path: paths.path }))
    }
    const now = yield* lstatOrMissing(fs, paths.marker)
    if (now !== undefined && sameFile(now, locked)) yield* fs.unlink(paths.marker)
    yield* fs.fsync(dir.handle)
  }).pipe(
    Effect.matchEffect({
      onFailure: (cause) =>
        Effect.gen(function*() {
          const marker = yield* Effect.orElseSucceed(lstatOrMissing(fs, paths.marker), () => undefined)
          if (marker !== undefined && sameFile(marker, locked)) yield* dropTombstone(fs, names, locked)
          yield* lock(state, sessionError(
            "SESSION_ROLLBACK_FAILED",
            `${reasonOf(exit)}; the session could not be put back, so the marker ${paths.marker} is kept: ` +
              `run \`session-tree recover ${paths.path}\` (Recovery.recover), which puts it back whole`,
            { path: paths.path, cause }
          ))
        }),
      onSuccess: () => dropTombstone(fs, names, locked)
    })
  )

/** Removes the tombstone name while it is the locked file: another name (the path, the marker) still holds the session. */
const dropTombstone = (fs: FsService, names: Names, locked: FileId): Effect.Effect<void> =>
  Effect.gen(function*() {
    const stone = yield* Effect.orElseSucceed(lstatOrMissing(fs, names.tombstone), () => undefined)
    if (stone !== undefined && sameFile(stone, locked)) yield* removeOwn(fs, names.tombstone)
  })

/**
 * What a delete leaves past its commit point, removed: the tombstone, the blob directory (moved to
 * a name of this delete first: a new session at the same path may create its own), the temp name.
 * A failed directory sync is reported: a crash now may bring the session back, whole.
 */
const removeGarbage = (fs: FsService, paths: Paths.SessionPaths, names: Names, syncDir: Effect.Effect<void, DeleteError>) =>
  Effect.gen(function*() {
    const synced = yield* Effect.either(syncDir)
    const aside = asideName(names.tombstone)
    yield* Effect.ignore(removeOwn(fs, names.tombstone))
    const moved = yield* Effect.either(fs.rename(paths.blobs, aside))
    if (Either.isRight(moved)) yield* Effect.ignore(removeTree(fs, aside))
    yield* Effect.ignore(removeOwn(fs, names.tmp))
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
    const dirStat = yield* Generation.statDirectory(fs, paths)
    const lock = yield* processLocks().lockFor(paths.lockKey(dirStat.dev, dirStat.ino))
    return yield* lock.withPermits(1)(Effect.gen(function*() {
      const found = yield* lstatNamed(fs, "lstat", paths.path)
      if (found === undefined) return yield* sessionError("SESSION_NOT_FOUND", "no session file at this path", { path: paths.path })
      if (found.kind !== "file") {
        return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${found.kind}, not a regular file`, { path: paths.path })
      }
      const dir = yield* Generation.directory(fs, paths, dirStat)
      yield* Effect.uninterruptible(remove(fs, paths, dir))
      // Its search segment too: it holds the session's words (best effort; one left is never used).
      yield* SearchIndex.forget(fs, paths.dir, paths.base)
      return paths.path
    }))
  })).pipe(Tracing.span("FileJournal.delete", { session: location }))

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
      if (!name.endsWith(Paths.BLOBS)) continue
      const leftover = Paths.parseLeftover(paths, name.slice(0, -Paths.BLOBS.length))
      if (leftover === undefined || leftover.kind !== "deleted" || Owner.isAlive(leftover.owner)) continue
      yield* removeTree(fs, Path.join(paths.dir, name))
      removed.push(name)
    }
    const blobs = paths.blobs
    const session = yield* lstatNamed(fs, "lstat", paths.path)
    const live = yield* step("list directory", Paths.leftovers(fs, paths))
    if (session === undefined && live.live === undefined && (yield* lstatNamed(fs, "lstat", blobs)) !== undefined) {
      yield* removeTree(fs, blobs)
      removed.push(Path.basename(blobs))
    }
    return removed
  })

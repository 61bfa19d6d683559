/**
 * The file mechanics of one session. A generation is one complete version of
 * the file (SPEC Part A): this module opens one read-only without following
 * links or blocking, creates the first, and commits the next atomically and
 * durably, with its marker protocol and rollback.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import { MAX_FILE_BYTES } from "@session-tree/core/Codec"
import { SessionError, sessionError } from "@session-tree/core/SessionError"
import { effectsOf, type FileId, Flags, Fs, FsError, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import { closeQuietly, expectIdentity, lstatOrMissing, readWhole, removeOwn, step, writeAll } from "./io.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"
import * as Steps from "./steps.js"

/** A generation this process holds open: the descriptor pins the inode, so its (dev, ino) cannot be reused. */
export interface OpenGeneration {
  readonly handle: Handle
  readonly id: FileId
  readonly size: number
  readonly mode: number
  /** Its modification time when this process last wrote or read it whole. */
  readonly mtimeNs: bigint
}

export interface Opened {
  readonly bytes: Uint8Array
  readonly generation: OpenGeneration
  readonly dir: FileId
}

export const statDirectory = (paths: Paths.SessionPaths): Effect.Effect<Stat, SessionError, Fs> =>
  Effect.flatMap(lstatOrMissing("lstat directory", paths.dir), (dir) =>
    dir === undefined
      ? Effect.fail(sessionError("SESSION_NOT_FOUND", "the directory does not exist", { path: paths.dir }))
      : dir.kind !== "directory"
      ? Effect.fail(sessionError("SESSION_NOT_REGULAR_FILE", "the parent path is not a directory", { path: paths.dir }))
      : Effect.succeed(dir)
  )

/**
 * Opens the generation at `paths.path` for reading (see `readWhole`): never through a link,
 * never blocking, the same file from lstat to the last byte. The handle stays open for the
 * caller; on failure it is closed.
 */
export const open = (paths: Paths.SessionPaths): Effect.Effect<Opened, SessionError, Fs> =>
  Effect.gen(function*() {
    const dir = yield* statDirectory(paths)
    const { bytes, handle, stat } = yield* readWhole(paths.path, MAX_FILE_BYTES, "session file")
    return { bytes, generation: { handle, id: stat, size: bytes.length, mode: stat.mode, mtimeNs: stat.mtimeNs }, dir }
  }).pipe(Effect.uninterruptible)

/** Opens the directory so commits can fsync it; the descriptor also pins its identity. */
export const openDirectory = (paths: Paths.SessionPaths, id: FileId): Effect.Effect<Handle, SessionError, Fs> =>
  Effect.gen(function*() {
    const fs = effectsOf(yield* Fs)
    const handle = yield* step("open directory", fs.open(paths.dir, Flags.directory), { ELOOP: "SESSION_REPLACED" })
    const stat = yield* step("fstat directory", fs.fstat(handle)).pipe(Effect.onError(() => closeQuietly(handle)))
    if (stat.kind !== "directory" || !sameFile(stat, id)) {
      yield* closeQuietly(handle)
      return yield* sessionError("SESSION_REPLACED", "the directory changed while it was opened", { path: paths.dir })
    }
    return handle
  }).pipe(Effect.uninterruptible)

/** What `create` made: the first generation, held open, and own names it could not remove (for the store to retry). */
export interface Created {
  readonly generation: OpenGeneration
  readonly leftover: ReadonlyArray<string>
}

/**
 * Creates the first generation: the bytes go to an exclusive temp file that is
 * fsynced and then hard-linked into place, so the path either does not exist or
 * holds the whole header; an existing path fails with SESSION_EXISTS.
 */
export const create = (
  paths: Paths.SessionPaths,
  bytes: Uint8Array,
  dirHandle: Handle,
  dirId: FileId
): Effect.Effect<Created, SessionError, Fs> =>
  Effect.gen(function*() {
    const fs = effectsOf(yield* Fs)
    const existing = yield* lstatOrMissing("lstat", paths.path)
    if (existing !== undefined) return yield* sessionError("SESSION_EXISTS", "the path already exists", { path: paths.path })
    const tmp = Paths.ownName(paths, "tmp", Paths.nextSeq())
    const handle = yield* step("create temp", fs.open(tmp, Flags.createExclusive, 0o600))
    let linked = false
    return yield* Effect.gen(function*() {
      yield* writeAll(handle, bytes, 0, 0)
      yield* step("fsync temp", fs.fsync(handle))
      const stat = yield* step("fstat temp", fs.fstat(handle))
      yield* expectIdentity("temp file", tmp, "file", stat)
      yield* step("link into place", fs.link(tmp, paths.path), { EEXIST: "SESSION_EXISTS" })
      linked = true
      yield* expectIdentity("new file", paths.path, "file", stat)
      yield* expectIdentity("directory", paths.dir, "directory", dirId)
      yield* step("fsync directory", fs.fsync(dirHandle))
      // The file is durable from here on; a temp name that cannot be removed now is retried by the store.
      const gone = yield* removeOwn(tmp)
      return { generation: { handle, id: stat, size: bytes.length, mode: stat.mode, mtimeNs: stat.mtimeNs }, leftover: gone ? [] : [tmp] }
    }).pipe(
      Effect.onError(() =>
        Effect.gen(function*() {
          // Undo only what this call made: the temp name, and the path if it is still our file.
          if (linked) {
            const now = yield* Effect.orElseSucceed(fs.fstat(handle), () => undefined)
            const atPath = yield* Effect.orElseSucceed(lstatOrMissing("lstat", paths.path), () => undefined)
            if (now !== undefined && atPath !== undefined && sameFile(now, atPath)) {
              yield* removeOwn(paths.path)
              yield* Effect.ignore(fs.fsync(dirHandle))
            }
          }
          yield* removeOwn(tmp)
          yield* closeQuietly(handle)
        })
      )
    )
  }).pipe(Effect.uninterruptible)

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

export type CommitResult =
  | { readonly _tag: "Committed"; readonly generation: OpenGeneration; readonly leftover: ReadonlyArray<string> }
  | { readonly _tag: "Failed"; readonly error: SessionError; readonly leftover: ReadonlyArray<string> }
  | { readonly _tag: "Locked"; readonly error: SessionError }

/**
 * Why the marker exists, for the SESSION_BUSY of a commit that found it: another writer's commit
 * in flight (its temp file names a running process), or one that crashed or could not prove its
 * rollback, which only `recover` resolves.
 */
function* busy(paths: Paths.SessionPaths): Steps.Steps<SessionError> {
  let live: Owner.Owner | undefined
  try {
    live = (yield* Paths.leftovers(paths)).live?.owner
  } catch (e) {
    // Unlisted, the marker is still there: the message then points at `recover`, which lists again.
    if (!(e instanceof FsError)) throw e
  }
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
}

/** Links the marker, the commit lock: a marker already there is SESSION_BUSY, saying why (`busy`). */
function* linkMarker(paths: Paths.SessionPaths): Steps.Steps<void> {
  try {
    yield* Steps.link(paths.path, paths.marker)
  } catch (e) {
    if (e instanceof FsError && e.errno === "EEXIST") throw yield* busy(paths)
    throw e
  }
}

/** Opens an existing own name for writing, never through a link. */
const WRITE_NO_FOLLOW = NFS.constants.O_WRONLY | NFS.constants.O_NOFOLLOW

/**
 * The atomic commit (SPEC Part A "atomic commit", B5). Never fails: it reports
 * whether the new generation is installed, the old one is intact, or neither can
 * be proven (Locked, marker kept). `leftover` lists own names that could not be
 * removed, for the next commit to retry.
 *
 * The temp file is created before the marker and removed after it, so while the
 * marker is ours a temp name of a running process sits beside it and `recover`
 * refuses to touch it. Whatever sits at the marker name after our link succeeded
 * is ours until we remove it: other writers fail on EEXIST and `recover` waits.
 * With `copyPrefix`, the current generation is copied in the kernel from the
 * marker (proven to be the held generation) to the next name, which is then the
 * file that is completed and installed; the temp file only names the writer.
 */
export const commit = (fs: FsService, input: CommitInput): Effect.Effect<CommitResult> =>
  Effect.uninterruptible(Effect.orDie(Effect.suspend(() => Steps.run(fs, commitSteps(input)))))

function* commitSteps(input: CommitInput): Steps.Steps<CommitResult> {
  const { base, bytes, copyPrefix, dirHandle, dirId, paths } = input
  const n = Paths.nextSeq()
  const tmp = Paths.ownName(paths, "tmp", n)
  const next = Paths.ownName(paths, "next", n)
  let tmpHandle: Handle | undefined
  let tmpId: Stat | undefined
  // The file that is renamed onto the path: the temp file, or the kernel copy at `next`.
  let dataHandle: Handle | undefined
  let dataId: Stat | undefined
  let markerLinked = false
  let markerId: Stat | undefined
  // Whether the next name may exist (it is created by `link next` or the kernel copy, and goes by the rename).
  let nextMade = false
  let renameTried = false
  let installedMtime: bigint | undefined

  function* attempt(): Steps.Steps<void> {
    yield* Steps.expectIdentity("directory", paths.dir, "directory", dirId)
    yield* Steps.expectIdentity("file", paths.path, "file", base.id)
    tmpHandle = yield* Steps.named("create temp", Steps.open(tmp, Flags.createExclusive, base.mode))
    tmpId = yield* Steps.named("fstat temp", Steps.fstat(tmpHandle))
    // ENOENT: the path vanished (deleted, or its directory moved) since the check above.
    yield* Steps.named("lock (link marker)", linkMarker(paths), { ENOENT: "SESSION_REPLACED" })
    markerLinked = true
    // The marker must be the generation this store holds open, else another writer got there first;
    // its size and modification time must be the held ones, else someone wrote into the file in place
    // (the kernel copy would carry that edit on while memory keeps the old bytes).
    const marker = yield* Steps.named("lstat marker", Steps.lstat(paths.marker))
    markerId = marker
    if (marker.kind !== "file" || !sameFile(marker, base.id) || marker.size !== base.size || marker.mtimeNs !== base.mtimeNs) {
      throw sessionError("SESSION_REPLACED", "the file is no longer the generation this store holds", { path: paths.path })
    }
    yield* Steps.expectIdentity("directory", paths.dir, "directory", dirId)
    if (copyPrefix > 0) {
      nextMade = true
      yield* Steps.named("copy current generation", Steps.copyFile(paths.marker, next))
      dataHandle = yield* Steps.named("open copy", Steps.open(next, WRITE_NO_FOLLOW))
      const copied = yield* Steps.named("fstat copy", Steps.fstat(dataHandle))
      dataId = copied
      yield* Steps.expectIdentity("copy", next, "file", copied)
      if (copied.size !== copyPrefix) {
        throw sessionError("SESSION_REPLACED", "the current generation is not the one this store wrote", { path: paths.path })
      }
      yield* Steps.writeAll(dataHandle, bytes, copyPrefix, copyPrefix)
      yield* Steps.named("fsync copy", Steps.fsync(dataHandle))
      yield* Steps.expectIdentity("copy", next, "file", copied)
    } else {
      dataHandle = tmpHandle
      dataId = tmpId
      yield* Steps.writeAll(tmpHandle, bytes, 0, 0)
      yield* Steps.named("fsync temp", Steps.fsync(tmpHandle))
      yield* Steps.expectIdentity("temp file", tmp, "file", tmpId)
      nextMade = true
      yield* Steps.named("link next", Steps.link(tmp, next))
    }
    renameTried = true
    yield* Steps.named("rename", Steps.rename(next, paths.path))
    nextMade = false
    const installed = yield* Steps.expectIdentity("installed generation", paths.path, "file", dataId)
    installedMtime = installed.mtimeNs
    if (installed.size !== bytes.length) {
      throw sessionError("SESSION_IO", `installed generation holds ${installed.size} of ${bytes.length} bytes`, {
        path: paths.path
      })
    }
    // A directory swapped after the last check would have taken the rename: prove it did not.
    yield* Steps.expectIdentity("directory", paths.dir, "directory", dirId)
    yield* Steps.named("fsync directory", Steps.fsync(dirHandle))
    yield* Steps.named("unlock (unlink marker)", Steps.unlink(paths.marker))
    markerLinked = false
  }

  function* closeAll(): Steps.Steps<void> {
    if (dataHandle !== undefined && dataHandle !== tmpHandle) yield* Steps.closeQuietly(dataHandle)
    if (tmpHandle !== undefined) yield* Steps.closeQuietly(tmpHandle)
  }

  const error = yield* Steps.attempt(attempt())
  if (error === undefined) {
    // A temp file that only named the writer is closed while it still has its name, so the close frees nothing.
    if (tmpHandle !== dataHandle) yield* Steps.closeQuietly(tmpHandle!)
    const leftover = (yield* Steps.removeOwn(tmp)) ? [] : [tmp]
    return {
      _tag: "Committed",
      generation: { handle: dataHandle!, id: dataId!, size: bytes.length, mode: base.mode, mtimeNs: installedMtime! },
      leftover
    }
  }
  const leftover: Array<string> = []
  function* remove(name: string): Steps.Steps<void> {
    if (!(yield* Steps.removeOwn(name))) leftover.push(name)
  }
  // Locked keeps the marker for `recover`; our other names go, so that a running process does not
  // look like a live writer to a `recover` of another process.
  function* lock(reason: string, cause: unknown): Steps.Steps<CommitResult> {
    if (nextMade) yield* Steps.removeOwn(next)
    if (tmpHandle !== undefined) yield* Steps.removeOwn(tmp)
    yield* closeAll()
    return {
      _tag: "Locked",
      error: sessionError("SESSION_ROLLBACK_FAILED", `${reason}; the marker ${paths.marker} is kept (${error!.message})`, {
        path: paths.path,
        cause
      })
    }
  }
  /** lstat that reports an `FsError` instead of throwing it. */
  function* probe(path: string): Steps.Steps<{ readonly stat: Stat | undefined } | { readonly failed: FsError }> {
    try {
      return { stat: yield* Steps.lstatOrMissing(path) }
    } catch (e) {
      if (e instanceof FsError) return { failed: e }
      throw e
    }
  }

  if (renameTried) {
    // Prove where the path points before touching anything.
    const at = yield* probe(paths.path)
    const installed = "stat" in at && at.stat !== undefined && dataId !== undefined && sameFile(at.stat, dataId)
    const untouched = "stat" in at && at.stat !== undefined && sameFile(at.stat, base.id)
    if (installed) {
      const rollback = Paths.ownName(paths, "rollback", n)
      const restored = yield* Steps.attempt(function*() {
        yield* Steps.named("rollback: link marker", Steps.link(paths.marker, rollback))
        yield* Steps.named("rollback: rename", Steps.rename(rollback, paths.path))
        yield* Steps.expectIdentity("restored generation", paths.path, "file", base.id)
        yield* Steps.named("rollback: fsync directory", Steps.fsync(dirHandle))
      }())
      if (restored !== undefined) {
        yield* Steps.removeOwn(rollback)
        return yield* lock("rollback could not be proven", restored)
      }
    } else if (!untouched) {
      return yield* lock("the path holds neither generation after a failed install", "failed" in at ? at.failed : at.stat)
    }
  }
  if (markerLinked) {
    // The marker name is ours since the link succeeded; remove it only while it is still what we linked
    // (when its lstat failed, what we linked is whatever regular file is there now).
    const m = yield* probe(paths.marker)
    if ("failed" in m) return yield* lock("the marker could not be checked", m.failed)
    // A name we linked and saw is ours whatever it links (a symlink swapped in before the link included).
    const ours = m.stat !== undefined && (markerId === undefined ? m.stat.kind === "file" : sameFile(m.stat, markerId))
    if (m.stat !== undefined && !ours) return yield* lock("the marker is not the link this commit made", undefined)
    if (ours && !(yield* Steps.removeOwn(paths.marker))) return yield* lock("the marker could not be removed", undefined)
  }
  if (nextMade) yield* remove(next)
  if (tmpHandle !== undefined) yield* remove(tmp)
  yield* closeAll()
  return { _tag: "Failed", error, leftover }
}

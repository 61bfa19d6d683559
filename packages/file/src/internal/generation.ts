/**
 * The file mechanics of one session. A generation is one complete version of
 * the file (see `docs/format.md`): this module opens one read-only without
 * following links or blocking, creates the first, and commits the next
 * atomically and durably, with its marker protocol and rollback.
 *
 * A create and a commit are stacks of resources in one scope, each acquired with
 * its undo as its release (see `held.ts`): the temp file, the marker, the next
 * name, the install. A failure closes the scope and undoes them in reverse order.
 */
import { type ConflictError, type InputError, type IoError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Scope from "effect/Scope"
import { type FileId, Flags, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import { descriptor, type Directory, type Held, lock, type OpenGeneration, ownName, provenOr, rollbackFailed, type Strays } from "./held.js"
import {
  expectIdentity,
  lstatNamed,
  lstatOrMissing,
  readSessionFile,
  removeOwn,
  step,
  type ReadFailure,
  type Whole,
  writeAll,
  type WriteFailure
} from "./io.js"
import { SESSION_CAPS, versionOfHead } from "./lines.js"
import * as Marker from "./marker.js"
import * as Paths from "./paths.js"

export type { Directory, OpenGeneration }

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
 * never blocking, the same file from lstat to the last byte. The descriptor is the caller's once
 * this succeeds, and closed when it fails or is interrupted.
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
    Effect.scoped(Effect.map(descriptorOf(fs, readSettled(fs, paths), "end"), ({ bytes }) => bytes))
  )

/** A read's descriptor as a resource of the scope (see `held.descriptor`). */
const descriptorOf = <A extends { readonly handle: Handle }, E>(fs: FsService, acquire: Effect.Effect<A, E>, until: "end" | "failure") =>
  Effect.acquireRelease(acquire, (opened, exit) => (until === "end" || Exit.isFailure(exit) ? closeHandle(fs, opened.handle) : Effect.void))

const closeHandle = (fs: FsService, handle: Handle): Effect.Effect<void> => Effect.ignore(fs.close(handle))

/** A read of a version-2 file that an append overlapped, to be tried again. */
class Overlapped {
  readonly _tag = "Overlapped"
}

/**
 * How often, and when, a read that an append overlapped is tried again: at once, then after 1 ms,
 * doubling up to 100 ms between tries, 20 times in all (about 1.4 s), then SESSION_BUSY.
 */
export const readRetries: Schedule.Schedule<unknown> = Schedule.exponential("1 millis").pipe(
  Schedule.union(Schedule.spaced("100 millis")),
  Schedule.intersect(Schedule.recurs(19))
)

/**
 * The session file read whole as a load must see it (`docs/format.md`, "Appending to a
 * version-2 file"). A version-1 file is read as it is, and one that grew while it was read is
 * SESSION_REPLACED. A version-2 file may grow under a running append: the marker is looked at
 * before and after the read, and a read that an append overlapped is tried again on
 * `readRetries`; with an append intent there, the file shows what the intent's rule
 * (`Marker.settle`) allows. The descriptor of the read that succeeds is the caller's.
 */
const readSettled = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Whole, ReadFailure> =>
  Effect.scoped(Effect.gen(function*() {
    const before = yield* Marker.now(fs, paths)
    const whole = yield* descriptorOf(fs, readSessionFile(fs, paths.path, SESSION_CAPS), "failure")
    if (versionOfHead(whole.bytes) === 1) {
      return whole.sizeAfter === whole.stat.size
        ? whole
        : yield* sessionError("SESSION_REPLACED", "the file grew while it was read", { path: paths.path })
    }
    const after = yield* Marker.now(fs, paths)
    if (before === "changing" || after === "changing" || whole.sizeAfter !== whole.stat.size || !Marker.same(before, after)) {
      return yield* Effect.fail(new Overlapped())
    }
    if (after === undefined || after._tag === "File") return whole
    const intent = Marker.parseIntent(after.text)
    if (intent === undefined) {
      return yield* sessionError("SESSION_BUSY", `${paths.marker} is a link but not an append intent: it blocks this session until it is removed`, {
        path: paths.path
      })
    }
    const end = Marker.settle(whole.bytes.length, whole.bytes.subarray(Math.min(intent.from, whole.bytes.length)), intent, paths.path)
    if (typeof end !== "number") return yield* end
    return { ...whole, bytes: whole.bytes.subarray(0, end) }
  })).pipe(
    Effect.retry({ schedule: readRetries, while: (e) => e instanceof Overlapped }),
    Effect.catchIf((e): e is Overlapped => e instanceof Overlapped, () =>
      Effect.fail(sessionError("SESSION_BUSY", "the session is being appended to without a pause long enough to read it; try again", {
        path: paths.path
      })))
  )

/** The session's directory opened so commits can fsync it, checked to be the one `id` names; closed when the scope closes. */
export const directory = (fs: FsService, paths: Paths.SessionPaths, id: FileId): Effect.Effect<Directory, ConflictError | IoError, Scope.Scope> =>
  Effect.flatMap(
    descriptor(fs, step("open directory", fs.open(paths.dir, Flags.directory), { ELOOP: "SESSION_REPLACED" }), "end"),
    (handle) =>
      Effect.flatMap(step("fstat directory", fs.fstat(handle)), (stat) =>
        stat.kind !== "directory" || !sameFile(stat, id)
          ? Effect.fail(sessionError("SESSION_REPLACED", "the directory changed while it was opened", { path: paths.dir }))
          : Effect.succeed({ handle, id }))
  )

/** SESSION_EXISTS when anything is at the session's path (never followed). */
export const refuseExisting = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<void, ConflictError | IoError> =>
  Effect.flatMap(lstatNamed(fs, "lstat", paths.path), (existing) =>
    existing === undefined ? Effect.void : Effect.fail(sessionError("SESSION_EXISTS", "the path already exists", { path: paths.path })))

/**
 * Creates the first generation: the bytes go to an exclusive temp file that is fsynced and then
 * hard-linked into place, so the path either does not exist or holds the whole header; an
 * existing path fails with SESSION_EXISTS. The generation's descriptor is the caller's; a temp
 * name that cannot be removed goes to `strays`, for the new writer to remove. The caller runs it
 * uninterruptibly.
 */
export const create = (
  fs: FsService,
  paths: Paths.SessionPaths,
  bytes: Uint8Array,
  dir: Directory,
  strays: Ref.Ref<Strays>
): Effect.Effect<OpenGeneration, ConflictError | IoError> =>
  Effect.scoped(Effect.gen(function*() {
    yield* refuseExisting(fs, paths)
    const tmp = Paths.ownName(paths, "tmp", Paths.nextSeq())
    const handle = yield* descriptor(fs, ownName(fs, strays, tmp, step("create temp", fs.open(tmp, Flags.createExclusive, 0o600)), "end"), "failure")
    yield* writeAll(fs, handle, bytes, 0, 0)
    yield* step("fsync temp", fs.fsync(handle))
    const stat = yield* step("fstat temp", fs.fstat(handle))
    yield* expectIdentity(fs, "temp file", tmp, "file", stat)
    yield* linkedInPlace(fs, paths, tmp, handle, dir)
    yield* expectIdentity(fs, "new file", paths.path, "file", stat)
    yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
    yield* step("fsync directory", fs.fsync(dir.handle))
    // The file is durable from here on: the temp name goes when the scope closes, or to `strays`.
    return held(handle, stat, bytes.length)
  }))

/**
 * The temp file linked at the path: SESSION_EXISTS when the name is taken. After a failure the
 * path is removed again, but only while it is still the file this call linked there.
 */
const linkedInPlace = (fs: FsService, paths: Paths.SessionPaths, tmp: string, handle: Handle, dir: Directory) =>
  Effect.acquireRelease(step("link into place", fs.link(tmp, paths.path), { EEXIST: "SESSION_EXISTS" }), (_, exit) =>
    Exit.isSuccess(exit) ? Effect.void : Effect.gen(function*() {
      const now = yield* Effect.orElseSucceed(fs.fstat(handle), () => undefined)
      const atPath = yield* Effect.orElseSucceed(lstatOrMissing(fs, paths.path), () => undefined)
      if (now !== undefined && atPath !== undefined && sameFile(now, atPath)) {
        yield* removeOwn(fs, paths.path)
        yield* Effect.ignore(fs.fsync(dir.handle))
      }
    }))

export interface CommitInput {
  readonly paths: Paths.SessionPaths
  readonly dir: Directory
  /** The whole next generation. */
  readonly bytes: Uint8Array
  /** When > 0, the first `copyPrefix` bytes equal the current file: copy them in the kernel. */
  readonly copyPrefix: number
}


/**
 * The atomic commit (see `docs/format.md`): installs the next generation, or leaves the old one
 * intact and fails, or fails with SESSION_ROLLBACK_FAILED when neither can be proven (the marker
 * is then kept). `state` holds the generation replaced, then the one installed; own names that
 * could not be removed go there too, for the next commit to retry.
 *
 * The temp file is created before the marker and removed after it, so while the marker is ours
 * a temp name of a running process sits beside it and `recover` refuses to touch it. The next
 * generation is written whole to the temp file, linked at the next name, or, with `copyPrefix`,
 * copied in the kernel from the marker (proven to be the held generation) to the next name and
 * completed there; the temp file then only names the writer. Its rename onto the path is the install.
 *
 * The caller runs it uninterruptibly: once the marker is linked, the outcome must reach the state
 * the next commit starts from.
 */
export const commit = <S extends Held>(fs: FsService, input: CommitInput, state: Ref.Ref<S>): Effect.Effect<OpenGeneration, WriteFailure> =>
  Effect.flatMap(Ref.get(state), ({ base }) =>
    Effect.scoped(Effect.gen(function*() {
      const { dir, paths } = input
      yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
      yield* expectIdentity(fs, "file", paths.path, "file", base.id)
      const n = Paths.nextSeq()
      const tmp = Paths.ownName(paths, "tmp", n)
      // Written whole, the temp file is the next generation, whose descriptor the writer keeps; else it only names the writer.
      const whole = input.copyPrefix === 0
      const create = step("create temp", fs.open(tmp, Flags.createExclusive, base.mode))
      const temp = yield* descriptor(fs, ownName(fs, state, tmp, create, "end"), whole ? "failure" : "end")
      const tempStat = yield* step("fstat temp", fs.fstat(temp))
      const linked = yield* Marker.take(fs, state, paths)
      if (linked._tag === "Unseen") return yield* step("lstat marker", Effect.fail(linked.error))
      yield* isHeld(paths, linked.stat, base)
      yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
      // The next name lives until the rename takes it away: a scope of its own, which the install closes.
      const next = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const name = Paths.ownName(paths, "next", n)
      const data = whole ? yield* wholeInTemp(fs, state, input, temp, tmp, tempStat, name, next) : yield* kernelCopy(fs, state, input, name, next)
      return yield* install(fs, state, input, base, data, Paths.ownName(paths, "rollback", n), next)
    })).pipe(Effect.catchAll(provenOr(state))))

/**
 * The marker must be the generation this store holds open, else another writer got there first;
 * its size and modification time must be the held ones, else someone wrote into the file in place
 * (the kernel copy would carry that edit on while memory keeps the old bytes).
 */
const isHeld = (paths: Paths.SessionPaths, marker: Stat, base: OpenGeneration): Effect.Effect<void, ConflictError> =>
  marker.kind !== "file" || !sameFile(marker, base.id) || marker.size !== base.size || marker.mtimeNs !== base.mtimeNs
    ? Effect.fail(sessionError("SESSION_REPLACED", "the file is no longer the generation this store holds", { path: paths.path }))
    : Effect.void

/** The next generation to install: its descriptor (the writer's once installed) and its identity. */
interface Next {
  readonly name: string
  readonly handle: Handle
  readonly stat: Stat
}

/**
 * The whole generation in the temp file, linked at the next name (a resource of `next`) so that
 * the temp name survives the install; the temp file's descriptor is the installed generation's.
 */
const wholeInTemp = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  temp: Handle,
  tmp: string,
  stat: Stat,
  name: string,
  next: Scope.Scope
): Effect.Effect<Next, WriteFailure> =>
  Effect.gen(function*() {
    yield* writeAll(fs, temp, input.bytes, 0, 0)
    yield* step("fsync temp", fs.fsync(temp))
    yield* expectIdentity(fs, "temp file", tmp, "file", stat)
    yield* Scope.extend(ownName(fs, state, name, step("link next", fs.link(tmp, name)), "failure"), next)
    return { name, handle: temp, stat }
  })

/**
 * The kernel copy of the held generation (the marker) at the next name (a resource of `next`),
 * completed with the new bytes; the copy's descriptor is the installed generation's, and closed on a failure.
 */
const kernelCopy = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  name: string,
  next: Scope.Scope
): Effect.Effect<Next, WriteFailure, Scope.Scope> =>
  Effect.gen(function*() {
    const { bytes, copyPrefix, paths } = input
    yield* Scope.extend(ownName(fs, state, name, step("copy current generation", fs.copyFile(paths.marker, name)), "failure"), next)
    const copy = yield* descriptor(fs, step("open copy", fs.open(name, Flags.writeOwn)), "failure")
    const stat = yield* step("fstat copy", fs.fstat(copy))
    yield* expectIdentity(fs, "copy", name, "file", stat)
    if (stat.size !== copyPrefix) {
      return yield* sessionError("SESSION_REPLACED", "the current generation is not the one this store wrote", { path: paths.path })
    }
    yield* writeAll(fs, copy, bytes, copyPrefix, copyPrefix)
    yield* step("fsync copy", fs.fsync(copy))
    yield* expectIdentity(fs, "copy", name, "file", stat)
    return { name, handle: copy, stat }
  })

/**
 * Renames the next name onto the path (which ends its scope: the name is gone) and proves it there,
 * durably; removing the marker is its last step. From the rename on, a failure rolls back (`rollBack`).
 */
const install = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  base: OpenGeneration,
  data: Next,
  rollbackName: string,
  next: Scope.CloseableScope
): Effect.Effect<OpenGeneration, WriteFailure, Scope.Scope> =>
  Effect.gen(function*() {
    const { bytes, dir, paths } = input
    yield* Effect.acquireRelease(Effect.void, (_, exit) =>
      Exit.isSuccess(exit) ? Effect.void : rollBack(fs, state, input, base, data.stat, rollbackName, exit))
    yield* step("rename", fs.rename(data.name, paths.path))
    yield* Scope.close(next, Exit.void)
    const installed = yield* expectIdentity(fs, "installed generation", paths.path, "file", data.stat)
    if (installed.size !== bytes.length) {
      return yield* sessionError("SESSION_IO", `installed generation holds ${installed.size} of ${bytes.length} bytes`, { path: paths.path })
    }
    // A directory swapped after the last check would have taken the rename: prove it did not.
    yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
    yield* step("fsync directory", fs.fsync(dir.handle))
    // Inside the install: a commit whose marker cannot be removed is rolled back.
    yield* step("unlock (unlink marker)", fs.unlink(paths.marker))
    const generation: OpenGeneration = { handle: data.handle, id: data.stat, size: bytes.length, mode: base.mode, mtimeNs: installed.mtimeNs }
    yield* Ref.update(state, (h) => ({ ...h, base: generation }))
    return generation
  })

/**
 * After a failed install (the rename included, which may have happened): proves where the path
 * points before touching anything, and puts the held generation back if the new one is there.
 * What cannot be proven keeps the marker and locks the writer.
 */
const rollBack = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  base: OpenGeneration,
  data: Stat,
  name: string,
  failure: Exit.Exit<unknown, unknown>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { dir, paths } = input
    const at = yield* Effect.either(lstatOrMissing(fs, paths.path))
    const stat = at._tag === "Right" ? at.right : undefined
    if (stat !== undefined && sameFile(stat, data)) {
      const restored = yield* Effect.either(Effect.gen(function*() {
        yield* step("rollback: link marker", fs.link(paths.marker, name))
        yield* step("rollback: rename", fs.rename(name, paths.path))
        yield* expectIdentity(fs, "restored generation", paths.path, "file", base.id)
        yield* step("rollback: fsync directory", fs.fsync(dir.handle))
      }))
      if (restored._tag === "Left") {
        yield* removeOwn(fs, name)
        yield* lock(state, rollbackFailed(paths, "the marker", "rollback could not be proven", failure, restored.left))
      }
    } else if (stat === undefined || !sameFile(stat, base.id)) {
      yield* lock(state, rollbackFailed(paths, "the marker", "the path holds neither generation after a failed install", failure, at._tag === "Left" ? at.left : stat))
    }
  })

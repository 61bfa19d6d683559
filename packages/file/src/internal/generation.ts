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
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Fs from "../Fs.js"
import { type FileId, Flags, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import { descriptor, type Directory, drop, type Held, lock, type OpenGeneration, ownName, provenOr, rollbackFailed, type Strays } from "./held.js"
import {
  expectIdentity,
  lstatNamed,
  lstatOrMissing,
  opened,
  readSessionFile,
  removeOwn,
  type BufferOf,
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
 * never blocking, the same file from lstat to the last byte. Its descriptor is a resource of the
 * scope, closed when the scope closes (with `until: "failure"`, only when it closes with a
 * failure: the caller keeps it otherwise). The read is interruptible; the hand-over is not.
 */
export const open = (
  fs: FsService,
  paths: Paths.SessionPaths,
  until: "end" | "failure",
  into?: BufferOf
): Effect.Effect<Opened, ReadFailure, Scope.Scope> =>
  Effect.flatMap(statDirectory(fs, paths), (dir) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(restore(readSettled(fs, paths, into)), ({ bytes, handle, stat }) =>
        Effect.as(
          Effect.addFinalizer((exit) => (until === "end" || Exit.isFailure(exit) ? closeHandle(fs, handle) : Effect.void)),
          { bytes, generation: held(handle, stat, bytes.length), dir }
        ))
    ))

/**
 * The bytes of the generation at `paths.path`, read as `open` reads them (into the buffer `into`
 * gives: see `BufferOf`), holding nothing afterwards.
 */
export const read = (fs: FsService, paths: Paths.SessionPaths, into?: BufferOf): Effect.Effect<Uint8Array, ReadFailure> =>
  Effect.scoped(Effect.map(open(fs, paths, "end", into), ({ bytes }) => bytes))

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
const readSettled = (fs: FsService, paths: Paths.SessionPaths, into?: BufferOf): Effect.Effect<Whole, ReadFailure> =>
  Effect.scoped(Effect.gen(function*() {
    const before = yield* Marker.now(fs, paths)
    const checked = yield* opened(fs, paths.path, SESSION_CAPS.most, "session file", "failure")
    const whole = yield* readSessionFile(fs, checked, SESSION_CAPS, into)
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
    step("open directory", Fs.open(fs, paths.dir, Flags.directory), { ELOOP: "SESSION_REPLACED" }),
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
  /** The generation replaced: the one the writer holds. */
  readonly base: OpenGeneration
  /** The whole next generation. */
  readonly bytes: Uint8Array
  /** When > 0, the first `copyPrefix` bytes equal the current file: copy them in the kernel. */
  readonly copyPrefix: number
}


/** The names of one commit beside the session file, numbered alike. */
interface Names {
  readonly tmp: string
  readonly next: string
  readonly rollback: string
}

/**
 * The atomic commit (see `docs/format.md`): installs the next generation, or leaves the old one
 * intact and fails, or fails with SESSION_ROLLBACK_FAILED when neither can be proven (the marker
 * is then kept). `state` holds the generation replaced, then the one installed; own names that
 * could not be removed go there too, for the next commit to retry.
 *
 * Three brackets, each released by its undo: the temp file (`withTemp`), created before the marker
 * and removed after it, so that while the marker is ours a temp name of a running process sits
 * beside it and `recover` refuses to touch it; the marker (`withMarker`); the next generation and
 * its install (`withNext`). The next generation is written whole to the temp file and linked at
 * the next name, or, with `copyPrefix`, copied in the kernel from the marker (proven to be the held
 * generation) to the next name and completed there; the temp file then only names the writer.
 *
 * The caller runs it uninterruptibly: once the marker is linked, the outcome must reach the state
 * the next commit starts from.
 */
export const commit = <S extends Held>(fs: FsService, input: CommitInput, state: Ref.Ref<S>): Effect.Effect<OpenGeneration, WriteFailure> =>
  Effect.suspend(() => {
    const { base, dir, paths } = input
    const n = Paths.nextSeq()
    const names: Names = { tmp: Paths.ownName(paths, "tmp", n), next: Paths.ownName(paths, "next", n), rollback: Paths.ownName(paths, "rollback", n) }
    return Effect.zipRight(
      Effect.zipRight(
        expectIdentity(fs, "directory", paths.dir, "directory", dir.id),
        expectIdentity(fs, "file", paths.path, "file", base.id)
      ),
      withTemp(fs, state, input, base, names, (temp) =>
        Marker.withLock(fs, state, paths, (marker) =>
          Effect.zipRight(
            Effect.zipRight(isHeld(paths, marker, base), expectIdentity(fs, "directory", paths.dir, "directory", dir.id)),
            withNext(fs, state, input, base, names, temp)
          )))
    ).pipe(Effect.catchAll(provenOr(state)))
  })

/** The temp file, as created: its descriptor and identity. */
interface Temp {
  readonly handle: Handle
  readonly stat: Stat
}

/**
 * The temp file, created exclusively while `use` runs, and its name removed after it (one that
 * cannot be removed goes to the writer's strays). Written whole, it is the next generation, whose
 * descriptor the writer keeps once installed; else it only names the writer and is closed.
 */
const withTemp = <A, S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  base: OpenGeneration,
  names: Names,
  use: (temp: Temp) => Effect.Effect<A, WriteFailure>
): Effect.Effect<A, WriteFailure> =>
  Effect.acquireUseRelease(
    Effect.flatMap(step("create temp", fs.open(names.tmp, Flags.createExclusive, base.mode)), (handle) =>
      Effect.map(
        Effect.onError(step("fstat temp", fs.fstat(handle)), () => Effect.zipRight(closeHandle(fs, handle), drop(fs, state, names.tmp))),
        (stat): Temp => ({ handle, stat })
      )),
    use,
    (temp, exit) =>
      Effect.zipRight(
        input.copyPrefix === 0 && Exit.isSuccess(exit) ? Effect.void : closeHandle(fs, temp.handle),
        drop(fs, state, names.tmp)
      )
  )

/** The next generation at the next name, ready to install: its descriptor and identity. */
interface Next {
  readonly handle: Handle
  readonly stat: Stat
}

/**
 * The next generation at the next name, then installed (`install`). Made in the bracket's
 * acquisition, which removes what it made when it fails; released by its undo: after a failure the
 * path is proven before anything is touched (`rollBack`), the held generation put back if the new
 * one is there, else the next name removed, and the next generation's descriptor closed.
 */
const withNext = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  base: OpenGeneration,
  names: Names,
  temp: Temp
): Effect.Effect<OpenGeneration, WriteFailure> =>
  Effect.acquireUseRelease(
    input.copyPrefix === 0 ? wholeInTemp(fs, state, input, names, temp) : kernelCopy(fs, state, input, names),
    (next) => install(fs, state, input, base, next, names),
    (next, exit) =>
      Exit.isSuccess(exit) ? Effect.void : Effect.zipRight(
        rollBack(fs, state, input, base, next.stat, names, exit),
        input.copyPrefix === 0 ? Effect.void : closeHandle(fs, next.handle)
      )
  )

/**
 * The marker must be the generation this store holds open, else another writer got there first;
 * its size and modification time must be the held ones, else someone wrote into the file in place
 * (the kernel copy would carry that edit on while memory keeps the old bytes).
 */
const isHeld = (paths: Paths.SessionPaths, marker: Stat, base: OpenGeneration): Effect.Effect<void, ConflictError> =>
  marker.kind !== "file" || !sameFile(marker, base.id) || marker.size !== base.size || marker.mtimeNs !== base.mtimeNs
    ? Effect.fail(sessionError("SESSION_REPLACED", "the file is no longer the generation this store holds", { path: paths.path }))
    : Effect.void

/**
 * The whole generation in the temp file, linked at the next name so that the temp name survives
 * the install; the temp file's descriptor is the next generation's.
 */
const wholeInTemp = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  names: Names,
  temp: Temp
): Effect.Effect<Next, WriteFailure> =>
  Effect.gen(function*() {
    yield* writeAll(fs, temp.handle, input.bytes, 0, 0)
    yield* step("fsync temp", fs.fsync(temp.handle))
    yield* expectIdentity(fs, "temp file", names.tmp, "file", temp.stat)
    yield* Effect.onError(step("link next", fs.link(names.tmp, names.next)), () => drop(fs, state, names.next))
    return { handle: temp.handle, stat: temp.stat }
  })

/**
 * The kernel copy of the held generation (the marker) at the next name, completed with the new
 * bytes; the copy's descriptor is the next generation's. On a failure the name and the descriptor go.
 */
const kernelCopy = <S extends Held>(fs: FsService, state: Ref.Ref<S>, input: CommitInput, names: Names): Effect.Effect<Next, WriteFailure> =>
  Effect.gen(function*() {
    const { bytes, copyPrefix, paths } = input
    yield* step("copy current generation", fs.copyFile(paths.marker, names.next))
    const copy = yield* step("open copy", fs.open(names.next, Flags.writeOwn))
    return yield* Effect.gen(function*() {
      const stat = yield* step("fstat copy", fs.fstat(copy))
      yield* expectIdentity(fs, "copy", names.next, "file", stat)
      if (stat.size !== copyPrefix) {
        return yield* sessionError("SESSION_REPLACED", "the current generation is not the one this store wrote", { path: paths.path })
      }
      yield* writeAll(fs, copy, bytes, copyPrefix, copyPrefix)
      yield* step("fsync copy", fs.fsync(copy))
      yield* expectIdentity(fs, "copy", names.next, "file", stat)
      return { handle: copy, stat }
    }).pipe(Effect.onError(() => closeHandle(fs, copy)))
  }).pipe(Effect.onError(() => drop(fs, state, names.next)))

/**
 * Renames the next name onto the path and proves it there, durably; removing the marker is its
 * last step. `state` then holds the generation installed.
 */
const install = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  base: OpenGeneration,
  next: Next,
  names: Names
): Effect.Effect<OpenGeneration, WriteFailure> =>
  Effect.gen(function*() {
    const { bytes, dir, paths } = input
    yield* step("rename", fs.rename(names.next, paths.path))
    const installed = yield* expectIdentity(fs, "installed generation", paths.path, "file", next.stat)
    if (installed.size !== bytes.length) {
      return yield* sessionError("SESSION_IO", `installed generation holds ${installed.size} of ${bytes.length} bytes`, { path: paths.path })
    }
    // A directory swapped after the last check would have taken the rename: prove it did not.
    yield* expectIdentity(fs, "directory", paths.dir, "directory", dir.id)
    yield* step("fsync directory", fs.fsync(dir.handle))
    // Inside the install: a commit whose marker cannot be removed is rolled back.
    yield* step("unlock (unlink marker)", fs.unlink(paths.marker))
    const generation: OpenGeneration = { handle: next.handle, id: next.stat, size: bytes.length, mode: base.mode, mtimeNs: installed.mtimeNs }
    yield* Ref.update(state, (h) => ({ ...h, base: generation }))
    return generation
  })

/**
 * After a failed install (the rename included, which may have happened): proves where the path
 * points before touching anything, and puts the held generation back if the new one is there;
 * else the next name, which the rename did not take, is removed. What cannot be proven keeps the
 * marker and locks the writer.
 */
const rollBack = <S extends Held>(
  fs: FsService,
  state: Ref.Ref<S>,
  input: CommitInput,
  base: OpenGeneration,
  data: Stat,
  names: Names,
  failure: Exit.Exit<unknown, unknown>
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { dir, paths } = input
    const at = yield* Effect.either(lstatOrMissing(fs, paths.path))
    const stat = at._tag === "Right" ? at.right : undefined
    if (stat !== undefined && sameFile(stat, data)) {
      const restored = yield* Effect.either(Effect.gen(function*() {
        yield* step("rollback: link marker", fs.link(paths.marker, names.rollback))
        yield* step("rollback: rename", fs.rename(names.rollback, paths.path))
        yield* expectIdentity(fs, "restored generation", paths.path, "file", base.id)
        yield* step("rollback: fsync directory", fs.fsync(dir.handle))
      }))
      if (restored._tag === "Left") {
        yield* removeOwn(fs, names.rollback)
        yield* lock(state, rollbackFailed(paths, "the marker", "rollback could not be proven", failure, restored.left))
      }
      return
    }
    if (stat === undefined || !sameFile(stat, base.id)) {
      yield* lock(state, rollbackFailed(paths, "the marker", "the path holds neither generation after a failed install", failure, at._tag === "Left" ? at.left : stat))
    }
    yield* drop(fs, state, names.next)
  })

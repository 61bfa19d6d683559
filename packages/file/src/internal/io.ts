/**
 * Filesystem steps with their meaning for the store: every `FsError` becomes a
 * `SessionError` that names the step (the codes of `docs/format.md`), identity
 * checks compare (dev, ino), and own names are removed on a best-effort basis.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { type FileId, Flags, type FsError, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import type { ConflictError, CorruptError, ErrorOf, InputError, IoError, LockedError, SessionErrorCode } from "@session-tree/core/SessionError"
import { sessionError } from "@session-tree/core/SessionError"

/** What reading a file can fail with: nothing usable there (input), over a cap (corrupt), changed meanwhile (conflict), a failed step. */
export type ReadFailure = InputError | CorruptError | ConflictError | IoError

/** What a commit of the file writer can fail with: the port's `AppendError` (never `CorruptError`). */
export type WriteFailure = InputError | ConflictError | IoError | LockedError

/** The `SessionError` of a failed step: `SESSION_IO` unless `codes` maps the errno elsewhere. */
export const stepError = <C extends SessionErrorCode = never>(
  name: string,
  e: FsError,
  codes?: Partial<Record<string, C>>
): ErrorOf<"SESSION_IO" | C> =>
  sessionError<"SESSION_IO" | C>(codes?.[e.errno] ?? "SESSION_IO", `${name} failed: ${e.errno} (${e.op} ${e.path})`, {
    path: e.path,
    cause: e
  })

/** Runs a step; its `FsError` becomes the `SessionError` of the step `name` (see `stepError`). */
export const step = <A, R = never, C extends SessionErrorCode = never>(
  name: string,
  effect: Effect.Effect<A, FsError, R>,
  codes?: Partial<Record<string, C>>
): Effect.Effect<A, ErrorOf<"SESSION_IO" | C>, R> => Effect.mapError(effect, (e) => stepError(name, e, codes))

/** Whether a failed step found no file at its path. */
const isMissing = (e: FsError): boolean => e.errno === "ENOENT"

/** lstat that answers `undefined` for a missing path. */
export const lstatOrMissing = (fs: FsService, path: string): Effect.Effect<Stat | undefined, FsError> =>
  Effect.catchIf(fs.lstat(path), isMissing, () => Effect.succeed(undefined))

/**
 * `lstatOrMissing` whose failure is the step `name` (see `step`). One match instead of a catch and
 * a mapping: a commit makes about ten of these, and each combinator is a step of the fiber.
 */
export const lstatNamed = <C extends SessionErrorCode = never>(
  fs: FsService,
  name: string,
  path: string,
  codes?: Partial<Record<string, C>>
): Effect.Effect<Stat | undefined, ErrorOf<"SESSION_IO" | C>> =>
  Effect.matchEffect(fs.lstat(path), {
    onFailure: (e) => isMissing(e) ? Effect.succeed(undefined) : Effect.fail(stepError(name, e, codes)),
    onSuccess: Effect.succeed
  })

/** Fails with SESSION_REPLACED unless `path` is still a `kind` with identity `id` (a missing path included). */
export const expectIdentity = (
  fs: FsService,
  what: string,
  path: string,
  kind: Stat["kind"],
  id: FileId
): Effect.Effect<Stat, ConflictError | IoError> => {
  const replaced = () => Effect.fail(sessionError("SESSION_REPLACED", `the ${what} is no longer the one this store opened`, { path }))
  return Effect.matchEffect(fs.lstat(path), {
    onFailure: (e): Effect.Effect<never, ConflictError | IoError> =>
      isMissing(e) ? replaced() : Effect.fail(stepError(`check ${what}`, e)),
    onSuccess: (stat): Effect.Effect<Stat, ConflictError> => stat.kind !== kind || !sameFile(stat, id) ? replaced() : Effect.succeed(stat)
  })
}

/** Writes all bytes from `offset` at `position` in one call; a short count is a failure (the disk is likely full). */
export const writeAll = (
  fs: FsService,
  handle: Handle,
  bytes: Uint8Array,
  offset: number,
  position: number
): Effect.Effect<void, IoError> =>
  Effect.flatMap(step("write", fs.write(handle, bytes, offset, bytes.length - offset, position)), (n) =>
    n === bytes.length - offset
      ? Effect.void
      : Effect.fail(
        sessionError("SESSION_IO", `write failed: wrote ${n} of ${bytes.length - offset} bytes`, { path: handle.path })
      ))

/**
 * Best-effort removal of a name this operation created; true only when the unlink
 * succeeded. Even ENOENT counts as unproven: the name was ours a moment ago, so the
 * caller keeps it for a later retry, where ENOENT is then taken as gone.
 */
export const removeOwn = (fs: FsService, path: string): Effect.Effect<boolean> =>
  Effect.match(fs.unlink(path), { onFailure: () => false, onSuccess: () => true })

/** Closes, ignoring a failure (the kernel releases the descriptor even then). */
export const closeQuietly = (fs: FsService, handle: Handle): Effect.Effect<void> => Effect.ignore(fs.close(handle))

/** A regular file opened for reading, checked through its descriptor to be the file lstat saw. */
export interface Checked {
  readonly handle: Handle
  readonly stat: Stat
}

/**
 * Opens the regular file at `path` for reading, `maxBytes` at most: lstat first (refuse links,
 * directories, FIFOs, devices and oversize files before opening), then open with
 * O_NOFOLLOW | O_NONBLOCK and check through the handle that it is the same file. On failure the
 * handle is closed. `what` names the file in the SESSION_NOT_FOUND message.
 */
export const openChecked = (fs: FsService, path: string, maxBytes: number, what: string): Effect.Effect<Checked, ReadFailure> =>
  Effect.gen(function*() {
    const before = yield* lstatNamed(fs, "lstat", path)
    if (before === undefined) return yield* sessionError("SESSION_NOT_FOUND", `no ${what} at this path`, { path })
    if (before.kind !== "file") {
      return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${before.kind}, not a regular file`, { path })
    }
    if (before.size > maxBytes) return yield* tooLarge(path, maxBytes, before.size)
    const handle = yield* step("open", fs.open(path, Flags.readNoFollow), {
      ELOOP: "SESSION_NOT_REGULAR_FILE",
      ENOENT: "SESSION_REPLACED"
    })
    return yield* Effect.flatMap(step("fstat", fs.fstat(handle)), (stat): Effect.Effect<Checked, ReadFailure> =>
      stat.kind !== "file" || !sameFile(stat, before)
        ? Effect.fail(sessionError("SESSION_REPLACED", "the file changed between lstat and open", { path }))
        : stat.size > maxBytes
        ? Effect.fail(tooLarge(path, maxBytes, stat.size))
        : Effect.succeed({ handle, stat })).pipe(Effect.onError(() => closeQuietly(fs, handle)))
  })

/**
 * `openChecked` as a resource of the scope, its descriptor closed when the scope closes: always,
 * or (with `until: "failure"`) only when it closes with a failure, the caller keeping it otherwise.
 * Only the opening is protected from interruption: what the caller then reads is not.
 */
export const opened = (
  fs: FsService,
  path: string,
  maxBytes: number,
  what: string,
  until: "end" | "failure"
): Effect.Effect<Checked, ReadFailure, Scope.Scope> =>
  Effect.acquireRelease(openChecked(fs, path, maxBytes, what), ({ handle }, exit) =>
    until === "end" || Exit.isFailure(exit) ? closeQuietly(fs, handle) : Effect.void)

const tooLarge = (path: string, maxBytes: number, size: number) =>
  sessionError("SESSION_FILE_TOO_LARGE", `the file holds ${size} bytes, more than ${maxBytes}`, { path })

/** The most one read asks for: a large file is read in several steps, each a point where the read can be interrupted. */
const READ_CHUNK = 8 * 1024 * 1024

/**
 * Reads the whole of a file `openChecked` opened. A file that grew while it was read fails
 * rather than give a prefix.
 */
const readAll = (fs: FsService, { handle, stat }: Checked, maxBytes: number): Effect.Effect<Uint8Array, ReadFailure> =>
  Effect.suspend(() => {
    const path = handle.path
    // One byte of room past the size tells a file that grew after fstat from one that did not.
    const buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1)
    const from = (length: number): Effect.Effect<Uint8Array, ReadFailure> =>
      Effect.flatMap(step("read", fs.read(handle, buffer, length, Math.min(buffer.length - length, READ_CHUNK), length)), (n) => {
        if (n === 0) return Effect.succeed(buffer.subarray(0, length))
        const total = length + n
        if (total === buffer.length) {
          return Effect.fail(
            total > maxBytes ? tooLarge(path, maxBytes, total) : sessionError("SESSION_REPLACED", "the file grew while it was read", { path })
          )
        }
        // The size fstat gave, and no byte of the room past it: the end of the file, without a read of 0.
        return total === stat.size ? Effect.succeed(buffer.subarray(0, total)) : from(total)
      })
    return from(0)
  })

/**
 * The session file `checked` (opened by `opened` with the largest cap any version allows) read
 * as a load reads it: for a file over `caps.least`, the head read first so that the cap its
 * header declares (`caps.of`) refuses it before it is read whole. It reads exactly the size fstat
 * gave (a file that shrank meanwhile is SESSION_REPLACED), into the buffer `into` gives, and reports
 * the size after the read: what a file that grew meanwhile means depends on its version, so the
 * caller decides.
 */
export const readSessionFile = (
  fs: FsService,
  checked: Checked,
  caps: SessionCaps,
  into: BufferOf = Buffer.allocUnsafe
): Effect.Effect<Whole & { readonly sizeAfter: number }, ReadFailure> =>
  Effect.gen(function*() {
    const size = checked.stat.size
    const path = checked.handle.path
    const shrank = () => sessionError("SESSION_REPLACED", "the file shrank while it was read", { path })
    if (size > caps.least) {
      const head = Buffer.allocUnsafe(Math.min(size, caps.headBytes))
      const cap = caps.of(yield* readExactly(fs, checked.handle, head, 0, shrank))
      if (size > cap) return yield* tooLarge(path, cap, size)
    }
    const bytes = yield* readExactly(fs, checked.handle, into(size), 0, shrank)
    const after = yield* step("fstat", fs.fstat(checked.handle))
    return { bytes, handle: checked.handle, stat: checked.stat, sizeAfter: after.size }
  })

/**
 * Where a read puts a file's bytes: a buffer of exactly `size` bytes, new by default. A caller that
 * reads many files one after another (a search) hands out one buffer of its own, so that reading
 * leaves no garbage; the bytes are then valid only until its next read.
 */
export type BufferOf = (size: number) => Buffer

/** The caps of a session file: the most any version allows, the least, and the one the head declares. */
export interface SessionCaps {
  readonly most: number
  readonly least: number
  /** How many bytes from the start `of` needs. */
  readonly headBytes: number
  readonly of: (head: Uint8Array) => number
}

/**
 * Fills `buffer` with the file's bytes from `position` on, in reads of at most `READ_CHUNK`; a
 * file that ends first fails with `short()`, the caller's reading of a file that changed under it.
 */
export const readExactly = <E>(
  fs: FsService,
  handle: Handle,
  buffer: Buffer,
  position: number,
  short: () => E
): Effect.Effect<Buffer, E | IoError> => {
  const from = (length: number): Effect.Effect<Buffer, E | IoError> =>
    length === buffer.length
      ? Effect.succeed(buffer)
      : Effect.flatMap(step("read", fs.read(handle, buffer, length, Math.min(buffer.length - length, READ_CHUNK), position + length)), (n) =>
        n === 0 ? Effect.fail(short()) : from(length + n))
  return from(0)
}

/** A regular file read whole, with the descriptor it was read through. */
export interface Whole extends Checked {
  readonly bytes: Uint8Array
}

/**
 * The bytes of the regular file at `path` (see `openChecked`), holding nothing afterwards; the
 * read is interruptible, and an interrupted one closes the descriptor.
 */
export const readBytes = (fs: FsService, path: string, maxBytes: number, what: string): Effect.Effect<Uint8Array, ReadFailure> =>
  Effect.scoped(Effect.flatMap(opened(fs, path, maxBytes, what, "end"), (checked) => readAll(fs, checked, maxBytes)))

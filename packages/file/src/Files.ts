/**
 * Files that are not sessions: what an import reads and what an export writes.
 * The same care as for session files: the file itself is never followed through
 * a symlink (the directories above it may be), a FIFO or device is
 * refused before it is opened (it could block), a size cap is checked before
 * reading, a file that grows while it is read is refused rather than cut, and a
 * written file appears whole or not at all (temp file, fsync, rename, directory
 * fsync).
 */
import { type ConflictError, type InputError, type IoError, sessionError } from "@session-tree/core/SessionError"
import * as Tracing from "@session-tree/core/Tracing"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Path from "node:path"
import * as FsModule from "./Fs.js"
import { Flags, Fs, type Handle } from "./Fs.js"
import * as Io from "./internal/io.js"
import * as Paths from "./internal/paths.js"

/**
 * Reads a whole regular file of at most `maxBytes` bytes: `InputError` when there is none, `CorruptError` over the cap.
 *
 * @since 0.1.0
 * @category files
 */
export const readBytes = (path: string, maxBytes: number): Effect.Effect<Uint8Array, Io.ReadFailure, Fs> =>
  Effect.flatMap(Fs, (fs) => Io.readBytes(fs, Path.resolve(path), maxBytes, "file")).pipe(Tracing.span("Files.readBytes", { session: path }))

/**
 * Writes `text` (UTF-8) to `path`, replacing a regular file that is there: the path then holds
 * either the old bytes or all of the new ones, durably. A directory, symlink or other non-regular
 * file at the path is refused and left alone. The directories above it may be symlinks: like a
 * session's, the directory is resolved once and every later step uses the resolved one.
 * `InputError` for a path that cannot hold the file, `ConflictError` when a name changed under
 * it, `IoError` for a failed step.
 *
 * @since 0.1.0
 * @category files
 */
export const writeFile = (path: string, text: string): Effect.Effect<void, InputError | ConflictError | IoError, Fs> =>
  Effect.gen(function*() {
    const fs = yield* Fs
    const target = yield* Paths.resolve(fs, path)
    const absolute = target.path
    // realpath resolves a regular file as well as a directory: ENOTDIR here is a parent that is a file.
    const existing = yield* Io.lstatNamed(fs, "lstat", absolute, { ENOTDIR: "SESSION_NOT_REGULAR_FILE" })
    if (existing !== undefined && existing.kind !== "file") {
      return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${existing.kind}, not a regular file`, { path: absolute })
    }
    // ELOOP: the resolved directory was replaced by a link since it was resolved.
    const dirHandle = yield* Io.step("open directory", FsModule.open(fs, target.dir, Flags.directory), {
      ENOENT: "SESSION_NOT_FOUND",
      ENOTDIR: "SESSION_NOT_REGULAR_FILE",
      ELOOP: "SESSION_REPLACED"
    })
    // The temp name goes again if anything fails before its rename takes it.
    const tmp = Paths.ownName(target, "tmp", Paths.nextSeq())
    const handle: Handle = yield* Effect.acquireRelease(
      Io.step("create temp", FsModule.open(fs, tmp, Flags.createExclusive, existing?.mode ?? 0o644)),
      (_, exit) => Exit.isFailure(exit) ? Effect.asVoid(Io.removeOwn(fs, tmp)) : Effect.void
    )
    const bytes = new TextEncoder().encode(text)
    yield* Io.writeAll(fs, handle, bytes, 0, 0)
    yield* Io.step("fsync temp", fs.fsync(handle))
    const stat = yield* Io.step("fstat temp", fs.fstat(handle))
    yield* Io.expectIdentity(fs, "temp file", tmp, "file", stat)
    yield* Io.step("rename", fs.rename(tmp, absolute))
    yield* Io.step("fsync directory", fs.fsync(dirHandle))
  }).pipe(Effect.scoped, Effect.uninterruptible, Tracing.span("Files.writeFile", { session: path }))

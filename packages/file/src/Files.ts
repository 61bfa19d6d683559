/**
 * Files that are not sessions: what an import reads and what an export writes.
 * The same care as for session files: the file itself is never followed through
 * a symlink (the directories above it may be, SPEC C3), a FIFO or device is
 * refused before it is opened (it could block), a size cap is checked before
 * reading, a file that grows while it is read is refused rather than cut, and a
 * written file appears whole or not at all (temp file, fsync, rename, directory
 * fsync).
 */
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { effectsOf, Flags, Fs, type Handle } from "./Fs.js"
import { closeQuietly, expectIdentity, lstatOrMissing, readWhole, removeOwn, run, step, writeAll } from "./internal/io.js"
import * as Paths from "./internal/paths.js"

/** Reads a whole regular file of at most `maxBytes` bytes. */
export const readBytes = (path: string, maxBytes: number): Effect.Effect<Uint8Array, SessionError, Fs> =>
  Effect.flatMap(readWhole(Path.resolve(path), maxBytes, "file"), ({ bytes, handle }) => Effect.as(closeQuietly(handle), bytes))
    .pipe(Effect.uninterruptible)

/**
 * Writes `text` (UTF-8) to `path`, replacing a regular file that is there: the path then holds
 * either the old bytes or all of the new ones, durably. A directory, symlink or other non-regular
 * file at the path is refused and left alone. The directories above it may be symlinks: like a
 * session's, the directory is resolved once (SPEC C3) and every later step uses the resolved one.
 */
export const writeFile = (path: string, text: string): Effect.Effect<void, SessionError, Fs> =>
  Effect.gen(function*() {
    const fs = effectsOf(yield* Fs)
    const target = yield* run(Paths.resolveSteps(path))
    const absolute = target.path
    // realpath resolves a regular file as well as a directory: ENOTDIR here is a parent that is a file.
    const existing = yield* lstatOrMissing("lstat", absolute, { ENOTDIR: "SESSION_NOT_REGULAR_FILE" })
    if (existing !== undefined && existing.kind !== "file") {
      return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${existing.kind}, not a regular file`, { path: absolute })
    }
    // ELOOP: the resolved directory was replaced by a link since it was resolved.
    const dirHandle = yield* step("open directory", fs.open(target.dir, Flags.directory), {
      ENOENT: "SESSION_NOT_FOUND",
      ENOTDIR: "SESSION_NOT_REGULAR_FILE",
      ELOOP: "SESSION_REPLACED"
    })
    yield* Effect.gen(function*() {
      const tmp = Paths.ownName(target, "tmp", Paths.nextSeq())
      const handle: Handle = yield* step("create temp", fs.open(tmp, Flags.createExclusive, existing?.mode ?? 0o644))
      yield* Effect.gen(function*() {
        const bytes = new TextEncoder().encode(text)
        yield* writeAll(handle, bytes, 0, 0)
        yield* step("fsync temp", fs.fsync(handle))
        const stat = yield* step("fstat temp", fs.fstat(handle))
        yield* expectIdentity("temp file", tmp, "file", stat)
        yield* step("rename", fs.rename(tmp, absolute))
        yield* step("fsync directory", fs.fsync(dirHandle))
      }).pipe(
        Effect.ensuring(closeQuietly(handle)),
        Effect.onError(() => removeOwn(tmp))
      )
    }).pipe(Effect.ensuring(closeQuietly(dirHandle)))
  }).pipe(Effect.uninterruptible)

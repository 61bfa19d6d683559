/**
 * Files that are not sessions: what an import reads and what an export writes.
 * The same care as for session files: a path is never followed through a
 * symlink, a FIFO or device is refused before it is opened (it could block),
 * a size cap is checked before reading, a file that grows while it is read is
 * refused rather than cut, and a written file appears whole or not at all (temp
 * file, fsync, rename, directory fsync).
 */
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { effectsOf, Flags, Fs, type Handle } from "./Fs.js"
import { closeQuietly, expectIdentity, lstatOrMissing, readWhole, removeOwn, step, writeAll } from "./internal/io.js"
import * as Owner from "./internal/owner.js"

/** Reads a whole regular file of at most `maxBytes` bytes. */
export const readBytes = (path: string, maxBytes: number): Effect.Effect<Uint8Array, SessionError, Fs> =>
  Effect.flatMap(readWhole(Path.resolve(path), maxBytes, "file"), ({ bytes, handle }) => Effect.as(closeQuietly(handle), bytes))
    .pipe(Effect.uninterruptible)

let written = 0

/**
 * Writes `text` (UTF-8) to `path`, replacing a regular file that is there: the path then holds
 * either the old bytes or all of the new ones, durably. A directory, symlink or other non-regular
 * file at the path is refused and left alone.
 */
export const writeFile = (path: string, text: string): Effect.Effect<void, SessionError, Fs> =>
  Effect.gen(function*() {
    const fs = effectsOf(yield* Fs)
    const absolute = Path.resolve(path)
    const dir = Path.dirname(absolute)
    const existing = yield* step("lstat", lstatOrMissing(absolute))
    if (existing !== undefined && existing.kind !== "file") {
      return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${existing.kind}, not a regular file`, { path: absolute })
    }
    const dirHandle = yield* step("open directory", fs.open(dir, Flags.directory), { ENOENT: "SESSION_NOT_FOUND", ENOTDIR: "SESSION_NOT_REGULAR_FILE" })
    yield* Effect.gen(function*() {
      const tmp = Path.join(dir, `.${Path.basename(absolute)}.tmp-${Owner.format(Owner.self)}-${++written}`)
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

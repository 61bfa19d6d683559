/**
 * Filesystem steps with their SPEC B4 meaning, as Effects: every `FsError`
 * becomes a `SessionError` that names the step, and identity checks compare
 * (dev, ino). The protocols themselves are in `steps.ts`; these are its helpers
 * for code that runs one step at a time.
 */
import * as Effect from "effect/Effect"
import { effectsOf, type FileId, Flags, Fs, type FsError, type Handle, sameFile, type Stat } from "../Fs.js"
import { type SessionError, type SessionErrorCode, sessionError } from "@session-tree/core/SessionError"
import * as Steps from "./steps.js"

/** Runs a step; its `FsError` becomes `SESSION_IO` unless `codes` maps the errno elsewhere. */
export const step = <A, R = never>(
  name: string,
  effect: Effect.Effect<A, FsError, R>,
  codes?: Partial<Record<string, SessionErrorCode>>
): Effect.Effect<A, SessionError, R> => Effect.mapError(effect, (e) => Steps.stepError(name, e, codes))

/** Runs a protocol of `steps.ts` on the `Fs` service in context. */
export const run = <A>(steps: Steps.Steps<A>): Effect.Effect<A, SessionError, Fs> => Effect.flatMap(Fs, (fs) => Steps.run(fs, steps))

/** Runs a protocol that catches every `FsError` itself and refuses nothing, so it cannot fail. */
const runQuietly = <A>(steps: Steps.Steps<A>): Effect.Effect<A, never, Fs> => Effect.orDie(run(steps))

/** lstat that answers `undefined` for a missing path; a failure is the step `name` (see `step`). */
export const lstatOrMissing = (
  name: string,
  path: string,
  codes?: Partial<Record<string, SessionErrorCode>>
): Effect.Effect<Stat | undefined, SessionError, Fs> => Effect.suspend(() => run(Steps.named(name, Steps.lstatOrMissing(path), codes)))

/** Fails with SESSION_REPLACED unless `path` is still a `kind` with identity `id`. */
export const expectIdentity = (what: string, path: string, kind: Stat["kind"], id: FileId): Effect.Effect<Stat, SessionError, Fs> =>
  Effect.suspend(() => run(Steps.expectIdentity(what, path, kind, id)))

/** Writes all bytes from `offset` at `position` in one call; a short count is a failure (the disk is likely full). */
export const writeAll = (handle: Handle, bytes: Uint8Array, offset: number, position: number): Effect.Effect<void, SessionError, Fs> =>
  Effect.suspend(() => run(Steps.writeAll(handle, bytes, offset, position)))

/** Best-effort removal of a name this operation created (see `Steps.removeOwn`). */
export const removeOwn = (path: string): Effect.Effect<boolean, never, Fs> => Effect.suspend(() => runQuietly(Steps.removeOwn(path)))

/** Closes, ignoring a failure (the kernel releases the descriptor even then). */
export const closeQuietly = (handle: Handle): Effect.Effect<void, never, Fs> =>
  Effect.suspend(() => runQuietly(Steps.closeQuietly(handle)))

/** A regular file read whole, with the descriptor it was read through. */
export interface Whole {
  readonly bytes: Uint8Array
  readonly handle: Handle
  readonly stat: Stat
}

/**
 * Reads the regular file at `path` whole, `maxBytes` at most: lstat first (refuse links,
 * directories, FIFOs, devices and oversize files before opening), then open with
 * O_NOFOLLOW | O_NONBLOCK and check through the handle that it is the same file. A file that
 * grew while it was read fails rather than give a prefix. The handle stays open for the caller;
 * on failure it is closed. `what` names the file in the SESSION_NOT_FOUND message.
 */
export const readWhole = (path: string, maxBytes: number, what: string): Effect.Effect<Whole, SessionError, Fs> =>
  Effect.gen(function*() {
    const fs = effectsOf(yield* Fs)
    const tooLarge = (size: number) =>
      sessionError("SESSION_FILE_TOO_LARGE", `the file holds ${size} bytes, more than ${maxBytes}`, { path })
    const before = yield* lstatOrMissing("lstat", path)
    if (before === undefined) return yield* sessionError("SESSION_NOT_FOUND", `no ${what} at this path`, { path })
    if (before.kind !== "file") {
      return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${before.kind}, not a regular file`, { path })
    }
    if (before.size > maxBytes) return yield* tooLarge(before.size)
    const handle = yield* step("open", fs.open(path, Flags.readNoFollow), {
      ELOOP: "SESSION_NOT_REGULAR_FILE",
      ENOENT: "SESSION_REPLACED"
    })
    return yield* Effect.gen(function*() {
      const stat = yield* step("fstat", fs.fstat(handle))
      if (stat.kind !== "file" || !sameFile(stat, before)) {
        return yield* sessionError("SESSION_REPLACED", "the file changed between lstat and open", { path })
      }
      if (stat.size > maxBytes) return yield* tooLarge(stat.size)
      // One byte of room past the size tells a file that grew after fstat from one that did not.
      const buffer = Buffer.allocUnsafe(Math.min(stat.size, maxBytes) + 1)
      let length = 0
      while (true) {
        const n = yield* step("read", fs.read(handle, buffer, length, buffer.length - length, length))
        if (n === 0) break
        length += n
        if (length === buffer.length) {
          if (length > maxBytes) return yield* tooLarge(length)
          return yield* sessionError("SESSION_REPLACED", "the file grew while it was read", { path })
        }
        // The size fstat gave, and no byte of the room past it: the end of the file, without a read of 0.
        if (length === stat.size) break
      }
      return { bytes: buffer.subarray(0, length), handle, stat }
    }).pipe(Effect.onError(() => closeQuietly(handle)))
  }).pipe(Effect.uninterruptible)

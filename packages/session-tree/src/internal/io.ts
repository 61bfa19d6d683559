/**
 * Filesystem steps with their SPEC B4 meaning: every `FsError` becomes a
 * `SessionError` that names the step, and identity checks compare (dev, ino).
 */
import * as Effect from "effect/Effect"
import { type FileId, Fs, type FsError, type Handle, sameFile, type Stat } from "../Fs.js"
import { type SessionError, type SessionErrorCode, sessionError } from "../SessionError.js"

/** The `SessionError` of a failed step: `SESSION_IO` unless `codes` maps the errno elsewhere. */
const stepError = (name: string, e: FsError, codes?: Partial<Record<string, SessionErrorCode>>): SessionError =>
  sessionError(codes?.[e.errno] ?? "SESSION_IO", `${name} failed: ${e.errno} (${e.op} ${e.path})`, {
    path: e.path,
    cause: e
  })

/** Runs a step; its `FsError` becomes `SESSION_IO` unless `codes` maps the errno elsewhere. */
export const step = <A, R = never>(
  name: string,
  effect: Effect.Effect<A, FsError, R>,
  codes?: Partial<Record<string, SessionErrorCode>>
): Effect.Effect<A, SessionError, R> => Effect.mapError(effect, (e) => stepError(name, e, codes))

/** lstat that answers `undefined` for a missing path. */
export const lstatOrMissing = (path: string): Effect.Effect<Stat | undefined, FsError, Fs> =>
  Effect.flatMap(Fs, (fs) =>
    fs.lstat(path).pipe(Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.succeed(undefined)))
  )

/**
 * Fails with SESSION_REPLACED unless `path` is still a `kind` with identity `id` (a missing path
 * included). One match instead of a chain of combinators: a commit makes eight of these checks.
 */
export const expectIdentity = (
  what: string,
  path: string,
  kind: Stat["kind"],
  id: FileId
): Effect.Effect<Stat, SessionError, Fs> =>
  Effect.flatMap(Fs, (fs) =>
    Effect.matchEffect(fs.lstat(path), {
      onFailure: (e) => Effect.fail(e.errno === "ENOENT" ? replaced(what, path) : stepError(`check ${what}`, e)),
      onSuccess: (stat) => stat.kind === kind && sameFile(stat, id) ? Effect.succeed(stat) : Effect.fail(replaced(what, path))
    }))

const replaced = (what: string, path: string): SessionError =>
  sessionError("SESSION_REPLACED", `the ${what} is no longer the one this store opened`, { path })

/** Writes all bytes at `position` in one call; a short count is a failure (the disk is likely full). */
export const writeAll = (
  handle: Handle,
  bytes: Uint8Array,
  offset: number,
  position: number
): Effect.Effect<void, SessionError, Fs> =>
  Effect.flatMap(Fs, (fs) =>
    Effect.flatMap(step("write", fs.write(handle, bytes, offset, bytes.length - offset, position)), (n) =>
      n === bytes.length - offset
        ? Effect.void
        : Effect.fail(
          sessionError("SESSION_IO", `write failed: wrote ${n} of ${bytes.length - offset} bytes`, { path: handle.path })
        ))
  )

/**
 * Best-effort removal of a name this operation created; true only when the unlink
 * succeeded. Even ENOENT counts as unproven: the name was ours a moment ago, so the
 * caller keeps it for a later retry, where ENOENT is then taken as gone.
 */
export const removeOwn = (path: string): Effect.Effect<boolean, never, Fs> =>
  Effect.flatMap(Fs, (fs) =>
    fs.unlink(path).pipe(
      Effect.as(true),
      Effect.orElseSucceed(() => false)
    )
  )

export const closeQuietly = (handle: Handle): Effect.Effect<void, never, Fs> =>
  Effect.flatMap(Fs, (fs) => Effect.ignore(fs.close(handle)))

/**
 * Filesystem steps with their SPEC B4 meaning, as Effects: every `FsError`
 * becomes a `SessionError` that names the step, and identity checks compare
 * (dev, ino). The protocols themselves are in `steps.ts`; these are its helpers
 * for code that runs one step at a time.
 */
import * as Effect from "effect/Effect"
import { effectsOf, type FileId, Fs, type FsError, type Handle, type Stat } from "../Fs.js"
import type { SessionError, SessionErrorCode } from "@session-tree/core/SessionError"
import * as Steps from "./steps.js"

/** Runs a step; its `FsError` becomes `SESSION_IO` unless `codes` maps the errno elsewhere. */
export const step = <A, R = never>(
  name: string,
  effect: Effect.Effect<A, FsError, R>,
  codes?: Partial<Record<string, SessionErrorCode>>
): Effect.Effect<A, SessionError, R> => Effect.mapError(effect, (e) => Steps.stepError(name, e, codes))

/** lstat that answers `undefined` for a missing path. */
export const lstatOrMissing = (path: string): Effect.Effect<Stat | undefined, FsError, Fs> =>
  Effect.flatMap(Fs, (fs) =>
    effectsOf(fs).lstat(path).pipe(Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.succeed(undefined)))
  )

const run = <A>(steps: Steps.Steps<A>): Effect.Effect<A, SessionError, Fs> => Effect.flatMap(Fs, (fs) => Steps.run(fs, steps))

/** Fails with SESSION_REPLACED unless `path` is still a `kind` with identity `id`. */
export const expectIdentity = (what: string, path: string, kind: Stat["kind"], id: FileId): Effect.Effect<Stat, SessionError, Fs> =>
  Effect.suspend(() => run(Steps.expectIdentity(what, path, kind, id)))

/** Writes all bytes from `offset` at `position` in one call; a short count is a failure (the disk is likely full). */
export const writeAll = (handle: Handle, bytes: Uint8Array, offset: number, position: number): Effect.Effect<void, SessionError, Fs> =>
  Effect.suspend(() => run(Steps.writeAll(handle, bytes, offset, position)))

/** Best-effort removal of a name this operation created (see `Steps.removeOwn`). */
export const removeOwn = (path: string): Effect.Effect<boolean, never, Fs> =>
  Effect.flatMap(Fs, (fs) => effectsOf(fs).unlink(path).pipe(Effect.as(true), Effect.orElseSucceed(() => false)))

/** Closes, ignoring a failure (the kernel releases the descriptor even then). */
export const closeQuietly = (handle: Handle): Effect.Effect<void, never, Fs> =>
  Effect.flatMap(Fs, (fs) => Effect.ignore(effectsOf(fs).close(handle)))

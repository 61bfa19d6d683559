/**
 * What a writer holds of its session file, and the resources its commits take
 * in scopes: descriptors, own names and the locks (the marker, an intent), each
 * acquired with its undo as its release.
 *
 * A release cannot fail, so an undo that cannot be proven (a marker that cannot
 * be removed, a file that cannot be cut back) says so in the writer's `Held`:
 * the lock stays for `recover`, and the commit fails with that `LockedError`
 * instead of its own failure (`provenOr`). Own names whose removal failed are
 * kept there too, to be removed before the next commit.
 */
import { isSessionError, type LockedError, sessionError } from "@session-tree/core/SessionError"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import type { FileId, FsService, Handle } from "../Fs.js"
import { closeQuietly, removeOwn, type WriteFailure } from "./io.js"
import type * as Paths from "./paths.js"

/** A generation this process holds open: the descriptor pins the inode, so its (dev, ino) cannot be reused. */
export interface OpenGeneration {
  readonly handle: Handle
  readonly id: FileId
  readonly size: number
  readonly mode: number
  /** Its modification time when this process last wrote or read it whole. */
  readonly mtimeNs: bigint
}

/** The session's directory, held open so commits can fsync it; the descriptor also pins its identity. */
export interface Directory {
  readonly handle: Handle
  readonly id: FileId
}

/** What the undo steps of a writer's commits leave to it: own names to remove, and whether one could not be proven. */
export interface Strays {
  /** Own names a removal failed for: removed before the next commit. */
  readonly strays: ReadonlyArray<string>
  /** Set when an undo could not be proven: its lock is kept for `recover`, and nothing more is committed. */
  readonly locked: LockedError | undefined
}

/** What a writer holds of its session file, as the steps of its commits leave it. */
export interface Held extends Strays {
  /** The generation it holds open: the one it last read or committed (after a rollback, as the rollback left it). */
  readonly base: OpenGeneration
}

export const held = (base: OpenGeneration, strays: ReadonlyArray<string> = []): Held => ({ base, strays, locked: undefined })

/** The failure of a commit: the `LockedError` an undo recorded in `state`, else its own. */
export const provenOr = <S extends Strays>(state: Ref.Ref<S>) => (failure: WriteFailure): Effect.Effect<never, WriteFailure> =>
  Effect.flatMap(Ref.get(state), ({ locked }) => Effect.fail(locked ?? failure))

/** Records that an undo could not be proven: the first such error is what the operation fails with. */
export const lock = <S extends Strays>(state: Ref.Ref<S>, error: LockedError): Effect.Effect<void> =>
  Ref.update(state, (h) => (h.locked !== undefined ? h : { ...h, locked: error }))

/** The SESSION_ROLLBACK_FAILED of a commit whose undo could not be proven: `reason`, and what is kept for `recover`. */
export const rollbackFailed = (
  paths: Paths.SessionPaths,
  kept: string,
  reason: string,
  failure: Exit.Exit<unknown, unknown>,
  cause?: unknown
): LockedError =>
  sessionError("SESSION_ROLLBACK_FAILED", `${reason}; ${kept} ${paths.marker} is kept (${describe(failure)})`, { path: paths.path, cause })

const describe = (exit: Exit.Exit<unknown, unknown>): string =>
  Exit.isSuccess(exit)
    ? "done"
    : Option.match(Cause.failureOption(exit.cause), { onNone: () => "interrupted", onSome: (e) => (isSessionError(e) ? e.message : String(e)) })

/** Whether an undo has already failed to prove itself: later undos then keep what they would remove. */
export const isLocked = <S extends Strays>(state: Ref.Ref<S>): Effect.Effect<boolean> => Effect.map(Ref.get(state), (h) => h.locked !== undefined)

/** Removes the own name `name`; one that cannot be removed is kept for the next commit to remove, unless the writer is locked. */
export const drop = <S extends Strays>(fs: FsService, state: Ref.Ref<S>, name: string): Effect.Effect<void> =>
  Effect.flatMap(removeOwn(fs, name), (gone) =>
    gone ? Effect.void : Ref.update(state, (h) => (h.locked !== undefined ? h : { ...h, strays: [...h.strays, name] })))

/** Removes the names earlier commits could not; those that still cannot be removed stay (a missing one is gone). */
export const dropStrays = <S extends Strays>(fs: FsService, state: Ref.Ref<S>): Effect.Effect<void> =>
  Effect.flatMap(Ref.get(state), ({ strays }) =>
    strays.length === 0 ? Effect.void : Effect.flatMap(
      Effect.filter(strays, (name) => Effect.match(fs.unlink(name), { onFailure: (e) => e.errno !== "ENOENT", onSuccess: () => false })),
      (left) => Ref.update(state, (h) => ({ ...h, strays: left }))
    ))

/**
 * An own name made by `make` (a temp file, a link, a copy), removed when the scope closes: always
 * with `until: "end"`, else only when it closes with a failure (a name a later step takes away).
 */
export const ownName = <A, E, R, S extends Strays>(
  fs: FsService,
  state: Ref.Ref<S>,
  name: string,
  make: Effect.Effect<A, E, R>,
  until: "end" | "failure"
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.acquireRelease(make, (_, exit) => (until === "end" || Exit.isFailure(exit) ? drop(fs, state, name) : Effect.void))

/** A descriptor opened by `open`, closed when the scope closes: always with `until: "end"`, else only on a failure (the caller keeps it). */
export const descriptor = <E, R>(
  fs: FsService,
  open: Effect.Effect<Handle, E, R>,
  until: "end" | "failure"
): Effect.Effect<Handle, E, R | Scope.Scope> =>
  Effect.acquireRelease(open, (handle, exit) => (until === "end" || Exit.isFailure(exit) ? closeQuietly(fs, handle) : Effect.void))

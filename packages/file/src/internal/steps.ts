/**
 * Filesystem protocols written once, as generators of steps, and run either
 * as plain calls in one Effect (a `Blocking` service, the default) or step by
 * step through the service's Effects (an `Effects` service).
 *
 * A commit makes 17 filesystem calls when it writes the whole file and 21 when
 * it copies the current generation in the kernel (an append seen through
 * `Fs.intercept` shows one more, the close of the replaced generation), and an
 * Effect per call adds up to a noticeable part of a commit (BENCHMARKS.md). The protocol code is the
 * same either way: a test that intercepts a step, and so takes the Effect path,
 * runs the very code the plain path runs.
 *
 * Inside a protocol, a failed step throws its `FsError` and a refusal throws a
 * `SessionError`; anything else thrown is a defect.
 */
import * as Effect from "effect/Effect"
import { type FileId, type FsCalls, type FsEffects, FsError, type FsService, type Handle, type Stat, sameFile } from "../Fs.js"
import { SessionError, type SessionErrorCode, sessionError } from "@session-tree/core/SessionError"

type Op = keyof FsEffects

/** One filesystem call: the operation and its arguments, for either form of the service. */
export interface Step {
  readonly op: Op
  readonly args: ReadonlyArray<unknown>
}

type Call = (...args: ReadonlyArray<unknown>) => unknown

export type Steps<A> = Generator<Step, A, unknown>

type Input = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: unknown }

/**
 * Runs a protocol against `fs`: fails with the `SessionError` it throws, dies
 * with anything else it throws.
 */
export const run = <A>(fs: FsService, steps: Steps<A>): Effect.Effect<A, SessionError> => {
  const resume = (input: Input): Effect.Effect<A, SessionError> => {
    let next = input
    while (true) {
      let result: IteratorResult<Step, A>
      try {
        result = next.ok ? steps.next(next.value) : steps.throw(next.error)
      } catch (thrown) {
        return thrown instanceof SessionError ? Effect.fail(thrown) : Effect.die(thrown)
      }
      if (result.done) return Effect.succeed(result.value)
      const step = result.value
      if (fs._tag === "Effects") {
        return Effect.flatMap(
          Effect.either((fs.effects[step.op] as Call)(...step.args) as Effect.Effect<unknown, FsError>),
          (outcome) => resume(outcome._tag === "Right" ? { ok: true, value: outcome.right } : { ok: false, error: outcome.left })
        )
      }
      try {
        next = { ok: true, value: (fs.calls[step.op] as Call)(...step.args) }
      } catch (error) {
        next = { ok: false, error }
      }
    }
  }
  return Effect.suspend(() => resume({ ok: true, value: undefined }))
}

function* call<K extends Op>(op: K, ...args: Parameters<FsCalls[K]>): Steps<ReturnType<FsCalls[K]>> {
  return (yield { op, args }) as ReturnType<FsCalls[K]>
}

export const lstat = (path: string) => call("lstat", path)
export const open = (path: string, flags: number, mode?: number) => call("open", path, flags, mode)
export const fstat = (h: Handle) => call("fstat", h)
export const write = (h: Handle, buffer: Uint8Array, offset: number, length: number, position: number) =>
  call("write", h, buffer, offset, length, position)
export const fsync = (h: Handle) => call("fsync", h)
export const close = (h: Handle) => call("close", h)
export const link = (existing: string, newPath: string) => call("link", existing, newPath)
export const rename = (from: string, to: string) => call("rename", from, to)
export const unlink = (path: string) => call("unlink", path)
export const copyFile = (from: string, to: string) => call("copyFile", from, to)
export const readdir = (path: string) => call("readdir", path)
export const realpath = (path: string) => call("realpath", path)

/** The `SessionError` of a failed step: `SESSION_IO` unless `codes` maps the errno elsewhere. */
export const stepError = (name: string, e: FsError, codes?: Partial<Record<string, SessionErrorCode>>): SessionError =>
  sessionError(codes?.[e.errno] ?? "SESSION_IO", `${name} failed: ${e.errno} (${e.op} ${e.path})`, {
    path: e.path,
    cause: e
  })

/** Runs `steps`, naming a failed step as `name` (see `stepError`). */
export function* named<A>(name: string, steps: Steps<A>, codes?: Partial<Record<string, SessionErrorCode>>): Steps<A> {
  try {
    return yield* steps
  } catch (e) {
    throw e instanceof FsError ? stepError(name, e, codes) : e
  }
}

/** lstat that answers `undefined` for a missing path. */
export function* lstatOrMissing(path: string): Steps<Stat | undefined> {
  try {
    return yield* lstat(path)
  } catch (e) {
    if (e instanceof FsError && e.errno === "ENOENT") return undefined
    throw e
  }
}

const replaced = (what: string, path: string): SessionError =>
  sessionError("SESSION_REPLACED", `the ${what} is no longer the one this store opened`, { path })

/** Throws SESSION_REPLACED unless `path` is still a `kind` with identity `id` (a missing path included). */
export function* expectIdentity(what: string, path: string, kind: Stat["kind"], id: FileId): Steps<Stat> {
  const stat = yield* named(`check ${what}`, lstatOrMissing(path))
  if (stat === undefined || stat.kind !== kind || !sameFile(stat, id)) throw replaced(what, path)
  return stat
}

/** Writes all bytes from `offset` at `position` in one call; a short count is a failure (the disk is likely full). */
export function* writeAll(handle: Handle, bytes: Uint8Array, offset: number, position: number): Steps<void> {
  const n = yield* named("write", write(handle, bytes, offset, bytes.length - offset, position))
  if (n !== bytes.length - offset) {
    throw sessionError("SESSION_IO", `write failed: wrote ${n} of ${bytes.length - offset} bytes`, { path: handle.path })
  }
}

/**
 * Best-effort removal of a name this operation created; true only when the unlink
 * succeeded. Even ENOENT counts as unproven: the name was ours a moment ago, so the
 * caller keeps it for a later retry, where ENOENT is then taken as gone.
 */
export function* removeOwn(path: string): Steps<boolean> {
  try {
    yield* unlink(path)
    return true
  } catch (e) {
    if (e instanceof FsError) return false
    throw e
  }
}

export function* closeQuietly(handle: Handle): Steps<void> {
  try {
    yield* close(handle)
  } catch (e) {
    if (!(e instanceof FsError)) throw e
  }
}

/** Runs `steps` and reports whether they threw a `SessionError` (anything else is rethrown). */
export function* attempt(steps: Steps<void>): Steps<SessionError | undefined> {
  try {
    yield* steps
    return undefined
  } catch (e) {
    if (e instanceof SessionError) return e
    throw e
  }
}

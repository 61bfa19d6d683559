/**
 * The names a commit uses beside the session file `NAME`:
 * - `NAME.marker` — a hard link of the generation being replaced; its fixed name
 *   makes it the commit lock across processes, and its content the rollback copy;
 * - `NAME.tmp-OWNER-SEQ` — created first and removed last, it names the writer for
 *   the whole commit (see `owner.ts`); when the whole generation is written, it is
 *   the file written, and with the kernel copy it holds nothing;
 * - `NAME.next-OWNER-SEQ` — the file renamed onto `NAME`: a second link of the
 *   temp file when the whole generation is written (so the temp name survives the
 *   install), or the kernel copy of the current generation with the new lines
 *   written after it;
 * - `NAME.rollback-OWNER-SEQ` — a link of the marker renamed back onto `NAME`.
 */
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { Fs, FsError } from "../Fs.js"
import * as Owner from "./owner.js"
import * as Steps from "./steps.js"

export interface SessionPaths {
  readonly path: string
  readonly dir: string
  readonly base: string
  readonly marker: string
  /** Key of the in-process lock: the directory's identity plus the file name. */
  readonly lockKey: (dev: bigint, ino: bigint) => string
}

/**
 * The canonical path of the directory `dir`, every symlink on the way resolved (SPEC C3). Its
 * failure is typed: a missing directory, a path above that is not a directory, or an I/O error.
 */
export function* realDirectory(dir: string): Steps.Steps<string> {
  try {
    return yield* Steps.realpath(dir)
  } catch (e) {
    if (!(e instanceof FsError)) throw e
    throw e.errno === "ENOENT"
      ? sessionError("SESSION_NOT_FOUND", "the directory does not exist", { path: dir, cause: e })
      : e.errno === "ENOTDIR"
      ? sessionError("SESSION_NOT_REGULAR_FILE", "the parent path is not a directory", { path: dir, cause: e })
      : sessionError("SESSION_IO", `resolving the directory failed: ${e.errno}`, { path: dir, cause: e })
  }
}

/** The names of the file at `path`, made absolute, in its directory resolved by `realDirectory`. */
export function* resolveSteps(path: string): Steps.Steps<SessionPaths> {
  const absolute = Path.resolve(path)
  return at(yield* realDirectory(Path.dirname(absolute)), Path.basename(absolute))
}

/**
 * `resolveSteps` for many paths: each distinct directory is resolved by its first path, and
 * the paths after it in the same directory reuse that (a failed one is tried again).
 */
export const resolver = (): ((path: string) => Steps.Steps<SessionPaths>) => {
  const known = new Map<string, string>()
  return function*(path) {
    const absolute = Path.resolve(path)
    const dir = Path.dirname(absolute)
    let real = known.get(dir)
    if (real === undefined) {
      real = yield* realDirectory(dir)
      known.set(dir, real)
    }
    return at(real, Path.basename(absolute))
  }
}

/**
 * The names of the session file at `path`, made absolute, with its directory resolved once
 * (SPEC C3): the directories above the file may be reached through symlinks (macOS `/tmp`, a
 * linked home or project folder), the file itself never is. The store then pins that directory
 * by identity, so a symlink retargeted later cannot move it.
 */
export const resolve = (path: string): Effect.Effect<SessionPaths, SessionError, Fs> =>
  Effect.flatMap(Fs, (fs) => Steps.run(fs, resolveSteps(path)))

/** The names of the session file `base` in the directory `dir`, taken as they are. */
export const at = (dir: string, base: string): SessionPaths => {
  const absolute = Path.join(dir, base)
  return {
    path: absolute,
    dir,
    base,
    marker: Path.join(dir, `${base}.marker`),
    lockKey: (dev, ino) => `${dev}:${ino}/${base}`
  }
}

export type Kind = "tmp" | "next" | "rollback"

let seq = 0
export const ownName = (paths: SessionPaths, kind: Kind, n: number): string =>
  Path.join(paths.dir, `${paths.base}.${kind}-${Owner.format(Owner.self)}-${n}`)

export const nextSeq = (): number => ++seq

export interface Leftover {
  readonly name: string
  readonly kind: Kind
  readonly owner: Owner.Owner
}

/** Recognises the names a commit of `paths` may leave behind after a crash. */
export const parseLeftover = (paths: SessionPaths, name: string): Leftover | undefined => {
  const prefix = `${paths.base}.`
  if (!name.startsWith(prefix)) return undefined
  const m = /^(tmp|next|rollback)-(.+)-(\d+)$/.exec(name.slice(prefix.length))
  if (m === null) return undefined
  const owner = Owner.parse(m[2]!)
  return owner === undefined ? undefined : { name, kind: m[1] as Kind, owner }
}

export interface Leftovers {
  readonly all: ReadonlyArray<Leftover>
  /** The first whose writer may still be running (`Owner.isAlive`). */
  readonly live: Leftover | undefined
}

/**
 * The names a commit of `paths` may leave, as the directory lists them now, and one of a writer
 * that may still be running: a writer names itself with its temp file for the whole commit.
 */
export function* leftovers(paths: SessionPaths): Steps.Steps<Leftovers> {
  const all = (yield* Steps.readdir(paths.dir)).flatMap((name) => {
    const l = parseLeftover(paths, name)
    return l === undefined ? [] : [l]
  })
  return { all, live: all.find((l) => Owner.isAlive(l.owner)) }
}

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
 * - `NAME.rollback-OWNER-SEQ` — a link of the marker renamed back onto `NAME`;
 * - `NAME.deleted-OWNER-SEQ` — where a delete renames the file, to be removed once the
 *   marker is gone (see `delete.ts`).
 */
import { type InputError, type IoError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import type { FsError, FsService } from "../Fs.js"
import * as Owner from "./owner.js"

export interface SessionPaths {
  readonly path: string
  readonly dir: string
  readonly base: string
  readonly marker: string
  /** The session's blob directory, `NAME.blobs` (`docs/format.md`, "Blobs"). */
  readonly blobs: string
  /** Key of the in-process lock: the directory's identity plus the file name. */
  readonly lockKey: (dev: bigint, ino: bigint) => string
}

/**
 * The canonical path of the directory `dir`, every symlink on the way resolved (see
 * `docs/format.md`). Its failure is typed: a missing directory, a path above that is not a
 * directory, or an I/O error.
 */
export const realDirectory = (fs: FsService, dir: string): Effect.Effect<string, InputError | IoError> =>
  Effect.mapError(fs.realpath(dir), (e) =>
    e.errno === "ENOENT"
      ? sessionError("SESSION_NOT_FOUND", "the directory does not exist", { path: dir, cause: e })
      : e.errno === "ENOTDIR"
      ? sessionError("SESSION_NOT_REGULAR_FILE", "the parent path is not a directory", { path: dir, cause: e })
      : sessionError("SESSION_IO", `resolving the directory failed: ${e.errno}`, { path: dir, cause: e }))

/**
 * The names of the session file at `path`, made absolute, with its directory resolved once
 * (`realDirectory`): the directories above the file may be reached through symlinks (macOS
 * `/tmp`, a linked home or project folder), the file itself never is. The store then pins that
 * directory by identity, so a symlink retargeted later cannot move it.
 */
export const resolve = (fs: FsService, path: string): Effect.Effect<SessionPaths, InputError | IoError> =>
  Effect.suspend(() => {
    const absolute = Path.resolve(path)
    return Effect.map(realDirectory(fs, Path.dirname(absolute)), (dir) => at(dir, Path.basename(absolute)))
  })

/**
 * `resolve` for many paths: each distinct directory is resolved by its first path, and the
 * paths after it in the same directory reuse that (a failed one is tried again).
 */
export const resolver = (fs: FsService): ((path: string) => Effect.Effect<SessionPaths, InputError | IoError>) => {
  const known = new Map<string, string>()
  return (path) =>
    Effect.suspend(() => {
      const absolute = Path.resolve(path)
      const dir = Path.dirname(absolute)
      const real = known.get(dir)
      if (real !== undefined) return Effect.succeed(at(real, Path.basename(absolute)))
      return Effect.map(realDirectory(fs, dir), (resolved) => {
        known.set(dir, resolved)
        return at(resolved, Path.basename(absolute))
      })
    })
}

/** The names of the session file `base` in the directory `dir`, taken as they are. */
export const at = (dir: string, base: string): SessionPaths => {
  const absolute = Path.join(dir, base)
  return {
    path: absolute,
    dir,
    base,
    marker: Path.join(dir, `${base}.marker`),
    blobs: `${absolute}${BLOBS}`,
    lockKey: (dev, ino) => `${dev}:${ino}/${base}`
  }
}

/** What the name of a session's blob directory adds to the session file's: `NAME.blobs`. */
export const BLOBS = ".blobs"

export type Kind = "tmp" | "next" | "rollback" | "deleted"

/** The name of kind `kind` of this process beside the session file, numbered `n` (see `Owner.nextSeq`). */
export const ownName = (paths: SessionPaths, kind: Kind, n: number): string =>
  Path.join(paths.dir, `${paths.base}.${kind}-${Owner.selfName()}-${n}`)

/** A number no earlier name of this process holds. */
export const nextSeq: () => number = Owner.nextSeq

export interface Leftover {
  readonly name: string
  readonly kind: Kind
  readonly owner: Owner.Owner
}

/** Recognises the names a commit of `paths` may leave behind after a crash. */
export const parseLeftover = (paths: SessionPaths, name: string): Leftover | undefined => {
  const prefix = `${paths.base}.`
  if (!name.startsWith(prefix)) return undefined
  const m = /^(tmp|next|rollback|deleted)-(.+)-(\d+)$/.exec(name.slice(prefix.length))
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
export const leftovers = (fs: FsService, paths: SessionPaths): Effect.Effect<Leftovers, FsError> =>
  Effect.map(fs.readdir(paths.dir), (names) => {
    const all = names.flatMap((name) => {
      const l = parseLeftover(paths, name)
      return l === undefined ? [] : [l]
    })
    return { all, live: all.find((l) => Owner.isAlive(l.owner)) }
  })

/**
 * The names a commit uses beside the session file `NAME`:
 * - `NAME.marker` — a hard link of the generation being replaced; its fixed name
 *   makes it the commit lock across processes, and its content the rollback copy;
 * - `NAME.tmp-OWNER-SEQ` — the next generation being written; it lives for the
 *   whole commit and names its writer (see `owner.ts`);
 * - `NAME.next-OWNER-SEQ` — a second link of the temp file that is renamed onto
 *   `NAME`, so the temp name survives the install;
 * - `NAME.rollback-OWNER-SEQ` — a link of the marker renamed back onto `NAME`.
 */
import * as Path from "node:path"
import * as Owner from "./owner.js"

export interface SessionPaths {
  readonly path: string
  readonly dir: string
  readonly base: string
  readonly marker: string
  /** Key of the in-process lock: the directory's identity plus the file name. */
  readonly lockKey: (dev: bigint, ino: bigint) => string
}

/** The names of the session file at `path`, made absolute. */
export const resolve = (path: string): SessionPaths => {
  const absolute = Path.resolve(path)
  const dir = Path.dirname(absolute)
  const base = Path.basename(absolute)
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

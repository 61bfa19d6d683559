/**
 * An in-memory model of one POSIX directory and its files across a power loss,
 * replayed from a recorded trace (see trace.ts), that lists every on-disk state
 * a crash after any prefix of the trace may leave.
 *
 * What may survive a crash (the ordering rules; conservative on purpose):
 * - File data: what the last fsync of the file covered is durable. Bytes written
 *   since may reach the disk all, none, as any prefix (a cut at a byte offset),
 *   or as the new size filled with zeros (size metadata ahead of the data, which
 *   XFS and ext4 data=writeback can show).
 * - Directory entries: what the last fsync of the directory covered is durable.
 *   Every later create, link, rename and unlink in the directory may or may not
 *   survive, in ANY subset: without an fsync of the directory, Linux filesystems
 *   promise no order among them. A surviving step is applied as its effect on
 *   names, in trace order (create/link: name := inode; rename: target := inode
 *   and the source name removed; unlink: name removed). A surviving rename whose
 *   creating link did not survive is still applied: this over-approximates the
 *   real filesystem and can only add states, never hide one.
 * - An fsync of a file does not make its name durable (POSIX does not promise it).
 * - An inode that no surviving name reaches is gone. Reads, stats and closes
 *   change nothing; a failed step changed nothing.
 */
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import type { TraceEvent } from "./trace.js"

interface Inode {
  readonly ino: number
  durable: Uint8Array
  data: Uint8Array
  /** A symbolic link: its text is `data`, durable with its name (it lives in the inode, not in data blocks). */
  readonly symlink?: true
}

/** A directory step not yet covered by an fsync of the directory. */
interface DirOp {
  readonly step: string
  readonly set?: readonly [name: string, ino: number]
  readonly del?: string
}

export interface CrashFile {
  /** Hard links of one inode. */
  readonly names: ReadonlyArray<string>
  readonly bytes: Uint8Array
  /** A symbolic link whose text is `bytes`. */
  readonly symlink?: boolean
  /** Which version of the data: "durable", "all", "zeros" or "cut@N". */
  readonly data: string
}

export interface CrashState {
  readonly files: ReadonlyArray<CrashFile>
  /** Which pending directory steps survived, e.g. "link marker, rename next -> s.jsonl". */
  readonly survived: ReadonlyArray<string>
}

/**
 * "every": a cut at every byte offset of data not yet fsynced (files up to 8 KiB; past
 * that, the sampled points plus every 512th offset, or 8 KiB past 64 KiB). "sampled":
 * the first and last bytes, both sides of every newline and the middle of every line in
 * the first and last 8 KiB, and every 4 KiB page (64 KiB past 64 KiB).
 */
export type CutMode = "every" | "sampled"

const O_CREAT = NFS.constants.O_CREAT
const O_TRUNC = NFS.constants.O_TRUNC

/** A content key: length and SHA-1. */
export const digest = (bytes: Uint8Array): string => `${bytes.length}:${createHash("sha1").update(bytes).digest("base64")}`

const equalBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(a, b) === 0

export const cutPoints = (data: Uint8Array, mode: CutMode): Array<number> => {
  const n = data.length
  const dense = mode === "every"
  if (dense && n <= 8_192) return Array.from({ length: Math.max(0, n - 1) }, (_, i) => i + 1)
  const points = new Set<number>()
  const add = (k: number) => {
    if (k > 0 && k < n) points.add(k)
  }
  for (const k of [1, 2, n - 2, n - 1]) add(k)
  // Line boundaries and line middles within the first and the last 8 KiB (where a session's
  // header and its newest entries are); pages in between.
  let lineStart = 0
  for (let i = 0; i < n; i++) {
    if (data[i] === 0x0a) {
      if (i < 8_192 || i >= n - 8_192) {
        add(i)
        add(i + 1)
        add(i + 2)
        add(lineStart + ((i - lineStart) >> 1))
      }
      lineStart = i + 1
    }
  }
  const page = n <= 65_536 ? 4_096 : 65_536
  for (let k = page; k < n; k += page) add(k)
  if (dense) for (let k = 512; k < n; k += n <= 65_536 ? 512 : 8_192) add(k)
  return [...points].sort((a, b) => a - b)
}

export class Model {
  private nextIno = 1
  private readonly inodes = new Map<number, Inode>()
  /** The names as the running program sees them. */
  private readonly names = new Map<string, number>()
  /** The names an fsync of the directory made durable. */
  private durableNames = new Map<string, number>()
  private pending: Array<DirOp> = []
  private readonly fds = new Map<number, number | "dir">()

  private constructor(readonly dir: string) {}

  /** A model of `dir` as it is now, everything durable (tests fsync their setup). */
  static fromDirectory(dir: string): Model {
    const model = new Model(dir)
    const byIno = new Map<bigint, number>()
    for (const name of NFS.readdirSync(dir).sort()) {
      const full = Path.join(dir, name)
      const st = NFS.lstatSync(full, { bigint: true })
      if (st.isSymbolicLink()) {
        const text = Buffer.from(NFS.readlinkSync(full, "utf8"), "utf8")
        const ino = model.nextIno++
        model.inodes.set(ino, { ino, durable: text, data: text, symlink: true })
        model.names.set(name, ino)
        model.durableNames.set(name, ino)
        continue
      }
      if (!st.isFile()) throw new Error(`the model holds regular files and symbolic links only: ${full}`)
      let ino = byIno.get(st.ino)
      if (ino === undefined) {
        const bytes = NFS.readFileSync(full)
        ino = model.newInode(bytes, bytes)
        byIno.set(st.ino, ino)
      }
      model.names.set(name, ino)
      model.durableNames.set(name, ino)
    }
    return model
  }

  /** An independent copy, to replay the same trace twice. */
  clone(): Model {
    const copy = new Model(this.dir)
    copy.nextIno = this.nextIno
    for (const [ino, inode] of this.inodes) copy.inodes.set(ino, { ...inode })
    for (const [name, ino] of this.names) copy.names.set(name, ino)
    copy.durableNames = new Map(this.durableNames)
    copy.pending = [...this.pending]
    for (const [fd, ino] of this.fds) copy.fds.set(fd, ino)
    return copy
  }

  private newInode(durable: Uint8Array, data: Uint8Array): number {
    const ino = this.nextIno++
    this.inodes.set(ino, { ino, durable, data })
    return ino
  }

  private nameOf(path: string): string {
    if (Path.dirname(path) !== this.dir) throw new Error(`the trace touches ${path}, outside ${this.dir}`)
    return Path.basename(path)
  }

  private inodeAt(path: string): number | "dir" {
    if (path === this.dir) return "dir"
    const ino = this.names.get(this.nameOf(path))
    if (ino === undefined) throw new Error(`the model has no ${path}`)
    return ino
  }

  /** The handle's inode: from the open this trace recorded, else (opened before recording) by its path. */
  private inodeOf(fd: number, path: string): number | "dir" {
    return this.fds.get(fd) ?? this.inodeAt(path)
  }

  private dirStep(op: DirOp): void {
    if (op.del !== undefined) this.names.delete(op.del)
    if (op.set !== undefined) this.names.set(op.set[0], op.set[1])
    this.pending.push(op)
  }

  /** What the running program sees at `name` now (undefined: no such name). */
  current(name: string): Uint8Array | undefined {
    const ino = this.names.get(name)
    return ino === undefined ? undefined : this.inodes.get(ino)!.data
  }

  /** Replays one event; returns whether the state (volatile or durable) changed. */
  apply(event: TraceEvent): boolean {
    switch (event.op) {
      case "open": {
        if (event.path === this.dir) {
          this.fds.set(event.fd, "dir")
          return false
        }
        const name = this.nameOf(event.path)
        const existing = this.names.get(name)
        if (existing === undefined) {
          if ((event.flags & O_CREAT) === 0) throw new Error(`open of a missing ${name} succeeded`)
          const ino = this.newInode(new Uint8Array(0), new Uint8Array(0))
          this.dirStep({ step: `create ${name}`, set: [name, ino] })
          this.fds.set(event.fd, ino)
          return true
        }
        this.fds.set(event.fd, existing)
        if ((event.flags & O_TRUNC) !== 0) {
          this.inodes.get(existing)!.data = new Uint8Array(0)
          return true
        }
        return false
      }
      case "write": {
        const ino = this.inodeOf(event.fd, event.path)
        if (ino === "dir") throw new Error("write to a directory")
        const inode = this.inodes.get(ino)!
        const end = event.position + event.bytes.length
        const data = new Uint8Array(Math.max(end, inode.data.length))
        data.set(inode.data)
        data.set(event.bytes, event.position)
        inode.data = data
        return event.bytes.length > 0
      }
      case "ftruncate": {
        const ino = this.inodeOf(event.fd, event.path)
        if (ino === "dir") throw new Error("ftruncate of a directory")
        const inode = this.inodes.get(ino)!
        const data = new Uint8Array(event.length)
        data.set(inode.data.subarray(0, Math.min(event.length, inode.data.length)))
        const changed = !equalBytes(data, inode.data)
        inode.data = data
        return changed
      }
      case "fdatasync":
      case "fsync": {
        const ino = this.inodeOf(event.fd, event.path)
        if (ino === "dir") {
          const changed = this.pending.length > 0
          this.durableNames = new Map(this.names)
          this.pending = []
          return changed
        }
        const inode = this.inodes.get(ino)!
        const changed = !equalBytes(inode.durable, inode.data)
        inode.durable = inode.data
        return changed
      }
      case "close":
        this.fds.delete(event.fd)
        return false
      case "link": {
        const from = this.nameOf(event.path)
        const ino = this.names.get(from)
        if (ino === undefined) throw new Error(`link of a missing ${from} succeeded`)
        const to = this.nameOf(event.target)
        this.dirStep({ step: `link ${from} -> ${to}`, set: [to, ino] })
        return true
      }
      case "symlink": {
        const name = this.nameOf(event.path)
        if (this.names.has(name)) throw new Error(`symlink onto an existing ${name} succeeded`)
        const text = Buffer.from(event.text, "utf8")
        const ino = this.nextIno++
        this.inodes.set(ino, { ino, durable: text, data: text, symlink: true })
        this.dirStep({ step: `symlink ${name}`, set: [name, ino] })
        return true
      }
      case "rename": {
        const from = this.nameOf(event.path)
        const ino = this.names.get(from)
        if (ino === undefined) throw new Error(`rename of a missing ${from} succeeded`)
        const to = this.nameOf(event.target)
        // rename(2) of two links of one inode does nothing.
        if (this.names.get(to) === ino) return false
        this.dirStep({ step: `rename ${from} -> ${to}`, set: [to, ino], del: from })
        return true
      }
      case "unlink": {
        const name = this.nameOf(event.path)
        if (!this.names.has(name)) throw new Error(`unlink of a missing ${name} succeeded`)
        this.dirStep({ step: `unlink ${name}`, del: name })
        return true
      }
      case "copyFile": {
        // Node's copyFile: opens the target (created when missing, else truncated), then copies; no fsync.
        const src = this.inodeAt(event.path)
        if (src === "dir") throw new Error("copyFile of a directory")
        const data = this.inodes.get(src)!.data
        const to = this.nameOf(event.target)
        const existing = this.names.get(to)
        if (existing === undefined) {
          const ino = this.newInode(new Uint8Array(0), data)
          this.dirStep({ step: `create ${to} (copy)`, set: [to, ino] })
        } else {
          this.inodes.get(existing)!.data = data
        }
        return true
      }
      default:
        return false
    }
  }

  /** Number of directory steps not yet covered by an fsync of the directory. */
  get pendingSteps(): number {
    return this.pending.length
  }

  /** Every state a crash now may leave: each subset of pending directory steps × each version of unsynced data. */
  *crashStates(mode: CutMode): Generator<CrashState> {
    const n = this.pending.length
    if (n > 16) throw new Error(`${n} pending directory steps: too many subsets to enumerate`)
    const optionsOf = new Map<number, ReturnType<Model["dataOptions"]>>()
    for (let mask = 0; mask < 1 << n; mask++) {
      const names = new Map(this.durableNames)
      const survived: Array<string> = []
      for (let i = 0; i < n; i++) {
        if ((mask & (1 << i)) === 0) continue
        const op = this.pending[i]!
        if (op.del !== undefined) names.delete(op.del)
        if (op.set !== undefined) names.set(op.set[0], op.set[1])
        survived.push(op.step)
      }
      const byIno = new Map<number, Array<string>>()
      for (const [name, ino] of [...names].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
        const list = byIno.get(ino)
        if (list === undefined) byIno.set(ino, [name])
        else list.push(name)
      }
      const groups = [...byIno].map(([ino, linkNames]) => {
        let options = optionsOf.get(ino)
        if (options === undefined) {
          options = this.dataOptions(this.inodes.get(ino)!, mode)
          optionsOf.set(ino, options)
        }
        return { linkNames, options, symlink: this.inodes.get(ino)!.symlink === true }
      })
      // Cross product of the data versions of every reachable inode.
      const choice = groups.map(() => 0)
      for (;;) {
        yield {
          survived,
          files: groups.map((g, i) => ({ names: g.linkNames, symlink: g.symlink, ...g.options[choice[i]!]! }))
        }
        let i = 0
        while (i < groups.length && ++choice[i]! === groups[i]!.options.length) choice[i++] = 0
        if (i === groups.length) break
      }
    }
  }

  private dataOptions(inode: Inode, mode: CutMode): Array<{ readonly bytes: Uint8Array; readonly data: string }> {
    const { data, durable } = inode
    if (equalBytes(data, durable)) return [{ bytes: data, data: "durable" }]
    const options = [
      { bytes: durable, data: "durable" },
      { bytes: data, data: "all" }
    ]
    const zeros = new Uint8Array(data.length)
    zeros.set(durable.subarray(0, Math.min(durable.length, data.length)))
    options.push({ bytes: zeros, data: "zeros" })
    for (const k of cutPoints(data, mode)) {
      let bytes: Uint8Array
      if (k >= durable.length) bytes = data.subarray(0, k)
      else {
        bytes = new Uint8Array(durable.length)
        bytes.set(durable)
        bytes.set(data.subarray(0, k))
      }
      options.push({ bytes, data: `cut@${k}` })
    }
    // Distinct contents only: a cut can equal the durable bytes or another cut.
    const seen = new Set<string>()
    return options.filter((o) => {
      const key = digest(o.bytes)
      if (seen.has(key)) return false
      seen.add(key)
      return true
    })
  }
}

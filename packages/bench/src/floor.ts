/**
 * Durable appends with bare node:fs, no library and no Effect: the floors the
 * store's commit is compared with. Synchronous calls, so no thread-pool hop
 * either; what is left is the cost of the syscalls and the bytes themselves.
 */
import { Buffer } from "node:buffer"
import * as NFS from "node:fs"
import * as Path from "node:path"

const { O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_RDONLY, O_WRONLY } = NFS.constants
const COPY = NFS.constants.COPYFILE_EXCL | NFS.constants.COPYFILE_FICLONE

/** The canonical generation as a growable buffer: appending copies only the new line. */
export class Bytes {
  private buffer: Buffer
  length: number
  constructor(initial: Uint8Array) {
    this.buffer = Buffer.allocUnsafe(Math.max(initial.length * 2, 4096))
    this.buffer.set(initial)
    this.length = initial.length
  }
  append(line: Uint8Array): void {
    if (this.length + line.length > this.buffer.length) {
      const grown = Buffer.allocUnsafe((this.length + line.length) * 2)
      this.buffer.copy(grown, 0, 0, this.length)
      this.buffer = grown
    }
    this.buffer.set(line, this.length)
    this.length += line.length
  }
  view(): Buffer {
    return this.buffer.subarray(0, this.length)
  }
}

const lstat = (path: string) => NFS.lstatSync(path, { bigint: true })
const sameId = (a: NFS.BigIntStats, b: NFS.BigIntStats) => a.dev === b.dev && a.ino === b.ino

/**
 * The store's commit protocol step by step (see internal/generation.ts): the
 * same files, links, renames, identity checks and fsyncs, and the kernel copy
 * of the current generation when `kernelCopy` is set.
 */
export class ProtocolFloor {
  private readonly dir: string
  private readonly marker: string
  private readonly dirFd: number
  private readonly dirId: NFS.BigIntStats
  private fd: number
  private id: NFS.BigIntStats
  private seq = 0
  readonly bytes: Bytes

  constructor(readonly path: string) {
    this.dir = Path.dirname(path)
    this.marker = `${path}.marker`
    this.dirFd = NFS.openSync(this.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    this.dirId = NFS.fstatSync(this.dirFd, { bigint: true })
    this.fd = NFS.openSync(path, O_RDONLY | O_NOFOLLOW)
    this.id = NFS.fstatSync(this.fd, { bigint: true })
    this.bytes = new Bytes(NFS.readFileSync(path))
  }

  /** Appends `line` and commits the whole next generation durably. */
  append(line: Uint8Array, kernelCopy: boolean): void {
    const prefix = this.bytes.length
    this.bytes.append(line)
    const bytes = this.bytes.view()
    const n = ++this.seq
    const tmp = `${this.path}.tmp-floor-${n}`
    const next = `${this.path}.next-floor-${n}`
    check(sameId(lstat(this.dir), this.dirId) && sameId(lstat(this.path), this.id))
    const tmpFd = NFS.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
    const tmpId = NFS.fstatSync(tmpFd, { bigint: true })
    NFS.linkSync(this.path, this.marker)
    check(sameId(lstat(this.marker), this.id))
    check(sameId(lstat(this.dir), this.dirId))
    let dataFd = tmpFd
    let dataId = tmpId
    if (kernelCopy) {
      NFS.copyFileSync(this.marker, next, COPY)
      dataFd = NFS.openSync(next, O_WRONLY | O_NOFOLLOW)
      dataId = NFS.fstatSync(dataFd, { bigint: true })
      check(sameId(lstat(next), dataId))
      NFS.writeSync(dataFd, bytes, prefix, bytes.length - prefix, prefix)
      NFS.fsyncSync(dataFd)
      check(sameId(lstat(next), dataId))
    } else {
      NFS.writeSync(tmpFd, bytes, 0, bytes.length, 0)
      NFS.fsyncSync(tmpFd)
      check(sameId(lstat(tmp), tmpId))
      NFS.linkSync(tmp, next)
    }
    NFS.renameSync(next, this.path)
    check(sameId(lstat(this.path), dataId))
    check(sameId(lstat(this.dir), this.dirId))
    NFS.fsyncSync(this.dirFd)
    NFS.unlinkSync(this.marker)
    if (dataFd !== tmpFd) NFS.closeSync(tmpFd)
    NFS.unlinkSync(tmp)
    NFS.closeSync(this.fd)
    this.fd = dataFd
    this.id = dataId
  }

  close(): void {
    NFS.closeSync(this.fd)
    NFS.closeSync(this.dirFd)
  }
}

/** The least a durable whole-file replace can do: write a temp file, fsync it, rename it, fsync the directory. */
export class MinimalFloor {
  private readonly dirFd: number
  private seq = 0
  readonly bytes: Bytes

  constructor(readonly path: string) {
    this.dirFd = NFS.openSync(Path.dirname(path), O_RDONLY | O_DIRECTORY)
    this.bytes = new Bytes(NFS.readFileSync(path))
  }

  append(line: Uint8Array): void {
    this.bytes.append(line)
    const bytes = this.bytes.view()
    const tmp = `${this.path}.tmp-min-${++this.seq}`
    const fd = NFS.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL, 0o600)
    NFS.writeSync(fd, bytes, 0, bytes.length, 0)
    NFS.fsyncSync(fd)
    NFS.closeSync(fd)
    NFS.renameSync(tmp, this.path)
    NFS.fsyncSync(this.dirFd)
  }

  close(): void {
    NFS.closeSync(this.dirFd)
  }
}

const check = (ok: boolean): void => {
  if (!ok) throw new Error("identity check failed")
}

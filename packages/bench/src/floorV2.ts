/**
 * Floors of the version-2 append on files, in bare node:fs with synchronous
 * calls: what the store's append is compared with.
 */
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"

const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY, O_WRONLY } = NFS.constants

/** The least a durable append can do: one `write` of the bytes at the end of a file held open, then `fdatasync`. */
export class SyncFloor {
  private readonly fd: number
  private end: number

  constructor(readonly path: string) {
    this.fd = NFS.openSync(path, O_WRONLY | O_NOFOLLOW)
    this.end = NFS.fstatSync(this.fd).size
  }

  append(bytes: Uint8Array): void {
    NFS.writeSync(this.fd, bytes, 0, bytes.length, this.end)
    NFS.fdatasyncSync(this.fd)
    this.end += bytes.length
  }

  close(): void {
    NFS.closeSync(this.fd)
  }
}

/**
 * The version-2 append protocol step by step (see the file journal's
 * `internal/append.ts`): the intent, a symbolic link at the session's marker
 * name whose text holds the committed end, the new end, the batch's SHA-256
 * and the writer, created exclusively (it is the lock); the directory and the
 * file checked to be the ones held (and the file unchanged: same size and
 * modification time); the directory synced, which makes the intent durable;
 * the batch written at the committed end and made durable, its size checked,
 * the directory and the file checked again; the intent removed.
 */
export class AppendFloor {
  private readonly marker: string
  private readonly fd: number
  private readonly dirFd: number
  private readonly dirId: NFS.BigIntStats
  private readonly id: NFS.BigIntStats
  private mtimeNs: bigint
  private seq = 0
  /** The committed end. */
  end: number

  constructor(readonly path: string) {
    this.marker = `${path}.marker`
    this.dirFd = NFS.openSync(Path.dirname(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    this.dirId = NFS.fstatSync(this.dirFd, { bigint: true })
    this.fd = NFS.openSync(path, O_WRONLY | O_NOFOLLOW)
    this.id = NFS.fstatSync(this.fd, { bigint: true })
    this.end = Number(this.id.size)
    this.mtimeNs = this.id.mtimeNs
  }

  append(batch: Uint8Array): void {
    const from = this.end
    const to = from + batch.length
    const hash = createHash("sha256").update(batch).digest("hex")
    NFS.symlinkSync(`session-tree-append-1:${from}:${to}:${hash}:${OWNER}:${++this.seq}`, this.marker)
    check(sameId(NFS.lstatSync(Path.dirname(this.path), { bigint: true }), this.dirId))
    const file = NFS.lstatSync(this.path, { bigint: true })
    check(sameId(file, this.id) && Number(file.size) === from && file.mtimeNs === this.mtimeNs)
    NFS.fsyncSync(this.dirFd)
    NFS.writeSync(this.fd, batch, 0, batch.length, from)
    NFS.fdatasyncSync(this.fd)
    const after = NFS.fstatSync(this.fd, { bigint: true })
    check(Number(after.size) === to)
    check(sameId(NFS.lstatSync(Path.dirname(this.path), { bigint: true }), this.dirId) && sameId(NFS.lstatSync(this.path, { bigint: true }), this.id))
    NFS.unlinkSync(this.marker)
    this.end = to
    this.mtimeNs = after.mtimeNs
  }

  close(): void {
    NFS.closeSync(this.fd)
    NFS.closeSync(this.dirFd)
  }
}

const OWNER = `00000000-${process.pid}-0`

const sameId = (a: NFS.BigIntStats, b: NFS.BigIntStats) => a.dev === b.dev && a.ino === b.ino

const check = (ok: boolean): void => {
  if (!ok) throw new Error("identity check failed")
}

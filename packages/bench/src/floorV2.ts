/**
 * Floors of the version-2 append on files, in bare node:fs with synchronous
 * calls: what the store's append is compared with.
 */
import { Buffer } from "node:buffer"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"

const { O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_RDONLY, O_WRONLY } = NFS.constants

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
 * The version-2 append protocol step by step: an intent file (the session's
 * marker name) created exclusively, holding the committed end, the new end and
 * the batch's SHA-256, made durable with its directory entry; the batch written
 * at the committed end and made durable; the intent file removed.
 */
export class AppendFloor {
  private readonly marker: string
  private readonly fd: number
  private readonly dirFd: number
  /** The committed end. */
  end: number

  constructor(readonly path: string) {
    this.marker = `${path}.marker`
    this.dirFd = NFS.openSync(Path.dirname(path), O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    this.fd = NFS.openSync(path, O_WRONLY | O_NOFOLLOW)
    this.end = NFS.fstatSync(this.fd).size
  }

  append(batch: Uint8Array): void {
    const from = this.end
    const to = from + batch.length
    const hash = createHash("sha256").update(batch).digest("hex")
    const intent = NFS.openSync(this.marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
    try {
      NFS.writeSync(intent, Buffer.from(JSON.stringify({ from, to, sha256: hash }) + "\n", "utf8"))
      NFS.fdatasyncSync(intent)
    } finally {
      NFS.closeSync(intent)
    }
    NFS.fsyncSync(this.dirFd)
    NFS.writeSync(this.fd, batch, 0, batch.length, from)
    NFS.fdatasyncSync(this.fd)
    NFS.unlinkSync(this.marker)
    this.end = to
  }

  close(): void {
    NFS.closeSync(this.fd)
    NFS.closeSync(this.dirFd)
  }
}

/**
 * Recording the filesystem steps of the store with their arguments and results.
 *
 * `Fs.intercept` hands its `around` a `Step` (op, path, target, length) but not the
 * bytes of a write, its position or the flags of an open, which a crash model needs.
 * So the recorder wraps the service exactly as `intercept` does and keeps those too;
 * the store cannot tell the difference (it only sees an `FsService`). A recorder can
 * sit under `Fs.intercept` to combine recording with fault injection: a step that the
 * interceptor fails without running never reaches the recorder, as it never reached
 * the disk.
 */
import * as Effect from "effect/Effect"
import type { FsError, FsService, Handle } from "../../src/Fs.js"

export type TraceEvent =
  | { readonly op: "open"; readonly path: string; readonly flags: number; readonly fd: number }
  | { readonly op: "write"; readonly path: string; readonly fd: number; readonly position: number; readonly bytes: Uint8Array }
  | { readonly op: "fsync"; readonly path: string; readonly fd: number }
  /** Data and size durable: for this model, what an fsync of the file makes durable. */
  | { readonly op: "fdatasync"; readonly path: string; readonly fd: number }
  | { readonly op: "ftruncate"; readonly path: string; readonly fd: number; readonly length: number }
  | { readonly op: "close"; readonly path: string; readonly fd: number }
  | { readonly op: "link"; readonly path: string; readonly target: string }
  /** A symbolic link created at `path` holding `text`. */
  | { readonly op: "symlink"; readonly path: string; readonly text: string }
  | { readonly op: "rename"; readonly path: string; readonly target: string }
  | { readonly op: "unlink"; readonly path: string }
  | { readonly op: "copyFile"; readonly path: string; readonly target: string }
  | { readonly op: "lstat" | "fstat" | "read" | "readdir" | "realpath" | "readlink"; readonly path: string }
  /** A step that failed: it changed nothing. */
  | { readonly op: "failed"; readonly step: string; readonly path: string; readonly errno: string }
  /**
   * Not a filesystem step: the program reached a point where a promise was made
   * (an append resolved, or failed and reported the previous generation intact).
   * From here on only the generation at the path, or a later one, may survive a crash.
   */
  | { readonly op: "settled"; readonly label: string }

export interface Recorder {
  readonly fs: FsService
  readonly events: Array<TraceEvent>
  /** Steps are recorded only while this is true. */
  recording: boolean
  readonly mark: (label: string) => void
}

export const recorder = (service: FsService): Recorder => {
  const base = service
  const events: Array<TraceEvent> = []
  const self: Recorder = {
    fs: undefined as unknown as FsService,
    events,
    recording: false,
    mark: (label) => {
      if (self.recording) events.push({ op: "settled", label })
    }
  }
  const push = (event: TraceEvent) => {
    if (self.recording) events.push(event)
  }
  const rec = <A>(effect: Effect.Effect<A, FsError>, step: string, path: string, done: (a: A) => TraceEvent | undefined) =>
    effect.pipe(
      Effect.tap((a) => Effect.sync(() => {
        const event = done(a)
        if (event !== undefined) push(event)
      })),
      Effect.tapError((e) => Effect.sync(() => push({ op: "failed", step, path, errno: e.errno })))
    )
  const fs: FsService = {
    lstat: (path) => rec(base.lstat(path), "lstat", path, () => ({ op: "lstat", path })),
    open: (path, flags, mode) => rec(base.open(path, flags, mode), "open", path, (h: Handle) => ({ op: "open", path, flags, fd: h.fd })),
    fstat: (h) => rec(base.fstat(h), "fstat", h.path, () => ({ op: "fstat", path: h.path })),
    read: (h, b, o, l, p) => rec(base.read(h, b, o, l, p), "read", h.path, () => ({ op: "read", path: h.path })),
    write: (h, buffer, offset, length, position) =>
      rec(base.write(h, buffer, offset, length, position), "write", h.path, (n: number) => ({
        op: "write",
        path: h.path,
        fd: h.fd,
        position,
        // What the kernel took: the first `n` bytes of the request.
        bytes: Uint8Array.prototype.slice.call(buffer, offset, offset + n)
      })),
    fsync: (h) => rec(base.fsync(h), "fsync", h.path, () => ({ op: "fsync", path: h.path, fd: h.fd })),
    fdatasync: (h) => rec(base.fdatasync(h), "fdatasync", h.path, () => ({ op: "fdatasync", path: h.path, fd: h.fd })),
    ftruncate: (h, length) =>
      rec(base.ftruncate(h, length), "ftruncate", h.path, () => ({ op: "ftruncate", path: h.path, fd: h.fd, length })),
    close: (h) => rec(base.close(h), "close", h.path, () => ({ op: "close", path: h.path, fd: h.fd })),
    closeDetached: (h) => rec(base.closeDetached(h), "close", h.path, () => ({ op: "close", path: h.path, fd: h.fd })),
    link: (existing, newPath) => rec(base.link(existing, newPath), "link", existing, () => ({ op: "link", path: existing, target: newPath })),
    rename: (from, to) => rec(base.rename(from, to), "rename", from, () => ({ op: "rename", path: from, target: to })),
    symlink: (text, path) => rec(base.symlink(text, path), "symlink", path, () => ({ op: "symlink", path, text })),
    readlink: (path) => rec(base.readlink(path), "readlink", path, () => ({ op: "readlink", path })),
    unlink: (path) => rec(base.unlink(path), "unlink", path, () => ({ op: "unlink", path })),
    readdir: (path) => rec(base.readdir(path), "readdir", path, () => ({ op: "readdir", path })),
    lstatAll: (dir, names) => rec(base.lstatAll(dir, names), "lstat", dir, () => ({ op: "lstat", path: dir })),
    // The crash model holds files only: a removed directory is not one of its events.
    rmdir: (path) => rec(base.rmdir(path), "rmdir", path, () => undefined),
    realpath: (path) => rec(base.realpath(path), "realpath", path, () => ({ op: "realpath", path })),
    copyFile: (from, to) => rec(base.copyFile(from, to), "copyFile", from, () => ({ op: "copyFile", path: from, target: to })),
    // A blob directory is made before any commit that needs it; the crash model does not cover blobs.
    mkdir: (path, mode) => base.mkdir(path, mode)
  }
  ;(self as { fs: FsService }).fs = fs
  return self
}

/** One line per event, for failure messages and the log. */
export const describe = (event: TraceEvent, dir: string): string => {
  const rel = (p: string) => (p.startsWith(dir + "/") ? p.slice(dir.length + 1) : p === dir ? "<dir>" : p)
  switch (event.op) {
    case "open":
      return `open ${rel(event.path)} flags=0x${event.flags.toString(16)} -> fd ${event.fd}`
    case "write":
      return `write fd ${event.fd} (${rel(event.path)}) ${event.bytes.length} bytes @${event.position}`
    case "fsync":
    case "fdatasync":
    case "close":
      return `${event.op} fd ${event.fd} (${rel(event.path)})`
    case "ftruncate":
      return `ftruncate fd ${event.fd} (${rel(event.path)}) to ${event.length}`
    case "link":
    case "rename":
    case "copyFile":
      return `${event.op} ${rel(event.path)} -> ${rel(event.target)}`
    case "symlink":
      return `symlink ${rel(event.path)} (${event.text.length} characters)`
    case "failed":
      return `failed ${event.step} ${rel(event.path)}: ${event.errno}`
    case "settled":
      return `-- settled: ${event.label}`
    default:
      return `${event.op} ${rel(event.path)}`
  }
}

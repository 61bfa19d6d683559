/**
 * The one filesystem service every step of the store goes through.
 *
 * `@effect/platform`'s FileSystem has no lstat, no O_NOFOLLOW and blocks on a
 * FIFO, so the store uses this small wrapper of `node:fs` instead. Because every
 * step is a named operation of one injectable service, tests can fail, delay,
 * shorten or record any single step (see `intercept`).
 *
 * `node` (the default) waits for each step synchronously, as the caller must
 * wait for it anyway: a round trip through Node's thread pool costs more than
 * most steps take. The one step nobody waits for, the close that frees a
 * replaced generation's blocks, goes to the thread pool (`closeDetached`).
 * `threadPool` runs every step there, so the event loop is never held while
 * the disk works: for servers holding many sessions, and for network mounts.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"

/**
 * A failed filesystem step: its name, its path and the errno.
 *
 * @since 0.1.0
 * @category errors
 */
export class FsError extends Schema.TaggedError<FsError>("@session-tree/FsError")("FsError", {
  op: Schema.String,
  path: Schema.String,
  /** The errno code (`EIO`, `ENOENT`, …) or `SHORT_WRITE`. */
  errno: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `${this.op} ${this.path}: ${this.errno}`
  }
}

/**
 * The identity of a file: device and inode, compared as a pair.
 *
 * @since 0.1.0
 * @category models
 */
export interface FileId {
  readonly dev: bigint
  readonly ino: bigint
}

/**
 * What lstat and fstat tell of a file.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stat extends FileId {
  readonly size: number
  readonly nlink: number
  /** Permission bits only. */
  readonly mode: number
  /** The owner's user ID. */
  readonly uid: number
  /** Modification time in nanoseconds: a link or rename leaves it alone, a write in place does not. */
  readonly mtimeNs: bigint
  /** Status change time in nanoseconds: any change to the inode, a link or a rename included. */
  readonly ctimeNs: bigint
  readonly kind: "file" | "directory" | "symlink" | "other"
}

/**
 * What `lstatAll` tells of a name: its kind and size.
 *
 * @since 0.1.0
 * @category models
 */
export interface Entry {
  readonly kind: Stat["kind"]
  readonly size: number
}

/**
 * An open descriptor, remembering the path it was opened by so every step can be named.
 *
 * @since 0.1.0
 * @category models
 */
export interface Handle {
  readonly fd: number
  readonly path: string
}

/**
 * Whether two identities name the same file.
 *
 * @since 0.1.0
 * @category utils
 */
export const sameFile = (a: FileId, b: FileId): boolean => a.dev === b.dev && a.ino === b.ino

/**
 * The open flags of the store's steps.
 *
 * @since 0.1.0
 * @category constants
 */
export const Flags = {
  readNoFollow: NFS.constants.O_RDONLY | NFS.constants.O_NOFOLLOW | NFS.constants.O_NONBLOCK,
  createExclusive: NFS.constants.O_WRONLY | NFS.constants.O_CREAT | NFS.constants.O_EXCL | NFS.constants.O_NOFOLLOW,
  directory: NFS.constants.O_RDONLY | NFS.constants.O_DIRECTORY | NFS.constants.O_NOFOLLOW,
  /** An existing regular file, for writing in place; never through a link, never blocking. */
  writeNoFollow: NFS.constants.O_WRONLY | NFS.constants.O_NOFOLLOW | NFS.constants.O_NONBLOCK,
  /** An own name (a copy this process made), for writing; never through a link. */
  writeOwn: NFS.constants.O_WRONLY | NFS.constants.O_NOFOLLOW,
  /** An existing regular file, for reading and writing in place (recovery); never through a link, never blocking. */
  readWriteNoFollow: NFS.constants.O_RDWR | NFS.constants.O_NOFOLLOW | NFS.constants.O_NONBLOCK
} as const

/**
 * The filesystem service: every step of the store as one Effect. A synchronous
 * implementation runs plain `node:fs` calls inside the Effect, a pooled one hands
 * them to Node's thread pool; either way a step replaced in a service (see
 * `intercept`) is the step that runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface FsService {
  readonly lstat: (path: string) => Effect.Effect<Stat, FsError>
  readonly open: (path: string, flags: number, mode?: number) => Effect.Effect<Handle, FsError>
  readonly fstat: (handle: Handle) => Effect.Effect<Stat, FsError>
  /** Reads up to `length` bytes at `position`; returns the count read (0 at end of file). */
  readonly read: (handle: Handle, buffer: Uint8Array, offset: number, length: number, position: number) => Effect.Effect<number, FsError>
  /** Writes once; returns the count written, which may be short. */
  readonly write: (handle: Handle, buffer: Uint8Array, offset: number, length: number, position: number) => Effect.Effect<number, FsError>
  readonly fsync: (handle: Handle) => Effect.Effect<void, FsError>
  /** Makes the file's data (and the size that reaches it) durable, without its other metadata. */
  readonly fdatasync: (handle: Handle) => Effect.Effect<void, FsError>
  /** Sets the file's size: the bytes past `length` are gone. */
  readonly ftruncate: (handle: Handle, length: number) => Effect.Effect<void, FsError>
  readonly close: (handle: Handle) => Effect.Effect<void, FsError>
  /**
   * The `close` of a descriptor nobody waits for: the last close of a file with no name left
   * frees its blocks, so an implementation that waits for its steps may run this one elsewhere.
   */
  readonly closeDetached: (handle: Handle) => Effect.Effect<void, FsError>
  readonly link: (existing: string, newPath: string) => Effect.Effect<void, FsError>
  /** Creates a symbolic link at `path` holding `target`; fails with EEXIST when the name is taken. */
  readonly symlink: (target: string, path: string) => Effect.Effect<void, FsError>
  /** The target a symbolic link holds. */
  readonly readlink: (path: string) => Effect.Effect<string, FsError>
  readonly rename: (from: string, to: string) => Effect.Effect<void, FsError>
  readonly unlink: (path: string) => Effect.Effect<void, FsError>
  readonly readdir: (path: string) => Effect.Effect<ReadonlyArray<string>, FsError>
  /**
   * The kind and size of each of `names` (file names, without a `/`) in directory `dir` (lstat:
   * never followed), undefined where nothing has that name: one step, so that checking hundreds
   * of names does not pay a step's cost for each.
   */
  readonly lstatAll: (dir: string, names: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Entry | undefined>, FsError>
  /** Removes an empty directory; never follows a symlink (one at `path` fails with ENOTDIR). */
  readonly rmdir: (path: string) => Effect.Effect<void, FsError>
  /** The canonical absolute path of `path`, every symlink on the way resolved. */
  readonly realpath: (path: string) => Effect.Effect<string, FsError>
  /** Kernel copy (reflink where the filesystem can, copy_file_range elsewhere); fails if `to` exists. */
  readonly copyFile: (from: string, to: string) => Effect.Effect<void, FsError>
  /** Creates a directory (not its parents); fails with EEXIST when anything is at `path`. */
  readonly mkdir: (path: string, mode: number) => Effect.Effect<void, FsError>
}

/**
 * The name of a step, as an interceptor sees it (`closeDetached` is a `close`).
 *
 * @since 0.1.0
 * @category models
 */
export type Op = Exclude<keyof FsService, "closeDetached">

/**
 * The filesystem service in the context.
 *
 * @since 0.1.0
 * @category tags
 */
export class Fs extends Context.Tag("@session-tree/Fs")<Fs, FsService>() {}

const toStat = (s: NFS.BigIntStats): Stat => ({
  dev: s.dev,
  ino: s.ino,
  size: Number(s.size),
  nlink: Number(s.nlink),
  mode: Number(s.mode) & 0o7777,
  uid: Number(s.uid),
  mtimeNs: s.mtimeNs,
  ctimeNs: s.ctimeNs,
  kind: kindOf(s)
})

const kindOf = (s: NFS.Stats | NFS.BigIntStats): Stat["kind"] =>
  s.isFile() ? "file" : s.isDirectory() ? "directory" : s.isSymbolicLink() ? "symlink" : "other"

const toEntry = (s: NFS.Stats | undefined): Entry | undefined => (s === undefined ? undefined : { kind: kindOf(s), size: s.size })

const NO_THROW = { throwIfNoEntry: false } as const

/**
 * `dir` normalized once, ending in one `/`: a file name appended to it is the path `Path.join`
 * would make, without normalizing again for each of hundreds of names.
 */
const prefixOf = (dir: string): string => {
  const base = Path.join(dir, ".")
  return base.endsWith("/") ? base : `${base}/`
}

// The fields are typed strings already: the constructor's validation (`true` skips it) would cost
// more than the failed call, and a missing name is an everyday answer of lstat, not a rare one.
const failure = (op: string, path: string, errno: string, cause?: unknown): FsError =>
  new FsError(cause === undefined ? { op, path, errno } : { op, path, errno, cause }, true)

const fail = (op: string, path: string) => (err: unknown) =>
  failure(op, path, (err as NodeJS.ErrnoException).code ?? "EUNKNOWN", err)

/** Wraps one callback-style `node:fs` call; errors become `FsError`s named after the step. */
const call = <A>(
  op: string,
  path: string,
  run: (cb: (err: NodeJS.ErrnoException | null, value?: A) => void) => void
): Effect.Effect<A, FsError> =>
  Effect.async<A, FsError>((resume) => {
    try {
      run((err, value) => resume(err ? Effect.fail(fail(op, path)(err)) : Effect.succeed(value as A)))
    } catch (err) {
      // Synchronous throws are argument errors: still a typed failure of the step.
      resume(Effect.fail(fail(op, path)(err)))
    }
  })

/** Runs one synchronous `node:fs` call; errors become `FsError`s named after the step. */
const sync = <A>(op: string, path: string, run: () => A): Effect.Effect<A, FsError> =>
  Effect.try({ try: run, catch: fail(op, path) })

const COPY_FLAGS = NFS.constants.COPYFILE_EXCL | NFS.constants.COPYFILE_FICLONE

const closeInPool = (h: Handle) => call<void>("close", h.path, (cb) => NFS.close(h.fd, cb))

/**
 * The real filesystem, every step waited for synchronously: the default. The caller waits for
 * each step anyway, and a round trip through the thread pool costs more than most steps take;
 * only the close nobody waits for (`closeDetached`) goes to the pool.
 *
 * @since 0.1.0
 * @category constructors
 */
export const node: FsService = {
  lstat: (path) =>
    Effect.suspend(() => {
      let s: NFS.BigIntStats | undefined
      try {
        s = NFS.lstatSync(path, { bigint: true, throwIfNoEntry: false })
      } catch (err) {
        return Effect.fail(fail("lstat", path)(err))
      }
      return s === undefined ? Effect.fail(failure("lstat", path, "ENOENT")) : Effect.succeed(toStat(s))
    }),
  open: (path, flags, mode = 0o644) => sync("open", path, () => ({ fd: NFS.openSync(path, flags, mode), path })),
  fstat: (h) => sync("fstat", h.path, () => toStat(NFS.fstatSync(h.fd, { bigint: true }))),
  read: (h, buffer, offset, length, position) => sync("read", h.path, () => NFS.readSync(h.fd, buffer, offset, length, position)),
  write: (h, buffer, offset, length, position) =>
    sync("write", h.path, () => NFS.writeSync(h.fd, buffer, offset, length, position)),
  fsync: (h) => sync("fsync", h.path, () => NFS.fsyncSync(h.fd)),
  fdatasync: (h) => sync("fdatasync", h.path, () => NFS.fdatasyncSync(h.fd)),
  ftruncate: (h, length) => sync("ftruncate", h.path, () => NFS.ftruncateSync(h.fd, length)),
  close: (h) => sync("close", h.path, () => NFS.closeSync(h.fd)),
  closeDetached: closeInPool,
  link: (existing, newPath) => sync("link", newPath, () => NFS.linkSync(existing, newPath)),
  symlink: (target, path) => sync("symlink", path, () => NFS.symlinkSync(target, path)),
  readlink: (path) => sync("readlink", path, () => NFS.readlinkSync(path, "utf8")),
  rename: (from, to) => sync("rename", to, () => NFS.renameSync(from, to)),
  unlink: (path) => sync("unlink", path, () => NFS.unlinkSync(path)),
  readdir: (path) => sync("readdir", path, () => NFS.readdirSync(path)),
  lstatAll: (dir, names) =>
    sync("lstat", dir, () => {
      const prefix = prefixOf(dir)
      const entries = new Array<Entry | undefined>(names.length)
      for (let i = 0; i < names.length; i++) entries[i] = toEntry(NFS.lstatSync(prefix + names[i], NO_THROW))
      return entries
    }),
  rmdir: (path) => sync("rmdir", path, () => NFS.rmdirSync(path)),
  realpath: (path) => sync("realpath", path, () => NFS.realpathSync.native(path)),
  copyFile: (from, to) => sync("copyFile", to, () => NFS.copyFileSync(from, to, COPY_FLAGS)),
  mkdir: (path, mode) => sync("mkdir", path, () => void NFS.mkdirSync(path, { mode }))
}

/**
 * Every step in the thread pool: the event loop is never held by a filesystem call.
 *
 * @since 0.1.0
 * @category constructors
 */
export const threadPool: FsService = {
  lstat: (path) => Effect.map(call<NFS.BigIntStats>("lstat", path, (cb) => NFS.lstat(path, { bigint: true }, cb)), toStat),
  open: (path, flags, mode = 0o644) =>
    Effect.map(call<number>("open", path, (cb) => NFS.open(path, flags, mode, cb)), (fd) => ({ fd, path })),
  fstat: (h) => Effect.map(call<NFS.BigIntStats>("fstat", h.path, (cb) => NFS.fstat(h.fd, { bigint: true }, cb)), toStat),
  read: (h, buffer, offset, length, position) =>
    call<number>("read", h.path, (cb) => NFS.read(h.fd, buffer, offset, length, position, cb)),
  write: (h, buffer, offset, length, position) =>
    call<number>("write", h.path, (cb) => NFS.write(h.fd, buffer, offset, length, position, cb)),
  fsync: (h) => call<void>("fsync", h.path, (cb) => NFS.fsync(h.fd, cb)),
  fdatasync: (h) => call<void>("fdatasync", h.path, (cb) => NFS.fdatasync(h.fd, cb)),
  ftruncate: (h, length) => call<void>("ftruncate", h.path, (cb) => NFS.ftruncate(h.fd, length, cb)),
  close: closeInPool,
  closeDetached: closeInPool,
  link: (existing, newPath) => call<void>("link", newPath, (cb) => NFS.link(existing, newPath, cb)),
  symlink: (target, path) => call<void>("symlink", path, (cb) => NFS.symlink(target, path, cb)),
  readlink: (path) => call<string>("readlink", path, (cb) => NFS.readlink(path, "utf8", cb)),
  rename: (from, to) => call<void>("rename", to, (cb) => NFS.rename(from, to, cb)),
  unlink: (path) => call<void>("unlink", path, (cb) => NFS.unlink(path, cb)),
  readdir: (path) => call<Array<string>>("readdir", path, (cb) => NFS.readdir(path, cb)),
  lstatAll: (dir, names) =>
    Effect.suspend(() => {
      const prefix = prefixOf(dir)
      return Effect.forEach(names, (name) => {
        const path = prefix + name
        return call<NFS.Stats>("lstat", path, (cb) => NFS.lstat(path, cb)).pipe(
          Effect.map(toEntry),
          Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.succeed(undefined))
        )
      }, { concurrency: 4 })
    }),
  rmdir: (path) => call<void>("rmdir", path, (cb) => NFS.rmdir(path, cb)),
  realpath: (path) => call<string>("realpath", path, (cb) => NFS.realpath.native(path, cb)),
  copyFile: (from, to) => call<void>("copyFile", to, (cb) => NFS.copyFile(from, to, COPY_FLAGS, cb)),
  mkdir: (path, mode) => call<void>("mkdir", path, (cb) => NFS.mkdir(path, { mode }, (err) => cb(err)))
}

/**
 * `fs.open` as a resource of the scope, as `@effect/platform`'s `FileSystem.open` gives a file: the
 * descriptor is closed when the scope closes (a failed close is ignored: the kernel releases the
 * descriptor even then).
 *
 * @since 0.1.0
 * @category resources
 */
export const open = (fs: FsService, path: string, flags: number, mode?: number): Effect.Effect<Handle, FsError, Scope.Scope> =>
  Effect.acquireRelease(fs.open(path, flags, mode), (handle) => Effect.ignore(fs.close(handle)))

/**
 * The real filesystem, every step waited for synchronously (`node`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Fs> = Layer.succeed(Fs, node)
/**
 * The real filesystem, every step in the thread pool (`threadPool`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerThreadPool: Layer.Layer<Fs> = Layer.succeed(Fs, threadPool)

/**
 * One step as seen by an interceptor: its name and the path(s) it touches.
 *
 * @since 0.1.0
 * @category testing
 */
export interface Step {
  readonly op: Op
  readonly path: string
  /** The second path of `link` (new name), `rename` (target) and `copyFile` (target); a `symlink`'s text. */
  readonly target?: string
  /** Bytes requested, for `write`; the new size, for `ftruncate`. */
  readonly length?: number
}

/**
 * An interceptor: receives each step and its real effect, and may run it, replace it, fail it or record it.
 *
 * @since 0.1.0
 * @category testing
 */
export type Around = <A>(step: Step, run: Effect.Effect<A, FsError>) => Effect.Effect<A, FsError>

/**
 * Wraps every operation of `fs` with `around`; a detached close is seen as the step `close`.
 *
 * @since 0.1.0
 * @category testing
 */
export const intercept = (fs: FsService, around: Around): FsService => ({
  lstat: (path) => around({ op: "lstat", path }, fs.lstat(path)),
  open: (path, flags, mode) => around({ op: "open", path }, fs.open(path, flags, mode)),
  fstat: (h) => around({ op: "fstat", path: h.path }, fs.fstat(h)),
  read: (h, b, o, l, p) => around({ op: "read", path: h.path, length: l }, fs.read(h, b, o, l, p)),
  write: (h, b, o, l, p) => around({ op: "write", path: h.path, length: l }, fs.write(h, b, o, l, p)),
  fsync: (h) => around({ op: "fsync", path: h.path }, fs.fsync(h)),
  fdatasync: (h) => around({ op: "fdatasync", path: h.path }, fs.fdatasync(h)),
  ftruncate: (h, length) => around({ op: "ftruncate", path: h.path, length }, fs.ftruncate(h, length)),
  close: (h) => around({ op: "close", path: h.path }, fs.close(h)),
  closeDetached: (h) => around({ op: "close", path: h.path }, fs.closeDetached(h)),
  link: (existing, newPath) => around({ op: "link", path: existing, target: newPath }, fs.link(existing, newPath)),
  symlink: (target, path) => around({ op: "symlink", path, target }, fs.symlink(target, path)),
  readlink: (path) => around({ op: "readlink", path }, fs.readlink(path)),
  rename: (from, to) => around({ op: "rename", path: from, target: to }, fs.rename(from, to)),
  unlink: (path) => around({ op: "unlink", path }, fs.unlink(path)),
  readdir: (path) => around({ op: "readdir", path }, fs.readdir(path)),
  lstatAll: (dir, names) => around({ op: "lstatAll", path: dir }, fs.lstatAll(dir, names)),
  rmdir: (path) => around({ op: "rmdir", path }, fs.rmdir(path)),
  realpath: (path) => around({ op: "realpath", path }, fs.realpath(path)),
  copyFile: (from, to) => around({ op: "copyFile", path: from, target: to }, fs.copyFile(from, to)),
  mkdir: (path, mode) => around({ op: "mkdir", path }, fs.mkdir(path, mode))
})

/**
 * A layer of the real filesystem seen through `around`.
 *
 * @since 0.1.0
 * @category testing
 */
export const layerIntercepted = (around: Around): Layer.Layer<Fs> => Layer.succeed(Fs, intercept(node, around))

/**
 * The blobs of a session file (`docs/format.md`, "Blobs"): one directory beside the session,
 * `NAME.blobs/`, each blob a file named by the 64 hexadecimal digits of its SHA-256.
 *
 * - A new blob is written to a temp name in that directory, fsynced, renamed into place, and the
 *   directory fsynced (and, when this made the directory, the session's directory too): durable
 *   before the commit of the first entry that refers to it, which runs after `put`.
 * - A fork hard-links the source's blob files (copies them across filesystems), so deleting
 *   either session never breaks the other.
 * - The directory and its files are never followed through a symlink: each is checked with lstat
 *   and opened with O_NOFOLLOW, and the directory's identity is checked again after it was used.
 *
 * A crash may leave a temp name (`HASH.tmp-OWNER-SEQ`) or a blob nothing refers to yet; neither is
 * ever read as a blob, and deleting the session removes them with the directory.
 */
import { MAX_BLOB_BYTES } from "@session-tree/core/Codec"
import {
  catchCode,
  type ConflictError,
  type CorruptError,
  type InputError,
  type IoError,
  type SessionError,
  sessionError
} from "@session-tree/core/SessionError"
import { type BlobBytes, type NewBlob, sha256, type Stored } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import * as Path from "node:path"
import * as Fs from "../Fs.js"
import { Flags, type FsService, type Handle, sameFile, type Stat } from "../Fs.js"
import { expectIdentity, lstatNamed, readBytes, removeOwn, step, writeAll } from "./io.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"

/** A blob's file name: the 64 lowercase hexadecimal digits of its SHA-256. */
const HASH = /^[0-9a-f]{64}$/


const missing = (path: string, hash: string): CorruptError =>
  sessionError("SESSION_BLOB_MISSING", `blob "sha256:${hash}" is not in the session's store`, { path })

const notADirectory = (path: string, kind: Stat["kind"]): InputError =>
  sessionError("SESSION_NOT_REGULAR_FILE", `the blob directory is a ${kind}, not a directory`, { path })

const tempName = (dir: string, hash: string): string => Path.join(dir, `${hash}.tmp-${Owner.selfName()}-${Paths.nextSeq()}`)

/**
 * The sizes of those of `names` that are regular files in the blob directory of `paths` (each
 * lstat'ed, never followed): none when there is no directory, or when something other than a
 * directory is there. `names` undefined: every blob name the directory lists. A blob name that is
 * not a regular file is left out, so a reference to one is missing.
 */
const sizesIn = (
  fs: FsService,
  paths: Paths.SessionPaths,
  names: ReadonlyArray<string> | undefined
): Effect.Effect<ReadonlyMap<string, number>, ConflictError | IoError> =>
  Effect.gen(function*() {
    const dir = paths.blobs
    const found = new Map<string, number>()
    const before = yield* lstatNamed(fs, "lstat blob directory", dir)
    if (before === undefined || before.kind !== "directory") return found
    // A directory gone or replaced by another kind of file after the lstat above changed under the load.
    const blobs = names ??
      (yield* step("list blob directory", fs.readdir(dir), { ENOENT: "SESSION_REPLACED", ENOTDIR: "SESSION_REPLACED" })).filter((name) => HASH.test(name))
    const entries = yield* step("lstat blobs", fs.lstatAll(dir, blobs), { ENOTDIR: "SESSION_REPLACED" })
    for (let i = 0; i < blobs.length; i++) {
      const entry = entries[i]
      if (entry !== undefined && entry.kind === "file") found.set(blobs[i]!, entry.size)
    }
    // What was looked up is the directory lstat saw, not a link put there meanwhile.
    yield* expectIdentity(fs, "blob directory", dir, "directory", before)
    return found
  })

/** `stored` with the blobs `sizesIn` finds for `names`, when it finds any. */
const withSizes = (
  fs: FsService,
  paths: Paths.SessionPaths,
  stored: Stored,
  names: ReadonlyArray<string> | undefined
): Effect.Effect<Stored, ConflictError | IoError> =>
  Effect.map(sizesIn(fs, paths, names), (blobs) => (blobs.size === 0 ? stored : { ...stored, blobs }))

/** `stored` with every blob of its session: what a held session needs, those no entry refers to included. */
export const attach = (fs: FsService, paths: Paths.SessionPaths, stored: Stored): Effect.Effect<Stored, ConflictError | IoError> =>
  withSizes(fs, paths, stored, undefined)

/** A reference's `sha256:` is found by its `ha256:`: `h` is much rarer in text than `s`, so the search skips ahead faster. */
const HA256 = Buffer.from("ha256:", "latin1")
const S = 0x73
const ESCAPE = Buffer.from("\\u", "latin1")

/** 1 for each byte that is a lowercase hexadecimal digit: a name's 64 bytes are checked without a branch each. */
const HEX_DIGIT = new Uint8Array(256)
for (const c of "0123456789abcdef") HEX_DIGIT[c.charCodeAt(0)] = 1

/** The value of a hexadecimal digit of either case, or -1. */
const hexValue = (c: number): number =>
  c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : c >= 0x41 && c <= 0x46 ? c - 0x37 : -1

/** Whether code point `c` can be a character of a blob reference: `sha256:` and lowercase hexadecimal digits. */
const inReference = (c: number): boolean => HEX_DIGIT[c] === 1 || c === S || c === 0x68 || c === 0x3a

/**
 * The blob names the lines in `bytes` (a session file's) can refer to: each `sha256:` followed by
 * 64 lowercase hexadecimal digits, once. A reference JSON spells with a `\u` escape of one of its
 * own characters is not in the bytes as such: when any such escape is there, undefined, and only
 * the whole directory can tell. Whatever else matches (text quoting a reference, a skipped tail)
 * only adds a name to check.
 */
export const referencedIn = (bytes: Uint8Array): ReadonlyArray<string> | undefined => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let at = buf.indexOf(ESCAPE); at !== -1; at = buf.indexOf(ESCAPE, at + 2)) {
    let code = 0
    for (let i = at + 2; i < at + 6 && code >= 0; i++) {
      const digit = i < buf.length ? hexValue(buf[i]!) : -1
      code = digit < 0 ? -1 : code * 16 + digit
    }
    if (code >= 0 && inReference(code)) return undefined
  }
  const names = new Set<string>()
  for (let at = buf.indexOf(HA256, 1); at !== -1; at = buf.indexOf(HA256, at + HA256.length)) {
    const start = at + HA256.length
    const end = start + 64
    if (buf[at - 1] !== S || end > buf.length) continue
    let hex = 1
    for (let i = start; i < end; i++) hex &= HEX_DIGIT[buf[i]!]!
    if (hex === 1) names.add(buf.toString("latin1", start, end))
  }
  return Array.from(names)
}

/**
 * `stored` with the blobs its lines can refer to (`referencedIn`), each checked in the blob
 * directory of `paths`: a read's check, which needs no other blob. When the bytes cannot tell the
 * names, the whole directory (`attach`).
 */
export const attachReferenced = (
  fs: FsService,
  paths: Paths.SessionPaths,
  stored: Stored,
  bytes: Uint8Array
): Effect.Effect<Stored, ConflictError | IoError> => {
  const names = referencedIn(bytes)
  return names !== undefined && names.length === 0 ? Effect.succeed(stored) : withSizes(fs, paths, stored, names)
}

/**
 * The bytes of blob `hash` of the session at `paths`, checked against their hash:
 * SESSION_BLOB_MISSING when it is not there as a regular file, SESSION_BLOB_CORRUPT when its
 * bytes do not hash to its name.
 */
export const read = (fs: FsService, paths: Paths.SessionPaths, hash: string): Effect.Effect<Uint8Array, InputError | CorruptError | ConflictError | IoError> =>
  Effect.gen(function*() {
    const dir = paths.blobs
    const path = Path.join(dir, hash)
    if (!HASH.test(hash)) return yield* missing(path, hash)
    const before = yield* lstatNamed(fs, "lstat blob directory", dir)
    if (before === undefined || before.kind !== "directory") return yield* missing(path, hash)
    const bytes = yield* readBytes(fs, path, MAX_BLOB_BYTES, "blob").pipe(
      catchCode(["SESSION_NOT_FOUND", "SESSION_NOT_REGULAR_FILE"], () => Effect.fail(missing(path, hash))),
      catchCode("SESSION_FILE_TOO_LARGE", () => Effect.fail(corrupt(path, hash)))
    )
    yield* expectIdentity(fs, "blob directory", dir, "directory", before)
    if (sha256(bytes) !== hash) return yield* corrupt(path, hash)
    // Plain bytes, as every backend gives them, over the same memory.
    return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  })

const corrupt = (path: string, hash: string): CorruptError =>
  sessionError("SESSION_BLOB_CORRUPT", `the bytes of blob "sha256:${hash}" do not match its hash`, { path })

/** The blob directory of `paths`, made when missing; whether this call made it. Never a link. */
const ensureDirectory = (fs: FsService, dir: string): Effect.Effect<{ readonly stat: Stat; readonly made: boolean }, InputError | ConflictError | IoError> =>
  Effect.gen(function*() {
    let made = false
    let stat = yield* lstatNamed(fs, "lstat blob directory", dir)
    if (stat === undefined) {
      // Another writer may make it at the same moment: EEXIST is then its directory, checked below.
      made = yield* step(
        "make blob directory",
        Effect.catchIf(Effect.as(fs.mkdir(dir, 0o700), true), (e) => e.errno === "EEXIST", () => Effect.succeed(false))
      )
      stat = yield* lstatNamed(fs, "lstat blob directory", dir)
    }
    if (stat === undefined) return yield* sessionError("SESSION_REPLACED", "the blob directory vanished while it was made", { path: dir })
    if (stat.kind !== "directory") return yield* notADirectory(dir, stat.kind)
    return { stat, made }
  })

/** Directory `dir` opened for fsync, checked to be the one `id` names; closed when the scope closes. */
const openDir = (fs: FsService, dir: string, id: Stat): Effect.Effect<Handle, ConflictError | IoError, Scope.Scope> =>
  Effect.tap(step("open blob directory", Fs.open(fs, dir, Flags.directory), { ELOOP: "SESSION_REPLACED" }), (handle) =>
    Effect.flatMap(step("fstat blob directory", fs.fstat(handle)), (stat) =>
      stat.kind !== "directory" || !sameFile(stat, id)
        ? Effect.fail(sessionError("SESSION_REPLACED", "the blob directory changed while it was opened", { path: dir }))
        : Effect.void))

/**
 * A temp name in `dir` made by `make` as a resource of the scope: removed when the scope closes
 * with a failure (on success the blob's rename has taken it).
 */
const tempResource = <A, E, R>(fs: FsService, name: string, make: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.acquireRelease(make, (_, exit) => (Exit.isFailure(exit) ? Effect.asVoid(removeOwn(fs, name)) : Effect.void))

/** Writes `bytes` to a new temp file in `dir` and fsyncs it: its name, a resource of the scope (see `tempResource`). */
const writeTemp = (fs: FsService, dir: string, hash: string, bytes: Uint8Array): Effect.Effect<string, IoError, Scope.Scope> =>
  Effect.gen(function*() {
    const temp = tempName(dir, hash)
    const handle = yield* tempResource(fs, temp, step("create blob temp", Fs.open(fs, temp, Flags.createExclusive, 0o600)))
    yield* writeAll(fs, handle, bytes, 0, 0)
    yield* step("fsync blob temp", fs.fsync(handle))
    return temp
  })

/**
 * A temp name in `dir` for blob `hash` of the session file `from`: a hard link of its file, or,
 * across filesystems, a copy made durable. SESSION_BLOB_MISSING unless that file is a regular
 * file of `size` bytes.
 */
const linkTemp = (fs: FsService, dir: string, hash: string, size: number, from: Paths.SessionPaths): Effect.Effect<string, SessionError, Scope.Scope> =>
  Effect.gen(function*() {
    const source = Path.join(from.blobs, hash)
    const stat = yield* lstatNamed(fs, "lstat source blob", source)
    if (stat === undefined || stat.kind !== "file" || stat.size !== size) {
      return yield* sessionError("SESSION_BLOB_MISSING", `blob "sha256:${hash}" is not in the session it is taken from`, { path: source })
    }
    const temp = tempName(dir, hash)
    const linked = yield* Effect.either(tempResource(fs, temp, fs.link(source, temp)))
    if (linked._tag === "Right") {
      // The link must be the file lstat saw, not one put in its place meanwhile.
      yield* expectIdentity(fs, "source blob", temp, "file", stat)
      return temp
    }
    if (linked.left.errno !== "EXDEV") return yield* step("link source blob", Effect.fail(linked.left))
    const bytes = yield* readBytes(fs, source, MAX_BLOB_BYTES, "blob")
    if (bytes.length !== size) {
      return yield* sessionError("SESSION_BLOB_MISSING", `blob "sha256:${hash}" changed in the session it is taken from`, { path: source })
    }
    return yield* writeTemp(fs, dir, hash, bytes)
  })

/**
 * Puts `blobs` into the blob directory of `paths`, durably, before the commit that first refers
 * to them, each through a temp name `temp` makes (a resource of a scope per blob, which its rename
 * into place takes). A blob already there as a regular file of its size is kept (its name is its
 * content); anything else at its name is replaced.
 */
const putWith = <B extends { readonly hash: string; readonly size: number }, E>(
  fs: FsService,
  paths: Paths.SessionPaths,
  blobs: ReadonlyArray<B> | undefined,
  temp: (dir: string, blob: B) => Effect.Effect<string, E, Scope.Scope>
): Effect.Effect<void, E | InputError | ConflictError | IoError> =>
  Effect.scoped(Effect.gen(function*() {
    if (blobs === undefined || blobs.length === 0) return
    const dir = paths.blobs
    const { made, stat } = yield* ensureDirectory(fs, dir)
    const handle = yield* openDir(fs, dir, stat)
    for (const blob of blobs) {
      // The store names blobs by their hash: any other name breaks the port's contract.
      if (!HASH.test(blob.hash)) return yield* Effect.dieMessage(`a blob named "${blob.hash}", not by 64 hexadecimal digits`)
      const target = Path.join(dir, blob.hash)
      const present = yield* lstatNamed(fs, "lstat blob", target)
      if (present !== undefined && present.kind === "file" && present.size === blob.size) continue
      yield* Effect.scoped(Effect.flatMap(temp(dir, blob), (name) => step("rename blob into place", fs.rename(name, target))))
    }
    yield* expectIdentity(fs, "blob directory", dir, "directory", stat)
    yield* step("fsync blob directory", fs.fsync(handle))
    // A new directory's own name is durable only once the session's directory is synced.
    if (made) yield* syncParent(fs, paths)
  }))

/** An append's blobs: their bytes. */
export const putBytes = (fs: FsService, paths: Paths.SessionPaths, blobs: ReadonlyArray<BlobBytes> | undefined): Effect.Effect<void, InputError | ConflictError | IoError> =>
  putWith(fs, paths, blobs, (dir, blob) => writeTemp(fs, dir, blob.hash, blob.bytes))

/** A new session's blobs: bytes, or the same blob of the session a fork is taken from (SESSION_BLOB_MISSING when it does not hold it). */
export const put = (fs: FsService, paths: Paths.SessionPaths, blobs: ReadonlyArray<NewBlob> | undefined): Effect.Effect<void, SessionError> =>
  putWith(fs, paths, blobs, (dir, blob) =>
    "bytes" in blob
      ? writeTemp(fs, dir, blob.hash, blob.bytes)
      : Effect.flatMap(Paths.resolve(fs, blob.from), (from) => linkTemp(fs, dir, blob.hash, blob.size, from)))

const syncParent = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<void, ConflictError | IoError> =>
  Effect.flatMap(step("lstat directory", fs.lstat(paths.dir)), (stat) =>
    Effect.scoped(Effect.flatMap(openDir(fs, paths.dir, stat), (handle) => step("fsync directory", fs.fsync(handle)))))

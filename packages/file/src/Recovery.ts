/**
 * `recover`: the one explicit operation that resolves what a crashed commit, or
 * a store locked by SESSION_ROLLBACK_FAILED, left beside a session file.
 *
 * The rule, in order:
 * 1. Refuse (SESSION_BUSY) while any leftover names a writer that may still be
 *    running: same boot, and its pid runs with the same start time. Leftovers of
 *    this process count as gone, since recover holds the in-process path lock.
 * 2. With a marker `NAME.marker` (the generation that was being replaced):
 *    - the path is missing → the marker is restored onto the path;
 *    - the path is the marker's file → the commit never installed; the marker goes;
 *    - otherwise the path is the newer generation: it is kept when it loads and
 *      the marker's entries are a prefix of its entries (a commit only adds), and
 *      the marker is restored when only the marker loads. Anything else is
 *      refused (SESSION_REPLACED) and nothing is touched.
 *    An append intent there instead (version 2, `docs/format.md`) is refused while its
 *    writer may run; else the file is cut back to what the intent's rule shows (its batch
 *    when whole, else the committed end) and the intent goes; an unfinished intent only goes.
 * 3. Temp, next, rollback and tombstone names of gone writers are removed, and
 *    what a delete past its commit point left (`removeDeleted`): the blob
 *    directories it moved aside, and the blob directory of a session that is gone.
 * Every change is followed by a directory fsync. An entry whose append resolved
 * is in both candidates, so no rule above can lose it.
 *
 * The marker is looked at before the directory is listed, and both are looked
 * at again just before the marker is touched (SESSION_BUSY if either changed):
 * a writer names itself with its temp file before it links the marker and until
 * it has removed it. What remains is a window of a few system calls in which a
 * writer that started after the second listing could have its marker of the
 * same generation taken for the one judged; `recover` is an explicit operation
 * for after a crash or a lock, not one to run in a loop beside live writers.
 */
import { CAPS_V2, encodeLine } from "@session-tree/core/Codec"
import { type ConflictError, type InputError, type IoError, type LockedError, restated, sessionError } from "@session-tree/core/SessionError"
import * as Tracing from "@session-tree/core/Tracing"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Path from "node:path"
import * as FsModule from "./Fs.js"
import { type FileId, Flags, Fs, type FsService, sameFile, type Stat } from "./Fs.js"
import { removeDeleted } from "./internal/delete.js"
import * as Generation from "./internal/generation.js"
import { expectIdentity, lstatNamed, readBytes, readExactly, step } from "./internal/io.js"
import * as Marker from "./internal/marker.js"
import * as Owner from "./internal/owner.js"
import { processLocks } from "./internal/locks.js"
import * as Paths from "./internal/paths.js"
import { decode } from "./Jsonl.js"

/**
 * What recovery can fail with: no session there (`InputError`), a writer still running or a
 * name that changed under it (`ConflictError`), a failed step (`IoError`), a state it must not
 * settle (`LockedError`). Never `CorruptError`: recovery judges names and bytes, not records.
 *
 * @since 0.1.0
 * @category errors
 */
export type RecoverError = InputError | ConflictError | IoError | LockedError

/**
 * What `recover` did.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecoveryReport {
  readonly path: string
  /** What happened to the marker. */
  readonly marker: "none" | "removed" | "restored"
  /**
   * With an append intent at the marker's name (version 2): whether the interrupted batch was
   * whole and kept, or removed (the file cut back to its committed end); "none" otherwise.
   */
  readonly batch: "none" | "kept" | "removed"
  /** Leftover names (temp, next, rollback, tombstone, blob directories of a deleted session) that were removed. */
  readonly removed: ReadonlyArray<string>
}

/** The records of the file at `path` (of the directory `recover` already resolved and pinned), or undefined. */
const decodeAt = (fs: FsService, path: string) =>
  readBytes(fs, path, CAPS_V2.sessionBytes, "session file").pipe(
    Effect.map((bytes) => Either.getOrUndefined(decode(bytes))),
    Effect.orElseSucceed(() => undefined)
  )

const isPrefix = (
  older: NonNullable<Effect.Effect.Success<ReturnType<typeof decodeAt>>>,
  newer: NonNullable<Effect.Effect.Success<ReturnType<typeof decodeAt>>>
): boolean => {
  if (encodeLine(older.header) !== encodeLine(newer.header)) return false
  const a = older.history.entries
  const b = newer.history.entries
  if (a.length > b.length) return false
  for (let i = 0; i < a.length; i++) if (encodeLine(a[i]!) !== encodeLine(b[i]!)) return false
  return true
}

/** Lists the leftovers of `paths` and fails with SESSION_BUSY while one names a writer that may be running. */
const leftoversOfGoneWriters = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<ReadonlyArray<Paths.Leftover>, RecoverError> =>
  Effect.flatMap(step("list directory", Paths.leftovers(fs, paths)), ({ all, live }) =>
    live === undefined
      ? Effect.succeed(all)
      : Effect.fail(sessionError("SESSION_BUSY", `a writer (pid ${live.owner.pid}) may still be committing`, {
        path: paths.path
      })))

/**
 * Removes the temp, next, rollback and tombstone names of gone writers, and what a delete left
 * past its commit point (`removeDeleted`); the directory is fsynced after.
 */
const removeLeftovers = (
  fs: FsService,
  paths: Paths.SessionPaths,
  leftovers: ReadonlyArray<Paths.Leftover>,
  syncDir: Effect.Effect<void, RecoverError>
): Effect.Effect<ReadonlyArray<string>, RecoverError> =>
  Effect.gen(function*() {
    const removed: Array<string> = []
    for (const l of leftovers) {
      const target = Path.join(paths.dir, l.name)
      yield* step(`remove ${l.kind}`, fs.unlink(target).pipe(Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.void)))
      removed.push(l.name)
    }
    removed.push(...(yield* removeDeleted(fs, paths)))
    if (removed.length > 0) yield* syncDir
    return removed
  })

/**
 * An append intent at the marker's name (`docs/files.md`, "The append intent"):
 * refused while its writer may be running; otherwise the file is cut back to what the intent's
 * rule shows (the batch when it is whole, else the committed end), durably, and the intent goes.
 * Beside no file (the session was deleted after a crash brought the intent back) it only goes.
 */
const settleIntent = (
  fs: FsService,
  paths: Paths.SessionPaths,
  markerStat: FileId,
  syncDir: Effect.Effect<void, RecoverError>
): Effect.Effect<RecoveryReport["batch"], RecoverError> =>
  Effect.scoped(Effect.gen(function*() {
    const text = yield* step("readlink marker", fs.readlink(paths.marker))
    const intent = Marker.parseIntent(text)
    if (intent === undefined) {
      return yield* sessionError("SESSION_REPLACED", "the marker is a link but not an append intent; it is left for inspection", { path: paths.marker })
    }
    if (Owner.isAlive(intent.owner)) {
      return yield* sessionError("SESSION_BUSY", `a writer (pid ${intent.owner.pid}) may still be appending`, { path: paths.path })
    }
    // No file: an intent whose removal a crash undid, beside a session since deleted. Nothing to settle.
    if ((yield* lstatNamed(fs, "lstat", paths.path)) === undefined) return yield* removeMarker(fs, paths, markerStat, syncDir, "none" as const)
    const handle = yield* step("open for recovery", FsModule.open(fs, paths.path, Flags.readWriteNoFollow), {
      ENOENT: "SESSION_REPLACED",
      ELOOP: "SESSION_NOT_REGULAR_FILE"
    })
    const stat = yield* step("fstat", fs.fstat(handle))
    if (stat.kind !== "file") return yield* sessionError("SESSION_NOT_REGULAR_FILE", "the session path is not a regular file", { path: paths.path })
    // Only the batch's bytes are needed: the rule looks at nothing before `from`.
    const batchBytes = yield* readExactly(
      fs,
      handle,
      Buffer.allocUnsafe(Math.max(0, Math.min(stat.size, intent.to) - intent.from)),
      intent.from,
      () => sessionError("SESSION_BUSY", "the file changed while recover read it", { path: paths.path })
    )
    const end = Marker.settle(stat.size, batchBytes, intent, paths.path)
    if (typeof end !== "number") return yield* Effect.fail(withInspection(end))
    const whole = end === intent.to
    if (!whole && stat.size > intent.from) {
      yield* step("truncate", fs.ftruncate(handle, intent.from))
      yield* step("fsync", fs.fsync(handle))
    }
    return yield* removeMarker(fs, paths, markerStat, syncDir, whole ? "kept" as const : "removed" as const)
  }))

/** The rule's refusal, as `recover` reports it: it touches nothing. */
const withInspection = (error: RecoverError): RecoverError =>
  restated(error, `${error.message}; both are left for inspection`, { path: error.path })

/** Removes the marker, judged on what was seen before: only while it is still exactly that. */
const removeMarker = <A>(
  fs: FsService,
  paths: Paths.SessionPaths,
  markerStat: FileId,
  syncDir: Effect.Effect<void, RecoverError>,
  result: A
): Effect.Effect<A, RecoverError> =>
  Effect.gen(function*() {
    yield* expectIdentity(fs, "marker", paths.marker, "symlink", markerStat).pipe(
      Effect.mapError(() => sessionError("SESSION_BUSY", "the marker changed while recover looked at it", { path: paths.path }))
    )
    yield* step("unlink marker", fs.unlink(paths.marker))
    yield* syncDir
    return result
  })

/**
 * Whether the file at the path stays (`false`) or the marker's generation goes back onto it
 * (`true`), by rule 2 of this module: a missing path is restored, the marker's own file stays, and
 * of two generations the one that loads and continues the other stays.
 */
const judge = (
  fs: FsService,
  paths: Paths.SessionPaths,
  markerStat: Stat,
  current: Stat | undefined
): Effect.Effect<boolean, RecoverError> =>
  Effect.gen(function*() {
    if (current === undefined) return true
    if (current.kind !== "file") {
      return yield* sessionError("SESSION_NOT_REGULAR_FILE", "the session path is not a regular file", { path: paths.path })
    }
    if (sameFile(current, markerStat)) return false
    const older = yield* decodeAt(fs, paths.marker)
    const newer = yield* decodeAt(fs, paths.path)
    if (newer !== undefined && (older === undefined || isPrefix(older, newer))) return false
    if (newer === undefined && older !== undefined) return true
    return yield* sessionError("SESSION_REPLACED", "the file is not a successor of the marker's generation; both are left for inspection", {
      path: paths.path
    })
  })

/**
 * A version-1 commit's marker (or a delete's), judged (`judge`), then acted on only if the marker
 * and the path are still exactly what was judged: the marker's generation renamed back onto the
 * path through a name of its own (removed again if the rename fails), or the marker removed.
 */
const settleMarker = (
  fs: FsService,
  paths: Paths.SessionPaths,
  markerStat: Stat,
  syncDir: Effect.Effect<void, RecoverError>
): Effect.Effect<RecoveryReport["marker"], RecoverError> =>
  Effect.gen(function*() {
    const current = yield* lstatNamed(fs, "lstat", paths.path)
    const restore = yield* judge(fs, paths, markerStat, current)
    const markerNow = yield* lstatNamed(fs, "lstat marker", paths.marker)
    const pathNow = yield* lstatNamed(fs, "lstat", paths.path)
    if (
      markerNow === undefined || !sameFile(markerNow, markerStat) ||
      (current === undefined ? pathNow !== undefined : pathNow === undefined || !sameFile(pathNow, current))
    ) {
      return yield* sessionError("SESSION_BUSY", "the marker or the file changed while recover looked at them", { path: paths.path })
    }
    yield* leftoversOfGoneWriters(fs, paths)
    if (restore) {
      const rollback = Paths.ownName(paths, "rollback", Paths.nextSeq())
      yield* Effect.scoped(Effect.acquireRelease(step("link marker", fs.link(paths.marker, rollback)), (_, exit) =>
        Exit.isSuccess(exit) ? Effect.void : Effect.ignore(fs.unlink(rollback))).pipe(
          Effect.zipRight(step("restore", fs.rename(rollback, paths.path)))
        ))
      yield* expectIdentity(fs, "restored generation", paths.path, "file", markerStat)
      yield* syncDir
    }
    yield* step("unlink marker", fs.unlink(paths.marker))
    yield* syncDir
    return restore ? "restored" as const : "removed" as const
  })

/**
 * Resolves what a crashed commit, append or delete left beside the session file at `path` (see
 * the module's comment), with the file's in-process lock held.
 *
 * @since 0.1.0
 * @category recovery
 */
export const recover = (path: string): Effect.Effect<RecoveryReport, RecoverError, Fs> =>
  Effect.scoped(Effect.gen(function*() {
    const fs = yield* Fs
    const paths = yield* Paths.resolve(fs, path)
    const dirStat = yield* Generation.statDirectory(fs, paths)
    const lock = yield* processLocks().lockFor(paths.lockKey(dirStat.dev, dirStat.ino))
    return yield* lock.withPermits(1)(Effect.gen(function*() {
      // The marker is looked at before the listing: a writer creates its temp name before it links the
      // marker and removes it after, so a marker seen here whose writer is running shows up below.
      const markerStat = yield* lstatNamed(fs, "lstat marker", paths.marker)
      const leftovers = yield* leftoversOfGoneWriters(fs, paths)
      const dir = yield* Generation.directory(fs, paths, dirStat)
      const syncDir = step("fsync directory", fs.fsync(dir.handle))
      if (markerStat?.kind === "symlink") {
        const batch = yield* settleIntent(fs, paths, markerStat, syncDir)
        return { path: paths.path, marker: "removed" as const, batch, removed: yield* removeLeftovers(fs, paths, leftovers, syncDir) }
      }
      if (markerStat !== undefined && markerStat.kind !== "file") {
        return yield* sessionError("SESSION_NOT_REGULAR_FILE", "the marker is not a regular file", { path: paths.marker })
      }
      const marker = markerStat === undefined ? "none" as const : yield* settleMarker(fs, paths, markerStat, syncDir)
      return { path: paths.path, marker, batch: "none" as const, removed: yield* removeLeftovers(fs, paths, leftovers, syncDir) }
    }))
  })).pipe(Tracing.span("Recovery.recover", { session: path }))

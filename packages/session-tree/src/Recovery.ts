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
 * 3. Temp, next and rollback names of gone writers are removed.
 * Every change is followed by a directory fsync. An entry whose append resolved
 * is in both candidates, so no rule above can lose it.
 */
import * as Effect from "effect/Effect"
import { decodeSession, encodeLine } from "./Codec.js"
import { Flags, Fs, sameFile } from "./Fs.js"
import * as Generation from "./internal/generation.js"
import { closeQuietly, lstatOrMissing, step } from "./internal/io.js"
import * as Owner from "./internal/owner.js"
import * as Paths from "./internal/paths.js"
import { SessionError, sessionError } from "./SessionError.js"
import { lockFor } from "./internal/locks.js"

export interface RecoveryReport {
  readonly path: string
  /** What happened to the marker. */
  readonly marker: "none" | "removed" | "restored"
  /** Leftover names (temp, next, rollback) that were removed. */
  readonly removed: ReadonlyArray<string>
}

const decodeAt = (path: string) =>
  Effect.flatMap(Generation.open(Paths.make(path)), (opened) =>
    Effect.ensuring(Effect.sync(() => decodeSession(opened.bytes)), closeQuietly(opened.held.handle))).pipe(
      Effect.map((d) => (d instanceof SessionError ? undefined : d)),
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

export const recover = (path: string): Effect.Effect<RecoveryReport, SessionError, Fs> =>
  Effect.gen(function*() {
    const fs = yield* Fs
    const paths = Paths.make(path)
    const dir = yield* Generation.statDirectory(paths)
    const lock = lockFor(paths.lockKey(dir.dev, dir.ino))
    return yield* lock.withPermits(1)(Effect.gen(function*() {
      const names = yield* step("list directory", fs.readdir(paths.dir))
      const leftovers = names.flatMap((name) => {
        const l = Paths.parseLeftover(paths, name)
        return l === undefined ? [] : [l]
      })
      const live = leftovers.filter((l) => Owner.isAlive(l.owner))
      if (live.length > 0) {
        return yield* sessionError("SESSION_BUSY", `a writer (pid ${live[0]!.owner.pid}) may still be committing`, {
          path: paths.path
        })
      }
      const dirHandle = yield* step("open directory", fs.open(paths.dir, Flags.directory))
      return yield* Effect.gen(function*() {
        const syncDir = step("fsync directory", fs.fsync(dirHandle))
        let marker: RecoveryReport["marker"] = "none"
        const markerStat = yield* step("lstat marker", lstatOrMissing(paths.marker))
        if (markerStat !== undefined) {
          if (markerStat.kind !== "file") {
            return yield* sessionError("SESSION_NOT_REGULAR_FILE", "the marker is not a regular file", { path: paths.marker })
          }
          const current = yield* step("lstat", lstatOrMissing(paths.path))
          let restore: boolean
          if (current === undefined) restore = true
          else if (current.kind !== "file") {
            return yield* sessionError("SESSION_NOT_REGULAR_FILE", "the session path is not a regular file", { path: paths.path })
          } else if (sameFile(current, markerStat)) restore = false
          else {
            const older = yield* decodeAt(paths.marker)
            const newer = yield* decodeAt(paths.path)
            if (newer !== undefined && (older === undefined || isPrefix(older, newer))) restore = false
            else if (newer === undefined && older !== undefined) restore = true
            else {
              return yield* sessionError(
                "SESSION_REPLACED",
                "the file is not a successor of the marker's generation; both are left for inspection",
                { path: paths.path }
              )
            }
          }
          if (restore) {
            const rollback = Paths.ownName(paths, "rollback", Paths.nextSeq())
            yield* step("link marker", fs.link(paths.marker, rollback))
            yield* step("restore", fs.rename(rollback, paths.path))
            yield* syncDir
            marker = "restored"
          } else {
            marker = "removed"
          }
          yield* step("unlink marker", fs.unlink(paths.marker))
          yield* syncDir
        }
        const removed: Array<string> = []
        for (const l of leftovers) {
          const target = `${paths.dir}/${l.name}`
          yield* step(`remove ${l.kind}`, fs.unlink(target).pipe(Effect.catchIf((e) => e.errno === "ENOENT", () => Effect.void)))
          removed.push(l.name)
        }
        if (removed.length > 0) yield* syncDir
        return { path: paths.path, marker, removed }
      }).pipe(Effect.ensuring(closeQuietly(dirHandle)))
    }))
  })

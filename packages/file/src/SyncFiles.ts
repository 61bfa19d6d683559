/**
 * The files of a sync (`Sync.SyncFiles` of `@session-tree/core`) on this machine: the walk of the
 * sources, a source read as far as it went when it was opened, and the sync's state as one JSON
 * file written atomically. Every step goes through `Fs`, so tests can fail or delay any of them.
 *
 * @since 0.2.0
 */
import { sessionError, type SessionError } from "@session-tree/core/SessionError"
import { type SourceFile, SyncFiles, type SyncFilesService, type SyncState } from "@session-tree/core/Sync"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Path from "node:path"
import * as Files from "./Files.js"
import { Flags, Fs, type FsService, type Stat } from "./Fs.js"
import * as Io from "./internal/io.js"

/** The most a source may hold: transcripts with images run to hundreds of megabytes at worst. */
export const MAX_SOURCE_BYTES = 1024 * 1024 * 1024

/** The state file's name in a sync's directory (not `*.jsonl`, so no listing takes it for a session). */
export const STATE_FILE = ".session-tree-sync.json"

const SUFFIX = ".jsonl"

const fileOf = (path: string, stat: Stat): SourceFile => ({
  path,
  size: stat.size,
  mtimeMs: Number(stat.mtimeNs / 1_000_000n),
  fingerprint: `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`
})

const StateSchema = Schema.parseJson(Schema.Struct({
  sources: Schema.Record({
    key: Schema.String,
    value: Schema.Struct({ fingerprint: Schema.String, sessions: Schema.Array(Schema.String), pending: Schema.Boolean })
  })
}))
const decodeState = Schema.decodeUnknownOption(StateSchema)
const EMPTY: SyncState = { sources: {} }

/** Whether `path` is `dir` or under it. */
const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir.endsWith(Path.sep) ? dir : dir + Path.sep)

export interface SyncFilesOptions {
  /** Where the state is kept; none kept without it (every source is then read at every sync). */
  readonly state?: string | undefined
}

export const make = (fs: FsService, options: SyncFilesOptions = {}): SyncFilesService => {
  const statePath = options.state === undefined ? undefined : Path.resolve(options.state)

  const walk = (roots: ReadonlyArray<string>, exclude: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      // Excluded directories as the walk meets them: resolved, so a link to one does not bring it back.
      const excluded = yield* Effect.forEach(exclude, (dir) =>
        Effect.orElseSucceed(fs.realpath(Path.resolve(dir)), () => Path.resolve(dir)))
      const found = new Map<string, SourceFile>()
      for (const root of roots) {
        const absolute = yield* Io.step("realpath", fs.realpath(Path.resolve(root)), { ENOENT: "SESSION_NOT_FOUND", ENOTDIR: "SESSION_NOT_FOUND" })
        const top = yield* Io.step("lstat", fs.lstat(absolute))
        if (top.kind === "file") {
          found.set(absolute, fileOf(absolute, top))
          continue
        }
        if (top.kind !== "directory") {
          return yield* sessionError("SESSION_NOT_REGULAR_FILE", `a source is a file or a directory, not a ${top.kind}`, { path: absolute })
        }
        const dirs = [absolute]
        while (dirs.length > 0) {
          const dir = dirs.pop()!
          if (excluded.some((x) => within(dir, x))) continue
          // A directory removed while the walk runs holds nothing any more.
          const names = yield* Effect.catchIf(
            Io.step("readdir", fs.readdir(dir), { ENOENT: "SESSION_NOT_FOUND", ENOTDIR: "SESSION_NOT_FOUND" }),
            (e) => e.code === "SESSION_NOT_FOUND",
            () => Effect.succeed([] as ReadonlyArray<string>)
          )
          for (const name of names) {
            const path = Path.join(dir, name)
            const stat = yield* Io.lstatNamed(fs, "lstat", path)
            // Links are not followed: a source is where it is.
            if (stat === undefined) continue
            if (stat.kind === "directory") dirs.push(path)
            else if (stat.kind === "file" && name.endsWith(SUFFIX) && !excluded.some((x) => within(path, x))) found.set(path, fileOf(path, stat))
          }
        }
      }
      return [...found.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
    })

  const read = (path: string) =>
    Effect.acquireUseRelease(
      Effect.gen(function*() {
        const before = yield* Io.lstatNamed(fs, "lstat", path)
        if (before === undefined) return yield* sessionError("SESSION_NOT_FOUND", "no source file at this path", { path })
        if (before.kind !== "file") return yield* sessionError("SESSION_NOT_REGULAR_FILE", `the path is a ${before.kind}, not a regular file`, { path })
        const handle = yield* Io.step("open", fs.open(path, Flags.readNoFollow), { ELOOP: "SESSION_NOT_REGULAR_FILE", ENOENT: "SESSION_REPLACED" })
        return handle
      }),
      (handle) =>
        Effect.gen(function*() {
          const stat = yield* Io.step("fstat", fs.fstat(handle))
          if (stat.size > MAX_SOURCE_BYTES) {
            return yield* sessionError("SESSION_FILE_TOO_LARGE", `the file holds ${stat.size} bytes, more than ${MAX_SOURCE_BYTES}`, { path })
          }
          // As far as the file went when it was opened: what the agent appends meanwhile is the next sync's.
          const bytes = yield* Io.readExactly(fs, handle, Buffer.allocUnsafe(stat.size), 0, () =>
            sessionError("SESSION_REPLACED", "the source shrank while it was read", { path }))
          return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length), file: fileOf(path, stat) }
        }),
      (handle) => Io.closeQuietly(fs, handle)
    )

  const loadState: Effect.Effect<SyncState> = statePath === undefined
    ? Effect.succeed(EMPTY)
    : Files.readBytes(statePath, 64 * 1024 * 1024).pipe(
      Effect.map((bytes) => Option.getOrElse(decodeState(new TextDecoder().decode(bytes)), () => EMPTY)),
      // Only a cache: a state that cannot be read costs one full read of the sources.
      Effect.orElseSucceed(() => EMPTY),
      Effect.provideService(Fs, fs)
    )

  const saveState = (state: SyncState): Effect.Effect<void, SessionError> =>
    statePath === undefined
      ? Effect.void
      : Files.writeFile(statePath, JSON.stringify(state) + "\n").pipe(Effect.provideService(Fs, fs))

  return { walk, read, loadState, saveState }
}

/** The sync's files on the `Fs` in context, its state kept at `options.state`. */
export const layer = (options?: SyncFilesOptions): Layer.Layer<SyncFiles, never, Fs> =>
  Layer.effect(SyncFiles, Effect.map(Fs, (fs) => make(fs, options)))

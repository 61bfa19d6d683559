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
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Files from "./Files.js"
import { Flags, Fs, type FsService, type Stat } from "./Fs.js"
import * as Io from "./internal/io.js"

/**
 * The most a source may hold: transcripts with images run to hundreds of megabytes at worst.
 *
 * @since 0.2.0
 * @category constants
 */
export const MAX_SOURCE_BYTES = 1024 * 1024 * 1024

/**
 * The state file's name in a sync's directory (not `*.jsonl`, so no listing takes it for a session).
 *
 * @since 0.2.0
 * @category constants
 */
export const STATE_FILE = ".session-tree-sync"

const SUFFIX = ".jsonl"

/** Milliseconds as `node:fs` computes them from a time in nanoseconds, to the last bit: so a walk's stat and a read's give one fingerprint. */
const msOf = (ns: bigint): number => Number(ns / 1_000_000_000n) * 1e3 + Number(ns % 1_000_000_000n) / 1e6

const fileOf = (path: string, stat: Stat): SourceFile => ({
  path,
  size: stat.size,
  mtimeMs: Math.floor(msOf(stat.mtimeNs)),
  fingerprint: `${Number(stat.dev)}:${Number(stat.ino)}:${stat.size}:${msOf(stat.mtimeNs)}:${msOf(stat.ctimeNs)}`
})

/** The same fingerprint from `node:fs`'s own stat, which a walk of thousands of files takes without BigInts. */
const fileOfNode = (path: string, stat: NFS.Stats): SourceFile => ({
  path,
  size: stat.size,
  mtimeMs: Math.floor(stat.mtimeMs),
  fingerprint: `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`
})

/**
 * The `.jsonl` files under `dir`, not following links, except under `excluded`, appended to `found`
 * in the order of their paths; a directory removed meanwhile holds none. Each directory's names are
 * sorted with a directory's as `name/`, and a directory's files all start with that: so a walk in
 * that order meets the paths sorted, without sorting them all (they share long prefixes).
 */
const walkDirectory = (dir: string, excluded: ReadonlyArray<string>, found: Array<SourceFile>): void => {
  if (excluded.some((x) => within(dir, x))) return
  let entries: Array<NFS.Dirent>
  try {
    entries = NFS.readdirSync(dir, { withFileTypes: true })
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT" || (e as NodeJS.ErrnoException).code === "ENOTDIR") return
    throw e
  }
  const keyed: Array<{ readonly key: string; readonly entry: NFS.Dirent }> = []
  for (const entry of entries) {
    if (entry.isDirectory()) keyed.push({ key: entry.name + "/", entry })
    else if (entry.isFile() && entry.name.endsWith(SUFFIX)) keyed.push({ key: entry.name, entry })
  }
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  const prefix = dir + Path.sep
  for (const { entry } of keyed) {
    const path = prefix + entry.name
    if (entry.isDirectory()) {
      walkDirectory(path, excluded, found)
      continue
    }
    const stat = NFS.lstatSync(path, { throwIfNoEntry: false })
    if (stat !== undefined && stat.isFile() && (excluded.length === 0 || !excluded.some((x) => within(path, x)))) found.push(fileOfNode(path, stat))
  }
}

const EMPTY: SyncState = { sources: {} }

/**
 * The state file: a first line naming the format, then one line per source, its fields separated by
 * tabs: the fingerprint, `p` when something of it waits (else `-`), its path, its sessions' IDs. A
 * field holding a tab, a line break or a leading `"` is written as a JSON string. Lines, not one
 * JSON object: a sync of thousands of unchanged sources reads it in a fraction of the walk's time.
 */
const STATE_HEADER = "session-tree sync state 1"

const field = (text: string): string => (/[\t\n\r]/.test(text) || text.startsWith("\"") ? JSON.stringify(text) : text)
const unfield = (text: string): string | undefined => {
  if (!text.startsWith("\"")) return text
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "string" ? value : undefined
  } catch {
    return undefined
  }
}

const encodeState = (state: SyncState): string => {
  let text = STATE_HEADER + "\n"
  for (const [path, source] of Object.entries(state.sources)) {
    text += [field(source.fingerprint), source.pending ? "p" : "-", field(path), ...source.sessions.map(field)].join("\t") + "\n"
  }
  return text
}

/** One line of the state split on its tabs, each field unquoted; undefined when it is not a state line. */
const slowLine = (line: string): { readonly path: string; readonly source: SyncState["sources"][string] } | undefined => {
  const fields = line.split("\t")
  if (fields.length < 3 || (fields[1] !== "p" && fields[1] !== "-")) return undefined
  const fingerprint = unfield(fields[0]!)
  const path = unfield(fields[2]!)
  const sessions = fields.slice(3).map(unfield)
  if (fingerprint === undefined || path === undefined || sessions.some((id) => id === undefined)) return undefined
  return { path, source: { fingerprint, pending: fields[1] === "p", sessions: sessions as Array<string> } }
}

/**
 * The state file's text as a state, or undefined when it is not one (it is then ignored: only a
 * cache). A line without a quoted field (all of them, but for paths with tabs or line breaks) is
 * cut at its tabs where they are, without splitting it: the state of thousands of sources is read
 * in a fraction of the walk.
 */
const decodeState = (text: string): SyncState | undefined => {
  const headerEnd = text.indexOf("\n")
  if ((headerEnd < 0 ? text : text.slice(0, headerEnd)) !== STATE_HEADER) return undefined
  const sources: Record<string, SyncState["sources"][string]> = {}
  const length = text.length
  // The next quote at or after the line read, looked for again only once passed (-1: none left).
  let quote = text.indexOf("\"")
  for (let at = headerEnd < 0 ? length : headerEnd + 1; at < length;) {
    let end = text.indexOf("\n", at)
    if (end < 0) end = length
    if (end === at) {
      at = end + 1
      continue
    }
    const first = text.indexOf("\t", at)
    const mark = first + 1
    const third = first < 0 || first >= end ? -1 : text.indexOf("\t", mark + 2)
    if (quote >= 0 && quote < at) quote = text.indexOf("\"", at)
    if (third < 0 || third > end || text.charCodeAt(mark + 1) !== 9 || (quote >= 0 && quote < end)) {
      // Quoted fields, or not a line of three fields and more: field by field.
      const line = slowLine(text.slice(at, end))
      if (line === undefined) return undefined
      sources[line.path] = line.source
      at = end + 1
      continue
    }
    const pending = text.charCodeAt(mark)
    if (pending !== 112 && pending !== 45) return undefined
    const rest = text.slice(third + 1, end)
    sources[text.slice(mark + 2, third)] = {
      fingerprint: text.slice(at, first),
      pending: pending === 112,
      sessions: rest.includes("\t") ? rest.split("\t") : [rest]
    }
    at = end + 1
  }
  return { sources }
}

/** Whether `path` is `dir` or under it. */
const within = (path: string, dir: string): boolean => path === dir || path.startsWith(dir.endsWith(Path.sep) ? dir : dir + Path.sep)

/**
 * Where a sync keeps its state.
 *
 * @since 0.2.0
 * @category models
 */
export interface SyncFilesOptions {
  /** Where the state is kept; none kept without it (every source is then read at every sync). */
  readonly state?: string | undefined
}

/**
 * The files of a sync on this machine, through `Fs`.
 *
 * @since 0.2.0
 * @category constructors
 */
export const make = (fs: FsService, options: SyncFilesOptions = {}): SyncFilesService => {
  const statePath = options.state === undefined ? undefined : Path.resolve(options.state)

  // The walk is one synchronous loop of `readdir` (with the entries' types) and an `lstat` of each
  // `.jsonl` file: a sync of thousands of unchanged sources costs about what a bare stat walk does.
  // Reading a source and writing the state go through `Fs`, as every step that matters does.
  const walk = (roots: ReadonlyArray<string>, exclude: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      // Excluded directories as the walk meets them: resolved, so a link to one does not bring it back.
      const excluded = yield* Effect.forEach(exclude, (dir) =>
        Effect.orElseSucceed(fs.realpath(Path.resolve(dir)), () => Path.resolve(dir)))
      const perRoot: Array<Array<SourceFile>> = []
      for (const root of roots) {
        const absolute = yield* Io.step("realpath", fs.realpath(Path.resolve(root)), { ENOENT: "SESSION_NOT_FOUND", ENOTDIR: "SESSION_NOT_FOUND" })
        const top = yield* Io.step("lstat", fs.lstat(absolute))
        if (top.kind === "file") {
          perRoot.push([fileOf(absolute, top)])
          continue
        }
        if (top.kind !== "directory") {
          return yield* sessionError("SESSION_NOT_REGULAR_FILE", `a source is a file or a directory, not a ${top.kind}`, { path: absolute })
        }
        const found: Array<SourceFile> = []
        yield* Effect.try({
          try: () => walkDirectory(absolute, excluded, found),
          catch: (cause) => sessionError("SESSION_IO", `walking the sources failed: ${(cause as NodeJS.ErrnoException).code ?? String(cause)}`, { path: absolute, cause })
        })
        perRoot.push(found)
      }
      // One root (the common case) is walked in order already; several may overlap, each file once.
      if (perRoot.length === 1) return perRoot[0]!
      const all = new Map<string, SourceFile>()
      for (const files of perRoot) for (const file of files) all.set(file.path, file)
      return [...all.keys()].sort().map((path) => all.get(path)!)
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
      Effect.map((bytes) => decodeState(new TextDecoder().decode(bytes)) ?? EMPTY),
      // Only a cache: a state that cannot be read costs one full read of the sources.
      Effect.orElseSucceed(() => EMPTY),
      Effect.provideService(Fs, fs)
    )

  const saveState = (state: SyncState): Effect.Effect<void, SessionError> =>
    statePath === undefined
      ? Effect.void
      : Files.writeFile(statePath, encodeState(state)).pipe(Effect.provideService(Fs, fs))

  return { walk, read, loadState, saveState }
}

/**
 * The sync's files on the `Fs` in context, its state kept at `options.state`.
 *
 * @since 0.2.0
 * @category layers
 */
export const layer = (options?: SyncFilesOptions): Layer.Layer<SyncFiles, never, Fs> =>
  Layer.effect(SyncFiles, Effect.map(Fs, (fs) => make(fs, options)))

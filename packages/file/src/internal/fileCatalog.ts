import type { Entry, ScanError, SessionCatalogService } from "@session-tree/core/SessionCatalog"
import { sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import type { FsService, Stat } from "../Fs.js"
import { deleteSession } from "./delete.js"
import { readAt } from "./fileJournal.js"
import { lstatNamed, step } from "./io.js"
import * as Paths from "./paths.js"

export const SUFFIX = ".jsonl"
const NS_PER_MS = 1_000_000n

/** Whether a directory entry's name is a session's (`NAME.jsonl`). */
export const isSessionName = (name: string): boolean => name.endsWith(SUFFIX) && name !== SUFFIX

/** The catalog's entry for what `stat` says of the name at `location`. */
const entryOf = (location: string, s: Stat): Entry => ({
  location,
  version: `${s.kind}:${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
  changed: Number(s.mtimeNs / NS_PER_MS)
})

/** The catalog's entry for the name at `location` now, or undefined when nothing has that name. */
export const entryAt = (fs: FsService, location: string): Effect.Effect<Entry | undefined, ScanError> =>
  Effect.map(lstatNamed(fs, "lstat", location), (s) => (s === undefined ? undefined : entryOf(location, s)))

/** The `*.jsonl` names directly in `directory`, each with its version. */
const scan = (fs: FsService, directory: string | undefined): Effect.Effect<Array<Entry>, ScanError> =>
  Effect.gen(function*() {
    // Resolved once, as a store resolves its directory, so a listed location is the store's.
    const dir = yield* Paths.realDirectory(fs, Path.resolve(directory ?? "."))
    const names = yield* step("list directory", fs.readdir(dir), {
      ENOTDIR: "SESSION_NOT_REGULAR_FILE",
      ENOENT: "SESSION_NOT_FOUND"
    }).pipe(
      // A file given where the directory of sessions is wanted: say so, and name the directory that holds it.
      Effect.mapError((error) =>
        error.code === "SESSION_NOT_REGULAR_FILE"
          ? sessionError(error.code, "a listing takes a directory, and this is a file", {
            path: dir,
            cause: error
          })
          : error.code === "SESSION_NOT_FOUND"
          ? sessionError(error.code, "the directory does not exist", { path: dir, cause: error })
          : error
      )
    )
    const entries: Array<Entry> = []
    for (const name of [...names].sort()) {
      if (!isSessionName(name)) continue
      const location = Path.join(dir, name)
      // Missing: gone between the listing and the lstat, so no longer there to list.
      const s = yield* lstatNamed(fs, "lstat", location)
      if (s === undefined) continue
      entries.push(entryOf(location, s))
    }
    return entries
  })

export const make = (fs: FsService): SessionCatalogService => ({
  scan: (directory) => scan(fs, directory),
  // Each file is read as the journal reads it; the directory they share is resolved once for all of them.
  readMany: (locations) =>
    Effect.suspend(() => {
      const resolve = Paths.resolver(fs)
      return Effect.forEach(locations, (location) =>
        Effect.either(Effect.flatMap(resolve(location), (paths) => readAt(fs, paths))))
    }),
  delete: (location) => deleteSession(fs, location)
})

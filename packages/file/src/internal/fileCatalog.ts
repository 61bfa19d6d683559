import type { Entry, SessionCatalogService } from "@session-tree/core/SessionCatalog"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import type { FsService } from "../Fs.js"
import { readAt } from "./fileJournal.js"
import * as Paths from "./paths.js"
import * as Steps from "./steps.js"

const SUFFIX = ".jsonl"
const NS_PER_MS = 1_000_000n

/** The `*.jsonl` names directly in the directory `scope`, each with its version. */
function* scanSteps(scope: string | undefined): Steps.Steps<Array<Entry>> {
  // Resolved once, as a store resolves its directory (SPEC C3), so a listed location is the store's.
  const dir = yield* Paths.realDirectory(Path.resolve(scope ?? "."))
  const names = yield* Steps.named("list directory", Steps.readdir(dir), {
    ENOTDIR: "SESSION_NOT_REGULAR_FILE",
    ENOENT: "SESSION_NOT_FOUND"
  })
  const entries: Array<Entry> = []
  for (const name of [...names].sort()) {
    if (!name.endsWith(SUFFIX) || name === SUFFIX) continue
    const location = Path.join(dir, name)
    // Missing: gone between the listing and the lstat, so no longer there to list.
    const s = yield* Steps.named("lstat", Steps.lstatOrMissing(location))
    if (s === undefined) continue
    entries.push({
      location,
      version: `${s.kind}:${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
      changed: Number(s.mtimeNs / NS_PER_MS)
    })
  }
  return entries
}

export const make = (fs: FsService): SessionCatalogService => ({
  // On a blocking service the whole scan runs as plain calls, one Effect for the listing.
  scan: (scope) => Effect.suspend(() => Steps.run(fs, scanSteps(scope))),
  // Each file is read as the journal reads it; the directory they share is resolved once for all of them.
  readMany: (locations) =>
    Effect.suspend(() => {
      const resolve = Paths.resolver()
      return Effect.forEach(locations, (location) =>
        Effect.flatMap(Effect.suspend(() => Steps.run(fs, resolve(location))), (paths) => readAt(fs, paths)).pipe(
          Effect.catchAll((error) => Effect.succeed<SessionError>(error))
        ))
    })
})

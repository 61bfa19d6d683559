import type { Entry, SessionCatalogService } from "@session-tree/core/SessionCatalog"
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Path from "node:path"
import { effectsOf, type FsService } from "../Fs.js"
import { make as makeJournal } from "./fileJournal.js"
import { step } from "./io.js"
import * as Paths from "./paths.js"
import * as Steps from "./steps.js"

const SUFFIX = ".jsonl"
const NS_PER_MS = 1_000_000n

export const make = (fs: FsService): SessionCatalogService => {
  const effects = effectsOf(fs)
  const journal = makeJournal(fs)
  return {
    scan: (scope) =>
      Effect.gen(function*() {
        // Resolved once, as a store resolves its directory (SPEC C3), so a listed location is the store's.
        const dir = yield* Steps.run(fs, Paths.realDirectory(Path.resolve(scope ?? ".")))
        // A symlink to a directory is listed through; anything else that is not a directory is refused.
        const names = yield* step("list directory", effects.readdir(dir), { ENOTDIR: "SESSION_NOT_REGULAR_FILE", ENOENT: "SESSION_NOT_FOUND" })
        const entries: Array<Entry> = []
        for (const name of [...names].sort()) {
          if (!name.endsWith(SUFFIX) || name === SUFFIX) continue
          const location = Path.join(dir, name)
          const found = yield* Effect.either(effects.lstat(location))
          if (found._tag === "Left") {
            // Gone between the listing and the lstat: no longer there to list.
            if (found.left.errno === "ENOENT") continue
            return yield* sessionError("SESSION_IO", `lstat failed: ${found.left.errno}`, { path: location, cause: found.left })
          }
          const s = found.right
          entries.push({
            location,
            version: `${s.kind}:${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`,
            changed: Number(s.mtimeNs / NS_PER_MS)
          })
        }
        return entries
      }),
    readMany: (locations) =>
      Effect.forEach(locations, (location) =>
        Effect.catchAll(journal.read(location), (error) => Effect.succeed<SessionError>(error)))
  }
}

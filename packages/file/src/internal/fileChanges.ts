import type { Change, SessionChangesService } from "@session-tree/core/SessionChanges"
import { sessionError } from "@session-tree/core/SessionError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as NFS from "node:fs"
import * as Path from "node:path"
import type { FsService } from "../Fs.js"
import { entryAt, isSessionName } from "./fileCatalog.js"
import { lstatNamed } from "./io.js"
import * as Paths from "./paths.js"

export interface Options {
  /** How long events are gathered into one batch (a commit writes several names). Default 15 ms. */
  readonly gather?: Duration.DurationInput | undefined
  /** How often everything is looked at again, in case the kernel dropped an event. Default 30 s. */
  readonly resyncEvery?: Duration.DurationInput | undefined
}

/** The session a name in the directory belongs to: itself, or the session whose marker it is. */
const sessionNameOf = (name: string): string | undefined => {
  if (isSessionName(name)) return name
  const base = name.endsWith(".marker") ? name.slice(0, -".marker".length) : undefined
  return base !== undefined && isSessionName(base) ? base : undefined
}

/** A name the kernel did not give (`null`), or a watcher that failed: look at everything again. */
const RESYNC = Symbol("resync")

export const make = (fs: FsService, options?: Options): SessionChangesService => ({
  watch: (directory) =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const dir = yield* Paths.realDirectory(fs, Path.resolve(directory ?? "."))
      const stat = yield* lstatNamed(fs, "lstat directory", dir)
      if (stat === undefined || stat.kind !== "directory") {
        return yield* sessionError("SESSION_NOT_REGULAR_FILE", "the path to watch is not a directory", { path: dir })
      }
      const events = yield* Queue.unbounded<string | typeof RESYNC>()
      // fs.watch is the kernel's own notification (inotify): no session byte is read through it, so it
      // need not go through the Fs service. Every name is a hint; what changed is read with lstat.
      yield* Effect.acquireRelease(
        Effect.try({
          try: () => {
            const watcher = NFS.watch(dir, { persistent: false }, (_event, name) => {
              events.unsafeOffer(name === null ? RESYNC : String(name))
            })
            watcher.on("error", () => events.unsafeOffer(RESYNC))
            return watcher
          },
          catch: (cause) => sessionError("SESSION_IO", `watching the directory failed: ${cause instanceof Error ? cause.message : String(cause)}`, { path: dir, cause })
        }),
        (watcher) => Effect.sync(() => watcher.close())
      )
      // What each session looked like when it was last reported, so that an event that changed
      // nothing the catalog sees (a read's access time) is not reported.
      const known = new Map<string, string>()
      const changesOf = (batch: ReadonlyArray<string | typeof RESYNC>): Effect.Effect<ReadonlyArray<Change>> =>
        Effect.gen(function*() {
          if (batch.includes(RESYNC)) {
            known.clear()
            return [{ _tag: "Resync" as const }]
          }
          const names = new Set<string>()
          for (const name of batch) {
            const session = sessionNameOf(name as string)
            if (session !== undefined) names.add(session)
          }
          const out: Array<Change> = []
          for (const name of names) {
            const location = Path.join(dir, name)
            const entry = yield* Effect.orElseSucceed(entryAt(fs, location), () => "failed" as const)
            if (entry === "failed") out.push({ _tag: "Resync" })
            else if (entry === undefined) {
              known.delete(location)
              out.push({ _tag: "Removed", location })
            } else if (known.get(location) !== entry.version) {
              known.set(location, entry.version)
              out.push({ _tag: "Changed", entry })
            }
          }
          return out
        })
      const resync = Stream.tick(options?.resyncEvery ?? Duration.seconds(30)).pipe(Stream.drop(1), Stream.as(RESYNC))
      return Stream.concat(
        Stream.make([{ _tag: "Resync" as const }] as ReadonlyArray<Change>),
        Stream.fromQueue(events).pipe(
          Stream.merge(resync),
          Stream.groupedWithin(4096, options?.gather ?? Duration.millis(15)),
          Stream.mapEffect((chunk) => changesOf([...chunk])),
          Stream.filter((changes) => changes.length > 0)
        )
      )
    }))
})

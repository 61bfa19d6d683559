/**
 * 6. Listing a directory of sessions: `Sessions.list` against Pi's
 * `SessionManager.list` on the same conversations in Pi's format, same run.
 *
 * 2,000 sessions of mixed sizes, log-uniform from 2 KB to 1 MB (most small,
 * some large, as agent sessions are), each its own session ID. The OS page
 * cache is warm for both (the files were just written); "cold" means our
 * listing has never seen the directory (a new `Sessions` service), so it reads
 * and validates every file in full, as Pi reads and parses every file on every
 * call. "repeated" lists again with the same service; "after a change" first
 * appends one entry to one session, and checks that the listing shows it.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import { mixedSessions, ourFile, piFile } from "../data.js"
import { now, rounds, type Row, summarize } from "../harness.js"
import { pi } from "../pi.js"

export interface ListOptions {
  readonly rounds: number
  readonly sessions?: number
}

const FileLive = Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)

export const benchList = async (options: ListOptions, dir: string): Promise<{ readonly rows: Array<Row>; readonly note: string }> => {
  const { SessionManager } = await pi()
  const count = options.sessions ?? 2_000
  const ours = Path.join(dir, "ours")
  const theirs = Path.join(dir, "pi")
  NFS.mkdirSync(ours)
  NFS.mkdirSync(theirs)
  let total = 0
  mixedSessions(count).forEach((c, i) => {
    const bytes = ourFile(c)
    total += bytes.length
    NFS.writeFileSync(Path.join(ours, `s-${i}.jsonl`), bytes)
    NFS.writeFileSync(Path.join(theirs, `s-${i}.jsonl`), piFile(c))
  })
  const changed = Path.join(ours, "s-0.jsonl")

  const run = <A>(effect: Effect.Effect<A, unknown, Sessions.Sessions>) =>
    Effect.runPromise(Effect.provide(effect, Sessions.layer.pipe(Layer.provide(FileLive))))

  // One long-lived service for the repeated listings; a new one for every cold listing.
  const service = await Effect.runPromise(Effect.provide(Sessions.make, FileLive))
  let appended = 0
  const samples = await rounds([
    {
      name: "Pi: SessionManager.list",
      run: async () => {
        const listed = await SessionManager.list("/work/project", theirs)
        if (listed.length !== count) throw new Error(`Pi listed ${listed.length} of ${count}`)
      }
    },
    {
      name: "ours: Sessions.list, cold",
      run: () =>
        run(Effect.gen(function*() {
          const listing = yield* (yield* Sessions.Sessions).list({ directory: ours })
          if (listing.total !== count || listing.sessions.some(Sessions.isUnreadable)) throw new Error("ours listed wrongly")
        }))
    },
    {
      name: "ours: Sessions.list, repeated",
      run: () =>
        Effect.runPromise(Effect.gen(function*() {
          const listing = yield* service.list({ directory: ours })
          if (listing.total !== count) throw new Error("ours listed wrongly")
        }))
    },
    {
      name: "ours: Sessions.list, after one session changed",
      run: async () => {
        // The append is what happens between two listings; only the listing after it is timed.
        const entries = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.load(changed)
          yield* store.append(store.entries.at(-1)!.id, { role: "user", id: `m-${++appended}`, content: "one more" })
          return store.entries.length
        })).pipe(Effect.provide(FileLive)))
        const start = now()
        const listing = await Effect.runPromise(service.list({ directory: ours }))
        const elapsed = now() - start
        const entry = listing.sessions.find((s) => s.location === changed)
        if (entry === undefined || Sessions.isUnreadable(entry) || entry.entries !== entries) throw new Error("the change is not listed")
        return elapsed
      }
    }
  ], { rounds: options.rounds, warmup: 1 })
  const rows = summarize(`list ${count} sessions (${(total / 1e6).toFixed(0)} MB)`, samples, "Pi: SessionManager.list")
  return { rows, note: `${count} sessions, ${(total / 1e6).toFixed(0)} MB of ours, sizes log-uniform 2 KB – 1 MB` }
}

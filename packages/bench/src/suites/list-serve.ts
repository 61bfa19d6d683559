/**
 * S3. The list of 100,000 sessions: the server's first page (200 sessions,
 * newest change first, with their usage) over a directory of 100,000 session
 * files, against `Sessions.list` of the same page by a service that has listed
 * them before (what a program without the server's catalog pays: it reads the
 * directory and `lstat`s every file each time), same run.
 *
 * The server keeps the catalog's entries in memory (one scan at start, then
 * `fs.watch`), and the listings and usage of the sessions it has shown (each
 * read once per version), so a page reads nothing that did not change. Its start
 * (the first scan) and its first page (which reads the page's 200 sessions) are
 * timed once.
 */
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Server from "@session-tree/server/Server"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { now, rounds, type Row, summarize } from "../harness.js"
import { agentSession } from "../serveData.js"

export interface ListServeOptions {
  readonly rounds: number
  readonly sessions?: number
}

const BASELINE = "Sessions.list({ limit: 200 }), listed before"

const get = async (url: string, expect: string): Promise<void> => {
  const response = await fetch(url)
  const text = await response.text()
  if (response.status !== 200 || !text.includes(expect)) throw new Error(`GET ${url}: ${response.status}`)
}

export const benchListServe = async (options: ListServeOptions, dir: string): Promise<{ readonly rows: Array<Row>; readonly note: string; readonly started: number; readonly cold: number }> => {
  const count = options.sessions ?? 100_000
  for (let n = 0; n < count; n++) NFS.writeFileSync(Path.join(dir, `s${String(n).padStart(6, "0")}.jsonl`), agentSession(n, 2).lines.join("\n") + "\n")
  const live = Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)
  const scope = Effect.runSync(Scope.make())
  try {
    let t = now()
    const running = await Effect.runPromise(Server.serve({ backend: "files", directory: dir, port: 0 }).pipe(Scope.extend(scope), Effect.provide(live)))
    const started = now() - t
    const total = `of ${count.toLocaleString("en-US")} sessions`
    t = now()
    await get(running.url, total)
    const cold = now() - t
    const library = await Effect.runPromise(Effect.provide(Sessions.make, live))
    await Effect.runPromise(library.list({ directory: dir, limit: 200 }))
    const samples = await rounds([
      {
        name: BASELINE,
        run: async () => {
          const page = await Effect.runPromise(library.list({ directory: dir, limit: 200 }))
          if (page.total !== count || page.sessions.length !== 200) throw new Error("listed wrongly")
        }
      },
      { name: "server: GET / (the first page, 200 sessions with usage)", run: () => get(running.url, total) },
      { name: "server: GET /?page=N (the last page)", run: () => get(`${running.url}?page=${Math.ceil(count / 200) - 1}`, total) }
    ], { rounds: options.rounds, warmup: 2 })
    return {
      rows: summarize(`${count.toLocaleString("en-US")} sessions`, samples, BASELINE),
      note: `${count.toLocaleString("en-US")} session files of 2 entries`,
      started,
      cold
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

/**
 * Search and usage from the Promise API: the same answers as the Effect API on
 * the same directory, and a refused option rejects with the facade's error.
 */
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as FileJournal from "../src/FileJournal.js"
import * as Promises from "../src/Promise.js"

let dir = ""
beforeAll(() => {
  dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-promise-search-"))
  for (const session of Corpus.corpus) NFS.writeFileSync(Path.join(dir, `${session.name}.jsonl`), Corpus.fileText(session))
})
afterAll(() => NFS.rmSync(dir, { recursive: true, force: true }))

const effectApi = <A>(f: (s: Sessions.SessionsService) => Effect.Effect<A, unknown>) =>
  Effect.runPromise(Effect.flatMap(Sessions.Sessions, f).pipe(
    Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))))
  ))

describe("the Promise API", () => {
  it("searches as the Effect API does", async () => {
    const sessions = new Promises.Sessions()
    for (const options of [{ query: "connection" }, { query: `"service did not"`, roles: ["assistant" as const] }, { query: "café", limit: 1 }]) {
      const promised = await sessions.search({ ...options, directory: dir })
      expect(promised).toEqual(await effectApi((s) => s.search({ ...options, directory: dir })))
      expect(promised.total).toBeGreaterThan(0)
    }
  })

  it("sums usage as the Effect API does", async () => {
    const sessions = new Promises.Sessions()
    for (const by of [undefined, "day", "model", "session"] as const) {
      expect(await sessions.stats({ directory: dir, by })).toEqual(await effectApi((s) => s.stats({ directory: dir, by })))
    }
    expect((await sessions.stats({ directory: dir })).total.inputTokens).toBe(2400)
  })

  it("rejects a query with no word, and a directory that is not there, with the facade's error and its code", async () => {
    const sessions = new Promises.Sessions()
    await expect(sessions.search({ query: "  ", directory: dir })).rejects.toMatchObject({ name: "SessionError", code: "SESSION_INVALID_OPTIONS" })
    await expect(sessions.stats({ directory: Path.join(dir, "nope") })).rejects.toBeInstanceOf(Promises.SessionError)
  })
})

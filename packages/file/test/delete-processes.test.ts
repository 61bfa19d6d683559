/**
 * A session deleted while another process holds it open: that process's next append fails
 * typed and writes nothing, so the session is never brought back, for either format version.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "../src/FileJournal.js"
import { listing, makeTempDir } from "./fixtures/helpers.js"
import { prepare, type Runner, start } from "./fixtures/spawn.js"

const NAME = "s.jsonl"
const fixtures = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "fixtures")

let runner: Runner
let appender: Runner
beforeAll(async () => {
  runner = await prepare(Path.join(fixtures, "holder.ts"))
  appender = await prepare(Path.join(fixtures, "appender.ts"))
}, 60_000)
afterAll(() => {
  runner?.dispose()
  appender?.dispose()
})

const layer = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic))
const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof layer>>) => Effect.runPromise(Effect.provide(effect, layer))

describe("delete while another process holds the session", () => {
  for (const version of [1, 2] as const) {
    it(`version ${version}: the holder's next append fails typed, and the file stays gone`, async () => {
      const dir = makeTempDir()
      try {
        const path = Path.join(dir, NAME)
        await run(Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(path, { id: "held", version })
          yield* store.append(null, version === 1
            ? { role: "user", id: "m1", content: "one" }
            : { role: "user", id: "m1", content: [{ type: "text", text: "one" }] })
        })))
        const child = start(runner, [path])
        expect(await child.waitFor((l) => l.startsWith("loaded "))).toBe(`loaded ${version} 1`)
        const deleted = await run(Effect.flatMap(Sessions.Sessions, (sessions) => sessions.delete(path)))
        expect(deleted).toBe(path)
        expect(listing(dir)).toEqual([])
        child.process.stdin!.write("go\n")
        const outcome = await child.waitFor((l) => l.startsWith("ack ") || l.startsWith("error ") || l.startsWith("defect "))
        expect((await child.exited).code).toBe(0)
        expect(outcome).toBe("error SESSION_REPLACED")
        expect(listing(dir)).toEqual([])
        expect(NFS.existsSync(path)).toBe(false)
      } finally {
        NFS.rmSync(dir, { recursive: true, force: true })
      }
    }, 60_000)
  }

  it("while two processes append in a loop: the delete wins between their commits, and neither brings the file back", async () => {
    const dir = makeTempDir()
    try {
      const path = Path.join(dir, NAME)
      await run(Effect.scoped(Effect.asVoid(SessionStore.create(path, { id: "raced", version: 1 }))))
      // Each pauses after its appends, so that neither wins every race until the session's cap.
      const children = ["a", "b"].map((prefix) => start(appender, [path, prefix, "0"], { APPENDER_WAIT: "1", APPENDER_PAUSE_MS: "3" }))
      await Promise.all(children.map((c) => c.waitFor((l) => l === "started")))
      for (const c of children) c.process.stdin!.write("go\n")
      await Promise.all(children.map((c) => c.waitFor((l) => l.startsWith("ack "))))
      // A commit in flight holds the marker (SESSION_BUSY), or installs a new file after the delete
      // looked (SESSION_REPLACED): either is a lost race, tried again.
      let deleted: string | undefined
      for (let attempt = 0; deleted === undefined; attempt++) {
        const result = await run(Effect.either(Effect.flatMap(Sessions.Sessions, (sessions) => sessions.delete(path))))
        if (result._tag === "Right") deleted = result.right
        else {
          expect(["SESSION_BUSY", "SESSION_REPLACED"]).toContain(result.left.code)
          expect(attempt).toBeLessThan(200)
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
      }
      expect(deleted).toBe(path)
      // Each appender fails typed once it finds the session gone, and never writes it again.
      const exits = await Promise.all(children.map((c) => c.exited))
      expect(exits.map((e) => e.code)).toEqual([3, 3])
      for (const c of children) expect(c.lines.at(-1)).toMatch(/^error SESSION_NOT_FOUND /)
      expect(listing(dir)).toEqual([])
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)
})

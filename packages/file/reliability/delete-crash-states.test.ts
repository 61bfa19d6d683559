/**
 * Crash states of a delete: every state a power loss after any prefix of a recorded delete may
 * leave on disk (the model of posix-model.ts: any subset of the directory steps not yet fsynced,
 * any version of unsynced data), recovered with `recover`, must hold the session whole (the same
 * bytes, every entry) or nothing at all; a state after the delete resolved must hold nothing.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import * as Recovery from "../src/Recovery.js"
import { diskTempDir, fastTempDir, LONG, removeDir, report } from "./support/config.js"
import { digest, Model } from "./support/posix-model.js"
import { attempt, run, user } from "./support/run.js"
import { recorder } from "./support/trace.js"

const BASE = "s.jsonl"
const dirs: Array<string> = []
afterAll(() => {
  for (const d of dirs) removeDir(d)
})

const fsync = (path: string) => {
  const fd = NFS.openSync(path, "r")
  NFS.fsyncSync(fd)
  NFS.closeSync(fd)
}

describe("crash states of a delete", () => {
  for (const version of [1, 2] as const) {
    it(`version ${version}: after recover, whole or gone at every prefix; gone once the delete resolved`, async () => {
      const dir = diskTempDir(`delete-v${version}`)
      dirs.push(dir)
      const path = Path.join(dir, BASE)
      const ids = await run(Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { id: "deleted", version })
        let parent: string | null = null
        for (let i = 0; i < 3; i++) {
          parent = (yield* store.append(parent, version === 1
            ? user(`m${i}`, `entry ${i}`)
            : { role: "user", id: `m${i}`, content: [{ type: "text", text: `entry ${i}` }] })).id
        }
        return store.entries.map((e) => e.id)
      }))
      const bytes = NFS.readFileSync(path)
      fsync(path)
      fsync(dir)
      const initial = Model.fromDirectory(dir)
      const rec = recorder(Fs.node)
      rec.recording = true
      await Effect.runPromise(
        Effect.flatMap(Sessions.make, (sessions) => sessions.delete(path)).pipe(
          Effect.tap(() => Effect.sync(() => rec.mark("delete resolved"))),
          Effect.provide(Layer.merge(FileJournal.layerWithFs(rec.fs), Ids.layerDeterministic))
        )
      )
      rec.recording = false
      expect(NFS.readdirSync(dir)).toEqual([])

      const root = fastTempDir(`delete-states-v${version}`)
      dirs.push(root)
      const model = initial.clone()
      const seen = new Map<string, string>()
      const outcomes: Record<string, number> = {}
      const violations: Array<string> = []
      let resolved = false
      let states = 0
      for (let k = 0; k <= rec.events.length; k++) {
        if (k > 0) {
          const event = rec.events[k - 1]!
          if (event.op === "settled") resolved = true
          if (!model.apply(event) && event.op !== "settled") continue
        }
        for (const state of model.crashStates(LONG ? "every" : "sampled")) {
          states++
          const key = `${resolved}|` + state.files.map((f) => `${f.names.join("+")}=${digest(f.bytes)}`).sort().join("|")
          if (seen.has(key)) continue
          const at = Path.join(root, String(seen.size))
          NFS.mkdirSync(at)
          for (const file of state.files) {
            const [first, ...others] = file.names
            NFS.writeFileSync(Path.join(at, first!), file.bytes)
            for (const other of others) NFS.linkSync(Path.join(at, first!), Path.join(at, other))
          }
          const target = Path.join(at, BASE)
          const recovered = await attempt(Recovery.recover(target))
          const left = NFS.readdirSync(at)
          let outcome: string
          if (recovered._tag === "Left") outcome = `recover failed: ${recovered.left.message}`
          else if (left.length === 0) outcome = "gone"
          else if (left.length !== 1 || left[0] !== BASE) outcome = `left: ${left.join(", ")}`
          else if (!NFS.readFileSync(target).equals(bytes)) outcome = "a file that is not the session"
          else {
            const loaded = await attempt(SessionStore.read(target))
            outcome = loaded._tag === "Right" && JSON.stringify(loaded.right.entries.map((e) => e.id)) === JSON.stringify(ids)
              ? "whole"
              : "the session does not load whole"
          }
          if (resolved && outcome === "whole") outcome = "whole after the delete resolved"
          seen.set(key, outcome)
          outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
          if (outcome !== "gone" && outcome !== "whole") {
            violations.push(`after step ${k} (survived ${state.survived.join("; ")}): ${outcome}`)
          }
          removeDir(at)
        }
      }
      report(`delete-crash-states:v${version}`, { events: rec.events.length, states, distinct: seen.size, outcomes })
      expect(violations).toEqual([])
      expect(Object.keys(outcomes).sort()).toEqual(["gone", "whole"])
    }, 300_000)
  }
})

/**
 * Crash states of `recover` itself: it must be safe to crash while recovering
 * and run `recover` again. Each state a crash during `recover` may leave (the same
 * model as crash-states.test.ts) is recovered once more and read: it must be the
 * generation `recover` was restoring or keeping, from before its first step on.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { encodeLine } from "@session-tree/core/Codec"
import * as Fs from "../src/Fs.js"
import type { SessionEntry, SessionHeader } from "@session-tree/core/Record"
import * as Recovery from "../src/Recovery.js"
import { diskTempDir, LONG, removeDir, report } from "./support/config.js"
import { checkTrace } from "./support/crash-check.js"
import { Model } from "./support/posix-model.js"
import { run, user } from "./support/run.js"
import { recorder } from "./support/trace.js"

const BASE = "s.jsonl"
const dirs: Array<string> = []
const totals = { traces: 0, steps: 0, prefixes: 0, states: 0, distinct: 0 }
afterAll(() => {
  for (const d of dirs) removeDir(d)
  report("crash-states-recover", totals)
})

const header: SessionHeader = { type: "session", version: 1, id: "recover-session", timestamp: "2026-01-02T03:04:05.006Z" }
const entry = (i: number): SessionEntry => ({
  type: "entry",
  version: 1,
  id: `e${i}`,
  parentId: i === 1 ? null : `e${i - 1}`,
  timestamp: "2026-01-02T03:04:05.007Z",
  message: user(`m${i}`, `entry ${i}`)
})
const generation = (n: number) => encodeLine(header) + Array.from({ length: n }, (_, i) => encodeLine(entry(i + 1))).join("")

const fsync = (path: string) => {
  const fd = NFS.openSync(path, "r")
  NFS.fsyncSync(fd)
  NFS.closeSync(fd)
}

/** Prepares DIR with `setup`, records one `recover`, and checks every crash state of it. */
const recoverTrace = async (name: string, setup: (dir: string, path: string) => void) => {
  const dir = diskTempDir(`recover-${name}`)
  dirs.push(dir)
  const path = Path.join(dir, BASE)
  setup(dir, path)
  for (const n of NFS.readdirSync(dir)) fsync(Path.join(dir, n))
  fsync(dir)
  const initial = Model.fromDirectory(dir)
  const rec = recorder(Fs.node)
  rec.recording = true
  const report0 = await run(Effect.tap(Recovery.recover(path), () => Effect.sync(() => rec.mark("recover resolved"))), rec.fs)
  rec.recording = false
  const result = await checkTrace({ name, dir, base: BASE, initial, events: rec.events, mode: LONG ? "every" : "sampled", appendAfter: LONG ? true : 4 })
  totals.traces++
  totals.steps += result.steps
  totals.prefixes += result.prefixes
  totals.states += result.states
  totals.distinct += result.distinct
  report(`crash-states-recover:${name}`, { marker: report0.marker, removed: report0.removed.length, steps: result.steps, prefixes: result.prefixes, states: result.states, distinct: result.distinct, outcomes: result.outcomes })
  return { result, path, dir }
}

describe("crash states of recover", () => {
  it("a marker beside the newer generation, with the writer's temp names: the newer generation throughout", async () => {
    const { dir, result } = await recoverTrace("keep-newer", (dir, path) => {
      NFS.writeFileSync(path, generation(2))
      NFS.writeFileSync(`${path}.marker`, generation(1))
      NFS.linkSync(path, Path.join(dir, `${BASE}.tmp-00000000-1-1-7`))
      NFS.writeFileSync(Path.join(dir, `${BASE}.next-00000000-1-1-7`), generation(2).slice(0, 50))
    })
    expect(result.violations).toEqual([])
    // The path never changes: every crash state holds the newer generation (G0 here).
    expect(Object.keys(result.outcomes)).toEqual(["G0"])
    expect(NFS.readdirSync(dir)).toEqual([BASE])
  })

  it("a marker beside a file that does not load: the marker's generation is restored, also after a crash in between", async () => {
    const { path, result } = await recoverTrace("restore-marker", (_dir, path) => {
      NFS.writeFileSync(`${path}.marker`, generation(2))
      NFS.writeFileSync(path, generation(2) + "not json\n")
    })
    expect(result.violations).toEqual([])
    // Only the marker's generation is ever read back, whether the crash came before the restore or after.
    expect(Object.keys(result.outcomes)).toEqual(["G1"])
    expect(NFS.readFileSync(path, "utf8")).toBe(generation(2))
  })

  it("a marker and no file at the path: restored", async () => {
    const { path, result } = await recoverTrace("restore-missing", (_dir, path) => {
      NFS.writeFileSync(`${path}.marker`, generation(3))
    })
    expect(result.violations).toEqual([])
    expect(Object.keys(result.outcomes)).toEqual(["G1"])
    expect(NFS.readFileSync(path, "utf8")).toBe(generation(3))
  })
})

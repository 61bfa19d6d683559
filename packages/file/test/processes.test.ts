/**
 * Several processes on one file (SPEC B5): concurrent appenders never lose an
 * acknowledged entry and fail only with typed race errors; a writer killed with
 * SIGKILL at random moments leaves a file that loads, and after `recover` a
 * directory with nothing of ours beside it, holding every acknowledged entry.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Ids from "@session-tree/core/Ids"
import * as Recovery from "../src/Recovery.js"
import * as SessionStore from "@session-tree/core/SessionStore"
import { listing, makeTempDir } from "./fixtures/helpers.js"
import { type Child, prepare, type Runner, start } from "./fixtures/spawn.js"

const NAME = "s.jsonl"
const appender = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "fixtures", "appender.ts")

let runner: Runner
beforeAll(async () => {
  runner = await prepare(appender)
}, 60_000)
afterAll(() => runner?.dispose())

const run = <A, E>(effect: Effect.Effect<A, E, Fs.Fs | SessionJournal | Ids.Ids>) =>
  Effect.runPromise(Effect.provide(effect, Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)))

const createSession = (path: string) => run(Effect.scoped(Effect.asVoid(SessionStore.create(path, { id: "shared" }))))
const readIds = async (path: string) => (await run(SessionStore.read(path))).entries.map((e) => e.id)

const acksOf = (child: Child) => child.lines.filter((l) => l.startsWith("ack ")).map((l) => l.slice(4))

describe("processes", () => {
  it("four processes append to one file without losing an acknowledged entry", async () => {
    const dir = makeTempDir()
    try {
      const path = Path.join(dir, NAME)
      await createSession(path)
      const perChild = 25
      const children = ["p0", "p1", "p2", "p3"].map((prefix) =>
        start(runner, [path, prefix, String(perChild)], { APPENDER_WAIT: "1" })
      )
      // All four load and append at once.
      await Promise.all(children.map((c) => c.waitFor((l) => l === "started")))
      for (const c of children) c.process.stdin!.write("go\n")
      const exits = await Promise.all(children.map((c) => c.exited))
      const lines = children.flatMap((c) => c.lines)
      // Every child finished normally; the only failures seen were the typed race errors.
      expect(exits.map((e) => e.code)).toEqual([0, 0, 0, 0])
      const failures = lines.filter((l) => !l.startsWith("ack ") && l !== "ready" && l !== "started")
      for (const f of failures) expect(f).toMatch(/^retry SESSION_(BUSY|REPLACED)$/)
      // They did race: losers failed typed, reloaded and appended again.
      expect(failures.length).toBeGreaterThan(0)
      const acked = children.flatMap(acksOf)
      expect(acked.length).toBe(4 * perChild)
      expect(new Set(acked).size).toBe(acked.length)
      // The file holds exactly the acknowledged entries (a lost race installs nothing) and nothing else is left.
      const ids = await readIds(path)
      expect([...ids].sort()).toEqual([...acked].sort())
      expect(listing(dir)).toEqual([NAME])
      console.log(`4 processes: ${acked.length} acknowledged appends, ${failures.length} typed retries`)
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a reader never sees part of a batch while another process appends batches of three (version 2, in place)", async () => {
    const dir = makeTempDir()
    const path = Path.join(dir, NAME)
    try {
      await createSession(path)
      const batches = 40
      // Each write of the child puts half its bytes in place and waits before the rest, so the file
      // itself holds part of a batch for a while; the raw reads below count how often they saw one.
      const child = start(runner, [path, "c", String(batches)], { APPENDER_CHAIN: "3", APPENDER_SPLIT_WRITES: "1" })
      let reads = 0
      let rawPartial = 0
      const seen = new Set<number>()
      let done = false
      void child.exited.then(() => void (done = true))
      while (!done) {
        const loaded = await run(SessionStore.read(path))
        reads++
        // The header's session holds only whole batches: never one or two entries of a batch.
        expect(loaded.entries.length % 3).toBe(0)
        expect(loaded.tail).toBe("none")
        seen.add(loaded.entries.length)
        const raw = NFS.readFileSync(path)
        let lines = 0
        for (let at = raw.indexOf(10); at !== -1; at = raw.indexOf(10, at + 1)) lines++
        if ((lines - 1) % 3 !== 0 || raw.at(-1) !== 10) rawPartial++
        // A turn of the event loop, so that the child's exit is seen.
        await new Promise((resolve) => setImmediate(resolve))
      }
      expect({ code: (await child.exited).code, said: child.lines.filter((l) => !l.startsWith("ack ")) }).toEqual({ code: 0, said: ["ready"] })
      expect(acksOf(child).length).toBe(3 * batches)
      expect((await readIds(path)).length).toBe(3 * batches)
      // The reads overlapped the appends: they saw several states in between.
      expect(seen.size).toBeGreaterThan(2)
      // ...and the file held part of a batch while some of them ran: the store's reads hid it.
      expect(rawPartial).toBeGreaterThan(0)
      console.log(
        `${reads} reads beside ${batches} appends of three entries: ${seen.size} distinct states, never part of a batch; the file held part of one at ${rawPartial} raw reads`
      )
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("a writer killed with SIGKILL at random moments loses no acknowledged entry", async () => {
    const dir = makeTempDir()
    const kills = 20
    const spawnNext = (i: number) => start(runner, [path, `k${i}`, "0"], { APPENDER_WAIT: "1" })
    const path = Path.join(dir, NAME)
    let spare: Child | undefined
    try {
      await createSession(path)
      const acked = new Set<string>()
      let leftBehind = 0
      let markers = 0
      // The next child starts while the current one runs, so its start-up is not on the clock.
      spare = spawnNext(0)
      for (let i = 0; i < kills; i++) {
        const child: Child = spare
        spare = spawnNext(i + 1)
        child.process.stdin!.write("go\n")
        await child.waitFor((l) => l === "ready")
        if (i % 2 === 0) {
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 120))
        } else {
          // Every other kill lands inside a commit: once one of its names appears, a random part of a
          // millisecond later. (A timer of this process fires when it gets a CPU; with both busy, that
          // is mostly when the child waits between two commits, so timed kills alone rarely cut one.)
          const until = performance.now() + 2_000
          while (listing(dir).length < 2 && performance.now() < until) {
            // spin
          }
          const after = performance.now() + Math.random()
          while (performance.now() < after) {
            // spin
          }
        }
        child.process.kill("SIGKILL")
        const exit = await child.exited
        expect(exit.signal).toBe("SIGKILL")
        for (const id of acksOf(child)) acked.add(id)
        for (const line of child.lines) expect(line).toMatch(/^(started|ready|ack k\d+-\d+)$/)
        // Before any recovery the path already holds one whole generation with every acknowledged entry.
        const before = new Set(await readIds(path))
        for (const id of acked) expect(before.has(id)).toBe(true)
        const names = listing(dir)
        if (names.length > 1) leftBehind++
        if (names.includes(`${NAME}.marker`)) markers++
        for (const name of names) expect(name).toMatch(/^s\.jsonl(\.marker|\.(tmp|next|rollback)-[0-9a-f]{8}-\d+-\d+-\d+)?$/)
        const report = await Effect.runPromise(Effect.provide(Recovery.recover(path), FileJournal.layerWithFs()))
        expect(report.marker === "none").toBe(!names.includes(`${NAME}.marker`))
        expect(listing(dir)).toEqual([NAME])
        const after = new Set(await readIds(path))
        for (const id of acked) expect(after.has(id)).toBe(true)
      }
      // The kills landed while the child was working: it had acknowledged entries, and some kills cut a commit.
      expect(acked.size).toBeGreaterThan(kills)
      expect(leftBehind).toBeGreaterThan(0)
      console.log(`${kills} kills: ${acked.size} acknowledged, ${leftBehind} left names behind (${markers} a marker)`)
    } finally {
      spare?.process.kill("SIGKILL")
      if (spare !== undefined) await spare.exited
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

/**
 * Real kills (SPEC B5): a child process appends to one file in a loop and prints
 * each entry ID only after its append resolved; it is SIGKILLed at a random moment,
 * then `recover` and `SessionStore.read` run and every acknowledged entry must be
 * there. The same file carries on across kills (the next child loads what the last
 * one left) until it is large, then a new file starts (so `create` is killed too,
 * and commits run both with written and with kernel-copied generations).
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, expect, it } from "vitest"
import * as Recovery from "../src/Recovery.js"
import * as SessionStore from "@session-tree/core/SessionStore"
import { type Child, prepareChild, sleep, spawnChild } from "./support/children.js"
import { count, diskTempDir, fastTempDir, LONG, removeDir, report } from "./support/config.js"
import { contentFor } from "./support/content.js"
import { leftoverPattern } from "./support/crash-check.js"
import { attempt } from "./support/run.js"
import { messageOf, textOf } from "@session-tree/core/Record"

const KILLS = count(20, 1_000)
/** A file is retired past this size: above the kernel-copy threshold, below every cap. */
const ROTATE_BYTES = 384 * 1024
const WARM = 2

// A SIGKILL leaves the page cache intact, so the filesystem type does not change what survives;
// the long run uses the disk (slower commits, more kills inside fsync), the fast one tmpfs.
const dir = LONG ? diskTempDir("kills") : fastTempDir("kills")
afterAll(() => removeDir(dir))

// A deterministic pseudo-random sequence, so a failing run can be replayed with the same seed.
const seed = Number(process.env["RELIABILITY_SEED"] ?? Date.now() % 1_000_000)
let rng = seed
const random = () => {
  rng = (Math.imul(rng, 1103515245) + 12345) >>> 0
  return rng / 2 ** 32
}

it(`${KILLS} SIGKILLs of an appending process lose no acknowledged entry`, async () => {
  const stats = {
    seed,
    kills: 0,
    files: 1,
    acknowledged: 0,
    acknowledgedLost: 0,
    observedLost: 0,
    killedBeforeReady: 0,
    markersRemoved: 0,
    markersRestored: 0,
    leftoversRemoved: 0,
    strays: 0,
    tailsFound: 0,
    maxEntries: 0,
    msPerCommit: 0
  }
  const problems: Array<string> = []
  let fileNo = 1
  let path = Path.join(dir, `s-${fileNo}.jsonl`)
  /** Entry IDs acknowledged by any child on the current file. */
  let acked = new Set<string>()
  /** The entries seen at the last check: a later check must find them again, in order. */
  let observed: ReadonlyArray<string> = []
  let childNo = 0
  /** Milliseconds between two acknowledgements, a running estimate of one commit's time. */
  let ackInterval = 10
  const warm: Array<Child> = []
  const appender = await prepareChild("appender.ts")
  const spawnNext = () => warm.push(spawnChild(appender, [path, `k${++childNo}`]))

  for (let i = 0; i < WARM; i++) spawnNext()
  try {
    for (let kill = 0; kill < KILLS; kill++) {
      const child = warm.shift()!
      spawnNext()
      child.send("go")
      // Most kills land in the append loop, at a uniformly random moment of a commit: after a
      // random number of acknowledgements, within about one commit's time (measured as we go).
      // Some land during load or create.
      const draw = random()
      if (draw < 0.1) {
        await sleep(random() * 30)
      } else if (draw < 0.5) {
        // These land inside a commit: once one of its names appears, within a millisecond.
        // (A timer of this process fires when it gets a CPU; with both busy, that is mostly when the
        // child waits between two commits, so timed kills alone rarely cut one.)
        await child.waitFor("ready").catch(() => undefined)
        const prefix = `${Path.basename(path)}.`
        const until = performance.now() + 2_000
        while (!NFS.readdirSync(dir).some((n) => n.startsWith(prefix)) && performance.now() < until) {
          // spin
        }
        const after = performance.now() + random() * Math.min(ackInterval, 1)
        while (performance.now() < after) {
          // spin
        }
      } else {
        await child.waitFor("ready").catch(() => undefined)
        const start = performance.now()
        const acks = Math.floor(random() * 6)
        await child.waitForCount("ack ", acks)
        if (acks > 0) ackInterval = 0.8 * ackInterval + 0.2 * ((performance.now() - start) / acks)
        await sleep(random() * 2 * ackInterval)
      }
      if (!child.lines.some((l) => l.startsWith("ready"))) stats.killedBeforeReady++
      child.proc.kill("SIGKILL")
      const exit = await child.exited
      stats.kills++
      const failed = child.lines.find((l) => l.startsWith("error"))
      if (failed !== undefined || exit.signal !== "SIGKILL") {
        problems.push(`kill ${kill}: the child failed on its own: ${failed ?? exit.code} ${child.stderr().slice(0, 500)}`)
        break
      }
      for (const line of child.lines) {
        if (line.startsWith("ack ")) {
          acked.add(line.slice(4))
          stats.acknowledged++
        }
      }

      const recovered = await attempt(Recovery.recover(path))
      if (recovered._tag === "Left") {
        problems.push(`kill ${kill}: recover failed: ${recovered.left.message}`)
        break
      }
      if (recovered.right.marker === "removed") stats.markersRemoved++
      if (recovered.right.marker === "restored") stats.markersRestored++
      stats.leftoversRemoved += recovered.right.removed.length
      const leftover = leftoverPattern(Path.basename(path))
      const strays = NFS.readdirSync(dir).filter((n) => leftover.test(n))
      stats.strays += strays.length
      if (strays.length > 0) problems.push(`kill ${kill}: left after recover: ${strays.join(", ")}`)

      const loaded = await attempt(SessionStore.read(path))
      if (loaded._tag === "Left") {
        // Killed before `create` linked the file: nothing was promised yet.
        if (loaded.left.code === "SESSION_NOT_FOUND" && acked.size === 0 && observed.length === 0) continue
        problems.push(`kill ${kill}: the file does not load: ${loaded.left.message}`)
        break
      }
      const ids = loaded.right.entries.map((e) => e.id)
      const present = new Set(ids)
      for (const id of acked) {
        if (!present.has(id)) {
          stats.acknowledgedLost++
          problems.push(`kill ${kill}: acknowledged entry ${id} is lost`)
        }
      }
      if (observed.some((id, i) => ids[i] !== id)) {
        stats.observedLost++
        problems.push(`kill ${kill}: entries seen before are no longer a prefix of the file`)
      }
      for (const e of loaded.right.entries) {
        const m = messageOf(e)
        if (m?.role !== "user" || textOf(m) !== contentFor(m.id)) {
          problems.push(`kill ${kill}: entry ${e.id} holds other content than was appended`)
          break
        }
      }
      if (loaded.right.tail !== "none") stats.tailsFound++
      observed = ids
      stats.maxEntries = Math.max(stats.maxEntries, ids.length)
      if (problems.length > 0) break

      if (loaded.right.size > ROTATE_BYTES) {
        // Retire the file: the warm children hold its path, so they are replaced.
        for (const w of warm.splice(0)) {
          w.proc.kill("SIGKILL")
          await w.exited
        }
        path = Path.join(dir, `s-${++fileNo}.jsonl`)
        acked = new Set()
        observed = []
        stats.files++
        for (let i = 0; i < WARM; i++) spawnNext()
      }
    }
  } finally {
    for (const w of warm.splice(0)) {
      w.proc.kill("SIGKILL")
      await w.exited
    }
    stats.msPerCommit = Math.round(ackInterval * 10) / 10
    report("kills", stats)
  }
  expect(problems).toEqual([])
  expect(stats.kills).toBe(KILLS)
  expect(stats.acknowledgedLost).toBe(0)
  // The run did exercise appends: most kills came after several acknowledged entries.
  expect(stats.acknowledged).toBeGreaterThan(KILLS)
})

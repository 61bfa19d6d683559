/**
 * Where the time goes (`npx tsx packages/bench/src/profile.ts`).
 *
 * Load: the loader's phases added one at a time on the same bytes, each row
 * the cumulative cost: split into lines, JSON.parse, the duplicate-key /
 * `__proto__` / depth walk, record and message decoding, history checks (IDs,
 * parents, tool links); then the whole `Jsonl.decode` and `SessionStore.read`.
 *
 * Append: every filesystem step of `store.append` timed through the Fs
 * service, and what is left outside the steps (validation, encoding, Effect,
 * scheduling); and the steps of the fiber one append takes (every fiber of the
 * store counted, the committer's and the closer's included), which is what
 * its Effect machinery costs on a run whose caches are cold. Timing a step
 * means intercepting it, which wraps every step in more Effects than `Fs.node`
 * alone runs: the time outside the steps is higher here than in `npm run bench`.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as RuntimeFlags from "effect/RuntimeFlags"
import * as RuntimeFlagsPatch from "effect/RuntimeFlagsPatch"
import * as Scope from "effect/Scope"
import * as Supervisor from "effect/Supervisor"
import * as Ids from "@session-tree/core/Ids"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { History } from "@session-tree/core/History"
import { parseObjectLine } from "@session-tree/core/Json"
import * as Record from "@session-tree/core/Record"
import * as Either from "effect/Either"
import * as Fs from "@session-tree/file/Fs"
import { decode as decodeSession, toLines } from "@session-tree/file/Jsonl"
import { arg } from "./args.js"
import { conversation, ourFile, prefixOfSize, userMessage } from "./data.js"
import { sessionOfSize } from "./dataSize.js"
import { fileV2 } from "./dataV2.js"
import { machine, median, now, rounds, summarize, table, tempDir } from "./harness.js"
import * as Ours from "./ours.js"
import { floorLoad, ourRead } from "./suites/load.js"

// The decoder the loader uses for a parsed line: the direct path for canonical records, else `decodeEntry`.
const decodeEntry = Record.decodeParsedEntry

const lines = (bytes: Uint8Array): ReadonlyArray<string> => {
  return Either.getOrThrow(toLines(bytes)).lines
}
const parsed = (text: string) => {
  const p = parseObjectLine(text)
  if (Either.isLeft(p)) throw new Error(p.left)
  return p.right
}

const profileLoad = async (ascii: boolean, options: { rounds: number; warmup: number }, dir: string) => {
  const bytes = ourFile(conversation({ entries: 4_000, ascii }))
  const path = Path.join(dir, "profile.jsonl")
  NFS.writeFileSync(path, bytes)
  const samples = await rounds([
    { name: "floor (read, isUtf8, split, JSON.parse)", run: () => void floorLoad(path) },
    { name: "1 Jsonl.toLines", run: () => void lines(bytes) },
    { name: "2 + JSON.parse", run: () => void lines(bytes).map((l) => JSON.parse(l)) },
    { name: "3 + key walk (parseObjectLine)", run: () => void lines(bytes).map(parsed) },
    {
      name: "4 + record decoding",
      run: () => void lines(bytes).slice(1).map((l, i) => decodeEntry(parsed(l), i + 2))
    },
    {
      name: "5 + History check/add",
      run: () => {
        const history = new History()
        lines(bytes).slice(1).forEach((l, i) => {
          const entry = decodeEntry(parsed(l), i + 2)
          if (Either.isLeft(entry) || history.check(entry.right) !== undefined) throw new Error("invalid")
          history.add(entry.right)
        })
      }
    },
    { name: "Jsonl.decode", run: () => void decodeSession(bytes) },
    { name: "SessionStore.read", run: async () => void (await ourRead(path)) }
  ], options)
  return summarize(`load phases, ${ascii ? "ASCII" : "UTF-8"}`, samples, "floor (read, isUtf8, split, JSON.parse)")
}

const profileAppend = async (size: number, appends: number, dir: string): Promise<string> => {
  const path = Path.join(dir, `append-${size}.jsonl`)
  NFS.writeFileSync(path, ourFile(prefixOfSize(conversation({ entries: 4_096 }), size)))
  const byOp = new Map<string, Array<number>>()
  // Every step's [start, end]: the close of a replaced generation runs in the background and overlaps
  // other steps (of its own append and of the next), so the time outside the steps is what no step covers.
  const spans: Array<readonly [number, number]> = []
  let recording = false
  const fs = Fs.intercept(Fs.node, (step, run) =>
    Effect.suspend(() => {
      const start = now()
      return Effect.ensuring(run, Effect.sync(() => {
        if (!recording) return
        const end = now()
        const list = byOp.get(step.op) ?? []
        list.push(end - start)
        byOp.set(step.op, list)
        spans.push([start, end])
      }))
    }))
  const { close, store } = await Ours.load(path, fs)
  let leaf = store.entries.at(-1)!.id
  for (let i = 0; i < 3; i++) leaf = (await Effect.runPromise(store.append(leaf, userMessage(i)))).id
  recording = true
  const windows: Array<readonly [number, number]> = []
  for (let i = 0; i < appends; i++) {
    const start = now()
    leaf = (await Effect.runPromise(store.append(leaf, userMessage(i)))).id
    windows.push([start, now()])
  }
  recording = false
  await close()
  const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)
  const totals = windows.map(([a, b]) => b - a)
  // Per append: its time minus the union of the step spans clipped to it.
  const uncovered = windows.map(([a, b]) => {
    const clipped = spans.map(([s, e]) => [Math.max(s, a), Math.min(e, b)] as const).filter(([s, e]) => e > s)
    clipped.sort((x, y) => x[0] - y[0])
    let covered = 0
    let reach = a
    for (const [s, e] of clipped) {
      if (e > reach) covered += e - Math.max(s, reach)
      reach = Math.max(reach, e)
    }
    return b - a - covered
  })
  const out = [`append at ${(size / 1e6).toFixed(2)} MB: median ${median(totals).toFixed(2)} ms per append over ${appends}`]
  for (const [op, xs] of [...byOp].sort((a, b) => sum(b[1]) - sum(a[1]))) {
    out.push(`  ${op.padEnd(9)} ${(xs.length / appends).toFixed(1).padStart(4)} per append  ${(sum(xs) / appends).toFixed(2).padStart(6)} ms per append`)
  }
  out.push(`  outside every filesystem step: ${(sum(uncovered) / appends).toFixed(2)} ms per append`)
  return out.join("\n")
}

/** Counts every step of every fiber it supervises (with op supervision on), and the fibers that took them. */
class StepCounter extends Supervisor.AbstractSupervisor<void> {
  steps = 0
  readonly fibers = new Set<number>()
  readonly value = Effect.void
  override onEffect(fiber: Fiber.RuntimeFiber<unknown, unknown>): void {
    this.steps++
    this.fibers.add(fiber.id().id)
  }
  reset(): void {
    this.steps = 0
    this.fibers.clear()
  }
}

/** The median count of fiber steps an append to `path` takes, and of the fibers that took them, the store's own fibers included. */
const stepsPerAppend = async (path: string, appends: number): Promise<{ readonly steps: number; readonly fibers: number }> => {
  const counter = new StepCounter()
  // Fibers forked inside inherit the supervisor and the flag: the load's committer and closer too.
  const counted = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.withRuntimeFlagsPatch(Effect.supervised(effect, counter), RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
  const scope = Effect.runSync(Scope.make())
  try {
    const store = await Effect.runPromise(counted(SessionStore.load(path)).pipe(
      Scope.extend(scope),
      Effect.provideService(SessionJournal, FileJournal.make(Fs.node)),
      Effect.provideService(Ids.Ids, Ids.random)
    ))
    let leaf = store.entries.at(-1)!.id
    const counts: Array<number> = []
    const fibers: Array<number> = []
    for (let i = 0; i < appends; i++) {
      counter.reset()
      leaf = (await Effect.runPromise(counted(store.append(leaf, userMessage(i))))).id
      // One turn more: the close of the generation this append replaced runs after it resolved.
      await new Promise((resolve) => setImmediate(resolve))
      counts.push(counter.steps)
      fibers.push(counter.fibers.size)
    }
    return { steps: median(counts), fibers: median(fibers) }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

console.log(machine() + "\n")
const options = { rounds: arg("rounds", 20), warmup: 5 }
const tmp = tempDir()
try {
  if (process.argv.includes("--append-only") === false) for (const ascii of [false, true]) console.log(table(`Load phases (cumulative), ${ascii ? "ASCII" : "UTF-8"}`, await profileLoad(ascii, options, tmp.dir)))
  for (const size of [64 * 1024, 1024 * 1024, 4_000_000]) {
    console.log(await profileAppend(size, arg("appends", 20), tmp.dir))
    const counted = await stepsPerAppend(Path.join(tmp.dir, `append-${size}.jsonl`), 20)
    console.log(`  steps of the fiber: ${counted.steps} per append, on ${counted.fibers} fibers\n`)
  }
  // Version 2 appends in place behind an intent: the same count on a version-2 session of 64 KiB.
  const v2 = Path.join(tmp.dir, "append-v2.jsonl")
  NFS.writeFileSync(v2, fileV2(sessionOfSize(64 * 1024)))
  const countedV2 = await stepsPerAppend(v2, 20)
  console.log(`version-2 append at 64 KiB\n  steps of the fiber: ${countedV2.steps} per append, on ${countedV2.fibers} fibers\n`)
} finally {
  tmp.remove()
}

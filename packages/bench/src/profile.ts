/**
 * Where the time goes (`npx tsx packages/bench/src/profile.ts`).
 *
 * Load: the loader's phases added one at a time on the same bytes, each row
 * the cumulative cost: split into lines, JSON.parse, the duplicate-key /
 * `__proto__` / depth walk, record and message decoding, history checks (IDs,
 * parents, tool links); then the whole `decodeSession` and `SessionStore.read`.
 *
 * Append: every filesystem step of `store.append` timed through the Fs
 * service (wall time of the async step, thread-pool hop included), and what
 * is left outside the steps (validation, encoding, Effect, scheduling).
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { decodeSession } from "@session-tree/core/Codec"
import * as Fs from "@session-tree/core/Fs"
import { History } from "@session-tree/core/History"
import * as Ids from "@session-tree/core/Ids"
import { parseObjectLine } from "@session-tree/core/internal/json"
import { splitLines } from "@session-tree/core/internal/lines"
import * as Record from "@session-tree/core/Record"
import { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import { arg } from "./args.js"
import { conversation, ourFile, prefixOfSize, userMessage } from "./data.js"
import { machine, median, now, rounds, summarize, table, tempDir } from "./harness.js"
import { floorLoad, ourRead } from "./suites/load.js"

// The decoder the loader uses: `decodeParsedEntry` where it exists (the direct path for canonical records), else `decodeEntry`.
const decodeEntry = (Record as unknown as { readonly decodeParsedEntry?: typeof Record.decodeEntry }).decodeParsedEntry ??
  Record.decodeEntry

const lines = (bytes: Uint8Array): ReadonlyArray<string> => {
  const split = splitLines(bytes)
  if (split instanceof SessionError) throw split
  return split.lines
}
const parsed = (text: string) => {
  const p = parseObjectLine(text)
  if (!p.ok) throw new Error(p.reason)
  return p.value
}

const profileLoad = async (ascii: boolean, options: { rounds: number; warmup: number }, dir: string) => {
  const bytes = ourFile(conversation({ entries: 4_000, ascii }))
  const path = Path.join(dir, "profile.jsonl")
  NFS.writeFileSync(path, bytes)
  const samples = await rounds([
    { name: "floor (read, isUtf8, split, JSON.parse)", run: () => void floorLoad(path) },
    { name: "1 splitLines", run: () => void lines(bytes) },
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
          if (entry instanceof SessionError || history.check(entry) !== undefined) throw new Error("invalid")
          history.add(entry)
        })
      }
    },
    { name: "decodeSession", run: () => void decodeSession(bytes) },
    { name: "SessionStore.read", run: async () => void (await ourRead(path)) }
  ], options)
  return summarize(`load phases, ${ascii ? "ASCII" : "UTF-8"}`, samples, "floor (read, isUtf8, split, JSON.parse)")
}

const profileAppend = async (size: number, appends: number, dir: string): Promise<string> => {
  const path = Path.join(dir, `append-${size}.jsonl`)
  NFS.writeFileSync(path, ourFile(prefixOfSize(conversation({ entries: 4_096 }), size)))
  const byOp = new Map<string, Array<number>>()
  let recording = false
  const fs = Fs.intercept(Fs.make, (step, run) =>
    Effect.suspend(() => {
      const start = now()
      return Effect.ensuring(run, Effect.sync(() => {
        if (!recording) return
        const list = byOp.get(step.op) ?? []
        list.push(now() - start)
        byOp.set(step.op, list)
      }))
    }))
  const scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(SessionStore.load(path).pipe(
    Scope.extend(scope),
    Effect.provideService(Fs.Fs, fs),
    Effect.provideService(Ids.Ids, Ids.makeRandom)
  ))
  let leaf = store.entries.at(-1)!.id
  for (let i = 0; i < 3; i++) leaf = (await Effect.runPromise(store.append(leaf, userMessage(i)))).id
  recording = true
  const totals: Array<number> = []
  for (let i = 0; i < appends; i++) {
    const start = now()
    leaf = (await Effect.runPromise(store.append(leaf, userMessage(i)))).id
    totals.push(now() - start)
  }
  recording = false
  await Effect.runPromise(Scope.close(scope, Exit.void))
  const sum = (xs: ReadonlyArray<number>) => xs.reduce((a, b) => a + b, 0)
  const out = [`append at ${(size / 1e6).toFixed(2)} MB: median ${median(totals).toFixed(2)} ms per append over ${appends}`]
  let inSteps = 0
  for (const [op, xs] of [...byOp].sort((a, b) => sum(b[1]) - sum(a[1]))) {
    inSteps += sum(xs)
    out.push(`  ${op.padEnd(9)} ${(xs.length / appends).toFixed(1).padStart(4)} per append  ${(sum(xs) / appends).toFixed(2).padStart(6)} ms per append`)
  }
  out.push(`  outside the filesystem steps: ${((sum(totals) - inSteps) / appends).toFixed(2)} ms per append`)
  return out.join("\n")
}

console.log(machine() + "\n")
const options = { rounds: arg("rounds", 20), warmup: 5 }
const tmp = tempDir()
try {
  if (process.argv.includes("--append-only") === false) for (const ascii of [false, true]) console.log(table(`Load phases (cumulative), ${ascii ? "ASCII" : "UTF-8"}`, await profileLoad(ascii, options, tmp.dir)))
  for (const size of [64 * 1024, 1024 * 1024, 4_000_000]) console.log(await profileAppend(size, arg("appends", 20), tmp.dir) + "\n")
} finally {
  tmp.remove()
}

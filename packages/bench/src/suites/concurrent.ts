/**
 * 4. N concurrent appenders on a ~1 MB session: appends per second when every
 * append waits for the previous one (one commit per append) versus N appends in
 * flight at once (`Effect.forEach` with `concurrency: N`), where appends that
 * queue behind a commit share the next one (group commit). Each measurement
 * starts from a fresh copy of the same file; commits are counted by the
 * renames onto the session path, on `Fs.node` (every step a plain call).
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Fs from "@session-tree/file/Fs"
import { conversation, ourFile, prefixOfSize, userMessage } from "../data.js"
import { median, now, p90, rounds, type Row } from "../harness.js"
import * as Ours from "../ours.js"

export interface ConcurrentOptions {
  readonly rounds: number
  readonly warmup: number
  /** Appends per measurement. */
  readonly appends?: number
  readonly writers?: ReadonlyArray<number>
}

export const benchConcurrent = async (options: ConcurrentOptions, dir: string): Promise<Array<Row>> => {
  const appends = options.appends ?? 32
  const writers = options.writers ?? [1, 2, 4, 8]
  const start = ourFile(prefixOfSize(conversation({ entries: 4_096 }), 1024 * 1024))
  let renames = 0
  // The node service with a counting rename.
  const fs: Fs.FsService = { ...Fs.node, rename: (from, to) => Effect.zipRight(Effect.sync(() => renames++), Fs.node.rename(from, to)) }
  const commits = new Map<string, Array<number>>()

  /** Loads a fresh copy, runs `appends` appends the way `mode` says, and returns the time they took. */
  const measure = (name: string, mode: "sequential" | number) => async (): Promise<number> => {
    const path = Path.join(dir, `concurrent-${Math.random().toString(36).slice(2)}.jsonl`)
    NFS.writeFileSync(path, start)
    const { close, store } = await Ours.load(path, fs)
    const parent = store.entries.at(-1)!.id
    // The first append of a loaded store also encodes the loaded history once: keep it out of the timing.
    await Effect.runPromise(store.append(parent, userMessage(-1)))
    const before = renames
    const t0 = now()
    const one = (i: number) => store.append(parent, userMessage(i))
    await Effect.runPromise(
      mode === "sequential"
        ? Effect.forEach(Array.from({ length: appends }, (_, i) => i), one, { discard: true })
        : Effect.forEach(Array.from({ length: appends }, (_, i) => i), one, { concurrency: mode, discard: true })
    )
    const elapsed = now() - t0
    const list = commits.get(name) ?? []
    list.push(renames - before)
    commits.set(name, list)
    await close()
    if ((await Ours.read(path)).entries.length !== store.entries.length) {
      throw new Error("the file does not hold what the store acknowledged")
    }
    NFS.unlinkSync(path)
    return elapsed
  }

  const variants = [
    { name: "one commit per append (sequential)", run: measure("one commit per append (sequential)", "sequential") },
    ...writers.map((n) => ({ name: `group commit, ${n} writer${n > 1 ? "s" : ""}`, run: measure(`group commit, ${n} writer${n > 1 ? "s" : ""}`, n) }))
  ]
  const samples = await rounds(variants, options)
  const perSecond = (ms: number) => (appends * 1000) / ms
  const base = perSecond(median(samples[0]!.ms))
  return samples.map((s) => {
    const c = commits.get(s.name)!.slice(options.warmup)
    return {
      group: `${appends} appends at 1.0 MB`,
      variant: s.name,
      // Throughput: the median time gives the median rate; p90 of the time gives the slow-end rate.
      median: perSecond(median(s.ms)),
      p90: perSecond(p90(s.ms)),
      n: s.ms.length,
      ratio: perSecond(median(s.ms)) / base,
      ratioTo: "sequential",
      note: `${(appends / median(c)).toFixed(1)} appends per commit (median ${median(c)} commits)`
    }
  })
}

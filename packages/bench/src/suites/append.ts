/**
 * 2. One durable append to a session of ~64 KB, ~1 MB and ~4 MB.
 *
 * - ours: `store.append` (validation, group-commit queue, the commit protocol
 *   with its identity checks, marker, rename, directory fsync; kernel copy of
 *   the current generation from 256 KB on), on `Fs.node` (each step waited for
 *   synchronously) and on `Fs.threadPool` (each step in the thread pool);
 * - protocol floor: the same syscalls on the same bytes with bare node:fs;
 * - minimal floor: write the whole file to a temp file, fsync, rename, fsync
 *   the directory: the least any durable whole-file replace can do;
 * - Pi: `SessionManager.appendMessage` (`appendFileSync` of one line, no fsync:
 *   not durable, so it is a reference point, not a peer).
 */
import { Buffer } from "node:buffer"
import { randomUUID } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { KERNEL_COPY_MIN_BYTES } from "@session-tree/file/FileJournal"
import * as Fs from "@session-tree/file/Fs"
import { conversation, ourFile, piFile, piMessage, prefixOfSize, userMessage } from "../data.js"
import { MinimalFloor, ProtocolFloor } from "../floor.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"
import { pi } from "../pi.js"
import { ourRead } from "./load.js"

export interface AppendOptions {
  readonly rounds: number
  readonly warmup: number
  readonly sizes?: ReadonlyArray<number>
}

export const SIZES = [64 * 1024, 1024 * 1024, 4_000_000]

/** The canonical line of a new entry, as the store would write it. */
export const entryLine = (parentId: string | null, message: unknown): Buffer =>
  Buffer.from(
    JSON.stringify({ type: "entry", version: 1, id: randomUUID(), parentId, timestamp: new Date().toISOString(), message }) +
      "\n",
    "utf8"
  )

const label = (bytes: number) => bytes >= 1e6 ? `${(bytes / 1e6).toFixed(1)} MB` : `${Math.round(bytes / 1024)} KB`

export const benchAppend = async (options: AppendOptions): Promise<Array<Row>> => {
  const { SessionManager } = await pi()
  // Longer lines than the load's data, so the ~4 MB session leaves room (of 4,096 entries) for many rounds.
  const full = conversation({ entries: 3_600, lineBytes: 1_300 })
  const rows: Array<Row> = []
  for (const size of options.sizes ?? SIZES) {
    const tmp = tempDir()
    try {
      const c = prefixOfSize(full, size)
      const start = ourFile(c)
      const names = ["ours", "protocol", "minimal", "pool"].map((n) => Path.join(tmp.dir, `${n}.jsonl`))
      for (const name of names) NFS.writeFileSync(name, start)
      const piPath = Path.join(tmp.dir, "pi.jsonl")
      NFS.writeFileSync(piPath, piFile(c))

      const ours = await Ours.load(names[0]!)
      const pooled = await Ours.load(names[3]!, Fs.threadPool)
      const protocol = new ProtocolFloor(names[1]!)
      const minimal = new MinimalFloor(names[2]!)
      const sm = SessionManager.open(piPath, tmp.dir)
      let i = 0
      let ourLeaf: string | null = ours.store.entries.at(-1)?.id ?? null
      let pooledLeaf: string | null = pooled.store.entries.at(-1)?.id ?? null
      // The floors' entries all hang off the last entry: valid, and the same bytes per line as ours.
      const floorLeaf: string | null = c.entries.at(-1)?.id ?? null
      try {
        const samples = await rounds([
          {
            name: "ours: store.append",
            run: async () => void (ourLeaf = (await Ours.append(ours.store, ourLeaf, userMessage(++i))).id)
          },
          {
            name: "ours, Fs.layerThreadPool",
            run: async () => void (pooledLeaf = (await Ours.append(pooled.store, pooledLeaf, userMessage(++i))).id)
          },
          {
            name: "floor: same protocol, bare node:fs",
            run: () => {
              const line = entryLine(floorLeaf, userMessage(++i))
              protocol.append(line, protocol.bytes.length + line.length >= KERNEL_COPY_MIN_BYTES)
            }
          },
          { name: "floor: write+fsync+rename+fsync dir", run: () => minimal.append(entryLine(floorLeaf, userMessage(++i))) },
          {
            name: "Pi: appendMessage (no fsync)",
            run: () => void sm.appendMessage(piMessage(userMessage(++i), Date.now()) as never)
          }
        ], options)
        rows.push(...summarize(`append at ${label(start.length)}`, samples, "floor: same protocol, bare node:fs", {
          "ours: store.append": start.length >= KERNEL_COPY_MIN_BYTES ? "kernel copy + new line" : "whole file written",
          "ours, Fs.layerThreadPool": "every step in the thread pool",
          "floor: same protocol, bare node:fs": start.length >= KERNEL_COPY_MIN_BYTES ? "kernel copy + new line" : "whole file written",
          "floor: write+fsync+rename+fsync dir": "whole file written",
          "Pi: appendMessage (no fsync)": "appendFileSync, not durable"
        }))
        // The same two variants during the warm-up rounds, for what the first appends cost.
        const warming = samples.filter((s) => s.name === "ours: store.append" || s.name === "floor: same protocol, bare node:fs")
          .map((s) => ({ name: `${s.name}, warm-up rounds`, ms: s.warmup, warmup: [] }))
        rows.push(...summarize(`append at ${label(start.length)}`, warming, "floor: same protocol, bare node:fs, warm-up rounds"))
      } finally {
        await ours.close()
        await pooled.close()
        protocol.close()
        minimal.close()
      }
      // Every durable variant must have produced a complete file of this format.
      const expected = c.entries.length + options.rounds + options.warmup
      for (const name of names) {
        const count = (await ourRead(name)).entries.length
        if (count !== expected) throw new Error(`${name} holds ${count} entries, expected ${expected}`)
      }
    } finally {
      tmp.remove()
    }
  }
  return rows
}

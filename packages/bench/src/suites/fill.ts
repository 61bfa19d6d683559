/**
 * 3. Filling a session from nothing to 4,096 entries (~4.1 MB), one append at
 * a time in conversation order (branches included): total time. Every append
 * of ours is a durable commit of the whole generation, so the total grows with
 * the square of the size; Pi appends one line without fsync.
 */
import { Buffer } from "node:buffer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { KERNEL_COPY_MIN_BYTES } from "@session-tree/file/FileJournal"
import { conversation, ourFile, piMessage } from "../data.js"
import { ProtocolFloor } from "../floor.js"
import { now, rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"
import { pi } from "../pi.js"
import { ourRead } from "./load.js"

export interface FillOptions {
  readonly rounds: number
  readonly entries?: number
}

export const benchFill = async (options: FillOptions): Promise<Array<Row>> => {
  const { SessionManager } = await pi()
  const entries = options.entries ?? 4_096
  const c = conversation({ entries })
  const expectedBytes = ourFile(c).length
  const tmp = tempDir()
  let run = 0
  try {
    const samples = await rounds([
      {
        name: "ours: create + store.append",
        run: async () => {
          const path = Path.join(tmp.dir, `ours-${++run}.jsonl`)
          const start = now()
          const open = await Ours.create(path)
          const ids = new Map<string, string>()
          for (const e of c.entries) {
            const parent = e.parentId === null ? null : ids.get(e.parentId)!
            ids.set(e.id, (await Ours.append(open.store, parent, e.message)).id)
          }
          await open.close()
          const elapsed = now() - start
          const loaded = await ourRead(path)
          if (loaded.entries.length !== entries) throw new Error("ours: wrong entry count")
          NFS.unlinkSync(path)
          return elapsed
        }
      },
      {
        name: "floor: same protocol, bare node:fs",
        run: async () => {
          const path = Path.join(tmp.dir, `floor-${++run}.jsonl`)
          const start = now()
          NFS.writeFileSync(path, JSON.stringify(c.header) + "\n")
          const floor = new ProtocolFloor(path)
          for (const e of c.entries) {
            // The same record with the time of its commit, in canonical key order.
            const line = Buffer.from(JSON.stringify({ ...e, timestamp: new Date().toISOString() }) + "\n", "utf8")
            floor.append(line, floor.bytes.length + line.length >= KERNEL_COPY_MIN_BYTES)
          }
          floor.close()
          const elapsed = now() - start
          if ((await ourRead(path)).entries.length !== entries) throw new Error("floor: wrong entry count")
          NFS.unlinkSync(path)
          return elapsed
        }
      },
      {
        name: "Pi: create + appendMessage (no fsync)",
        run: () => {
          const dir = Path.join(tmp.dir, `pi-${++run}`)
          const start = now()
          const sm = SessionManager.create("/work/project", dir)
          const ids = new Map<string, string>()
          for (const e of c.entries) {
            const parent = e.parentId === null ? null : ids.get(e.parentId)!
            if (parent === null) sm.resetLeaf()
            else if (parent !== sm.getLeafId()) sm.branch(parent)
            ids.set(e.id, sm.appendMessage(piMessage(e.message, Date.parse(e.timestamp)) as never))
          }
          const elapsed = now() - start
          if (sm.getEntries().length !== entries) throw new Error("Pi: wrong entry count")
          NFS.rmSync(dir, { recursive: true, force: true })
          return elapsed
        }
      }
    ], { rounds: options.rounds, warmup: 0 })
    return summarize(`fill 0 → ${entries} entries (${(expectedBytes / 1e6).toFixed(2)} MB)`, samples, "floor: same protocol, bare node:fs", {
      "ours: create + store.append": "one durable commit per entry",
      "floor: same protocol, bare node:fs": "same syscalls, same bytes",
      "Pi: create + appendMessage (no fsync)": "appendFileSync, not durable"
    })
  } finally {
    tmp.remove()
  }
}

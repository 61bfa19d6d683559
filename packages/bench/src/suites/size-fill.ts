/**
 * Filling a version-2 session file from nothing to N entries (~1 KB each), one
 * append at a time in conversation order (branches, model changes, a title and
 * labels included), each durable before the next: total time.
 *
 * - ours: `SessionStore.create`, then `store.appendEntry` of each entry;
 * - floor: the same records (each with the time of its append) through the
 *   version-2 append protocol in bare node:fs (`floorV2.ts`);
 * - Pi: `SessionManager.create`, then `appendMessage` (and its model, title
 *   and label appends) of the same entries: one `appendFileSync` each, no fsync.
 */
import type { PiSessionManager } from "@session-tree/testing/PiReference"
import { Buffer } from "node:buffer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import type { EntryV2 } from "../dataV2.js"
import { bodyOf, piMessageV2, sessionOfEntries } from "../dataSize.js"
import { AppendFloor } from "../floorV2.js"
import { now, rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"
import { pi } from "../pi.js"
import { ourRead } from "./load.js"

export interface SizeFillOptions {
  readonly rounds: number
  readonly entries: number
}

const FLOOR = "floor: version-2 append protocol, bare node:fs"

/** `body` with its references to entries (a label's target) renamed by `ids`. */
const mapped = (body: { readonly kind: string; readonly [key: string]: unknown }, ids: Map<string, string>) =>
  body.kind === "label" ? { ...body, targetId: ids.get(body["targetId"] as string)! } : body

export const benchSizeFill = async (options: SizeFillOptions): Promise<{ readonly rows: ReadonlyArray<Row>; readonly bytes: number }> => {
  const { SessionManager } = await pi()
  const c = sessionOfEntries(options.entries)
  const tmp = tempDir()
  let run = 0
  let bytes = 0
  try {
    const samples = await rounds([
      {
        name: "ours: create + store.appendEntry",
        run: async () => {
          const path = Path.join(tmp.dir, `ours-${++run}.jsonl`)
          const start = now()
          const open = await Ours.create(path)
          const ids = new Map<string, string>()
          try {
            for (const e of c.entries) {
              const parent = e.parentId === null ? null : ids.get(e.parentId)!
              const entry = await Ours.appendEntry(open.store, parent, mapped(bodyOf(e), ids))
              ids.set(e.id, entry.id)
            }
          } finally {
            await open.close()
          }
          const elapsed = now() - start
          bytes = NFS.statSync(path).size
          // The fill must reload whole (version-2 files load up to 256 MiB).
          const count = (await ourRead(path)).entries.length
          if (count !== c.entries.length) throw new Error(`ours: ${count} entries, expected ${c.entries.length}`)
          NFS.unlinkSync(path)
          return elapsed
        }
      },
      {
        name: FLOOR,
        run: () => {
          const path = Path.join(tmp.dir, `floor-${++run}.jsonl`)
          const start = now()
          NFS.writeFileSync(path, JSON.stringify(c.header) + "\n")
          const floor = new AppendFloor(path)
          try {
            for (const e of c.entries) {
              floor.append(Buffer.from(JSON.stringify({ ...e, timestamp: new Date().toISOString() }) + "\n", "utf8"))
            }
          } finally {
            floor.close()
          }
          const elapsed = now() - start
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
          for (const e of c.entries) appendPi(sm, e, ids)
          const elapsed = now() - start
          if (sm.getEntries().length !== c.entries.length) throw new Error("Pi: wrong entry count")
          NFS.rmSync(dir, { recursive: true, force: true })
          return elapsed
        }
      }
    ], { rounds: options.rounds, warmup: 0 })
    const rows = summarize(`fill 0 → ${c.entries.length} entries`, samples, FLOOR, {
      "ours: create + store.appendEntry": `one durable append per entry; ${(bytes / 1e6).toFixed(1)} MB file`,
      [FLOOR]: "same records, same protocol",
      "Pi: create + appendMessage (no fsync)": "appendFileSync, not durable"
    })
    return { rows, bytes }
  } finally {
    tmp.remove()
  }
}

type PiManager = PiSessionManager

/** Appends `e` to Pi's session as Pi would record it, under the parent its own IDs give. */
const appendPi = (sm: PiManager, e: EntryV2, ids: Map<string, string>): void => {
  const parent = e.parentId === null ? null : ids.get(e.parentId)!
  if (parent === null) sm.resetLeaf()
  else if (parent !== sm.getLeafId()) sm.branch(parent)
  let id: string
  switch (e.kind) {
    case "message":
      id = sm.appendMessage(piMessageV2(e["message"] as { role: string }, Date.parse(e.timestamp)) as never)
      break
    case "model":
      id = sm.appendModelChange(e["provider"] as string, e["model"] as string)
      break
    case "title":
      id = sm.appendSessionInfo(e["title"] as string)
      break
    case "label":
      id = sm.appendLabelChange(ids.get(e["targetId"] as string)!, e["label"] as string)
      break
    default:
      throw new Error(`no Pi append for a ${e.kind} entry`)
  }
  ids.set(e.id, id)
}

/**
 * One durable append of a ~1 KB entry to a version-2 session file of 64 KiB
 * and of 64 MiB, in the same rounds:
 *
 * - ours: `store.append` on each (the store holds the file open, loaded once);
 * - floor: one `write` of the same bytes at the end of a file held open, then
 *   `fdatasync` (the least any durable append can do);
 * - protocol floor: the version-2 append protocol in bare node:fs (intent file,
 *   its fsyncs, the write at the end, `fdatasync`, the intent removed), on a
 *   copy of the large file: what the protocol costs before any library code.
 *
 * The goals: the 64 MiB append at most 1.3 times the 64 KiB one, and at most
 * 3 times the floor.
 */
import { Buffer } from "node:buffer"
import { randomUUID } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { userMessage } from "../data.js"
import { fileV2, upgrade } from "../dataV2.js"
import { sessionOfSize } from "../dataSize.js"
import { AppendFloor, SyncFloor } from "../floorV2.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"
import { ourRead } from "./load.js"

export interface SizeAppendOptions {
  readonly rounds: number
  readonly warmup: number
  /** The small and the large session, in bytes (default 64 KiB and 64 MiB). */
  readonly small?: number
  readonly large?: number
}

export interface SizeAppendResult {
  readonly rows: ReadonlyArray<Row>
  /** The large append over the small one, and over the floor, from the medians; undefined when ours could not run. */
  readonly growth?: number
  readonly overFloor?: number
  readonly skipped?: string
}

/** The canonical line of an appended user message in a version-2 session, as the store writes it. */
export const entryLineV2 = (parentId: string | null, i: number): Buffer =>
  Buffer.from(
    JSON.stringify({
      type: "entry",
      version: 2,
      id: randomUUID(),
      parentId,
      timestamp: new Date().toISOString(),
      kind: "message",
      message: upgrade(userMessage(i))
    }) + "\n",
    "utf8"
  )

export const label = (bytes: number): string =>
  bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(bytes % (1024 * 1024) === 0 ? 0 : 1)} MiB` : `${Math.round(bytes / 1024)} KiB`

const FLOOR = "floor: write + fdatasync (open file)"

const newlines = (bytes: Buffer): number => {
  let n = 0
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) n++
  return n
}

export const benchSizeAppend = async (options: SizeAppendOptions): Promise<SizeAppendResult> => {
  const small = options.small ?? 64 * 1024
  const large = options.large ?? 64 * 1024 * 1024
  const tmp = tempDir()
  try {
    const bytes = { small: fileV2(sessionOfSize(small)), large: fileV2(sessionOfSize(large)) }
    const paths = {
      small: Path.join(tmp.dir, "small.jsonl"),
      large: Path.join(tmp.dir, "large.jsonl"),
      floor: Path.join(tmp.dir, "floor.jsonl"),
      protocol: Path.join(tmp.dir, "protocol.jsonl")
    }
    NFS.writeFileSync(paths.small, bytes.small)
    NFS.writeFileSync(paths.large, bytes.large)
    NFS.writeFileSync(paths.floor, bytes.small)
    NFS.writeFileSync(paths.protocol, bytes.large)
    const opened: Array<Ours.Open> = []
    let skipped: string | undefined
    try {
      for (const path of [paths.small, paths.large]) opened.push(await Ours.load(path))
    } catch (e) {
      const error = e as { readonly code?: string; readonly message?: string }
      skipped = `SessionStore.load refused the ${label(large)} session: ${error.code ?? ""} ${error.message ?? String(e)}`.trim()
    }
    const floor = new SyncFloor(paths.floor)
    const protocol = new AppendFloor(paths.protocol)
    let i = 0
    const leaves = opened.map((o) => o.store.entries.at(-1)?.id ?? null)
    const floorParent = "bench-floor-parent"
    try {
      const ours = opened.length === 2
        ? [
          {
            name: `ours at ${label(small)}: store.append`,
            run: async () => void (leaves[0] = (await Ours.append(opened[0]!.store, leaves[0]!, userMessage(++i))).id)
          },
          {
            name: `ours at ${label(large)}: store.append`,
            run: async () => void (leaves[1] = (await Ours.append(opened[1]!.store, leaves[1]!, userMessage(++i))).id)
          }
        ]
        : []
      const samples = await rounds([
        ...ours,
        { name: FLOOR, run: () => floor.append(entryLineV2(floorParent, ++i)) },
        { name: `protocol floor at ${label(large)}: intent + write + fdatasync, bare node:fs`, run: () => protocol.append(entryLineV2(floorParent, ++i)) }
      ], options)
      const rows = summarize(`append ~1 KB to a version-2 file`, samples, FLOOR, {
        ...(ours.length === 2
          ? {
            [ours[0]!.name]: `${(bytes.small.length / 1024).toFixed(0)} KiB file`,
            [ours[1]!.name]: `${(bytes.large.length / 1048576).toFixed(1)} MiB file`
          }
          : {}),
        [FLOOR]: `${entryLineV2(floorParent, 0).length} B line`,
        [`protocol floor at ${label(large)}: intent + write + fdatasync, bare node:fs`]: "intent symlink, identity checks, dir fsync; pwrite + fdatasync + fstat; unlink"
      })
      if (ours.length !== 2) return { rows, skipped: skipped! }
      const growth = rows[1]!.median / rows[0]!.median
      return { rows, growth, overFloor: rows[1]!.ratio! }
    } finally {
      for (const o of opened) await o.close()
      floor.close()
      protocol.close()
      // Every append must be in its file: the store's files reload with them.
      if (opened.length === 2) {
        const appended = options.rounds + options.warmup
        for (const [path, start] of [[paths.small, bytes.small], [paths.large, bytes.large]] as const) {
          const count = (await ourRead(path)).entries.length
          const before = newlines(start) - 1
          if (count !== before + appended) throw new Error(`${path} holds ${count} entries, expected ${before + appended}`)
        }
      }
    }
  } finally {
    tmp.remove()
  }
}

/**
 * Loading a version-2 session file of ~100 MB (an agent session of ~1 KB
 * lines on average), all variants in the same rounds:
 *
 * - floor: read + `isUtf8` + split + `JSON.parse` of every line, the records
 *   kept (`load.ts`);
 * - ours: `SessionStore.read` (read-only, every check of the format) and
 *   `SessionStore.load` (held for appending, then released);
 * - Pi: `SessionManager.open` of Pi's file of the same conversation.
 *
 * Then each loader once more in a process of its own (`size-child.ts`), for
 * its time in a fresh process and the memory it takes: the peak resident set
 * and the heap, with nothing of the other loaders in the same process.
 */
import { spawn } from "node:child_process"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { fileV2 } from "../dataV2.js"
import { piFileV2, sessionOfSize } from "../dataSize.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"
import { pi } from "../pi.js"
import { floorLoad } from "./load.js"

export interface SizeLoadOptions {
  readonly rounds: number
  readonly warmup: number
  readonly bytes: number
  /** Processes per loader for the memory table (default 1). */
  readonly children?: number
}

export interface Memory {
  readonly variant: string
  readonly ms: number
  readonly entries: number
  readonly rssBefore: number
  readonly peakRss: number
  readonly heapBefore: number
  readonly heapUsedAfterLoad: number
  readonly heapTotalAfterLoad: number
  readonly heapHeld: number
  readonly external: number
}

export interface SizeLoadResult {
  readonly rows: ReadonlyArray<Row>
  readonly memory: ReadonlyArray<Memory>
  readonly fileBytes: number
  readonly piBytes: number
  readonly entries: number
  readonly skipped?: string
}

const child = fileURLToPath(new URL("../size-child.ts", import.meta.url))

/** Runs one loader in a process of its own (through the same loader flags as this one) and returns what it measured. */
const measureInChild = (variant: string, path: string): Promise<Memory> =>
  new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [...process.execArgv, child, variant, path], { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    let err = ""
    p.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()))
    p.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()))
    p.on("error", reject)
    p.on("exit", (code) => {
      if (code !== 0) return reject(new Error(`${variant} exited ${code}: ${err}`))
      try {
        resolve(JSON.parse(out.trim().split("\n").at(-1)!) as Memory)
      } catch (e) {
        reject(new Error(`${variant} printed no result: ${out} ${err} ${String(e)}`))
      }
    })
  })

const FLOOR = "floor: read + isUtf8 + split + JSON.parse"

export const benchSizeLoad = async (options: SizeLoadOptions): Promise<SizeLoadResult> => {
  const { SessionManager } = await pi()
  const tmp = tempDir()
  try {
    const c = sessionOfSize(options.bytes)
    const ours = Path.join(tmp.dir, "ours.jsonl")
    const theirs = Path.join(tmp.dir, "pi.jsonl")
    NFS.writeFileSync(ours, fileV2(c))
    NFS.writeFileSync(theirs, piFileV2(c))
    const fileBytes = NFS.statSync(ours).size
    const piBytes = NFS.statSync(theirs).size
    const entries = c.entries.length
    // The same conversation must come back from every loader that can read it.
    if (floorLoad(ours).length !== entries + 1) throw new Error("the floor did not read the file")
    if (SessionManager.open(theirs, tmp.dir).getEntries().length !== entries) throw new Error("Pi's file did not load")
    let skipped: string | undefined
    try {
      const loaded = await Ours.read(ours)
      if (loaded.entries.length !== entries) skipped = `SessionStore.read gave ${loaded.entries.length} entries of ${entries}`
    } catch (e) {
      const error = e as { readonly code?: string; readonly message?: string }
      skipped = `SessionStore.read refused the file: ${error.code ?? ""} ${error.message ?? String(e)}`.trim()
    }
    const ourVariants = skipped === undefined
      ? [
        { name: "ours: SessionStore.read", run: async () => void (await Ours.read(ours)) },
        {
          name: "ours: SessionStore.load",
          run: async () => {
            const open = await Ours.load(ours)
            await open.close()
          }
        }
      ]
      : []
    const samples = await rounds([
      { name: FLOOR, run: () => void floorLoad(ours) },
      ...ourVariants,
      { name: "Pi: SessionManager.open", run: () => void SessionManager.open(theirs, tmp.dir) }
    ], options)
    const rows = summarize(`load ${entries} entries`, samples, FLOOR, {
      [FLOOR]: `our file, ${(fileBytes / 1e6).toFixed(1)} MB`,
      "ours: SessionStore.read": "full validation, read-only",
      "ours: SessionStore.load": "full validation, held for appending",
      "Pi: SessionManager.open": `Pi's file, ${(piBytes / 1e6).toFixed(1)} MB; parses it twice, validates nothing`
    })
    const memory: Array<Memory> = []
    const kinds = [["floor", ours], ...(skipped === undefined ? [["read", ours], ["load", ours]] : []), ["pi", theirs]] as const
    for (let r = 0; r < (options.children ?? 1); r++) {
      for (const [variant, path] of kinds) {
        const m = await measureInChild(variant, path)
        if (m.entries !== entries) throw new Error(`${variant} in its own process: ${m.entries} entries, expected ${entries}`)
        memory.push(m)
      }
    }
    return { rows, memory, fileBytes, piBytes, entries, ...(skipped !== undefined ? { skipped } : {}) }
  } finally {
    tmp.remove()
  }
}

const mb = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`

/** The memory table: the median over the processes of each loader. */
export const memoryTable = (memory: ReadonlyArray<Memory>): string => {
  const byVariant = new Map<string, Array<Memory>>()
  for (const m of memory) byVariant.set(m.variant, [...(byVariant.get(m.variant) ?? []), m])
  const names: Record<string, string> = {
    floor: FLOOR,
    read: "ours: SessionStore.read",
    load: "ours: SessionStore.load",
    pi: "Pi: SessionManager.open"
  }
  const med = (xs: ReadonlyArray<number>) => xs.slice().sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!
  const lines = [
    "| variant | time in a fresh process | peak RSS | peak RSS − RSS before | heap after the load (before GC) | heap held (after GC) | external | n |",
    "|---|---|---|---|---|---|---|---|"
  ]
  for (const [variant, ms] of byVariant) {
    const pick = (f: (m: Memory) => number) => med(ms.map(f))
    lines.push(
      `| ${names[variant] ?? variant} | ${pick((m) => m.ms).toFixed(0)} ms | ${mb(pick((m) => m.peakRss))} | ${mb(pick((m) => m.peakRss - m.rssBefore))} | ` +
        `${mb(pick((m) => m.heapUsedAfterLoad - m.heapBefore))} | ${mb(pick((m) => m.heapHeld - m.heapBefore))} | ${mb(pick((m) => m.external))} | ${ms.length} |`
    )
  }
  return lines.join("\n") + "\n"
}

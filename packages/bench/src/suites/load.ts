/**
 * 1. Loading a ~4 MB / 4,000-entry session.
 *
 * - floor: node:fs read + `isUtf8` + split on "\n" + `JSON.parse` per line into
 *   an array, no library and no validation: the least any JSONL loader can do
 *   (the records are kept, as every loader keeps what it returns);
 * - ours: `SessionStore.read` with every check of `docs/format.md` (UTF-8, caps,
 *   duplicate keys, record and message schemas, IDs, parents, tool links);
 * - Pi: `SessionManager.open` on Pi's own file of the same conversation (its
 *   records carry more fields, so its file is larger; it reads and parses the
 *   file twice, once in `open` and once in `setSessionFile`), and Pi's parse
 *   alone (`readFileSync` + `parseSessionEntries`, one pass).
 */
import { Buffer, isUtf8 } from "node:buffer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import type * as SessionStore from "@session-tree/core/SessionStore"
import { conversation, ourFile, piFile } from "../data.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import * as Ours from "../ours.js"
import { pi } from "../pi.js"

export interface LoadOptions {
  readonly rounds: number
  readonly warmup: number
  readonly entries?: number
}

/** The floor: what every JSONL loader does at least, keeping the records it parsed (a loader returns them). */
export const floorLoad = (path: string): Array<unknown> => {
  const bytes = NFS.readFileSync(path)
  if (!isUtf8(bytes)) throw new Error("not UTF-8")
  const records: Array<unknown> = []
  for (const line of bytes.toString("utf8").split("\n")) {
    if (line.length > 0) records.push(JSON.parse(line))
  }
  return records
}

export const ourRead = (path: string): Promise<SessionStore.Loaded> => Ours.read(path)

export const benchLoad = async (options: LoadOptions): Promise<Array<Row>> => {
  const { SessionManager, parseSessionEntries } = await pi()
  const entries = options.entries ?? 4_000
  const rows: Array<Row> = []
  for (const ascii of [false, true]) {
    const tmp = tempDir()
    try {
      const c = conversation({ entries, ascii })
      const ours = Path.join(tmp.dir, "ours.jsonl")
      const theirs = Path.join(tmp.dir, "pi.jsonl")
      const ourBytes = ourFile(c)
      const piBytes = piFile(c)
      NFS.writeFileSync(ours, ourBytes)
      NFS.writeFileSync(theirs, piBytes)
      // The same conversation must come back from every loader.
      const check = await ourRead(ours)
      if (check.entries.length !== entries || floorLoad(ours).length !== entries + 1) throw new Error("our file did not load")
      if (SessionManager.open(theirs, tmp.dir).getEntries().length !== entries) throw new Error("Pi's file did not load")
      const samples = await rounds([
        { name: "floor", run: () => void floorLoad(ours) },
        { name: "ours: SessionStore.read", run: async () => void (await ourRead(ours)) },
        { name: "Pi: SessionManager.open", run: () => void SessionManager.open(theirs, tmp.dir) },
        { name: "Pi: parse only", run: () => void parseSessionEntries(NFS.readFileSync(theirs, "utf8")) }
      ], options)
      const mb = (b: Buffer) => (b.length / 1e6).toFixed(2) + " MB"
      rows.push(...summarize(
        `load ${entries} entries, ${ascii ? "ASCII" : "UTF-8 (some non-ASCII)"}`,
        samples,
        "floor",
        {
          floor: `our file, ${mb(ourBytes)}`,
          "ours: SessionStore.read": "full validation",
          "Pi: SessionManager.open": `Pi's file, ${mb(piBytes)}; parses it twice, validates nothing`,
          "Pi: parse only": "readFileSync + parseSessionEntries"
        }
      ))
    } finally {
      tmp.remove()
    }
  }
  return rows
}

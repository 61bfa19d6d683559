/**
 * Version 2 load: a ~4 MB agent session (`dataV2.ts`: reasoning with its
 * signature, tool calls, tool results, meta, model and label entries) against
 * the version-1 session of the same conversation, each against its own floor,
 * all four variants in the same rounds.
 *
 * - floor: the least any JSONL loader does with the lines (`JSON.parse` of
 *   each, the records kept);
 * - decoder: the same parse, then the direct decoder of that version and the
 *   exact-number check the loader runs after it (`internal/decode.ts` through
 *   `Record.decodeCanonicalLine` for version 1; `internal/decodeV2.ts` for
 *   version 2, which the loader does not use yet and which no public module
 *   exports, hence the import by path). Lines are split beforehand, so the
 *   read and the split, the same for both, are not in the floor: the ratio is
 *   the stricter for it;
 * - once the core reads version 2: `SessionStore.read` on the file backend
 *   (every check of the format, history included) against the floor of the
 *   load benchmark (read + `isUtf8` + split + `JSON.parse`), for both files.
 *   Until then these rows are left out, and the output says so.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { firstArgumentsKey, firstInexactNumber, firstInexactNumberFrom } from "@session-tree/core/Json"
import * as Record from "@session-tree/core/Record"
import * as RecordV2 from "@session-tree/core/RecordV2"
import * as DecodeV2 from "../../../core/src/internal/decodeV2.js"
import { conversation, ourFile } from "../data.js"
import { fileV2, sameConversation } from "../dataV2.js"
import { median, rounds, type Row, type Samples, summarize, tempDir } from "../harness.js"
import { floorLoad, ourRead } from "./load.js"

export interface LoadV2Options {
  readonly rounds: number
  readonly warmup: number
  /** The size of the version-2 session in bytes (default 4,000,000). */
  readonly bytes?: number
}

const directV2 = DecodeV2.make({
  entry: RecordV2.SessionEntry,
  message: RecordV2.Message,
  assistantPart: RecordV2.AssistantPart,
  userPart: RecordV2.UserPart,
  toolPart: RecordV2.ToolPart,
  fileData: RecordV2.FileData,
  meta: RecordV2.Meta,
  usage: RecordV2.Usage
})

const V1_PREFIX = `{"type":"entry","version":1,"`

/** Version 1, as the loader takes a canonical line: the direct decoder, then the numbers after the first arguments key. */
const decodeV1 = (text: string): Record.SessionEntry => {
  const canonical = Record.decodeCanonicalLine(JSON.parse(text), text)
  if (canonical === undefined) throw new Error(`not canonical: ${text.slice(0, 80)}`)
  const entry = canonical.entry
  if (!text.startsWith(V1_PREFIX)) {
    if (firstInexactNumber(text) !== undefined) throw new Error("inexact number")
  } else if (canonical.numbers) {
    const m = entry.message
    if (firstInexactNumberFrom(text, firstArgumentsKey(text, m.role === "assistant" ? m.content.length : 0)) !== undefined) {
      throw new Error("inexact number")
    }
  }
  return entry
}

/** Version 2 the same way: the direct decoder, which checks the number literals it sees, then the whole line's if it could not. */
const decodeV2 = (text: string): RecordV2.SessionEntry => {
  const canonical = directV2.line(JSON.parse(text), text)
  if (canonical === undefined) throw new Error(`not canonical: ${text.slice(0, 80)}`)
  if (canonical.numbers && firstInexactNumber(text) !== undefined) throw new Error("inexact number")
  return canonical.entry
}

const parseAll = (lines: ReadonlyArray<string>): Array<unknown> => {
  const out: Array<unknown> = []
  for (let i = 0; i < lines.length; i++) out.push(JSON.parse(lines[i]!))
  return out
}

const decodeAll = <A>(lines: ReadonlyArray<string>, decode: (text: string) => A): Array<A> => {
  const out: Array<A> = []
  for (let i = 0; i < lines.length; i++) out.push(decode(lines[i]!))
  return out
}

export interface Relative {
  readonly group: string
  /** What was measured: the direct decoders, or `SessionStore.read`. */
  readonly what: "decoder" | "SessionStore.read"
  /** (version 2 / its floor) over (version 1 / its floor), from the medians. */
  readonly relative: number
  /**
   * The same from each round's four samples, the median over the rounds: the variants of a round
   * run back to back, so load from other processes cancels out of it better.
   */
  readonly perRound: number
  /** Version 2's median over version 1's. */
  readonly v2OverV1: number
}

export interface LoadV2Result {
  readonly rows: ReadonlyArray<Row>
  readonly relative: ReadonlyArray<Relative>
  /** Why the `SessionStore.read` rows are missing, when they are. */
  readonly storeSkipped?: string
}

/** Whether the core reads the version-2 file back to its entries; the reason when it does not. */
const readsVersion2 = async (path: string, entries: number): Promise<string | undefined> => {
  try {
    const loaded = await ourRead(path)
    return loaded.entries.length === entries ? undefined : `SessionStore.read gave ${loaded.entries.length} entries of ${entries}`
  } catch (e) {
    const error = e as { readonly code?: string; readonly message?: string }
    return `SessionStore.read does not read version 2 yet (${error.code ?? error.message ?? String(e)})`
  }
}

/** The median over the rounds of (v2 / v2 floor) / (v1 / v1 floor); the samples in the order of `rounds`. */
const perRound = (v1Floor: Samples, v1: Samples, v2Floor: Samples, v2: Samples): number =>
  median(v1.ms.map((_, r) => (v2.ms[r]! / v2Floor.ms[r]!) / (v1.ms[r]! / v1Floor.ms[r]!)))

export const benchLoadV2 = async (options: LoadV2Options): Promise<LoadV2Result> => {
  const rows: Array<Row> = []
  const relative: Array<Relative> = []
  let storeSkipped: string | undefined
  for (const ascii of [false, true]) {
    const tmp = tempDir()
    try {
      const { v1, v2 } = sameConversation(conversation({ entries: 4_000, ascii }), options.bytes ?? 4_000_000)
      const files = { v1: Path.join(tmp.dir, "v1.jsonl"), v2: Path.join(tmp.dir, "v2.jsonl") }
      NFS.writeFileSync(files.v1, ourFile(v1))
      NFS.writeFileSync(files.v2, fileV2(v2))
      // Entry lines only, as the loader decodes them (the header is decoded apart).
      const lines = {
        v1: NFS.readFileSync(files.v1, "utf8").split("\n").slice(1, -1),
        v2: NFS.readFileSync(files.v2, "utf8").split("\n").slice(1, -1)
      }
      // Every line must take the direct path, and both files must hold what was written.
      if (decodeAll(lines.v1, decodeV1).length !== v1.entries.length || floorLoad(files.v1).length !== v1.entries.length + 1) {
        throw new Error("the version-1 file did not decode")
      }
      const decoded = decodeAll(lines.v2, decodeV2)
      if (decoded.length !== v2.entries.length || JSON.stringify(decoded) !== JSON.stringify(v2.entries)) {
        throw new Error("the version-2 file did not decode to its entries")
      }
      const samples = await rounds([
        { name: "v1 floor", run: () => void parseAll(lines.v1) },
        { name: "v1 decoder", run: () => void decodeAll(lines.v1, decodeV1) },
        { name: "v2 floor", run: () => void parseAll(lines.v2) },
        { name: "v2 decoder", run: () => void decodeAll(lines.v2, decodeV2) }
      ], options)
      const mb = (path: string) => (NFS.statSync(path).size / 1e6).toFixed(2) + " MB"
      const text = ascii ? "ASCII" : "UTF-8 (some non-ASCII)"
      const byName = (name: string) => samples.find((s) => s.name === name)!
      const v1Rows = summarize(`v1, ${v1.entries.length} entries, ${text}`, [byName("v1 floor"), byName("v1 decoder")], "v1 floor", {
        "v1 floor": `${mb(files.v1)}; JSON.parse of each line`,
        "v1 decoder": "JSON.parse + direct decoder + numbers"
      })
      const v2Rows = summarize(`v2, ${v2.entries.length} entries, ${text}`, [byName("v2 floor"), byName("v2 decoder")], "v2 floor", {
        "v2 floor": `${mb(files.v2)}; JSON.parse of each line`,
        "v2 decoder": "JSON.parse + direct decoder + numbers"
      })
      rows.push(...v1Rows, ...v2Rows)
      relative.push({
        group: text,
        what: "decoder",
        relative: v2Rows[1]!.ratio! / v1Rows[1]!.ratio!,
        perRound: perRound(byName("v1 floor"), byName("v1 decoder"), byName("v2 floor"), byName("v2 decoder")),
        v2OverV1: v2Rows[1]!.median / v1Rows[1]!.median
      })

      storeSkipped = await readsVersion2(files.v2, v2.entries.length)
      if (storeSkipped !== undefined) continue
      if ((await ourRead(files.v1)).entries.length !== v1.entries.length) throw new Error("the version-1 file did not load")
      const stored = await rounds([
        { name: "v1 floor", run: () => void floorLoad(files.v1) },
        { name: "v1 SessionStore.read", run: async () => void (await ourRead(files.v1)) },
        { name: "v2 floor", run: () => void floorLoad(files.v2) },
        { name: "v2 SessionStore.read", run: async () => void (await ourRead(files.v2)) }
      ], options)
      const storeByName = (name: string) => stored.find((s) => s.name === name)!
      const floorNote = "read + isUtf8 + split + JSON.parse"
      const s1 = summarize(`v1 file, ${text}`, [storeByName("v1 floor"), storeByName("v1 SessionStore.read")], "v1 floor", {
        "v1 floor": `${mb(files.v1)}; ${floorNote}`,
        "v1 SessionStore.read": "full validation"
      })
      const s2 = summarize(`v2 file, ${text}`, [storeByName("v2 floor"), storeByName("v2 SessionStore.read")], "v2 floor", {
        "v2 floor": `${mb(files.v2)}; ${floorNote}`,
        "v2 SessionStore.read": "full validation"
      })
      rows.push(...s1, ...s2)
      relative.push({
        group: text,
        what: "SessionStore.read",
        relative: s2[1]!.ratio! / s1[1]!.ratio!,
        perRound: perRound(storeByName("v1 floor"), storeByName("v1 SessionStore.read"), storeByName("v2 floor"), storeByName("v2 SessionStore.read")),
        v2OverV1: s2[1]!.median / s1[1]!.median
      })
    } finally {
      tmp.remove()
    }
  }
  return storeSkipped === undefined ? { rows, relative } : { rows, relative, storeSkipped }
}

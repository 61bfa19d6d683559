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
 *   the stricter for it.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { firstArgumentsKey, firstInexactNumber, firstInexactNumberFrom } from "@session-tree/core/Json"
import * as Record from "@session-tree/core/Record"
import * as RecordV2 from "@session-tree/core/RecordV2"
import * as DecodeV2 from "../../../core/src/internal/decodeV2.js"
import { conversation, ourFile } from "../data.js"
import { fileV2, sameConversation } from "../dataV2.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import { floorLoad } from "./load.js"

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

export interface LoadV2Result {
  readonly rows: ReadonlyArray<Row>
  /** (version-2 decoder / its floor) over (version-1 decoder / its floor), per text kind. */
  readonly relative: ReadonlyArray<{ readonly group: string; readonly relative: number; readonly v2OverV1: number }>
}

export const benchLoadV2 = async (options: LoadV2Options): Promise<LoadV2Result> => {
  const rows: Array<Row> = []
  const relative: Array<LoadV2Result["relative"][number]> = []
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
        relative: v2Rows[1]!.ratio! / v1Rows[1]!.ratio!,
        v2OverV1: v2Rows[1]!.median / v1Rows[1]!.median
      })
    } finally {
      tmp.remove()
    }
  }
  return { rows, relative }
}

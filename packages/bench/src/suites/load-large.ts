/**
 * Loading a version-2 session of 100,000 short entries (~27 MB: the session the server's Chromium
 * test opens cold, `dataV2.ts`'s `linearSession`), all variants in the same rounds:
 *
 * - floor: read + `isUtf8` + split + `JSON.parse` of every line, the records kept (`load.ts`);
 * - ours: `SessionStore.read` on the file backend (every check of the format, history included);
 * - parse: `JSON.parse` of every line already read (the backend's lines), the records kept: the
 *   least the core's decoding can do with them;
 * - decode: `Codec.decodeLines` of the same lines, the core's part of `SessionStore.read`.
 *
 * Ratios: ours / floor, and decode / parse (the core alone, against the same parse).
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { decodeLines, type RecordLines } from "@session-tree/core/Codec"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Fs from "@session-tree/file/Fs"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { fileV2, linearSession } from "../dataV2.js"
import { rounds, type Row, summarize, tempDir } from "../harness.js"
import { floorLoad, ourRead } from "./load.js"

export interface LoadLargeOptions {
  readonly rounds: number
  readonly warmup: number
  /** Entries of the session (default 100,000). */
  readonly entries?: number
}

export interface LoadLargeResult {
  readonly rows: ReadonlyArray<Row>
  readonly bytes: number
}

const parseAll = (lines: ReadonlyArray<string>): Array<unknown> => {
  const out: Array<unknown> = []
  for (let i = 0; i < lines.length; i++) out.push(JSON.parse(lines[i]!))
  return out
}

export const benchLoadLarge = async (options: LoadLargeOptions): Promise<LoadLargeResult> => {
  const entries = options.entries ?? 100_000
  const tmp = tempDir()
  try {
    const path = Path.join(tmp.dir, "large.jsonl")
    const bytes = fileV2(linearSession("large", entries))
    NFS.writeFileSync(path, bytes)
    // The lines as the file backend reads them, for the core's part alone.
    const stored: RecordLines = await Effect.runPromise(Effect.flatMap(SessionJournal, (journal) => journal.read(path)).pipe(
      Effect.provideService(SessionJournal, FileJournal.make(Fs.node))
    ))
    const check = await ourRead(path)
    const decoded = decodeLines(stored)
    if (check.entries.length !== entries || Either.isLeft(decoded) || decoded.right.history.size !== entries) {
      throw new Error("the large session did not load")
    }
    const samples = await rounds([
      { name: "floor", run: () => void floorLoad(path) },
      { name: "ours: SessionStore.read", run: async () => void (await ourRead(path)) },
      { name: "parse", run: () => void parseAll(stored.lines) },
      { name: "decode: Codec.decodeLines", run: () => void decodeLines(stored) }
    ], options)
    const group = `load ${entries.toLocaleString("en-US")} entries (version 2), ${(bytes.length / 1e6).toFixed(1)} MB`
    const notes = {
      floor: "read + isUtf8 + split + JSON.parse",
      "ours: SessionStore.read": "file backend, full validation",
      parse: "JSON.parse of the lines read",
      "decode: Codec.decodeLines": "the same lines, every check"
    }
    const byFloor = summarize(group, samples.slice(0, 2), "floor", notes)
    const byParse = summarize(`${group}, the core alone`, samples.slice(2), "parse", notes)
    return { rows: [...byFloor, ...byParse], bytes: bytes.length }
  } finally {
    tmp.remove()
  }
}

/**
 * S1. Search over a gigabyte of session files: `Sessions.search` on files, with
 * the index beside them (`docs/search-index.md`: counted and ranked from the index,
 * only the page's lines read and decoded) and by the scan (`FileSearch.layerScan`:
 * the scan, then the library's decoding and matching of each line it finds),
 * against `grep -c -F` over the same files, same run, page cache warm for both
 * (the files were just written; the machine has room for them). The first searches
 * are timed once each beside one `grep -c -F`: a rare word's, which makes no segment,
 * then the common word's, which makes the index.
 *
 * The corpus is made at bench time in a temp directory: version-2 agent sessions
 * of ~2 MB each, with a rare word (one entry in 20,000), a phrase (one in 2,000)
 * and common words; and a word in none whose letters are all common (the scan's
 * other way: see `asciiSearch.ts` of the file package). grep counts the matching
 * lines of each file, case sensitive (`-i` for the case-insensitive row); ours
 * finds, decodes, matches, ranks and counts the entries, case-insensitive, whole
 * words, and checks the count it gives. For the common word, two floors beside
 * them: the time `JSON.parse`, then the core's decoding, take over the lines that
 * hold the word (the lines the scan hands over), timed alone (reading and
 * splitting the files untimed): what a search without an index cannot go under
 * while it decodes every candidate.
 */
import { spawn } from "node:child_process"
import * as Codec from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as FileSearch from "@session-tree/file/FileSearch"
import * as Fs from "@session-tree/file/Fs"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { now, rounds, type Row, summarize } from "../harness.js"
import { agentSession, COMMON, PHRASE, RARE } from "../serveData.js"

export interface SearchFilesOptions {
  readonly rounds: number
  /** Bytes of sessions to make (default 1 GiB). */
  readonly bytes?: number
}

const SESSION_ENTRIES = 5_000

/** A word in no entry, each of its letters frequent in the sessions' text (none under 1% of the bytes). */
const ABSENT = "interest"

/** `grep ARGS FILES…`, its matching lines summed over the files (`-c` prints one count per file). */
const grep = (args: ReadonlyArray<string>, files: ReadonlyArray<string>): Promise<number> =>
  new Promise((resolve, reject) => {
    const child = spawn("grep", [...args, "--", ...files], { stdio: ["ignore", "pipe", "inherit"] })
    let out = ""
    child.stdout.setEncoding("utf8")
    child.stdout.on("data", (chunk: string) => (out += chunk))
    child.on("error", reject)
    child.on("close", (code) => {
      if (code !== 0 && code !== 1) return reject(new Error(`grep exited ${code}`))
      resolve(out.split("\n").filter((l) => l !== "").reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(":") + 1)), 0))
    })
  })

/**
 * The time `step` takes over the entry lines of `files` that hold `word` (lower case ASCII) in any
 * case, reading and splitting the files untimed.
 */
const floor = (files: ReadonlyArray<string>, word: string, step: (version: 1 | 2, line: string, n: number) => unknown) => async () => {
  let spent = 0
  for (const file of files) {
    const lines = NFS.readFileSync(file, "utf8").split("\n")
    const version = Codec.versionOf(lines[0])
    const held = lines.slice(1).filter((line) => line !== "" && line.toLowerCase().includes(word))
    const start = now()
    for (let i = 0; i < held.length; i++) step(version, held[i]!, i + 2)
    spent += now() - start
  }
  return spent
}

export const benchSearchFiles = async (options: SearchFilesOptions, dir: string): Promise<{ readonly rows: Array<Row>; readonly note: string }> => {
  const target = options.bytes ?? 1024 ** 3
  let bytes = 0
  let rare = 0
  let phrase = 0
  const files: Array<string> = []
  for (let n = 0; bytes < target; n++) {
    const made = agentSession(n, SESSION_ENTRIES)
    const text = made.lines.join("\n") + "\n"
    const file = Path.join(dir, `s${String(n).padStart(5, "0")}.jsonl`)
    NFS.writeFileSync(file, text)
    files.push(file)
    bytes += Buffer.byteLength(text)
    rare += made.rare
    phrase += made.phrase
  }
  const indexed = await Effect.runPromise(Effect.provide(Sessions.make, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)))
  const scanning = await Effect.runPromise(Effect.provide(
    Sessions.make,
    Layer.mergeAll(FileJournal.layerWithFs(), Ids.layerRandom, Layer.provide(FileSearch.layerScan, Fs.layer))
  ))
  const ours = (service: Sessions.SessionsService, query: string, expected: number) => async () => {
    const result = await Effect.runPromise(service.search({ query, directory: dir, limit: 20 }))
    if (result.total !== expected || result.unreadable.length > 0) throw new Error(`ours found ${result.total} for ${query}, not ${expected}`)
  }
  const theirs = (args: ReadonlyArray<string>, atLeast: number) => async () => {
    const count = await grep(args, files)
    if (count < atLeast) throw new Error(`grep ${args.join(" ")} counted ${count}`)
  }
  // A file changed in the last 2 s is scanned, not indexed (see FileSearch.Options): the last ones written wait that long.
  await new Promise((resolve) => setTimeout(resolve, 2_100))
  const rows: Array<Row> = []
  // The common word: grep counts lines that hold it anywhere; ours counts entries that hold it as a word.
  const common = (await Effect.runPromise(scanning.search({ query: COMMON, directory: dir, limit: 1 }))).total
  // The first searches, no segment yet: a rare word is answered by the scan and makes none (its scan
  // finds too little of any session: FileSearch.Options.indexShare); the common word makes them all.
  const GROUP = "the first searches (no index yet; the common word's makes it)"
  for (const [query, expected] of [[RARE, rare], [COMMON, common]] as const) {
    const oursStart = now()
    await ours(indexed, query, expected)()
    const first = now() - oursStart
    const grepStart = now()
    await theirs(["-c", "-F", query], expected)()
    const grepped = now() - grepStart
    rows.push(
      { group: GROUP, variant: `grep -c -F ${query}`, median: grepped, p90: grepped, n: 1, ratio: 1, ratioTo: `grep -c -F ${query}` },
      { group: GROUP, variant: `ours: the first search(${query})`, median: first, p90: first, n: 1, ratio: first / grepped, ratioTo: `grep -c -F ${query}` }
    )
  }
  const cases: ReadonlyArray<readonly [string, string, number, ReadonlyArray<string>]> = [
    [`a rare word (${rare} entries)`, RARE, rare, ["-c", "-F", RARE]],
    [`a phrase (${phrase} entries)`, `"${PHRASE.join(" ")}"`, phrase, ["-c", "-F", PHRASE.join(" ")]],
    [`a common word (${common.toLocaleString("en-US")} entries)`, COMMON, common, ["-c", "-F", COMMON]],
    // Every letter of it common in the text: the scan folds the bytes rather than search for case variants.
    [`a word of common letters (no entry)`, ABSENT, 0, ["-c", "-F", ABSENT]]
  ]
  for (const [group, query, expected, args] of cases) {
    const floors = query === COMMON
      ? [
        { name: `floor: JSON.parse of the lines holding it`, run: floor(files, COMMON, (_, line) => JSON.parse(line)) },
        { name: `floor: Codec.decodeEntryLine of them`, run: floor(files, COMMON, (version, line, n) => Codec.decodeEntryLine(version, line, n)) }
      ]
      : []
    const samples = await rounds([
      { name: `grep ${args.join(" ")}`, run: theirs(args, expected) },
      { name: `grep -i ${args.join(" ")}`, run: theirs(["-i", ...args], expected) },
      { name: `ours, indexed: Sessions.search(${query})`, run: ours(indexed, query, expected) },
      { name: `ours, scan: Sessions.search(${query})`, run: ours(scanning, query, expected) },
      ...floors
    ], { rounds: options.rounds, warmup: 1 })
    rows.push(...summarize(group, samples, `grep ${args.join(" ")}`))
  }
  return { rows, note: `${files.length} sessions, ${(bytes / 1024 ** 3).toFixed(2)} GiB, ${(files.length * SESSION_ENTRIES).toLocaleString("en-US")} entries` }
}

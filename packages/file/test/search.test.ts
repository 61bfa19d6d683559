/**
 * Search on session files: the scan hands the library every line a load would
 * show that may match, and no others that matter. The answers equal the memory
 * backend's on the same sessions (which reads every line); what only a file can
 * hold is checked here: a torn tail, an append in flight, CRLF endings, lines
 * across the scan's windows, a link or a file that is not UTF-8 in the directory.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import * as Search from "@session-tree/core/Search"
import * as Sessions from "@session-tree/core/Sessions"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import { scanBytes } from "../src/internal/fileSearch.js"

const withDir = <A, E, R>(use: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-search-"))),
    use,
    (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
  )

const writeCorpus = (dir: string) => {
  for (const session of Corpus.corpus) NFS.writeFileSync(Path.join(dir, `${session.name}.jsonl`), Corpus.fileText(session))
}

const onFiles = (dir: string, options: Omit<Search.SearchOptions, "directory">) =>
  Effect.flatMap(Sessions.Sessions, (s) => s.search({ ...options, directory: dir })).pipe(
    Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))))
  )

const inMemory = (options: Search.SearchOptions) =>
  Effect.flatMap(Sessions.Sessions, (s) => s.search(options)).pipe(
    Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(MemoryJournal.layerStorage(new Map(Corpus.corpus.map((s) => [s.name, s.lines]))), Ids.layerRandom))))
  )

/** A result with each location as the session's name, as the memory backend names them. */
const named = (result: Search.SearchResult) => ({
  ...result,
  hits: result.hits.map((hit) => ({ ...hit, location: Path.basename(hit.location, ".jsonl") })),
  unreadable: result.unreadable.map((u) => ({ ...u, location: Path.basename(u.location, ".jsonl") }))
})

const QUERIES = Corpus.QUERIES as ReadonlyArray<Search.SearchOptions>

describe("search on files", () => {
  it.effect("gives the answers the library gives on the same sessions held in memory", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        writeCorpus(dir)
        for (const options of QUERIES) {
          const files = named(yield* onFiles(dir, options))
          const memory = yield* inMemory(options)
          expect(files, options.query).toEqual({ ...memory, searched: files.searched })
        }
        // Sessions chosen by path (relative or absolute) or by ID.
        const chosen = yield* onFiles(dir, { query: "connection", sessions: [Path.join(dir, "pooling.jsonl"), "s-notes"] })
        expect(named(chosen).hits.map((h) => h.location)).toEqual(["notes", "pooling"])
      })))

  it.effect("leaves out a torn tail and an append's batch whose intent says it is not whole; reads CRLF endings", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        const path = Path.join(dir, "s.jsonl")
        const text = Corpus.fileText(Corpus.incident)
        // A torn last line holding the word: the end of an append that did not finish.
        NFS.writeFileSync(path, `${text}{"type":"entry","version":2,"id":"torn","text":"zebra`)
        expect((yield* onFiles(dir, { query: "zebra" })).total).toBe(0)
        // A whole last line without its line feed is read like any other.
        const last = Corpus.incident.lines[4]!.replace(`"i4"`, `"i5"`).replace(`"m4"`, `"m5"`).replace("usually", "zebra")
        NFS.writeFileSync(path, `${text}${last}`)
        expect((yield* onFiles(dir, { query: "zebra" })).hits.map((h) => h.entry)).toEqual(["i5"])
        // An append in flight: its intent says bytes FROM..TO; the file is not whole yet, so it shows FROM bytes.
        const from = Buffer.byteLength(text)
        const batch = `${last}\n`
        NFS.writeFileSync(path, text + batch.slice(0, 10))
        const sha = createHash("sha256").update(batch).digest("hex")
        NFS.symlinkSync(`session-tree-append-1:${from}:${from + Buffer.byteLength(batch)}:${sha}:00000000-1-1:1`, `${path}.marker`)
        expect((yield* onFiles(dir, { query: "refused" })).total).toBe(2)
        // Whole now: the rule shows the batch.
        NFS.writeFileSync(path, text + batch)
        expect((yield* onFiles(dir, { query: "zebra" })).hits.map((h) => h.entry)).toEqual(["i5"])
        NFS.unlinkSync(`${path}.marker`)
        // CRLF endings, as a version-1 file may have.
        NFS.writeFileSync(path, Corpus.pooling.lines.map((line) => `${line}\r\n`).join(""))
        expect((yield* onFiles(dir, { query: "saturated" })).hits.map((h) => h.entry)).toEqual(["p3"])
      })))

  it.effect("lists what it cannot read: a link, a file that is not UTF-8; and reads a directory that is gone as SESSION_NOT_FOUND", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        writeCorpus(dir)
        NFS.symlinkSync(Path.join(dir, "pooling.jsonl"), Path.join(dir, "link.jsonl"))
        const bad = Buffer.concat([Buffer.from(Corpus.fileText(Corpus.pooling).replace("saturated", "saturated \u00ff")), Buffer.from([0xff, 0x0a])])
        NFS.writeFileSync(Path.join(dir, "latin.jsonl"), bad)
        const result = yield* onFiles(dir, { query: "saturated" })
        expect(result.hits.map((h) => Path.basename(h.location))).toEqual(["pooling.jsonl"])
        expect(result.unreadable.map((u) => [Path.basename(u.location), u.error.code])).toEqual([
          ["latin.jsonl", "SESSION_INVALID_UTF8"],
          ["link.jsonl", "SESSION_NOT_REGULAR_FILE"]
        ])
        const missing = yield* Effect.flip(onFiles(Path.join(dir, "nope"), { query: "x" }))
        expect(missing.code).toBe("SESSION_NOT_FOUND")
      })))
})

describe("the scan of one file's bytes", () => {
  it("finds every line that holds the words, whatever windows the bytes are read in", () => {
    const escaped = (i: number) => i % 13 === 5 && i % 7 !== 0
    const lines = Array.from({ length: 200 }, (_, i) =>
      JSON.stringify({ n: i, text: i % 7 === 0 ? `${i % 2 === 0 ? "NeEdLe" : "needle"} ${"é".repeat(i % 5)} HERE` : `hay ${"ü".repeat(i % 3)}${i % 11 === 0 ? " neeDl" : ""}` }))
        .map((line, i) => (escaped(i) ? line.replace("hay", "h\\u0061y") : line))
    const bytes = Buffer.from(`{"type":"session"}\n${lines.join("\n")}\n`)
    const cases: ReadonlyArray<readonly [Search.Pattern, (i: number) => boolean]> = [
      // Lines with an escape (the hay lines i % 13 === 5) are candidates whatever their words.
      [Search.patternOf(["needle"]), (i) => i % 7 === 0 || escaped(i)],
      [Search.patternOf(["needle", "here"]), (i) => i % 7 === 0 || escaped(i)],
      // A word beyond ASCII: the bytes are read as UTF-8.
      [Search.patternOf(["needle", "é"]), (i) => (i % 7 === 0 && i % 5 !== 0) || escaped(i)]
    ]
    for (const [pattern, holds] of cases) {
      const whole = scanBytes(bytes, pattern)
      expect(whole.lines.map((l) => l.text)).toEqual(lines.filter((_, i) => holds(i)))
      for (const window of [1, 7, 64, 333, 4096]) {
        const windowed = scanBytes(bytes, pattern, window)
        expect(windowed.lines).toEqual(whole.lines)
        // The bytes folded to lower case find the lines the text's pattern finds.
        expect(scanBytes(bytes, { ...pattern, folded: undefined }, window).lines).toEqual(whole.lines)
      }
      // Orders grow with the place in the file.
      const orders = whole.lines.map((l) => l.order)
      expect([...orders].sort((a, b) => a - b)).toEqual(orders)
    }
  })
})

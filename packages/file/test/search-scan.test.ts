/**
 * The scan of an ASCII query over a file's bytes: each way of looking for the words (case variants
 * of a piece of the anchor, or the bytes folded a window of lines at a time) finds exactly the lines
 * that hold every word in any ASCII case; and one search's buffers, reused from file to file and
 * grown on the way, never show a file the bytes of another.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import * as Search from "@session-tree/core/Search"
import * as Sessions from "@session-tree/core/Sessions"
import { FastCheck as fc } from "effect"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import { Buffers, WINDOW_BYTES, lineStarts, type Strategy } from "../src/internal/asciiSearch.js"
import { scanBytes } from "../src/internal/fileSearch.js"

const STRATEGIES: ReadonlyArray<Strategy> = ["auto", "variants", "fold"]

/** Where each line of `text` starts whose ASCII lower case holds every word, or that holds `\u`: what a scan must find. */
const expected = (text: Buffer, start: number, words: ReadonlyArray<string>): Array<number> => {
  const out: Array<number> = []
  for (let from = start; from < text.length;) {
    let to = text.indexOf(0x0a, from)
    if (to < 0) to = text.length
    const raw = text.toString("latin1", from, to)
    const line = raw.replace(/[A-Z]+/g, (s) => s.toLowerCase())
    if (words.every((w) => line.includes(w)) || raw.includes("\\u")) out.push(from)
    from = to + 1
  }
  return out
}

const header = (id: string) => JSON.stringify({ type: "session", version: 2, id, timestamp: "2026-01-01T00:00:00.000Z" })

/** A version-2 session whose entries are user messages of `texts`. */
const sessionText = (id: string, texts: ReadonlyArray<string>) =>
  [
    header(id),
    ...texts.map((text, i) =>
      JSON.stringify({
        type: "entry",
        version: 2,
        id: `${id}-e${i}`,
        parentId: i === 0 ? null : `${id}-e${i - 1}`,
        timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
        kind: "message",
        message: { role: "user", id: `m${i}`, content: [{ type: "text", text }] }
      })
    )
  ].map((line) => `${line}\n`).join("")

const withDir = <A, E, R>(use: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-search-scan-"))),
    use,
    (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
  )

const search = (dir: string, query: string) =>
  Effect.flatMap(Sessions.Sessions, (s) => s.search({ query, directory: dir, limit: 1000 })).pipe(
    Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))))
  )

describe("the scan of an ASCII query", () => {
  it("finds exactly the lines holding every word in any case, whichever way it looks", () => {
    // Pieces of the words in several cases, their neighbours in the alphabet, digits, bytes beyond ASCII.
    const token = fc.constantFrom(
      "zanzibar", "ZANZIBAR", "ZanZiBar", "zanzibaR", "zanzibaz", "ZANZIBAx", "quarterlx", "zan", "ZAN", "zibar", "Zz", "za", "zA", "Za", "ZA", "ar", "AR",
      "v2", "V2", "v3", "2026", "202", "q", "Q", "Quarterly", "quarterl", "ledger", "LEDGER", "é", "É", "ß", "ZANZIBAR\u00e9",
      "{", "\"", " ", ":", "_", "\\u0041", "\\U0041", "\\", "u", "@", "[", "`", "{"
    )
    const line = fc.array(token, { maxLength: 12 }).map((tokens) => tokens.join(""))
    const queries: ReadonlyArray<ReadonlyArray<string>> = [
      ["zanzibar"], ["za"], ["z"], ["q"], ["v2"], ["2026"], ["quarterly", "ledger"], ["zanzibar", "ar", "v2"]
    ]
    fc.assert(fc.property(fc.array(line, { maxLength: 40 }), fc.boolean(), (lines, lastFeed) => {
      const text = Buffer.from(`${header("s")}\n${lines.join("\n")}${lastFeed ? "\n" : ""}`)
      const start = text.indexOf(0x0a) + 1
      const buffers = new Buffers()
      for (const words of queries) {
        const want = expected(text, start, words)
        for (const strategy of STRATEGIES) {
          expect(lineStarts(text, start, text.length, words, "\\u", buffers, strategy), `${words} ${strategy}`).toEqual(want)
        }
      }
    }), { numRuns: 300 })
  })

  it("finds a word across where a fold window would end, and in a line longer than a window", () => {
    const head = `${header("s")}\n`
    const lines: Array<string> = []
    let offset = head.length
    // A window of whole lines ends at the end of the line holding its WINDOW_BYTES-th byte: place the
    // word across that byte three times, between lines of which one in three holds it elsewhere.
    for (let windowStart = offset, k = 0; k < 3; k++) {
      const edge = windowStart + WINDOW_BYTES
      for (let i = 0; offset + 2001 <= edge - 8; i++) {
        const line = `${i % 3 === 0 ? "ZanZibar " : ""}${"a ".repeat(995)}${i}`
        lines.push(line)
        offset += line.length + 1
      }
      const line = `${"b".repeat(edge - offset - 4)}zAnzIbar ${"c ".repeat(100)}`
      lines.push(line)
      offset += line.length + 1
      windowStart = offset
    }
    lines.push(`${"d".repeat(WINDOW_BYTES - 3)}zanzibar${"e".repeat(2 * WINDOW_BYTES)}ZANZIBAR`, "zanzibar last")
    const text = Buffer.from(`${head}${lines.join("\n")}\n`)
    const start = head.length
    const want = expected(text, start, ["zanzibar"])
    expect(want.length).toBeGreaterThan(3 * 40)
    for (const strategy of STRATEGIES) {
      expect(lineStarts(text, start, text.length, ["zanzibar"], "\\u", new Buffers(), strategy)).toEqual(want)
    }
  })

  it("shows each file only its own bytes when one set of buffers reads many of different sizes", () => {
    const buffers = new Buffers()
    const big = Buffer.from(`${header("big")}\n${"x ".repeat(5000)}\nzanzibar QUARTERLY ledger\n${"y".repeat(100)}zanzibar\n`)
    const small = Buffer.from(`${header("small")}\nnothing here\n`)
    const torn = Buffer.from(`${header("torn")}\nline one\n{"torn":"zanzibar quarterly ledger é`)
    const read = (bytes: Buffer) => {
      const into = buffers.take(bytes.length)
      bytes.copy(into)
      return into
    }
    for (const pattern of [Search.patternOf(["zanzibar"]), Search.patternOf(["quarterly", "ledger"]), Search.patternOf(["zanzibar", "é"])]) {
      for (const strategy of STRATEGIES) {
        const alone = scanBytes(big, pattern).lines
        expect(scanBytes(read(big), pattern, undefined, buffers, strategy).lines).toEqual(alone)
        // The buffer still holds the big file's words past the small file's end: they must not count.
        expect(scanBytes(read(small), pattern, undefined, buffers, strategy).lines).toEqual([])
        expect(scanBytes(read(torn), pattern, undefined, buffers, strategy).lines).toEqual([])
      }
    }
    expect(scanBytes(read(big), Search.patternOf(["zanzibar"]), undefined, buffers).lines.map((l) => l.text)).toEqual([
      "zanzibar QUARTERLY ledger",
      `${"y".repeat(100)}zanzibar`
    ])
  })

  it.effect("searches a directory of files read into one growing buffer as each file alone", () =>
    withDir((dir) =>
      Effect.gen(function*() {
        // Sorted by name, so read in this order: small, then larger (the buffer grows), then small again
        // (the buffer holds the larger file's bytes past its end), with the words across the old end.
        const word = (i: number) => (i % 3 === 0 ? "ZanZibar" : i % 3 === 1 ? "zanzibar" : "ZANZIBAR")
        const sizes = [3, 40, 2, 400, 1, 4000, 5]
        const files = sizes.map((n, f) =>
          sessionText(`s${f}`, Array.from({ length: n }, (_, i) => (i === n - 1 || i % 7 === 3 ? `${"grain ".repeat(i % 50)}${word(i)} café ${f}` : `grain ${i}`)))
        )
        files.forEach((text, f) => NFS.writeFileSync(Path.join(dir, `f${f}.jsonl`), text))
        // A file whose last line is torn, after the largest: the bytes after its end are the largest's.
        NFS.writeFileSync(Path.join(dir, "f9.jsonl"), `${sessionText("s9", ["first"])}{"type":"entry","version":2,"id":"s9-e1","text":"zanzibar`)
        const expectedHits = sizes.reduce((sum, n) => sum + Array.from({ length: n }, (_, i) => i === n - 1 || i % 7 === 3).filter(Boolean).length, 0)
        for (const query of ["zanzibar", "ZANZIBAR café", "\"zanzibar café\""]) {
          const result = yield* search(dir, query)
          expect(result.unreadable).toEqual([])
          expect(result.total, query).toBe(expectedHits)
          // Each hit's text is its own file's: its last word names the file it came from.
          for (const hit of result.hits) {
            const f = Path.basename(hit.location, ".jsonl").slice(1)
            expect(hit.session).toBe(`s${f}`)
            expect(hit.snippets.map((s) => s.text).join(" ")).toContain(` ${f}`)
          }
        }
        expect((yield* search(dir, "first")).total).toBe(1)
      })))
})

/**
 * The index of session files against the scan: on random corpora (case variants, words only in IDs
 * and keys, lines that do not decode, a header that does not, version 1 and 2, CRLF endings, a file
 * that is not UTF-8, ties in timestamps, words over 64 code points) and random queries (filters,
 * pages, phrases), the indexed search's whole result equals the scan's: when the index is made, when
 * it is read back, and after each way a directory changes behind it (an append, a rewrite keeping
 * the size, a rename, a delete, a file replaced, a segment damaged or cut short).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import * as Search from "@session-tree/core/Search"
import * as Sessions from "@session-tree/core/Sessions"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { options as queryOptions, type Session, session, sessionLines, TIMES } from "../../core/test/support/searchCorpus.js"
import * as FileJournal from "../src/FileJournal.js"
import * as FileSearch from "../src/FileSearch.js"
import { type Around, FsError, type FsService, intercept, node } from "../src/Fs.js"
import { deleteSession } from "../src/internal/delete.js"
import * as Owner from "../src/internal/owner.js"
import * as Index from "../src/internal/searchIndex.js"

/** How long a file must have been left alone to be indexed in these tests (see `FileSearch.Options.settleMs`). */
const SETTLE_MS = 40
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS + 15))

/** Every session a search reads is indexed (`indexShare: 0`), so that every test goes through segments. */
const indexed = (fs: FsService = node) => FileSearch.make(fs, { settleMs: SETTLE_MS, indexShare: 0 })
const scan = FileSearch.make(node, { index: false })

const search = (service: Search.SearchIndexService, dir: string, options: Search.SearchOptions) =>
  Effect.runPromise(Search.run({ ...options, directory: dir }, service.candidates))

const indexDir = (dir: string) => Path.join(dir, Index.INDEX_DIRECTORY)
const segments = (dir: string) => (NFS.existsSync(indexDir(dir)) ? NFS.readdirSync(indexDir(dir)).filter((n) => n.endsWith(".seg")).sort() : [])

/** A word of 70 code points: an index keeps its first 64, the matcher compares it whole. */
const LONG = "build" + "x".repeat(65)
const LONG_OTHER = "build" + "x".repeat(64) + "y"

/** A version-1 session: plain messages and a tool call, with the same words as the others. */
const v1Lines = (id: string, texts: ReadonlyArray<string>): Array<string> => [
  JSON.stringify({ type: "session", version: 1, id, timestamp: TIMES[0] }),
  ...texts.map((text, i) =>
    JSON.stringify({
      type: "entry",
      version: 1,
      id: `v1-${i}`,
      parentId: i === 0 ? null : `v1-${i - 1}`,
      timestamp: TIMES[i % TIMES.length],
      message: i % 2 === 0
        ? { role: "user", id: `u-${i}`, content: text }
        : { role: "assistant", id: `a-${i}`, content: text, toolCalls: [{ id: `c-${i}`, name: "read_file", arguments: { path: text } }] }
    })
  )
]

interface Corpus {
  readonly sessions: ReadonlyArray<Session>
  readonly v1: ReadonlyArray<ReadonlyArray<string>>
  readonly crlf: boolean
  readonly latin1: boolean
  readonly long: boolean
}

const corpus: FastCheck.Arbitrary<Corpus> = FastCheck.record({
  sessions: FastCheck.array(session, { minLength: 1, maxLength: 4 }),
  v1: FastCheck.array(FastCheck.array(FastCheck.constantFrom("build it", "the BUILD key", "Read-File x", "nothing here", "ärger 0"), { minLength: 1, maxLength: 4 }), {
    maxLength: 2
  }),
  crlf: FastCheck.boolean(),
  latin1: FastCheck.boolean(),
  long: FastCheck.boolean()
})

const writeCorpus = (dir: string, c: Corpus): void => {
  c.sessions.forEach((s, n) => {
    const lines = sessionLines(s)
    if (c.long && n === 0) {
      // Words over 64 code points that share their first 64: one in a line that decodes, one in a line that does not.
      lines.push(lines[1]!.replace(/"id":"build-0"/, `"id":"build-long"`).replace(/"(text|summary|title|content)":"/, `"$1":"${LONG} `))
      lines.push(`{"type":"entry","id":"${LONG_OTHER}`)
    }
    NFS.writeFileSync(Path.join(dir, `s${n}.jsonl`), lines.join(c.crlf && n % 2 === 1 ? "\r\n" : "\n") + "\n")
  })
  c.v1.forEach((texts, n) => NFS.writeFileSync(Path.join(dir, `v${n}.jsonl`), v1Lines(`v1-${n}`, texts).join("\n") + "\n"))
  if (c.latin1) {
    const lines = sessionLines(c.sessions[0]!)
    NFS.writeFileSync(Path.join(dir, "latin1.jsonl"), Buffer.concat([Buffer.from(lines.join("\n") + "\n"), Buffer.from([0xe9, 0x62, 0x75, 0x69, 0x6c, 0x64, 0x0a])]))
  }
}

const QUERIES_EXTRA: ReadonlyArray<Search.SearchOptions> = [
  { query: "build", limit: 3 },
  { query: "build key", offset: 1, limit: 2 },
  { query: LONG },
  { query: "0" },
  { query: "read_file" },
  { query: "x", roles: ["assistant"], since: "2026-01-03" },
  { query: "build", until: TIMES[1], models: ["gpt-5"] },
  { query: "build", until: "2026-01-02", sessions: ["s-b", "v1-0"], offset: 1 },
  { query: "\"read file\"", sessions: ["s-build"] }
]

/** The indexed answer equals the scan's for each query; returns how many hits they gave in all. */
const same = async (service: Search.SearchIndexService, dir: string, queries: ReadonlyArray<Search.SearchOptions>, what: string) => {
  let hits = 0
  for (const options of queries) {
    const expected = await search(scan, dir, options)
    expect(await search(service, dir, options), `${what}: ${JSON.stringify(options)}`).toEqual(expected)
    hits += expected.total
  }
  return hits
}

/** A writer's name (see `owner.ts`) of a process that is not running: this boot, a pid no process has. */
const DEAD_OWNER = `${Owner.selfName().split("-")[0]}-4194304-1`

const tempDir = () => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-index-"))

/** `use` of a fresh directory, removed after it. */
const inTempDir = async (use: (dir: string) => Promise<void>): Promise<void> => {
  const dir = tempDir()
  try {
    await use(dir)
  } finally {
    NFS.rmSync(dir, { recursive: true, force: true })
  }
}

/** A session file's bytes rewritten in place, same size: one byte of `needle` after the header changed (`build` to `guild`). */
const rewriteSameSize = (path: string, needle = "build"): boolean => {
  const bytes = NFS.readFileSync(path)
  const at = bytes.indexOf(needle, bytes.indexOf(0x0a) + 1)
  if (at < 0) return false
  bytes[at] = 0x67
  const fd = NFS.openSync(path, "r+")
  NFS.writeSync(fd, bytes, 0, bytes.length, 0)
  NFS.closeSync(fd)
  return true
}

/** A session `a.jsonl` of two titles, `build the thing` and `second` (newer), left to settle; and an indexed search. */
const titled = async (dir: string, second: string) => {
  const s: Session = {
    id: "s-a",
    headerSpoiled: false,
    entries: [
      { time: TIMES[0]!, body: { kind: "title", title: "build the thing" }, spoiled: null },
      { time: TIMES[2]!, body: { kind: "title", title: second }, spoiled: null }
    ]
  }
  const path = Path.join(dir, "a.jsonl")
  NFS.writeFileSync(path, sessionLines(s).join("\n") + "\n")
  await settle()
  return { path, service: indexed() }
}

/** The session of `titled`, indexed: its segment's path and bytes. */
const oneSegment = async (dir: string) => {
  const { service } = await titled(dir, "build another")
  await search(service, dir, { query: "build" })
  const path = Path.join(indexDir(dir), "a.jsonl.seg")
  return { path, good: NFS.readFileSync(path) }
}

describe("the index of session files", () => {
  it("answers as the scan does on random corpora and queries, when made, when read back and after every change behind it", async () => {
    let hits = 0
    await FastCheck.assert(
      FastCheck.asyncProperty(corpus, FastCheck.array(queryOptions, { minLength: 1, maxLength: 3 }), async (c, random) => {
        const dir = tempDir()
        try {
          writeCorpus(dir, c)
          await settle()
          const queries = [...random, ...QUERIES_EXTRA]
          const service = indexed()
          hits += await same(service, dir, queries, "made")
          expect(segments(dir).length).toBeGreaterThan(0)
          hits += await same(service, dir, queries, "read back")
          // Each change, searched at once (the file just changed is read, not indexed), then once it settled.
          const stray = Path.join(indexDir(dir), `s1.jsonl.seg.tmp-${DEAD_OWNER}-1`)
          NFS.writeFileSync(stray, "half a segment")
          const changes: ReadonlyArray<readonly [string, () => void]> = [
            ["an append", () => NFS.appendFileSync(Path.join(dir, "s0.jsonl"), sessionLines(c.sessions[0]!).slice(1).join("\n") + "\n")],
            ["a rewrite keeping the size", () => void rewriteSameSize(Path.join(dir, "s0.jsonl"))],
            ["a rename", () => NFS.renameSync(Path.join(dir, "s0.jsonl"), Path.join(dir, "renamed.jsonl"))],
            ["a delete", () => NFS.rmSync(Path.join(dir, "renamed.jsonl"))],
            ["a file replaced", () => {
              NFS.writeFileSync(Path.join(dir, "next.tmp"), sessionLines(c.sessions[c.sessions.length - 1]!).join("\n") + "\n")
              NFS.renameSync(Path.join(dir, "next.tmp"), Path.join(dir, c.v1.length > 0 ? "v0.jsonl" : "s1.jsonl"))
            }],
            ["a damaged segment", () => {
              for (const name of segments(dir)) {
                const path = Path.join(indexDir(dir), name)
                const bytes = NFS.readFileSync(path)
                for (let at = 130; at < bytes.length; at += 97) bytes[at] = bytes[at]! ^ 0x5a
                NFS.writeFileSync(path, bytes)
              }
            }],
            ["a segment cut short", () => {
              for (const name of segments(dir)) NFS.truncateSync(Path.join(indexDir(dir), name), Math.floor(NFS.statSync(Path.join(indexDir(dir), name)).size / 2))
            }]
          ]
          for (const [what, change] of changes) {
            change()
            hits += await same(service, dir, queries, `${what}, at once`)
            await settle()
            hits += await same(service, dir, queries, `${what}, settled`)
            hits += await same(service, dir, queries, `${what}, read back`)
          }
          // The deleted session's segment is gone with it, and so is a temp name a writer that ended left.
          expect(segments(dir)).not.toContain("renamed.jsonl.seg")
          expect(segments(dir)).not.toContain("s0.jsonl.seg")
          expect(NFS.existsSync(stray)).toBe(false)
        } finally {
          NFS.rmSync(dir, { recursive: true, force: true })
        }
      }),
      { numRuns: 12 }
    )
    // The corpora reach what the comparison is about.
    expect(hits).toBeGreaterThan(200)
  }, 240_000)

  it("answers a query of words from the segments, reading only the page's lines of the sessions", async () => {
    await inTempDir(async (dir) => {
    // Sessions whose every line decodes: a line that does not is read at every search, as the scan would find it.
    const sessions = FastCheck.sample(session, { numRuns: 6, seed: 5 }).map((s) => ({ ...s, headerSpoiled: false, entries: s.entries.map((e) => ({ ...e, spoiled: null })) }))
      .map((s) => ({ ...s, entries: s.entries.filter((_, i) => Search.entryFacts(sessionLines(s)[0]!)(sessionLines(s)[i + 1]!).error === undefined) }))
    sessions.forEach((s, n) => NFS.writeFileSync(Path.join(dir, `s${n}.jsonl`), sessionLines(s).join("\n") + "\n"))
    await settle()
    const opened: Array<string> = []
    const around: Around = (step, run) =>
      step.op === "read" && step.path.endsWith(".jsonl") ? Effect.zipRight(Effect.sync(() => opened.push(Path.basename(step.path))), run) : run
    const service = indexed(intercept(node, around))
    await search(service, dir, { query: "build" })
    expect(new Set(opened).size).toBe(sessions.length)
    opened.length = 0
    const counted = await search(service, dir, { query: "build", limit: 0 })
    expect(counted).toEqual(await search(scan, dir, { query: "build", limit: 0 }))
    expect(counted.total).toBeGreaterThan(0)
    // Counted and ranked from the segments: no byte of a session file read (each is only opened for its identity).
    expect(opened).toEqual([])
    const page = await search(service, dir, { query: "build", limit: 1 })
    expect(page).toEqual(await search(scan, dir, { query: "build", limit: 1 }))
    expect(opened).toEqual([Path.basename(page.hits[0]!.location)])
    })
  })

  it("counts a query word of 64 code points as the scan does, beside a longer word that begins with it", async () => {
    await inTempDir(async (dir) => {
      // The longer word's lexeme is the query word itself; the older entry is off the page of one.
      const w64 = "b" + "x".repeat(63)
      const entries = [
        { time: TIMES[0]!, body: { kind: "title" as const, title: `only ${w64}yyyyyy here` }, spoiled: null },
        { time: TIMES[2]!, body: { kind: "title" as const, title: `the real ${w64} word` }, spoiled: null }
      ]
      NFS.writeFileSync(Path.join(dir, "a.jsonl"), sessionLines({ id: "s-a", headerSpoiled: false, entries }).join("\n") + "\n")
      await settle()
      const service = indexed()
      for (let k = 0; k < 2; k++) {
        const result = await search(service, dir, { query: w64, limit: 1 })
        expect(result).toEqual(await search(scan, dir, { query: w64, limit: 1 }))
        expect(result.total).toBe(1)
      }
      expect(segments(dir)).toEqual(["a.jsonl.seg"])
    })
  })

  it("never answers a session changed since it was indexed from its old segment, even one whose times were put back", async () => {
    await inTempDir(async (dir) => {
    const { path, service } = await titled(dir, "build another")
    expect((await search(service, dir, { query: "build" })).total).toBe(2)
    const { atime, mtime } = NFS.statSync(path)
    expect(rewriteSameSize(path, "build the")).toBe(true)
    NFS.utimesSync(path, atime, mtime)
    const after = await search(service, dir, { query: "build" })
    expect(after).toEqual(await search(scan, dir, { query: "build" }))
    expect(after.total).toBe(1)
    })
  })

  it("answers a session with an append in flight from the session as the load reads it, never from its segment", async () => {
    await inTempDir(async (dir) => {
    const { path, service } = await titled(dir, "build another")
    expect((await search(service, dir, { query: "build" })).total).toBe(2)
    expect(segments(dir)).toEqual(["a.jsonl.seg"])
    // An append in flight, whole: the intent's rule shows its batch, which holds the word.
    const text = NFS.readFileSync(path, "utf8")
    const from = Buffer.byteLength(text)
    const batch = text.split("\n")[2]!.replace(`"build-1"`, `"build-2"`).replace(`"parentId":"build-0"`, `"parentId":"build-1"`) + "\n"
    NFS.writeFileSync(path, text + batch)
    const sha = createHash("sha256").update(batch).digest("hex")
    NFS.symlinkSync(`session-tree-append-1:${from}:${from + Buffer.byteLength(batch)}:${sha}:00000000-1-1:1`, `${path}.marker`)
    await settle()
    for (let round = 0; round < 2; round++) {
      const during = await search(service, dir, { query: "build" })
      expect(during).toEqual(await search(scan, dir, { query: "build" }))
      expect(during.total).toBe(3)
    }
    NFS.unlinkSync(`${path}.marker`)
    expect(await search(service, dir, { query: "build" })).toEqual(await search(scan, dir, { query: "build" }))
    })
  })

  it("runs the search again without the index when the page's lines contradict it", async () => {
    await inTempDir(async (dir) => {
    const { path, service } = await titled(dir, "guild another")
    expect((await search(service, dir, { query: "build" })).total).toBe(1)
    // A segment made of other bytes of the same length, written under the file's identity as it is now:
    // the identity check cannot see it, the lines fetched for the page do.
    const bytes = NFS.readFileSync(path)
    const other = Buffer.from(bytes.toString("latin1").replace("guild another", "build another").replace("build the thing", "guild the thing"), "latin1")
    const stat = await Effect.runPromise(node.lstat(path))
    const { end, headerEnd } = Index.extentOf(other)
    NFS.writeFileSync(Path.join(indexDir(dir), "a.jsonl.seg"), Index.build(other, headerEnd, end, Index.identityOf(stat, false), "index"))
    const result = await search(service, dir, { query: "build" })
    expect(result).toEqual(await search(scan, dir, { query: "build" }))
    expect(result.hits.map((h) => h.entry)).toEqual(["build-0"])
    })
  })

  it("answers as the scan does when no segment can be written (a read-only index directory), with no failure", async () => {
    await inTempDir(async (dir) => {
    const sessions = FastCheck.sample(session, { numRuns: 4, seed: 7 })
    sessions.forEach((s, n) => NFS.writeFileSync(Path.join(dir, `s${n}.jsonl`), sessionLines(s).join("\n") + "\n"))
    NFS.mkdirSync(indexDir(dir), { mode: 0o500 })
    await settle()
    let refused = 0
    // Every write in the index directory refused as a read-only file system would (the tests may run as root).
    const around: Around = (step, run) =>
      step.path.includes(Index.INDEX_DIRECTORY) && (step.op === "open" || step.op === "mkdir" || step.op === "write" || step.op === "rename") &&
        step.path.includes(".tmp-")
        ? Effect.suspend(() => {
          refused++
          return Effect.fail(new FsError({ op: step.op, path: step.path, errno: "EROFS" }))
        })
        : run
    const service = indexed(intercept(node, around))
    const queries = FastCheck.sample(queryOptions, { numRuns: 20, seed: 11 })
    await same(service, dir, [...queries, ...QUERIES_EXTRA], "read-only")
    expect(refused).toBeGreaterThan(0)
    expect(segments(dir)).toEqual([])
    })
  })

  it("answers as the scan does while several searches make the same segments at once", async () => {
    await inTempDir(async (dir) => {
    const sessions = FastCheck.sample(session, { numRuns: 8, seed: 13 })
    sessions.forEach((s, n) => NFS.writeFileSync(Path.join(dir, `s${n}.jsonl`), sessionLines(s).join("\n") + "\n"))
    await settle()
    const queries = FastCheck.sample(queryOptions, { numRuns: 6, seed: 17 })
    const expected = await Promise.all(queries.map((q) => search(scan, dir, q)))
    // Each search its own service, as separate processes are: every one writes every segment it finds missing.
    const answers = await Promise.all([...queries, ...queries].map((q) => search(indexed(), dir, q)))
    expect(answers).toEqual([...expected, ...expected])
    expect(segments(dir)).toEqual(sessions.map((_, n) => `s${n}.jsonl.seg`).sort())
    expect(NFS.readdirSync(indexDir(dir)).filter((n) => n.includes(".tmp-"))).toEqual([])
    })
  })

  it("indexes a session by default only at a search whose scan finds a good share of it, and answers every search as the scan does", async () => {
    await inTempDir(async (dir) => {
      // 40 titles: `common` in every one, `rare` in one.
      const entries = Array.from({ length: 40 }, (_, i) => ({
        time: TIMES[i % TIMES.length]!,
        body: { kind: "title" as const, title: i === 7 ? "common rare" : `common title ${i}` },
        spoiled: null
      }))
      NFS.writeFileSync(Path.join(dir, "a.jsonl"), sessionLines({ id: "s-a", headerSpoiled: false, entries }).join("\n") + "\n")
      await settle()
      const opened: Array<string> = []
      const around: Around = (step, run) =>
        step.op === "read" && step.path.endsWith(".jsonl") ? Effect.zipRight(Effect.sync(() => opened.push(Path.basename(step.path))), run) : run
      const service = FileSearch.make(intercept(node, around), { settleMs: SETTLE_MS })
      // The rare word's scan finds one line in 40: answered by the scan, no segment made.
      const rare = await search(service, dir, { query: "rare" })
      expect(rare).toEqual(await search(scan, dir, { query: "rare" }))
      expect(rare.total).toBe(1)
      expect(segments(dir)).toEqual([])
      // The common word's scan finds every line: the segment is made, and answers the searches after it.
      const common = await search(service, dir, { query: "common", limit: 0 })
      expect(common).toEqual(await search(scan, dir, { query: "common", limit: 0 }))
      expect(common.total).toBe(40)
      expect(segments(dir)).toEqual(["a.jsonl.seg"])
      opened.length = 0
      expect(await search(service, dir, { query: "rare", limit: 0 })).toEqual(await search(scan, dir, { query: "rare", limit: 0 }))
      expect(opened).toEqual([])
    })
  })

  it("measures a share in the file's bytes: lines of letters of three bytes each hold three times their length", async () => {
    await inTempDir(async (dir) => {
      // 12 titles of `common` and 200 CJK letters (600 bytes, 200 UTF-16 units), 28 of 600 ASCII letters:
      // the first hold about 30% of the file's bytes, and 13% of its UTF-16 units.
      const entries = Array.from({ length: 40 }, (_, i) => ({
        time: TIMES[i % TIMES.length]!,
        body: { kind: "title" as const, title: i < 12 ? `common ${"漢".repeat(200)}` : `title ${"x".repeat(600)}` },
        spoiled: null
      }))
      NFS.writeFileSync(Path.join(dir, "a.jsonl"), sessionLines({ id: "s-a", headerSpoiled: false, entries }).join("\n") + "\n")
      await settle()
      const service = FileSearch.make(node, { settleMs: SETTLE_MS })
      const common = await search(service, dir, { query: "common", limit: 0 })
      expect(common).toEqual(await search(scan, dir, { query: "common", limit: 0 }))
      expect(common.total).toBe(12)
      expect(segments(dir)).toEqual(["a.jsonl.seg"])
    })
  })

  it("reads, writes and removes nothing through an index directory that is a link or that others may write, and answers as the scan does", async () => {
    await inTempDir(async (dir) => {
      const { service } = await titled(dir, "build another")
      const elsewhere = tempDir()
      try {
        NFS.writeFileSync(Path.join(elsewhere, "precious.seg"), "not ours")
        NFS.symlinkSync(elsewhere, indexDir(dir))
        for (let k = 0; k < 2; k++) expect(await search(service, dir, { query: "build", limit: 0 })).toEqual(await search(scan, dir, { query: "build", limit: 0 }))
        expect(NFS.readdirSync(elsewhere)).toEqual(["precious.seg"])
        // A directory others may write: a segment there may be anyone's.
        NFS.unlinkSync(indexDir(dir))
        NFS.mkdirSync(indexDir(dir))
        NFS.chmodSync(indexDir(dir), 0o777)
        expect(await search(service, dir, { query: "build" })).toEqual(await search(scan, dir, { query: "build" }))
        expect(segments(dir)).toEqual([])
      } finally {
        NFS.rmSync(elsewhere, { recursive: true, force: true })
      }
    })
  })

  it("keeps no index in a sessions directory that others may write (unless sticky), where its directory could be swapped for a link", async () => {
    await inTempDir(async (dir) => {
      const { service } = await titled(dir, "build another")
      NFS.chmodSync(dir, 0o777)
      expect(await search(service, dir, { query: "build" })).toEqual(await search(scan, dir, { query: "build" }))
      expect(NFS.existsSync(indexDir(dir))).toBe(false)
      // Sticky, as /tmp is: only an entry's owner may rename it.
      NFS.chmodSync(dir, 0o1777)
      expect(await search(service, dir, { query: "build" })).toEqual(await search(scan, dir, { query: "build" }))
      expect(segments(dir)).toEqual(["a.jsonl.seg"])
      NFS.chmodSync(dir, 0o700)
    })
  })

  it("makes again a segment made under other Unicode tables, or whose entries lie outside the file", async () => {
    await inTempDir(async (dir) => {
      const { good, path } = await oneSegment(dir)
      const headEnd = good.readUInt32LE(64)
      const opened: Array<string> = []
      const around: Around = (step, run) =>
        step.op === "read" && step.path.endsWith(".jsonl") ? Effect.zipRight(Effect.sync(() => opened.push(step.path)), run) : run
      const watched = FileSearch.make(intercept(node, around), { settleMs: SETTLE_MS, indexShare: 0 })
      const recordsOff = good.readUInt32LE(92)
      const records = good.readUInt32LE(96) + good.readUInt32LE(100)
      const spoilers: ReadonlyArray<(b: Buffer) => void> = [
        (b) => b.writeUInt32LE(b.readUInt32LE(116) ^ 1, 116),
        // The first entry's length past the file's end, the records' checksum made again.
        (b) => {
          b.writeUInt32LE(0xffffffff, recordsOff + 12)
          b.writeUInt32LE(Zlib.crc32(b.subarray(recordsOff, recordsOff + records * 48)), 104)
        }
      ]
      for (const spoil of spoilers) {
        const bad = Buffer.from(good)
        spoil(bad)
        bad.writeUInt32LE(Zlib.crc32(bad.subarray(12, headEnd)), 8)
        NFS.writeFileSync(path, bad)
        opened.length = 0
        expect(await search(watched, dir, { query: "build", limit: 0 })).toEqual(await search(scan, dir, { query: "build", limit: 0 }))
        // Not used: the session was read whole to make it again.
        expect(opened.length).toBeGreaterThan(0)
        expect(NFS.readFileSync(path).equals(good)).toBe(true)
      }
    })
  })

  it("answers as the scan does from a segment whose checksums hold but whose counts do not (no defect, no giant read)", async () => {
    await inTempDir(async (dir) => {
      const { good, path } = await oneSegment(dir)
      // Each of the head's counts and offsets in turn set to the largest, the head's checksum made again.
      for (const at of [68, 72, 76, 80, 84, 88, 92, 96, 100, 108, 112]) {
        const bad = Buffer.from(good)
        bad.writeUInt32LE(0xffffffff, at)
        bad.writeUInt32LE(Zlib.crc32(bad.subarray(12, bad.readUInt32LE(64))), 8)
        NFS.writeFileSync(path, bad)
        NFS.utimesSync(path, new Date(), new Date())
        const result = await search(FileSearch.make(node, { settleMs: SETTLE_MS, index: true, indexShare: 1 }), dir, { query: "build" })
        expect([at, result]).toEqual([at, await search(scan, dir, { query: "build" })])
      }
    })
  })

  it("removes a deleted session's segment with it, and a search of a directory left with no session removes the rest", async () => {
    await inTempDir(async (dir) => {
      const { path, service } = await titled(dir, "build another")
      NFS.writeFileSync(Path.join(dir, "b.jsonl"), NFS.readFileSync(path))
      await settle()
      await search(service, dir, { query: "build" })
      expect(segments(dir)).toEqual(["a.jsonl.seg", "b.jsonl.seg"])
      await Effect.runPromise(deleteSession(node, path))
      expect(segments(dir)).toEqual(["b.jsonl.seg"])
      NFS.unlinkSync(Path.join(dir, "b.jsonl"))
      expect((await search(service, dir, { query: "build" })).total).toBe(0)
      expect(segments(dir)).toEqual([])
    })
  })

  it("leaves no temp file of an interrupted search, and a session whose segment cannot be named stops no other's", async () => {
    await inTempDir(async (dir) => {
      const { service: _ } = await titled(dir, "build another")
      const slow: Around = (step, run) => step.op === "rename" && step.path.includes(Index.INDEX_DIRECTORY) ? Effect.zipRight(Effect.sleep("300 millis"), run) : run
      const slowed = FileSearch.make(intercept(node, slow), { settleMs: SETTLE_MS, indexShare: 0 })
      const fiber = Effect.runFork(Search.run({ query: "build", directory: dir }, slowed.candidates))
      for (let k = 0; k < 200 && !(NFS.existsSync(indexDir(dir)) && NFS.readdirSync(indexDir(dir)).length > 0); k++) await new Promise((r) => setTimeout(r, 5))
      expect(NFS.readdirSync(indexDir(dir)).some((n) => n.includes(".seg.tmp-"))).toBe(true)
      await Effect.runPromise(Fiber.interrupt(fiber))
      expect(NFS.readdirSync(indexDir(dir))).toEqual([])
      // A session file whose name is as long as a name may be: its segment's name is too long.
      const long = `${"l".repeat(249)}.jsonl`
      NFS.copyFileSync(Path.join(dir, "a.jsonl"), Path.join(dir, long))
      NFS.renameSync(Path.join(dir, "a.jsonl"), Path.join(dir, "z.jsonl"))
      await settle()
      expect(await search(indexed(), dir, { query: "build" })).toEqual(await search(scan, dir, { query: "build" }))
      expect(segments(dir)).toEqual(["z.jsonl.seg"])
    })
  })

  it("keeps what a segment holds pinned to its format: a change to the rules of entryFacts must bump FORMAT", () => {
    // Every kind with text, case and Unicode folding, a word past the 64-code-point cut, a line that does not decode.
    const bodies = [
      { kind: "message", message: { role: "user", id: "u", content: [{ type: "text", text: "Build the PARSER: straße, ÆØÅ, İstanbul, café_au-lait 21x" }] } },
      {
        kind: "message",
        message: {
          role: "assistant",
          id: "a",
          content: [{ type: "reasoning", text: "Think ärger" }, { type: "text", text: `${"w".repeat(70)} done` }, {
            type: "tool-call",
            id: "c",
            name: "read_file",
            arguments: { path: "src/Parse.ts", "Key.Name": [1, true, null, { deep: "Value" }] }
          }],
          meta: { model: "claude-build-4" }
        }
      },
      { kind: "message", message: { role: "tool", id: "t", toolCallId: "c", toolName: "read_file", isError: false, content: [{ type: "text", text: "ok" }], result: { lines: 3 } } },
      { kind: "message", message: { role: "system", id: "s", content: "Kelvin \u212a sign" } },
      { kind: "title", title: "Fix the build" },
      { kind: "compaction", summary: "Earlier: the parser", firstKeptEntryId: null },
      { kind: "model", provider: "anthropic", model: "build" }
    ]
    const session: Session = {
      id: "pinned",
      headerSpoiled: false,
      entries: bodies.map((body, i) => ({ time: TIMES[i % TIMES.length]!, body, spoiled: i === 6 ? 1 : null }))
    }
    const lines = sessionLines(session)
    const facts = Search.entryFacts(lines[0]!)
    const all = lines.slice(1).map((line, i) => facts(line, i + 2))
    // Each entry decodes but the spoiled one, so the pin holds the decoded facts, not only errors.
    expect(all.map((f) => f.error === undefined)).toEqual([true, true, true, true, true, true, false])
    const digest = createHash("sha256").update(JSON.stringify(all)).digest("hex")
    // On a change here: bump FORMAT in searchIndex.ts (old segments are then made again), add a
    // migration that empties session_tree_search_state (PostgreSQL's index is then made again, as
    // the migration to version 5 does), then this digest.
    expect({ format: Index.FORMAT, digest }).toEqual({ format: 1, digest: "7506439290abc8c63c817bc6fbf65d8a00950fc76c2237d3e19e00199706a123" })
  })

  it("fails every search with SESSION_INVALID_OPTIONS for options out of range", async () => {
    for (const options of [{ settleMs: Number.NaN }, { settleMs: -1 }, { settleMs: Infinity }, { indexShare: -0.5 }, { indexShare: 2 }, { indexShare: Number.NaN }]) {
      const failed = await Effect.runPromise(Effect.flip(Search.run({ query: "build", directory: OS.tmpdir() }, FileSearch.make(node, options).candidates)))
      expect([options, failed.code]).toEqual([options, "SESSION_INVALID_OPTIONS"])
    }
  })

  it("is what Sessions.search on files uses by default", async () => {
    await inTempDir(async (dir) => {
    const sessions = FastCheck.sample(session, { numRuns: 3, seed: 3 })
    sessions.forEach((s, n) => NFS.writeFileSync(Path.join(dir, `s${n}.jsonl`), sessionLines(s).join("\n") + "\n"))
    // Past the default time a file is left alone before it is indexed.
    await new Promise((resolve) => setTimeout(resolve, 2_100))
    const result = await Effect.runPromise(
      Effect.flatMap(Sessions.Sessions, (s) => s.search({ query: "build", directory: dir })).pipe(
        Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))))
      )
    )
    expect(segments(dir)).toEqual(["s0.jsonl.seg", "s1.jsonl.seg", "s2.jsonl.seg"])
    expect(result).toEqual(await search(scan, dir, { query: "build" }))
    })
  })
})

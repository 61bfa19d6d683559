/**
 * Search as the library decides it: the query, the words, the text an entry is
 * searched by, the filters, the ranking and the page, and what becomes of a line
 * that does not decode. On the memory backend, which reads every line (no index):
 * the file and database backends narrow first and are held to these same answers
 * by the conformance suite.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Codec from "../src/Codec.js"
import * as Ids from "../src/Ids.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import * as Search from "../src/Search.js"
import * as FastCheck from "effect/FastCheck"
import { matchWords } from "../src/internal/search.js"
import { wordsOf } from "../src/internal/words.js"
import * as Sessions from "../src/Sessions.js"

const live = (storage: MemoryJournal.Storage) =>
  Sessions.layer.pipe(Layer.provide(Layer.merge(MemoryJournal.layerStorage(storage), Ids.layerDeterministic)))

const corpusStorage = (): MemoryJournal.Storage => new Map(Corpus.corpus.map((s) => [s.name, s.lines]))

const search = (options: Search.SearchOptions, storage = corpusStorage()) =>
  Effect.flatMap(Sessions.Sessions, (s) => s.search(options)).pipe(Effect.provide(live(storage)))

/** Each hit as `location/entry`. */
const found = (result: Search.SearchResult) => result.hits.map((hit) => `${hit.location}/${hit.entry}`)

describe("the corpus", () => {
  it("is made of sessions that load", () => {
    for (const session of Corpus.corpus) {
      const decoded = Codec.decodeLines({ lines: session.lines, sizes: session.lines.map(Codec.utf8Length), tail: "none" })
      expect(Either.isRight(decoded), session.name).toBe(true)
    }
  })
})

describe("queries", () => {
  it("are words and phrases; a token of several words is a phrase of them", () => {
    const query = Either.getOrThrow(Search.parseQuery(`Connection "service did not" read_file  ÄRGER`))
    expect(query.terms.map((t) => [t.words, t.phrase])).toEqual([
      [["connection"], false],
      [["service", "did", "not"], true],
      [["read", "file"], true],
      [["ärger"], false]
    ])
    expect(query.words).toEqual(["connection", "service", "did", "not", "read", "file", "ärger"])
  })

  it("with no word, too long or of too many words are refused with SESSION_INVALID_OPTIONS", () => {
    for (const text of ["", "  --- ?? ", '""', "a".repeat(1_001), Array.from({ length: 33 }, (_, i) => `w${i}`).join(" ")]) {
      const parsed = Search.parseQuery(text)
      expect(Either.isLeft(parsed) && parsed.left.code, text.slice(0, 20)).toBe("SESSION_INVALID_OPTIONS")
    }
  })

  it("fold case code point by code point, never across ASCII or into two code points", () => {
    expect(Search.fold("CAFÉ")).toBe("café")
    expect(Search.fold("ÆØÅ")).toBe("æøå")
    // The Kelvin sign's lower case is ASCII k, İ's is two code points: both stay as they are.
    expect(Search.fold("\u212a")).toBe("\u212a")
    expect(Search.fold("İ")).toBe("İ")
    expect(Search.fold("ǅ")).toBe("ǆ")
    expect(Search.lexemeOf("x".repeat(100))).toBe("x".repeat(64))
  })
})

describe("Sessions.search", () => {
  it.effect("finds every word, in any case, in text, reasoning, tool arguments and results, newest first", () =>
    Effect.gen(function*() {
      const refused = yield* search({ query: "REFUSED" })
      // i3's text says ECONNREFUSED (another word); its result's code too. The compaction (day 4) is newest.
      expect(found(refused)).toEqual(["notes/n3", "incident/i4", "incident/i1"])
      expect(refused.total).toBe(3)
      expect(found(yield* search({ query: "econnrefused 5432" }))).toEqual(["incident/i3"])
      expect(found(yield* search({ query: "src server ts" }))).toEqual(["incident/i2"])
      expect(found(yield* search({ query: "probably closed" }))).toEqual(["incident/i2"])
      // Tool names are searched, in calls and in results.
      expect(found(yield* search({ query: "run_tests" }))).toEqual(["pooling/p3", "pooling/p2"])
      // IDs, timestamps and record keys are not.
      expect((yield* search({ query: "call" })).total).toBe(0)
      expect((yield* search({ query: "parentId" })).total).toBe(0)
      expect((yield* search({ query: "2026" })).total).toBe(0)
    }))

  it.effect("needs every term, a phrase's words next to each other and in order", () =>
    Effect.gen(function*() {
      expect(found(yield* search({ query: "connection pool" }))).toEqual(["pooling/p1"])
      expect(found(yield* search({ query: `"connection pool"` }))).toEqual(["pooling/p1"])
      expect(found(yield* search({ query: `"pool connection"` }))).toEqual([])
      expect(found(yield* search({ query: `"service did not start"` }))).toEqual(["incident/i4"])
      expect(found(yield* search({ query: `"service not"` }))).toEqual([])
      // Whole words: "connect" is not "connection".
      expect(found(yield* search({ query: "connect" }))).toEqual([])
    }))

  it.effect("matches letters beyond ASCII without case, and a letter a line escapes", () =>
    Effect.gen(function*() {
      expect(found(yield* search({ query: "ärger" }))).toEqual(["unicode/u1"])
      expect(found(yield* search({ query: "STRASSEN" }))).toEqual([])
      expect(found(yield* search({ query: "straßen café" }))).toEqual(["unicode/u1"])
      expect(found(yield* search({ query: "æøå ça" }))).toEqual(["unicode/u1"])
      // `caf\u00e9` in the line is café once decoded.
      const cafe = yield* search({ query: "CAFÉ" })
      expect(found(cafe)).toEqual(["unicode/u2", "unicode/u1"])
      expect(cafe.hits[0]!.snippets[0]!.marks.map(([s, e]) => cafe.hits[0]!.snippets[0]!.text.slice(s, e))).toEqual(["CAFÉ", "café"])
    }))

  it.effect("filters by role or kind, model, time and session", () =>
    Effect.gen(function*() {
      expect(found(yield* search({ query: "connection", roles: ["user"] }))).toEqual(["pooling/p1", "incident/i1"])
      expect(found(yield* search({ query: "refused", roles: ["compaction"] }))).toEqual(["notes/n3"])
      expect(found(yield* search({ query: "deploy", roles: ["title"] }))).toEqual(["notes/n4"])
      expect(found(yield* search({ query: "connection", models: ["claude-opus-4"] }))).toEqual(["notes/n7"])
      expect(found(yield* search({ query: "refused", since: "2026-01-03" }))).toEqual(["notes/n3"])
      expect(found(yield* search({ query: "refused", until: "2026-01-02" }))).toEqual(["incident/i4", "incident/i1"])
      expect(found(yield* search({ query: "refused", until: "2026-01-02T10:03:00.000Z" }))).toEqual(["incident/i1"])
      expect(found(yield* search({ query: "connection", sessions: ["pooling", "s-notes"] }))).toEqual(["notes/n7", "pooling/p1"])
      for (const bad of [{ roles: ["robot"] }, { since: "yesterday" }, { until: "2026-02-30" }, { limit: -1 }, { offset: 1.5 }, { models: [""] }]) {
        const refused = yield* Effect.flip(search({ query: "connection", ...bad } as Search.SearchOptions))
        expect(refused.code, JSON.stringify(bad)).toBe("SESSION_INVALID_OPTIONS")
      }
    }))

  it.effect("gives a page of the ranked hits and how many there are", () =>
    Effect.gen(function*() {
      const all = yield* search({ query: "connection" })
      expect(all.total).toBe(4)
      const page = yield* search({ query: "connection", offset: 1, limit: 2 })
      expect(page.total).toBe(4)
      expect(found(page)).toEqual(found(all).slice(1, 3))
      expect((yield* search({ query: "connection", offset: 9 })).hits).toEqual([])
      const hit = all.hits.find((h) => h.entry === "i4")!
      expect(hit).toMatchObject({ location: "incident", session: "s-incident", parentId: "i1", role: "assistant", model: "gpt-5", timestamp: "2026-01-02T10:04:00.000Z" })
      const snippet = hit.snippets[0]!
      expect(snippet.marks.map(([s, e]) => snippet.text.slice(s, e))).toEqual(["connection"])
    }))

  it.effect("reports a session whose matching line does not decode, and only then", () =>
    Effect.gen(function*() {
      const storage = corpusStorage()
      const lines = [...Corpus.incident.lines]
      // A line changed behind the library's back: a field that no entry has.
      lines[4] = lines[4]!.replace(`"kind":"message"`, `"kind":"message","extra":1`)
      storage.set("incident", lines)
      const result = yield* search({ query: "service" }, storage)
      expect(found(result)).toEqual([])
      expect(result.unreadable).toEqual([{ location: "incident", error: { code: "SESSION_INVALID_RECORD", message: expect.stringContaining("(line 5)") } }])
      // A query that line does not hold finds the rest and reports nothing.
      const other = yield* search({ query: "ECONNREFUSED" }, storage)
      expect(found(other)).toEqual(["incident/i3"])
      expect(other.unreadable).toEqual([])
      // A header that does not decode: the session is reported when a line would match.
      storage.set("incident", ["{not json", ...Corpus.incident.lines.slice(1)])
      expect((yield* search({ query: "ECONNREFUSED" }, storage)).unreadable.map((u) => u.error.code)).toEqual(["SESSION_INVALID_JSON"])
      expect((yield* search({ query: "pool" }, storage)).unreadable).toEqual([])
    }))
})

describe("the matcher", () => {
  it("gives the same marks through ASCII text without a word list as with one, on random texts and queries", () => {
    const word = FastCheck.stringMatching(/^[A-Za-z0-9]{1,4}$/)
    const sep = FastCheck.constantFrom(" ", "  ", "_", "-", ".", "\n", "/", "é", "", "'")
    const text = FastCheck.array(FastCheck.tuple(word, sep), { maxLength: 30 }).map((parts) => parts.map(([w, s]) => w + s).join(""))
    const queryText = FastCheck.array(FastCheck.oneof(word, FastCheck.array(word, { minLength: 2, maxLength: 3 }).map((ws) => `"${ws.join(" ")}"`)), { minLength: 1, maxLength: 3 }).map((qs) => qs.join(" "))
    FastCheck.assert(FastCheck.property(text, queryText, (t, q) => {
      const query = Either.getOrThrow(Search.parseQuery(q))
      const ascii = /^[\u0000-\u007f]*$/.test(t)
      const expected = matchWords(query, wordsOf(t))
      expect(Search.match(query, t)).toEqual(expected)
      if (ascii) expect(query.ascii).toBe(true)
    }), { numRuns: 2_000 })
  })
})

describe("the candidate pattern", () => {
  it("finds a line that holds the words in any case, or escapes a character, among raw bytes", () => {
    const latin1 = (text: string) => Buffer.from(text, "utf8").toString("latin1")
    const ascii = Search.patternOf(["connection", "refused"])
    expect(ascii.encoding).toBe("latin1")
    const test = (pattern: Search.Pattern, line: string) => {
      const text = pattern.encoding === "latin1" ? latin1(line) : line
      pattern.anchor.lastIndex = 0
      return (pattern.anchor.test(text) && pattern.others.every((r) => r.test(text))) || text.includes(pattern.escape)
    }
    expect(test(ascii, `{"text":"CONNECTION Refused"}`)).toBe(true)
    expect(test(ascii, `{"text":"connection accepted"}`)).toBe(false)
    expect(test(ascii, `{"text":"conn\\u0065ction"}`)).toBe(true)
    const unicode = Search.patternOf(["ärger"])
    expect(unicode.encoding).toBe("utf8")
    expect(test(unicode, `{"text":"ÄRGER"}`)).toBe(true)
    expect(test(unicode, `{"text":"Arger"}`)).toBe(false)
  })
})

/**
 * The loader's one-pass path for canonical lines (`decodeCanonicalLine`) against
 * the general path it replaces for them (`parseObjectLine`, the second-header
 * check, `decodeParsedEntry`): on canonical lines and on near misses, the one
 * pass either declines or gives an entry deeply equal to the general path's,
 * fresh and deeply frozen; and `decodeLines`, which tries the one pass first,
 * gives exactly the general path's outcome (entry, or code, reason and line).
 *
 * The near misses aim at what the one pass checks differently: a key repeated
 * with the same value right next to itself (JSON.parse then returns exactly
 * the canonical record, so only the text shows it), whitespace between tokens,
 * other spellings of keys and numbers, `__proto__` and deep nesting in the
 * arguments, numbers a commit cannot write back.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Either from "effect/Either"
import { History } from "../src/History.js"
import { parseObjectLine } from "../src/Json.js"
import { decodeCanonicalLine, decodeParsedEntry, type SessionEntry } from "../src/Record.js"
import { SessionError, sessionError, isSessionError } from "../src/SessionError.js"
import { decodeText } from "./support/lines.js"

const HEADER = "{\"type\":\"session\",\"version\":1,\"id\":\"s\",\"timestamp\":\"2026-01-02T03:04:05.006Z\"}"

/** The general path for one entry line. */
const general = (text: string, line: number): SessionEntry | SessionError => {
  const parsed = parseObjectLine(text)
  if (Either.isLeft(parsed)) return sessionError("SESSION_INVALID_JSON", parsed.left, { line })
  const record = parsed.right
  if (Object.hasOwn(record, "type") && record["type"] === "session") {
    return sessionError("SESSION_INVALID_HEADER", "a second header", { line })
  }
  return Either.merge(decodeParsedEntry(record, line))
}

/** What loading a header and this entry line must give: the general path, then the history checks of a first entry. */
const reference = (text: string, line: number): SessionEntry | SessionError => {
  const entry = general(text, line)
  return isSessionError(entry) ? entry : new History().check(entry, line) ?? entry
}

const frozenDeep = (v: unknown): boolean =>
  typeof v !== "object" || v === null || (Object.isFrozen(v) && Object.values(v).every(frozenDeep))

const objects = (v: unknown, out = new Set<unknown>()): Set<unknown> => {
  if (typeof v === "object" && v !== null) {
    out.add(v)
    for (const child of Object.values(v)) objects(child, out)
  }
  return out
}

const outcome = (r: SessionEntry | SessionError) =>
  isSessionError(r) ? { code: r.code, reason: r.reason, line: r.line } : { entry: r }

// ---------------------------------------------------------------------------
// Records: mostly valid and canonical, with the values the one pass must judge

const id = fc.oneof({ arbitrary: fc.constantFrom("e", "c1", "a:b", "x\"y", "\\", " :"), weight: 3 }, {
  arbitrary: fc.string({ minLength: 1, maxLength: 5 }),
  weight: 3
}, { arbitrary: fc.constant(""), weight: 1 })
const text = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(":", "\":", "a :b", "\\\":", "é😀", "\u2028"))
/** A value nested `levels` arrays deep. */
const nested = (levels: number): unknown => {
  let v: unknown = []
  for (let i = 1; i < levels; i++) v = [v]
  return v
}
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, 0, -0, 1.5, 1e21, 1e400, -1e400, "", ":", "__proto__"),
    text,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", ":", "__proto__", "constructor"), tie("value"), { maxKeys: 3 })
  )
})).value
const args = fc.oneof(
  { arbitrary: fc.dictionary(fc.constantFrom("path", "limit", "k:", "__proto__", ""), json, { maxKeys: 3 }), weight: 8 },
  // arguments at depth 5: arrays below them reach MAX_DEPTH (64) exactly at 60 levels
  { arbitrary: fc.constantFrom(59, 60, 61).map((n) => ({ deep: nested(n) })), weight: 1 },
  { arbitrary: json, weight: 1 }
)
const call = fc.record({ id, name: id, arguments: args })
const message = fc.oneof(
  fc.record({ role: fc.constant("user"), id, content: text }),
  fc.record({ role: fc.constant("assistant"), id, content: text, toolCalls: fc.array(call, { maxLength: 3 }) }),
  fc.record({ role: fc.constant("tool"), id, toolCallId: id, toolName: text, content: text, isError: fc.boolean() })
)
const record = fc.record({
  type: fc.constantFrom("entry", "entry", "entry", "entry", "session"),
  version: fc.constantFrom(1, 1, 1, 1, 2),
  id,
  parentId: fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary: id, weight: 1 }),
  timestamp: fc.constantFrom("2026-01-02T03:04:05.006Z", "2024-02-29T23:59:59.999Z", "2026-02-29T00:00:00.000Z"),
  message: fc.oneof({ arbitrary: message, weight: 9 }, { arbitrary: json, weight: 1 })
})

// ---------------------------------------------------------------------------
// Rendering with near misses

interface Spelling {
  /** Whitespace between tokens, taken in turn; "" everywhere is the canonical text. */
  readonly ws: ReadonlyArray<string>
  /** The `at`-th non-empty object repeats one of its members right before or after itself. */
  readonly dup: { readonly at: number; readonly pick: number; readonly after: boolean } | undefined
  /** The `at`-th key is spelled with its first character as \uXXXX. */
  readonly escapeKey: number | undefined
  /** Numbers written with an exponent (1 as 1e0, 0 as 0E0, …). */
  readonly exponent: boolean
}

const render = (value: unknown, s: Spelling): string => {
  let w = 0
  const sp = () => (s.ws.length === 0 ? "" : s.ws[w++ % s.ws.length]!)
  let objectCount = 0
  let keyCount = 0
  const key = (k: string) =>
    keyCount++ === s.escapeKey && k.length > 0
      ? `"\\u${k.charCodeAt(0).toString(16).padStart(4, "0")}${JSON.stringify(k.slice(1)).slice(1)}`
      : JSON.stringify(k)
  const go = (x: unknown): string => {
    if (Array.isArray(x)) return `[${sp()}${x.map(go).join(`${sp()},${sp()}`)}${sp()}]`
    if (typeof x === "object" && x !== null) {
      const keys = Object.keys(x)
      const members = keys.map((k) => `${key(k)}${sp()}:${sp()}${go((x as Record<string, unknown>)[k])}`)
      if (keys.length > 0) {
        if (s.dup !== undefined && s.dup.at === objectCount) {
          const i = s.dup.pick % members.length
          members.splice(s.dup.after ? i + 1 : i, 0, members[i]!)
        }
        objectCount++
      }
      return `{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}`
    }
    if (typeof x === "number") {
      // JSON.stringify would write these as null and 0.
      if (!Number.isFinite(x)) return x > 0 ? "1e400" : "-1e400"
      if (Object.is(x, -0)) return "-0"
      if (s.exponent && Number.isSafeInteger(x)) return `${x}e0`
    }
    return JSON.stringify(x)
  }
  return go(value)
}

const spelling: fc.Arbitrary<Spelling> = fc.record({
  ws: fc.oneof({ arbitrary: fc.constant([]), weight: 4 }, {
    arbitrary: fc.array(fc.constantFrom("", "", "", " ", "\t", "\r"), { minLength: 1, maxLength: 4 }),
    weight: 1
  }),
  dup: fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, {
    arbitrary: fc.record({ at: fc.nat({ max: 4 }), pick: fc.nat(), after: fc.boolean() }),
    weight: 2
  }),
  escapeKey: fc.oneof({ arbitrary: fc.constant(undefined), weight: 4 }, { arbitrary: fc.nat({ max: 12 }), weight: 1 }),
  exponent: fc.boolean()
})

describe("decodeCanonicalLine", () => {
  it("declines or agrees with the general path; decodeLines gives the general path's outcome", () => {
    let taken = 0
    let duplicatesSeen = 0
    let wellFormed = 0
    fc.assert(
      fc.property(record, spelling, (r, s) => {
        const line = render(r, s)
        const expected = reference(line, 2)
        const parsed: unknown = JSON.parse(line)
        const fast = decodeCanonicalLine(parsed, line)?.entry
        if (fast !== undefined) {
          taken++
          const entry = general(line, 2)
          expect(isSessionError(entry)).toBe(false)
          expect(fast).toEqual(entry)
          expect(frozenDeep(fast)).toBe(true)
          const fromJson = objects(parsed)
          expect([...objects(fast)].filter((o) => fromJson.has(o))).toEqual([])
        }
        const checked = parseObjectLine(line)
        if (Either.isLeft(checked) && checked.left.startsWith("duplicate key")) duplicatesSeen++
        else if (Either.isRight(checked)) wellFormed++
        const session = decodeText(`${HEADER}\n${line}\n`)
        if (isSessionError(session)) expect(outcome(session)).toEqual(outcome(expected))
        else {
          expect(isSessionError(expected)).toBe(false)
          expect(session.history.entries).toEqual([expected])
          expect(frozenDeep(session.history.entries[0])).toBe(true)
        }
      }),
      { numRuns: 6_000 }
    )
    // The generator must reach the one pass often, and duplicates often.
    expect(taken).toBeGreaterThan(800)
    expect(duplicatesSeen).toBeGreaterThan(800)
    expect(wellFormed).toBeGreaterThan(2_000)
  })

  it("declines a key repeated with the same value, which JSON.parse cannot show", () => {
    const canonical =
      "{\"type\":\"entry\",\"version\":1,\"id\":\"e\",\"parentId\":null,\"timestamp\":\"2026-01-02T03:04:05.006Z\"," +
      "\"message\":{\"role\":\"assistant\",\"id\":\"m\",\"content\":\"\",\"toolCalls\":[{\"id\":\"c\",\"name\":\"n\",\"arguments\":{\"a\":1}}]}}"
    expect(decodeCanonicalLine(JSON.parse(canonical), canonical)).toBeDefined()
    for (const [from, to] of [
      ["\"id\":\"e\",", "\"id\":\"e\",\"id\":\"e\","],
      ["\"role\":\"assistant\",", "\"role\":\"assistant\",\"role\":\"assistant\","],
      ["\"name\":\"n\",", "\"name\":\"n\",\"name\":\"n\","],
      ["{\"a\":1}", "{\"a\":1,\"a\":1}"],
      ["{\"a\":1}", "{\"a\" :1,\"a\":1}"]
    ] as const) {
      const text = canonical.replace(from, to)
      expect(JSON.parse(text)).toEqual(JSON.parse(canonical))
      expect(decodeCanonicalLine(JSON.parse(text), text)).toBeUndefined()
      const session = decodeText(`${HEADER}\n${text}\n`)
      expect(isSessionError(session)).toBe(true)
      expect((session as SessionError).code).toBe("SESSION_INVALID_JSON")
    }
  })
})

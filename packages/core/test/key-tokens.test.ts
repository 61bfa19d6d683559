/**
 * `hasKeyTokens(text, ownKeys)`, the duplicate-key proof of the loader: its
 * quick count visits only the colons, so these texts aim at what could fool it
 * (a string that starts with ":", whitespace before a colon, escaped quotes and
 * backslash runs before a colon, ": inside strings) and check that the answer
 * is always "no object repeats a key", known here by construction.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { hasKeyTokens, parseObjectLine } from "../src/Json.js"

/** Own keys of all objects in a parsed JSON value. */
const ownKeys = (v: unknown): number => {
  if (typeof v !== "object" || v === null) return 0
  let n = Array.isArray(v) ? 0 : Object.keys(v).length
  for (const child of Object.values(v)) n += ownKeys(child)
  return n
}

// Strings made of the characters that matter to the count.
const tricky = fc.array(fc.constantFrom(":", "\"", "\\", " ", "\t", "a", "\n", ":\"", "\\\"", "é"), { maxLength: 5 }).map((a) => a.join(""))
const leaf = fc.oneof(tricky, fc.constantFrom(0, -1.5, 1e21, true, false, null))
type J = unknown
const value: fc.Arbitrary<J> = fc.letrec<{ v: J }>((tie) => ({
  v: fc.oneof(
    { depthSize: "small" },
    leaf,
    fc.array(tie("v"), { maxLength: 3 }),
    fc.dictionary(tricky, tie("v"), { maxKeys: 4 })
  )
})).v
const root = fc.dictionary(tricky, value, { minKeys: 1, maxKeys: 4 })

/** Whitespace that JSON allows between tokens; mostly none, as in canonical lines. */
const wsChoice = fc.array(fc.constantFrom("", "", "", "", " ", "\t", "\r\n", "  "), { minLength: 1, maxLength: 6 })

/**
 * JSON text of `v`, whitespace taken in turn from `ws`; with `dup`, the
 * `dup.at`-th non-empty object repeats one of its keys (spelled plainly or
 * with its first character escaped as \uXXXX).
 */
const render = (v: J, ws: ReadonlyArray<string>, dup?: { at: number; pick: number; escape: boolean }) => {
  let w = 0
  const sp = () => ws[w++ % ws.length]!
  let objects = 0
  let injected = false
  const key = (k: string, escape: boolean) =>
    escape && k.length > 0 ? `"\\u${k.charCodeAt(0).toString(16).padStart(4, "0")}${JSON.stringify(k.slice(1)).slice(1)}` : JSON.stringify(k)
  const go = (x: J): string => {
    if (Array.isArray(x)) return `[${sp()}${x.map(go).join(`${sp()},${sp()}`)}${sp()}]`
    if (typeof x === "object" && x !== null) {
      const keys = Object.keys(x)
      const members = keys.map((k) => `${key(k, false)}${sp()}:${sp()}${go((x as Record<string, J>)[k])}`)
      if (keys.length > 0) {
        if (dup !== undefined && dup.at === objects) {
          const k = keys[dup.pick % keys.length]!
          members.splice(dup.pick % (members.length + 1), 0, `${key(k, dup.escape)}${sp()}:${sp()}":"`)
          injected = true
        }
        objects++
      }
      return `{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}`
    }
    return JSON.stringify(x)
  }
  return { text: go(v), injected }
}

describe("hasKeyTokens", () => {
  it("is true exactly when no object of the text repeats a key", () => {
    let duplicates = 0
    let clean = 0
    fc.assert(
      fc.property(
        root,
        wsChoice,
        fc.option(fc.record({ at: fc.nat({ max: 6 }), pick: fc.nat(), escape: fc.boolean() }), { nil: undefined }),
        (v, ws, dup) => {
          const { injected, text } = render(v, ws, dup)
          const parsed: unknown = JSON.parse(text)
          expect(hasKeyTokens(text, ownKeys(parsed))).toBe(!injected)
          // The line parser's verdict rests on the same proof.
          const line = parseObjectLine(text)
          if (injected) expect(Either.isLeft(line) ? line.left : "accepted").toMatch(/^duplicate key/)
          if (injected) duplicates++
          else clean++
        }
      ),
      { numRuns: 4_000 }
    )
    expect(duplicates).toBeGreaterThan(500)
    expect(clean).toBeGreaterThan(500)
  })

  it.each([
    ["{\"a\":\":\"}", 1, true], // a value starting with ":" is counted by the quick count, the exact count decides
    ["{\"a\":1,\"a\":\":\"}", 1, false],
    ["{\"a\" :1,\"a\":2}", 1, false], // whitespace before a colon: the quick count would see one key
    ["{\"a\"\t:1,\"a\":2}", 1, false],
    ["{\"a\\\\\":1}", 1, true], // an even backslash run: the quote closes the key
    ["{\"a\\\":\":1}", 1, true], // an escaped quote before a colon inside the key
    ["{\"x\":\"\\\":\\\":\"}", 1, true],
    ["{\"a\":{\"b\":1},\"c\":[{\"d\":2}]}", 4, true],
    ["{\"a\":{\"b\":1,\"b\":1},\"c\":2}", 3, false]
  ])("%s with %i own keys → %s", (text, keys, expected) => {
    expect(hasKeyTokens(text, keys)).toBe(expected)
  })
})

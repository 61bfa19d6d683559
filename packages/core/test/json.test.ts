import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { MAX_DEPTH, parseObjectLine } from "../src/Json.js"
import { isObjectText, hasProtoKey, maxDepth, render, spellings, record, wsList, anyText } from "./support/json-text.js"

describe("parseObjectLine", () => {
  const valid: ReadonlyArray<string> = [
    "{}",
    " \t\r\n{ } \r",
    "{\"type\":\"entry\",\"id\":\"a\",\"parentId\":null,\"n\":-1.5e-3,\"ok\":true,\"xs\":[1,[2,{}]]}",
    "{\"a\":{\"a\":{\"a\":1}}}", // the same key in different objects
    "{\"a\":[{\"k\":1},{\"k\":2}]}",
    "{\"a\":1,\"A\":2,\"a \":3,\"\":4}",
    "{\"a\\\"\":1,\"a\":2}", // escaped quote in a key
    "{\"a\\\\\":\"\\\\\",\"b\":\"\\\"\"}", // backslash runs before quotes
    "{\"x\":\"\\\":\",\"y\":\" \\\" : \"}", // ": inside strings is not a key
    "{\"constructor\":1,\"prototype\":2,\"toString\":3,\"__proto\":4,\"_proto__\":5}",
    "{\"é😀\":\"\\ud83d\\ude00\",\"\\u0000\":0}"
  ]
  it.each(valid)("accepts %s", (text) => {
    const r = parseObjectLine(text)
    expect(r).toEqual(Either.right(JSON.parse(text)))
  })

  const invalid: ReadonlyArray<readonly [string, string | RegExp]> = [
    ["", /JSON/],
    ["   ", /JSON/],
    ["[]", "not a JSON object"],
    ["[{}]", "not a JSON object"],
    ["\"{}\"", "not a JSON object"],
    ["null", "not a JSON object"],
    ["1", "not a JSON object"],
    ["true", "not a JSON object"],
    ["not-json", /JSON/],
    ["{\"a\":1} x", /JSON/],
    ["{}{}", /JSON/],
    ["{\"a\":1,}", /JSON/],
    ["\uFEFF{}", /JSON/], // a BOM is not JSON whitespace
    ["{\"a\":\"\u0001\"}", /JSON/],
    ["{\"a\":1,\"a\":2}", "duplicate key \"a\""],
    ["{\"a\":1,\"a\":1}", "duplicate key \"a\""],
    ["{\"a\":1,\"\\u0061\":2}", "duplicate key \"a\""],
    ["{\"x\":{\"b\":1,\"c\":2,\"b\":3}}", "duplicate key \"b\""],
    ["{\"x\":[1,{\"b\":1,\"b\":[]}]}", "duplicate key \"b\""],
    ["{\"\":1,\"\":2}", "duplicate key \"\""],
    ["{\"a\\\"\" : 1 , \"a\\\"\"\n:\t2}", "duplicate key \"a\\\"\""],
    ["{\"__proto__\":{}}", "__proto__ key"],
    ["{\"__proto__\":null}", "__proto__ key"],
    ["{\"\\u005f_proto__\":{\"polluted\":1}}", "__proto__ key"],
    ["{\"__proto\\u005f_\":1}", "__proto__ key"],
    ["{\"a\":[{\"b\":{\"__proto__\":[]}}]}", "__proto__ key"]
  ]
  it.each(invalid)("rejects %j", (text, reason) => {
    const r = parseObjectLine(text)
    expect(Either.isLeft(r)).toBe(true)
    if (Either.isLeft(r)) expect(r.left).toMatch(reason)
  })

  it("touches no prototype", () => {
    for (const t of ["{\"__proto__\":{\"polluted\":1}}", "{\"a\":{\"__proto__\":{\"polluted\":1}}}"]) {
      expect(Either.isRight(parseObjectLine(t))).toBe(false)
    }
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
    const r = parseObjectLine("{\"constructor\":{\"prototype\":{\"polluted\":1}}}")
    expect(Either.isRight(r) && Object.getPrototypeOf(r.right)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
  })

  describe("nesting", () => {
    const nestedObjects = (levels: number) => `${"{\"a\":".repeat(levels - 1)}{}${"}".repeat(levels - 1)}`
    const nestedArrays = (levels: number) => `{"a":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`
    it("allows exactly MAX_DEPTH levels, the record being level 1", () => {
      expect(MAX_DEPTH).toBe(64)
      expect(Either.isRight(parseObjectLine(nestedObjects(MAX_DEPTH)))).toBe(true)
      expect(Either.isRight(parseObjectLine(nestedArrays(MAX_DEPTH)))).toBe(true)
    })
    it("rejects one level more", () => {
      expect(parseObjectLine(nestedObjects(MAX_DEPTH + 1))).toEqual(Either.left("nesting deeper than 64"))
      expect(parseObjectLine(nestedArrays(MAX_DEPTH + 1))).toEqual(Either.left("nesting deeper than 64"))
    })
    it("returns a typed failure for 30,000 levels without throwing", () => {
      expect(parseObjectLine(nestedObjects(30_000))).toEqual(Either.left("nesting deeper than 64"))
      expect(parseObjectLine(nestedArrays(30_000))).toEqual(Either.left("nesting deeper than 64"))
      // Unbalanced: JSON.parse rejects it before any walk.
      expect(Either.isRight(parseObjectLine("{\"a\":".repeat(30_000)))).toBe(false)
    })
  })

  it.prop(
    "agrees with JSON.parse on objects without duplicate or __proto__ keys",
    [record, wsList],
    ([value, ws]) => {
      const { text } = render(value, ws)
      const r = parseObjectLine(text)
      const parsed: unknown = JSON.parse(text)
      if (hasProtoKey(parsed)) expect(r).toEqual(Either.left("__proto__ key"))
      else if (maxDepth(parsed) > MAX_DEPTH) expect(r).toEqual(Either.left("nesting deeper than 64"))
      else {
        expect(r).toEqual(Either.right(parsed))
        expect(Either.isRight(r) && Object.getPrototypeOf(r.right)).toBe(Object.prototype)
      }
    },
    { fastCheck: { numRuns: 2000 } }
  )

  it.prop(
    "rejects every object text with an injected duplicate key",
    [record, wsList, fc.nat(), fc.nat(), fc.nat({ max: spellings.length - 1 })],
    ([value, ws, at, pick, spelling]) => {
      const { objects } = render(value, ws)
      fc.pre(objects > 0)
      const { injected, text } = render(value, ws, { at: at % objects, pick, spell: spellings[spelling]! })
      const r = parseObjectLine(text)
      expect(Either.isLeft(r)).toBe(true)
      if (!hasProtoKey(JSON.parse(text))) expect(r).toEqual(Either.left(`duplicate key ${JSON.stringify(injected)}`))
    },
    { fastCheck: { numRuns: 2000 } }
  )

  it.prop(
    "never throws on arbitrary text and only accepts what JSON.parse accepts",
    [anyText],
    ([text]) => {
      const r = parseObjectLine(text)
      if (Either.isRight(r)) {
        expect(r.right).toEqual(JSON.parse(text))
      } else {
        expect(typeof r.left === "string" && r.left.length > 0).toBe(true)
        if (!isObjectText(text)) expect(r.left).not.toMatch(/^duplicate key|^__proto__ key|^nesting deeper/)
      }
    },
    { fastCheck: { numRuns: 2000 } }
  )
})

// ---------------------------------------------------------------------------


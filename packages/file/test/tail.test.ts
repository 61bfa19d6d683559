/**
 * The tail recogniser (`internal/tail.ts`): the bytes after the last newline are
 * "complete" exactly when they hold one JSON object, "incomplete" exactly when
 * some continuation would make them one, and "invalid" otherwise.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { isObjectText, objectText, jsonish, mutated, anyText } from "../../core/test/support/json-text.js"
import { classifyTail, type TailState } from "../src/internal/tail.js"

/**
 * Extends an "incomplete" text greedily, one character at a time, preferring
 * characters that close what is open, until JSON.parse accepts an object.
 * Success proves that a completion exists; the proof is checked by JSON.parse,
 * not by the recogniser under test.
 */
const CLOSING = ["\"", "}", "]", "0", ":", "r", "u", "e", "a", "l", "s", "{"] as const
const completion = (s: string): string | undefined => {
  let t = s
  for (let step = 0; step < 200; step++) {
    if (isObjectText(t)) return t
    const next = CLOSING.map((c) => t + c).find((u) => classifyTail(u) !== "invalid")
    if (next === undefined) return undefined
    t = next
  }
  return undefined
}

describe("classifyTail", () => {
  const table: ReadonlyArray<readonly [string, TailState]> = [
    // incomplete: some continuation completes the object
    ["", "incomplete"],
    [" \t\r", "incomplete"],
    ["{", "incomplete"],
    ["{\"type\":\"entry\",\"id\":\"cut", "incomplete"],
    ["{\"a\"", "incomplete"],
    ["{\"a\" :", "incomplete"],
    ["{\"a\":t", "incomplete"],
    ["{\"a\":tr", "incomplete"],
    ["{\"a\":fals", "incomplete"],
    ["{\"a\":nul", "incomplete"],
    ["{\"a\":-", "incomplete"],
    ["{\"a\":0", "incomplete"],
    ["{\"a\":-0", "incomplete"],
    ["{\"a\":12", "incomplete"],
    ["{\"a\":1.", "incomplete"],
    ["{\"a\":1.5", "incomplete"],
    ["{\"a\":1e", "incomplete"],
    ["{\"a\":1E+", "incomplete"],
    ["{\"a\":1e-7", "incomplete"],
    ["{\"a\":0e", "incomplete"],
    ["{\"a\":\"\\", "incomplete"],
    ["{\"a\":\"\\u", "incomplete"],
    ["{\"a\":\"\\u00", "incomplete"],
    ["{\"a\":\"\\u00aF", "incomplete"],
    ["{\"a\":\"x\\\"", "incomplete"],
    ["{\"a\":[", "incomplete"],
    ["{\"a\":[1,", "incomplete"],
    ["{\"a\":[1,[]", "incomplete"],
    ["{\"a\":{\"b\":", "incomplete"],
    ["{\"a\":{}", "incomplete"],
    ["{\"a\":1,", "incomplete"],
    ["{\"a\":\"é😀\u2028", "incomplete"],
    // invalid: no continuation can help
    ["not-json", "invalid"],
    ["}", "invalid"],
    ["[1,2", "invalid"],
    ["[", "invalid"],
    ["\"a\"", "invalid"],
    ["1", "invalid"],
    ["\uFEFF{", "invalid"],
    ["{\"a\":tx", "invalid"],
    ["{\"a\":tru ", "invalid"],
    ["{\"a\":nulll", "invalid"],
    ["{\"a\":01", "invalid"],
    ["{\"a\":-01", "invalid"],
    ["{\"a\":00", "invalid"],
    ["{\"a\":+1", "invalid"],
    ["{\"a\":.5", "invalid"],
    ["{\"a\":1}}", "invalid"],
    ["{\"a\":1} x", "invalid"],
    ["{\"a\":1}{", "invalid"],
    ["{\"a\":\"\\x", "invalid"],
    ["{\"a\":\"\\u12G", "invalid"],
    ["{\"a\":\"\\U0000", "invalid"],
    ["{\"a\":\"\u0000", "invalid"],
    ["{\"a\":\"\u001f", "invalid"],
    ["{\"a\":\"\t\"}", "invalid"],
    ["{,", "invalid"],
    ["{\"a\" 1", "invalid"],
    ["{\"a\":1,}", "invalid"],
    ["{\"a\":1 2", "invalid"],
    ["{\"a\":[1,]", "invalid"],
    ["{\"a\":[1}", "invalid"],
    ["{\"a\":{]", "invalid"],
    ["{\"a\":-a", "invalid"],
    ["{\"a\":-}", "invalid"],
    ["{\"a\":1.e", "invalid"],
    ["{\"a\":1.}", "invalid"],
    ["{\"a\":1e}", "invalid"],
    ["{\"a\":1e+}", "invalid"],
    ["{\"a\":1.5.", "invalid"],
    ["{\"a\":1e5e", "invalid"],
    ["{\"a\":1e5.", "invalid"],
    ["{1:2", "invalid"],
    ["{'a'", "invalid"],
    ["{\"a\":undefined", "invalid"],
    ["{\"a\":NaN", "invalid"],
    // complete: exactly one object, optional whitespace around it
    ["{}", "complete"],
    [" {} \r", "complete"],
    ["{\"a\":1}\r", "complete"],
    ["\n{\"a\":[1,{\"b\":null}],\"c\":-0.5e-3,\"d\":\"\\u00e9\\n\"}\t", "complete"],
    ["{\"a\":1,\"a\":2}", "complete"], // grammar only: duplicates are parseObjectLine's job
    ["{\"__proto__\":1}", "complete"]
  ]
  it.each(table)("%j is %s", (text, state) => {
    expect(classifyTail(text)).toBe(state)
    expect(classifyTail(text) === "complete").toBe(isObjectText(text))
  })

  it("handles 30,000 levels in linear time without recursion", () => {
    const open = "{\"a\":".repeat(30_000)
    expect(classifyTail(open)).toBe("incomplete")
    expect(classifyTail(`${open}[]${"}".repeat(30_000)}`)).toBe("complete")
    expect(classifyTail(`${open}1${"}".repeat(30_000)}}`)).toBe("invalid")
    expect(classifyTail(`${open}${"[".repeat(30_000)}}`)).toBe("invalid")
  })

  it.prop(
    "every strict prefix of an object text is incomplete, the whole is complete",
    [objectText],
    ([text]) => {
      // Trailing whitespace after the closing brace leaves the object complete.
      const end = text.replace(/[ \t\r\n]+$/, "").length
      const wrong: Array<string> = []
      for (let i = 0; i <= text.length; i++) {
        const prefix = text.slice(0, i)
        if (classifyTail(prefix) !== (i < end ? "incomplete" : "complete")) wrong.push(prefix)
      }
      expect(wrong).toEqual([])
    },
    { fastCheck: { numRuns: 500 } }
  )

  it.prop(
    "is complete exactly when JSON.parse yields an object",
    [anyText],
    ([text]) => {
      expect(classifyTail(text) === "complete").toBe(isObjectText(text))
    },
    { fastCheck: { numRuns: 3000 } }
  )

  it.prop(
    "incomplete texts have a completion",
    [fc.tuple(mutated, fc.nat()).map(([s, n]) => s.slice(0, n % (s.length + 1)))],
    ([text]) => {
      const state = classifyTail(text)
      if (state === "incomplete") {
        const done = completion(text)
        expect(done !== undefined && done.startsWith(text) && isObjectText(done)).toBe(true)
      }
    },
    { fastCheck: { numRuns: 2000 } }
  )

  it.prop(
    "invalid is final: no suffix makes an object, and every extension stays invalid",
    [anyText, fc.oneof(jsonish, objectText, fc.constantFrom("}", "\"}", "0}", "\"\"}", "]}"))],
    ([text, suffix]) => {
      fc.pre(classifyTail(text) === "invalid")
      expect(classifyTail(text + suffix)).toBe("invalid")
      expect(isObjectText(text + suffix)).toBe(false)
    },
    { fastCheck: { numRuns: 2000 } }
  )

  it.prop(
    "viability is prefix-closed",
    [anyText],
    ([text]) => {
      const states = Array.from({ length: text.length + 1 }, (_, i) => classifyTail(text.slice(0, i)))
      const firstInvalid = states.indexOf("invalid")
      if (firstInvalid !== -1) expect(states.slice(firstInvalid).every((s) => s === "invalid")).toBe(true)
    },
    { fastCheck: { numRuns: 500 } }
  )
})

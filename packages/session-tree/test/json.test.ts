import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { classifyTail, MAX_DEPTH, parseObjectLine, type TailState } from "../src/internal/json.js"

// ---------------------------------------------------------------------------
// Oracles and generators

/** What the loader would accept syntactically: JSON.parse yields a plain object. */
const isObjectText = (s: string): boolean => {
  try {
    const v: unknown = JSON.parse(s)
    return typeof v === "object" && v !== null && !Array.isArray(v)
  } catch {
    return false
  }
}

/** Containers of a parsed value, with their depth (the value itself is depth 1). */
const containers = (root: unknown): Array<{ node: object; depth: number }> => {
  const out: Array<{ node: object; depth: number }> = []
  const todo: Array<{ node: unknown; depth: number }> = [{ node: root, depth: 1 }]
  while (todo.length > 0) {
    const { depth, node } = todo.pop()!
    if (typeof node !== "object" || node === null) continue
    out.push({ node, depth })
    for (const child of Object.values(node)) todo.push({ node: child, depth: depth + 1 })
  }
  return out
}
const hasProtoKey = (v: unknown): boolean =>
  containers(v).some(({ node }) => !Array.isArray(node) && Object.hasOwn(node, "__proto__"))
const maxDepth = (v: unknown): number => Math.max(0, ...containers(v).map((c) => c.depth))

const WS = ["", " ", "\t", "\n", "\r", "  ", "\r\n"] as const

/**
 * JSON text of `value` with whitespace taken in turn from `ws` between tokens.
 * With `inject`, the `at`-th non-empty object (in text order) gets one of its
 * keys repeated, spelled by `spell`.
 */
const render = (
  value: unknown,
  ws: ReadonlyArray<string>,
  inject?: { readonly at: number; readonly pick: number; readonly spell: (key: string) => string }
): { text: string; objects: number; injected: string | undefined } => {
  let w = 0
  const sp = () => (ws.length === 0 ? "" : ws[w++ % ws.length]!)
  let objects = 0
  let injected: string | undefined
  const go = (x: unknown): string => {
    if (Array.isArray(x)) return `[${sp()}${x.map(go).join(`${sp()},${sp()}`)}${sp()}]`
    if (typeof x === "object" && x !== null) {
      const keys = Object.keys(x)
      const members = keys.map((k) => `${JSON.stringify(k)}${sp()}:${sp()}${go((x as Record<string, unknown>)[k])}`)
      if (keys.length > 0) {
        if (inject !== undefined && inject.at === objects) {
          injected = keys[inject.pick % keys.length]!
          members.splice(inject.pick % (members.length + 1), 0, `${inject.spell(injected)}${sp()}:${sp()}0`)
        }
        objects++
      }
      return `{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}`
    }
    return JSON.stringify(x)
  }
  const text = `${sp()}${go(value)}${sp()}`
  return { text, objects, injected }
}

/** Key spellings that JSON.parse decodes to the same string. */
const spellings: ReadonlyArray<(key: string) => string> = [
  (k) => JSON.stringify(k),
  (k) =>
    k.length === 0
      ? "\"\""
      : `"\\u${k.charCodeAt(0).toString(16).padStart(4, "0")}${JSON.stringify(k.slice(1)).slice(1)}`,
  (k) => `"${JSON.stringify(k).slice(1, -1).replaceAll("/", "\\/")}"`
]

/** Plain JSON objects; fc.object may hold values JSON cannot carry, so round-trip it. */
const record: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.dictionary(fc.fullUnicodeString({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
  fc.object({ maxDepth: 2, maxKeys: 4 }).map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>),
  fc.jsonValue({ maxDepth: 4 }).map((v) => ({ type: "entry", id: "e-1", v }))
)
const wsList = fc.array(fc.constantFrom(...WS), { maxLength: 5 })
const objectText = fc.tuple(record, wsList).map(([v, ws]) => render(v, ws).text)

const JSON_CHARS = [..."{}[]\":,.-+eE0123456789 \t\r\ntrufalsn\\/bu", "x", "\u0001", "é", "😀"]
const jsonish = fc.array(fc.constantFrom(...JSON_CHARS), { maxLength: 30 }).map((a) => a.join(""))
const mutation = fc.tuple(fc.constantFrom("delete", "insert", "replace", "truncate"), fc.nat(), fc.constantFrom(...JSON_CHARS))
/** Valid object texts with a few random edits: mostly near-misses of the grammar. */
const mutated = fc.tuple(objectText, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([text, edits]) => {
  let s = text
  for (const [op, n, c] of edits) {
    const i = s.length === 0 ? 0 : n % (s.length + 1)
    if (op === "delete") s = s.slice(0, i) + s.slice(i + 1)
    else if (op === "insert") s = s.slice(0, i) + c + s.slice(i)
    else if (op === "replace") s = s.slice(0, i) + c + s.slice(i + 1)
    else s = s.slice(0, i)
  }
  return s
})
const anyCodeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) })
const anyText = fc.oneof(fc.string(), fc.fullUnicodeString(), anyCodeUnits, jsonish, mutated, objectText)

// ---------------------------------------------------------------------------

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
    expect(r).toEqual({ ok: true, value: JSON.parse(text) })
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
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.reason).toMatch(reason)
  })

  it("touches no prototype", () => {
    for (const t of ["{\"__proto__\":{\"polluted\":1}}", "{\"a\":{\"__proto__\":{\"polluted\":1}}}"]) {
      expect(parseObjectLine(t).ok).toBe(false)
    }
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
    const r = parseObjectLine("{\"constructor\":{\"prototype\":{\"polluted\":1}}}")
    expect(r.ok && Object.getPrototypeOf(r.value)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
  })

  describe("nesting", () => {
    const nestedObjects = (levels: number) => `${"{\"a\":".repeat(levels - 1)}{}${"}".repeat(levels - 1)}`
    const nestedArrays = (levels: number) => `{"a":${"[".repeat(levels - 1)}${"]".repeat(levels - 1)}}`
    it("allows exactly MAX_DEPTH levels, the record being level 1", () => {
      expect(MAX_DEPTH).toBe(64)
      expect(parseObjectLine(nestedObjects(MAX_DEPTH)).ok).toBe(true)
      expect(parseObjectLine(nestedArrays(MAX_DEPTH)).ok).toBe(true)
    })
    it("rejects one level more", () => {
      expect(parseObjectLine(nestedObjects(MAX_DEPTH + 1))).toEqual({ ok: false, reason: "nesting deeper than 64" })
      expect(parseObjectLine(nestedArrays(MAX_DEPTH + 1))).toEqual({ ok: false, reason: "nesting deeper than 64" })
    })
    it("returns a typed failure for 30,000 levels without throwing", () => {
      expect(parseObjectLine(nestedObjects(30_000))).toEqual({ ok: false, reason: "nesting deeper than 64" })
      expect(parseObjectLine(nestedArrays(30_000))).toEqual({ ok: false, reason: "nesting deeper than 64" })
      // Unbalanced: JSON.parse rejects it before any walk.
      expect(parseObjectLine("{\"a\":".repeat(30_000)).ok).toBe(false)
    })
  })

  it.prop(
    "agrees with JSON.parse on objects without duplicate or __proto__ keys",
    [record, wsList],
    ([value, ws]) => {
      const { text } = render(value, ws)
      const r = parseObjectLine(text)
      const parsed: unknown = JSON.parse(text)
      if (hasProtoKey(parsed)) expect(r).toEqual({ ok: false, reason: "__proto__ key" })
      else if (maxDepth(parsed) > MAX_DEPTH) expect(r).toEqual({ ok: false, reason: "nesting deeper than 64" })
      else {
        expect(r).toEqual({ ok: true, value: parsed })
        expect(r.ok && Object.getPrototypeOf(r.value)).toBe(Object.prototype)
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
      expect(r.ok).toBe(false)
      if (!hasProtoKey(JSON.parse(text))) expect(r).toEqual({ ok: false, reason: `duplicate key ${JSON.stringify(injected)}` })
    },
    { fastCheck: { numRuns: 2000 } }
  )

  it.prop(
    "never throws on arbitrary text and only accepts what JSON.parse accepts",
    [anyText],
    ([text]) => {
      const r = parseObjectLine(text)
      if (r.ok) {
        expect(r.value).toEqual(JSON.parse(text))
      } else {
        expect(typeof r.reason === "string" && r.reason.length > 0).toBe(true)
        if (!isObjectText(text)) expect(r.reason).not.toMatch(/^duplicate key|^__proto__ key|^nesting deeper/)
      }
    },
    { fastCheck: { numRuns: 2000 } }
  )
})

// ---------------------------------------------------------------------------

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

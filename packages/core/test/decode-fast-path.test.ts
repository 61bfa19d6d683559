/**
 * The loader's direct path (`decodeParsedEntry`) against the Schema path
 * (`decodeEntry`): on canonical records and on every kind of near miss, both
 * give the same error (code and reason) or deeply equal, deeply frozen
 * entries. And `isCanonicalTimestamp` against its definition: exactly what
 * `Date.prototype.toISOString()` writes.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { snapshotJson } from "../src/internal/snapshot.js"
import { decodeEntry, decodeMessage, decodeParsedEntry, deepFreeze, isCanonicalTimestamp } from "../src/Record.js"
import { isSessionError } from "../src/SessionError.js"
import { snapshotMessage } from "../src/internal/snapshot.js"

const frozenDeep = (v: unknown): boolean =>
  typeof v !== "object" || v === null || (Object.isFrozen(v) && Object.values(v).every(frozenDeep))

const outcome = (r: unknown) =>
  isSessionError(r) ? { error: r.code, reason: r.reason, line: r.line } : { entry: r, frozen: frozenDeep(r) }

const id = fc.oneof({ arbitrary: fc.string({ minLength: 1, maxLength: 6 }), weight: 6 }, { arbitrary: fc.constant("c1"), weight: 2 }, {
  arbitrary: fc.constant(""),
  weight: 1
})
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, 0, -0, 1.5, 1e21, 1e400, -1e400, "", "x", "__proto__"),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", "__proto__", "constructor"), tie("value"), { maxKeys: 3 })
  )
})).value

const call = fc.record({ id, name: id, arguments: fc.oneof(fc.dictionary(fc.string({ maxLength: 3 }), json, { maxKeys: 3 }), json) })
const message = fc.oneof(
  fc.record({ role: fc.constant("user"), id, content: fc.string({ maxLength: 5 }) }),
  fc.record({ role: fc.constant("assistant"), id, content: fc.string({ maxLength: 5 }), toolCalls: fc.array(call, { maxLength: 3 }) }),
  fc.record({
    role: fc.constant("tool"),
    id,
    toolCallId: id,
    toolName: fc.string({ maxLength: 3 }),
    content: fc.string({ maxLength: 5 }),
    isError: fc.boolean()
  })
)
const timestamp = fc.oneof(
  fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }).map((ms) => new Date(ms).toISOString()),
  fc.constantFrom("2026-02-29T00:00:00.000Z", "2024-02-29T23:59:59.999Z", "2026-01-02T24:00:00.000Z", "2026-01-02T03:04:05.006z", "x")
)
const record = fc.record({
  type: fc.constantFrom("entry", "entry", "entry", "entry", "entry", "session"),
  version: fc.constantFrom(1, 1, 1, 1, 1, 2, "1"),
  id,
  parentId: fc.oneof(fc.constant(null), id),
  timestamp,
  message: fc.oneof({ arbitrary: message, weight: 8 }, { arbitrary: json, weight: 1 })
})

/** Near misses of a record: a key dropped, added, moved, or duplicated in the text. */
const mutate = (r: Record<string, unknown>, how: number, key: string): string => {
  const keys = Object.keys(r)
  switch (how) {
    case 0:
      return JSON.stringify(r)
    case 1: {
      const copy = { ...r }
      delete copy[key]
      return JSON.stringify(copy)
    }
    case 2:
      return JSON.stringify({ ...r, extra: 1 })
    case 3:
      return JSON.stringify(Object.fromEntries([...keys].reverse().map((k) => [k, r[k]])))
    default: {
      const m = r["message"]
      return typeof m === "object" && m !== null && !Array.isArray(m)
        ? JSON.stringify({ ...r, message: Object.fromEntries(Object.entries(m).reverse()) })
        : JSON.stringify(r)
    }
  }
}

describe("decodeParsedEntry", () => {
  it("agrees with decodeEntry on canonical records and near misses", () => {
    let accepted = 0
    fc.assert(
      fc.property(record, fc.oneof({ arbitrary: fc.constant(0), weight: 4 }, { arbitrary: fc.integer({ min: 1, max: 4 }), weight: 4 }), fc.constantFrom("type", "version", "id", "parentId", "timestamp", "message"), (r, how, key) => {
        const text = mutate(r, how, key)
        const expected = outcome(Either.merge(decodeEntry(JSON.parse(text), 7)))
        if ("entry" in expected) accepted++
        expect(outcome(Either.merge(decodeParsedEntry(JSON.parse(text), 7)))).toEqual(expected)
      }),
      { numRuns: 5_000 }
    )
    // The generator must reach the direct path often, not only the errors.
    expect(accepted).toBeGreaterThan(500)
  })

  it("returns fresh objects: none is shared with the parsed record", () => {
    const parsed = JSON.parse(
      '{"type":"entry","version":1,"id":"e","parentId":null,"timestamp":"2026-01-02T03:04:05.006Z",' +
        '"message":{"role":"assistant","id":"a","content":"","toolCalls":[{"id":"c","name":"n","arguments":{"x":[1,{"y":-0}]}}]}}'
    )
    const entry = Either.merge(decodeParsedEntry(parsed))
    expect(isSessionError(entry)).toBe(false)
    const seen = new Set<unknown>()
    const walk = (v: unknown) => {
      if (typeof v === "object" && v !== null) {
        seen.add(v)
        Object.values(v).forEach(walk)
      }
    }
    walk(parsed)
    const shared: Array<unknown> = []
    const check = (v: unknown) => {
      if (typeof v === "object" && v !== null) {
        if (seen.has(v)) shared.push(v)
        Object.values(v).forEach(check)
      }
    }
    check(entry)
    expect(shared).toEqual([])
    expect(Object.is((entry as any).message.toolCalls[0].arguments.x[1].y, 0)).toBe(true)
  })
})

describe("snapshotMessage (an append's input)", () => {
  // The reference: the same snapshot, decoded by the Schemas alone.
  const reference = (m: unknown) => {
    const snap = snapshotJson(m, 2)
    if (Either.isLeft(snap)) return { error: snap.left.tooLarge ? "SESSION_LINE_TOO_LONG" : "SESSION_INVALID_MESSAGE", reason: snap.left.reason }
    const decoded = Either.merge(decodeMessage(snap.right))
    return isSessionError(decoded) ? { error: decoded.code, reason: decoded.reason } : { entry: deepFreeze(decoded), frozen: true }
  }
  const result = (r: unknown) =>
    isSessionError(r) ? { error: r.code, reason: r.reason } : { entry: r, frozen: frozenDeep(r) }

  it("agrees with the Schema path on messages in schema key order and in any other", () => {
    let direct = 0
    fc.assert(
      fc.property(fc.oneof(message, json), fc.boolean(), (m, reversed) => {
        const input = reversed && typeof m === "object" && m !== null && !Array.isArray(m)
          ? Object.fromEntries(Object.entries(m).reverse())
          : m
        const expected = reference(input)
        if ("entry" in expected && !reversed) direct++
        expect(result(Either.merge(snapshotMessage(input)))).toEqual(expected)
      }),
      { numRuns: 3_000 }
    )
    expect(direct).toBeGreaterThan(300)
  })
})

describe("isCanonicalTimestamp", () => {
  const reference = (s: string): boolean => {
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s)) return false
    const time = Date.parse(s)
    return !Number.isNaN(time) && new Date(time).toISOString() === s
  }
  const two = (n: number) => String(n).padStart(2, "0")

  it("accepts exactly what toISOString writes, field by field at every edge", () => {
    for (const year of ["0000", "0001", "0004", "0100", "0400", "1900", "2000", "2024", "2026", "9999"]) {
      for (let month = 0; month <= 13; month++) {
        for (let day = 0; day <= 32; day++) {
          for (const time of ["00:00:00.000", "23:59:59.999", "24:00:00.000", "12:60:00.000", "12:00:60.000", "99:99:99.999"]) {
            const s = `${year}-${two(month)}-${two(day)}T${time}Z`
            expect([s, isCanonicalTimestamp(s)]).toEqual([s, reference(s)])
          }
        }
      }
    }
  })

  it("agrees with the definition on arbitrary strings of the right shape and on others", () => {
    const shaped = fc.tuple(
      fc.stringMatching(/^[0-9]{4}$/),
      fc.stringMatching(/^[0-9]{2}$/),
      fc.stringMatching(/^[0-9]{2}$/),
      fc.stringMatching(/^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}$/)
    ).map(([y, m, d, t]) => `${y}-${m}-${d}T${t}Z`)
    fc.assert(fc.property(fc.oneof(shaped, fc.string({ maxLength: 26 }), timestamp), (s) => {
      expect(isCanonicalTimestamp(s)).toBe(reference(s))
    }), { numRuns: 20_000 })
  })
})

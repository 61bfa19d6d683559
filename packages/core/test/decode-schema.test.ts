/**
 * The direct decoder (`internal/decode.ts`) accepts and refuses exactly what
 * the Record Schemas do, with the same codes, reasons and lines.
 *
 * Records are generated valid, then mutated at one place of their tree: a key
 * removed, added, renamed, repeated or mistyped at every level (record,
 * message, tool calls, a call, its arguments); a version, ID or timestamp made
 * wrong; a number beyond 2^53 or beyond a double; a `__proto__` key, however it
 * is spelled. Each line is loaded by `decodeLines` (the direct decoder first)
 * and by a reference made of the line checks and the Schema decoders alone.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { History } from "../src/History.js"
import { firstInexactNumber, parseObjectLine } from "../src/Json.js"
import {
  type Message,
  decodeCanonicalLine,
  decodeCanonicalMessage,
  decodeEntry,
  decodeMessage,
  decodeParsedEntry,
  type SessionEntry
} from "../src/Record.js"
import { SessionError, sessionError, isSessionError } from "../src/SessionError.js"
import { snapshotMessage } from "../src/internal/snapshot.js"
import { decodeText } from "./support/lines.js"

const HEADER = "{\"type\":\"session\",\"version\":1,\"id\":\"s\",\"timestamp\":\"2026-01-02T03:04:05.006Z\"}"

/** A line decoded by the Schemas only: the line checks, then `decodeEntry`, numbers, and a first entry's history check. */
const reference = (text: string, line: number): SessionEntry | SessionError => {
  const parsed = parseObjectLine(text)
  if (Either.isLeft(parsed)) return sessionError("SESSION_INVALID_JSON", parsed.left, { line })
  const record = parsed.right
  if (Object.hasOwn(record, "type") && record["type"] === "session") {
    return sessionError("SESSION_INVALID_HEADER", "a second header", { line })
  }
  const entry = Either.merge(decodeEntry(record, line))
  if (isSessionError(entry)) return entry
  const inexact = firstInexactNumber(text)
  if (inexact !== undefined) {
    return sessionError(
      inexact.inMessage ? "SESSION_INVALID_MESSAGE" : "SESSION_INVALID_RECORD",
      `the number ${inexact.literal} cannot be held exactly: a rewrite would write ${JSON.stringify(Number(inexact.literal))}`,
      { line }
    )
  }
  return new History().check(entry, line) ?? entry
}

const frozenDeep = (v: unknown): boolean =>
  typeof v !== "object" || v === null || (Object.isFrozen(v) && Object.values(v).every(frozenDeep))

const outcome = (r: unknown) =>
  isSessionError(r) ? { code: r.code, reason: r.reason, line: r.line } : { entry: r, frozen: frozenDeep(r) }

// ---------------------------------------------------------------------------
// Valid records

/** Stands for a number literal that JSON.stringify cannot write; replaced in the text. */
const LITERALS = ["12345678901234567891", "9007199254740993", "-9007199254740993", "1e400", "-1e400", "1.0", "-0", "2e-324", "1E2"]
const marker = (i: number) => `@@literal${i}@@`

const id = fc.oneof(
  { arbitrary: fc.constantFrom("e", "c1", "a:b", "x\"y", "\\", "é"), weight: 3 },
  { arbitrary: fc.string({ minLength: 1, maxLength: 5 }), weight: 2 }
)
const text = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom(":", "\":", "\"arguments\":", "é😀", "\u2028"))
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, 0, 1, -1.5, 1e21, 2 ** 53, "", ":"),
    text,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", ":", "constructor", "toString"), tie("value"), { maxKeys: 3 })
  )
})).value
const call = fc.record({ id, name: id, arguments: fc.dictionary(fc.constantFrom("path", "limit", "k:", ""), json, { maxKeys: 3 }) })
const calls = fc.uniqueArray(call, { maxLength: 3, selector: (c) => c.id })
const message = fc.oneof(
  fc.record({ role: fc.constant("user"), id, content: text }),
  fc.record({ role: fc.constant("assistant"), id, content: text, toolCalls: calls }),
  fc.record({ role: fc.constant("tool"), id, toolCallId: id, toolName: text, content: text, isError: fc.boolean() })
)
const timestamp = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }).map((ms) => new Date(ms).toISOString())
const record = fc.record({
  type: fc.constant("entry"),
  version: fc.constant(1),
  id,
  parentId: fc.constant(null),
  timestamp,
  message
})

// ---------------------------------------------------------------------------
// Mutations at one place of the tree

type Json = { [key: string]: unknown } | Array<unknown>

/** Every object and array of `v` with its depth (the record is depth 1). */
const containers = (v: unknown, depth = 1, out: Array<readonly [Json, number]> = []): Array<readonly [Json, number]> => {
  if (typeof v === "object" && v !== null) {
    out.push([v as Json, depth])
    for (const child of Object.values(v)) containers(child, depth + 1, out)
  }
  return out
}

const wrongValue = fc.constantFrom<unknown>(null, 0, 1, 2, "", "x", true, [], {}, [1], { a: 1 }, "1", 1.5, -1)
const badScalar = fc.constantFrom<unknown>(
  "",
  "2026-01-02T03:04:05.006z",
  "2026-02-29T00:00:00.000Z",
  "2026-01-02T03:04:05Z",
  "2026-01-02 03:04:05.006Z",
  2,
  "1",
  1.0,
  0,
  "entry",
  "session",
  "system",
  "user",
  "assistant",
  "tool"
)

interface Mutation {
  readonly kind: "none" | "remove" | "add" | "retype" | "proto" | "literal" | "rename" | "reorder" | "scalar" | "header"
  readonly at: number
  readonly pick: number
  readonly value: unknown
  readonly literal: number
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom("none", "none", "remove", "add", "retype", "retype", "proto", "literal", "literal", "rename", "reorder", "scalar", "scalar", "header"),
  at: fc.nat(),
  pick: fc.nat(),
  value: fc.oneof(wrongValue, json, badScalar),
  literal: fc.nat({ max: LITERALS.length - 1 })
})

/** The line of `r` after `m`, and how `__proto__` is spelled in it. */
const mutate = (r: unknown, m: Mutation, protoSpelling: string): string => {
  const copy = structuredClone(r)
  const all = containers(copy)
  const [target] = all[m.at % all.length]!
  const keys = Object.keys(target)
  const key = Array.isArray(target) ? target.length === 0 ? 0 : m.pick % target.length : keys.length === 0 ? undefined : keys[m.pick % keys.length]!
  const set = (k: string | number, v: unknown) => ((target as Record<string, unknown>)[k] = v)
  switch (m.kind) {
    case "header":
      // The record becomes a second header (`type` "session"): rare for the generic mutations to reach.
      ;(copy as Record<string, unknown>)["type"] = "session"
      break
    case "remove":
      if (Array.isArray(target)) target.splice(m.pick % (target.length + 1), 1)
      else if (key !== undefined) delete (target as Record<string, unknown>)[key]
      break
    case "add":
      if (Array.isArray(target)) target.push(m.value)
      else set("extra", m.value)
      break
    case "retype":
    case "scalar":
      if (key !== undefined) set(key, m.value)
      break
    case "literal":
      if (Array.isArray(target)) target.push(marker(m.literal))
      else set(key ?? "n", marker(m.literal))
      break
    case "rename":
      if (!Array.isArray(target) && key !== undefined) {
        const entries = Object.entries(target).map(([k, v]) => [k === key ? `${k}_` : k, v] as const)
        for (const k of keys) delete (target as Record<string, unknown>)[k]
        for (const [k, v] of entries) set(k, v)
      }
      break
    case "reorder":
      if (!Array.isArray(target) && keys.length > 1) {
        const entries = Object.entries(target)
        for (const k of keys) delete (target as Record<string, unknown>)[k]
        for (const [k, v] of entries.reverse()) set(k, v)
      }
      break
    case "proto":
      if (Array.isArray(target)) target.push({ "@@proto@@": 1 })
      else set("@@proto@@", {})
      break
    case "none":
      break
  }
  let line = JSON.stringify(copy)
  line = line.replaceAll("\"@@proto@@\"", protoSpelling)
  LITERALS.forEach((literal, i) => (line = line.replaceAll(`"${marker(i)}"`, literal)))
  return line
}

/** The same line with one member of the `at`-th non-empty object repeated right after itself. */
const repeatMember = (line: string, at: number): string => {
  const value: unknown = JSON.parse(line)
  const objects = containers(value).filter(([c]) => !Array.isArray(c) && Object.keys(c).length > 0)
  if (objects.length === 0) return line
  const [target] = objects[at % objects.length]!
  const [k] = Object.keys(target)
  // The first member of that object, spelled as JSON.stringify spells it, written twice.
  const member = `${JSON.stringify(k)}:${JSON.stringify((target as Record<string, unknown>)[k!])}`
  const i = line.indexOf(`{${member}`)
  return i === -1 ? line : `${line.slice(0, i + 1)}${member},${line.slice(i + 1)}`
}

const PROTO = ["\"__proto__\"", "\"\\u005f_proto__\"", "\"__prot\\u006f__\""]

describe("the direct decoder against the Schemas", () => {
  it("loads every generated line, valid or mutated, exactly as the Schema decoders do", () => {
    let direct = 0
    let accepted = 0
    let refused = 0
    const codes = new Set<string>()
    fc.assert(
      fc.property(record, mutation, fc.nat({ max: PROTO.length - 1 }), fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: fc.nat(), weight: 1 }), (r, m, proto, repeat) => {
        let line = mutate(r, m, PROTO[proto]!)
        if (repeat !== null) line = repeatMember(line, repeat)
        const expected = outcome(reference(line, 2))
        let parsed: unknown
        try {
          parsed = JSON.parse(line)
        } catch {
          parsed = undefined
        }
        const fast = parsed === undefined ? undefined : decodeCanonicalLine(parsed, line)
        if (fast !== undefined) {
          direct++
          // What the direct decoder takes, the Schemas take too (the number check comes after both).
          const schema = Either.merge(decodeEntry(parsed as Record<string, unknown>))
          expect(isSessionError(schema)).toBe(false)
          expect(fast.entry).toEqual(schema)
          expect(frozenDeep(fast.entry)).toBe(true)
        }
        const session = decodeText(`${HEADER}\n${line}\n`)
        if (isSessionError(session)) {
          refused++
          codes.add(session.code)
          expect(outcome(session)).toEqual(expected)
        } else {
          accepted++
          expect({ entry: session.history.entries[0], frozen: frozenDeep(session.history.entries[0]) }).toEqual(expected)
          expect(session.history.entries.length).toBe(1)
        }
      }),
      { numRuns: 10_000 }
    )
    // The generator must reach both sides often, and every code a single entry line can earn.
    expect(direct).toBeGreaterThan(1_500)
    expect(accepted).toBeGreaterThan(1_500)
    expect(refused).toBeGreaterThan(3_000)
    expect([...codes]).toEqual(expect.arrayContaining([
      "SESSION_INVALID_HEADER",
      "SESSION_INVALID_JSON",
      "SESSION_INVALID_MESSAGE",
      "SESSION_INVALID_RECORD",
      "SESSION_UNKNOWN_PARENT",
      "SESSION_UNSUPPORTED_VERSION"
    ]))
  })

  it("decodes a parsed record as decodeEntry does: same entry or same error", () => {
    let direct = 0
    fc.assert(
      fc.property(record, mutation, (r, m) => {
        const line = mutate(r, m, "\"__proto__\"")
        let value: Record<string, unknown>
        try {
          value = JSON.parse(line)
        } catch {
          return
        }
        if (typeof value !== "object" || value === null) return
        const expected = outcome(Either.merge(decodeEntry(value, 3)))
        if ("entry" in expected && decodeCanonicalLine(value, line) !== undefined) direct++
        expect(outcome(Either.merge(decodeParsedEntry(value, 3)))).toEqual(expected)
      }),
      { numRuns: 5_000 }
    )
    expect(direct).toBeGreaterThan(1_000)
  })

  it("decodes a message as decodeMessage does, or declines it", () => {
    let direct = 0
    fc.assert(
      fc.property(message, mutation, (msg, m) => {
        const line = mutate(msg, m, "\"__proto__\"")
        let value: unknown
        try {
          value = JSON.parse(line)
        } catch {
          return
        }
        const fast = decodeCanonicalMessage(value)
        const schema = Either.merge(decodeMessage(value))
        if (fast === undefined) return
        direct++
        expect(isSessionError(schema)).toBe(false)
        expect(fast).toEqual(schema as Message)
        expect(frozenDeep(fast)).toBe(true)
      }),
      { numRuns: 5_000 }
    )
    expect(direct).toBeGreaterThan(1_000)
  })
})

describe("a role that is an object", () => {
  const cases: ReadonlyArray<unknown> = [{ toString: 1 }, { valueOf: "x", toString: null }, [{ toString: {} }]]

  it("is SESSION_INVALID_MESSAGE on load, at its line, and never a thrown error", () => {
    for (const role of cases) {
      const line = JSON.stringify({
        type: "entry",
        version: 1,
        id: "e",
        parentId: null,
        timestamp: "2026-01-02T03:04:05.006Z",
        message: { role, id: "m", content: "" }
      })
      const session = decodeText(`${HEADER}\n${line}\n`)
      expect(isSessionError(session)).toBe(true)
      expect(outcome(session)).toMatchObject({ code: "SESSION_INVALID_MESSAGE", line: 2 })
      expect((session as SessionError).reason).toContain(`"user" | "assistant" | "tool", actual ${JSON.stringify(role)}`)
    }
  })

  it("is SESSION_INVALID_MESSAGE for an append's input", () => {
    for (const role of cases) {
      const decoded = Either.merge(snapshotMessage({ role, id: "m", content: "" }))
      expect(isSessionError(decoded)).toBe(true)
      expect((decoded as SessionError).code).toBe("SESSION_INVALID_MESSAGE")
    }
  })
})

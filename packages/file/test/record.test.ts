/**
 * What the loader hands out: records rebuilt as fresh, deeply frozen plain
 * objects in canonical key order, sharing nothing with the parsed JSON, built
 * without running any accessor, and never changing a prototype.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { FastCheck as fc } from "effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { encodeLine } from "@session-tree/core/Codec"
import { decode as decodeEither } from "../src/Jsonl.js"
import { decodeEntry, decodeHeader, isCanonicalTimestamp } from "@session-tree/core/Record"
import { SessionError, isSessionError } from "@session-tree/core/SessionError"
import * as V1 from "@session-tree/testing/Version1"
import {
  assistant,
  call,
  entry,
  header,
  headerLine,
  type Json,
  jsonl,
  type JsonRecord,
  readSession,
  tempDir,
  tool,
  user,
  utf8,
  without
} from "./support/files.js"

/** `Jsonl.decode` with its Either merged: the session, or the error it fails with. */
const decodeSession = (bytes: Uint8Array) => Either.merge(decodeEither(bytes))

const records: ReadonlyArray<JsonRecord> = [
  entry("e1", null, user("m1", "root ✓")),
  entry("e2", "e1", assistant("m2", "calling", [
    call("c1", "read", { path: "/tmp/a", opts: { depth: [1, [2, { three: 3 }]], flags: [] }, list: [{ a: 1 }, { a: 1 }] }),
    call("c2", "write", {})
  ])),
  entry("e3", "e2", tool("m3", "c1", "read", "contents", false)),
  entry("e4", "e3", tool("m4", "c2", "write", "denied", true)),
  entry("e5", "e1", assistant("m5", "", []))
]
const richFile = jsonl([headerLine(), ...records.map((r) => JSON.stringify(r))])

/** Every object and array reachable from `roots`. */
const reachable = (...roots: ReadonlyArray<unknown>): Set<object> => {
  const seen = new Set<object>()
  const stack = [...roots]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v !== "object" || v === null || seen.has(v)) continue
    seen.add(v)
    for (const key of Reflect.ownKeys(v)) {
      const d = Object.getOwnPropertyDescriptor(v, key)!
      if ("value" in d) stack.push(d.value)
    }
  }
  return seen
}

/** Each object is frozen, plain (Object.prototype / Array.prototype) and has only data properties. */
const expectFrozenPlain = (root: unknown) => {
  const all = reachable(root)
  expect(all.size).toBeGreaterThan(0)
  for (const o of all) {
    expect(Object.isFrozen(o)).toBe(true)
    expect(Object.getPrototypeOf(o)).toBe(Array.isArray(o) ? Array.prototype : Object.prototype)
    for (const key of Reflect.ownKeys(o)) {
      expect(typeof key).toBe("string")
      const d = Object.getOwnPropertyDescriptor(o, key)!
      expect(d.get ?? d.set).toBeUndefined()
    }
  }
}

const decodeOk = (text: string) => {
  const decoded = decodeSession(utf8(text))
  if (isSessionError(decoded)) throw decoded
  return decoded
}

describe("records", () => {
  it("are deeply frozen plain objects equal to the file's JSON", () => {
    const decoded = decodeOk(richFile)
    expectFrozenPlain(decoded.header)
    // The history's own array grows with appends; every record in it is frozen.
    for (const e of decoded.history.entries) expectFrozenPlain(e)
    expect(decoded.header).toEqual(header())
    expect(decoded.history.entries).toEqual(records)
  })

  it.effect("are deeply frozen in the read-only load too, the array of entries included", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => tempDir()),
      ({ dir }) =>
        Effect.gen(function*() {
          const path = Path.join(dir, "s.jsonl")
          NFS.writeFileSync(path, richFile)
          const loaded = yield* readSession(path)
          if (Either.isLeft(loaded)) throw loaded.left
          expect(Object.isFrozen(loaded.right.entries)).toBe(true)
          expectFrozenPlain(loaded.right.entries)
          expectFrozenPlain(loaded.right.header)
          expect(loaded.right.entries).toEqual(records)
        }),
      ({ remove }) => Effect.sync(remove)
    ))

  it("share no object with what JSON.parse returned", () => {
    const original = JSON.parse
    const parsed: Array<unknown> = []
    JSON.parse = function(this: unknown, ...args: Parameters<typeof JSON.parse>) {
      const value = original.apply(this, args)
      parsed.push(value)
      return value
    } as typeof JSON.parse
    let decoded
    try {
      decoded = decodeOk(richFile)
    } finally {
      JSON.parse = original
    }
    // The loader did parse the lines through JSON.parse, so the comparison below has something to compare with.
    expect(parsed.filter((p) => typeof p === "object" && p !== null).length).toBeGreaterThanOrEqual(records.length + 1)
    const fromJson = reachable(...parsed)
    const shared = [...reachable(decoded.header, decoded.history.entries)].filter((o) => fromJson.has(o))
    expect(shared).toEqual([])
  })

  it("share no object with each other, even when equal", () => {
    const decoded = decodeOk(richFile)
    const list = V1.entry(decoded.history.entries[1]!).message
    if (list.role !== "assistant") throw new Error("expected the assistant entry")
    const [first, second] = (list.toolCalls[0]!.arguments["list"] as ReadonlyArray<unknown>)
    expect(first).toEqual(second)
    expect(first).not.toBe(second)
  })

  it("come out in canonical key order whatever order the file had, and encode back to the canonical line", () => {
    // Reverses every record's keys; tool-call arguments are data, so their order stays as written.
    const shuffle = (v: Json, key = ""): Json =>
      Array.isArray(v)
        ? v.map((x) => shuffle(x))
        : typeof v === "object" && v !== null && key !== "arguments"
        ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, shuffle(x, k)]))
        : v
    const decoded = decodeOk(jsonl([JSON.stringify(shuffle(header())), ...records.map((r) => JSON.stringify(shuffle(r)))]))
    expect(encodeLine(decoded.header)).toBe(headerLine() + "\n")
    expect(decoded.history.entries.map(encodeLine)).toEqual(records.map((r) => JSON.stringify(r) + "\n"))
    expect(Object.keys(V1.entry(decoded.history.entries[2]!).message)).toEqual(["role", "id", "toolCallId", "toolName", "content", "isError"])
  })

  it("are built without touching their input", () => {
    for (const record of records) {
      const input = JSON.parse(JSON.stringify(record)) as { [key: string]: unknown }
      const before = structuredClone(input)
      const decoded = Either.merge(decodeEntry(input, 2))
      expect(decoded).toEqual(record)
      expect(input).toEqual(before)
      expect(Object.isFrozen(input)).toBe(false)
    }
  })
})

describe("a key missing from the JSON is never looked up on the prototype chain", () => {
  /**
   * Runs `body` while Object.prototype carries `key` = `value` (as another
   * library polluting it would). A decoder that reads `input[key]` for a key
   * the JSON lacks would find the value there and accept the record.
   */
  const withPolluted = <A>(key: string, value: Json, body: () => A): A => {
    Object.defineProperty(Object.prototype, key, { value, writable: true, configurable: true, enumerable: false })
    try {
      return body()
    } finally {
      delete (Object.prototype as Record<string, unknown>)[key]
    }
  }

  const cases: Array<{ readonly name: string; readonly text: string; readonly key: string; readonly value: Json; readonly code: string }> = []
  const add = (name: string, complete: JsonRecord, key: string, code: string, wrap: (r: JsonRecord) => JsonRecord, isHeader = false) => {
    const value = complete[key]!
    const record = wrap(without(complete, key))
    cases.push({ name, key, value, code, text: isHeader ? jsonl([JSON.stringify(record)]) : jsonl([headerLine(), JSON.stringify(record)]) })
  }
  const id = (r: JsonRecord) => r
  for (const k of ["type", "version", "id", "timestamp"]) add(`header without ${k}`, header(), k, "SESSION_INVALID_HEADER", id, true)
  for (const k of ["type", "version", "id", "parentId", "timestamp", "message"]) add(`entry without ${k}`, entry(), k, "SESSION_INVALID_RECORD", id)
  const inEntry = (m: JsonRecord) => entry("e", null, m)
  for (const k of ["role", "id", "content"]) add(`user message without ${k}`, user(), k, "SESSION_INVALID_MESSAGE", inEntry)
  for (const k of ["toolCalls", "content"]) add(`assistant message without ${k}`, assistant("m", "x"), k, "SESSION_INVALID_MESSAGE", inEntry)
  for (const k of ["id", "name", "arguments"]) {
    add(`tool call without ${k}`, call("c", "f"), k, "SESSION_INVALID_MESSAGE", (c) => inEntry(assistant("m", "x", [c])))
  }
  for (const k of ["toolCallId", "toolName", "content", "isError"]) {
    add(`tool message without ${k}`, tool("m", "c", "f"), k, "SESSION_INVALID_MESSAGE", inEntry)
  }

  for (const c of cases) {
    it(c.name, () => {
      const decoded = withPolluted(c.key, c.value, () => decodeSession(utf8(c.text)))
      expect(isSessionError(decoded)).toBe(true)
      expect((decoded as SessionError).code).toBe(c.code)
      expect(Object.prototype).not.toHaveProperty(c.key)
    })
  }

  it("and the pollution does not leak into valid records", () => {
    const decoded = withPolluted("extra", "x", () => decodeOk(richFile))
    expect(decoded.history.entries).toEqual(records)
    for (const o of reachable(decoded.header, decoded.history.entries)) expect(Object.hasOwn(o, "extra")).toBe(false)
  })
})

describe("a __proto__ key never changes a prototype", () => {
  const spellings = [`"__proto__"`, `"\\u005f_proto__"`, `"\\u005F\\u005Fproto\\u005F\\u005F"`, `"__pro\\u0074o__"`]
  const payload = `{"polluted":true,"toString":"x"}`
  const files = spellings.flatMap((key) => {
    const args = (raw: string) =>
      JSON.stringify(entry("e1", null, assistant("m", "", [call("c", "f", { slot: 0 })]))).replace(`{"slot":0}`, raw)
    return [
      jsonl([headerLine().slice(0, -1) + `,${key}:${payload}}`]),
      jsonl([headerLine(), JSON.stringify(entry()).slice(0, -1) + `,${key}:${payload}}`]),
      jsonl([headerLine(), JSON.stringify(entry()).replace(`"role":"user"`, `${key}:${payload},"role":"user"`)]),
      jsonl([headerLine(), args(`{${key}:${payload}}`)]),
      jsonl([headerLine(), args(`{"a":[{"b":{${key}:${payload}}}]}`)]),
      // Also where it is not yet rejected by any schema: an incomplete tail is skipped, not parsed.
      jsonl([headerLine()]) + `{${key}:${payload}`
    ]
  })

  it("in the pure decoder", () => {
    const protoKeys = Reflect.ownKeys(Object.prototype)
    for (const text of files) {
      const decoded = decodeSession(utf8(text))
      if (isSessionError(decoded)) expect(decoded.code).toBe("SESSION_INVALID_JSON")
      else expect(decoded.tail).toBe("incomplete")
      expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
      expect(({}).toString).toBe(Object.prototype.toString)
      expect(Reflect.ownKeys(Object.prototype)).toEqual(protoKeys)
    }
    // Every complete one was rejected; only the cut tails loaded.
    expect(files.filter((t) => isSessionError(decodeSession(utf8(t))))).toHaveLength(spellings.length * 5)
  })

  it.effect("in the file store", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => tempDir()),
      ({ dir }) =>
        Effect.gen(function*() {
          for (const [i, text] of files.entries()) {
            const path = Path.join(dir, `s${i}.jsonl`)
            NFS.writeFileSync(path, text)
            yield* readSession(path)
            expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
            expect(Object.getPrototypeOf({})).toBe(Object.prototype)
          }
        }),
      ({ remove }) => Effect.sync(remove)
    ))
})

describe("timestamps", () => {
  it("accept exactly what toISOString writes for years 0000-9999", () => {
    for (const s of ["2026-01-02T03:04:05.006Z", "0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2024-02-29T00:00:00.000Z"]) {
      expect([s, isCanonicalTimestamp(s)]).toEqual([s, true])
    }
    const invalid = [
      "2026-01-02T03:04:05Z", "+010000-01-01T00:00:00.000Z", "-000001-01-01T00:00:00.000Z", "2026-01-02T03:04:05.006+00:00",
      "2026-02-29T00:00:00.000Z", "2026-02-30T00:00:00.000Z", "2026-04-31T00:00:00.000Z", "2026-13-01T00:00:00.000Z",
      "2026-00-01T00:00:00.000Z", "2026-01-00T00:00:00.000Z", "2026-01-02T24:00:00.000Z", "2026-01-02T23:60:00.000Z",
      "2026-12-31T23:59:60.000Z", "2026-01-02t03:04:05.006z", "2026-01-02T03:04:05.006Z\n", "２０２６-01-02T03:04:05.006Z", ""
    ]
    for (const s of invalid) expect([s, isCanonicalTimestamp(s)]).toEqual([s, false])
  })

  it.prop("never throw, and agree with a Date round trip", [fc.integer({ min: -62198755200000 - 86_400_000, max: 253402300800000 + 86_400_000 })], ([ms]) => {
    const iso = new Date(ms).toISOString()
    expect(isCanonicalTimestamp(iso)).toBe(/^\d{4}-/.test(iso))
  }, { fastCheck: { numRuns: 500 } })

  it.prop("never throw on arbitrary strings of the right shape", [fc.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)], ([s]) => {
    const date = new Date(s)
    expect(isCanonicalTimestamp(s)).toBe(!Number.isNaN(date.getTime()) && date.toISOString() === s)
  }, { fastCheck: { numRuns: 500 } })

  it("a header and an entry with a leap second are rejected with a typed error", () => {
    const leap = "2026-12-31T23:59:60.000Z"
    expect((Either.merge(decodeHeader(header({ timestamp: leap }) as { [key: string]: unknown }, 1)) as SessionError).code).toBe("SESSION_INVALID_HEADER")
    expect((Either.merge(decodeEntry(entry("e", null, user(), { timestamp: leap }) as { [key: string]: unknown }, 2)) as SessionError).code).toBe(
      "SESSION_INVALID_RECORD"
    )
  })
})

/**
 * Properties of the read path over generated sessions:
 * (a) a crash can only cut a canonical file short: a cut at any byte offset loads
 *     exactly the entries whose lines are complete, or fails with
 *     SESSION_INVALID_UTF8 when it splits a character — nothing else;
 * (b) canonical files round-trip, whatever their line endings;
 * (c) random corruption of valid files never throws, never hangs and is accepted
 *     exactly when an independent oracle (written below, sharing no code with
 *     the library) accepts it, with the same records.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { type DecodedSession, encodeLine } from "@session-tree/core/Codec"
import { decode as decodeEither } from "../src/Jsonl.js"
import { SessionError, SessionErrorCode, isSessionError } from "@session-tree/core/SessionError"
import { type Json, type JsonRecord, readSession, tempDir, TS } from "./support/files.js"

/** `Jsonl.decode` with its Either merged: the session, or the error it fails with. */
const decodeSession = (bytes: Uint8Array) => Either.merge(decodeEither(bytes))

// ---------------------------------------------------------------------------
// Generated sessions: valid by construction (IDs, parents, tool links per branch)

const textArb = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.array(fc.constantFrom("é", "中", "😀", "\u{10FFFF}", "\u2028", "\uFEFF", "\"", "\\", "\n", "\r", "\t", "\u0000", "{", "}", ":", ","), { maxLength: 8 })
    .map((parts) => parts.join(""))
)

/** JSON data without "__proto__" keys (which the format forbids). */
const leafArb: fc.Arbitrary<Json> = fc.oneof(textArb, fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null))
const valueArb: fc.Arbitrary<Json> = fc.oneof(leafArb, fc.array(leafArb, { maxLength: 3 }), fc.dictionary(textArb, leafArb, { maxKeys: 2 }))
const argsArb: fc.Arbitrary<JsonRecord> = fc
  .dictionary(textArb, valueArb, { maxKeys: 3 })
  .map((d) => JSON.parse(JSON.stringify(d).replace(/"__proto__":/g, "\"proto\":")) as JsonRecord)

interface Step {
  readonly kind: "user" | "assistant" | "tool"
  readonly parent: number
  readonly content: string
  readonly calls: ReadonlyArray<{ readonly name: string; readonly args: JsonRecord; readonly reuse: number }>
  readonly isError: boolean
  readonly time: number
}

const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom("user", "assistant", "tool", "tool"),
  parent: fc.nat(),
  content: textArb,
  calls: fc.array(fc.record({ name: fc.constantFrom("read", "write", "search", "ünï"), args: argsArb, reuse: fc.nat() }), { maxLength: 2 }),
  isError: fc.boolean(),
  time: fc.integer({ min: -62167219200000, max: 253402300799999 })
})

/** The records of a valid session built from `steps`: every choice is bent into a valid one. */
const build = (steps: ReadonlyArray<Step>, sessionId: string): ReadonlyArray<JsonRecord> => {
  const entries: Array<JsonRecord & { id: string; parentId: string | null; message: JsonRecord }> = []
  const ancestors = (index: number | null) => {
    const out: Array<(typeof entries)[number]> = []
    for (let p = index; p !== null; ) {
      const e = entries[p]!
      out.push(e)
      p = e.parentId === null ? null : entries.findIndex((x) => x.id === e.parentId)
    }
    return out
  }
  let callSeq = 0
  steps.forEach((step, i) => {
    const parentIndex = step.parent % (entries.length + 1) === entries.length ? null : step.parent % (entries.length + 1)
    const branch = ancestors(parentIndex)
    const id = `entry-${i + 1}`
    const base = {
      type: "entry",
      version: 1,
      id,
      parentId: parentIndex === null ? null : entries[parentIndex]!.id,
      timestamp: new Date(step.time).toISOString()
    }
    const callsOnBranch = branch.flatMap((e) =>
      e.message["role"] === "assistant" ? (e.message["toolCalls"] as ReadonlyArray<JsonRecord>) : []
    )
    const answered = new Set(branch.flatMap((e) => (e.message["role"] === "tool" ? [e.message["toolCallId"]] : [])))
    const open = callsOnBranch.filter((c) => !answered.has(c["id"]))
    let message: JsonRecord
    if (step.kind === "tool" && open.length > 0) {
      const c = open[step.parent % open.length]!
      message = { role: "tool", id: `m${i}`, toolCallId: c["id"]!, toolName: c["name"]!, content: step.content, isError: step.isError }
    } else if (step.kind === "assistant") {
      // Reuse a call ID from another branch now and then (allowed), never one on this branch.
      const onBranch = new Set(callsOnBranch.map((c) => c["id"]))
      const elsewhere = entries.flatMap((e) =>
        e.message["role"] === "assistant" ? (e.message["toolCalls"] as ReadonlyArray<JsonRecord>).map((c) => c["id"] as string) : []
      ).filter((c) => !onBranch.has(c))
      const used = new Set<string>()
      const toolCalls = step.calls.map((c) => {
        let callId = c.reuse % 3 === 0 && elsewhere.length > 0 ? elsewhere[c.reuse % elsewhere.length]! : `call-${++callSeq}`
        if (used.has(callId)) callId = `call-${++callSeq}`
        used.add(callId)
        return { id: callId, name: c.name, arguments: c.args }
      })
      message = { role: "assistant", id: `m${i}`, content: step.content, toolCalls }
    } else {
      message = { role: "user", id: `m${i}`, content: step.content }
    }
    entries.push({ ...base, message })
  })
  return [{ type: "session", version: 1, id: sessionId, timestamp: TS }, ...entries]
}

const sessionArb = fc.record({
  steps: fc.array(stepArb, { minLength: 1, maxLength: 10 }),
  sessionId: fc.constantFrom("session-001", "séssion-中文-😀")
}).map(({ sessionId, steps }) => build(steps, sessionId))

const canonical = (records: ReadonlyArray<JsonRecord>): Buffer =>
  Buffer.from(records.map((r) => JSON.stringify(r) + "\n").join(""), "utf8")

// ---------------------------------------------------------------------------
// The oracle: `docs/format.md` (records, Message IR, lines, numbers) read literally, written without the library's code

const MAX_LINE = 65_536
const MAX_FILE = 4_194_304
const MAX_ENTRIES = 4_096
const MAX_DEPTH = 64

type OracleResult =
  | { readonly ok: true; readonly records: ReadonlyArray<JsonRecord>; readonly tail: "none" | "incomplete" }
  | { readonly ok: false; readonly why: string }

class Reject extends Error {}
class EndOfInput extends Error {}

/** Whether two decimal literals have one value, compared as exact rationals (digits × 10^exponent). */
const sameValue = (a: string, b: string): boolean => {
  const exact = (literal: string) => {
    const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)!
    const digits = BigInt(m[2]! + (m[3] ?? ""))
    return { digits: m[1] === "-" ? -digits : digits, exponent: Number(m[4] ?? "0") - (m[3] ?? "").length }
  }
  const x = exact(a)
  const y = exact(b)
  if (x.digits === 0n || y.digits === 0n) return x.digits === y.digits
  const low = Math.min(x.exponent, y.exponent)
  return x.digits * 10n ** BigInt(x.exponent - low) === y.digits * 10n ** BigInt(y.exponent - low)
}

/**
 * A recursive-descent JSON reader. `prefix` mode answers whether `text` is a
 * viable prefix of one object: running out of input anywhere means "incomplete".
 * Otherwise it parses one object strictly, refusing duplicate keys, "__proto__"
 * keys and nesting deeper than MAX_DEPTH.
 */
const readJson = (text: string, prefix: boolean): { complete: true; value: JsonRecord } | { complete: false } => {
  let i = 0
  const peek = (): number => {
    if (i >= text.length) throw prefix ? new EndOfInput() : new Reject("end of input")
    return text.charCodeAt(i)
  }
  const ws = () => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++
  }
  const expectChar = (c: string) => {
    if (peek() !== c.charCodeAt(0)) throw new Reject(`expected ${c} at ${i}`)
    i++
  }
  const str = (): string => {
    const start = i
    expectChar("\"")
    for (;;) {
      const c = peek()
      if (c === 0x22) break
      if (c < 0x20) throw new Reject("control character in string")
      i++
      if (c === 0x5c) {
        const e = text[i] ?? (peek(), "")
        if (e === "u") {
          i++
          for (let k = 0; k < 4; k++) {
            if (!/[0-9a-fA-F]/.test(String.fromCharCode(peek()))) throw new Reject("bad \\u escape")
            i++
          }
        } else if ("\"\\/bfnrt".includes(e)) i++
        else throw new Reject("bad escape")
      }
    }
    i++
    return JSON.parse(text.slice(start, i)) as string
  }
  const num = (): number => {
    const start = i
    const digits = () => {
      if (!/[0-9]/.test(String.fromCharCode(peek()))) throw new Reject("digit expected")
      while (i < text.length && /[0-9]/.test(text[i]!)) i++
    }
    if (peek() === 0x2d) i++
    if (peek() === 0x30) i++
    else digits()
    if (i < text.length && text[i] === ".") {
      i++
      digits()
    }
    if (i < text.length && (text[i] === "e" || text[i] === "E")) {
      i++
      if (peek() === 0x2b || peek() === 0x2d) i++
      digits()
    }
    // In prefix mode a number at the very end may still go on.
    if (prefix && i >= text.length) throw new EndOfInput()
    const n = Number(text.slice(start, i))
    // A number a commit could not write back (±Infinity) is not accepted; -0 is written as 0, so it reads as 0.
    if (!prefix && !Number.isFinite(n)) throw new Reject("number out of range")
    if (!prefix && !sameValue(text.slice(start, i), JSON.stringify(n))) throw new Reject("number a rewrite would change")
    return n === 0 ? 0 : n
  }
  const value = (depth: number): Json => {
    ws()
    const c = peek()
    if (c === 0x7b) return object(depth + 1)
    if (c === 0x5b) return array(depth + 1)
    if (c === 0x22) return str()
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return num()
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (c === word.charCodeAt(0)) {
        for (const ch of word) expectChar(ch)
        return v
      }
    }
    throw new Reject(`unexpected ${String.fromCharCode(c)}`)
  }
  const object = (depth: number): JsonRecord => {
    if (!prefix && depth > MAX_DEPTH) throw new Reject("too deep")
    expectChar("{")
    const out: Record<string, Json> = {}
    const keys = new Set<string>()
    ws()
    if (peek() === 0x7d) {
      i++
      return out
    }
    for (;;) {
      ws()
      const key = str()
      if (!prefix && (keys.has(key) || key === "__proto__")) throw new Reject(`key ${key}`)
      keys.add(key)
      ws()
      expectChar(":")
      const v = value(depth)
      Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true })
      ws()
      if (peek() === 0x2c) {
        i++
        continue
      }
      expectChar("}")
      return out
    }
  }
  const array = (depth: number): ReadonlyArray<Json> => {
    if (!prefix && depth > MAX_DEPTH) throw new Reject("too deep")
    expectChar("[")
    const out: Array<Json> = []
    ws()
    if (peek() === 0x5d) {
      i++
      return out
    }
    for (;;) {
      out.push(value(depth))
      ws()
      if (peek() === 0x2c) {
        i++
        continue
      }
      expectChar("]")
      return out
    }
  }
  try {
    ws()
    const top = object(1)
    ws()
    if (i !== text.length) throw new Reject("text after the object")
    return { complete: true, value: top }
  } catch (e) {
    if (e instanceof EndOfInput) return { complete: false }
    throw e
  }
}

const isTimestamp = (v: unknown): boolean => {
  if (typeof v !== "string") return false
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})Z$/.exec(v)
  if (m === null) return false
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number]
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0)
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][mo - 1]
  return days !== undefined && d >= 1 && d <= days && h <= 23 && mi <= 59 && s <= 59
}

const isObj = (v: unknown): v is JsonRecord => typeof v === "object" && v !== null && !Array.isArray(v)
const hasExactly = (v: unknown, keys: ReadonlyArray<string>): v is JsonRecord =>
  isObj(v) && Object.keys(v).length === keys.length && keys.every((k) => Object.hasOwn(v, k))
const isId = (v: unknown): boolean => typeof v === "string" && v.length > 0

const validMessage = (m: unknown): boolean => {
  if (!isObj(m)) return false
  switch (m["role"]) {
    case "user":
      return hasExactly(m, ["role", "id", "content"]) && isId(m["id"]) && typeof m["content"] === "string"
    case "assistant": {
      if (!hasExactly(m, ["role", "id", "content", "toolCalls"]) || !isId(m["id"]) || typeof m["content"] !== "string") return false
      const calls = m["toolCalls"]
      if (!Array.isArray(calls)) return false
      const ids = calls.map((c: unknown) => (isObj(c) ? c["id"] : undefined))
      return calls.every((c: unknown) => hasExactly(c, ["id", "name", "arguments"]) && isId(c["id"]) && isId(c["name"]) && isObj(c["arguments"])) &&
        new Set(ids).size === ids.length
    }
    case "tool":
      return hasExactly(m, ["role", "id", "toolCallId", "toolName", "content", "isError"]) && isId(m["id"]) && isId(m["toolCallId"]) &&
        typeof m["toolName"] === "string" && typeof m["content"] === "string" && typeof m["isError"] === "boolean"
    default:
      return false
  }
}

const oracle = (bytes: Uint8Array): OracleResult => {
  const no = (why: string): OracleResult => ({ ok: false, why })
  if (bytes.length > MAX_FILE) return no("file too large")
  let text: string
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes)
  } catch {
    return no("invalid UTF-8")
  }
  const physical = text.split("\n")
  const last = physical.pop()!
  const lines = physical.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l))
  for (const l of lines) if (Buffer.byteLength(l) > MAX_LINE) return no("line too long")
  let tail: "none" | "incomplete" = "none"
  if (last !== "") {
    if (Buffer.byteLength(last.endsWith("\r") ? last.slice(0, -1) : last) > MAX_LINE) return no("line too long")
    try {
      if (readJson(last, true).complete) lines.push(last)
      else tail = "incomplete"
    } catch {
      return no("tail can never be an object")
    }
  }
  if (lines.length === 0) return no("no header")
  if (lines.length - 1 > MAX_ENTRIES) return no("too many entries")
  const records: Array<JsonRecord> = []
  for (const l of lines) {
    try {
      const r = readJson(l, false)
      if (!r.complete) return no("incomplete line")
      records.push(r.value)
    } catch {
      return no("not one JSON object")
    }
  }
  const [head, ...entries] = records as [JsonRecord, ...Array<JsonRecord>]
  if (!hasExactly(head, ["type", "version", "id", "timestamp"]) || head["type"] !== "session" || head["version"] !== 1 || !isId(head["id"]) ||
    !isTimestamp(head["timestamp"])) return no("bad header")
  const byId = new Map<string, JsonRecord>()
  for (const e of entries) {
    if (!hasExactly(e, ["type", "version", "id", "parentId", "timestamp", "message"]) || e["type"] !== "entry" || e["version"] !== 1 ||
      !isId(e["id"]) || !(e["parentId"] === null || isId(e["parentId"])) || !isTimestamp(e["timestamp"])) return no("bad entry")
    if (!validMessage(e["message"])) return no("bad message")
    const id = e["id"] as string
    if (byId.has(id)) return no("duplicate ID")
    const strictAncestors: Array<JsonRecord> = []
    for (let p = e["parentId"] as string | null; p !== null; ) {
      const a = byId.get(p)
      if (a === undefined) return no("unknown parent")
      strictAncestors.push(a)
      p = a["parentId"] as string | null
    }
    const m = e["message"] as JsonRecord
    const ancestorCalls = strictAncestors.flatMap((a) => {
      const am = a["message"] as JsonRecord
      return am["role"] === "assistant" ? (am["toolCalls"] as ReadonlyArray<JsonRecord>) : []
    })
    if (m["role"] === "assistant") {
      for (const c of m["toolCalls"] as ReadonlyArray<JsonRecord>) {
        if (ancestorCalls.some((x) => x["id"] === c["id"])) return no("call ID repeated on the branch")
      }
    } else if (m["role"] === "tool") {
      const answered = ancestorCalls.filter((x) => x["id"] === m["toolCallId"])
      if (answered.length !== 1 || answered[0]!["name"] !== m["toolName"]) return no("result without its call")
      if (strictAncestors.some((a) => (a["message"] as JsonRecord)["role"] === "tool" && (a["message"] as JsonRecord)["toolCallId"] === m["toolCallId"])) {
        return no("answered twice")
      }
    }
    byId.set(id, e)
  }
  return { ok: true, records, tail }
}

// ---------------------------------------------------------------------------
// Running the decoder

const CODES = new Set<string>(SessionErrorCode.literals)

/** decodeSession, with anything but a SessionError of a known code turned into a failed assertion. */
const decode = (bytes: Uint8Array): DecodedSession | SessionError => {
  let result: unknown
  try {
    result = decodeSession(bytes)
  } catch (e) {
    throw new Error(`decodeSession threw: ${String(e)}`)
  }
  // Plain checks, not `expect`: this runs tens of thousands of times.
  if (isSessionError(result)) {
    if (!CODES.has(result.code)) throw new Error(`unknown code ${result.code}`)
    return result
  }
  const decoded = result as DecodedSession
  if (typeof decoded.header !== "object" || (decoded.tail !== "none" && decoded.tail !== "incomplete")) {
    throw new Error(`not a decoded session: ${String(result)}`)
  }
  return decoded
}

const idsOf = (d: DecodedSession) => d.history.entries.map((e) => e.id)

/** The expected outcome of a cut at `k`, from the positions of the lines in `bytes` (canonical, `eol`-terminated). */
const expectedCut = (bytes: Buffer, k: number, eol: "\n" | "\r\n", ids: ReadonlyArray<string>) => {
  if (k < bytes.length && (bytes[k]! & 0xc0) === 0x80) return { code: "SESSION_INVALID_UTF8" } as const
  // The end (exclusive) of each record's JSON text, and the start of each line.
  const ends: Array<number> = []
  const starts: Array<number> = [0]
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) {
    ends.push(at - (eol === "\r\n" ? 1 : 0))
    starts.push(at + 1)
  }
  if (k < ends[0]!) return { code: "SESSION_INVALID_HEADER" } as const
  const complete = ends.filter((end) => end <= k).length - 1
  const inside = starts.some((s, i) => s < k && i < ends.length && k < ends[i]!)
  return { ids: ids.slice(0, complete), tail: inside ? "incomplete" : "none" } as const
}

const checkCut = (bytes: Buffer, k: number, eol: "\n" | "\r\n", ids: ReadonlyArray<string>) => {
  const want = expectedCut(bytes, k, eol, ids)
  const got = decode(bytes.subarray(0, k))
  const actual = isSessionError(got) ? { code: got.code, message: got.message } : { ids: idsOf(got), tail: got.tail }
  const expected = "code" in want ? { code: want.code, message: actual.message } : { ids: want.ids, tail: want.tail }
  // Compared as text first (cheap); `expect` only to show a difference.
  if (JSON.stringify(actual) !== JSON.stringify(expected)) expect({ k, ...actual }).toEqual({ k, ...expected })
}

// ---------------------------------------------------------------------------

describe("(a) a cut at any byte offset", () => {
  const fixed = [
    { type: "session", version: 1, id: "séssion-😀", timestamp: TS },
    { type: "entry", version: 1, id: "entry-001", parentId: null, timestamp: TS, message: { role: "user", id: "m1", content: "héllo 中文 😀 \u{10FFFF}" } },
    {
      type: "entry", version: 1, id: "entry-002", parentId: "entry-001", timestamp: TS,
      message: { role: "assistant", id: "m2", content: "ça", toolCalls: [{ id: "c-ü", name: "read", arguments: { "ключ": ["значение", 1.5e-7, { "x": null }] } }] }
    },
    { type: "entry", version: 1, id: "entry-003", parentId: "entry-002", timestamp: TS, message: { role: "tool", id: "m3", toolCallId: "c-ü", toolName: "read", content: "🙂\"\\", isError: false } },
    { type: "entry", version: 1, id: "entry-004", parentId: "entry-001", timestamp: TS, message: { role: "user", id: "m4", content: "∑" } }
  ] as const
  const ids = fixed.slice(1).map((r) => r.id)

  for (const eol of ["\n", "\r\n"] as const) {
    it(`of a canonical file (${JSON.stringify(eol)}): every offset, exhaustively`, () => {
      const bytes = Buffer.from(fixed.map((r) => JSON.stringify(r) + eol).join(""), "utf8")
      // The fixture has characters of every width, so the UTF-8 branch is exercised too.
      let splits = 0
      for (let k = 0; k <= bytes.length; k++) {
        if (k < bytes.length && (bytes[k]! & 0xc0) === 0x80) splits++
        checkCut(bytes, k, eol, ids)
      }
      expect(splits).toBeGreaterThan(20)
    })
  }

  it.prop("of generated sessions", [sessionArb, fc.array(fc.nat(), { minLength: 16, maxLength: 16 })], ([records, picks]) => {
    const bytes = canonical(records)
    const ids = records.slice(1).map((r) => r["id"] as string)
    const headerEnd = bytes.indexOf(0x0a) + 1
    // Offsets after the header, the line boundaries (±1) always among them.
    const offsets = new Set(picks.map((p) => headerEnd + (p % (bytes.length - headerEnd + 1))))
    for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) for (const d of [-1, 0, 1, 2]) offsets.add(at + d)
    for (const k of offsets) if (k >= headerEnd && k <= bytes.length) checkCut(bytes, k, "\n", ids)
  }, { fastCheck: { numRuns: 300 } })

  it.effect("of a file on disk, loaded through SessionStore.read, at every offset of one line", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => tempDir()),
      ({ dir }) =>
        Effect.gen(function*() {
          const bytes = Buffer.from(fixed.map((r) => JSON.stringify(r) + "\n").join(""), "utf8")
          const from = bytes.indexOf(0x0a, bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1) + 1)
          const to = bytes.indexOf(0x0a, from + 1)
          const path = Path.join(dir, "s.jsonl")
          for (let k = from; k <= to + 1; k++) {
            NFS.writeFileSync(path, bytes.subarray(0, k))
            const loaded = yield* readSession(path)
            const pure = decode(bytes.subarray(0, k))
            if (isSessionError(pure)) expect(Either.isLeft(loaded) && loaded.left.code).toBe(pure.code)
            else expect(Either.isRight(loaded) && [loaded.right.entries.map((e) => e.id), loaded.right.tail]).toEqual([idsOf(pure), pure.tail])
            expect(NFS.readFileSync(path).equals(bytes.subarray(0, k))).toBe(true)
          }
        }),
      ({ remove }) => Effect.sync(remove)
    ))
})

describe("(b) canonical files round-trip", () => {
  it.prop("LF, CRLF and no final newline decode to the same records, which encode back byte for byte", [sessionArb], ([records]) => {
    const bytes = canonical(records)
    const lf = decode(bytes)
    if (isSessionError(lf)) throw lf
    expect(lf.tail).toBe("none")
    expect([lf.header, ...lf.history.entries]).toEqual(records)
    expect(Buffer.from([lf.header, ...lf.history.entries].map(encodeLine).join(""), "utf8").equals(bytes)).toBe(true)
    const crlf = decode(Buffer.from(records.map((r) => JSON.stringify(r)).join("\r\n") + "\r\n", "utf8"))
    const bare = decode(bytes.subarray(0, bytes.length - 1))
    for (const other of [crlf, bare]) {
      if (isSessionError(other)) throw other
      expect([other.header, ...other.history.entries, other.tail]).toEqual([...records, "none"])
    }
    expect(oracle(bytes)).toEqual({ ok: true, records, tail: "none" })
  }, { fastCheck: { numRuns: 200 } })
})

// ---------------------------------------------------------------------------
// (c) corruption

type Mutation =
  | { readonly op: "flip"; readonly at: number; readonly bit: number }
  | { readonly op: "insert"; readonly at: number; readonly bytes: ReadonlyArray<number> }
  | { readonly op: "delete"; readonly at: number; readonly length: number }
  | { readonly op: "duplicateLine"; readonly line: number }
  | { readonly op: "swapLines"; readonly a: number; readonly b: number }
  | { readonly op: "invalidUtf8"; readonly at: number; readonly bytes: ReadonlyArray<number> }
  | { readonly op: "truncate"; readonly at: number }
  | { readonly op: "replaceId"; readonly from: number; readonly to: number }

const structural = [..."{}[]\":,\\ \n\r0-e.tfn"].map((c) => c.charCodeAt(0))
const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant("flip" as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({
    op: fc.constant("insert" as const),
    at: fc.nat(),
    bytes: fc.oneof(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 4 }), fc.array(fc.constantFrom(...structural), { minLength: 1, maxLength: 3 }))
  }),
  fc.record({ op: fc.constant("delete" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 8 }) }),
  fc.record({ op: fc.constant("duplicateLine" as const), line: fc.nat() }),
  fc.record({ op: fc.constant("swapLines" as const), a: fc.nat(), b: fc.nat() }),
  fc.record({
    op: fc.constant("invalidUtf8" as const),
    at: fc.nat(),
    bytes: fc.constantFrom([0xff], [0x80], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe4, 0xb8], [0xf0, 0x9f, 0x98])
  }),
  fc.record({ op: fc.constant("truncate" as const), at: fc.nat() }),
  fc.record({ op: fc.constant("replaceId" as const), from: fc.nat(), to: fc.nat() })
)

const splitKeep = (bytes: Buffer): Array<Buffer> => {
  const parts: Array<Buffer> = []
  let start = 0
  for (let at = bytes.indexOf(0x0a); at !== -1; at = bytes.indexOf(0x0a, at + 1)) {
    parts.push(bytes.subarray(start, at + 1))
    start = at + 1
  }
  if (start < bytes.length) parts.push(bytes.subarray(start))
  return parts
}

const mutate = (bytes: Buffer, m: Mutation): Buffer => {
  const n = bytes.length
  const pos = (at: number) => (n === 0 ? 0 : at % (n + 1))
  switch (m.op) {
    case "flip": {
      if (n === 0) return bytes
      const copy = Buffer.from(bytes)
      copy[m.at % n] = copy[m.at % n]! ^ (1 << m.bit)
      return copy
    }
    case "insert":
    case "invalidUtf8":
      return Buffer.concat([bytes.subarray(0, pos(m.at)), Buffer.from(m.bytes), bytes.subarray(pos(m.at))])
    case "delete":
      return Buffer.concat([bytes.subarray(0, pos(m.at)), bytes.subarray(pos(m.at) + m.length)])
    case "truncate":
      return bytes.subarray(0, pos(m.at))
    case "duplicateLine": {
      const lines = splitKeep(bytes)
      if (lines.length === 0) return bytes
      const i = m.line % lines.length
      return Buffer.concat([...lines.slice(0, i + 1), lines[i]!, ...lines.slice(i + 1)])
    }
    case "swapLines": {
      const lines = splitKeep(bytes)
      if (lines.length < 2) return bytes
      const a = m.a % lines.length
      const b = m.b % lines.length
      const swapped = [...lines]
      swapped[a] = lines[b]!
      swapped[b] = lines[a]!
      return Buffer.concat(swapped)
    }
    case "replaceId": {
      // Point one ID-shaped string at another: parents, duplicates and tool links change meaning, syntax stays valid.
      const text = bytes.toString("latin1")
      const found = [...text.matchAll(/"(entry-\d+|call-\d+)"/g)]
      if (found.length < 2) return bytes
      const at = found[m.from % found.length]!
      const to = found[m.to % found.length]![0]
      return Buffer.from(text.slice(0, at.index) + to + text.slice(at.index + at[0].length), "latin1")
    }
  }
}

describe("(c) corrupted files", () => {
  const tally = { runs: 0, accepted: 0, incomplete: 0, codes: new Map<string, number>() }

  it.prop(
    "never throw, always end, and are accepted exactly when the oracle accepts them, with its records",
    [sessionArb, fc.array(mutationArb, { minLength: 1, maxLength: 3 }), fc.constantFrom("\n", "\r\n")],
    ([records, mutations, eol]) => {
      let bytes: Buffer = Buffer.from(records.map((r) => JSON.stringify(r)).join(eol) + eol, "utf8")
      for (const m of mutations) bytes = mutate(bytes, m)
      const got = decode(bytes)
      const want = oracle(bytes)
      tally.runs++
      if (isSessionError(got)) {
        tally.codes.set(got.code, (tally.codes.get(got.code) ?? 0) + 1)
        if (want.ok) throw new Error(`the loader rejects (${got.message}) a file the oracle accepts`)
      } else {
        tally.accepted++
        if (got.tail === "incomplete") tally.incomplete++
        if (!want.ok) throw new Error(`the loader accepts a file the oracle rejects: ${want.why}`)
        expect([got.header, ...got.history.entries, got.tail]).toEqual([...want.records, want.tail])
      }
    },
    { fastCheck: { numRuns: 2_000 } }
  )

  it("the corruption reached both outcomes and many codes", () => {
    // Guards against a generator that only ever produces one kind of file.
    expect(tally.runs).toBeGreaterThanOrEqual(2_000)
    expect(tally.accepted).toBeGreaterThan(50)
    expect(tally.runs - tally.accepted).toBeGreaterThan(500)
    expect(tally.codes.size).toBeGreaterThanOrEqual(8)
    console.log(`(c) ${tally.runs} runs: ${tally.accepted} accepted (${tally.incomplete} with a cut tail); rejected by code:`, Object.fromEntries([...tally.codes].sort()))
  })

  it("the oracle itself rejects what the table calls corrupt (it can fail)", () => {
    const h = JSON.stringify({ type: "session", version: 1, id: "s", timestamp: TS })
    const e = (id: string, parentId: string | null, extra = "") =>
      `{"type":"entry","version":1,"id":"${id}","parentId":${JSON.stringify(parentId)},"timestamp":"${TS}","message":{"role":"user","id":"m","content":"x"${extra}}}`
    const rejected = [
      `${h}\nnot-json\n${e("a", null)}\n`,
      `${h}\n\n${e("a", null)}\n`,
      `${h}\n${e("a", null)}x\n`,
      `${h}\n${e("a", null)}\nnot-json`,
      `${h}\n${e("a", null, `,"content":"y"`)}\n`,
      `${h}\n${e("a", null, `,"\\u005f_proto__":{}`)}\n`,
      `${h}\n${e("a", "b")}\n${e("b", null)}\n`,
      `${h}\n${e("a", null)}\n${e("a", null)}\n`,
      `\uFEFF${h}\n`,
      ``
    ]
    for (const text of rejected) expect([text, oracle(Buffer.from(text)).ok]).toEqual([text, false])
    expect(oracle(Buffer.from(`${h}\n${e("a", null)}\n{"type":"entry","id":"cut`))).toMatchObject({ ok: true, tail: "incomplete" })
  })
})

/**
 * An independent reference decoder of a session file, written from SPEC A/B1-B4
 * only (it shares no code with the library): a strict recursive-descent JSON
 * parser that sees duplicate keys, `__proto__` and depth directly in the text,
 * its own viable-prefix recogniser, UTF-8 through TextDecoder, and a plain
 * ancestor walk for parents and tool links. The fuzzer compares the library
 * against it on every input.
 *
 * Where SPEC leaves the order of checks open, this follows the order the
 * library documents (file size, UTF-8, line lengths, the tail, the header,
 * the entry count, then line by line), so the codes can be compared too.
 * Readings taken from the library where SPEC is open: a final lone "\r"
 * after the last newline does not count towards the line cap (it may be half
 * a "\r\n"); a tail of whitespace alone is an incomplete tail (it is a viable
 * prefix, and bytes were skipped); a record of type "session" after the first
 * line is SESSION_INVALID_HEADER (a second header); a number in tool-call
 * arguments that is out of the range of a double (it would read as Infinity)
 * is SESSION_INVALID_MESSAGE. SPEC C4: a number literal whose value a double
 * cannot hold exactly is SESSION_INVALID_MESSAGE inside the message,
 * SESSION_INVALID_HEADER in the header and SESSION_INVALID_RECORD elsewhere,
 * judged once the record's shape and message are valid.
 */

export type OracleResult =
  | {
    readonly ok: true
    readonly header: Record<string, unknown>
    readonly entries: ReadonlyArray<Record<string, unknown>>
    readonly tail: "none" | "incomplete"
  }
  | { readonly ok: false; readonly code: string; readonly line?: number; readonly why: string }

/** The reference's answer for a session whose header is version 2, which it leaves to the library. */
export const VERSION_2 = "VERSION_2"

const MAX_LINE = 65_536
const MAX_FILE = 4_194_304
const MAX_ENTRIES = 4_096
const MAX_DEPTH = 64

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
const encoder = new TextEncoder()

class Reject {
  constructor(readonly why: string) {}
}

/** The text ended where a longer text could still be valid (partial mode only). */
const END = Symbol("end")

type Json = null | boolean | number | string | Array<Json> | { [key: string]: Json }

interface Frame {
  readonly obj?: { [key: string]: Json }
  readonly arr?: Array<Json>
  readonly seen?: Set<string>
  key?: string
}

/**
 * Strict RFC 8259 over a string, iterative (an explicit stack, so no input can
 * overflow the call stack). One top-level object with optional whitespace
 * around it. `partial`: the end of the text inside the object means "viable
 * prefix" (END) instead of an error. `recordRules`: the rules SPEC B3 adds to
 * the grammar for a line — no duplicate key, no `__proto__` key, containers
 * nested at most MAX_DEPTH deep (the record is depth 1).
 */
/** Where the last `parseDocument` with record rules met its first inexact number literal, if it did. */
let inexact: { readonly inMessage: boolean } | undefined

/** A decimal literal as an exact rational: digits × 10^exponent. */
const rational = (literal: string): { readonly digits: bigint; readonly exponent: number } => {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)!
  const fraction = m[3] ?? ""
  const digits = BigInt(`${m[1]}${m[2]}${fraction}`)
  return { digits, exponent: Number(m[4] ?? "0") - fraction.length }
}

/** Whether the literal's value equals, as exact rationals, the value JSON.stringify writes for the double it reads as. */
const exactLiteral = (literal: string, value: number): boolean => {
  if (!Number.isFinite(value)) return true // out of range: judged separately
  // A literal that reads as zero is exact only when its digits are all zeros (1e-400 reads as 0).
  if (value === 0) return !/[1-9]/.test(literal.split(/[eE]/)[0]!)
  const a = rational(literal)
  const b = rational(JSON.stringify(value).replace("e+", "e"))
  // Exponents this far apart cannot hold equal non-zero values of a few hundred digits.
  if (Math.abs(a.exponent - b.exponent) > 1000) return false
  const low = Math.min(a.exponent, b.exponent)
  return a.digits * 10n ** BigInt(a.exponent - low) === b.digits * 10n ** BigInt(b.exponent - low)
}

const parseDocument = (s: string, partial: boolean, recordRules: boolean): { [key: string]: Json } => {
  if (recordRules) inexact = undefined
  let i = 0
  const n = s.length
  const eof = (): never => {
    if (partial) throw END
    throw new Reject("unexpected end")
  }
  const ws = () => {
    while (i < n) {
      const c = s.charCodeAt(i)
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++
      else return
    }
  }
  const simple: Record<string, string> = { "\"": "\"", "\\": "\\", "/": "/", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t" }
  const string = (): string => {
    i++
    let out = ""
    for (;;) {
      if (i >= n) eof()
      const c = s.charCodeAt(i++)
      if (c === 0x22) return out
      if (c < 0x20) throw new Reject("control character in a string")
      if (c !== 0x5c) {
        out += String.fromCharCode(c)
        continue
      }
      if (i >= n) eof()
      const e = s[i++]!
      if (e in simple) out += simple[e]
      else if (e === "u") {
        let code = 0
        for (let k = 0; k < 4; k++) {
          if (i >= n) eof()
          const h = s[i++]!
          if (!/^[0-9a-fA-F]$/.test(h)) throw new Reject("bad \\u escape")
          code = code * 16 + parseInt(h, 16)
        }
        out += String.fromCharCode(code)
      } else throw new Reject("bad escape")
    }
  }
  const isDigit = () => i < n && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39
  const number = (): number => {
    const start = i
    if (s.charCodeAt(i) === 0x2d) i++
    if (i >= n) eof()
    if (s.charCodeAt(i) === 0x30) i++
    else if (isDigit()) while (isDigit()) i++
    else throw new Reject("bad number")
    if (s.charCodeAt(i) === 0x2e) {
      i++
      if (i >= n) eof()
      if (!isDigit()) throw new Reject("bad fraction")
      while (isDigit()) i++
    }
    if (s.charCodeAt(i) === 0x65 || s.charCodeAt(i) === 0x45) {
      i++
      if (i >= n) eof()
      if (s.charCodeAt(i) === 0x2b || s.charCodeAt(i) === 0x2d) i++
      if (i >= n) eof()
      if (!isDigit()) throw new Reject("bad exponent")
      while (isDigit()) i++
    }
    // A number that runs to the end of a partial text may go on: the object is not closed anyway.
    if (i >= n) eof()
    const literal = s.slice(start, i)
    const value = Number(literal)
    if (recordRules && inexact === undefined && !exactLiteral(literal, value)) {
      inexact = { inMessage: stack.length >= 2 && stack[0]!.key === "message" }
    }
    return value
  }
  const literal = (): Json => {
    for (const [word, v] of [["true", true], ["false", false], ["null", null]] as const) {
      if (s[i] === word[0]) {
        for (let k = 0; k < word.length; k++) {
          if (i >= n) eof()
          if (s[i] !== word[k]) throw new Reject("bad literal")
          i++
        }
        return v
      }
    }
    throw new Reject(`unexpected character at ${i}`)
  }

  ws()
  if (i >= n) eof()
  if (s[i] !== "{") throw new Reject("not an object")
  const stack: Array<Frame> = []
  let root: { [key: string]: Json } | undefined
  // States: "value" (a value is due), "first" (after "{": a key or "}"), "key" (after "," in an object),
  // "afterKey" (":" due), "firstItem" (after "[": a value or "]"), "after" ("," or a closer due).
  type State = "value" | "first" | "key" | "afterKey" | "firstItem" | "after"
  let state = "value" as State
  const open = (c: string) => {
    if (recordRules && stack.length + 1 > MAX_DEPTH) throw new Reject("too deep")
    i++
    if (c === "{") {
      const obj: { [key: string]: Json } = Object.create(null)
      attach(obj, false)
      stack.push({ obj, seen: new Set() })
      state = "first"
    } else {
      const arr: Array<Json> = []
      attach(arr, false)
      stack.push({ arr })
      state = "firstItem"
    }
  }
  const attach = (v: Json, scalar: boolean) => {
    const top = stack[stack.length - 1]
    if (top === undefined) root = v as { [key: string]: Json }
    else if (top.arr !== undefined) top.arr.push(v)
    else top.obj![top.key!] = v
    if (scalar) state = "after"
  }
  while (root === undefined || stack.length > 0) {
    ws()
    if (i >= n) eof()
    const c = s[i]!
    switch (state) {
      case "value":
      case "firstItem":
        if (state === "firstItem" && c === "]") {
          i++
          stack.pop()
          state = "after"
        } else if (c === "{" || c === "[") open(c)
        else if (c === "\"") attach(string(), true)
        else if (c === "-" || (c >= "0" && c <= "9")) attach(number(), true)
        else attach(literal(), true)
        break
      case "first":
      case "key":
        if (state === "first" && c === "}") {
          i++
          stack.pop()
          state = "after"
        } else if (c === "\"") {
          const key = string()
          const top = stack[stack.length - 1]!
          if (recordRules && key === "__proto__") throw new Reject("__proto__ key")
          if (recordRules && top.seen!.has(key)) throw new Reject(`duplicate key ${key}`)
          top.seen!.add(key)
          top.key = key
          state = "afterKey"
        } else throw new Reject("expected a key")
        break
      case "afterKey":
        if (c !== ":") throw new Reject("expected :")
        i++
        state = "value"
        break
      case "after": {
        const top = stack[stack.length - 1]!
        i++
        if (c === ",") state = top.arr !== undefined ? "value" : "key"
        else if (c === (top.arr !== undefined ? "]" : "}")) stack.pop()
        else throw new Reject(`expected , or a closer at ${i - 1}`)
        break
      }
    }
  }
  ws()
  if (i < n) throw new Reject(`trailing text at ${i}`)
  return root
}

const parseLine = (text: string): { [key: string]: Json } => parseDocument(text, false, true)

/**
 * "complete" (one object, whitespace around), "incomplete" (a viable prefix) or
 * "invalid". Viability is RFC 8259 grammar only (SPEC B3): depth, duplicate and
 * `__proto__` keys are rules for a line, checked once the tail is complete.
 */
const classifyTail = (text: string): "complete" | "incomplete" | "invalid" => {
  try {
    parseDocument(text, true, false)
    return "complete"
  } catch (e) {
    if (e === END) return "incomplete"
    if (e instanceof Reject) return "invalid"
    throw e
  }
}

/** Whether every number in `v` is finite (1e400 parses to Infinity, which no JSON writer can write back). */
const finiteNumbers = (v: Json): boolean => {
  const stack: Array<Json> = [v]
  while (stack.length > 0) {
    const x = stack.pop()!
    if (typeof x === "number" && !Number.isFinite(x)) return false
    if (Array.isArray(x)) stack.push(...x)
    else if (typeof x === "object" && x !== null) for (const k of Object.keys(x)) stack.push(x[k]!)
  }
  return true
}

const keysAre = (o: object, keys: ReadonlyArray<string>): boolean => {
  const own = Object.keys(o)
  return own.length === keys.length && keys.every((k) => own.includes(k))
}
const isObject = (v: unknown): v is { [key: string]: Json } => typeof v === "object" && v !== null && !Array.isArray(v)
const isId = (v: unknown): v is string => typeof v === "string" && v.length > 0
const isTimestamp = (v: unknown): boolean => {
  if (typeof v !== "string" || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(v)) return false
  const d = new Date(v)
  return !Number.isNaN(d.getTime()) && d.toISOString() === v
}

const fail = (code: string, why: string, line?: number): OracleResult =>
  line === undefined ? { ok: false, code, why } : { ok: false, code, line, why }

const checkMessage = (m: unknown): string | undefined => {
  if (!isObject(m)) return "message is not an object"
  switch (m["role"]) {
    case "user":
      if (!keysAre(m, ["role", "id", "content"])) return "user keys"
      if (!isId(m["id"]) || typeof m["content"] !== "string") return "user types"
      return undefined
    case "assistant": {
      if (!keysAre(m, ["role", "id", "content", "toolCalls"])) return "assistant keys"
      if (!isId(m["id"]) || typeof m["content"] !== "string" || !Array.isArray(m["toolCalls"])) return "assistant types"
      const ids = new Set<string>()
      for (const c of m["toolCalls"]) {
        if (!isObject(c) || !keysAre(c, ["id", "name", "arguments"])) return "tool call keys"
        if (!isId(c["id"]) || !isId(c["name"]) || !isObject(c["arguments"])) return "tool call types"
        if (ids.has(c["id"])) return "tool call ID repeats"
        ids.add(c["id"])
      }
      for (const c of m["toolCalls"] as Array<{ [key: string]: Json }>) if (!finiteNumbers(c["arguments"]!)) return "a number out of range"
      return undefined
    }
    case "tool":
      if (!keysAre(m, ["role", "id", "toolCallId", "toolName", "content", "isError"])) return "tool keys"
      if (!isId(m["id"]) || !isId(m["toolCallId"]) || typeof m["toolName"] !== "string" || typeof m["content"] !== "string" || typeof m["isError"] !== "boolean") {
        return "tool types"
      }
      return undefined
    default:
      return "unknown role"
  }
}

/** Rebuilds a value as plain data in the canonical key order of SPEC B1/B2 (for comparison). */
const canonicalMessage = (m: { [key: string]: Json }): Record<string, unknown> => {
  const order: Record<string, ReadonlyArray<string>> = {
    user: ["role", "id", "content"],
    assistant: ["role", "id", "content", "toolCalls"],
    tool: ["role", "id", "toolCallId", "toolName", "content", "isError"]
  }
  const out: Record<string, unknown> = {}
  for (const k of order[m["role"] as string]!) {
    out[k] = k === "toolCalls"
      ? (m[k] as Array<{ [key: string]: Json }>).map((c) => ({ id: c["id"], name: c["name"], arguments: plain(c["arguments"]!) }))
      : m[k]
  }
  return out
}

const plain = (v: Json): unknown => {
  if (Array.isArray(v)) return v.map(plain)
  if (isObject(v)) {
    const out: Record<string, unknown> = {}
    for (const k of Object.keys(v)) out[k] = plain(v[k]!)
    return out
  }
  return v
}

/** The first line's own cap under version 2 (its newline included): a longer one is no version-2 header. */
const MAX_HEAD_V2 = 1_048_577

/**
 * Whether the first line is a version-2 header. The library reads such a file under version 2's
 * caps (a line up to 1 MiB, a file up to 256 MiB), so version 1's caps, which this reference
 * applies to everything else, must not judge it first.
 */
const declaresVersion2 = (bytes: Uint8Array): boolean => {
  const end = bytes.indexOf(0x0a)
  const head = bytes.subarray(0, end === -1 ? bytes.length : end)
  if (head.length > MAX_HEAD_V2) return false
  try {
    const text = utf8.decode(head)
    const header = parseLine(text.endsWith("\r") ? text.slice(0, -1) : text)
    return header["type"] === "session" && header["version"] === 2
  } catch {
    return false
  }
}

export const referenceDecode = (bytes: Uint8Array): OracleResult => {
  if (declaresVersion2(bytes)) return fail(VERSION_2, "a version-2 header", 1)
  if (bytes.length > MAX_FILE) return fail("SESSION_FILE_TOO_LARGE", "file size")
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return fail("SESSION_INVALID_UTF8", "utf-8")
  }
  const segments = text.split("\n")
  const tailText = segments.pop()!
  const lines = segments.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l))
  for (let i = 0; i < lines.length; i++) {
    if (encoder.encode(lines[i]!).length > MAX_LINE) return fail("SESSION_LINE_TOO_LONG", "line length", i + 1)
  }
  const tailBytes = encoder.encode(tailText.endsWith("\r") ? tailText.slice(0, -1) : tailText).length
  if (tailBytes > MAX_LINE) return fail("SESSION_LINE_TOO_LONG", "tail length", lines.length + 1)
  let tail: "none" | "incomplete" = "none"
  if (tailText !== "") {
    const state = classifyTail(tailText)
    if (state === "invalid") return fail("SESSION_INVALID_JSON", "tail is no prefix of an object", lines.length + 1)
    if (state === "complete") lines.push(tailText)
    else tail = "incomplete"
  }
  if (lines.length === 0) return fail("SESSION_INVALID_HEADER", "no header", 1)
  if (lines.length - 1 > MAX_ENTRIES) return fail("SESSION_TOO_MANY_ENTRIES", "entries")

  const parsed: Array<{ [key: string]: Json }> = []
  const parseAt = (i: number): { [key: string]: Json } | OracleResult => {
    try {
      return parseLine(lines[i]!)
    } catch (e) {
      if (e instanceof Reject) return fail("SESSION_INVALID_JSON", e.why, i + 1)
      throw e
    }
  }
  const h = parseAt(0)
  if ("ok" in h && (h.ok === false)) return h as OracleResult
  const headerInexact = inexact
  const header = h as { [key: string]: Json }
  if (header["type"] === "session" && header["version"] === 2) {
    // Version 2 is a format of its own, which this reference does not model: the judge only asks
    // that the library answer it with a typed error or a version-2 session.
    return fail(VERSION_2, "a version-2 header", 1)
  }
  if (header["type"] === "session" && typeof header["version"] === "number" && header["version"] !== 1) {
    return fail("SESSION_UNSUPPORTED_VERSION", "header version", 1)
  }
  if (
    !keysAre(header, ["type", "version", "id", "timestamp"]) || header["type"] !== "session" || header["version"] !== 1 ||
    !isId(header["id"]) || !isTimestamp(header["timestamp"])
  ) {
    return fail("SESSION_INVALID_HEADER", "header shape", 1)
  }
  if (headerInexact !== undefined) return fail("SESSION_INVALID_HEADER", "an inexact number", 1)
  parsed.push(header)

  const entries: Array<Record<string, unknown>> = []
  const byId = new Map<string, number>()
  for (let i = 1; i < lines.length; i++) {
    const line = i + 1
    const r = parseAt(i)
    if ("ok" in r && r.ok === false) return r as OracleResult
    const lineInexact = inexact
    const rec = r as { [key: string]: Json }
    if (rec["type"] === "session") return fail("SESSION_INVALID_HEADER", "a second header", line)
    if (rec["type"] === "entry" && typeof rec["version"] === "number" && rec["version"] !== 1) {
      return fail("SESSION_UNSUPPORTED_VERSION", "entry version", line)
    }
    if (
      !keysAre(rec, ["type", "version", "id", "parentId", "timestamp", "message"]) || rec["type"] !== "entry" ||
      rec["version"] !== 1 || !isId(rec["id"]) || !(rec["parentId"] === null || isId(rec["parentId"])) ||
      !isTimestamp(rec["timestamp"])
    ) {
      return fail("SESSION_INVALID_RECORD", "entry shape", line)
    }
    const problem = checkMessage(rec["message"])
    if (problem !== undefined) return fail("SESSION_INVALID_MESSAGE", problem, line)
    if (lineInexact !== undefined) {
      return fail(lineInexact.inMessage ? "SESSION_INVALID_MESSAGE" : "SESSION_INVALID_RECORD", "an inexact number", line)
    }
    const id = rec["id"] as string
    if (byId.has(id)) return fail("SESSION_DUPLICATE_ID", id, line)
    const parentId = rec["parentId"] as string | null
    if (parentId !== null && !byId.has(parentId)) return fail("SESSION_UNKNOWN_PARENT", String(parentId), line)
    // Strict ancestors, nearest first.
    const ancestors: Array<Record<string, unknown>> = []
    for (let p = parentId; p !== null; ) {
      const e = entries[byId.get(p)!]!
      ancestors.push(e)
      p = e["parentId"] as string | null
    }
    const message = rec["message"] as { [key: string]: Json }
    const callsOnBranch = (callId: string) =>
      ancestors.filter((a) => {
        const m = a["message"] as Record<string, unknown>
        return m["role"] === "assistant" && (m["toolCalls"] as Array<{ id: string }>).some((c) => c.id === callId)
      })
    if (message["role"] === "assistant") {
      for (const c of message["toolCalls"] as Array<{ [key: string]: Json }>) {
        if (callsOnBranch(c["id"] as string).length > 0) return fail("SESSION_TOOL_LINK", "call ID reused on the branch", line)
      }
    } else if (message["role"] === "tool") {
      const callId = message["toolCallId"] as string
      const callers = callsOnBranch(callId)
      if (callers.length === 0) return fail("SESSION_TOOL_LINK", "no such call on the branch", line)
      const call = ((callers[0]!["message"] as Record<string, unknown>)["toolCalls"] as Array<{ id: string; name: string }>).find((c) => c.id === callId)!
      if (call.name !== message["toolName"]) return fail("SESSION_TOOL_LINK", "tool name differs", line)
      const answered = ancestors.some((a) => {
        const m = a["message"] as Record<string, unknown>
        return m["role"] === "tool" && m["toolCallId"] === callId
      })
      if (answered) return fail("SESSION_TOOL_LINK", "call answered twice on the branch", line)
    }
    byId.set(id, entries.length)
    entries.push({ type: "entry", version: 1, id, parentId, timestamp: rec["timestamp"], message: canonicalMessage(message) })
  }
  return {
    ok: true,
    header: { type: "session", version: 1, id: header["id"], timestamp: header["timestamp"] },
    entries,
    tail
  }
}

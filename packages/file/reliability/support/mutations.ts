/**
 * Inputs for the loader fuzzer: valid sessions (canonical and valid
 * non-canonical spellings) and mutations of them. Everything is driven by a
 * seeded generator, so a failing input can be regenerated from its seed.
 */

export type Rng = () => number

/** mulberry32: small, fast, good enough to spread mutations. */
export const rngFrom = (seed: number): Rng => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const int = (rng: Rng, n: number) => Math.floor(rng() * n)
const pick = <A>(rng: Rng, xs: ReadonlyArray<A>): A => xs[int(rng, xs.length)]!

type Rec = Record<string, unknown>

const BASE_MS = Date.UTC(2026, 0, 2, 3, 4, 5, 6)
const ts = (i: number) => new Date(BASE_MS + i * 1_001).toISOString()

const ALPHABET = ["a", "b", "z", " ", "é", "中", "😀", "\"", "\\", "/", "\n", "\t", "\u0000", "\u001f", "\u2028", "\ud7ff", "\ue000", "{", "}", "[", "]", ":", ","]
const text = (rng: Rng, max: number) => {
  let s = ""
  const n = int(rng, max)
  for (let i = 0; i < n; i++) s += rng() < 0.6 ? String.fromCharCode(0x61 + int(rng, 26)) : pick(rng, ALPHABET)
  return s
}

const randomJson = (rng: Rng, depth: number): unknown => {
  const r = rng()
  if (depth <= 0 || r < 0.45) {
    return pick(rng, [() => null, () => true, () => false, () => int(rng, 1000) - 500, () => rng() * 1e6, () => text(rng, 8), () => -0.5, () => 1e21])()
  }
  if (r < 0.7) return Array.from({ length: int(rng, 4) }, () => randomJson(rng, depth - 1))
  const o: Rec = {}
  for (let i = int(rng, 4); i > 0; i--) o[pick(rng, ["a", "b", "constructor", "prototype", "toString", "k" + i, "é", ""])] = randomJson(rng, depth - 1)
  return o
}

export interface Session {
  readonly header: Rec
  readonly entries: ReadonlyArray<Rec>
}

/** A valid session: a random tree of user, assistant (with tool calls) and tool entries. */
export const randomSession = (rng: Rng, size: number, tag = "s"): Session => {
  const header = { type: "session", version: 1, id: `${tag}-${int(rng, 1e6)}`, timestamp: ts(0) }
  const entries: Array<Rec> = []
  let callNo = 0
  for (let i = 0; i < size; i++) {
    const parentIndex = entries.length === 0 || rng() < 0.1 ? -1 : rng() < 0.6 ? entries.length - 1 : int(rng, entries.length)
    const parentId = parentIndex < 0 ? null : (entries[parentIndex]!["id"] as string)
    // Calls on the branch not yet answered on it: what a tool entry may answer.
    const branch: Array<Rec> = []
    for (let p = parentIndex; p >= 0; ) {
      const e = entries[p]!
      branch.push(e)
      const pid = e["parentId"] as string | null
      p = pid === null ? -1 : entries.findIndex((x) => x["id"] === pid)
    }
    const answered = new Set(branch.flatMap((e) => ((e["message"] as Rec)["role"] === "tool" ? [(e["message"] as Rec)["toolCallId"] as string] : [])))
    const open = branch.flatMap((e) => {
      const m = e["message"] as Rec
      return m["role"] === "assistant" ? (m["toolCalls"] as Array<Rec>).filter((c) => !answered.has(c["id"] as string)) : []
    })
    const r = rng()
    let message: Rec
    if (r < 0.3 && open.length > 0) {
      const call = pick(rng, open)
      message = { role: "tool", id: `msg-${i}`, toolCallId: call["id"], toolName: call["name"], content: text(rng, 30), isError: rng() < 0.3 }
    } else if (r < 0.6) {
      const calls = Array.from({ length: int(rng, 4) }, () => ({ id: `call-${++callNo}`, name: pick(rng, ["ls", "read", "é"]), arguments: (randomJson(rng, 3) as Rec | null) ?? {} }))
      for (const c of calls) if (typeof c.arguments !== "object" || Array.isArray(c.arguments)) c.arguments = { v: c.arguments }
      message = { role: "assistant", id: `msg-${i}`, content: text(rng, 30), toolCalls: calls }
    } else {
      message = { role: "user", id: `msg-${i}`, content: text(rng, 60) }
    }
    entries.push({ type: "entry", version: 1, id: `entry-${i}`, parentId, timestamp: ts(i + 1), message })
  }
  return { header, entries }
}

export const canonicalLines = (s: Session): Array<string> => [JSON.stringify(s.header), ...s.entries.map((e) => JSON.stringify(e))]

/** The same JSON value spelled differently: whitespace, key order, escapes. Still valid. */
export const respell = (rng: Rng, value: unknown): string => {
  const w = () => pick(rng, ["", "", " ", "\t", "  "])
  const str = (s: string) => {
    let out = "\""
    for (const ch of s) {
      const code = ch.charCodeAt(0)
      if (ch === "\"" || ch === "\\") out += "\\" + ch
      else if (code < 0x20 || rng() < 0.05) {
        for (let k = 0; k < ch.length; k++) {
          const hex = ch.charCodeAt(k).toString(16).padStart(4, "0")
          out += "\\u" + (rng() < 0.5 ? hex : hex.toUpperCase())
        }
      } else if (ch === "/" && rng() < 0.5) out += "\\/"
      else out += ch
    }
    return out + "\""
  }
  const go = (v: unknown): string => {
    if (v === null || typeof v !== "object") return typeof v === "string" ? str(v) : JSON.stringify(v)
    if (Array.isArray(v)) return "[" + w() + v.map((x) => go(x)).join(w() + "," + w()) + w() + "]"
    const keys = Object.keys(v)
    if (rng() < 0.3) keys.sort(() => rng() - 0.5)
    return "{" + w() + keys.map((k) => str(k) + w() + ":" + w() + go((v as Rec)[k])).join(w() + "," + w()) + w() + "}"
  }
  return w() + go(value) + w()
}

export interface Input {
  readonly label: string
  readonly bytes: Uint8Array
}

const enc = new TextEncoder()
export const bytesOf = (s: string): Uint8Array => enc.encode(s)
const join = (lines: ReadonlyArray<string>, eol = "\n", final = true) => lines.join(eol) + (final && lines.length > 0 ? eol : "")

/** A user entry line of exactly `bytes` bytes (UTF-8, without terminator). */
export const lineOfBytes = (bytes: number, id: string, parentId: string | null): string => {
  const empty = JSON.stringify({ type: "entry", version: 1, id, parentId, timestamp: ts(999), message: { role: "user", id: "big", content: "" } })
  const room = bytes - Buffer.byteLength(empty)
  const twoByte = Math.min(Math.max(0, room >> 2), 1000)
  const content = "é".repeat(twoByte) + "a".repeat(Math.max(0, room - 2 * twoByte))
  return JSON.stringify({ type: "entry", version: 1, id, parentId, timestamp: ts(999), message: { role: "user", id: "big", content } })
}

const INVALID_UTF8: ReadonlyArray<ReadonlyArray<number>> = [
  [0x80], [0xbf], [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0x80], [0xe0, 0x9f, 0xbf], [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf],
  [0xf0, 0x8f, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xfe], [0xff], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3]
]

const splice = (bytes: Uint8Array, at: number, count: number, insert: ArrayLike<number>): Uint8Array => {
  at = Math.min(at, bytes.length)
  const remove = Math.min(count, bytes.length - at)
  const out = new Uint8Array(bytes.length - remove + insert.length)
  out.set(bytes.subarray(0, at))
  out.set(insert, at)
  out.set(bytes.subarray(at + remove), at + insert.length)
  return out
}

/** Splits a file's text into lines (dropping a final empty segment) and re-joins with "\n". */
const linesOf = (t: string) => {
  const parts = t.split("\n")
  if (parts[parts.length - 1] === "") parts.pop()
  return parts
}
const dec = new TextDecoder()

/** Mutations of one input; each returns a new input. */
export const mutations: ReadonlyArray<readonly [string, number, (rng: Rng, bytes: Uint8Array) => Uint8Array]> = [
  ["flip-bit", 6, (rng, b) => {
    if (b.length === 0) return b
    const out = b.slice()
    out[int(rng, b.length)]! ^= 1 << int(rng, 8)
    return out
  }],
  ["set-byte", 6, (rng, b) => {
    if (b.length === 0) return b
    const out = b.slice()
    out[int(rng, b.length)] = rng() < 0.5 ? int(rng, 256) : pick(rng, [...bytesOf("{}[]:,\"\\ 0-+.eEtfnu\r\n\t")])
    return out
  }],
  ["insert-token", 6, (rng, b) => splice(b, int(rng, b.length + 1), 0, bytesOf(pick(rng, ["{", "}", "[", "]", ":", ",", "\"", "\\", "0", "-", "1e", ".", "true", "nul", "\u0000", "\u001f", "\u007f", " ", "\t", "\r", "\n", "é", "\ufeff", "\\u", "\\ud800"])))],
  ["delete-bytes", 6, (rng, b) => (b.length === 0 ? b : splice(b, int(rng, b.length), 1 + int(rng, 3), []))],
  ["invalid-utf8", 5, (rng, b) => splice(b, rng() < 0.2 ? b.length : int(rng, b.length + 1), 0, pick(rng, INVALID_UTF8))],
  ["bom", 3, (rng, b) => {
    // At the start of the file, or at the start of a random line.
    const at = rng() < 0.5 ? 0 : Buffer.from(b.buffer, b.byteOffset, b.length).indexOf(0x0a, int(rng, b.length)) + 1
    return splice(b, at, 0, [0xef, 0xbb, 0xbf])
  }],
  ["crlf-mix", 5, (rng, b) => {
    const t = dec.decode(b)
    const mode = int(rng, 6)
    if (mode === 0) return bytesOf(t.replace(/\n/g, () => (rng() < 0.5 ? "\r\n" : "\n")))
    if (mode === 1) return bytesOf(t.replace(/\n/g, () => (rng() < 0.2 ? "\r" : "\n")))
    if (mode === 2) return bytesOf(t.replace(/\n/g, () => (rng() < 0.2 ? "\r\r\n" : "\n")))
    if (mode === 3) return bytesOf(t.replace(/\n/g, () => (rng() < 0.2 ? "\n\r" : "\n")))
    if (mode === 4) return bytesOf(t.endsWith("\n") ? t.slice(0, -1) : t + "\r")
    return bytesOf(t + "\r\n")
  }],
  ["line-ops", 8, (rng, b) => {
    const t = dec.decode(b)
    const lines = linesOf(t)
    if (lines.length === 0) return bytesOf("\n")
    const i = int(rng, lines.length)
    const j = int(rng, lines.length)
    switch (int(rng, 7)) {
      case 0: lines.splice(i, 0, lines[i]!); break
      case 1: lines.splice(i, 1); break
      case 2: [lines[i], lines[j]] = [lines[j]!, lines[i]!]; break
      case 3: lines.splice(i, 0, ""); break
      case 4: lines.splice(i, 0, pick(rng, [" ", "\t", "\r"])); break
      case 5: lines.push(lines[i]!); break
      default: lines.splice(i, 1, lines[i]! + lines[j]!)
    }
    return bytesOf(join(lines, "\n", t.endsWith("\n")))
  }],
  ["oversized-line", 2, (rng, b) => {
    const t = dec.decode(b)
    const lines = linesOf(t)
    const size = pick(rng, [65_535, 65_536, 65_537, 65_538, 70_000])
    const last = lines.length > 1 ? (tryParse(lines[lines.length - 1]!)?.["id"] as string | undefined) ?? null : null
    const line = lineOfBytes(size, `big-${size}`, typeof last === "string" ? last : null)
    const where = int(rng, 4)
    if (where === 0) return bytesOf(join([...lines, line]))
    if (where === 1) return bytesOf(join(lines) + line) // the last line without a newline
    if (where === 2) return bytesOf(join(lines) + line.slice(0, line.length - 10)) // a long incomplete tail
    lines.splice(Math.min(1, lines.length), 0, line)
    return bytesOf(join(lines))
  }],
  ["record-field", 12, (rng, b) => mutateRecord(rng, b, (rec) => mutateField(rng, rec))],
  ["parent-swap", 6, (rng, b) => mutateRecord(rng, b, (rec, ids) => {
    rec["parentId"] = pick(rng, [null, "nope", ids[0] ?? "x", rec["id"], ids[ids.length - 1] ?? "y", pick(rng, ids.length > 0 ? ids : ["z"])])
  })],
  ["text-injection", 6, (rng, b) => {
    const t = dec.decode(b)
    const lines = linesOf(t)
    if (lines.length === 0) return b
    const i = int(rng, lines.length)
    const l = lines[i]!
    const inj = pick(rng, [
      (s: string) => s.replace(/^\{/, "{\"id\":\"dup\","),
      (s: string) => s.replace("\"message\":{", "\"message\":{\"content\":\"dup\","),
      (s: string) => s.replace(/^\{/, "{\"__proto__\":{\"polluted\":1},"),
      (s: string) => s.replace(/^\{/, "{\"\\u005f_proto__\":{\"polluted\":1},"),
      (s: string) => s.replace("\"arguments\":{", "\"arguments\":{\"__proto__\":{\"polluted\":1},"),
      (s: string) => s.replace("\"arguments\":{", "\"arguments\":{\"__pro\\u0074o__\":1,"),
      (s: string) => s.replace("\"arguments\":{", "\"arguments\":{\"constructor\":{\"prototype\":{\"polluted\":1}},"),
      (s: string) => s + pick(rng, ["x", "{}", " ,", "]", "}", " {\"a\":1}", "\u0000", " "]),
      (s: string) => s.replace(":", pick(rng, ["=", "::", " : ", ":\u0000"])),
      (s: string) => s.replace(/"(\w)/, "'$1"),
      (s: string) => s.replace(/(\d)/, "0$1"),
      (s: string) => s.replace("1", pick(rng, ["1.0", "1e0", "01", "+1", "0x1", "1.", ".1", "-1", "10"]))
    ])
    lines[i] = inj(l)
    return bytesOf(join(lines, "\n", t.endsWith("\n")))
  }],
  ["deep-nesting", 2, (rng, b) => {
    const t = dec.decode(b)
    const lines = linesOf(t)
    const depth = pick(rng, [58, 59, 60, 61, 62, 63, 64, 65, 100, 5000])
    const open = rng() < 0.5 ? "[" : "{\"k\":"
    const close = open === "[" ? "]" : "}"
    // arguments sits at depth 5 (record 1, message 2, toolCalls 3, call 4): a value inside nests further.
    const nested = open.repeat(depth) + "1" + close.repeat(depth)
    const parent = lines.length > 1 ? (tryParse(lines[lines.length - 1]!)?.["id"] as string | undefined) ?? null : null
    const line = `{"type":"entry","version":1,"id":"deep","parentId":${JSON.stringify(parent)},"timestamp":"${ts(5)}","message":{"role":"assistant","id":"d","content":"","toolCalls":[{"id":"dc","name":"n","arguments":{"v":${nested}}}]}}`
    if (rng() < 0.3) return bytesOf(join(lines) + line.slice(0, 120 + depth * open.length)) // an incomplete, deep tail
    return bytesOf(join([...lines, line]))
  }],
  ["generated-line", 5, (rng, b) => {
    const t = dec.decode(b)
    const lines = linesOf(t)
    const value = rng() < 0.5 ? randomJson(rng, 4) : randomSession(rng, 2).entries[int(rng, 2)]!
    const line = rng() < 0.5 ? JSON.stringify(value) ?? "null" : respell(rng, value)
    lines.splice(int(rng, lines.length + 1), 0, line)
    return bytesOf(join(lines, "\n", rng() < 0.8))
  }],
  ["truncate", 6, (rng, b) => b.subarray(0, int(rng, b.length + 1))]
]

const tryParse = (line: string): Rec | undefined => {
  try {
    const v = JSON.parse(line)
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : undefined
  } catch {
    return undefined
  }
}

/** Parses a random line as JSON, changes it and writes it back (canonical spelling). */
const mutateRecord = (rng: Rng, b: Uint8Array, change: (rec: Rec, ids: ReadonlyArray<string>) => void): Uint8Array => {
  const t = dec.decode(b)
  const lines = linesOf(t)
  if (lines.length === 0) return b
  const i = int(rng, lines.length)
  const rec = tryParse(lines[i]!.replace(/\r$/, ""))
  if (rec === undefined) return b
  const ids = lines.slice(1).map((l) => tryParse(l)?.["id"]).filter((x): x is string => typeof x === "string")
  change(rec, ids)
  try {
    lines[i] = JSON.stringify(rec)
  } catch {
    return b // nested too deep for JSON.stringify: leave this input as it was
  }
  return bytesOf(join(lines, "\n", t.endsWith("\n")))
}

/** Changes one field somewhere in a record: removed, added, retyped, or set to a near-miss value. */
const mutateField = (rng: Rng, rec: Rec): void => {
  // Collect the containers of the record with their keys.
  const spots: Array<{ readonly obj: Rec | Array<unknown>; readonly key: string | number }> = []
  const walk = (v: unknown, depth: number) => {
    if (depth > 80) return
    if (Array.isArray(v)) v.forEach((x, k) => (spots.push({ obj: v, key: k }), walk(x, depth + 1)))
    else if (typeof v === "object" && v !== null) {
      for (const k of Object.keys(v)) {
        spots.push({ obj: v as Rec, key: k })
        walk((v as Rec)[k], depth + 1)
      }
    }
  }
  walk(rec, 0)
  if (spots.length === 0) return
  const { key, obj } = pick(rng, spots)
  const nearMiss: ReadonlyArray<unknown> = [
    "", 0, 1, 2, -1, 1.5, "1", true, false, null, [], {}, "entry", "session", "user", "assistant", "tool", "x",
    "2026-01-02T03:04:05Z", "2026-01-02T03:04:05.006", "2026-02-30T03:04:05.006Z", "+012026-01-02T03:04:05.006Z",
    "2026-01-02t03:04:05.006z", "2026-01-02T03:04:05.006+00:00", "2026-01-02T24:00:00.000Z", "0000-01-01T00:00:00.000Z",
    [{ id: "c", name: "n", arguments: {} }, { id: "c", name: "n", arguments: {} }], [{ id: "c", name: "", arguments: {} }],
    [{ id: "c", name: "n", arguments: [] }], [{ id: "c", name: "n" }], "entry-0", "entry-1", "call-1", "msg-0"
  ]
  switch (int(rng, 4)) {
    case 0:
      if (Array.isArray(obj)) obj.splice(key as number, 1)
      else delete obj[key as string]
      break
    case 1:
      if (!Array.isArray(obj)) obj[pick(rng, ["extra", "Type", "id ", "message2", "parentid"])] = pick(rng, nearMiss)
      break
    default:
      ;(obj as Rec)[key as string] = pick(rng, nearMiss)
  }
}

/** The fixed corpus: hand-written sessions covering every record shape, then random ones. */
export const corpus = (rng: Rng, randomCount: number): Array<Input> => {
  const hand: Session = {
    header: { type: "session", version: 1, id: "session-001", timestamp: ts(0) },
    entries: [
      { type: "entry", version: 1, id: "entry-001", parentId: null, timestamp: ts(1), message: { role: "user", id: "m1", content: "root ✓ \"q\" \\ 😀" } },
      {
        type: "entry", version: 1, id: "entry-002", parentId: "entry-001", timestamp: ts(2),
        message: { role: "assistant", id: "m2", content: "", toolCalls: [{ id: "c1", name: "ls", arguments: { path: "/tmp", deep: { a: [1, 2.5, -3e-7, null, true] } } }, { id: "c2", name: "cat", arguments: {} }] }
      },
      { type: "entry", version: 1, id: "entry-003", parentId: "entry-002", timestamp: ts(3), message: { role: "tool", id: "m3", toolCallId: "c1", toolName: "ls", content: "a\nb", isError: false } },
      { type: "entry", version: 1, id: "entry-004", parentId: "entry-003", timestamp: ts(4), message: { role: "tool", id: "m4", toolCallId: "c2", toolName: "cat", content: "", isError: true } },
      { type: "entry", version: 1, id: "entry-005", parentId: "entry-001", timestamp: ts(5), message: { role: "user", id: "m5", content: "branch 中文" } },
      { type: "entry", version: 1, id: "entry-006", parentId: "entry-005", timestamp: ts(6), message: { role: "assistant", id: "m6", content: "again", toolCalls: [{ id: "c1", name: "ls", arguments: { x: "\u2028" } }] } },
      { type: "entry", version: 1, id: "entry-007", parentId: "entry-006", timestamp: ts(7), message: { role: "tool", id: "m7", toolCallId: "c1", toolName: "ls", content: "sibling branch answers its own c1", isError: false } }
    ]
  }
  const handLines = canonicalLines(hand)
  const inputs: Array<Input> = [
    { label: "hand", bytes: bytesOf(join(handLines)) },
    { label: "hand-crlf-no-final-newline", bytes: bytesOf(join(handLines, "\r\n", false)) },
    { label: "hand-with-tail", bytes: bytesOf(join(handLines) + handLines[1]!.slice(0, 40)) },
    { label: "header-only", bytes: bytesOf(join(handLines.slice(0, 1))) }
  ]
  for (let i = 0; i < randomCount; i++) {
    const s = randomSession(rng, 1 + int(rng, 12), `r${i}`)
    const lines = rng() < 0.5 ? canonicalLines(s) : [s.header, ...s.entries].map((r) => respell(rng, r))
    inputs.push({ label: `random-${i}`, bytes: bytesOf(join(lines, rng() < 0.3 ? "\r\n" : "\n", rng() < 0.8)) })
  }
  return inputs
}

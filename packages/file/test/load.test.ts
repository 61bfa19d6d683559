/**
 * The fail-closed read path, table-driven: every rule of `docs/format.md` and
 * every load-path code of its table has at least one file that loads and one that is
 * rejected. Each case runs through the pure decoder (`Codec.decodeSession`) and
 * through `SessionStore.read` on a real file (alone, and with a marker and temp
 * files beside it), and both must agree; every load must leave the directory
 * exactly as it was (names, kinds, identities, sizes, mtimes, sha256).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { execFileSync } from "node:child_process"
import * as NFS from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"
import { MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINE_BYTES } from "@session-tree/core/Codec"
import { decode as decodeEither } from "../src/Jsonl.js"
import { SessionError, type SessionErrorCode, isSessionError } from "@session-tree/core/SessionError"
import {
  assistant,
  bytesOf,
  call,
  entry,
  entryLine,
  fileOfSize,
  header,
  headerLine,
  type Json,
  jsonl,
  type JsonRecord,
  manyEntries,
  paddedEntryLine,
  readSession,
  recordingSteps,
  snapshotDir,
  tempDir,
  tool,
  user,
  utf8,
  without
} from "./support/files.js"

/** `Jsonl.decode` with its Either merged: the session, or the error it fails with. */
const decodeSession = (bytes: Uint8Array) => Either.merge(decodeEither(bytes))

type Expect =
  | {
    readonly ok: true
    readonly header: JsonRecord
    /** Expected entries, or only their count for the large files. */
    readonly entries: ReadonlyArray<JsonRecord> | number
    readonly tail: "none" | "incomplete"
  }
  | { readonly ok: false; readonly code: SessionErrorCode; readonly line: number | undefined }

interface Case {
  readonly rule: string
  readonly name: string
  /** The file's bytes, or a setup that makes the path to load inside a fresh directory (filesystem cases). */
  readonly content: Uint8Array | ((dir: string) => string)
  readonly expect: Expect
}

const cases: Array<Case> = []
const asBytes = (content: string | Uint8Array): Uint8Array => (typeof content === "string" ? utf8(content) : content)

const ok = (
  rule: string,
  name: string,
  content: string | Uint8Array | ((dir: string) => string),
  entries: ReadonlyArray<JsonRecord> | number,
  tail: "none" | "incomplete" = "none",
  hdr: JsonRecord = header()
) =>
  cases.push({
    rule,
    name,
    content: typeof content === "function" ? content : asBytes(content),
    expect: { ok: true, header: hdr, entries, tail }
  })

const bad = (
  rule: string,
  name: string,
  content: string | Uint8Array | ((dir: string) => string),
  code: SessionErrorCode,
  line: number | undefined
) =>
  cases.push({
    rule,
    name,
    content: typeof content === "function" ? content : asBytes(content),
    expect: { ok: false, code, line }
  })

// Shorthands: H is the seed's headerLine(), E1 its entryLine(), E2 a child of E1.
const H = headerLine()
const E1 = entry()
const E2 = entry("entry-002", "entry-001", user("message-002", "child"))
const E3 = entry("entry-003", "entry-002", user("message-003", "grandchild"))
const line = (record: Json): string => JSON.stringify(record)
/** A file of the header then `records` (objects or raw lines), LF-terminated. */
const file = (...records: ReadonlyArray<Json | string>): string =>
  jsonl([H, ...records.map((r) => (typeof r === "string" ? r : line(r)))])
/** The canonical line of `record` with raw `"key":value` text spliced in after its last key. */
const withRaw = (record: JsonRecord, raw: string): string => line(record).slice(0, -1) + "," + raw + "}"

// ---------------------------------------------------------------------------
// Well-formed files and the seed's failure experiment

{
  const r = "seed failure experiment"
  ok(r, "header + entry + `{\"type\":\"entry\",\"id\":\"cut` recovers entry-001 only", `${headerLine()}\n${entryLine()}\n{"type":"entry","id":"cut`, [E1], "incomplete")
  bad(r, "header + `not-json` + entry is SESSION_INVALID_JSON", `${headerLine()}\nnot-json\n${entryLine()}\n`, "SESSION_INVALID_JSON", 2)
}
{
  const r = "well-formed file"
  ok(r, "header only", jsonl([H]), [])
  ok(r, "header and a chain of three entries", file(E1, E2, E3), [E1, E2, E3])
  ok(r, "several roots and a parent that is not the previous line", file(E1, entry("entry-009", null, user("m9", "second root")), E2), [
    E1,
    entry("entry-009", null, user("m9", "second root")),
    E2
  ])
  const shuffled = `{"message":{"content":"root","id":"message-001","role":"user"},"timestamp":"${E1["timestamp"]}","parentId":null,"id":"entry-001","version":1,"type":"entry"}`
  ok(r, "keys in any order", file(shuffled), [E1])
  ok(r, "insignificant JSON whitespace around and inside a record", file(" \t" + JSON.stringify(E1, null, "\t").replace(/\n/g, " \r") + " "), [E1])
  bad(r, "a header-only file whose header is broken", jsonl([H.replace("session-001", "")]), "SESSION_INVALID_HEADER", 1)
}

// ---------------------------------------------------------------------------
// SESSION_INVALID_JSON: exactly one JSON object per line

{
  const r = "one JSON object per line"
  ok(r, "one object per line", file(E1, E2), [E1, E2])
  bad(r, "text in the middle", file(E1, "not-json", E2), "SESSION_INVALID_JSON", 3)
  bad(r, "the header line is not JSON", jsonl(["not-json", line(E1)]), "SESSION_INVALID_JSON", 1)
  bad(r, "an empty line in the middle", file(E1, "", E2), "SESSION_INVALID_JSON", 3)
  bad(r, "a whitespace-only line in the middle", file(E1, " \t ", E2), "SESSION_INVALID_JSON", 3)
  bad(r, "an empty line at the end, terminated", file(E1, ""), "SESSION_INVALID_JSON", 3)
  bad(r, "trailing garbage after the object", file(line(E1) + "x", E2), "SESSION_INVALID_JSON", 2)
  bad(r, "a second closing brace", file(line(E1) + "}", E2), "SESSION_INVALID_JSON", 2)
  bad(r, "two objects on one line", file(line(E1) + line(E2)), "SESSION_INVALID_JSON", 2)
  bad(r, "two objects on one line, spaced", file(line(E1) + " " + line(E2)), "SESSION_INVALID_JSON", 2)
  bad(r, "a lone CR does not separate lines", file(line(E1) + "\r" + line(E2)), "SESSION_INVALID_JSON", 2)
  bad(r, "an array", file(`[${line(E1)}]`), "SESSION_INVALID_JSON", 2)
  bad(r, "a string", file(`"entry"`), "SESSION_INVALID_JSON", 2)
  bad(r, "a number", file("1"), "SESSION_INVALID_JSON", 2)
  bad(r, "null", file("null"), "SESSION_INVALID_JSON", 2)
  bad(r, "malformed JSON that already has its newline", file(E1, `{"type":"entry","id":"cut`), "SESSION_INVALID_JSON", 3)
  bad(r, "an unfinished object in the middle", file(`{"type":"entry"`, E1), "SESSION_INVALID_JSON", 2)
  bad(r, "single quotes", file(`{'type':'entry'}`), "SESSION_INVALID_JSON", 2)
  bad(r, "NaN", file(withRaw(E1, `"n":NaN`)), "SESSION_INVALID_JSON", 2)
  bad(r, "a comment", file(line(E1) + " // note"), "SESSION_INVALID_JSON", 2)
  bad(r, "a raw control character in a string", file(line(E1).replace("root", "ro\u0001ot")), "SESSION_INVALID_JSON", 2)
  bad(r, "a trailing comma", file(line(E1).slice(0, -1) + ",}"), "SESSION_INVALID_JSON", 2)
  // The record is depth 1, message 2, toolCalls 3, the call 4, arguments 5: 59 more levels reach 64.
  const nest = (levels: number): Json => {
    let v: Json = 0
    for (let i = 0; i < levels; i++) v = [v]
    return v
  }
  const deep = (levels: number) => entry("entry-001", null, assistant("m", "", [call("c", "f", { x: nest(levels) })]))
  ok(r, "nesting depth exactly 64", file(deep(59)), [deep(59)])
  bad(r, "nesting depth 65", file(deep(60)), "SESSION_INVALID_JSON", 2)
}

// ---------------------------------------------------------------------------
// The tail: only a viable prefix of a JSON object after the last newline is skipped

{
  const r = "incomplete final line"
  const tails = [
    `{`,
    `  {`,
    `{"type":"entry",`,
    `{"type":"entry","version":1,"id":"entry-002","parentId":"entry-001","timestamp":"2026`,
    `{"a":tr`,
    `{"a":nul`,
    `{"a":-`,
    `{"a":1.`,
    `{"a":1e`,
    `{"a":1E+`,
    `{"a":"\\`,
    `{"a":"\\u00`,
    `{"a":[1,{"b":[`,
    `{"a":"ünïcödé 中文 😀`,
    // Syntax only: a prefix that could never be a valid record is still just a cut tail.
    `{"type":"bogus","version":99,"x":`,
    line(E2).slice(0, -1),
    " \t",
    "\r"
  ]
  for (const [i, t] of tails.entries()) ok(r, `skips #${i + 1} ${JSON.stringify(t.length > 40 ? t.slice(0, 40) + "…" : t)}`, file(E1) + t, [E1], "incomplete")
  ok(r, "an incomplete tail right after the header", jsonl([H]) + `{"type":"entry","id":"cut`, [], "incomplete")
  ok(r, "an empty tail is the end of the file", file(E1), [E1], "none")
  ok(r, "a complete object there is a normal last line", file(E1) + line(E2), [E1, E2], "none")
  const invalid = [
    "not-json",
    `}`,
    `[`,
    `"abc`,
    `{"a"}`,
    `{,`,
    `{"a":1,}`,
    `{"a":[1,]`,
    `{"a":01`,
    `{"a":-x`,
    `{"a":1e+x`,
    `{"a":1e5e`,
    `{"a":1e5.`,
    `{"a":1.5.`,
    `{"a":0.5E1e`,
    `{"a":-01`,
    `{"a":1e5e5}`,
    `{"a":nulx`,
    `{"a":"\\u00g`,
    `{"a":"\\x`,
    `{"a":"x\ty`,
    `{"type":"entry"}}`,
    `{"a":1} x`,
    `{"a":1}{`,
    `{"a":1]`,
    `{'a'`,
    `{"a":+1`,
    `{"a":.5`
  ]
  for (const t of invalid) bad(r, `rejects ${JSON.stringify(t)} (never completable)`, file(E1) + t, "SESSION_INVALID_JSON", 3)
  bad(r, "a non-viable tail as the only line", "not-json", "SESSION_INVALID_JSON", 1)
}

{
  const r = "missing final newline"
  ok(r, "a valid last line without \\n", jsonl([H, line(E1), line(E2)], { final: false }), [E1, E2])
  ok(r, "a header without \\n", jsonl([H], { final: false }), [])
  bad(r, "a complete but invalid last line without \\n is not skipped", jsonl([H, line(E1), line(without(E2, "timestamp"))], { final: false }), "SESSION_INVALID_RECORD", 3)
  bad(r, "a complete but invalid header without \\n is not skipped", jsonl([headerLine({ version: 3 })], { final: false }), "SESSION_UNSUPPORTED_VERSION", 1)
}

{
  const r = "CRLF"
  ok(r, "every line CRLF", jsonl([H, line(E1), line(E2)], { eol: "\r\n" }), [E1, E2])
  ok(r, "CRLF without a final terminator", jsonl([H, line(E1), line(E2)], { eol: "\r\n", final: false }), [E1, E2])
  ok(r, "CRLF and LF mixed", `${H}\r\n${line(E1)}\n${line(E2)}\r\n`, [E1, E2])
  ok(r, "a last line cut between \\r and \\n", `${H}\r\n${line(E1)}\r`, [E1])
  ok(r, "CRLF then an incomplete tail", `${H}\r\n${line(E1)}\r\n{"type":"entry","id":"cut`, [E1], "incomplete")
  bad(r, "CR-only line endings", `${H}\r${line(E1)}\r`, "SESSION_INVALID_JSON", 1)
  bad(r, "CRLF with an empty line in the middle", `${H}\r\n\r\n${line(E1)}\r\n`, "SESSION_INVALID_JSON", 2)
}

{
  const r = "BOM"
  const withBom = entry("entry-001", null, user("message-001", "\uFEFFtext"))
  ok(r, "U+FEFF inside a string is content", file(withBom), [withBom])
  bad(r, "a BOM before the header", "\uFEFF" + file(E1), "SESSION_INVALID_JSON", 1)
  bad(r, "a BOM before a later line", file("\uFEFF" + line(E1)), "SESSION_INVALID_JSON", 2)
  bad(r, "a BOM alone", "\uFEFF", "SESSION_INVALID_JSON", 1)
}

// ---------------------------------------------------------------------------
// SESSION_INVALID_UTF8

{
  const r = "UTF-8"
  const multi = entry("entry-ü", null, user("message-中", "é 中 😀 \u{10FFFF} \uFFFF"))
  ok(r, "2-, 3- and 4-byte characters, U+FFFF and U+10FFFF", file(multi), [multi])
  const before = file(E1) + `{"type":"entry","id":"x`
  const sequences: ReadonlyArray<readonly [string, ReadonlyArray<number>]> = [
    ["0xFF", [0xff]],
    ["a lone continuation byte", [0x80]],
    ["overlong '/' (C0 AF)", [0xc0, 0xaf]],
    ["overlong 3-byte (E0 80 AF)", [0xe0, 0x80, 0xaf]],
    ["an encoded surrogate (ED A0 80)", [0xed, 0xa0, 0x80]],
    ["above U+10FFFF (F4 90 80 80)", [0xf4, 0x90, 0x80, 0x80]],
    ["F5", [0xf5, 0x80, 0x80, 0x80]],
    ["a truncated sequence (E4 B8)", [0xe4, 0xb8]]
  ]
  for (const [name, seq] of sequences) {
    bad(r, `${name} in a middle line`, bytesOf(before, seq, `"}\n`, line(E2), "\n"), "SESSION_INVALID_UTF8", 3)
  }
  bad(r, "in the header", bytesOf(H.slice(0, 20), [0xff], H.slice(20), "\n"), "SESSION_INVALID_UTF8", 1)
  bad(r, "a truncated sequence at the very end of the file", bytesOf(file(E1), `{"type":"entry","id":"`, [0xe4, 0xb8]), "SESSION_INVALID_UTF8", 3)
  bad(r, "a single lead byte as the whole tail", bytesOf(file(E1), [0xf0]), "SESSION_INVALID_UTF8", 3)
  bad(r, "inside an otherwise incomplete tail", bytesOf(file(E1), `{"type":"en`, [0xc0, 0x80], `try`), "SESSION_INVALID_UTF8", 3)
  bad(r, "in a complete last line without \\n", bytesOf(file(E1), line(E2).slice(0, 40), [0xed, 0xbf, 0xbf], line(E2).slice(40)), "SESSION_INVALID_UTF8", 3)
}

// ---------------------------------------------------------------------------
// Caps

{
  const r = "line cap"
  const at = (bytes: number, id = "entry-002", parent: string | null = "entry-001", unit = "x") =>
    paddedEntryLine(bytes, id, parent, unit)
  const rec = (text: string) => JSON.parse(text) as JsonRecord
  const max = at(MAX_LINE_BYTES)
  const over = at(MAX_LINE_BYTES + 1)
  ok(r, "a middle line of exactly 65,536 bytes", file(E1, max, E3), [E1, rec(max), E3])
  bad(r, "a middle line of 65,537 bytes", file(E1, over, E3), "SESSION_LINE_TOO_LONG", 3)
  ok(r, "a last line of exactly 65,536 bytes, terminated", file(E1, max), [E1, rec(max)])
  bad(r, "a last line of 65,537 bytes, terminated", file(E1, over), "SESSION_LINE_TOO_LONG", 3)
  ok(r, "a last line of exactly 65,536 bytes, unterminated", file(E1) + max, [E1, rec(max)])
  bad(r, "a last line of 65,537 bytes, unterminated", file(E1) + over, "SESSION_LINE_TOO_LONG", 3)
  ok(r, "an incomplete tail of exactly 65,536 bytes", file(E1) + at(MAX_LINE_BYTES + 1).slice(0, -1), [E1], "incomplete")
  bad(r, "an incomplete tail of 65,537 bytes", file(E1) + at(MAX_LINE_BYTES + 2).slice(0, -1), "SESSION_LINE_TOO_LONG", 3)
  ok(r, "65,536 bytes before CRLF (the terminator does not count)", jsonl([H, line(E1), max], { eol: "\r\n" }), [E1, rec(max)])
  ok(r, "65,536 bytes then a lone \\r at the end", file(E1) + max + "\r", [E1, rec(max)])
  const maxWide = at(MAX_LINE_BYTES, "entry-002", "entry-001", "é")
  const overWide = at(MAX_LINE_BYTES + 1, "entry-002", "entry-001", "é")
  ok(r, "65,536 bytes of 2-byte characters (bytes, not characters, count)", file(E1, maxWide), [E1, rec(maxWide)])
  bad(r, "65,537 bytes in fewer characters", file(E1, overWide), "SESSION_LINE_TOO_LONG", 3)
  const longHeader = (bytes: number) => headerLine({ id: "s".repeat(bytes - H.length + "session-001".length) })
  ok(r, "a header line of exactly 65,536 bytes", jsonl([longHeader(MAX_LINE_BYTES)]), [], "none", JSON.parse(longHeader(MAX_LINE_BYTES)))
  bad(r, "a header line of 65,537 bytes", jsonl([longHeader(MAX_LINE_BYTES + 1)]), "SESSION_LINE_TOO_LONG", 1)
}

{
  const r = "file cap"
  // Both sizes are otherwise valid sessions, so only the cap can reject the larger one.
  ok(r, "exactly 4,194,304 bytes", fileOfSize(MAX_FILE_BYTES), 64)
  bad(r, "4,194,305 bytes", fileOfSize(MAX_FILE_BYTES + 1), "SESSION_FILE_TOO_LARGE", undefined)
}

{
  const r = "entry cap"
  ok(r, "4,096 entries", jsonl([H, ...manyEntries(MAX_ENTRIES)]), MAX_ENTRIES)
  ok(r, "4,096 entries and an incomplete tail", jsonl([H, ...manyEntries(MAX_ENTRIES)]) + `{"type":"entry","id":"cut`, MAX_ENTRIES, "incomplete")
  bad(r, "4,097 entries", jsonl([H, ...manyEntries(MAX_ENTRIES + 1)]), "SESSION_TOO_MANY_ENTRIES", MAX_ENTRIES + 2)
  bad(r, "4,097 entries, the last unterminated", jsonl([H, ...manyEntries(MAX_ENTRIES + 1)], { final: false }), "SESSION_TOO_MANY_ENTRIES", MAX_ENTRIES + 2)
}

// ---------------------------------------------------------------------------
// Records

{
  const r = "header"
  const other = header({ id: "séssion-中", timestamp: "9999-12-31T23:59:59.999Z" })
  ok(r, "another valid header", jsonl([line(other), line(E1)]), [E1], "none", other)
  bad(r, "an empty file (missing)", "", "SESSION_INVALID_HEADER", 1)
  bad(r, "the first line is an entry (missing)", jsonl([line(E1), line(E2)]), "SESSION_INVALID_HEADER", 1)
  bad(r, "only an incomplete header", `{"type":"session","version":1,`, "SESSION_INVALID_HEADER", 1)
  bad(r, "only the header cut one byte short", H.slice(0, -1), "SESSION_INVALID_HEADER", 1)
  for (const key of ["type", "version", "id", "timestamp"]) {
    bad(r, `no "${key}"`, jsonl([line(without(header(), key)), line(E1)]), "SESSION_INVALID_HEADER", 1)
  }
  bad(r, "an extra field", jsonl([line(header({ extra: true })), line(E1)]), "SESSION_INVALID_HEADER", 1)
  bad(r, "type \"Session\"", jsonl([headerLine({ type: "Session" })]), "SESSION_INVALID_HEADER", 1)
  bad(r, "an empty id", jsonl([headerLine({ id: "" })]), "SESSION_INVALID_HEADER", 1)
  bad(r, "a numeric id", jsonl([headerLine({ id: 1 })]), "SESSION_INVALID_HEADER", 1)
  bad(r, "version \"1\"", jsonl([headerLine({ version: "1" })]), "SESSION_INVALID_HEADER", 1)
  bad(r, "a timestamp without milliseconds", jsonl([headerLine({ timestamp: "2026-01-02T03:04:05Z" })]), "SESSION_INVALID_HEADER", 1)
  bad(r, "an extended-year timestamp", jsonl([headerLine({ timestamp: "+010000-01-01T00:00:00.000Z" })]), "SESSION_INVALID_HEADER", 1)
  bad(r, "a second header", file(E1, H), "SESSION_INVALID_HEADER", 3)
  bad(r, "a second header right after the first", file(H, E1), "SESSION_INVALID_HEADER", 2)
}

const badTimestamps = [
  "2026-01-02T03:04:05Z",
  "+010000-01-01T00:00:00.000Z",
  "-000001-01-01T00:00:00.000Z",
  "2026-01-02T03:04:05.06Z",
  "2026-01-02T03:04:05.0060Z",
  "2026-01-02T03:04:05.006+00:00",
  "2026-01-02 03:04:05.006Z",
  "2026-01-02t03:04:05.006z",
  "2026-02-30T00:00:00.000Z",
  "2026-01-02T24:00:00.000Z",
  "2026-12-31T23:59:60.000Z",
  "2026-1-2T03:04:05.006Z",
  " 2026-01-02T03:04:05.006Z",
  ""
]

{
  const r = "entry fields"
  ok(r, "all fields present and typed", file(E1, E2), [E1, E2])
  for (const ts of ["0000-01-01T00:00:00.000Z", "2024-02-29T12:00:00.000Z", "9999-12-31T23:59:59.999Z"]) {
    const e = entry("entry-001", null, user(), { timestamp: ts })
    ok(r, `timestamp ${ts}`, file(e), [e])
  }
  bad(r, "an extra field", file(entry("entry-001", null, user(), { extra: 1 })), "SESSION_INVALID_RECORD", 2)
  for (const key of ["type", "version", "id", "parentId", "timestamp", "message"]) {
    bad(r, `no "${key}"`, file(E1, without(E2, key)), "SESSION_INVALID_RECORD", 3)
  }
  const mistyped: ReadonlyArray<readonly [string, JsonRecord]> = [
    ["type \"Entry\"", { type: "Entry" }],
    ["type null", { type: null }],
    ["version \"1\"", { version: "1" }],
    ["version null", { version: null }],
    ["an empty id", { id: "" }],
    ["a numeric id", { id: 2 }],
    ["a null id", { id: null }],
    ["an empty parentId", { parentId: "" }],
    ["a numeric parentId", { parentId: 1 }],
    ["parentId false", { parentId: false }],
    ["a numeric timestamp", { timestamp: 1767323045006 }]
  ]
  for (const [name, o] of mistyped) bad(r, name, file(E1, { ...E2, ...o }), "SESSION_INVALID_RECORD", 3)
  for (const ts of badTimestamps) {
    bad(r, `timestamp ${JSON.stringify(ts)}`, file(E1, { ...E2, timestamp: ts }), "SESSION_INVALID_RECORD", 3)
  }
}

{
  const r = "version"
  ok(r, "version 1 in header and entry", file(E1), [E1])
  ok(r, "1.0 is the number 1", jsonl([H.replace(`"version":1`, `"version":1.0`), line(E1).replace(`"version":1`, `"version":1e0`)]), [E1])
  for (const v of [0, 3, -1, 1.5]) {
    bad(r, `header version ${v}`, jsonl([headerLine({ version: v }), line(E1)]), "SESSION_UNSUPPORTED_VERSION", 1)
    bad(r, `entry version ${v}`, file(E1, { ...E2, version: v }), "SESSION_UNSUPPORTED_VERSION", 3)
  }
  bad(r, "entry version 2", file(E1, { ...E2, version: 2 }), "SESSION_UNSUPPORTED_VERSION", 3)
  // Version 2 is a format of its own: its header is judged by its rules, and its entries must be version 2.
  bad(r, "a version-2 header over a version-1 entry", jsonl([headerLine({ version: 2 }), line(E1)]), "SESSION_UNSUPPORTED_VERSION", 2)
  bad(r, "a version-2 header of another shape", jsonl([`{"type":"session","version":2,"sessionId":"x"}`]), "SESSION_INVALID_HEADER", 1)
  bad(r, "a version-2 entry of another shape", file(E1, `{"type":"entry","version":2,"payload":[1,2,3]}`), "SESSION_UNSUPPORTED_VERSION", 3)
}

{
  const r = "unique IDs"
  ok(r, "distinct entry IDs", file(E1, E2, E3), [E1, E2, E3])
  const sameMessageId = entry("entry-002", "entry-001", user("message-001", "same message id"))
  ok(r, "a message ID may repeat (only entry IDs are unique)", file(E1, sameMessageId), [E1, sameMessageId])
  const likeSession = entry("session-001", null, user())
  ok(r, "an entry ID equal to the session ID", file(likeSession), [likeSession])
  bad(r, "an ID repeated on the next line", file(E1, entry("entry-001", null, user("m", "again"))), "SESSION_DUPLICATE_ID", 3)
  bad(r, "an ID repeated in a sibling branch", file(E1, E2, entry("entry-002", "entry-001", user("m", "sibling"))), "SESSION_DUPLICATE_ID", 4)
  bad(r, "an ID repeated on an unterminated last line", file(E1, E2) + line(entry("entry-001", "entry-002", user())), "SESSION_DUPLICATE_ID", 4)
}

{
  const r = "parents"
  ok(r, "a parent further back", file(E1, E2, entry("entry-004", "entry-001", user("m4", "x"))), [E1, E2, entry("entry-004", "entry-001", user("m4", "x"))])
  bad(r, "a missing parent", file(E1, entry("entry-002", "entry-404", user())), "SESSION_UNKNOWN_PARENT", 3)
  bad(r, "a parent that comes later", file(entry("entry-001", "entry-002", user()), entry("entry-002", null, user())), "SESSION_UNKNOWN_PARENT", 2)
  bad(r, "its own parent", file(E1, entry("entry-002", "entry-002", user())), "SESSION_UNKNOWN_PARENT", 3)
  bad(r, "the session ID as parent", file(entry("entry-001", "session-001", user())), "SESSION_UNKNOWN_PARENT", 2)
  bad(r, "a missing parent on an unterminated last line", file(E1) + line(entry("entry-002", "nope", user())), "SESSION_UNKNOWN_PARENT", 3)
}

// ---------------------------------------------------------------------------
// SESSION_INVALID_MESSAGE (Message IR v1)

{
  const r = "message"
  const calls = [call("call-1", "read", { path: "/a", n: [1, { deep: null }], flag: true }), call("call-2", "write")]
  const asst = entry("entry-002", "entry-001", assistant("message-002", "using tools", calls))
  const res1 = entry("entry-003", "entry-002", tool("message-003", "call-1", "read", "contents", false))
  const res2 = entry("entry-004", "entry-003", tool("message-004", "call-2", "write", "failed", true))
  const emptyCalls = entry("entry-005", "entry-001", assistant("message-005", "", []))
  ok(r, "every role: user, assistant with and without calls, tool with isError false/true", file(E1, asst, res1, res2, emptyCalls), [
    E1,
    asst,
    res1,
    res2,
    emptyCalls
  ])
  const odd = entry("entry-001", null, assistant("m", "", [call("c", "f", { constructor: { prototype: { x: 1 } }, prototype: 1, __proto: 2, proto__: 3, __PROTO__: 4, "": 5 })]))
  ok(r, "argument keys are free-form (except __proto__)", file(odd), [odd])
  const numbers = (raw: string) => line(entry("entry-001", null, assistant("m", "", [call("c", "f", { slot: 0 })]))).replace(`{"slot":0}`, raw)
  ok(r, "argument numbers at the ends of the double range; -0 is read as the 0 a commit writes", file(numbers(`{"max":1.7976931348623157e308,"tiny":5e-324,"neg":-0,"list":[-0.0]}`)), [
    entry("entry-001", null, assistant("m", "", [call("c", "f", { max: 1.7976931348623157e308, tiny: 5e-324, neg: 0, list: [0] })]))
  ])
  // JSON.parse reads these as ±Infinity, which the next commit would write as null.
  bad(r, "an argument number out of range (1e400)", file(numbers(`{"x":1e400}`)), "SESSION_INVALID_MESSAGE", 2)
  bad(r, "an argument number out of range, deep (-1e400)", file(numbers(`{"a":[{"x":-1e400}]}`)), "SESSION_INVALID_MESSAGE", 2)

  const u = user()
  const a = assistant("m", "text", [call("c", "f")])
  const t = tool("m", "c", "f")
  const asMessage = (message: Json) => file(E1, entry("entry-002", "entry-001", message))
  const invalid: ReadonlyArray<readonly [string, Json]> = [
    ["user: extra field", { ...u, extra: 1 }],
    ["user: toolCalls is extra", { ...u, toolCalls: [] }],
    ["user: no content", without(u, "content")],
    ["user: no id", without(u, "id")],
    ["user: no role", without(u, "role")],
    ["user: numeric content", { ...u, content: 1 }],
    ["user: null content", { ...u, content: null }],
    ["user: empty id", { ...u, id: "" }],
    ["user: role \"User\"", { ...u, role: "User" }],
    ["role \"system\"", { ...u, role: "system" }],
    ["assistant: extra field", { ...a, extra: 1 }],
    ["assistant: no toolCalls", without(a, "toolCalls")],
    ["assistant: no content", without(a, "content")],
    ["assistant: toolCalls null", { ...a, toolCalls: null }],
    ["assistant: toolCalls an object", { ...a, toolCalls: {} }],
    ["assistant: a call that is a string", { ...a, toolCalls: ["c"] }],
    ["tool call: extra field", { ...a, toolCalls: [{ ...call("c", "f"), extra: 1 }] }],
    ["tool call: no arguments", { ...a, toolCalls: [without(call("c", "f"), "arguments")] }],
    ["tool call: no name", { ...a, toolCalls: [without(call("c", "f"), "name")] }],
    ["tool call: no id", { ...a, toolCalls: [without(call("c", "f"), "id")] }],
    ["tool call: arguments an array", { ...a, toolCalls: [{ ...call("c", "f"), arguments: [] }] }],
    ["tool call: arguments null", { ...a, toolCalls: [{ ...call("c", "f"), arguments: null }] }],
    ["tool call: arguments a string", { ...a, toolCalls: [{ ...call("c", "f"), arguments: "{}" }] }],
    ["tool call: empty name", { ...a, toolCalls: [call("c", "")] }],
    ["tool call: empty id", { ...a, toolCalls: [call("", "f")] }],
    ["tool call: numeric id", { ...a, toolCalls: [{ ...call("c", "f"), id: 1 }] }],
    ["tool call: duplicate IDs in one message", { ...a, toolCalls: [call("c", "f"), call("d", "g"), call("c", "h")] }],
    ["tool: extra field", { ...t, extra: 1 }],
    ["tool: toolCalls is extra", { ...t, toolCalls: [] }],
    ["tool: no isError", without(t, "isError")],
    ["tool: no toolName", without(t, "toolName")],
    ["tool: no toolCallId", without(t, "toolCallId")],
    ["tool: no content", without(t, "content")],
    ["tool: isError \"true\"", { ...t, isError: "true" }],
    ["tool: isError 1", { ...t, isError: 1 }],
    ["tool: empty toolCallId", { ...t, toolCallId: "" }],
    ["tool: numeric toolName", { ...t, toolName: 1 }],
    ["an array", [u]],
    ["null", null],
    ["a string", "hello"],
    ["a number", 1]
  ]
  for (const [name, message] of invalid) bad(r, name, asMessage(message), "SESSION_INVALID_MESSAGE", 3)
}

// ---------------------------------------------------------------------------
// SESSION_TOOL_LINK, checked against the strict ancestors of each entry

{
  const r = "tool links"
  const root = entry("e1", null, user("m1", "root"))
  const asks = (id: string, parent: string | null, calls: ReadonlyArray<JsonRecord>) => entry(id, parent, assistant("m-" + id, "", calls))
  const answers = (id: string, parent: string | null, callId: string, name: string) => entry(id, parent, tool("m-" + id, callId, name))
  const say = (id: string, parent: string | null) => entry(id, parent, user("m-" + id, id))
  const okChain = (name: string, ...records: Array<JsonRecord>) => ok(r, name, file(...records), records)
  const badChain = (name: string, lineNo: number, ...records: Array<JsonRecord>) => bad(r, name, file(...records), "SESSION_TOOL_LINK", lineNo)

  okChain("a result answers its parent's call", root, asks("e2", "e1", [call("c1", "read")]), answers("e3", "e2", "c1", "read"))
  okChain("a result answers a call further up the branch", root, asks("e2", "e1", [call("c1", "read")]), say("e3", "e2"), answers("e4", "e3", "c1", "read"))
  okChain(
    "two calls answered in either order",
    root,
    asks("e2", "e1", [call("c1", "read"), call("c2", "write")]),
    answers("e3", "e2", "c2", "write"),
    answers("e4", "e3", "c1", "read")
  )
  okChain(
    "one call answered once in each of two sibling branches",
    root,
    asks("e2", "e1", [call("c1", "read")]),
    answers("e3", "e2", "c1", "read"),
    answers("e4", "e2", "c1", "read")
  )
  okChain("a call ID reused in a sibling branch", root, asks("e2", "e1", [call("c1", "read")]), asks("e3", "e1", [call("c1", "read")]), answers("e4", "e3", "c1", "read"))
  okChain(
    "the call on the branch decides the name, not a sibling's call with the same ID",
    root,
    asks("e2", "e1", [call("c1", "read")]),
    asks("e3", "e1", [call("c1", "write")]),
    answers("e4", "e2", "c1", "read"),
    answers("e5", "e3", "c1", "write")
  )
  okChain("an answer in a sibling branch does not count as answered", root, asks("e2", "e1", [call("c1", "read")]), say("e3", "e2"), answers("e4", "e2", "c1", "read"), answers("e5", "e3", "c1", "read"))

  badChain("a result with no call at all", 3, root, answers("e2", "e1", "c1", "read"))
  badChain("a root result", 2, answers("e1", null, "c1", "read"))
  badChain("a result naming another tool", 4, root, asks("e2", "e1", [call("c1", "read")]), answers("e3", "e2", "c1", "write"))
  badChain("a result with an empty tool name", 4, root, asks("e2", "e1", [call("c1", "read")]), answers("e3", "e2", "c1", ""))
  badChain("a call in a sibling branch does not count", 4, root, asks("e2", "e1", [call("c1", "read")]), answers("e3", "e1", "c1", "read"))
  badChain("a call in a descendant's branch does not count", 5, root, say("e2", "e1"), asks("e3", "e2", [call("c1", "read")]), answers("e4", "e2", "c1", "read"))
  badChain(
    "a call answered twice on one branch",
    5,
    root,
    asks("e2", "e1", [call("c1", "read")]),
    answers("e3", "e2", "c1", "read"),
    answers("e4", "e3", "c1", "read")
  )
  badChain("a call ID in two assistant messages of one branch", 4, root, asks("e2", "e1", [call("c1", "read")]), asks("e3", "e2", [call("c1", "read")]))
  badChain(
    "the call on the branch names another tool than a sibling's call",
    5,
    root,
    asks("e2", "e1", [call("c1", "write")]),
    asks("e3", "e1", [call("c1", "read")]),
    answers("e4", "e2", "c1", "read")
  )
  badChain("a result cannot answer a call made by itself", 2, entry("e1", null, tool("m", "c1", "read")))
}

// ---------------------------------------------------------------------------
// Keys that JSON parsers read differently

{
  const r = "duplicate keys"
  const args = (raw: string) => withRaw(entry("entry-001", null, assistant("m", "", [call("c", "f")])), "").replace(`"arguments":{}`, `"arguments":${raw}`).replace(/,}$/, "}")
  const siblings = entry("entry-001", null, assistant("m", "", [call("c", "f", { a: { x: 1 }, b: { x: 2 }, c: [{ x: 1 }, { x: 2 }] })]))
  ok(r, "the same key in different objects", file(siblings), [siblings])
  const tricky = entry("entry-001", null, user("m", `"id": 1, "id": 2 \\" \\\\ {"role":"user"}`))
  ok(r, "key-like text inside a string value", file(tricky), [tricky])
  const keyish = entry("entry-001", null, assistant("m", "\\", [call("c", "f", { 'k":': 1, "k\\": 2, "k": 3, "\\\"": 4 })]))
  ok(r, "keys with escaped quotes and backslashes", file(keyish), [keyish])
  bad(r, "in the header", jsonl([H.slice(0, -1) + `,"id":"session-002"}`]), "SESSION_INVALID_JSON", 1)
  bad(r, "in an entry", file(withRaw(E1, `"parentId":null`)), "SESSION_INVALID_JSON", 2)
  bad(r, "in a message", file(line(E1).replace(`"role":"user"`, `"role":"user","role":"user"`)), "SESSION_INVALID_JSON", 2)
  bad(r, "in a tool call", file(args("{}").replace(`"name":"f"`, `"name":"f","name":"g"`)), "SESSION_INVALID_JSON", 2)
  bad(r, "in arguments", file(args(`{"a":1,"b":2,"a":1}`)), "SESSION_INVALID_JSON", 2)
  bad(r, "deep in arguments", file(args(`{"a":{"b":{"c":{"d":1,"d":2}}}}`)), "SESSION_INVALID_JSON", 2)
  bad(r, "in an object inside an array", file(args(`{"a":[1,{"x":1},{"y":1,"y":1}]}`)), "SESSION_INVALID_JSON", 2)
  bad(r, "spelled differently (\"id\" and \"\\u0069d\")", file(withRaw(E1, `"\\u0069d":"entry-009"`)), "SESSION_INVALID_JSON", 2)
  bad(r, "on an unterminated last line", file(E1) + withRaw(E2, `"id":"x"`), "SESSION_INVALID_JSON", 3)
}

const protoSpellings = [`"__proto__"`, `"\\u005f_proto__"`, `"\\u005F\\u005Fproto\\u005F\\u005F"`, `"__pro\\u0074o__"`]

{
  const r = "__proto__ keys"
  const args = (raw: string) => line(entry("entry-001", null, assistant("m", "", [call("c", "f", { slot: 0 })]))).replace(`{"slot":0}`, raw)
  const fine = entry("entry-001", null, assistant("m", "", [call("c", "f", { __proto: 1, proto: 2, "__proto__ ": 3 })]))
  ok(r, "keys that only look like __proto__", file(fine), [fine])
  for (const key of protoSpellings) {
    bad(r, `${key} in the header`, jsonl([H.slice(0, -1) + `,${key}:{"polluted":true}}`]), "SESSION_INVALID_JSON", 1)
    bad(r, `${key} in an entry`, file(withRaw(E1, `${key}:{"polluted":true}`)), "SESSION_INVALID_JSON", 2)
    bad(r, `${key} in a message`, file(line(E1).replace(`"role":"user"`, `${key}:{"polluted":true},"role":"user"`)), "SESSION_INVALID_JSON", 2)
    bad(r, `${key} in a tool call`, file(args(`{}`).replace(`"name":"f"`, `"name":"f",${key}:{"polluted":true}`)), "SESSION_INVALID_JSON", 2)
    bad(r, `${key} in arguments`, file(args(`{${key}:{"polluted":true}}`)), "SESSION_INVALID_JSON", 2)
    bad(r, `${key} deep in an array`, file(args(`{"a":[{"b":{${key}:{"polluted":true}}}]}`)), "SESSION_INVALID_JSON", 2)
    bad(r, `${key} as a null value`, file(args(`{${key}:null}`)), "SESSION_INVALID_JSON", 2)
  }
}

// ---------------------------------------------------------------------------
// The path: only a regular file, never followed through a link

const FILE = "session.jsonl"
const validFile = file(E1)
{
  const r = "path"
  ok(r, "a regular file", (dir) => {
    NFS.writeFileSync(Path.join(dir, FILE), validFile)
    return Path.join(dir, FILE)
  }, [E1])
  ok(r, "a file with a second hard link", (dir) => {
    NFS.writeFileSync(Path.join(dir, "other"), validFile)
    NFS.linkSync(Path.join(dir, "other"), Path.join(dir, FILE))
    return Path.join(dir, FILE)
  }, [E1])
  bad(r, "a directory", (dir) => {
    NFS.mkdirSync(Path.join(dir, FILE))
    return Path.join(dir, FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "a FIFO (must not block)", (dir) => {
    execFileSync("mkfifo", [Path.join(dir, FILE)])
    return Path.join(dir, FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "a symlink to a valid session file", (dir) => {
    NFS.writeFileSync(Path.join(dir, "real.jsonl"), validFile)
    NFS.symlinkSync("real.jsonl", Path.join(dir, FILE))
    return Path.join(dir, FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "a symlink to /dev/null", (dir) => {
    NFS.symlinkSync("/dev/null", Path.join(dir, FILE))
    return Path.join(dir, FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "a dangling symlink", (dir) => {
    NFS.symlinkSync("nowhere.jsonl", Path.join(dir, FILE))
    return Path.join(dir, FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "a device (/dev/null itself)", () => "/dev/null", "SESSION_NOT_REGULAR_FILE", undefined)
  // The directories above the file may be symlinks (macOS /tmp); the file itself may not.
  ok(r, "a file inside a symlinked directory", (dir) => {
    NFS.mkdirSync(Path.join(dir, "real"))
    NFS.writeFileSync(Path.join(dir, "real", FILE), validFile)
    NFS.symlinkSync("real", Path.join(dir, "link"))
    return Path.join(dir, "link", FILE)
  }, [E1])
  ok(r, "a file below two symlinked directories", (dir) => {
    NFS.mkdirSync(Path.join(dir, "real", "deeper"), { recursive: true })
    NFS.writeFileSync(Path.join(dir, "real", "deeper", FILE), validFile)
    NFS.symlinkSync(Path.join(dir, "real"), Path.join(dir, "link"))
    NFS.symlinkSync("link/deeper", Path.join(dir, "link2"))
    return Path.join(dir, "link2", FILE)
  }, [E1])
  bad(r, "a symlink to a session file, inside a symlinked directory", (dir) => {
    NFS.mkdirSync(Path.join(dir, "real"))
    NFS.writeFileSync(Path.join(dir, "real", "real.jsonl"), validFile)
    NFS.symlinkSync("real.jsonl", Path.join(dir, "real", FILE))
    NFS.symlinkSync("real", Path.join(dir, "link"))
    return Path.join(dir, "link", FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "a path whose parent is a regular file", (dir) => {
    NFS.writeFileSync(Path.join(dir, "plain"), "x")
    return Path.join(dir, "plain", FILE)
  }, "SESSION_NOT_REGULAR_FILE", undefined)
  bad(r, "nothing at the path", (dir) => Path.join(dir, FILE), "SESSION_NOT_FOUND", undefined)
  bad(r, "no such directory", (dir) => Path.join(dir, "missing", FILE), "SESSION_NOT_FOUND", undefined)
}

// ---------------------------------------------------------------------------
// Running the table

/** The codes a load can fail with; each needs a case. */
const LOAD_CODES: ReadonlyArray<SessionErrorCode> = [
  "SESSION_INVALID_JSON",
  "SESSION_INVALID_UTF8",
  "SESSION_LINE_TOO_LONG",
  "SESSION_FILE_TOO_LARGE",
  "SESSION_TOO_MANY_ENTRIES",
  "SESSION_INVALID_HEADER",
  "SESSION_INVALID_RECORD",
  "SESSION_UNSUPPORTED_VERSION",
  "SESSION_DUPLICATE_ID",
  "SESSION_UNKNOWN_PARENT",
  "SESSION_INVALID_MESSAGE",
  "SESSION_TOOL_LINK",
  "SESSION_NOT_REGULAR_FILE",
  "SESSION_NOT_FOUND"
]

type Outcome =
  | { readonly ok: true; readonly header: unknown; readonly entries: ReadonlyArray<unknown>; readonly tail: string }
  | { readonly ok: false; readonly code: string; readonly line: number | undefined }

const outcomeOfError = (e: unknown): Outcome => {
  expect(isSessionError(e)).toBe(true)
  const error = e as SessionError
  return { ok: false, code: error.code, line: error.line }
}

const check = (actual: Outcome, expected: Expect) => {
  if (!expected.ok) {
    expect(actual).toEqual({ ok: false, code: expected.code, line: expected.line })
    return
  }
  // A rejection shows up here with its code and line.
  if (!actual.ok) return expect(actual).toEqual({ ok: true })
  expect(actual.tail).toBe(expected.tail)
  expect(actual.header).toEqual(expected.header)
  if (typeof expected.entries === "number") expect(actual.entries).toHaveLength(expected.entries)
  else expect(actual.entries).toEqual(expected.entries)
}

const decodePure = (bytes: Uint8Array): Outcome => {
  const copy = bytes.slice()
  const decoded = decodeSession(bytes)
  // The decoder must not touch its input either.
  expect(Buffer.compare(copy, bytes)).toBe(0)
  return isSessionError(decoded)
    ? outcomeOfError(decoded)
    : { ok: true, header: decoded.header, entries: decoded.history.entries, tail: decoded.tail }
}

const readFile = (path: string, size?: number) =>
  Effect.map(readSession(path), (result): Outcome => {
    if (Either.isLeft(result)) return outcomeOfError(result.left)
    if (size !== undefined) expect(result.right.size).toBe(size)
    // The directory is resolved once: the location names the real directory.
    expect(result.right.location).toBe(Path.join(NFS.realpathSync(Path.dirname(Path.resolve(path))), Path.basename(path)))
    return { ok: true, header: result.right.header, entries: result.right.entries, tail: result.right.tail }
  })

/** Names a crashed commit leaves beside the file (a marker that is a hard link, temp and next files). */
const addLeftovers = (dir: string) => {
  NFS.linkSync(Path.join(dir, FILE), Path.join(dir, `${FILE}.marker`))
  NFS.writeFileSync(Path.join(dir, `${FILE}.tmp-0123abcd-999999-42-7`), jsonl([H, line(E1), line(E2)]))
  NFS.writeFileSync(Path.join(dir, `${FILE}.next-0123abcd-999999-42-7`), "partial")
}

/** Loads in a fresh directory and checks that the load changed nothing there. */
const loadUnchanged = (setup: (dir: string) => string, size?: number) =>
  Effect.acquireUseRelease(
    Effect.sync(() => tempDir()),
    ({ dir }) =>
      Effect.gen(function*() {
        const path = setup(dir)
        const before = snapshotDir(dir)
        const outcome = yield* readFile(path, size)
        expect(snapshotDir(dir)).toEqual(before)
        return outcome
      }),
    ({ remove }) => Effect.sync(remove)
  )

describe("load: the table", () => {
  it("covers every rule with a valid and an invalid file, and every load-path code", () => {
    const rules = new Map<string, { ok: number; bad: number }>()
    for (const c of cases) {
      const counts = rules.get(c.rule) ?? { ok: 0, bad: 0 }
      if (c.expect.ok) counts.ok++
      else counts.bad++
      rules.set(c.rule, counts)
    }
    for (const [rule, counts] of rules) {
      expect({ rule, valid: counts.ok > 0, invalid: counts.bad > 0 }).toEqual({ rule, valid: true, invalid: true })
    }
    const codes = new Set(cases.flatMap((c) => (c.expect.ok ? [] : [c.expect.code])))
    expect([...codes].sort()).toEqual([...LOAD_CODES].sort())
    expect(new Set(cases.map((c) => `${c.rule}: ${c.name}`)).size).toBe(cases.length)
    const valid = cases.filter((c) => c.expect.ok).length
    console.log(`${cases.length} cases over ${rules.size} rules: ${valid} load, ${cases.length - valid} are rejected`)
  })

  for (const c of cases) {
    const content = c.content
    it.effect(`${c.rule}: ${c.name}`, () =>
      Effect.gen(function*() {
        if (typeof content === "function") {
          check(yield* loadUnchanged(content), c.expect)
          return
        }
        const pure = decodePure(content)
        check(pure, c.expect)
        const write = (dir: string) => {
          NFS.writeFileSync(Path.join(dir, FILE), content)
          return Path.join(dir, FILE)
        }
        // The file store must agree with the pure decoder, with and without leftovers beside the file
        // (compared as JSON text: the records are JSON data, and deep equality of 4,096 entries is slow).
        expect(JSON.stringify(yield* loadUnchanged(write, content.length))).toBe(JSON.stringify(pure))
        expect(JSON.stringify(
          yield* loadUnchanged((dir) => {
            const path = write(dir)
            addLeftovers(dir)
            return path
          }, content.length)
        )).toBe(JSON.stringify(pure))
      }))
  }
})

describe("load: steps", () => {
  it.effect("a version-1 file of 4,194,305 bytes is refused before it is read whole: only its head is read", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => tempDir()),
      ({ dir }) =>
        Effect.gen(function*() {
          const path = Path.join(dir, FILE)
          const over = fileOfSize(MAX_FILE_BYTES + 1)
          NFS.writeFileSync(path, over)
          const { around, steps } = recordingSteps()
          const result = yield* readSession(path, around)
          expect(Either.isLeft(result) && result.left.code).toBe("SESSION_FILE_TOO_LARGE")
          // Its header line says version 1: at most the head (one line's cap and its newline) was read.
          const asked = steps.filter((s) => s.op === "read").reduce((sum, s) => sum + (s.length ?? 0), 0)
          expect(asked).toBeGreaterThan(0)
          expect(asked).toBeLessThanOrEqual(1_048_577)

          // The same bytes one shorter are read in full: the cap, not a missing step, made the difference.
          NFS.writeFileSync(path, fileOfSize(MAX_FILE_BYTES))
          const atCap = recordingSteps()
          const loaded = yield* readSession(path, atCap.around)
          expect(Either.isRight(loaded) && loaded.right.size).toBe(MAX_FILE_BYTES)
          expect(atCap.steps.filter((s) => s.op === "read").length).toBeGreaterThan(0)
        }),
      ({ remove }) => Effect.sync(remove)
    ))

  it.effect("every descriptor a read opens is closed, on success and on failure", () =>
    Effect.acquireUseRelease(
      Effect.sync(() => tempDir()),
      ({ dir }) =>
        Effect.gen(function*() {
          const path = Path.join(dir, FILE)
          for (const content of [file(E1), file(E1, "not-json"), file(E1) + `{"cut`, fileOfSize(MAX_FILE_BYTES)]) {
            NFS.writeFileSync(path, content)
            const { around, steps } = recordingSteps()
            yield* readSession(path, around)
            expect(steps.filter((s) => s.op === "open").length).toBe(1)
            expect(steps.filter((s) => s.op === "close").length).toBe(1)
            expect(steps.map((s) => s.op).filter((op) => !["realpath", "lstat", "open", "fstat", "read", "close"].includes(op))).toEqual([])
          }
        }),
      ({ remove }) => Effect.sync(remove)
    ))

  it.effect("a socket at the path is not a regular file", () =>
    Effect.acquireUseRelease(
      Effect.promise(() => {
        const t = tempDir()
        const server = Net.createServer()
        return new Promise<{ t: typeof t; server: Net.Server }>((resolve) =>
          server.listen(Path.join(t.dir, FILE), () => resolve({ t, server }))
        )
      }),
      ({ t }) =>
        Effect.gen(function*() {
          const before = snapshotDir(t.dir)
          const result = yield* readSession(Path.join(t.dir, FILE))
          expect(Either.isLeft(result) && result.left.code).toBe("SESSION_NOT_REGULAR_FILE")
          expect(snapshotDir(t.dir)).toEqual(before)
        }),
      ({ server, t }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))).pipe(Effect.andThen(() => t.remove()))
    ))

  it("no __proto__ key in the table changed a prototype", () => {
    for (const c of cases) if (typeof c.content !== "function") decodeSession(c.content)
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined()
    expect(Object.prototype).not.toHaveProperty("polluted")
  })
})

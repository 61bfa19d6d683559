import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import { FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import { MAX_FILE_BYTES, MAX_LINE_BYTES } from "@session-tree/core/Codec"
import { splitLines } from "../src/internal/lines.js"
import { SessionError, isSessionError } from "@session-tree/core/SessionError"

const bytes = (...parts: ReadonlyArray<string | ReadonlyArray<number>>): Uint8Array =>
  new Uint8Array(Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p)))))

/**
 * The result in a shape that `toEqual` compares readably, after checking that the sizes it gives
 * are the byte lengths of the lines and of the tail (a final lone CR not counted).
 */
const run = (input: Uint8Array) => {
  const r = Either.merge(splitLines(input))
  if (isSessionError(r)) return { code: r.code, line: r.line }
  expect(r.sizes).toEqual(r.lines.map((line) => Buffer.byteLength(line)))
  if (r.tail !== null) expect(r.tailSize).toBe(Buffer.byteLength(r.tail.endsWith("\r") ? r.tail.slice(0, -1) : r.tail))
  return { lines: r.lines, tail: r.tail }
}

describe("splitLines: lines and the tail", () => {
  const cases: ReadonlyArray<readonly [string, Uint8Array, ReadonlyArray<string>, string | null]> = [
    ["empty file", bytes(""), [], null],
    ["one empty line", bytes("\n"), [""], null],
    ["final newline", bytes("a\nb\n"), ["a", "b"], null],
    ["missing final newline", bytes("a\nb"), ["a"], "b"],
    ["no newline at all", bytes("{\"a\":1}"), [], "{\"a\":1}"],
    ["CRLF", bytes("a\r\nb\r\n"), ["a", "b"], null],
    ["CRLF without the final one", bytes("a\r\nb"), ["a"], "b"],
    ["mixed LF and CRLF", bytes("a\nb\r\nc\n"), ["a", "b", "c"], null],
    ["empty lines in the middle are kept", bytes("a\n\n\r\nb\n"), ["a", "", "", "b"], null],
    ["lone CR inside a line stays", bytes("a\rb\n"), ["a\rb"], null],
    ["only one CR belongs to the terminator", bytes("a\r\r\n"), ["a\r"], null],
    ["lone CR as the whole file is a tail", bytes("\r"), [], "\r"],
    ["lone CR at the end stays in the tail", bytes("a\nb\r"), ["a"], "b\r"],
    ["CR line", bytes("\r\n"), [""], null],
    ["BOM is not stripped", bytes([0xef, 0xbb, 0xbf], "{}\n"), ["\uFEFF{}"], null],
    ["multi-byte characters", bytes("é✓😀\n€"), ["é✓😀"], "€"],
    ["NUL bytes are valid UTF-8", bytes([0x00, 0x0a]), ["\u0000"], null]
  ]
  it.each(cases)("%s", (_name, input, lines, tail) => {
    expect(run(input)).toEqual({ lines, tail })
  })

  it("reads only its own view of a larger buffer", () => {
    const backing = Buffer.from("XX\nab\ncdYY")
    expect(run(new Uint8Array(backing.buffer, backing.byteOffset + 3, 5))).toEqual({ lines: ["ab"], tail: "cd" })
  })

  it.prop(
    "agrees with splitting the decoded string",
    [fc.array(fc.oneof(fc.constantFrom("\n", "\r", "\r\n", "a", ""), fc.fullUnicodeString({ maxLength: 8 })))],
    ([parts]) => {
      const text = parts.join("")
      const pieces = text.split("\n")
      const last = pieces.pop()!
      const lines = pieces.map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l))
      expect(run(bytes(text))).toEqual({ lines, tail: last === "" ? null : last })
    },
    { fastCheck: { numRuns: 1000 } }
  )
})

describe("splitLines: UTF-8", () => {
  const invalid: ReadonlyArray<readonly [string, Uint8Array, number]> = [
    ["overlong '/' (C0 AF)", bytes("a\n", [0xc0, 0xaf], "\n"), 2],
    ["overlong 3-byte (E0 80 AF)", bytes([0xe0, 0x80, 0xaf]), 1],
    ["encoded surrogate (ED A0 80)", bytes("{}\n{}\n", [0xed, 0xa0, 0x80], "\n"), 3],
    ["truncated at the very end (E2 82)", bytes("{}\n{}\n", [0xe2, 0x82]), 3],
    ["truncated before a newline", bytes([0xe2, 0x82], "\n{}\n"), 1],
    ["truncated in the middle of a line", bytes("a\nb", [0xe2, 0x82], "c\n"), 2],
    ["lone continuation byte", bytes("{\"a\":\"", [0x80], "\"}\n"), 1],
    ["beyond U+10FFFF (F4 90 80 80)", bytes("x\ny\nz", [0xf4, 0x90, 0x80, 0x80]), 3],
    ["FF byte", bytes([0xff]), 1],
    ["bad byte after a valid multi-byte line", bytes("é\n✓\n", [0xc3]), 3]
  ]
  it.each(invalid)("%s is SESSION_INVALID_UTF8 with its line", (_name, input, line) => {
    expect(run(input)).toEqual({ code: "SESSION_INVALID_UTF8", line })
  })

  const fatal = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
  const isValid = (b: Uint8Array): boolean => {
    try {
      fatal.decode(b)
      return true
    } catch {
      return false
    }
  }
  it.prop(
    "random bytes: fails exactly when a fatal decoder fails, naming the first bad line",
    [fc.array(fc.oneof(fc.integer({ min: 0, max: 255 }), fc.constantFrom(0x0a, 0x0d, 0x80, 0xe2, 0xf0)), { maxLength: 40 })],
    ([raw]) => {
      const input = new Uint8Array(raw)
      const r = Either.merge(splitLines(input))
      if (isValid(input)) {
        expect(isSessionError(r)).toBe(false)
        return
      }
      expect(isSessionError(r)).toBe(true)
      const e = r as SessionError
      expect(e.code).toBe("SESSION_INVALID_UTF8")
      const segments: Array<Array<number>> = [[]]
      for (const b of raw) {
        if (b === 0x0a) segments.push([])
        else segments[segments.length - 1]!.push(b)
      }
      const firstBad = segments.findIndex((s) => !isValid(new Uint8Array(s))) + 1
      expect(e.line).toBe(firstBad)
    },
    { fastCheck: { numRuns: 1000 } }
  )
})

describe("splitLines: caps", () => {
  const a = (n: number) => "a".repeat(n)
  it("a line of exactly MAX_LINE_BYTES is accepted, with LF or CRLF", () => {
    expect(MAX_LINE_BYTES).toBe(65_536)
    const r1 = run(bytes(`x\n${a(MAX_LINE_BYTES)}\n`))
    expect("lines" in r1 && r1.lines[1]!.length).toBe(MAX_LINE_BYTES)
    const r2 = run(bytes(`x\r\n${a(MAX_LINE_BYTES)}\r\n`))
    expect("lines" in r2 && r2.lines[1]!.length).toBe(MAX_LINE_BYTES)
  })
  it("one byte more is SESSION_LINE_TOO_LONG with the line number", () => {
    expect(run(bytes(`x\n${a(MAX_LINE_BYTES + 1)}\n`))).toEqual({ code: "SESSION_LINE_TOO_LONG", line: 2 })
    expect(run(bytes(`x\r\ny\r\n${a(MAX_LINE_BYTES + 1)}\r\n`))).toEqual({ code: "SESSION_LINE_TOO_LONG", line: 3 })
  })
  it("the cap counts bytes, not characters", () => {
    const ok = "é".repeat(MAX_LINE_BYTES / 2) // 2 bytes each
    expect(run(bytes(`${ok}\n`))).toEqual({ lines: [ok], tail: null })
    expect(run(bytes(`${ok}a\n`))).toEqual({ code: "SESSION_LINE_TOO_LONG", line: 1 })
  })
  it("a CR that is not part of the terminator counts", () => {
    expect(run(bytes(`${a(MAX_LINE_BYTES)}\r\r\n`))).toEqual({ code: "SESSION_LINE_TOO_LONG", line: 1 })
  })
  it("the tail obeys the same cap", () => {
    const r = run(bytes(`x\n${a(MAX_LINE_BYTES)}`))
    expect("tail" in r && r.tail?.length).toBe(MAX_LINE_BYTES)
    expect(run(bytes(`x\n${a(MAX_LINE_BYTES + 1)}`))).toEqual({ code: "SESSION_LINE_TOO_LONG", line: 2 })
    // A final lone CR is a terminator cut in half, not content.
    expect("tail" in run(bytes(`x\n${a(MAX_LINE_BYTES)}\r`))).toBe(true)
    expect(run(bytes(`x\n${a(MAX_LINE_BYTES)}b\r`))).toEqual({ code: "SESSION_LINE_TOO_LONG", line: 2 })
  })
  it("a file of exactly MAX_FILE_BYTES is accepted, one byte more is SESSION_FILE_TOO_LARGE", () => {
    expect(MAX_FILE_BYTES).toBe(4_194_304)
    const line = `${a(1023)}\n`
    const full = bytes(line.repeat(MAX_FILE_BYTES / 1024))
    expect(full.byteLength).toBe(MAX_FILE_BYTES)
    const r = run(full)
    expect("lines" in r && r.lines.length).toBe(4096)
    const over = new Uint8Array(MAX_FILE_BYTES + 1).fill(0x61)
    expect(run(over)).toEqual({ code: "SESSION_FILE_TOO_LARGE", line: undefined })
  })
  it("the size check comes before UTF-8 validation", () => {
    const over = new Uint8Array(MAX_FILE_BYTES + 1).fill(0xff)
    expect(run(over)).toMatchObject({ code: "SESSION_FILE_TOO_LARGE" })
  })
})

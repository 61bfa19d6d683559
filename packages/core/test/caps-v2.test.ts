/**
 * The session caps of version 2 on load: 1,048,576 entries and 268,435,456 bytes, one past each
 * refused before any line is decoded (the lines here are one string repeated, so no session of that
 * size is built), and version 1's caps unchanged beside them.
 */
import { describe, expect, it } from "vitest"
import { CAPS_V1, CAPS_V2, decodeLines } from "../src/Codec.js"
import * as Either from "effect/Either"
import { CorruptError } from "../src/SessionError.js"

const header = (version: 1 | 2) => `{"type":"session","version":${version},"id":"s","timestamp":"2026-01-02T03:04:05.006Z"}`
const entryLine = `{"type":"entry","version":2,"id":"e","parentId":null,"timestamp":"2026-01-02T03:04:05.006Z","kind":"title","title":"t"}`

const codeOf = (result: ReturnType<typeof decodeLines>) => {
  if (Either.isRight(result)) return ["ok"]
  // A refused session is stored data that is wrong: a CorruptError, never another class.
  expect(result.left).toBeInstanceOf(CorruptError)
  return [result.left.code, result.left.line]
}

describe("the caps of version 2", () => {
  it("1,048,577 entries are SESSION_TOO_MANY_ENTRIES at line 1,048,578; version 1 stops at 4,097", () => {
    for (const [version, entries] of [[2, CAPS_V2.entries], [1, CAPS_V1.entries]] as const) {
      const lines = [header(version), ...new Array<string>(entries + 1).fill(entryLine)]
      expect(codeOf(decodeLines({ lines, sizes: lines.map((l) => l.length), tail: "none" }))).toEqual(["SESSION_TOO_MANY_ENTRIES", entries + 2])
    }
  })

  it("a session of 268,435,457 bytes is SESSION_FILE_TOO_LARGE; 268,435,456 passes the cap", () => {
    const lines = [header(2)]
    const sizes = [lines[0]!.length]
    expect(codeOf(decodeLines({ lines, sizes, size: CAPS_V2.sessionBytes + 1, tail: "none" }))[0]).toBe("SESSION_FILE_TOO_LARGE")
    expect(codeOf(decodeLines({ lines, sizes, size: CAPS_V2.sessionBytes, tail: "none" }))).toEqual(["ok"])
    // The same size is far over version 1's cap.
    expect(codeOf(decodeLines({ lines: [header(1)], sizes, size: CAPS_V1.sessionBytes + 1, tail: "none" }))[0]).toBe("SESSION_FILE_TOO_LARGE")
  })
})

/**
 * The line cap counts bytes, not characters: lines of 1- to 4-byte characters
 * (the last two UTF-16 units each) whose byte length lands just below, on and
 * just above the cap, or around a third of it, against `Buffer.byteLength` as
 * the oracle; as complete lines and as the tail, first line or not.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import { MAX_LINE_BYTES } from "@session-tree/core/Codec"
import { splitLines } from "../src/internal/lines.js"
import { SessionError , isSessionError } from "@session-tree/core/SessionError"

const CHARS = ["a", "é", "✓", "😀"] // 1, 2, 3 and 4 bytes; the last is two UTF-16 units

/** A line of about `bytes` bytes made of `mix`, then topped up with "a" to exactly `bytes`. */
const lineOf = (mix: ReadonlyArray<number>, bytes: number): string => {
  const parts: Array<string> = []
  let n = 0
  for (let i = 0; ; i++) {
    const c = CHARS[mix[i % mix.length]!]!
    const size = Buffer.byteLength(c)
    if (n + size > bytes) break
    parts.push(c)
    n += size
  }
  return parts.join("") + "a".repeat(bytes - n)
}

describe("splitLines: the cap counts bytes, whatever the characters", () => {
  it.prop(
    "accepts a line exactly when its UTF-8 bytes are at most MAX_LINE_BYTES, as a line or as the tail",
    [
      fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 6 }),
      fc.oneof(
        fc.integer({ min: MAX_LINE_BYTES - 4, max: MAX_LINE_BYTES + 4 }),
        fc.integer({ min: Math.floor(MAX_LINE_BYTES / 3) - 4, max: Math.floor(MAX_LINE_BYTES / 3) + 4 }),
        fc.integer({ min: 1, max: MAX_LINE_BYTES + 100 })
      ),
      fc.constantFrom("\n", "\r\n", "", "\r"),
      fc.boolean()
    ],
    ([mix, bytes, end, first]) => {
      const line = lineOf(mix, bytes)
      // Make sure the file is UTF-8, not ASCII, even when the line is.
      const before = first ? "" : "é\n"
      const r = Either.merge(splitLines(Buffer.from(before + line + end, "utf8")))
      const lineNo = first ? 1 : 2
      if (Buffer.byteLength(line) > MAX_LINE_BYTES) {
        expect(isSessionError(r)).toBe(true)
        expect([(r as SessionError).code, (r as SessionError).line]).toEqual(["SESSION_LINE_TOO_LONG", lineNo])
        expect((r as SessionError).reason).toContain(`line has ${Buffer.byteLength(line)} bytes`)
      } else {
        expect(isSessionError(r)).toBe(false)
        const split = r as Exclude<typeof r, SessionError>
        if (end === "\n" || end === "\r\n") expect(split.lines.at(-1)).toBe(line)
        else expect(split.tail).toBe(line + end)
      }
    },
    { fastCheck: { numRuns: 300 } }
  )
})

/**
 * Record lines for the core's tests: what every backend hands the loader, made
 * here from a text of `\n`-terminated lines. (Reading files, `\r\n` and torn
 * tails are the file backend's, and tested there.)
 */
import { type DecodedSession, decodeLines, type RecordLines } from "../../src/Codec.js"
import * as Either from "effect/Either"
import type { CorruptError } from "../../src/SessionError.js"

export const linesOf = (text: string): RecordLines => {
  if (!text.endsWith("\n")) throw new Error("the text must end with a newline")
  const lines = text.slice(0, -1).split("\n")
  return { lines, sizes: lines.map((line) => Buffer.byteLength(line)), tail: "none" }
}

/** Decodes a text of `\n`-terminated lines as the loader decodes a session's lines: the session, or the error. */
export const decodeText = (text: string): DecodedSession | CorruptError => Either.merge(decodeLines(linesOf(text)))

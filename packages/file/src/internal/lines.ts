/**
 * Bytes → physical lines (`docs/format.md`, "Lines, caps and the tail"). Pure and allocation-light: the loader calls
 * it once per load on the whole file, so newlines are found with the native
 * `Buffer#indexOf` and each line is decoded straight from the shared buffer.
 */
import { CAPS_V1, CAPS_V2, capsOf, versionOf } from "@session-tree/core/Codec"
import { type CorruptError, sessionError } from "@session-tree/core/SessionError"
import * as Either from "effect/Either"
import { Buffer, isAscii, isUtf8 } from "node:buffer"
import type { SessionCaps } from "./io.js"

export interface SplitLines {
  /** Complete lines without their `\n` / `\r\n`; `lines[0]` is physical line 1. */
  readonly lines: ReadonlyArray<string>
  /** The size of each line in bytes, terminator excluded. */
  readonly sizes: ReadonlyArray<number>
  /** Bytes after the last `\n`, or `null` when there are none. */
  readonly tail: string | null
  /** The size of `tail` in bytes, a final lone `\r` excluded. */
  readonly tailSize?: number
}

const LF = 0x0a
const CR = 0x0d

/** A file's physical lines, or why its bytes cannot be a session's (too large, not UTF-8, a line over the cap). */
export const splitLines = (bytes: Uint8Array): Either.Either<SplitLines, CorruptError> => {
  const size = bytes.byteLength
  // A view, not a copy: `Buffer.from(Uint8Array)` would copy the bytes.
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, size)
  // The caps are the format version's, which the header line declares.
  const caps = capsOf(versionOf(headerText(buf)))
  if (size > caps.sessionBytes) {
    return Either.left(sessionError("SESSION_FILE_TOO_LARGE", `file has ${size} bytes, at most ${caps.sessionBytes} are allowed`))
  }
  return splitWithin(buf, caps.lineBytes)
}

/**
 * The physical lines of bytes that follow a session's first lines (an append read on its own),
 * under the caps of format `version`, which the header before them declared.
 */
export const splitLinesAfter = (bytes: Uint8Array, version: 1 | 2): Either.Either<SplitLines, CorruptError> =>
  splitWithin(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), capsOf(version).lineBytes)

const splitWithin = (buf: Buffer, lineBytes: number): Either.Either<SplitLines, CorruptError> => {
  // SIMD passes over the whole file; only a failure pays for locating the line.
  // Pure ASCII (the usual case) is valid UTF-8, and decodes faster as latin1.
  const encoding = isAscii(buf) ? "latin1" : "utf8"
  if (encoding === "utf8" && !isUtf8(buf)) {
    return Either.left(sessionError("SESSION_INVALID_UTF8", "file is not valid UTF-8", { line: firstInvalidLine(buf) }))
  }
  return encoding === "latin1" ? splitAscii(buf, lineBytes) : splitUtf8(buf, lineBytes)
}

/** The most of the first line read to learn the version: a header longer than any line may be is refused anyway. */
const HEADER_BYTES = 1_048_577

/** The text of the first line, as much of it as the version needs (`HEADER_BYTES`). */
const headerText = (head: Uint8Array): string => {
  const buf = Buffer.from(head.buffer, head.byteOffset, head.byteLength)
  const end = buf.indexOf(LF)
  return buf.toString("utf8", 0, Math.min(end === -1 ? buf.length : end, HEADER_BYTES))
}

/** The format version the first line of `bytes` declares (see `Codec.versionOf`). */
export const versionOfHead = (bytes: Uint8Array): 1 | 2 => versionOf(headerText(bytes))

/**
 * The caps of a session file before it is read whole: a version-1 file over its cap is refused
 * from its first line, and no file is read beyond the largest cap.
 */
export const SESSION_CAPS: SessionCaps = {
  most: CAPS_V2.sessionBytes,
  least: CAPS_V1.sessionBytes,
  headBytes: HEADER_BYTES,
  of: (head) => capsOf(versionOf(headerText(head))).sessionBytes
}


/**
 * An ASCII file: one string for the whole file and the lines as slices of it,
 * one large allocation instead of thousands of small ones. A character is a
 * byte, so lengths in characters are lengths in bytes.
 */
const splitAscii = (buf: Buffer, lineBytes: number): Either.Either<SplitLines, CorruptError> => {
  const text = buf.toString("latin1")
  const lines: Array<string> = []
  const sizes: Array<number> = []
  let start = 0
  let nl = text.indexOf("\n")
  while (nl !== -1) {
    const end = nl > start && text.charCodeAt(nl - 1) === CR ? nl - 1 : nl
    if (end - start > lineBytes) return lineTooLong(lines.length + 1, end - start, lineBytes)
    lines.push(text.slice(start, end))
    sizes.push(end - start)
    start = nl + 1
    nl = text.indexOf("\n", start)
  }
  if (start === text.length) return Either.right({ lines, sizes, tail: null })
  return tail(lines, sizes, text.slice(start), buf.length - start, lineBytes)
}

/**
 * Any other (valid UTF-8) file: each line decoded on its own. One decode of
 * the whole file would make every line a two-byte string as soon as one
 * character anywhere needs it; decoded alone, a line without one stays a
 * one-byte string, which decodes and parses faster (see BENCHMARKS.md).
 */
const splitUtf8 = (buf: Buffer, lineBytes: number): Either.Either<SplitLines, CorruptError> => {
  const lines: Array<string> = []
  const sizes: Array<number> = []
  let start = 0
  let nl = buf.indexOf(LF, 0)
  while (nl !== -1) {
    const end = nl > start && buf[nl - 1] === CR ? nl - 1 : nl
    if (end - start > lineBytes) return lineTooLong(lines.length + 1, end - start, lineBytes)
    lines.push(buf.toString("utf8", start, end))
    sizes.push(end - start)
    start = nl + 1
    nl = buf.indexOf(LF, start)
  }
  if (start === buf.length) return Either.right({ lines, sizes, tail: null })
  return tail(lines, sizes, buf.toString("utf8", start), buf.length - start, lineBytes)
}

/**
 * The lines and the bytes after the last newline (`bytes` of them). A final
 * lone "\r" may be a terminator cut in half by a crash, so like a terminator
 * it does not count towards the cap; it stays in the text.
 */
const tail = (
  lines: Array<string>,
  sizes: Array<number>,
  text: string,
  bytes: number,
  lineBytes: number
): Either.Either<SplitLines, CorruptError> => {
  const length = bytes - (text.charCodeAt(text.length - 1) === CR ? 1 : 0)
  return length > lineBytes ? lineTooLong(lines.length + 1, length, lineBytes) : Either.right({ lines, sizes, tail: text, tailSize: length })
}

const lineTooLong = (line: number, length: number, lineBytes: number): Either.Either<never, CorruptError> =>
  Either.left(sessionError("SESSION_LINE_TOO_LONG", `line has ${length} bytes, at most ${lineBytes} are allowed`, { line }))

/**
 * 0x0A never occurs inside a multi-byte UTF-8 sequence, so the buffer is valid
 * exactly when every newline-separated segment is; the first bad segment is
 * the line holding the first bad byte.
 */
const firstInvalidLine = (buf: Buffer): number => {
  let line = 1
  let start = 0
  for (;;) {
    const nl = buf.indexOf(LF, start)
    const end = nl === -1 ? buf.length : nl
    if (!isUtf8(buf.subarray(start, end))) return line
    if (nl === -1) return line
    line++
    start = nl + 1
  }
}

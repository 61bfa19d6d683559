/**
 * Reading a Pi session file (format 3) up to its entries: the bytes as UTF-8,
 * the lines, and the header. Shared by both conversions of `PiSession`, which
 * differ only in what the entries become.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { parseObjectLine } from "../Json.js"
import { Id, Timestamp } from "../Record.js"
import { type CorruptError, sessionError } from "../SessionError.js"

/** The only Pi session format read here. Pi migrates older files when it opens them. */
export const PI_VERSION = 3

/** The first line of a Pi session file. */
export const PiHeader = Schema.Struct({
  type: Schema.Literal("session"),
  version: Schema.Literal(PI_VERSION),
  id: Schema.Unknown,
  timestamp: Schema.Unknown,
  // Every Pi header names its working directory; this project's own header has none.
  cwd: Schema.String
})

const decodeHeader = Schema.decodeUnknownEither(PiHeader)
const hasOwn = Object.prototype.hasOwnProperty

export type JsonRecord = { readonly [key: string]: unknown }
export const own = (o: JsonRecord, key: string): unknown => (hasOwn.call(o, key) ? o[key] : undefined)

/** The file's text, or SESSION_INVALID_UTF8. */
export const decodeUtf8 = (bytes: Uint8Array): Either.Either<string, CorruptError> => {
  try {
    // ignoreBOM keeps a byte order mark in the text, where it makes the header invalid JSON, as it does for Pi.
    return Either.right(new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes))
  } catch (cause) {
    return Either.left(sessionError("SESSION_INVALID_UTF8", "the file is not valid UTF-8", { cause }))
  }
}

/**
 * The lines of the file. A final newline ends the last line; bytes after the last newline are a
 * last line without one. A CR before a newline needs no handling: JSON allows it as whitespace.
 */
export const splitLines = (text: string): Array<string> => {
  const lines = text.split("\n")
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop()
  return lines
}

/** What every Pi entry holds, whatever its type: a string type, an ID, a parent ID or null, an ISO timestamp. */
export const PiEntry = Schema.Struct({
  type: Schema.String,
  id: Id,
  parentId: Schema.NullOr(Id),
  timestamp: Timestamp
})

const decodeEntry = Schema.decodeUnknownEither(PiEntry)

/**
 * Entry line `line` of a Pi file: its record and what every entry holds, or the problem with it
 * (not JSON, a second header, no entry's fields).
 */
export const readEntry = (
  text: string,
  line: number
): Either.Either<{ readonly record: JsonRecord; readonly entry: typeof PiEntry.Type }, CorruptError> => {
  const parsed = parseObjectLine(text)
  if (Either.isLeft(parsed)) return Either.left(sessionError("SESSION_INVALID_JSON", parsed.left, { line }))
  return checkEntry(parsed.right, line)
}

/** An entry's record, parsed: it and what every entry holds, or the problem with it (a second header, no entry's fields). */
export const checkEntry = (
  record: JsonRecord,
  line: number
): Either.Either<{ readonly record: JsonRecord; readonly entry: typeof PiEntry.Type }, CorruptError> => {
  if (own(record, "type") === "session") return Either.left(sessionError("SESSION_INVALID_HEADER", "a second header", { line }))
  const entry = decodeEntry(record)
  return Either.isLeft(entry)
    ? Either.left(sessionError(
      "SESSION_INVALID_RECORD",
      "not a Pi entry: it needs a string type, a non-empty string id, a parentId that is null or an ID, and an ISO timestamp",
      { line }
    ))
    : Either.right({ record, entry: entry.right })
}

/** The Pi header (line 1) as parsed, or why the file is not a Pi format-3 session. */
export const readHeader = (text: string | undefined): Either.Either<JsonRecord, CorruptError> =>
  Either.flatMap(readRecord(text), checkHeader)

/** Line 1's record, parsed, when it is a Pi format-3 header; else why the file is not a Pi format-3 session. */
export const checkHeader = (header: JsonRecord): Either.Either<JsonRecord, CorruptError> =>
  Either.isRight(decodeHeader(header)) ? Either.right(header) : Either.left(headerProblem(header))

const readRecord = (text: string | undefined): Either.Either<JsonRecord, CorruptError> => {
  if (text === undefined || text === "") {
    return Either.left(sessionError("SESSION_INVALID_HEADER", "the first line is empty: there is no Pi session header", { line: 1 }))
  }
  const parsed = parseObjectLine(text)
  return Either.mapLeft(parsed, (reason) => sessionError("SESSION_INVALID_JSON", reason, { line: 1 }))
}

/** Why a JSON object on line 1 is not a Pi format-3 header. */
const headerProblem = (header: JsonRecord): CorruptError => {
  // Which rule failed, in an order that tells a session-tree file from a Pi one.
  if (own(header, "type") !== "session") {
    return sessionError("SESSION_INVALID_HEADER", "the first line is not a Pi session header", { line: 1 })
  }
  const version = own(header, "version")
  if (typeof own(header, "cwd") !== "string") {
    return sessionError(
      "SESSION_INVALID_HEADER",
      (version === 1 || version === 2) && !hasOwn.call(header, "cwd")
        ? "not a Pi session header (no cwd): this looks like a session-tree file, which is imported as session-tree"
        : "not a Pi session header (no cwd)",
      { line: 1 }
    )
  }
  return sessionError(
    "SESSION_UNSUPPORTED_VERSION",
    `Pi session format ${version === undefined ? "1 (no version)" : JSON.stringify(version)} is not supported, only ${PI_VERSION} (Pi migrates a file when it opens it)`,
    { line: 1 }
  )
}

/** The fields of `o` other than `used`, in the file's order; undefined when there are none (what an import keeps verbatim). */
export const restOf = (o: JsonRecord, used: ReadonlyArray<string>): Record<string, unknown> | undefined => {
  let rest: Record<string, unknown> | undefined
  for (const key of Object.keys(o)) {
    if (used.includes(key)) continue
    rest ??= {}
    rest[key] = o[key]
  }
  return rest
}

/**
 * Record lines → a validated history, and records → their canonical lines
 * (`docs/format.md`). Every backend hands the loader the same thing: the text of the
 * header line and of each entry line, with their sizes in bytes. So a file, a
 * database row and a line in memory are held to exactly one notion of a valid
 * session, caps included.
 */
import { History } from "./History.js"
import { checkParsedLine, firstArgumentsKey, firstInexactNumber, firstInexactNumberFrom, parseObjectLine, syntaxReason } from "./Json.js"
import { decodeCanonicalLine, decodeHeader, decodeParsedEntry, type Entry, type Header } from "./Record.js"
import * as V2 from "./RecordV2.js"
import * as Either from "effect/Either"
import { CorruptError, sessionError } from "./SessionError.js"

/**
 * Bytes per line, terminator excluded.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_LINE_BYTES = 65_536
/**
 * Bytes of a whole session: its canonical generation, every line with its newline.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_FILE_BYTES = 4_194_304
/**
 * Entries per session.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_ENTRIES = 4_096

/**
 * The caps of one format version.
 *
 * @since 0.1.0
 * @category models
 */
export interface Caps {
  /** Bytes per line, terminator excluded. */
  readonly lineBytes: number
  /** Bytes of a whole session, every line with its newline. */
  readonly sessionBytes: number
  readonly entries: number
}

/**
 * The caps of version 1.
 *
 * @since 0.1.0
 * @category constants
 */
export const CAPS_V1: Caps = { lineBytes: MAX_LINE_BYTES, sessionBytes: MAX_FILE_BYTES, entries: MAX_ENTRIES }
/**
 * The caps of version 2.
 *
 * @since 0.1.0
 * @category constants
 */
export const CAPS_V2: Caps = { lineBytes: 1_048_576, sessionBytes: 268_435_456, entries: 1_048_576 }
/**
 * Bytes of one blob (version 2).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_BLOB_BYTES = 67_108_864
/**
 * File data over this many bytes (decoded) is stored as a blob on append; up to it, inline as base64.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_INLINE_FILE_BYTES = 65_536

/**
 * The caps of a format version.
 *
 * @since 0.1.0
 * @category codec
 */
export const capsOf = (version: 1 | 2): Caps => (version === 2 ? CAPS_V2 : CAPS_V1)

/**
 * The format version a header line declares: 2 when it is a JSON object whose `version` is 2,
 * else 1, whose rules then judge the session (and explain what is wrong with its header).
 *
 * @since 0.1.0
 * @category codec
 */
export const versionOf = (headerLine: string | undefined): 1 | 2 => {
  if (headerLine === undefined || headerLine.length > CAPS_V2.lineBytes || !headerLine.includes("2")) return 1
  try {
    const value: unknown = JSON.parse(headerLine)
    return typeof value === "object" && value !== null && Object.prototype.hasOwnProperty.call(value, "version") &&
        (value as { readonly version: unknown }).version === 2
      ? 2
      : 1
  } catch {
    return 1
  }
}

/**
 * What a backend read back: a session's lines, in order, none with its terminator.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecordLines {
  /** The header's line first, then one line per entry in commit order. */
  readonly lines: ReadonlyArray<string>
  /** The UTF-8 size of each line in bytes, as the backend stored it. */
  readonly sizes: ReadonlyArray<number>
  /** Bytes the whole session takes as stored (a file's size); by default the lines with a newline each. */
  readonly size?: number | undefined
  /** `incomplete` when the backend skipped an unfinished final record (only a file can hold one). */
  readonly tail: "none" | "incomplete"
  /**
   * The entry ID each entry line is stored under, for a backend that indexes entries by ID
   * (a database): a record that does not hold that ID was changed behind the library's back.
   */
  readonly ids?: ReadonlyArray<string> | undefined
  /**
   * The blobs the session holds, by hash (64 lowercase hexadecimal digits), with the size of
   * each in bytes as stored. Every blob an entry refers to must be there with its size; none
   * are when this is absent.
   */
  readonly blobs?: ReadonlyMap<string, number> | undefined
}

/**
 * A decoded session: its header and its validated history.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecodedSession {
  readonly header: Header
  readonly history: History
  readonly tail: "none" | "incomplete"
}

// The per-line decoders below run once for each line of a session: they return the entry or the
// error itself, so that a valid line allocates nothing beyond its entry; `decodeLines` answers with an Either.

/**
 * One entry line → its entry: a canonical record in one pass
 * (`decodeCanonicalLine`); anything else, or any doubt, through the general
 * path, which finds and explains the first problem.
 */
const decodeEntryLineV1 = (text: string, line: number, _blobs?: ReadonlyMap<string, number>): Entry | CorruptError => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return sessionError("SESSION_INVALID_JSON", syntaxReason(e), { line })
  }
  const canonical = decodeCanonicalLine(value, text)
  if (canonical !== undefined) {
    const entry = canonical.entry
    if (!text.startsWith(CANONICAL_PREFIX)) return exactNumbers(entry, text, line)
    // The canonical prefix spells the version `1`: any other number is in the arguments, which
    // begin at the first "arguments" key after the message's content. The content's text in the
    // line is at least as long as the content, so a search from that offset never passes the key.
    if (!canonical.numbers) return entry
    const message = entry.message
    const literal = firstInexactNumberFrom(text, firstArgumentsKey(text, message.role === "assistant" ? message.content.length : 0))
    return literal === undefined ? entry : inexactNumber(literal, "SESSION_INVALID_MESSAGE", line)
  }
  const parsed = checkParsedLine(value, text)
  if (Either.isLeft(parsed)) return sessionError("SESSION_INVALID_JSON", parsed.left, { line })
  const record = parsed.right
  if (Object.prototype.hasOwnProperty.call(record, "type") && record["type"] === "session") {
    return sessionError("SESSION_INVALID_HEADER", "a second header", { line })
  }
  const entry = decodeParsedEntry(record, line)
  return Either.isLeft(entry) ? entry.left : exactNumbers(entry.right, text, line)
}

const CANONICAL_PREFIX = `{"type":"entry","version":1,"`

/** One entry line of a version-2 session → its entry, or the first problem with it. */
const decodeEntryLineV2 = (
  text: string,
  line: number,
  blobs: ReadonlyMap<string, number> | undefined,
  checkBlobs = true
): Entry | CorruptError => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return sessionError("SESSION_INVALID_JSON", syntaxReason(e), { line })
  }
  const canonical = V2.decodeCanonicalLine(value, text)
  if (canonical !== undefined) {
    const blob = checkBlobs ? V2.missingBlob(canonical.entry, blobs, line) : undefined
    if (blob !== undefined) return blob
    return canonical.numbers ? exactNumbers(canonical.entry, text, line) : canonical.entry
  }
  const parsed = checkParsedLine(value, text)
  if (Either.isLeft(parsed)) return sessionError("SESSION_INVALID_JSON", parsed.left, { line })
  const record = parsed.right
  const type = Object.prototype.hasOwnProperty.call(record, "type") ? record["type"] : undefined
  if (type === "session") return sessionError("SESSION_INVALID_HEADER", "a second header", { line })
  const version = Object.prototype.hasOwnProperty.call(record, "version") ? record["version"] : undefined
  if (type === "entry" && typeof version === "number" && version !== V2.VERSION) {
    return sessionError("SESSION_UNSUPPORTED_VERSION", `entry version ${version} in a version-2 session`, { line })
  }
  const entry = V2.decodeEntry(record, line)
  if (Either.isLeft(entry)) return entry.left
  return (checkBlobs ? V2.missingBlob(entry.right, blobs, line) : undefined) ?? exactNumbers(entry.right, text, line)
}


/**
 * `record`, unless its line holds a number literal that the record cannot hold exactly, which the
 * next rewrite would change (`docs/format.md`, "Numbers"): SESSION_INVALID_MESSAGE inside the message, else `code`.
 */
const exactNumbers = <A>(record: A, text: string, line: number, code: "SESSION_INVALID_RECORD" | "SESSION_INVALID_HEADER" = "SESSION_INVALID_RECORD"): A | CorruptError => {
  const inexact = firstInexactNumber(text)
  return inexact === undefined ? record : inexactNumber(inexact.literal, inexact.inMessage ? "SESSION_INVALID_MESSAGE" : code, line)
}

const inexactNumber = (literal: string, code: "SESSION_INVALID_MESSAGE" | "SESSION_INVALID_RECORD" | "SESSION_INVALID_HEADER", line: number) =>
  sessionError(code, `the number ${literal} cannot be held exactly: a rewrite would write ${JSON.stringify(Number(literal))}`, { line })

/** The caps over the lines' sizes (`docs/format.md`, "Lines, caps and the tail"): a session over the file cap, or the first line over its cap. */
const checkSizes = (input: RecordLines, caps: Caps): CorruptError | undefined => {
  const sizes = input.sizes
  let total = input.size
  if (total === undefined) {
    total = 0
    for (let i = 0; i < sizes.length; i++) total += sizes[i]! + 1
  }
  if (total > caps.sessionBytes) {
    return sessionError("SESSION_FILE_TOO_LARGE", `the session holds ${total} bytes, more than ${caps.sessionBytes}`)
  }
  for (let i = 0; i < sizes.length; i++) {
    const size = sizes[i]!
    if (size > caps.lineBytes) {
      return sessionError("SESSION_LINE_TOO_LONG", `line has ${size} bytes, at most ${caps.lineBytes} are allowed`, { line: i + 1 })
    }
  }
  return undefined
}

/**
 * Decodes a session's lines: the session, or the first problem in line order (it fails closed).
 * Line numbers count from the header (line 1), as in the session's file.
 *
 * @since 0.1.0
 * @category decoding
 */
export const decodeLines = (input: RecordLines): Either.Either<DecodedSession, CorruptError> => {
  const decoded = decodeLinesOrError(input)
  return decoded instanceof CorruptError ? Either.left(decoded) : Either.right(decoded)
}

const decodeLinesOrError = (input: RecordLines): DecodedSession | CorruptError => {
  const { ids, lines, tail } = input
  const version = versionOf(lines[0])
  const caps = capsOf(version)
  const oversize = checkSizes(input, caps)
  if (oversize !== undefined) return oversize
  if (lines.length === 0) {
    return sessionError("SESSION_INVALID_HEADER", tail === "incomplete" ? "the header is incomplete" : "the header is missing", {
      line: 1
    })
  }
  if (lines.length - 1 > caps.entries) {
    return sessionError("SESSION_TOO_MANY_ENTRIES", `more than ${caps.entries} entries`, { line: caps.entries + 2 })
  }
  const first = parseObjectLine(lines[0]!)
  if (Either.isLeft(first)) return sessionError("SESSION_INVALID_JSON", first.left, { line: 1 })
  const decodedHeader = decodeHeader(first.right, 1)
  if (Either.isLeft(decodedHeader)) return decodedHeader.left
  const header = exactNumbers(decodedHeader.right, lines[0]!, 1, "SESSION_INVALID_HEADER")
  if (header instanceof CorruptError) return header
  const history = new History()
  const decodeOne = header.version === 1 ? decodeEntryLineV1 : decodeEntryLineV2
  for (let i = 1; i < lines.length; i++) {
    const entry = decodeOne(lines[i]!, i + 1, input.blobs)
    if (entry instanceof CorruptError) return entry
    const problem = history.checkAndAdd(entry, i + 1)
    if (problem !== undefined) return problem
    if (ids !== undefined && ids[i - 1] !== entry.id) {
      return sessionError("SESSION_INVALID_RECORD", `the line is stored as entry "${ids[i - 1]}" but holds entry "${entry.id}"`, {
        line: i + 1
      })
    }
  }
  return { header, history, tail }
}

/**
 * One entry line of a session of `version` → its entry, checked as a load checks that line on its
 * own (JSON, record, exact numbers; with `blobs`, the blobs it refers to): not what needs the rest
 * of the session (the history, the caps). For readers of single lines, such as search.
 *
 * @since 0.2.0
 * @category decoding
 */
export const decodeEntryLine = (
  version: 1 | 2,
  text: string,
  line?: number,
  blobs?: ReadonlyMap<string, number>
): Either.Either<Entry, CorruptError> => {
  // Without a line number an error names none (`line` is optional in every error).
  const at = line as number
  const entry = version === 1 ? decodeEntryLineV1(text, at) : decodeEntryLineV2(text, at, blobs, blobs !== undefined)
  return entry instanceof CorruptError ? Either.left(entry) : Either.right(entry)
}

/**
 * The canonical text of a record: `JSON.stringify` in schema key order, without the newline.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeRecord = (record: Header | Entry): string => JSON.stringify(record)

/**
 * The canonical line of a record: its text and `\n` (`docs/format.md`, "Canonical bytes").
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeLine = (record: Header | Entry): string => encodeRecord(record) + "\n"

/**
 * The UTF-8 size of a string in bytes, without encoding it. For what
 * `JSON.stringify` writes (never a lone surrogate) this is exact; a lone
 * surrogate counts as the three bytes of U+FFFD that an encoder writes for it.
 *
 * @since 0.1.0
 * @category codec
 */
export const utf8Length = (text: string): number => {
  const n = text.length
  let bytes = n
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x80) continue
    if (c < 0x800) bytes += 1
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < n && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A surrogate pair: two code units, four bytes.
      bytes += 2
      i++
    } else bytes += 2
  }
  return bytes
}

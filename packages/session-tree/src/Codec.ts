/**
 * The whole pipeline from the bytes of one generation to its records, and the
 * canonical encoding back (SPEC B1, B3). Pure: no filesystem, so the file store
 * and any later backend share exactly one notion of a valid session.
 */
import { History } from "./History.js"
// Loaded for its effect only: it keeps the loader's optimized code alive between loads.
import "./internal/anchors.js"
import { checkParsedLine, classifyTail, parseObjectLine, syntaxReason } from "./internal/json.js"
import { MAX_FILE_BYTES, MAX_LINE_BYTES, splitLines } from "./internal/lines.js"
import { decodeCanonicalLine, decodeHeader, decodeParsedEntry, type SessionEntry, type SessionHeader } from "./Record.js"
import { SessionError, sessionError } from "./SessionError.js"

export { MAX_FILE_BYTES, MAX_LINE_BYTES }
export const MAX_ENTRIES = 4_096

export interface DecodedSession {
  readonly header: SessionHeader
  readonly history: History
  /** `incomplete` when bytes after the last newline were a viable, unfinished JSON object and were skipped. */
  readonly tail: "none" | "incomplete"
}

const parseLine = (text: string, line: number): { readonly [key: string]: unknown } | SessionError => {
  const parsed = parseObjectLine(text)
  return parsed.ok ? parsed.value : sessionError("SESSION_INVALID_JSON", parsed.reason, { line })
}

/**
 * One entry line → its entry: a canonical record in one pass
 * (`decodeCanonicalLine`); anything else, or any doubt, through the general
 * path, which finds and explains the first problem.
 */
const decodeEntryLine = (text: string, line: number): SessionEntry | SessionError => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return sessionError("SESSION_INVALID_JSON", syntaxReason(e), { line })
  }
  const canonical = decodeCanonicalLine(value, text)
  if (canonical !== undefined) return canonical
  const parsed = checkParsedLine(value, text)
  if (!parsed.ok) return sessionError("SESSION_INVALID_JSON", parsed.reason, { line })
  const record = parsed.value
  if (Object.prototype.hasOwnProperty.call(record, "type") && record["type"] === "session") {
    return sessionError("SESSION_INVALID_HEADER", "a second header", { line })
  }
  return decodeParsedEntry(record, line)
}

/** Decodes one generation; fails closed on the first problem in line order. */
export const decodeSession = (bytes: Uint8Array): DecodedSession | SessionError => {
  const split = splitLines(bytes)
  if (split instanceof SessionError) return split
  let lines = split.lines as Array<string>
  let tail: "none" | "incomplete" = "none"
  if (split.tail !== null) {
    const state = classifyTail(split.tail)
    if (state === "invalid") {
      return sessionError("SESSION_INVALID_JSON", "the last line is not a JSON object nor a prefix of one", {
        line: lines.length + 1
      })
    }
    // Whitespace alone is a viable prefix too; either way bytes were skipped and stay on disk.
    if (state === "complete") lines = [...lines, split.tail]
    else tail = "incomplete"
  }
  if (lines.length === 0) {
    return sessionError("SESSION_INVALID_HEADER", tail === "incomplete" ? "the header is incomplete" : "the header is missing", {
      line: 1
    })
  }
  if (lines.length - 1 > MAX_ENTRIES) {
    return sessionError("SESSION_TOO_MANY_ENTRIES", `more than ${MAX_ENTRIES} entries`, { line: MAX_ENTRIES + 2 })
  }
  const first = parseLine(lines[0]!, 1)
  if (first instanceof SessionError) return first
  const header = decodeHeader(first, 1)
  if (header instanceof SessionError) return header
  const history = new History()
  for (let i = 1; i < lines.length; i++) {
    const entry = decodeEntryLine(lines[i]!, i + 1)
    if (entry instanceof SessionError) return entry
    const problem = history.checkAndAdd(entry, i + 1)
    if (problem !== undefined) return problem
  }
  return { header, history, tail }
}

/** The canonical line of a record: `JSON.stringify` in schema key order, then `\n`. */
export const encodeLine = (record: SessionHeader | SessionEntry): string => JSON.stringify(record) + "\n"

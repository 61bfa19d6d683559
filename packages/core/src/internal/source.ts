/**
 * The first step of every import: a source file's bytes → its lines, each one JSON object, with
 * the line number it has in the source. What is not a complete line is told apart from what is
 * damaged: a last line without its newline that does not parse is the agent still writing (torn,
 * left out); any other line that is not one JSON object (bytes that are not UTF-8, two objects
 * glued on one line, an empty line, a number no JavaScript number holds exactly) is damaged.
 */
import * as Either from "effect/Either"
import { firstInexactNumber, type JsonObject, parseObjectLine } from "../Json.js"
import { type CorruptError, sessionError } from "../SessionError.js"

/** Why a line is damaged: not UTF-8, not one JSON object, or a number that would change. */
export type DamageCode = "SESSION_INVALID_UTF8" | "SESSION_INVALID_JSON" | "SESSION_INVALID_RECORD"

/** One line of a source: its 1-based number in the file and the JSON object it holds. */
export interface SourceLine {
  readonly line: number
  readonly record: JsonObject
}

/** A line that is not one JSON object, and why. */
export interface DamagedLine {
  readonly line: number
  /** The line's bytes, without its newline. */
  readonly bytes: Uint8Array
  readonly code: DamageCode
  readonly reason: string
}

/** A last line without its newline that is not a whole JSON object: what an agent is still writing. */
export interface TornLine {
  readonly line: number
  readonly bytes: number
}

export interface SourceLines {
  readonly lines: ReadonlyArray<SourceLine>
  readonly damaged: ReadonlyArray<DamagedLine>
  readonly torn: TornLine | undefined
  /** Every line of the file, the torn one included. */
  readonly count: number
}

const NEWLINE = 0x0a

type Parsed =
  | { readonly ok: true; readonly record: JsonObject }
  | { readonly ok: false; readonly code: DamageCode; readonly reason: string }

/** `text` as one object, or why it is not one (with the code an import reports it under). */
const parse = (text: string): Parsed => {
  if (text.length === 0) return { ok: false, code: "SESSION_INVALID_JSON", reason: "an empty line" }
  const parsed = parseObjectLine(text)
  if (parsed._tag === "Left") return { ok: false, code: "SESSION_INVALID_JSON", reason: parsed.left }
  // Storing a number is writing it again: a literal no number holds exactly would change.
  const inexact = firstInexactNumber(text)
  if (inexact !== undefined) {
    return {
      ok: false,
      code: "SESSION_INVALID_RECORD",
      reason: `the number ${inexact.literal} cannot be held exactly (it would become ${JSON.stringify(Number(inexact.literal))})`
    }
  }
  return { ok: true, record: parsed.right }
}

/** The lines of a source file; never fails: damage is listed, for the caller to refuse or record. */
export const readSource = (bytes: Uint8Array): SourceLines => {
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true })
  const lines: Array<SourceLine> = []
  const damaged: Array<DamagedLine> = []
  let torn: TornLine | undefined
  let start = 0
  let line = 0
  while (start < bytes.length) {
    const end = bytes.indexOf(NEWLINE, start)
    const last = end === -1
    const stop = last ? bytes.length : end
    line++
    const raw = bytes.subarray(start, stop)
    let result: Parsed
    try {
      result = parse(decoder.decode(raw))
    } catch {
      result = { ok: false, code: "SESSION_INVALID_UTF8", reason: "the line is not valid UTF-8" }
    }
    if (result.ok) lines.push({ line, record: result.record })
    // Without its newline, a line that does not parse (or ends inside a character) is still being written.
    else if (last && result.code !== "SESSION_INVALID_RECORD") torn = { line, bytes: raw.length }
    else damaged.push({ line, bytes: raw.slice(), code: result.code, reason: result.reason })
    start = stop + 1
  }
  return { lines, damaged, torn, count: line }
}

/**
 * `convert` over the lines of a source that must hold no damage: the first problem in file order,
 * the conversion's (of the lines that are not damaged) or the first damaged line's.
 */
export const strictly = <A>(
  source: SourceLines,
  convert: (lines: ReadonlyArray<SourceLine>) => Either.Either<A, CorruptError>
): Either.Either<A, CorruptError> => {
  const damaged = source.damaged[0]
  if (damaged === undefined) return convert(source.lines)
  // The lines around the damage, converted: a problem they show before the damaged line comes first.
  const around = convert(source.lines)
  if (Either.isLeft(around) && around.left.line !== undefined && around.left.line < damaged.line) return around
  return Either.left(sessionError(damaged.code, damaged.reason, { line: damaged.line }))
}

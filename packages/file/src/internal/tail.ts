/**
 * The bytes after the last newline of a session file (`docs/format.md`, "Lines, caps and the tail"): a crash can cut
 * the final record short, and only a viable prefix of one JSON object may be
 * skipped as such. An RFC 8259 recogniser; linear, no recursion.
 */

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

export type TailState = "complete" | "incomplete" | "invalid"

// States of the RFC 8259 recogniser below.
const START = 0 // before the top-level object
const OBJ_OPEN = 1 // after "{": a key or "}"
const OBJ_KEY = 2 // after "," in an object: a key
const AFTER_KEY = 3 // ":" expected
const VALUE = 4 // after ":" or "," in an array: a value
const ARR_OPEN = 5 // after "[": a value or "]"
const AFTER_VALUE = 6 // "," or the closer of the current container
const DONE = 7 // top-level object closed: whitespace only
const STRING = 8
const ESCAPE = 9 // after "\" in a string
const UNICODE = 10 // inside \uXXXX, `hex` digits seen
const MINUS = 11 // "-": a digit must follow
const ZERO = 12 // "0" or "-0": no more integer digits
const INT = 13
const DOT = 14 // ".": a digit must follow
const FRAC = 15
const EXP = 16 // "e"/"E": a sign or digit must follow
const EXP_SIGN = 17 // a digit must follow
const EXP_DIGITS = 18
const LITERAL = 19 // inside true/false/null

const OBJ = 0
const ARR = 1

const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39
const isHex = (c: number): boolean =>
  (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)

/**
 * Classifies the bytes after the last newline: exactly one JSON object with
 * optional surrounding whitespace is "complete"; a strict prefix of such a
 * text (some continuation completes it) is "incomplete"; anything else is
 * "invalid". Every state the recogniser can be in without having rejected a
 * character has a completion, so "no rejection yet" is exactly "viable
 * prefix". Linear time; the container stack is explicit.
 */
export const classifyTail = (text: string): TailState => {
  const containers: Array<number> = []
  let state = START
  let isKey = false // the current string is an object key
  let hex = 0
  let literal = ""
  let litPos = 0
  let i = 0
  const n = text.length
  while (i < n) {
    const c = text.charCodeAt(i)
    switch (state) {
      case START:
        if (c === 0x7b) {
          containers.push(OBJ)
          state = OBJ_OPEN
        } else if (!isWs(c)) return "invalid"
        break
      case OBJ_OPEN:
      case OBJ_KEY:
        if (c === QUOTE) {
          state = STRING
          isKey = true
        } else if (c === 0x7d && state === OBJ_OPEN) {
          state = close()
        } else if (!isWs(c)) return "invalid"
        break
      case AFTER_KEY:
        if (c === COLON) state = VALUE
        else if (!isWs(c)) return "invalid"
        break
      case VALUE:
      case ARR_OPEN:
        if (isWs(c)) break
        if (c === 0x5d && state === ARR_OPEN) {
          state = close()
          break
        }
        switch (c) {
          case 0x7b:
            containers.push(OBJ)
            state = OBJ_OPEN
            break
          case 0x5b:
            containers.push(ARR)
            state = ARR_OPEN
            break
          case QUOTE:
            state = STRING
            isKey = false
            break
          case 0x2d:
            state = MINUS
            break
          case 0x30:
            state = ZERO
            break
          case 0x74:
            literal = "true"
            litPos = 1
            state = LITERAL
            break
          case 0x66:
            literal = "false"
            litPos = 1
            state = LITERAL
            break
          case 0x6e:
            literal = "null"
            litPos = 1
            state = LITERAL
            break
          default:
            if (c >= 0x31 && c <= 0x39) state = INT
            else return "invalid"
        }
        break
      case AFTER_VALUE:
        if (c === 0x2c) {
          state = containers[containers.length - 1] === OBJ ? OBJ_KEY : VALUE
        } else if (c === 0x7d || c === 0x5d) {
          if (containers[containers.length - 1] !== (c === 0x7d ? OBJ : ARR)) return "invalid"
          state = close()
        } else if (!isWs(c)) return "invalid"
        break
      case DONE:
        if (!isWs(c)) return "invalid"
        break
      case STRING:
        if (c === QUOTE) state = isKey ? AFTER_KEY : AFTER_VALUE
        else if (c === BACKSLASH) state = ESCAPE
        else if (c < 0x20) return "invalid"
        break
      case ESCAPE:
        if (c === 0x75) {
          state = UNICODE
          hex = 0
        } else if (
          c === QUOTE || c === BACKSLASH || c === 0x2f || c === 0x62 || c === 0x66 || c === 0x6e ||
          c === 0x72 || c === 0x74
        ) {
          state = STRING
        } else return "invalid"
        break
      case UNICODE:
        if (!isHex(c)) return "invalid"
        if (++hex === 4) state = STRING
        break
      case LITERAL:
        if (c !== literal.charCodeAt(litPos)) return "invalid"
        if (++litPos === literal.length) state = AFTER_VALUE
        break
      case MINUS:
        if (c === 0x30) state = ZERO
        else if (c >= 0x31 && c <= 0x39) state = INT
        else return "invalid"
        break
      case DOT:
        if (isDigit(c)) state = FRAC
        else return "invalid"
        break
      case EXP:
        if (c === 0x2b || c === 0x2d) state = EXP_SIGN
        else if (isDigit(c)) state = EXP_DIGITS
        else return "invalid"
        break
      case EXP_SIGN:
        if (isDigit(c)) state = EXP_DIGITS
        else return "invalid"
        break
      default: {
        // ZERO, INT, FRAC, EXP_DIGITS: the number may go on or end here.
        if (isDigit(c) && state !== ZERO) break
        if (c === 0x2e && (state === ZERO || state === INT)) {
          state = DOT
          break
        }
        if ((c === 0x65 || c === 0x45) && state !== EXP_DIGITS) {
          state = EXP
          break
        }
        // The number ended; the same character is read again as what follows a value.
        state = AFTER_VALUE
        continue
      }
    }
    i++
  }
  return state === DONE ? "complete" : "incomplete"

  function close(): number {
    containers.pop()
    return containers.length === 0 ? DONE : AFTER_VALUE
  }
}

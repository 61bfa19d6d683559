/**
 * One line of text → one plain JSON object (SPEC B3), and the viability check
 * for the bytes after the last newline. Pure; never throws; no recursion, so
 * hostile nesting cannot overflow the stack.
 */

/** Nesting depth of objects/arrays in one record; the record itself is depth 1. */
export const MAX_DEPTH = 64

export type ParsedLine =
  | { readonly ok: true; readonly value: { readonly [key: string]: unknown } }
  | { readonly ok: false; readonly reason: string }

const fail = (reason: string): ParsedLine => ({ ok: false, reason })

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const hasOwn = Object.prototype.hasOwnProperty
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Native `JSON.parse` does the syntax; what it silently accepts but other
 * parsers read differently (duplicate keys, `__proto__`) and unbounded nesting
 * are rejected afterwards by one iterative walk of the result.
 */
export const parseObjectLine = (text: string): ParsedLine => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return fail(syntaxReason(e))
  }
  return checkParsedLine(value, text)
}

/** The reason given for a line `JSON.parse` rejected. */
export const syntaxReason = (e: unknown): string => e instanceof Error ? e.message : String(e)

/** The checks of `parseObjectLine` after the parse: `value` is what `JSON.parse(text)` returned. */
export const checkParsedLine = (value: unknown, text: string): ParsedLine => {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return fail("not a JSON object")
  // Parallel stacks of containers still to visit and their depths.
  const nodes: Array<object> = [value]
  const depths: Array<number> = [1]
  let ownKeys = 0
  while (nodes.length > 0) {
    const node = nodes.pop()!
    const childDepth = depths.pop()! + 1
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i]
        if (typeof child === "object" && child !== null) {
          if (childDepth > MAX_DEPTH) return fail(`nesting deeper than ${MAX_DEPTH}`)
          nodes.push(child)
          depths.push(childDepth)
        }
      }
    } else {
      // for-in allocates no key array (Object.keys would, per object, per line),
      // but it also lists enumerable properties someone added to
      // Object.prototype: only own ones count. JSON.parse defines "__proto__"
      // as an own data property however it was spelled ("\u005f_proto__"),
      // so the decoded key is what is compared.
      for (const key in node) {
        if (!hasOwn.call(node, key)) continue
        ownKeys++
        if (key === "__proto__") return fail("__proto__ key")
        const child: unknown = (node as Record<string, unknown>)[key]
        if (typeof child === "object" && child !== null) {
          if (childDepth > MAX_DEPTH) return fail(`nesting deeper than ${MAX_DEPTH}`)
          nodes.push(child)
          depths.push(childDepth)
        }
      }
    }
  }
  // JSON.parse keeps only the last of duplicate keys, so fewer own keys than
  // key tokens in the text means some object repeated a key.
  if (!hasKeyTokens(text, ownKeys)) {
    return fail(`duplicate key ${JSON.stringify(findDuplicateKey(text) ?? "")}`)
  }
  return { ok: true, value: value as { readonly [key: string]: unknown } }
}

/** Index of the quote closing the string whose opening quote is at `open`. */
const stringEnd = (text: string, open: number): number => {
  let end = text.indexOf("\"", open + 1)
  for (;;) {
    // A quote preceded by an odd run of backslashes is escaped.
    let j = end - 1
    while (text.charCodeAt(j) === BACKSLASH) j--
    if (((end - 1 - j) & 1) === 0) return end
    end = text.indexOf("\"", end + 1)
  }
}

/** Index of the first non-whitespace character at or after `pos`. */
const skipWs = (text: string, pos: number): number => {
  while (isWs(text.charCodeAt(pos))) pos++
  return pos
}

/**
 * Whether `text`, which JSON.parse accepted and whose parsed value has `ownKeys`
 * own keys in all, holds exactly that many key tokens, i.e. no object in it
 * repeats a key. Every own key comes from at least one key token, so the text
 * holds at least `ownKeys` of them.
 *
 * The quick count visits only the colons. Outside strings a colon ends a key
 * token; a key whose closing quote is directly followed by its colon shows as
 * an unescaped quote before the colon. Such a colon can also follow the opening
 * quote of a string that starts with ":" (counted too, so the quick count is
 * never below the number of key tokens), and a colon inside a string is
 * preceded by an escaped quote or some other character. A colon preceded by
 * whitespace may end a key written `"k" :`, which the quick count would miss:
 * then, or when the quick count differs from `ownKeys`, the exact count decides.
 * So a quick count equal to `ownKeys` proves there are exactly `ownKeys` key
 * tokens, and the answer is always that of the exact count.
 */
export const hasKeyTokens = (text: string, ownKeys: number): boolean =>
  quickKeyCount(text) === ownKeys || countKeyTokens(text) === ownKeys

/** Colons preceded directly by an unescaped quote, or -1 when some colon follows whitespace. */
const quickKeyCount = (text: string): number => {
  let keys = 0
  let colon = text.indexOf(":")
  while (colon !== -1) {
    const before = text.charCodeAt(colon - 1)
    if (before === QUOTE) {
      let j = colon - 2
      while (text.charCodeAt(j) === BACKSLASH) j--
      if (((colon - 2 - j) & 1) === 0) keys++
    } else if (isWs(before)) {
      return -1
    }
    colon = text.indexOf(":", colon + 1)
  }
  return keys
}

/**
 * Number of object keys in `text`, which JSON.parse accepted: a key is a
 * string token followed by optional whitespace and ':'. Only quotes are
 * visited (native `indexOf`), never the characters between them.
 */
const countKeyTokens = (text: string): number => {
  let keys = 0
  let open = text.indexOf("\"")
  while (open !== -1) {
    const next = skipWs(text, stringEnd(text, open) + 1)
    if (text.charCodeAt(next) === COLON) keys++
    open = text.indexOf("\"", next)
  }
  return keys
}

/** Failure path only: the first key repeated within one object of `text` (valid JSON). */
const findDuplicateKey = (text: string): string | undefined => {
  // One frame per open container: the keys seen so far, or null for an array.
  const frames: Array<Set<string> | null> = []
  let pos = 0
  for (;;) {
    const open = text.indexOf("\"", pos)
    const stop = open === -1 ? text.length : open
    for (let i = pos; i < stop; i++) {
      const c = text.charCodeAt(i)
      if (c === 0x7b) frames.push(new Set())
      else if (c === 0x5b) frames.push(null)
      else if (c === 0x7d || c === 0x5d) frames.pop()
    }
    if (open === -1) return undefined
    const close = stringEnd(text, open)
    const next = skipWs(text, close + 1)
    if (text.charCodeAt(next) === COLON) {
      const key = JSON.parse(text.slice(open, close + 1)) as string
      const seen = frames[frames.length - 1]
      if (seen) {
        if (seen.has(key)) return key
        seen.add(key)
      }
    }
    pos = next
  }
}

// ---------------------------------------------------------------------------
// The tail after the last newline

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

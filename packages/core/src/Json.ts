/**
 * One line of text → one plain JSON object (`docs/format.md`, "Lines, caps and the tail"). Pure; never throws; no
 * recursion, so hostile nesting cannot overflow the stack.
 */

import * as Either from "effect/Either"

/**
 * Nesting depth of objects/arrays in one record; the record itself is depth 1.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_DEPTH = 64

/**
 * A plain JSON object, as one line holds it.
 *
 * @since 0.1.0
 * @category models
 */
export type JsonObject = { readonly [key: string]: unknown }

/**
 * One line read as an object: the object, or why the line is not one (a reason in words, which
 * the caller turns into its own error with its code and line number).
 *
 * @since 0.1.0
 * @category models
 */
export type ParsedLine = Either.Either<JsonObject, string>

const fail = (reason: string): ParsedLine => Either.left(reason)

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COLON = 0x3a
const hasOwn = Object.prototype.hasOwnProperty
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * Native `JSON.parse` does the syntax; what it silently accepts but other
 * parsers read differently (duplicate keys, `__proto__`) and unbounded nesting
 * are rejected afterwards by one iterative walk of the result.
 *
 * @since 0.1.0
 * @category parsing
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

/**
 * The reason given for a line `JSON.parse` rejected.
 *
 * @since 0.1.0
 * @category parsing
 */
export const syntaxReason = (e: unknown): string => e instanceof Error ? e.message : String(e)

/**
 * The checks of `parseObjectLine` after the parse: `value` is what `JSON.parse(text)` returned.
 *
 * @since 0.1.0
 * @category parsing
 */
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
  return Either.right(value as JsonObject)
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
 *
 * @since 0.1.0
 * @category guards
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
// Numbers that a rewrite would change (`docs/format.md`, "Numbers")

/** `sign digits e exponent` with no leading or trailing zeros: equal strings mean equal decimal values. */
const decimalValue = (literal: string): string => {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal)
  if (m === null) return literal
  const fraction = m[3] ?? ""
  let digits = (m[2]! + fraction).replace(/^0+/, "")
  if (digits === "") return "0"
  let exponent = Number(m[4] ?? "0") - fraction.length
  const kept = digits.replace(/0+$/, "")
  exponent += digits.length - kept.length
  digits = kept
  return `${m[1]}${digits}e${exponent}`
}

/**
 * Whether the number literal `literal` is the value JSON.stringify writes for what JSON.parse reads from it.
 *
 * @since 0.1.0
 * @category guards
 */
export const isExactNumber = (literal: string): boolean => {
  // Up to 15 digits, a plain integer is always exact.
  if (/^-?\d{1,15}$/.test(literal)) return true
  const parsed = Number(literal)
  return Number.isFinite(parsed) && decimalValue(literal) === decimalValue(JSON.stringify(parsed))
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y

/**
 * The first number literal at or after `from` in `text` (a JSON text JSON.parse accepted,
 * `from` outside any string) whose value a JavaScript number cannot hold exactly; undefined
 * when there is none. Strings are skipped with `indexOf`.
 *
 * @since 0.1.0
 * @category parsing
 */
export const firstInexactNumberFrom = (text: string, from: number): string | undefined => {
  let pos = from
  const n = text.length
  while (pos < n) {
    const c = text.charCodeAt(pos)
    if (c === QUOTE) {
      pos = stringEnd(text, pos) + 1
      continue
    }
    if (c !== 0x2d && (c < 0x30 || c > 0x39)) {
      pos++
      continue
    }
    // The number token: a sign, digits, and a fraction or exponent if any (JSON.parse checked its grammar).
    let end = pos + 1
    let plain = true
    for (; end < n; end++) {
      const d = text.charCodeAt(end)
      if (d >= 0x30 && d <= 0x39) continue
      if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) {
        plain = false
        continue
      }
      break
    }
    // An integer of at most 15 characters is exact; anything else is judged by its value.
    if (!plain || end - pos > 15) {
      const literal = text.slice(pos, end)
      if (!isExactNumber(literal)) return literal
    }
    pos = end
  }
  return undefined
}

/**
 * Where the first key `"arguments"` at or after `from` begins, or -1. An unescaped quote cannot
 * occur inside a string, so the text before it is skipped without reading it.
 *
 * @since 0.1.0
 * @category parsing
 */
export const firstArgumentsKey = (text: string, from: number): number => {
  let at = text.indexOf(`"arguments":`, from)
  while (at > 0 && text.charCodeAt(at - 1) === BACKSLASH) {
    // An escaped quote: count the backslashes before it.
    let j = at - 1
    while (text.charCodeAt(j) === BACKSLASH) j--
    if (((at - 1 - j) & 1) === 0) break
    at = text.indexOf(`"arguments":`, at + 1)
  }
  return at
}

/**
 * The first number literal of `text` (a JSON text JSON.parse accepted) whose value a
 * JavaScript number cannot hold exactly, so that the next rewrite would change it
 * (`12345678901234567891` is read as 12345678901234567000); and whether it lies inside
 * the value of the top-level key "message". Undefined when every number survives.
 * Strings are skipped with `indexOf`, so only the text between them is visited.
 *
 * @since 0.1.0
 * @category parsing
 */
export const firstInexactNumber = (text: string): { readonly literal: string; readonly inMessage: boolean } | undefined => {
  let depth = 0
  let key: string | undefined
  let messageDepth = -1
  let pos = 0
  const n = text.length
  while (pos < n) {
    const c = text.charCodeAt(pos)
    if (c === QUOTE) {
      const end = stringEnd(text, pos)
      // A string at depth 1 followed by a colon is a key of the record itself (spelled with escapes or not).
      if (depth === 1 && text.charCodeAt(skipWs(text, end + 1)) === COLON) {
        const raw = text.slice(pos + 1, end)
        key = raw.includes("\\") ? (JSON.parse(text.slice(pos, end + 1)) as string) : raw
      }
      pos = end + 1
    } else if (c === 0x7b || c === 0x5b) {
      depth++
      if (depth === 2 && key === "message" && messageDepth === -1) messageDepth = depth
      pos++
    } else if (c === 0x7d || c === 0x5d) {
      if (depth === messageDepth) messageDepth = -1
      depth--
      pos++
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER.lastIndex = pos
      const m = NUMBER.exec(text)
      const literal = m === null ? text[pos]! : m[0]
      if (!isExactNumber(literal)) return { literal, inMessage: messageDepth !== -1 }
      pos += literal.length
    } else pos++
  }
  return undefined
}

/**
 * Search: the query, the text an entry is searched by, the matcher that decides
 * every hit, the patterns a backend scans with, and the run that turns a
 * backend's candidate lines into ranked hits. Backends only narrow (every line
 * they leave out must be one the matcher would refuse); the matcher decides.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { decodeEntryLine } from "../Codec.js"
import { decodeHeader, type Entry, type Header } from "../Record.js"
import type * as V2 from "../RecordV2.js"
import type {
  CandidateRequest,
  Candidates,
  EntryFacts,
  Hit,
  IndexedEntries,
  Pattern,
  Query,
  SearchOptions,
  SearchResult,
  SearchRole,
  Snippet,
  Term
} from "../Search.js"
import type { ScanError, SessionCatalogService } from "../SessionCatalog.js"
import { type InputError, type SessionError, sessionError } from "../SessionError.js"
import type { Unreadable } from "../Sessions.js"
import { isCanonicalTimestamp } from "./timestamp.js"
import { fold, isAscii, LEXEME_CODE_POINTS, lexemeOf, lexemesOf, WORD, WORD_CODE_POINT, type Word, wordsOf } from "./words.js"

const invalid = (reason: string): InputError => sessionError("SESSION_INVALID_OPTIONS", reason) as InputError

/** The most a query may hold: enough for any phrase a person types, bounded for the patterns made of it. */
export const MAX_QUERY_CHARACTERS = 1_000
export const MAX_QUERY_WORDS = 32

// ---- The query ------------------------------------------------------------------------------

/**
 * A query: words, and phrases in double quotes, every one required. A token that is several words
 * joined by other characters (`read_file`, `a.b`, `don't`) is the phrase of those words.
 */
export const parseQuery = (text: string): Either.Either<Query, InputError> => {
  if (typeof text !== "string") return Either.left(invalid("the query is not text"))
  if (text.length > MAX_QUERY_CHARACTERS) return Either.left(invalid(`the query holds more than ${MAX_QUERY_CHARACTERS} characters`))
  const terms: Array<Term> = []
  let count = 0
  const add = (source: string, quoted: boolean) => {
    const words = [...source.matchAll(WORD)].map((m) => fold(m[0]))
    if (words.length === 0) return
    count += words.length
    terms.push({ words, phrase: quoted || words.length > 1, text: source })
  }
  // Quoted phrases first; what is left between them is split at white space.
  const quoted = /"([^"]*)"?/g
  let last = 0
  for (const m of text.matchAll(quoted)) {
    for (const token of text.slice(last, m.index).split(/\s+/)) add(token, false)
    add(m[1]!, true)
    last = m.index + m[0].length
  }
  for (const token of text.slice(last).split(/\s+/)) add(token, false)
  if (terms.length === 0) return Either.left(invalid("the query holds no word to search for (words are letters and digits)"))
  if (count > MAX_QUERY_WORDS) return Either.left(invalid(`the query holds more than ${MAX_QUERY_WORDS} words`))
  const words = [...new Set(terms.flatMap((t) => t.words))]
  return Either.right({ terms, words, ascii: words.every(isAscii) })
}

// ---- What an entry is searched by -------------------------------------------------------------

/**
 * A JSON value as lines a person reads, pushed onto `out`: `key: value`, nested keys joined by dots,
 * strings as they are; one empty line for a value that has none (`{}`), so that the lines of the
 * value, joined, are one part of the searched text however many they are.
 */
const flatten = (value: unknown, out: Array<string>): void => {
  const before = out.length
  lines(value, out, "")
  if (out.length === before) out.push("")
}

const lines = (value: unknown, out: Array<string>, prefix: string): void => {
  if (value === null || typeof value !== "object") {
    const shown = typeof value === "string" ? value : JSON.stringify(value)
    out.push(prefix === "" ? shown : `${prefix}: ${shown}`)
    return
  }
  if (Array.isArray(value)) {
    if (value.length === 0 && prefix !== "") out.push(prefix)
    for (let i = 0; i < value.length; i++) lines(value[i], out, prefix === "" ? String(i) : `${prefix}[${i}]`)
    return
  }
  // Own enumerable keys in their order, as `Object.entries` gives them, without its pairs.
  const keys = Object.keys(value)
  if (keys.length === 0 && prefix !== "") out.push(prefix)
  for (const key of keys) lines((value as Record<string, unknown>)[key], out, prefix === "" ? key : `${prefix}.${key}`)
}

/** The role (or kind) a hit shows, and the filter matches: a message's role, else the entry's kind. */
export const roleOf = (entry: Entry): string =>
  entry.version === 1 ? entry.message.role : entry.kind === "message" ? entry.message.role : entry.kind

/** The model of an entry: an assistant message's `meta.model`, a model entry's model. */
export const modelOf = (entry: Entry): string | undefined =>
  entry.version === 1
    ? undefined
    : entry.kind === "message"
    ? entry.message.role === "assistant" ? entry.message.meta?.model : undefined
    : entry.kind === "model"
    ? entry.model
    : undefined

const partText = (part: V2.AssistantPart, out: Array<string>): void => {
  switch (part.type) {
    case "text":
    case "reasoning":
      out.push(part.text)
      return
    case "file":
      if (part.name !== undefined) out.push(part.name)
      return
    case "tool-call":
      out.push(part.name)
      flatten(part.arguments, out)
      return
    case "tool-result":
      out.push(part.toolName)
      flatten(part.result, out)
      return
  }
}

/**
 * The text an entry is searched by, its parts joined by line breaks: a message's text and reasoning,
 * the names of its files, each tool call's name and arguments, each tool result's tool and result;
 * a compaction's summary; a title. Undefined for the kinds that hold no text to search (labels,
 * model changes, extension data).
 */
export const searchTextOf = (entry: Entry): string | undefined => {
  const out: Array<string> = []
  if (entry.version === 1) {
    const m = entry.message
    if (m.role === "tool") out.push(m.toolName)
    out.push(m.content)
    if (m.role === "assistant") {
      for (const call of m.toolCalls) {
        out.push(call.name)
        flatten(call.arguments, out)
      }
    }
    return out.join("\n")
  }
  switch (entry.kind) {
    case "message": {
      const m = entry.message
      if (m.role === "system") return m.content
      if (m.role === "tool") out.push(m.toolName)
      for (const part of m.content as ReadonlyArray<V2.AssistantPart>) partText(part, out)
      if (m.role === "tool" && m.result !== undefined) flatten(m.result, out)
      return out.join("\n")
    }
    case "compaction":
      return entry.summary
    case "title":
      return entry.title
    default:
      return undefined
  }
}

// ---- The matcher ------------------------------------------------------------------------------

/** Where each term of `query` matches `words` (the word ranges that matched), or undefined when one does not. */
export const matchWords = (query: Query, words: ReadonlyArray<Word>): Array<readonly [number, number]> | undefined => {
  const marks: Array<readonly [number, number]> = []
  for (const term of query.terms) {
    let found = false
    const n = term.words.length
    for (let i = 0; i + n <= words.length; i++) {
      let k = 0
      while (k < n && words[i + k]!.word === term.words[k]) k++
      if (k === n) {
        found = true
        marks.push([words[i]!.start, words[i + n - 1]!.end])
        // Every place a one-word term matches is marked; a phrase's first place is enough.
        if (term.phrase) break
      }
    }
    if (!found) return undefined
  }
  return marks.sort((a, b) => a[0] - b[0] || a[1] - b[1])
}

const isWordCode = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39)

/**
 * `matchWords` for ASCII text and an ASCII query, without making a word list: the text lower-cased
 * once, each term's first word found with `indexOf`, its boundaries and a phrase's next words
 * checked in place. The same answer as `matchWords` on the same text.
 */
const matchAscii = (query: Query, text: string): Array<readonly [number, number]> | undefined => {
  const lower = text.toLowerCase()
  const marks: Array<readonly [number, number]> = []
  for (const term of query.terms) {
    const first = term.words[0]!
    let found = false
    for (let at = lower.indexOf(first); at >= 0; at = lower.indexOf(first, at + 1)) {
      if (at > 0 && isWordCode(lower.charCodeAt(at - 1))) continue
      let end = at + first.length
      if (end < lower.length && isWordCode(lower.charCodeAt(end))) continue
      let k = 1
      for (; k < term.words.length; k++) {
        // The next word starts after the separators that end this one.
        let next = end
        while (next < lower.length && !isWordCode(lower.charCodeAt(next))) next++
        const word = term.words[k]!
        if (next === end || !lower.startsWith(word, next)) break
        const after = next + word.length
        if (after < lower.length && isWordCode(lower.charCodeAt(after))) break
        end = after
      }
      if (k < term.words.length) continue
      found = true
      marks.push([at, end])
      if (term.phrase) break
    }
    if (!found) return undefined
  }
  return marks.sort((a, b) => a[0] - b[0] || a[1] - b[1])
}

/** Where each term of `query` matches `text`, or undefined when one does not (the matcher). */
export const matchText = (query: Query, text: string): Array<readonly [number, number]> | undefined =>
  query.ascii && isAscii(text) ? matchAscii(query, text) : matchWords(query, wordsOf(text))

/** Whether the code unit `c` is an ASCII letter or digit (any case): part of a word. */
const isAsciiWordCode = (c: number): boolean => (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || (c >= 0x30 && c <= 0x39)

/** Whether the code point at `i` of `text` (a lone surrogate as itself) is part of a word. */
const wordAt = (text: string, i: number): boolean => {
  const c = text.charCodeAt(i)
  return c < 0x80 ? isAsciiWordCode(c) : WORD_CODE_POINT.test(String.fromCodePoint(text.codePointAt(i)!))
}

/** Whether the code point that ends just before `i` of `text` is part of a word. */
const wordBefore = (text: string, i: number): boolean => {
  if (i === 0) return false
  const c = text.charCodeAt(i - 1)
  if (c < 0x80) return isAsciiWordCode(c)
  const pair = c >= 0xdc00 && c <= 0xdfff && i >= 2 && text.charCodeAt(i - 2) >= 0xd800 && text.charCodeAt(i - 2) <= 0xdbff
  return wordAt(text, pair ? i - 2 : i - 1)
}

/** Whether `text` holds the folded ASCII `word` at `at` in any case: ASCII characters only, so `K` (Kelvin) is not `k`. */
const asciiAt = (text: string, at: number, word: string): boolean => {
  if (at + word.length > text.length) return false
  for (let k = 0; k < word.length; k++) {
    const c = text.charCodeAt(at + k)
    if ((c >= 0x41 && c <= 0x5a ? c + 32 : c) !== word.charCodeAt(k)) return false
  }
  return true
}

/**
 * Whether an ASCII `term` matches `text` (any text): its first word found in any case by a regular
 * expression without the `u` flag (whose case-insensitive matching folds no character beyond ASCII
 * into ASCII, as `fold`), then whole words and a phrase's next words checked in place. The answer of
 * `matchWords` on the same text, without lower-casing it or making a word list.
 */
const asciiTermIn = (term: Term, finder: RegExp, text: string): boolean => {
  const first = term.words[0]!
  finder.lastIndex = 0
  while (finder.test(text)) {
    const at = finder.lastIndex - first.length
    finder.lastIndex = at + 1
    let end = at + first.length
    if (wordBefore(text, at) || (end < text.length && wordAt(text, end))) continue
    let k = 1
    for (; k < term.words.length; k++) {
      let next = end
      while (next < text.length && !wordAt(text, next)) next++
      const word = term.words[k]!
      if (next === end || !asciiAt(text, next, word)) break
      const after = next + word.length
      if (after < text.length && wordAt(text, after)) break
      end = after
    }
    if (k === term.words.length) return true
  }
  return false
}

/**
 * Whether `text` matches every term of `query`: `matchText(query, text) !== undefined`, made once
 * for a query and asked of every candidate, without the marks (only the page's hits need them).
 */
export const matcherOf = (query: Query): (text: string) => boolean => {
  if (!query.ascii) return (text) => matchText(query, text) !== undefined
  const terms = query.terms.map((term) => ({ term, finder: new RegExp(escape(term.words[0]!), "gi") }))
  return (text) => {
    for (const { finder, term } of terms) if (!asciiTermIn(term, finder, text)) return false
    return true
  }
}

/**
 * The strings an entry's searched text is made of, in order, each given to `visit` until it returns
 * true (then true): the same parts as `searchTextOf`, with a JSON value's keys and leaves as strings
 * of their own (its array indices too when `indices`) rather than `key: value` lines. Every place
 * `searchTextOf` joins them holds a separator (a line break, `: `, `.`, `[`, `]`), so the words of
 * the text are the words of these strings, one after another. False for kinds without text.
 */
const someSearched = (entry: Entry, visit: (text: string) => boolean, indices: boolean): boolean => {
  if (entry.version === 1) {
    const m = entry.message
    if (m.role === "tool" && visit(m.toolName)) return true
    if (visit(m.content)) return true
    if (m.role === "assistant") {
      for (const call of m.toolCalls) if (visit(call.name) || someJson(call.arguments, visit, indices)) return true
    }
    return false
  }
  switch (entry.kind) {
    case "message": {
      const m = entry.message
      if (m.role === "system") return visit(m.content)
      if (m.role === "tool" && visit(m.toolName)) return true
      for (const part of m.content as ReadonlyArray<V2.AssistantPart>) {
        switch (part.type) {
          case "text":
          case "reasoning":
            if (visit(part.text)) return true
            break
          case "file":
            if (part.name !== undefined && visit(part.name)) return true
            break
          case "tool-call":
            if (visit(part.name) || someJson(part.arguments, visit, indices)) return true
            break
          case "tool-result":
            if (visit(part.toolName) || someJson(part.result, visit, indices)) return true
            break
        }
      }
      return m.role === "tool" && m.result !== undefined && someJson(m.result, visit, indices)
    }
    case "compaction":
      return visit(entry.summary)
    case "title":
      return visit(entry.title)
    default:
      return false
  }
}

/** `someSearched` of a JSON value: its keys, its leaves as `flatten` shows them, its indices when asked. */
const someJson = (value: unknown, visit: (text: string) => boolean, indices: boolean): boolean => {
  if (value === null || typeof value !== "object") return visit(typeof value === "string" ? value : String(JSON.stringify(value)))
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if ((indices && visit(String(i))) || someJson(value[i], visit, indices)) return true
    return false
  }
  for (const key of Object.keys(value)) if (visit(key) || someJson((value as Record<string, unknown>)[key], visit, indices)) return true
  return false
}

/**
 * Whether an entry's searched text matches `query`, asked of the strings the text is made of (see
 * `someSearched`) so that no text is made for a hit off the page: for a query of ASCII words and no
 * phrase of several (a phrase may run from one string into the next), else undefined. A word is
 * whole in the text exactly when it is whole in its string, since the strings meet at separators.
 * An index of an array is one word of digits, looked at only when a word of the query is one.
 */
export const entryMatcherOf = (query: Query): ((entry: Entry) => boolean) | undefined => {
  if (!query.ascii || query.terms.some((term) => term.words.length > 1)) return undefined
  const terms = query.terms.map((term) => ({ term, finder: new RegExp(escape(term.words[0]!), "gi") }))
  const indices = query.words.some((word) => /^[0-9]+$/.test(word))
  // The terms found so far in the entry being asked: reused from entry to entry.
  const found = new Uint8Array(terms.length)
  let missing = 0
  const visit = (text: string): boolean => {
    for (let k = 0; k < terms.length; k++) {
      if (found[k] === 0 && asciiTermIn(terms[k]!.term, terms[k]!.finder, text)) {
        found[k] = 1
        if (--missing === 0) return true
      }
    }
    return false
  }
  return (entry) => {
    found.fill(0)
    missing = terms.length
    return someSearched(entry, visit, indices)
  }
}

/** Whether the words of `text` (a line as written, which did not decode) hold every word of the query. */
export const rawMatches = (query: Query, text: string): boolean => {
  const held = lexemesOf(text)
  return query.words.every((word) => held.has(lexemeOf(word)))
}

const SNIPPET_CHARACTERS = 240
const SNIPPETS = 3

/** The start of the code point at or before `i`. */
const atCodePoint = (text: string, i: number): number => {
  const c = text.charCodeAt(i)
  return c >= 0xdc00 && c <= 0xdfff && i > 0 ? i - 1 : i
}

/** Up to three excerpts of `text` around its marks, each with its marks relative to it. */
export const snippetsOf = (text: string, marks: ReadonlyArray<readonly [number, number]>): Array<Snippet> => {
  const out: Array<Snippet> = []
  let covered = -1
  for (const [start, end] of marks) {
    if (start < covered) continue
    if (out.length === SNIPPETS) break
    const room = Math.max(0, SNIPPET_CHARACTERS - (end - start))
    let from = atCodePoint(text, Math.max(0, start - Math.floor(room / 3)))
    let to = atCodePoint(text, Math.min(text.length, end + room - (start - from)))
    // Whole words at the edges: a cut word is left out.
    while (from > 0 && from < start && WORD_CODE_POINT.test(text[from - 1]!)) from++
    while (to < text.length && to > end && WORD_CODE_POINT.test(text[to]!)) to--
    const inside = marks.filter(([s, e]) => s >= from && e <= to).map(([s, e]) => [s - from, e - from] as const)
    out.push({ text: text.slice(from, to), marks: inside, before: from > 0, after: to < text.length })
    covered = to
  }
  return out
}

// ---- Filters ----------------------------------------------------------------------------------

const ROLES: ReadonlySet<string> = new Set<SearchRole>(["system", "user", "assistant", "tool", "compaction", "title"])
const DATE = /^\d{4}-\d{2}-\d{2}$/

/** A bound of `since`/`until`: a canonical timestamp, or a date (then the whole day counts). */
const bound = (value: string | undefined, name: string): Either.Either<string | undefined, InputError> => {
  if (value === undefined) return Either.right(undefined)
  if (typeof value === "string" && (isCanonicalTimestamp(value) || (DATE.test(value) && isCanonicalTimestamp(`${value}T00:00:00.000Z`)))) {
    return Either.right(value)
  }
  return Either.left(invalid(`${name} ${JSON.stringify(value)} is neither a date (YYYY-MM-DD) nor a timestamp (YYYY-MM-DDTHH:MM:SS.sssZ)`))
}

/** What a run checks besides the words. */
export interface Plan {
  readonly query: Query
  readonly roles: ReadonlySet<string> | undefined
  readonly models: ReadonlySet<string> | undefined
  readonly since: string | undefined
  readonly until: string | undefined
  readonly sessions: ReadonlySet<string> | undefined
  readonly offset: number
  readonly limit: number
}

export const DEFAULT_LIMIT = 50

const wholeNumber = (value: number | undefined, name: string, fallback: number): Either.Either<number, InputError> =>
  value === undefined
    ? Either.right(fallback)
    : Number.isSafeInteger(value) && value >= 0
    ? Either.right(value)
    : Either.left(invalid(`${name} ${String(value)} is not a whole number`))

const textList = (values: ReadonlyArray<string> | undefined, name: string): Either.Either<ReadonlySet<string> | undefined, InputError> => {
  if (values === undefined) return Either.right(undefined)
  if (!Array.isArray(values) || values.some((v) => typeof v !== "string" || v === "")) {
    return Either.left(invalid(`${name} must be a list of non-empty texts`))
  }
  return Either.right(new Set(values))
}

export const planOf = (options: SearchOptions): Either.Either<Plan, InputError> =>
  Either.gen(function*() {
    if (typeof options !== "object" || options === null) return yield* Either.left(invalid("search needs options with a query"))
    const query = yield* parseQuery(options.query)
    const roles = yield* textList(options.roles, "roles")
    for (const role of roles ?? []) {
      if (!ROLES.has(role)) return yield* Either.left(invalid(`role ${JSON.stringify(role)} is not one of ${[...ROLES].join(", ")}`))
    }
    const since = yield* bound(options.since, "since")
    const until = yield* bound(options.until, "until")
    return {
      query,
      roles,
      models: yield* textList(options.models, "models"),
      since,
      until,
      sessions: yield* textList(options.sessions, "sessions"),
      offset: yield* wholeNumber(options.offset, "offset", 0),
      limit: yield* wholeNumber(options.limit, "limit", DEFAULT_LIMIT)
    }
  })

const inTime = (plan: Plan, timestamp: string): boolean => {
  const { since, until } = plan
  if (since !== undefined && (since.length === 10 ? timestamp.slice(0, 10) < since : timestamp < since)) return false
  if (until !== undefined && (until.length === 10 ? timestamp.slice(0, 10) > until : timestamp > until)) return false
  return true
}

/** Whether the plan filters by anything besides the words. */
const filters = (plan: Plan): boolean =>
  plan.roles !== undefined || plan.models !== undefined || plan.since !== undefined || plan.until !== undefined

/** The filters of `plan` asked of an entry's facts, decoded or kept by an index alike. */
const passesFacts = (plan: Plan, role: string, model: string | undefined, timestamp: string): boolean => {
  if (plan.roles !== undefined && !plan.roles.has(role)) return false
  if (plan.models !== undefined && (model === undefined || !plan.models.has(model))) return false
  return inTime(plan, timestamp)
}

const passes = (plan: Plan, entry: Entry): boolean => passesFacts(plan, roleOf(entry), modelOf(entry), entry.timestamp)

// ---- The patterns a backend scans raw lines with ----------------------------------------------

const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The UTF-8 bytes of `text` as Latin-1 characters (how a line's bytes read as `latin1`). */
const asLatin1 = (text: string): string => {
  let out = ""
  for (const byte of new TextEncoder().encode(text)) out += String.fromCharCode(byte)
  return out
}

/** How a backend finds candidate lines among raw lines (see `Search.Pattern`). */
export const patternOf = (words: ReadonlyArray<string>): Pattern => {
  const ascii = words.every((w) => /^[\u0000-\u007f]*$/.test(w))
  // The longest word (in bytes) anchors the scan: long words are the rare ones. Each pattern is one
  // literal, which the engine finds by skipping ahead (an alternation would make it try every place).
  const sorted = [...words].sort((a, b) => asLatin1(b).length - asLatin1(a).length)
  const source = (word: string) => escape(ascii ? asLatin1(word) : word)
  const flags = ascii ? "i" : "iu"
  return {
    encoding: ascii ? "latin1" : "utf8",
    anchor: new RegExp(source(sorted[0]!), `g${flags}`),
    others: sorted.slice(1).map((word) => new RegExp(source(word), flags)),
    escape: "\\u",
    folded: ascii ? sorted : undefined
  }
}

/**
 * The lexemes an index keeps of one line of a session whose header line is `header` (see
 * `Search.lineLexemes`): those of its facts, so that both kinds of index keep the same words.
 */
export const lineLexemes = (header: string | undefined, text: string, line?: number): ReadonlyArray<string> =>
  header === undefined ? [...lexemesOf(text)] : entryFacts(header)(text, line).lexemes

/** The facts of a line that does not decode (or whose session's header does not): its words as written. */
const undecoded = (text: string, error: SessionError): EntryFacts => ({
  lexemes: [...lexemesOf(text)],
  decoded: undefined,
  error: { code: error.code, reason: error.reason, line: error.line }
})

/**
 * The facts an index keeps of the entry lines of a session whose header line is `header` (see
 * `Search.entryFacts`): the header decoded once, then each line as the run decodes it. When the
 * header does not decode, every line is kept as written, as the run then looks at it.
 */
export const entryFacts = (header: string): (text: string, line?: number) => EntryFacts => {
  const decodedHeader = headerOf(header)
  if (Either.isLeft(decodedHeader)) {
    const error = decodedHeader.left
    return (text) => undecoded(text, error)
  }
  const version = decodedHeader.right.version
  return (text, line) => {
    const decoded = decodeEntryLine(version, text, line)
    if (Either.isLeft(decoded)) return undecoded(text, decoded.left)
    const entry = decoded.right
    const searched = searchTextOf(entry)
    return {
      lexemes: searched === undefined ? [] : [...lexemesOf(searched)],
      decoded: { timestamp: entry.timestamp, role: roleOf(entry), model: modelOf(entry), searched: searched !== undefined },
      error: undefined
    }
  }
}

// ---- The run ------------------------------------------------------------------------------------

/** Where an index's entry is fetched from: its session's `fetch`. */
type Fetch = (orders: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<string>, SessionError>

/**
 * A hit found but not yet shown: enough to rank it, and its entry and text to show it; or, for an
 * entry an index decided, where to fetch its line (`fetch`) once it is on the page.
 */
interface Found {
  readonly location: string
  readonly header: Header
  readonly timestamp: string
  readonly order: number
  readonly line?: number | undefined
  entry?: Entry | undefined
  text?: string | undefined
  readonly fetch?: Fetch | undefined
}

/** Newest entry first; then by session ID and place in the session, so every backend ranks alike. */
const ranksBefore = (timestamp: string, session: string, location: string, order: number, b: Found): boolean =>
  timestamp !== b.timestamp
    ? timestamp > b.timestamp
    : session !== b.header.id
    ? session < b.header.id
    : location !== b.location
    ? location < b.location
    : order < b.order

const before = (a: Found, b: Found): boolean => ranksBefore(a.timestamp, a.header.id, a.location, a.order, b)

/**
 * The best `size` hits seen, kept in rank order. A hit is asked whether it would be kept by its rank
 * alone, so that the million that would not (a common word) cost a few comparisons and nothing more.
 */
class Best {
  readonly kept: Array<Found> = []
  constructor(readonly size: number) {}
  admits(timestamp: string, session: string, location: string, order: number): boolean {
    const kept = this.kept
    return this.size > 0 && (kept.length < this.size || ranksBefore(timestamp, session, location, order, kept[kept.length - 1]!))
  }
  add(found: Found): void {
    const kept = this.kept
    let lo = 0
    let hi = kept.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (before(kept[mid]!, found)) lo = mid + 1
      else hi = mid
    }
    kept.splice(lo, 0, found)
    if (kept.length > this.size) kept.pop()
  }
}

const unreadableOf = (location: string, error: SessionError): Unreadable => ({
  location,
  error: { code: error.code, message: error.line === undefined ? error.reason : `${error.reason} (line ${error.line})` }
})

const headerOf = (text: string): Either.Either<Header, SessionError> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return Either.left(sessionError("SESSION_INVALID_JSON", e instanceof Error ? e.message : String(e), { line: 1 }))
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Either.left(sessionError("SESSION_INVALID_HEADER", "the header is not a JSON object", { line: 1 }))
  }
  return decodeHeader(value as { readonly [key: string]: unknown }, 1)
}

const hitOf = (query: Query) => (found: Found): Hit => {
  const entry = found.entry!
  const text = found.text!
  const model = modelOf(entry)
  return {
    location: found.location,
    session: found.header.id,
    entry: entry.id,
    parentId: entry.parentId,
    timestamp: entry.timestamp,
    role: roleOf(entry),
    ...(model === undefined ? {} : { model }),
    // Marked for the page only: the count needed no more than whether the text matches.
    snippets: snippetsOf(text, matchText(query, text)!)
  }
}

/**
 * Whether an index may decide the entries of `query` by their lexemes: one word per term, each
 * shorter than a lexeme's cut (`LEXEME_CODE_POINTS`). A word of exactly that length is its own
 * lexeme, but also the lexeme of every longer word that begins with it, which it does not match.
 */
const decidableOf = (query: Query): boolean =>
  query.terms.every((term) => term.words.length === 1) &&
  query.words.every((word) => lexemeOf(word) === word && codePoints(word) < LEXEME_CODE_POINTS)

const codePoints = (word: string): number => {
  let n = 0
  for (let i = 0; i < word.length; i++, n++) if (word.codePointAt(i)! > 0xffff) i++
  return n
}

/** The request a backend answers for `plan`. */
export const requestOf = (plan: Plan, directory: string | undefined): CandidateRequest => ({
  directory,
  words: plan.query.words,
  lexemes: [...new Set(plan.query.words.map(lexemeOf))],
  pattern: patternOf(plan.query.words),
  sessions: plan.sessions === undefined ? undefined : [...plan.sessions],
  decidable: decidableOf(plan.query),
  trusted: true
})

/** How many sessions' page lines are fetched at once: a round trip each to a database. */
const FETCHES = 8

/**
 * The entries of the page an index decided, fetched, decoded and checked: each must decode, pass the
 * filters, keep the timestamp it was ranked by and match. False when one does not (or cannot be
 * fetched): the sessions contradict the index, and the search is run again without it.
 */
const settle = (plan: Plan, page: ReadonlyArray<Found>, matches: (text: string) => boolean): Effect.Effect<boolean> => {
  const bySource = new Map<Fetch, Array<Found>>()
  for (const found of page) {
    if (found.fetch === undefined) continue
    const group = bySource.get(found.fetch)
    if (group === undefined) bySource.set(found.fetch, [found])
    else group.push(found)
  }
  return Effect.map(
    Effect.forEach([...bySource], ([fetch, group]) =>
      Effect.match(fetch(group.map((found) => found.order)), {
        onFailure: () => false,
        onSuccess: (texts) =>
          texts.length === group.length && group.every((found, k) => {
            const decoded = decodeEntryLine(found.header.version, texts[k]!, found.line)
            if (Either.isLeft(decoded)) return false
            const entry = decoded.right
            const text = searchTextOf(entry)
            if (text === undefined || entry.timestamp !== found.timestamp || !passes(plan, entry) || !matches(text)) return false
            found.entry = entry
            found.text = text
            return true
          })
      }), { concurrency: FETCHES }),
    (settled) => settled.every((ok) => ok)
  )
}

/**
 * Ranks the hits among `candidates`: every line decided by the matcher (or, for a decidable query,
 * by an index from the facts the library made of it), a page of the best kept. When the page's
 * lines contradict an index, the search runs again over `untrusted` (the candidates without it).
 */
export const run = <R>(
  plan: Plan,
  candidates: Stream.Stream<Candidates, ScanError, R>,
  untrusted?: Stream.Stream<Candidates, ScanError, R>
): Effect.Effect<SearchResult, ScanError, R> =>
  Effect.suspend(() => {
    const best = new Best(plan.offset + plan.limit)
    const matches = matcherOf(plan.query)
    const matchesEntry = entryMatcherOf(plan.query)
    const unreadable: Array<Unreadable> = []
    let total = 0
    let searched = 0
    const filtered = filters(plan)
    /** An index's entries, in rank order: counted, and ranked until the first the page would not keep. */
    const takeIndexed = (location: string, header: Header, entries: IndexedEntries, fetch: Fetch) => {
      let open = true
      for (let i = 0; i < entries.size; i++) {
        if (filtered && !passesFacts(plan, entries.role(i), entries.model(i), entries.timestamp(i))) continue
        total++
        if (!open) {
          // Without filters every later entry counts, and none would be kept.
          if (!filtered) {
            total += entries.size - i - 1
            break
          }
          continue
        }
        const timestamp = entries.timestamp(i)
        const order = entries.order(i)
        if (best.admits(timestamp, header.id, location, order)) {
          best.add({ location, header, timestamp, order, line: entries.line(i), fetch })
        } else {
          // The later entries of this session rank after this one.
          open = false
        }
      }
    }
    const take = (c: Candidates) => {
      searched++
      if ("error" in c) return void unreadable.push(unreadableOf(c.location, c.error))
      let problem: SessionError | undefined
      const header = headerOf(c.header)
      if (Either.isLeft(header)) {
        if (c.lines.some((line) => rawMatches(plan.query, line.text))) unreadable.push(unreadableOf(c.location, header.left))
        return
      }
      if ("entries" in c) takeIndexed(c.location, header.right, c.entries, c.fetch)
      const version = header.right.version
      const session = header.right.id
      for (const line of c.lines) {
        const decoded = decodeEntryLine(version, line.text, line.line)
        if (Either.isLeft(decoded)) {
          if (problem === undefined && rawMatches(plan.query, line.text)) problem = decoded.left
          continue
        }
        const entry = decoded.right
        if (!passes(plan, entry)) continue
        let text: string | undefined
        if (matchesEntry !== undefined) {
          if (!matchesEntry(entry)) continue
        } else {
          text = searchTextOf(entry)
          if (text === undefined || !matches(text)) continue
        }
        total++
        if (best.admits(entry.timestamp, session, c.location, line.order)) {
          // An entry that matched has text: its kind is one that holds some.
          best.add({
            location: c.location,
            header: header.right,
            timestamp: entry.timestamp,
            order: line.order,
            entry,
            text: text ?? searchTextOf(entry)!
          })
        }
      }
      if (problem !== undefined) unreadable.push(unreadableOf(c.location, problem))
    }
    return Stream.runForEach(candidates, (c) => Effect.sync(() => take(c))).pipe(
      Effect.zipRight(Effect.suspend(() => settle(plan, best.kept.slice(plan.offset), matches))),
      Effect.flatMap((settled): Effect.Effect<SearchResult, ScanError, R> =>
        settled
          ? Effect.succeed({
            hits: best.kept.slice(plan.offset).map(hitOf(plan.query)),
            total,
            searched,
            unreadable: unreadable.sort((a, b) => (a.location < b.location ? -1 : a.location > b.location ? 1 : 0))
          })
          : untrusted === undefined
          ? Effect.dieMessage("an index's answer was contradicted by the sessions, and there is no search without it")
          : run(plan, untrusted)
      )
    )
  })

/** Every entry line of `lines` as candidates (a backend without an index or scan of its own). */
export const everyLine = (location: string, lines: ReadonlyArray<string>): Extract<Candidates, { readonly header: string }> => ({
  location,
  header: lines[0] ?? "",
  lines: lines.slice(1).map((text, i) => ({ order: i, line: i + 2, text }))
})

/** `options` checked, then the candidates of its request ranked. */
export const runOptions = <R>(
  options: SearchOptions,
  candidates: (request: CandidateRequest) => Stream.Stream<Candidates, ScanError, R>
): Effect.Effect<SearchResult, ScanError, R> =>
  Effect.flatMap(planOf(options), (plan) => {
    const request = requestOf(plan, options.directory)
    return run(plan, candidates(request), candidates({ ...request, decidable: false, trusted: false }))
  })

/**
 * The candidates of a backend that neither scans nor indexes (memory): every entry line of every
 * session asked for, read through the catalog a few sessions at a time.
 */
export const catalogCandidates = (catalog: SessionCatalogService) => (request: CandidateRequest): Stream.Stream<Candidates, ScanError> =>
  Stream.unwrap(Effect.map(catalog.scan(request.directory), (scanned) => {
    const wanted = request.sessions === undefined ? undefined : new Set(request.sessions)
    const locations = scanned.map((entry) => entry.location).sort()
    return Stream.fromIterable(chunksOf(locations, READ_CHUNK)).pipe(
      Stream.mapEffect((chunk) => catalog.readMany(chunk)),
      Stream.flatMap((reads) => Stream.fromIterable(reads)),
      Stream.zipWithIndex,
      Stream.filterMap(([read, i]): Option.Option<Candidates> => {
        const location = locations[i]!
        if (Either.isLeft(read)) {
          return wanted === undefined || wanted.has(location) ? Option.some({ location, error: read.left }) : Option.none()
        }
        const candidates = everyLine(location, read.right.lines)
        if (wanted !== undefined && !wanted.has(location)) {
          const header = headerOf(candidates.header)
          if (Either.isLeft(header) || !wanted.has(header.right.id)) return Option.none()
        }
        return Option.some(candidates)
      })
    )
  }))

const READ_CHUNK = 16

const chunksOf = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> => {
  const out: Array<ReadonlyArray<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

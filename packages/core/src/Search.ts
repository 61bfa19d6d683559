/**
 * Search across sessions: words and phrases in every session's message text,
 * tool arguments and results (`docs/serve.md`, "Search"), the same answers on
 * every backend.
 *
 * The library decides every hit: a backend only narrows the lines to look at
 * (the `SearchIndex` port: a scan of a file's bytes, a database's full-text
 * index), and each line it hands over is decoded and matched here. So an index
 * can be missing, stale or wrong only in what it costs, never in what is found,
 * as long as it leaves out no line the matcher would take; the words an index
 * keeps are made here too (`lineLexemes`), so that holds by construction.
 *
 * - **Words**: runs of letters, marks and digits, compared without case (each
 *   code point's lower case, when that is one code point of the same ASCII-ness).
 * - **Query**: every word and every phrase (in double quotes, or several words
 *   joined by other characters, as `read_file`) must be in the entry; a phrase's
 *   words next to each other, in order.
 * - **Searched text**: a message's text and reasoning, its files' names, each tool
 *   call's name and arguments, each tool result's tool and result; a compaction's
 *   summary; a title. Arguments and results are read as `key: value` lines.
 * - **Hits**: newest entry first (then by session ID and place), each with up to
 *   three excerpts, the matched words marked. A line that does not decode is not a
 *   hit: its session is listed as unreadable when the line's words hold the query's.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type * as Stream from "effect/Stream"
import type { Entry } from "./Record.js"
import type { ScanError } from "./SessionCatalog.js"
import type { InputError, SessionError } from "./SessionError.js"
import type { Unreadable } from "./Sessions.js"
import * as internal from "./internal/search.js"
import * as words from "./internal/words.js"

/**
 * What an entry's role filter matches: a message's role, or an entry's kind for the kinds with text.
 * @since 0.2.0
 * @category models
 */
export type SearchRole = "system" | "user" | "assistant" | "tool" | "compaction" | "title"

/**
 * A search: the query, where, and what else a hit must be.
 * @since 0.2.0
 * @category models
 */
export interface SearchOptions {
  /** Words and "quoted phrases", all required. */
  readonly query: string
  /** The directory of session files (the current one by default); a database ignores it. */
  readonly directory?: string | undefined
  /** Only entries of these roles (or kinds). */
  readonly roles?: ReadonlyArray<SearchRole> | undefined
  /** Only entries of these models (an assistant message's `meta.model`, a model entry's model). */
  readonly models?: ReadonlyArray<string> | undefined
  /** Only entries at or after this time: a timestamp, or a date (`YYYY-MM-DD`, the whole day). */
  readonly since?: string | undefined
  /** Only entries at or before this time: a timestamp, or a date (the whole day). */
  readonly until?: string | undefined
  /** Only these sessions: locations as `list` shows them (a file's path, a database's ID), or session IDs. */
  readonly sessions?: ReadonlyArray<string> | undefined
  /** Hits to skip, in rank order (default 0). */
  readonly offset?: number | undefined
  /** Hits to show (default 50). */
  readonly limit?: number | undefined
}

/**
 * A part of an entry's searched text around what matched; `marks` are [start, end) offsets into `text`.
 * @since 0.2.0
 * @category models
 */
export interface Snippet {
  readonly text: string
  readonly marks: ReadonlyArray<readonly [number, number]>
  /** Whether the searched text goes on before and after the excerpt. */
  readonly before: boolean
  readonly after: boolean
}

/**
 * One matching entry.
 * @since 0.2.0
 * @category models
 */
export interface Hit {
  /** The session's location, as `list` shows it. */
  readonly location: string
  /** The session's ID. */
  readonly session: string
  /** The entry's ID. */
  readonly entry: string
  readonly parentId: string | null
  readonly timestamp: string
  /** The message's role, or the entry's kind. */
  readonly role: string
  readonly model?: string
  readonly snippets: ReadonlyArray<Snippet>
}

/**
 * A page of hits, how many there are in all, and the sessions that could not be searched.
 * @since 0.2.0
 * @category models
 */
export interface SearchResult {
  readonly hits: ReadonlyArray<Hit>
  readonly total: number
  /** How many sessions were looked at (the backend's narrowing may skip those with nothing to find). */
  readonly searched: number
  /** Sessions that could not be read, or whose line that would match does not decode. */
  readonly unreadable: ReadonlyArray<Unreadable>
}

/**
 * One term of a parsed query: a word, or a phrase of words next to each other.
 * @since 0.2.0
 * @category models
 */
export interface Term {
  readonly words: ReadonlyArray<string>
  readonly phrase: boolean
  /** The term as written. */
  readonly text: string
}

/**
 * A parsed query: its terms, and every distinct word of them (folded).
 * @since 0.2.0
 * @category models
 */
export interface Query {
  readonly terms: ReadonlyArray<Term>
  readonly words: ReadonlyArray<string>
  /** Whether every word is ASCII (the matcher then has a faster way through ASCII text). */
  readonly ascii: boolean
}

/**
 * How a backend that scans raw lines finds the candidates of a query, its bytes read as Latin-1
 * (`encoding: "latin1"`, every word ASCII) or as UTF-8: a line is one when `anchor` (global, the
 * query's longest word, in any case) finds a place in it and each of `others` tests true on it; and
 * a line that holds `escape` (`\u`) is one whatever its words, since an escaped character
 * (`\u00e9`) may hide a letter from a scan of its bytes.
 * @since 0.2.0
 * @category models
 */
export interface Pattern {
  readonly encoding: "latin1" | "utf8"
  readonly anchor: RegExp
  readonly others: ReadonlyArray<RegExp>
  readonly escape: string
  /**
   * For an ASCII query, the same words in lower case, the anchor's first: a backend may instead set
   * bit 5 (0x20) of every byte it scans and look for these with a byte search (upper-case ASCII
   * letters then read as lower case; no other byte becomes a letter or a digit of these words).
   */
  readonly folded: ReadonlyArray<string> | undefined
}

/**
 * What the library asks a backend for: candidate lines of every session that may hold all `words`.
 * @since 0.2.0
 * @category port
 */
export interface CandidateRequest {
  readonly directory: string | undefined
  /** The query's words, folded. */
  readonly words: ReadonlyArray<string>
  /** The same as an index keeps them (`lexemeOf`). */
  readonly lexemes: ReadonlyArray<string>
  readonly pattern: Pattern
  /** Only these sessions (locations or session IDs); all when undefined. */
  readonly sessions: ReadonlyArray<string> | undefined
  /**
   * Whether a backend may decide entries itself (`Candidates` with `entries`): true exactly when every
   * term of the query is one word of fewer than 64 code points (so its own lexeme, and no longer word's),
   * so that an entry whose searched text's lexemes hold every word is an entry the matcher takes.
   * @since 0.3.0
   */
  readonly decidable: boolean
  /**
   * Whether an index kept beside the sessions may answer. False when the search runs again because
   * the sessions contradicted an index's answer (a line it named no longer matches): then the
   * sessions themselves are read. An index inside a database's transactions may ignore it.
   * @since 0.3.0
   */
  readonly trusted: boolean
}

/**
 * An entry line to look at: its text, a number that grows with its place in the session (a byte
 * offset, a row number), and its line number in the session (the header is line 1) where known.
 * @since 0.2.0
 * @category port
 */
export interface CandidateLine {
  readonly order: number
  readonly line?: number | undefined
  readonly text: string
}

/**
 * The entries of one session an index says hold every word of a decidable query, with the facts
 * the filters and the ranking need, in rank order: newest first, then by `order`. Read through
 * functions of their index `i` (0 to `size - 1`) so that a million of them cost no million objects.
 * @since 0.3.0
 * @category port
 */
export interface IndexedEntries {
  readonly size: number
  readonly order: (i: number) => number
  readonly line: (i: number) => number | undefined
  readonly timestamp: (i: number) => string
  readonly role: (i: number) => string
  readonly model: (i: number) => string | undefined
}

/**
 * A session's candidates: its header line and the lines that may match; or why it could not be read;
 * or (for a decidable request) a session answered from an index: its header line, the lines still
 * to decode (`lines`: those that did not decode when indexed and may match), the entries it decided
 * (`entries`), and `fetch`, the text of entry lines by their `order`, asked only for the page's hits.
 * The library checks each fetched line decodes and matches as the index said; when one does not
 * (the session changed under the index), the whole search runs again with `trusted: false`.
 * @since 0.2.0
 * @category port
 */
export type Candidates =
  | { readonly location: string; readonly header: string; readonly lines: ReadonlyArray<CandidateLine> }
  | {
    readonly location: string
    readonly header: string
    readonly lines: ReadonlyArray<CandidateLine>
    readonly entries: IndexedEntries
    readonly fetch: (orders: ReadonlyArray<number>) => Effect.Effect<ReadonlyArray<string>, SessionError>
  }
  | { readonly location: string; readonly error: SessionError }

/**
 * What an index keeps of one entry line (`entryFacts`): its lexemes (`lineLexemes`'s), and either
 * the facts of the entry it decodes to (its timestamp, role, model, and whether it has searched
 * text) or why it does not decode.
 * @since 0.3.0
 * @category index
 */
export interface EntryFacts {
  readonly lexemes: ReadonlyArray<string>
  readonly decoded:
    | { readonly timestamp: string; readonly role: string; readonly model: string | undefined; readonly searched: boolean }
    | undefined
  readonly error: { readonly code: string; readonly reason: string; readonly line: number | undefined } | undefined
}

/**
 * The port a backend narrows a search with. `candidates` must hand over every committed entry line
 * of the sessions asked for that holds each of `words` (in any case, whole or in part; a line
 * escaping a character counts as holding them), with its session's header line, one session at a
 * time; it may hand over more. A session it cannot read is handed over with its error.
 * @since 0.2.0
 * @category port
 */
export interface SearchIndexService {
  readonly candidates: (request: CandidateRequest) => Stream.Stream<Candidates, ScanError>
}

/**
 * @since 0.2.0
 * @category port
 */
export class SearchIndex extends Context.Tag("@session-tree/SearchIndex")<SearchIndex, SearchIndexService>() {}

/**
 * Parses a query: SESSION_INVALID_OPTIONS for one with no word, over 1,000 characters or 32 words.
 * @since 0.2.0
 * @category parsing
 */
export const parseQuery: (text: string) => Either.Either<Query, InputError> = internal.parseQuery

/**
 * The text an entry is searched by (see the module's comment); undefined for kinds without text.
 * @since 0.2.0
 * @category text
 */
export const searchTextOf: (entry: Entry) => string | undefined = internal.searchTextOf

/**
 * A word folded to the form words are compared in.
 * @since 0.2.0
 * @category text
 */
export const fold: (word: string) => string = words.fold

/**
 * A folded word as an index keeps it: its first 64 code points. A longer word is found by its
 * first 64, and the matcher then compares it whole.
 * @since 0.2.0
 * @category index
 */
export const lexemeOf: (folded: string) => string = words.lexemeOf

/**
 * The distinct lexemes an index keeps of an entry line (1-based `line` in its session), whose
 * session's header line is `header`: those of the entry's searched text, or, when the line does
 * not decode (or the header is unknown or does not decode), those of the line as written: the
 * lexemes of `entryFacts`.
 * @since 0.2.0
 * @category index
 */
export const lineLexemes: (header: string | undefined, text: string, line?: number) => ReadonlyArray<string> = internal.lineLexemes

/**
 * The facts an index keeps of the entry lines (each with its 1-based `line` in its session) of a
 * session whose header line is `header`: what the matcher and the filters would decide of each, made
 * by the same code. The header is decoded once; when it does not decode, every line is kept as
 * written (its words, and the header's error), as a search then looks at it.
 * @since 0.3.0
 * @category index
 */
export const entryFacts: (header: string) => (text: string, line?: number) => EntryFacts = internal.entryFacts

/**
 * The candidate pattern of a query's folded words (see `Pattern`).
 * @since 0.2.0
 * @category index
 */
export const patternOf: (words: ReadonlyArray<string>) => Pattern = internal.patternOf

/**
 * Whether `text` holds every word of `query` in order as each term asks (the matcher itself), with
 * the matched ranges.
 * @since 0.2.0
 * @category matching
 */
export const match = (query: Query, text: string): ReadonlyArray<readonly [number, number]> | undefined =>
  internal.matchText(query, text)

/**
 * Ranks the hits among a backend's candidates for `options` (what `Sessions.search` runs).
 * @since 0.2.0
 * @category running
 */
export const run = <R>(
  options: SearchOptions,
  candidates: (request: CandidateRequest) => Stream.Stream<Candidates, ScanError, R>
): Effect.Effect<SearchResult, ScanError, R> => internal.runOptions(options, candidates)

/** What a listing shows of a session that loads, made from its records, and its kept text. */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { messageOf, textOf } from "../Record.js"
import { parentOf, subagentsOf } from "./links.js"
import type { Records } from "../Sessions.js"

/** The fields of `session-tree list --json` for a session that loads. */
export const Summary = Schema.Struct({
  id: Schema.String,
  location: Schema.String,
  /** How many entries. */
  entries: Schema.Int.pipe(Schema.nonNegative()),
  /** The newest entry (the leaf after a load), or null when there is none. */
  leaf: Schema.NullOr(Schema.String),
  /** The header's timestamp. */
  created: Schema.String,
  /**
   * The time of the session's last commit, never before `created`. A listing takes it from the
   * backend (a file's modification time, the database's commit time); a summary made from the
   * records alone, from the newest entry (the header's time when it is later, or there is none).
   */
  updated: Schema.String,
  /** The first at most 80 characters of the first user message's content; "" when there is none. */
  title: Schema.String,
  /** A subagent's session: the session that started it (`Subagents`). */
  parent: Schema.optionalWith(Schema.String, { exact: true }),
  /** The sessions of the subagents this session started, in the order it started them. */
  subagents: Schema.optionalWith(Schema.Array(Schema.String), { exact: true })
})
export type Summary = typeof Summary.Type

/** The text a backend keeps of a summary (`SessionJournal.ListingOf`, `SessionCatalog.Listings`). */
export const encodeSummary = (summary: Summary): string => JSON.stringify(summary)

const decodeText = Schema.decodeUnknownOption(Schema.parseJson(Summary), { onExcessProperty: "error" })

/** A kept summary, or undefined when the text is not one (it is then ignored and the session read again). */
export const decodeSummary = (text: string | undefined): Summary | undefined =>
  text === undefined ? undefined : Option.getOrUndefined(decodeText(text))

const TITLE_CHARACTERS = 80

/** The first `n` characters (code points, so a pair of surrogates is never cut) of `text`. */
const firstCharacters = (text: string, n: number): string => {
  let end = 0
  for (let count = 0; count < n && end < text.length; count++) {
    const c = text.charCodeAt(end)
    end += c >= 0xd800 && c <= 0xdbff && end + 1 < text.length ? 2 : 1
  }
  return text.slice(0, end)
}

/**
 * What a summary needs from the entries, found in one pass: the newest title entry's index and
 * the first user message's index (-1 when none), over the first `scanned` entries.
 */
export interface Scan {
  scanned: number
  /** The entry at `scanned - 1` when it was scanned: a different one there means the entries changed. */
  last: Records["entries"][number] | undefined
  newestTitle: number
  firstUser: number
  parent: string | undefined
  subagents: Array<string>
}

export const emptyScan = (): Scan => ({ scanned: 0, last: undefined, newestTitle: -1, firstUser: -1, parent: undefined, subagents: [] })

/**
 * Extends `scan` over the entries added since, so that a store that summarizes its session at
 * every commit pays for the new entries only; entries that are not the ones scanned (a batch rolled
 * back and another appended) are scanned again from the start.
 */
const extend = (scan: Scan, entries: Records["entries"]): Scan => {
  if (scan.scanned > entries.length || (scan.scanned > 0 && entries[scan.scanned - 1] !== scan.last)) {
    Object.assign(scan, emptyScan())
  }
  for (let i = scan.scanned; i < entries.length; i++) {
    const entry = entries[i]!
    if (entry.version === 2 && entry.kind === "title") scan.newestTitle = i
    else if (scan.firstUser < 0 && messageOf(entry)?.role === "user") scan.firstUser = i
    else if (entry.version === 2 && entry.kind === "custom") {
      // The links of a subagent's session and of the sessions it started (`Subagents`).
      scan.parent ??= parentOf([entry])?.session
      for (const link of subagentsOf([entry])) if (!scan.subagents.includes(link.session)) scan.subagents.push(link.session)
    }
  }
  scan.scanned = entries.length
  scan.last = entries.length === 0 ? undefined : entries[entries.length - 1]
  return scan
}

export const summarize = (location: string, records: Records, scan: Scan = emptyScan()): Summary => {
  const { entries, header } = records
  const newest = entries.length === 0 ? undefined : entries[entries.length - 1]!
  const found = extend(scan, entries)
  // A version-2 session's title is its newest title entry; without one, the first user message's text.
  const titled = found.newestTitle >= 0 ? entries[found.newestTitle]! : undefined
  const user = found.firstUser >= 0 ? messageOf(entries[found.firstUser]!) : undefined
  let title = titled !== undefined && titled.version === 2 && titled.kind === "title" ? firstCharacters(titled.title, TITLE_CHARACTERS) : ""
  if (title === "" && user !== undefined) title = firstCharacters(textOf(user), TITLE_CHARACTERS)
  const summary: Summary = {
    id: header.id,
    location,
    entries: entries.length,
    leaf: newest?.id ?? null,
    created: header.timestamp,
    updated: newest !== undefined && Date.parse(newest.timestamp) > Date.parse(header.timestamp) ? newest.timestamp : header.timestamp,
    title
  }
  if (found.parent === undefined && found.subagents.length === 0) return summary
  return {
    ...summary,
    ...(found.parent === undefined ? {} : { parent: found.parent }),
    ...(found.subagents.length === 0 ? {} : { subagents: [...found.subagents] })
  }
}


/** What a listing shows of a session that loads, made from its records, and its kept text. */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { messageOf, textOf } from "../Record.js"
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
  /** The newest entry's timestamp; the header's when there is none. */
  updated: Schema.String,
  /** The first at most 80 characters of the first user message's content; "" when there is none. */
  title: Schema.String
})
export type Summary = typeof Summary.Type

/** The text a backend keeps of a summary (`SessionJournal.Listing`, `SessionCatalog.Listings`). */
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

export const summarize = (location: string, records: Records): Summary => {
  const { entries, header } = records
  const newest = entries.length === 0 ? undefined : entries[entries.length - 1]!
  let title = ""
  // A version-2 session's title is its newest title entry; without one, the first user message's text.
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.version === 2 && entry.kind === "title") {
      title = firstCharacters(entry.title, TITLE_CHARACTERS)
      break
    }
  }
  if (title === "") {
    for (const entry of entries) {
      const message = messageOf(entry)
      if (message?.role === "user") {
        title = firstCharacters(textOf(message), TITLE_CHARACTERS)
        break
      }
    }
  }
  return {
    id: header.id,
    location,
    entries: entries.length,
    leaf: newest?.id ?? null,
    created: header.timestamp,
    updated: newest?.timestamp ?? header.timestamp,
    title
  }
}


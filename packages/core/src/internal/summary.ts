/** What a listing shows of a session that loads (SPEC C5 `list`), made from its records. */
import type { Records, Summary } from "../Sessions.js"

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
  for (const entry of entries) {
    if (entry.message.role === "user") {
      title = firstCharacters(entry.message.content, TITLE_CHARACTERS)
      break
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


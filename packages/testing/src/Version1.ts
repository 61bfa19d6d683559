/**
 * Version-1 views of what the store returns, for tests of version-1 sessions:
 * each checks that the value really is version 1 (failing the test otherwise)
 * and gives it its version-1 type, so a test reads `message.content` as text.
 */
import type { Entry, Header, SessionEntry, SessionHeader } from "@session-tree/core/Record"

/** The entry as a version-1 entry; throws when it is not one. */
export const entry = (e: Entry): SessionEntry => {
  if (e.version !== 1) throw new Error(`expected a version-1 entry, got version ${e.version} (${e.id})`)
  return e
}

/** The entries as version-1 entries; throws when one is not. */
export const entries = (list: ReadonlyArray<Entry>): ReadonlyArray<SessionEntry> => {
  for (const e of list) entry(e)
  return list as ReadonlyArray<SessionEntry>
}

/** The header as a version-1 header; throws when it is not one. */
export const header = (h: Header): SessionHeader => {
  if (h.version !== 1) throw new Error(`expected a version-1 header, got version ${h.version}`)
  return h
}

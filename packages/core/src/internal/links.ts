/**
 * What an import writes beside a source's conversation, in `custom` entries whose types every
 * reader of this project knows (`docs/import.md`): the links between a session and its
 * subagents' sessions, and the lines of a source that could not be read. Also the plain text of a
 * source's title.
 */
import type * as RecordV2 from "../RecordV2.js"

/** In a parent session: a subagent's session, started by one of its tool calls. */
export const SUBAGENT = "session-tree:subagent"
/** In a subagent's session, its first entry: the session (and the tool call) that started it. */
export const SUBAGENT_OF = "session-tree:subagent-of"
/** A line of the source that is not one record of its format, kept with `--skip-damaged`. */
export const DAMAGED_LINE = "session-tree:damaged-line"

/** A link between two sessions, as `SUBAGENT` and `SUBAGENT_OF` entries hold it. */
export interface Link {
  /** The other session's ID. */
  readonly session: string
  /** The tool call that started the subagent, where the source names it. */
  readonly toolCallId?: string | undefined
  /** The entry that holds the link. */
  readonly entryId: string
}

const isObject = (v: unknown): v is { readonly [key: string]: unknown } => typeof v === "object" && v !== null && !Array.isArray(v)

const linkOf = (entry: RecordV2.SessionEntry, type: string): Link | undefined => {
  if (entry.kind !== "custom" || entry.customType !== type || !isObject(entry.data)) return undefined
  const { session, toolCallId } = entry.data
  if (typeof session !== "string" || session === "") return undefined
  return typeof toolCallId === "string" ? { session, toolCallId, entryId: entry.id } : { session, entryId: entry.id }
}

/** The subagents' sessions a session names, in entry order. */
export const subagentsOf = (entries: ReadonlyArray<{ readonly version: number }>): ReadonlyArray<Link> =>
  entries.flatMap((entry) => {
    const link = entry.version === 2 ? linkOf(entry as RecordV2.SessionEntry, SUBAGENT) : undefined
    return link === undefined ? [] : [link]
  })

/** The session that started this one, when it is a subagent's: its first `SUBAGENT_OF` entry. */
export const parentOf = (entries: ReadonlyArray<{ readonly version: number }>): Link | undefined => {
  for (const entry of entries) {
    const link = entry.version === 2 ? linkOf(entry as RecordV2.SessionEntry, SUBAGENT_OF) : undefined
    if (link !== undefined) return link
  }
  return undefined
}

// An element's tag, opening or closing, with attributes: `<command-name>`, `</b>`, `<img src="x"/>`.
const TAG = /<\/?[A-Za-z][\w:.-]*(?:\s[^<>]*)?\/?>/g

/** A title as plain text: markup tags removed, whitespace collapsed to single spaces, trimmed. */
export const plainTitle = (text: string): string => text.replace(TAG, " ").replace(/\s+/g, " ").trim()

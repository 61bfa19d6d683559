/**
 * What the three views (Text, Markdown, Html) need to know about a session
 * before they lay it out: which leaf they show and its root-to-leaf path, how
 * to show an untrusted value, and a few counts. Navigation is the core's
 * (`Sessions.pathToOrFail`, `leavesOf`), so a view shows exactly the tree the library sees.
 */
import type { Entry, Header } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as Effect from "effect/Effect"

/** The children of `id` in commit order (null: the roots), as the core's `childrenOf`. */
export const childrenOf = <E extends Entry>(entries: ReadonlyArray<E>, id: string | null): ReadonlyArray<E> =>
  SessionTree.childrenOf(entries, id)

/** The root-to-`id` path, as the core's `pathTo`. */
export const pathTo = <E extends Entry>(entries: ReadonlyArray<E>, id: string): ReadonlyArray<E> =>
  SessionTree.pathTo(entries, id)

/**
 * `entries` as a frozen list, which the core indexes once for all the navigation
 * of a view (it keeps the index of frozen lists only); a caller's own array is
 * copied, never frozen in place.
 */
export const settled = <E extends Entry>(entries: ReadonlyArray<E>): ReadonlyArray<E> =>
  Object.isFrozen(entries) ? entries : Object.freeze([...entries])

/** The entries nobody names as parent, as the core's `leavesOf`. */
export const leavesOf = <E extends Entry>(entries: ReadonlyArray<E>): ReadonlyArray<E> =>
  SessionTree.leavesOf(entries)

/** Which leaf a view shows: by default the newest entry; `null` the empty path; an ID must name an entry. */
export interface LeafOption {
  readonly leaf?: string | null | undefined
}

/** The leaf a view shows and how it was chosen. */
export interface Shown<E extends Entry = Entry> {
  /** The leaf, or null for the empty path (no entries, or `leaf: null` asked for). */
  readonly leaf: string | null
  /** Whether the leaf is the default one (the newest entry) rather than a caller's choice. */
  readonly isDefault: boolean
  /** The frozen root-to-leaf path ([] for a null leaf). */
  readonly path: ReadonlyArray<E>
}

/**
 * Resolves the leaf to show: `undefined` means the newest entry (the last in
 * commit order, the leaf a freshly loaded tree starts at), `null` the empty
 * path, and an ID must name an entry whose chain reaches a root, or the result
 * is SESSION_UNKNOWN_ENTRY.
 */
export const resolve = <E extends Entry>(entries: ReadonlyArray<E>, leaf: string | null | undefined): Effect.Effect<Shown<E>, SessionError> =>
  Effect.suspend((): Effect.Effect<Shown<E>, SessionError> => {
    if (leaf === null) return Effect.succeed({ leaf: null, isDefault: false, path: [] })
    if (leaf === undefined) {
      // Lenient for the default: a list no root reaches (not one a store made) shows no path rather than failing.
      const newest = entries.length === 0 ? null : entries[entries.length - 1]!.id
      return Effect.succeed({ leaf: newest, isDefault: true, path: newest === null ? [] : pathTo(entries, newest) })
    }
    return Effect.map(Sessions.pathToOrFail(entries, leaf), (path) => ({ leaf, isDefault: false, path }))
  })

/** Whether `leaf` is the newest entry (the last in commit order), however it was asked for. */
export const isNewest = (entries: ReadonlyArray<Entry>, leaf: string, isDefault: boolean): boolean =>
  isDefault || entries.at(-1)?.id === leaf

/**
 * When a session last changed, as far as its own records tell: its newest entry's time, or its
 * creation when that is later (a fork or an import keeps its entries' older times). So a view's
 * "Updated" never precedes its "Created"; `Summary.updated` keeps the listing's meaning.
 */
export const updatedOf = (header: Header, summary: Pick<Sessions.Summary, "updated">): string =>
  summary.updated > header.timestamp ? summary.updated : header.timestamp

/** Counts shown in the Markdown and Html headers. */
export interface Counts {
  readonly entries: number
  readonly leaves: number
  readonly toolCalls: number
  readonly toolResults: number
  readonly errors: number
}

export const countsOf = (entries: ReadonlyArray<Entry>): Counts => {
  let toolCalls = 0
  let toolResults = 0
  let errors = 0
  for (const entry of entries) {
    if (entry.version === 1) {
      const message = entry.message
      if (message.role === "assistant") toolCalls += message.toolCalls.length
      else if (message.role === "tool") {
        toolResults++
        if (message.isError) errors++
      }
      continue
    }
    if (entry.kind !== "message") continue
    const message = entry.message
    if (message.role === "tool") {
      toolResults++
      if (message.isError) errors++
    } else if (message.role === "assistant") {
      // A provider-executed call and its result are counted like any other call and result.
      for (const part of message.content) {
        if (part.type === "tool-call") toolCalls++
        else if (part.type === "tool-result") {
          toolResults++
          if (part.isError) errors++
        }
      }
    }
  }
  return { entries: entries.length, leaves: leavesOf(entries).length, toolCalls, toolResults, errors }
}

/** What the views show of a session as `list` does: when it last changed and its title. */
export interface Summary {
  readonly updated: string
  readonly title: string
}

/**
 * What `list` shows of the session (its `updated` and `title`), so a view never tells it
 * differently; no location is shown. A version-2 session's title is its newest `title`
 * entry, else, as in version 1, the start of its first user message's text.
 */
export const summaryOf = (header: Header, entries: ReadonlyArray<Entry>): Summary => Sessions.summarize("", { header, entries })

// Characters that would break a line, or act on a terminal and hide themselves:
// C0 controls (ESC starts an escape sequence), DEL, C1 controls (0x9b is a
// one-byte CSI), and the Unicode line and paragraph separators.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g

/** `text` with every control character and separator as its `\uXXXX` escape, so none reaches a terminal or breaks a line. */
export const escapeControls = (text: string): string =>
  text.replace(CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

// Characters that show as nothing at all: zero-width spaces and joiners, direction marks, the
// byte order mark. In a message about bytes they would hide the very byte it is about.
const INVISIBLE = /[\u200b-\u200f\u2060-\u2064\ufeff]/g

/** `text` for a message line: controls escaped as by `escapeControls`, invisible characters by name (`U+FEFF (byte order mark)`). */
export const visible = (text: string): string =>
  escapeControls(text).replace(INVISIBLE, (c) => `U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}${c === "\ufeff" ? " (byte order mark)" : ""}`)

// What a terminal acts on, in text whose line breaks and tabs are kept: C0 controls other than
// tab, line feed and carriage return (ESC starts an escape sequence), DEL, and C1 controls.
const TERMINAL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g

/** Multi-line `text` with every terminal control as its `\uXXXX` escape, its line breaks and tabs as they are. */
export const escapeTerminal = (text: string): string =>
  text.replace(TERMINAL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`)

/** `value` as one line of JSON with every control and separator escaped (JSON.stringify leaves DEL, C1 and U+2028/9 raw). */
export const json = (value: unknown): string => escapeControls(JSON.stringify(value))

/** A JSON string literal of `value` with every control and separator escaped. */
export const quote = (value: string): string => json(value)

/**
 * An untrusted single-line value (an ID, a tool name) as the views show it: as
 * it is when that is safe, else JSON-quoted (it holds a control or a separator,
 * or nothing visible), so no value can move the cursor, recolour or hide itself.
 */
export const printable = (value: string): string => (CONTROL.test(value) || !/[^ ]/.test(value) ? quote(value) : value)

/** The longest run of `char` in `text`. */
export const longestRun = (text: string, char: string): number => {
  let longest = 0
  let run = 0
  for (let i = 0; i < text.length; i++) {
    if (text[i] === char) {
      run++
      if (run > longest) longest = run
    } else {
      run = 0
    }
  }
  return longest
}

/** Where the first `n` code points of `text` end (a surrogate pair is never split). */
const codePointsEnd = (text: string, n: number): number => {
  let end = 0
  for (let count = 0; count < n && end < text.length; count++) {
    const c = text.charCodeAt(end)
    const next = text.charCodeAt(end + 1)
    end += c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff ? 2 : 1
  }
  return end
}

/** `text` if it has at most `max` characters (code points), else its first `max - 1` and "…". */
export const truncate = (text: string, max: number): string =>
  codePointsEnd(text, max) >= text.length ? text : `${text.slice(0, codePointsEnd(text, max - 1))}…`

/** A count with its noun, in the singular for one. */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`

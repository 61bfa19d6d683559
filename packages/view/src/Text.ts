/**
 * Text and JSON views of a session for a terminal: the active path (`log`) and
 * the whole tree (`tree`). Navigation comes from the core's pure functions
 * (`pathTo`, `childrenOf`), so the CLI and the demo show exactly the tree the
 * library sees.
 *
 * Every value from a session (IDs, tool names, text) is untrusted and reaches a
 * terminal: it is printed through `printable`, `quote` or `json`, which escape
 * every control character, so no value can send an escape sequence.
 */
import type { Message, SessionEntry, SessionHeader } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import { isUnreadable, type Listed } from "@session-tree/core/Sessions"
import { childrenOf } from "@session-tree/core/SessionTree"
import * as Effect from "effect/Effect"
import { json, type LeafOption, printable, quote, resolve, truncate, visible } from "./internal/session.js"

// For the single values, JSON objects and messages the CLI prints beside these views, escaped the same way.
export { json, printable, visible }

/**
 * Which path a view shows: `leaf` defaults to the newest entry (the last of
 * `entries`, where a loaded tree starts); `null` is the empty path; an ID that
 * is not an entry fails with SESSION_UNKNOWN_ENTRY.
 */
export type Options = LeafOption

const CONTENT_CHARS = 60
const ARGUMENT_CHARS = 40

/** One line, at most CONTENT_CHARS characters (code points), JSON-quoted so newlines, quotes and controls stay visible. */
const short = (text: string): string => quote(truncate(text, CONTENT_CHARS))

const compactJson = (value: unknown): string => truncate(json(value), ARGUMENT_CHARS)

/** Role and a one-line summary of a message: content, tool calls, or which call a result answers. */
export const describeMessage = (message: Message): string => {
  switch (message.role) {
    case "user":
      return `user       ${short(message.content)}`
    case "assistant": {
      const calls = message.toolCalls.map((call) => `${printable(call.name)}(${compactJson(call.arguments)}) [${printable(call.id)}]`)
      return `assistant  ${short(message.content)}${calls.length === 0 ? "" : `  calls ${calls.join(", ")}`}`
    }
    case "tool":
      return `tool       ${printable(message.toolName)} [${printable(message.toolCallId)}]${message.isError ? " error" : ""} → ${short(message.content)}`
  }
}

/** `log`: one line per entry of the root-to-leaf path. */
export const renderLog = (
  entries: ReadonlyArray<SessionEntry>,
  options?: Options
): Effect.Effect<ReadonlyArray<string>, SessionError> =>
  Effect.map(resolve(entries, options?.leaf), ({ path }) => path.map((entry) => `${printable(entry.id)}  ${describeMessage(entry.message)}`))

/** `log --json`: the leaf and the full records of its path. */
export const logJson = (entries: ReadonlyArray<SessionEntry>, options?: Options) =>
  Effect.map(resolve(entries, options?.leaf), ({ leaf, path }) => ({ leaf, entries: path }))

const ACTIVE = "●"
const INACTIVE = "○"

/**
 * `tree`: the header, then every entry once, depth-first in commit order. A
 * chain of only children stays in one column; a fork draws each child with
 * `├──`/`└──` and indents its subtree, so the picture widens only where the
 * conversation branched. ● marks the root-to-leaf path, ○ the other branches.
 */
export const renderTree = (
  header: SessionHeader,
  entries: ReadonlyArray<SessionEntry>,
  options?: Options
): Effect.Effect<ReadonlyArray<string>, SessionError> =>
  Effect.map(resolve(entries, options?.leaf), ({ leaf, path }) => {
    const active = new Set(path.map((entry) => entry.id))
    const lines = [`session ${printable(header.id)}  ${header.timestamp}  ${entries.length} entries`]
    if (entries.length === 0) return [...lines, "(no entries)"]
    interface Frame {
      readonly entry: SessionEntry
      readonly first: string
      readonly rest: string
    }
    const stack: Array<Frame> = []
    // Iterative, so a 4,096-entry chain cannot overflow the call stack.
    const pushChildren = (children: ReadonlyArray<SessionEntry>, prefix: string) => {
      if (children.length === 1) {
        stack.push({ entry: children[0]!, first: prefix, rest: prefix })
        return
      }
      for (let i = children.length - 1; i >= 0; i--) {
        const last = i === children.length - 1
        stack.push({
          entry: children[i]!,
          first: `${prefix}${last ? "└── " : "├── "}`,
          rest: `${prefix}${last ? "    " : "│   "}`
        })
      }
    }
    pushChildren(childrenOf(entries, null), "")
    while (stack.length > 0) {
      const { entry, first, rest } = stack.pop()!
      const mark = active.has(entry.id) ? ACTIVE : INACTIVE
      const here = entry.id === leaf ? "  ← leaf" : ""
      lines.push(`${first}${mark} ${printable(entry.id)}  ${describeMessage(entry.message)}${here}`)
      pushChildren(childrenOf(entries, entry.id), rest)
    }
    return lines
  })

/** `tree --json`: every entry with its children and whether it is on the active path. */
export const treeJson = (header: SessionHeader, entries: ReadonlyArray<SessionEntry>, options?: Options) =>
  Effect.map(resolve(entries, options?.leaf), ({ leaf, path }) => {
    const active = new Set(path.map((entry) => entry.id))
    return {
      session: header.id,
      leaf,
      active: path.map((entry) => entry.id),
      nodes: entries.map((entry) => ({
        id: entry.id,
        parentId: entry.parentId,
        role: entry.message.role,
        active: active.has(entry.id),
        children: childrenOf(entries, entry.id).map((child) => child.id)
      }))
    }
  })

/** `CODE reason (line N)`: the code is the first word, so scripts can split on whitespace. */
export const formatError = (error: SessionError): string =>
  `${error.code} ${visible(error.reason)}${error.line === undefined ? "" : ` (line ${error.line})`}`

/**
 * One line of `list`: a session's summary, or the error code of one that does not load.
 * `changed` is when the session last changed (what a listing is ordered by); without it, the
 * later of its creation and its newest entry (a fork keeps its entries' older times).
 */
export const listLine = (listed: Listed, changed?: string): string =>
  isUnreadable(listed)
    ? `${listed.error.code} ${printable(listed.location)}  ${visible(listed.error.message)}`
    : `${changed ?? (listed.updated > listed.created ? listed.updated : listed.created)}  ${String(listed.entries).padStart(4)} entries  ` +
      `${printable(listed.id)}  ${quote(listed.title)}  ${printable(listed.location)}`

/**
 * Text and JSON views of a session for a terminal: the active path (`log`) and
 * the whole tree (`tree`), in either version of the format. A version-2 entry
 * is shown by its kind (a message by its role), with its label when it has one. Navigation comes from the core's pure functions
 * (`pathTo`, `childrenOf`), so the CLI and the demo show exactly the tree the
 * library sees.
 *
 * Every value from a session (IDs, tool names, text) is untrusted and reaches a
 * terminal: it is printed through `printable`, `quote` or `json`, which escape
 * every control character, so no value can send an escape sequence.
 */
import type { Entry, Header, Message } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import type { SessionError } from "@session-tree/core/SessionError"
import type { Listed } from "@session-tree/core/Sessions"
import type * as Effect from "effect/Effect"
import { json, type LeafOption, printable, visible } from "./internal/session.js"
import * as internal from "./internal/text.js"

// For the single values, JSON objects and messages the CLI prints beside these views, escaped the same way.
/**
 * How the views print untrusted text: `json` (one line of JSON, every control escaped), `printable`
 * (a single-line value as it is when safe, else quoted) and `visible` (controls escaped, invisible
 * characters by name).
 *
 * @since 0.1.0
 * @category reexports
 */
export { json, printable, visible }

/**
 * Which path a view shows: `leaf` defaults to the newest entry (the last of
 * `entries`, where a loaded tree starts); `null` is the empty path; an ID that
 * is not an entry fails with SESSION_UNKNOWN_ENTRY.
 *
 * @since 0.1.0
 * @category models
 */
export type Options = LeafOption

/**
 * Role and a one-line summary of a message: content, tool calls, or which call a result answers.
 *
 * @since 0.1.0
 * @category rendering
 */
export const describeMessage: (message: Message) => string = internal.describeMessage

/**
 * Kind (a message: role) and a one-line summary of a version-2 entry.
 *
 * @since 0.1.0
 * @category rendering
 */
export const describeEntry: (entry: V2.SessionEntry) => string = internal.describeEntry

/**
 * `log`: one line per entry of the root-to-leaf path.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderLog: (
  entries: ReadonlyArray<Entry>,
  options?: Options
) => Effect.Effect<ReadonlyArray<string>, SessionError> = internal.renderLog

/**
 * `log --json`: the leaf and the full records of its path.
 *
 * @since 0.1.0
 * @category rendering
 */
export const logJson: (
  entries: ReadonlyArray<Entry>,
  options?: Options
) => Effect.Effect<{ leaf: string | null; entries: ReadonlyArray<Entry> }, SessionError> = internal.logJson

/**
 * `tree`: the header, then every entry once, depth-first in commit order. A
 * chain of only children stays in one column; a fork draws each child with
 * `├──`/`└──` and indents its subtree, so the picture widens only where the
 * conversation branched. ● marks the root-to-leaf path, ○ the other branches.
 * A version-2 session with a title shows it on the line after the header.
 *
 * @since 0.1.0
 * @category rendering
 */
export const renderTree: (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
) => Effect.Effect<ReadonlyArray<string>, SessionError> = internal.renderTree

/**
 * A node of `tree --json`: version 1 names a message's role; version 2 also the kind (role null for other kinds) and the label.
 *
 * @since 0.1.0
 * @category models
 */
export type TreeNode =
  | {
    readonly id: string
    readonly parentId: string | null
    readonly role: Message["role"]
    readonly active: boolean
    readonly children: ReadonlyArray<string>
  }
  | {
    readonly id: string
    readonly parentId: string | null
    readonly kind: V2.Kind
    readonly role: V2.Message["role"] | null
    readonly label: string | null
    readonly active: boolean
    readonly children: ReadonlyArray<string>
  }

/**
 * `tree --json`: every entry with its children and whether it is on the active path; a version-2 session also its title (or null).
 *
 * @since 0.1.0
 * @category rendering
 */
export const treeJson: (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
) => Effect.Effect<
  | { nodes: Array<TreeNode>; session: string; leaf: string | null; active: Array<string> }
  | { title: string | null; nodes: Array<TreeNode>; session: string; leaf: string | null; active: Array<string> },
  SessionError
> = internal.treeJson

/**
 * `CODE reason (line N)`: the code is the first word, so scripts can split on whitespace.
 *
 * @since 0.1.0
 * @category errors
 */
export const formatError: (error: SessionError) => string = internal.formatError

/**
 * One line of `list`: a session's summary, or the error code of one that does not load.
 * `changed` is when the session last changed (what a listing is ordered by); without it, the
 * later of its creation and its newest entry (a fork keeps its entries' older times).
 *
 * @since 0.1.0
 * @category rendering
 */
export const listLine: (listed: Listed, changed?: string) => string = internal.listLine

/**
 * Context: what a model is shown of one branch. Pure functions over the entries
 * of a branch, root to leaf (`tree.activeEntries` of a version-2 session); only
 * message entries become messages, and compaction and model entries steer what
 * is built.
 *
 * **Groups.** A branch's messages split into complete groups: a system or user
 * message alone; an assistant message with every tool message answering its
 * calls. A group is a contiguous run of the branch: when an answer comes later
 * than other messages (a user message sent while a tool still ran), the group
 * stretches to that answer and holds the messages in between, so that the
 * branch's order is kept and no cut ever falls between a call and a result.
 * A tool message whose call is not on the branch is a group alone.
 *
 * **Compaction.** The newest compaction entry on the branch replaces the
 * messages before its `firstKeptEntryId` by one user message holding its
 * summary (`summaryMessage`, recognisable by `isSummary` and by the
 * compaction entry's ID). The system messages that open the branch are the
 * agent's instructions, not conversation: they are always kept, first. A
 * `firstKeptEntryId` inside a group keeps that whole group; a null one (or one
 * not on the branch) keeps only what follows the compaction entry.
 *
 * **Budget.** With a token budget, the oldest complete groups after the
 * opening system messages and the summary are dropped until the rest fits,
 * cutting only before a user message (or at the first kept group after a
 * summary, which is itself the user message the context opens with): a
 * budgeted context never opens on an answer whose question was dropped, which
 * providers refuse, and never splits a turn's calls from their results. A
 * branch that opens on answers loses them first. The newest turn (from its
 * user message) is always kept, so a budget smaller than it is exceeded; a
 * branch with no user message to open on is kept whole.
 */
import type * as Option from "effect/Option"
import * as internal from "./internal/conversation.js"
import type * as RecordV2 from "./RecordV2.js"

/**
 * A complete group: the message entries of one contiguous run of the branch, and their messages.
 *
 * @since 0.1.0
 * @category models
 */
export interface Group {
  /** The role of the message that opens the group. */
  readonly role: RecordV2.Message["role"]
  /** The group's message entries in branch order; never empty. */
  readonly entries: ReadonlyArray<RecordV2.MessageEntry>
  /** The messages of `entries`. */
  readonly messages: ReadonlyArray<RecordV2.Message>
}

/**
 * The model in effect on a branch.
 *
 * @since 0.1.0
 * @category models
 */
export interface Model {
  readonly provider?: string
  readonly model?: string
  /** A reasoning level, from a model entry only. */
  readonly thinking?: string
}

/**
 * Estimates the tokens the messages cost when sent. `build` assumes that fewer
 * messages never cost more.
 *
 * @since 0.1.0
 * @category models
 */
export type Estimate = (messages: ReadonlyArray<RecordV2.Message>) => number

/**
 * Options of `build`: a token budget and how tokens are counted.
 *
 * @since 0.1.0
 * @category models
 */
export interface BuildOptions {
  /** The tokens the built messages should fit in; without it nothing is dropped. */
  readonly budget?: number | undefined
  /** How tokens are counted; `estimate` by default. */
  readonly estimate?: Estimate | undefined
}

/**
 * Where a compaction may start, and what its summary must cover.
 *
 * @since 0.1.0
 * @category models
 */
export interface CompactionPoint {
  /** The first entry kept after the summary: it starts a complete group; null keeps nothing. */
  readonly firstKeptEntryId: string | null
  /** The messages the new summary replaces: the current summary, if any, then the groups before the cut. */
  readonly summarised: ReadonlyArray<RecordV2.Message>
  /** The messages kept after the new summary. */
  readonly kept: ReadonlyArray<RecordV2.Message>
}

/**
 * The text before a summary in its message.
 *
 * @since 0.1.0
 * @category constants
 */
export const SUMMARY_PREFIX: string = internal.SUMMARY_PREFIX

/**
 * The text after a summary in its message.
 *
 * @since 0.1.0
 * @category constants
 */
export const SUMMARY_SUFFIX: string = internal.SUMMARY_SUFFIX

/**
 * The tokens `approximateTokens` counts for a file part.
 *
 * @since 0.1.0
 * @category constants
 */
export const FILE_TOKENS: number = internal.FILE_TOKENS

/**
 * The branch's messages in complete groups, in branch order; their concatenation is every message.
 *
 * @since 0.1.0
 * @category context
 */
export const groups: (entries: ReadonlyArray<RecordV2.SessionEntry>) => ReadonlyArray<Group> = internal.groups

/**
 * The messages to send a model: the opening system messages, the newest
 * compaction's summary, then the groups kept after it; with a budget, the
 * oldest of those groups dropped until the rest fits, the rest opening on a
 * user message (see **Budget**). With the default
 * estimate, the rest costs the whole's estimate less the approximate tokens of
 * the groups dropped (a response's usage counts the whole context it answered
 * and cannot be re-read for a shorter one); a caller's estimate is asked about
 * the candidate lists themselves.
 *
 * @since 0.1.0
 * @category context
 */
export const build: (
  entries: ReadonlyArray<RecordV2.SessionEntry>,
  options?: BuildOptions
) => ReadonlyArray<RecordV2.Message> = internal.build

/**
 * The default estimate: the newest assistant message with `meta.usage` costs
 * its input and output tokens together, which cover everything sent before it
 * and its own content; every message after it costs `approximateTokens`.
 * Without usage, every message costs `approximateTokens`.
 *
 * @since 0.1.0
 * @category context
 */
export const estimate: Estimate = internal.estimate

/**
 * A message's tokens without a tokenizer: a quarter of the characters of its
 * text, reasoning, tool names, arguments and results, rounded up, plus
 * `FILE_TOKENS` for each file. Options (provider payloads) are not counted.
 *
 * @since 0.1.0
 * @category context
 */
export const approximateTokens: (message: RecordV2.Message) => number = internal.approximateTokens

/**
 * The model in effect: the newest model entry on the branch, else the newest
 * assistant `meta` naming a provider or a model; none when neither exists.
 *
 * @since 0.1.0
 * @category context
 */
export const model: (entries: ReadonlyArray<RecordV2.SessionEntry>) => Option.Option<Model> = internal.model

/**
 * Where a new compaction may start so that the groups kept after it cost at
 * most `keep` tokens (by `approximateTokens`, or the caller's estimate of the
 * kept messages): the oldest such group's first entry. None when nothing would
 * be summarised (everything after the current summary already fits).
 *
 * @since 0.1.0
 * @category context
 */
export const compactionPoint: (
  entries: ReadonlyArray<RecordV2.SessionEntry>,
  keep: number,
  options?: { readonly estimate?: Estimate | undefined }
) => Option.Option<CompactionPoint> = internal.compactionPoint

/**
 * The user message that stands for a compaction's summary; its ID is the compaction entry's.
 *
 * @since 0.1.0
 * @category context
 */
export const summaryMessage: (compaction: RecordV2.CompactionEntry) => RecordV2.UserMessage = internal.summaryMessage

/**
 * Whether `message` has the form of `summaryMessage`.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSummary: (message: RecordV2.Message) => boolean = internal.isSummary

/**
 * Usage across sessions: the tokens (and, where the usage carries it, the cost)
 * that version-2 assistant messages record in `meta.usage`, summed per session,
 * day or model (`session-tree stats`, `Sessions.stats`, the server's list).
 *
 * Every entry counts once, on whatever branch it is: each was a call that was
 * made, regenerated or not. A compaction that carries the `usage` of the call that
 * wrote its summary counts too. Version-1 sessions record no usage. The cost is
 * what the provider said (Pi's `usage.cost.total`, kept in the message's
 * `options.pi` by the import), never a price list of ours: `costed` says how many
 * messages carried one, so that a partial sum is never shown as a whole.
 *
 * @since 0.2.0
 */
import * as Either from "effect/Either"
import type { Entry, Header } from "./Record.js"
import type { InputError } from "./SessionError.js"
import type { Unreadable } from "./Sessions.js"
import * as internal from "./internal/stats.js"

/**
 * Sums of usage.
 * @since 0.2.0
 * @category models
 */
export interface Totals {
  /** Messages (and compactions) that recorded usage. */
  readonly messages: number
  readonly inputTokens: number
  readonly outputTokens: number
  readonly reasoningTokens: number
  readonly cachedInputTokens: number
  readonly cacheWriteTokens: number
  /** US dollars, summed over the `costed` messages that carried a cost. */
  readonly cost: number
  readonly costed: number
}

/**
 * One session's usage, by day (UTC, `YYYY-MM-DD`) and model, with what its listing shows beside.
 * @since 0.2.0
 * @category models
 */
export interface SessionUsage {
  /** The session's ID. */
  readonly session: string
  readonly entries: number
  /** Leaves: entries nobody names as parent. */
  readonly branches: number
  /** Every model the session names (in `meta.model` or a model entry), sorted. */
  readonly models: ReadonlyArray<string>
  readonly total: Totals
  /** Day → model → totals. */
  readonly cells: ReadonlyMap<string, ReadonlyMap<string, Totals>>
}

/**
 * How rows group: by day, by model (`(unknown)` where a message names none), by session.
 * @since 0.2.0
 * @category models
 */
export type StatsBy = "day" | "model" | "session"

/**
 * @since 0.2.0
 * @category models
 */
export interface StatsOptions {
  /** The directory of session files (the current one by default); a database ignores it. */
  readonly directory?: string | undefined
  /** Rows by day, model or session; only the total when undefined. */
  readonly by?: StatsBy | undefined
  /** Only usage recorded on or after this day (`YYYY-MM-DD`, UTC). */
  readonly since?: string | undefined
  /** Only usage recorded on or before this day. */
  readonly until?: string | undefined
  /** Only these sessions (locations as `list` shows them). */
  readonly sessions?: ReadonlyArray<string> | undefined
}

/**
 * One row: its key (the day, the model, the session's location), the sessions counted in it, its
 * sums; a session's row also shows the session's ID, entries, branches and models.
 * @since 0.2.0
 * @category models
 */
export interface StatsRow extends Totals {
  readonly key: string
  readonly sessions: number
  readonly session?: string
  readonly entries?: number
  readonly branches?: number
  readonly models?: ReadonlyArray<string>
}

/**
 * The rows (days oldest first; models and sessions by tokens, most first), the total over every
 * session counted (`sessions`: those with usage in range), and the sessions that do not load.
 * @since 0.2.0
 * @category models
 */
export interface StatsResult {
  readonly rows: ReadonlyArray<StatsRow>
  readonly total: Totals & { readonly sessions: number }
  readonly unreadable: ReadonlyArray<Unreadable>
}

/**
 * The model named where no message says which.
 * @since 0.2.0
 * @category constants
 */
export const UNKNOWN_MODEL: string = internal.UNKNOWN_MODEL

/**
 * The usage of one session's records.
 * @since 0.2.0
 * @category summing
 */
export const usageOf: (header: Header, entries: ReadonlyArray<Entry>) => SessionUsage = internal.usageOf

/**
 * The cost a message's `options` carry, in US dollars (see the module's comment), or undefined.
 * @since 0.2.0
 * @category summing
 */
export const costOf: (options: unknown) => number | undefined = internal.costOf

/**
 * Sums the usage of `sessions` as `options` groups and bounds it: what `Sessions.stats` returns.
 * SESSION_INVALID_OPTIONS for an unknown grouping or a bound that is not a date.
 * @since 0.2.0
 * @category summing
 */
export const aggregate = (
  sessions: ReadonlyArray<{ readonly location: string; readonly usage: SessionUsage }>,
  unreadable: ReadonlyArray<Unreadable>,
  options?: StatsOptions
): Either.Either<StatsResult, InputError> =>
  Either.map(internal.statsPlanOf(options), (plan) => internal.aggregate(sessions, unreadable, plan))

/**
 * Usage summed from `meta.usage`: per session once (by day and model, so that
 * every grouping and date filter is a sum of those), then over sessions.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { type Entry, type Header } from "../Record.js"
import type { ScanError, SessionCatalogService } from "../SessionCatalog.js"
import type { SessionJournalService } from "../SessionJournal.js"
import { decode } from "./sessionStore.js"
import { leavesOf } from "../SessionTree.js"
import type { SessionUsage, StatsBy, StatsOptions, StatsResult, StatsRow, Totals } from "../Stats.js"
import type { Unreadable } from "../Sessions.js"
import { type InputError, type SessionError, sessionError } from "../SessionError.js"
import { isCanonicalTimestamp } from "./timestamp.js"

const invalid = (reason: string): InputError => sessionError("SESSION_INVALID_OPTIONS", reason) as InputError

/** The model named where no message says which. */
export const UNKNOWN_MODEL = "(unknown)"

export const zero = (): Totals => ({
  messages: 0,
  inputTokens: 0,
  outputTokens: 0,
  reasoningTokens: 0,
  cachedInputTokens: 0,
  cacheWriteTokens: 0,
  cost: 0,
  costed: 0
})

type Mutable<A> = { -readonly [K in keyof A]: A[K] }

const addInto = (into: Mutable<Totals>, from: Totals): void => {
  into.messages += from.messages
  into.inputTokens += from.inputTokens
  into.outputTokens += from.outputTokens
  into.reasoningTokens += from.reasoningTokens
  into.cachedInputTokens += from.cachedInputTokens
  into.cacheWriteTokens += from.cacheWriteTokens
  into.cost += from.cost
  into.costed += from.costed
}

const own = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && Object.prototype.hasOwnProperty.call(value, key)
    ? (value as { readonly [k: string]: unknown })[key]
    : undefined

/**
 * What a message's provider said it cost, in US dollars, where its usage carries it: Pi records
 * it (`usage.cost.total`), kept under `options.pi` by the import.
 */
export const costOf = (options: unknown): number | undefined => {
  const total = own(own(own(own(options, "pi"), "usage"), "cost"), "total")
  return typeof total === "number" && Number.isFinite(total) && total >= 0 ? total : undefined
}

interface Counted {
  readonly model: string
  readonly day: string
  readonly totals: Totals
}

/** The usage one entry records: an assistant message's `meta.usage` (or a compaction's `usage`). */
const countedOf = (entry: Entry): Counted | undefined => {
  if (entry.version !== 2) return undefined
  let usage: unknown
  let model: string | undefined
  let options: unknown
  if (entry.kind === "message" && entry.message.role === "assistant") {
    usage = entry.message.meta?.usage
    model = entry.message.meta?.model
    options = entry.message.options
  } else if (entry.kind === "compaction") {
    // A compaction may carry the usage of the call that wrote its summary.
    usage = own(entry, "usage")
  }
  if (usage === undefined) return undefined
  const count = (key: string): number => {
    const n = own(usage, key)
    return typeof n === "number" && Number.isSafeInteger(n) && n >= 0 ? n : 0
  }
  const cost = costOf(options)
  return {
    model: model ?? UNKNOWN_MODEL,
    day: entry.timestamp.slice(0, 10),
    totals: {
      messages: 1,
      inputTokens: count("inputTokens"),
      outputTokens: count("outputTokens"),
      reasoningTokens: count("reasoningTokens"),
      cachedInputTokens: count("cachedInputTokens"),
      cacheWriteTokens: count("cacheWriteTokens"),
      cost: cost ?? 0,
      costed: cost === undefined ? 0 : 1
    }
  }
}

/** The usage of one session's records: every entry of every branch counts once (each was a call made). */
export const usageOf = (header: Header, entries: ReadonlyArray<Entry>): SessionUsage => {
  const cells = new Map<string, Map<string, Mutable<Totals>>>()
  const total = zero()
  const models = new Set<string>()
  for (const entry of entries) {
    if (entry.version === 2 && entry.kind === "model") models.add(entry.model)
    const counted = countedOf(entry)
    if (counted === undefined) continue
    if (counted.model !== UNKNOWN_MODEL) models.add(counted.model)
    let day = cells.get(counted.day)
    if (day === undefined) cells.set(counted.day, day = new Map())
    let cell = day.get(counted.model)
    if (cell === undefined) day.set(counted.model, cell = zero())
    addInto(cell, counted.totals)
    addInto(total, counted.totals)
  }
  return { session: header.id, entries: entries.length, branches: leavesOf(entries).length, models: [...models].sort(), total, cells }
}

const DATE = /^\d{4}-\d{2}-\d{2}$/

const dateBound = (value: string | undefined, name: string): Either.Either<string | undefined, InputError> =>
  value === undefined || (typeof value === "string" && DATE.test(value) && isCanonicalTimestamp(`${value}T00:00:00.000Z`))
    ? Either.right(value)
    : Either.left(invalid(`${name} ${JSON.stringify(value)} is not a date (YYYY-MM-DD)`))

const BY: ReadonlySet<string> = new Set(["day", "model", "session"])

export interface StatsPlan {
  readonly by: StatsBy | undefined
  readonly since: string | undefined
  readonly until: string | undefined
}

export const statsPlanOf = (options: StatsOptions | undefined): Either.Either<StatsPlan, InputError> =>
  Either.gen(function*() {
    const by = options?.by
    if (by !== undefined && !BY.has(by)) return yield* Either.left(invalid(`by ${JSON.stringify(by)} is not one of day, model, session`))
    return { by, since: yield* dateBound(options?.since, "since"), until: yield* dateBound(options?.until, "until") }
  })

/** One session's totals within the plan's days, by model. */
const cellsIn = (usage: SessionUsage, plan: StatsPlan): Array<readonly [string, string, Totals]> => {
  const out: Array<readonly [string, string, Totals]> = []
  for (const [day, models] of usage.cells) {
    if (plan.since !== undefined && day < plan.since) continue
    if (plan.until !== undefined && day > plan.until) continue
    for (const [model, totals] of models) out.push([day, model, totals])
  }
  return out
}

/** The rows of `sessions` (each listed with its usage) as the plan groups them, and the total. */
export const aggregate = (
  sessions: ReadonlyArray<{ readonly location: string; readonly usage: SessionUsage }>,
  unreadable: ReadonlyArray<Unreadable>,
  plan: StatsPlan
): StatsResult => {
  const rows = new Map<string, { totals: Mutable<Totals>; sessions: Set<string>; usage?: SessionUsage }>()
  const total = zero()
  const counted = new Set<string>()
  for (const { location, usage } of sessions) {
    const cells = cellsIn(usage, plan)
    if (plan.by === "session") {
      // Every session has its row, with or without usage, as `list` shows every session.
      const row = { totals: zero(), sessions: new Set([location]), usage }
      for (const [, , totals] of cells) addInto(row.totals, totals)
      rows.set(location, row)
    }
    for (const [day, model, totals] of cells) {
      addInto(total, totals)
      counted.add(location)
      if (plan.by === "day" || plan.by === "model") {
        const key = plan.by === "day" ? day : model
        let row = rows.get(key)
        if (row === undefined) rows.set(key, row = { totals: zero(), sessions: new Set() })
        addInto(row.totals, totals)
        row.sessions.add(location)
      }
    }
  }
  const list: Array<StatsRow> = [...rows].map(([key, row]) => ({
    key,
    sessions: row.sessions.size,
    ...row.totals,
    ...(row.usage === undefined ? {} : { session: row.usage.session, entries: row.usage.entries, branches: row.usage.branches, models: row.usage.models })
  }))
  // Days oldest first; models and sessions by the tokens they used, most first.
  const tokens = (row: StatsRow) => row.inputTokens + row.outputTokens
  list.sort(plan.by === "day" ? (a, b) => (a.key < b.key ? -1 : 1) : (a, b) => tokens(b) - tokens(a) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  return { rows: list, total: { ...total, sessions: counted.size }, unreadable }
}

/**
 * `Sessions.stats` over a catalog: each session read once per version (a session that did not
 * change since the last call is not read again), as a listing reads it.
 */
export const makeStats = (journal: SessionJournalService, catalog: SessionCatalogService) => {
  const cache = new Map<string, { readonly version: string; readonly read: SessionUsage | Unreadable }>()
  return (options?: StatsOptions): Effect.Effect<StatsResult, ScanError> =>
    Effect.gen(function*() {
      const plan = yield* statsPlanOf(options)
      const wanted = options?.sessions === undefined ? undefined : new Set(options.sessions)
      const scanned = (yield* catalog.scan(options?.directory)).filter((entry) => wanted === undefined || wanted.has(entry.location))
      const stale = scanned.filter((entry) => cache.get(entry.location)?.version !== entry.version)
      // What this call could not read for a passing reason: shown now, kept nowhere.
      const passing = new Map<string, Unreadable>()
      for (let i = 0; i < stale.length; i += READ_CHUNK) {
        const chunk = stale.slice(i, i + READ_CHUNK)
        const reads = yield* catalog.readMany(chunk.map((entry) => entry.location))
        chunk.forEach((entry, k) => {
          const read = reads[k]!
          const decoded = Either.flatMap(read, (stored): Either.Either<{ readonly header: Header; readonly history: { readonly entries: ReadonlyArray<Entry> } }, SessionError> => decode(journal, stored))
          if (Either.isRight(decoded)) {
            cache.set(entry.location, { version: entry.version, read: usageOf(decoded.right.header, decoded.right.history.entries) })
          } else if (decoded.left.code === "SESSION_IO") {
            passing.set(entry.location, unreadableOf(entry.location, decoded.left))
          } else {
            cache.set(entry.location, { version: entry.version, read: unreadableOf(entry.location, decoded.left) })
          }
        })
      }
      const sessions: Array<{ readonly location: string; readonly usage: SessionUsage }> = []
      const unreadable: Array<Unreadable> = []
      for (const entry of scanned) {
        const read = passing.get(entry.location) ?? cache.get(entry.location)?.read
        if (read === undefined) continue
        if ("error" in read) unreadable.push(read)
        else sessions.push({ location: entry.location, usage: read })
      }
      return aggregate(sessions, unreadable, plan)
    })
}

const READ_CHUNK = 16

const unreadableOf = (location: string, error: SessionError): Unreadable => ({
  location,
  error: { code: error.code, message: error.line === undefined ? error.reason : `${error.reason} (line ${error.line})` }
})

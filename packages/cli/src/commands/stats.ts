/**
 * `session-tree stats [--dir DIR | --db URL] [--by day|model|session] [--since D]
 * [--until D] [--json]`: the tokens (and the cost, where the usage carries it) that
 * the sessions' assistant messages record, in all and per day, model or session
 * (`Sessions.stats`): the numbers the server's list shows. A session that does not
 * load is listed on stderr, and then the command exits 1: its usage is not counted.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Sessions from "@session-tree/core/Sessions"
import type { StatsBy, StatsResult, Totals } from "@session-tree/core/Stats"
import { json as jsonLine, printable } from "@session-tree/view/Text"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Backend from "../Backend.js"
import { unreadable } from "./search.js"
import { directoryOf, dirOption } from "./serve.js"

const n = (value: number): string => value.toLocaleString("en-US")
const cost = (t: Totals): string => (t.costed === 0 ? "" : `$${t.cost.toFixed(4)}`)

/** The rows as a table: the key, then each sum right-aligned; the total last. */
const table = (by: StatsBy | undefined, result: StatsResult): ReadonlyArray<string> => {
  const head = [by ?? "", "sessions", "messages", "input", "cached", "cache write", "output", "reasoning", "cost"]
  const cells = (key: string, sessions: number, t: Totals) => [
    key,
    n(sessions),
    n(t.messages),
    n(t.inputTokens),
    n(t.cachedInputTokens),
    n(t.cacheWriteTokens),
    n(t.outputTokens),
    n(t.reasoningTokens),
    cost(t)
  ]
  const rows = [head, ...result.rows.map((row) => cells(printable(row.key), row.sessions, row)), cells("total", result.total.sessions, result.total)]
  const widths = head.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)))
  return rows.map((row) => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join("  ").trimEnd())
}

/**
 * `session-tree stats`: usage across sessions, by day, model or session (`docs/cli.md`, "Usage").
 *
 * @since 0.2.0
 * @category commands
 */
export const stats = Command.make(
  "stats",
  {
    dir: dirOption,
    db: Backend.option,
    by: Options.choice("by", ["day", "model", "session"]).pipe(Options.optional, Options.withDescription("one row per day (UTC), model or session")),
    since: Options.text("since").pipe(Options.withPseudoName("DATE"), Options.optional, Options.withDescription("only usage recorded on or after this day (YYYY-MM-DD)")),
    until: Options.text("until").pipe(Options.withPseudoName("DATE"), Options.optional, Options.withDescription("only usage recorded on or before this day")),
    json: Options.boolean("json").pipe(Options.withDescription("print one JSON object on stdout"))
  },
  ({ by, db, dir, json, since, until }) =>
    Effect.gen(function*() {
      const directory = yield* directoryOf(db, dir)
      const grouping = Option.getOrUndefined(by) as StatsBy | undefined
      const result = yield* Backend.run(db, Effect.flatMap(Sessions.Sessions, (sessions) =>
        sessions.stats({ directory, by: grouping, since: Option.getOrUndefined(since), until: Option.getOrUndefined(until) })), directory)
      if (json) yield* Console.log(jsonLine(result))
      else for (const line of table(grouping, result)) yield* Console.log(line)
      yield* unreadable(result.unreadable, "read")
    })
).pipe(Command.withDescription("Sum the tokens (and cost, where the usage carries it) the sessions record, in all or per day, model or session."))

/**
 * `session-tree search QUERY [--dir DIR | --db URL] [--role R] [--model M] [--since D]
 * [--until D] [--session S] [--limit N] [--offset N] [--json]`: the entries of every
 * session that hold every word and "phrase" of QUERY (`Sessions.search`), newest
 * first. A session that could not be searched is listed on stderr, and then the
 * command exits 1: its answer may be missing hits.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type { SearchResult, SearchRole, Snippet } from "@session-tree/core/Search"
import { sessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import { json as jsonLine, printable, visible } from "@session-tree/view/Text"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as NodePath from "node:path"
import * as Backend from "../Backend.js"
import { directoryOf, dirOption } from "./serve.js"

const ROLES: ReadonlyArray<string> = ["user", "assistant", "tool", "system", "compaction", "title"]

const BOLD = "\x1b[1;33m"
const PLAIN = "\x1b[0m"

/** An excerpt on one line: line breaks as ⏎, every control escaped, the matched words bold (a terminal only). */
const excerpt = (snippet: Snippet): string => {
  let out = snippet.before ? "…" : ""
  let at = 0
  const plain = (text: string) => visible(text.replace(/\r?\n/g, " ⏎ "))
  for (const [start, end] of snippet.marks) {
    if (start < at) continue
    out += plain(snippet.text.slice(at, start)) + BOLD + plain(snippet.text.slice(start, end)) + PLAIN
    at = end
  }
  return `${out}${plain(snippet.text.slice(at))}${snippet.after ? "…" : ""}`
}

/** Sessions given as paths are looked for where the catalog lists them: absolute. */
const sessionsOf = (db: Backend.Backend, given: ReadonlyArray<string>) =>
  given.length === 0 ? undefined : db._tag === "Files" ? given.map((s) => (Backend.looksLikePath(s) ? NodePath.resolve(s) : s)) : given

/**
 * The sessions that could not be searched (or summed), on stderr; a failure when there are any.
 *
 * @since 0.2.0
 * @category commands
 */
export const unreadable = (list: ReadonlyArray<Sessions.Unreadable>, what: string) =>
  list.length === 0
    ? Effect.void
    : Effect.zipRight(
      Effect.forEach(list, (u) => Console.error(`  ${printable(u.location)}: ${u.error.code} ${visible(u.error.message)}`), { discard: true }),
      Effect.fail(sessionError(list[0]!.error.code, `${list.length} session(s) could not be ${what} (listed above); the answer may be incomplete`))
    )

const print = (result: SearchResult, offset: number) =>
  Effect.gen(function*() {
    if (result.total === 0) return yield* Console.log("no matching entry")
    for (const hit of result.hits) {
      yield* Console.log(
        `${printable(hit.location)}  ${printable(hit.entry)}  ${hit.role}  ${hit.timestamp}${hit.model === undefined ? "" : `  ${printable(hit.model)}`}`
      )
      for (const snippet of hit.snippets) yield* Console.log(`    ${excerpt(snippet)}`)
    }
    yield* Console.log(
      `${offset + 1}–${offset + result.hits.length} of ${result.total} matching entries (${result.searched} sessions looked at)`
    )
  })

/**
 * `session-tree search`: words and phrases across sessions (`docs/cli.md`, "Searching").
 *
 * @since 0.2.0
 * @category commands
 */
export const search = Command.make(
  "search",
  {
    query: Args.text({ name: "QUERY" }).pipe(Args.withDescription("words and \"quoted phrases\", all required, in any case")),
    dir: dirOption,
    db: Backend.option,
    role: Options.text("role").pipe(
      Options.withPseudoName("ROLE"),
      Options.optional,
      Options.withDescription("only entries of this role or kind: user, assistant, tool, system, compaction or title")
    ),
    model: Options.text("model").pipe(Options.withPseudoName("MODEL"), Options.optional, Options.withDescription("only entries of this model (an assistant message's meta.model)")),
    since: Options.text("since").pipe(Options.withPseudoName("DATE"), Options.optional, Options.withDescription("only entries at or after this date (YYYY-MM-DD) or timestamp")),
    until: Options.text("until").pipe(Options.withPseudoName("DATE"), Options.optional, Options.withDescription("only entries at or before this date or timestamp")),
    session: Options.text("session").pipe(
      Options.withPseudoName("SESSION"),
      Options.optional,
      Options.withDescription("only this session: its path (with --db, its ID) or its session ID")
    ),
    limit: Options.integer("limit").pipe(Options.withPseudoName("N"), Options.withDefault(20), Options.withDescription("hits to print (default: 20)")),
    offset: Options.integer("offset").pipe(Options.withPseudoName("N"), Options.withDefault(0), Options.withDescription("hits to skip first (default: 0)")),
    json: Options.boolean("json").pipe(Options.withDescription("print one JSON object on stdout"))
  },
  ({ db, dir, json, limit, model, offset, query, role, session, since, until }) =>
    Effect.gen(function*() {
      const directory = yield* directoryOf(db, dir)
      if (Option.isSome(role) && !ROLES.includes(role.value)) {
        return yield* new Backend.UsageError({ reason: `--role ${printable(role.value)} is not one of ${ROLES.join(", ")}` })
      }
      if (limit < 0 || offset < 0) return yield* new Backend.UsageError({ reason: "--limit and --offset are whole numbers" })
      const result = yield* Backend.run(db, Effect.flatMap(Sessions.Sessions, (sessions) =>
        sessions.search({
          query,
          directory,
          roles: Option.isSome(role) ? [role.value as SearchRole] : undefined,
          models: Option.isSome(model) ? [model.value] : undefined,
          since: Option.getOrUndefined(since),
          until: Option.getOrUndefined(until),
          sessions: sessionsOf(db, Option.toArray(session)),
          limit,
          offset
        })), directory)
      if (json) yield* Console.log(jsonLine(result))
      else yield* print(result, offset)
      yield* unreadable(result.unreadable, "searched")
    })
).pipe(Command.withDescription("Search every session's messages, tool arguments and results for words and \"phrases\"; newest entries first."))

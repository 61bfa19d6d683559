/**
 * The `session-tree` command (SPEC B6, C5): thin shells over the library — the
 * Effect API of `@session-tree/core`, its backends `@session-tree/file` (session
 * files) and, with `--db URL`, `@session-tree/pg` (PostgreSQL), and the views of
 * `@session-tree/view`. Every decision about what is valid belongs to the
 * library; this file only parses arguments, picks defaults, and prints.
 *
 * Exit codes: 0 success, 1 any failure (error code first on stderr), 2 wrong usage.
 */
import * as Args from "@effect/cli/Args"
import type * as CliApp from "@effect/cli/CliApp"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Ids from "@session-tree/core/Ids"
import { isSessionError, type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as PiSession from "@session-tree/core/PiSession"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Files from "@session-tree/file/Files"
import * as Recovery from "@session-tree/file/Recovery"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Backend from "./Backend.js"
import { formatError, json as jsonLine, listLine, logJson, printable, renderLog, renderTree, treeJson } from "@session-tree/view/Text"

/** Wrong usage the option parser cannot express (exclusive flags); exits 2 like the parser's own errors. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly reason: string }> {}

export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2

// Every value from a session or a directory is printed through the Text view's escaping
// (`printable`, `jsonLine`, `listLine`, `formatError`): none may reach a terminal raw.

const path = Args.text({ name: "PATH" }).pipe(Args.withDescription("the session file (with --db: the session ID)"))
const json = Options.boolean("json").pipe(Options.withDescription("print one JSON object on stdout"))
// Parsed straight into the backend it names, so each command chooses it once.
const db = Options.text("db").pipe(
  Options.withPseudoName("URL"),
  Options.optional,
  Options.withDescription("a PostgreSQL database (default: $SESSION_TREE_DB); session paths are then session IDs"),
  Options.map(Backend.choose)
)

// --- create -------------------------------------------------------------------------------

const create = Command.make(
  "create",
  {
    path,
    id: Options.text("id").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the session ID (default: a random UUID; with --db: PATH)")),
    db
  },
  ({ db, id, path }) =>
    Backend.run(db, Effect.scoped(Effect.gen(function*() {
      const store = yield* SessionStore.create(path, Option.isSome(id) ? { id: id.value } : undefined)
      yield* Console.log(printable(store.header.id))
    })))
).pipe(Command.withDescription("Create a new session; prints the session ID."))

// --- append -------------------------------------------------------------------------------

const message = Options.text("user").pipe(
  Options.withPseudoName("TEXT"),
  Options.withDescription("append a user message with this content"),
  Options.orElseEither(Options.text("message").pipe(Options.withPseudoName("JSON"), Options.withDescription("append this Message IR value (JSON)")))
)

const parseMessage = (text: string): Effect.Effect<unknown, SessionError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (cause) =>
      sessionError("SESSION_INVALID_MESSAGE", `--message is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`)
  })

const append = Command.make(
  "append",
  {
    path,
    message,
    parent: Options.text("parent").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the parent entry (default: the newest entry)")),
    root: Options.boolean("root").pipe(Options.withDescription("start a new root (parent null)")),
    db
  },
  ({ db, message, parent, path, root }) =>
    Effect.gen(function*() {
      // Usage and the message's JSON are checked before the backend is reached, so they never wait on it.
      if (root && Option.isSome(parent)) {
        return yield* new UsageError({ reason: "--parent and --root exclude each other" })
      }
      const parsed = Either.isRight(message) ? yield* parseMessage(message.right) : undefined
      yield* Backend.run(db, Effect.scoped(Effect.gen(function*() {
        const body = Either.isLeft(message) ? { role: "user", id: yield* (yield* Ids.Ids).entryId, content: message.left } : parsed
        const store = yield* SessionStore.load(path)
        // The tree's leaf after a load is the newest entry: the default parent of B6.
        const leaf = (yield* SessionTree.make(store)).activeLeafId
        const entry = yield* store.append(root ? null : Option.getOrElse(parent, () => leaf), body)
        yield* Console.log(printable(entry.id))
      })))
    })
).pipe(Command.withDescription("Append one entry; prints its ID. Default parent: the newest entry."))

// --- verify -------------------------------------------------------------------------------

const verify = Command.make(
  "verify",
  { path, json, db },
  ({ db, json, path }) =>
    Backend.run(db, SessionStore.read(path).pipe(
      Effect.matchEffect({
        onSuccess: (loaded) => {
          const leaf = loaded.entries.at(-1)?.id ?? null
          return Console.log(
            json
              ? jsonLine({ ok: true, entries: loaded.entries.length, leaf, tail: loaded.tail })
              : `ok ${loaded.entries.length} entries, leaf ${leaf === null ? "(none)" : printable(leaf)}, tail ${loaded.tail}`
          )
        },
        onFailure: (error) =>
          Effect.zipRight(
            json
              ? Console.log(jsonLine({
                ok: false,
                code: error.code,
                message: error.reason,
                ...(error.line === undefined ? {} : { line: error.line })
              }))
              : Effect.void,
            Effect.fail(error)
          )
      })
    ))
).pipe(Command.withDescription("Load a session read-only: exit 0 when it loads, 1 when it is rejected."))

// --- recover ------------------------------------------------------------------------------

const markerText: Record<Recovery.RecoveryReport["marker"], string> = {
  none: "no recovery marker",
  removed: "recovery marker removed: the file holds the newest complete generation",
  restored: "recovery marker restored onto the path: the previous complete generation is back"
}

const recover = Command.make(
  "recover",
  { path, json, db },
  ({ db, json, path }) =>
    Effect.gen(function*() {
      if (db._tag === "Database") {
        // Every commit is one transaction: a crash leaves nothing beside the rows to resolve.
        yield* Backend.run(db, SessionStore.read(path))
        if (json) return yield* Console.log(jsonLine({ ok: true, marker: "none", removed: [] }))
        return yield* Console.log("nothing to recover: every commit to the database is one transaction, so a crash leaves nothing behind")
      }
      const report = yield* Backend.run(db, Recovery.recover(path))
      if (json) {
        return yield* Console.log(jsonLine({ ok: true, marker: report.marker, removed: report.removed }))
      }
      yield* Console.log(markerText[report.marker])
      yield* Console.log(
        report.removed.length === 0
          ? "no leftover files"
          : `removed ${report.removed.length} leftover file(s):\n${report.removed.map((n) => `  ${printable(n)}`).join("\n")}`
      )
    })
).pipe(Command.withDescription("Resolve what a crashed commit left beside the file (marker, temp files)."))

// --- log / tree ---------------------------------------------------------------------------

const log = Command.make(
  "log",
  {
    path,
    leaf: Options.text("leaf").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the last entry of the path (default: the newest)")),
    json,
    db
  },
  ({ db, json, leaf, path }) =>
    Effect.gen(function*() {
      const loaded = yield* Backend.run(db, SessionStore.read(path))
      const options = { leaf: Option.getOrUndefined(leaf) }
      if (json) return yield* Console.log(jsonLine(yield* logJson(loaded.entries, options)))
      for (const line of yield* renderLog(loaded.entries, options)) yield* Console.log(line)
    })
).pipe(Command.withDescription("Print the path from the root to a leaf (default: the newest entry)."))

const tree = Command.make(
  "tree",
  { path, json, db },
  ({ db, json, path }) =>
    Effect.gen(function*() {
      const loaded = yield* Backend.run(db, SessionStore.read(path))
      if (json) return yield* Console.log(jsonLine(yield* treeJson(loaded.header, loaded.entries)))
      for (const line of yield* renderTree(loaded.header, loaded.entries)) yield* Console.log(line)
    })
).pipe(Command.withDescription("Draw the whole tree; ● marks the path to the newest entry."))

// --- list / fork / export / import ---------------------------------------------------------

const list = Command.make(
  "list",
  {
    dir: Args.text({ name: "DIR" }).pipe(Args.withDescription("the directory whose *.jsonl files are listed (default: .)"), Args.optional),
    json: Options.boolean("json").pipe(Options.withDescription("print one JSON array on stdout")),
    db
  },
  ({ db, dir, json }) =>
    Effect.gen(function*() {
      if (Option.isSome(dir) && db._tag === "Database") {
        return yield* new UsageError({ reason: "list takes a DIR on files only; with --db it lists the database" })
      }
      const listing = yield* Backend.run(db, Effect.flatMap(Sessions.Sessions, (sessions) => sessions.list({ scope: Option.getOrUndefined(dir) })))
      if (json) return yield* Console.log(jsonLine(listing.sessions))
      if (listing.sessions.length === 0) return yield* Console.log("no sessions")
      for (const listed of listing.sessions) yield* Console.log(listLine(listed))
    })
).pipe(Command.withDescription("List the sessions in DIR (or the database), newest change first; unreadable ones with their error code."))

const fork = Command.make(
  "fork",
  {
    source: Args.text({ name: "SRC" }).pipe(Args.withDescription("the session to fork")),
    leaf: Options.text("leaf").pipe(Options.withPseudoName("ENTRY"), Options.withDescription("the last entry of the path to copy")),
    to: Options.text("to").pipe(Options.withPseudoName("DST"), Options.withDescription("the new session")),
    id: Options.text("id").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the new session's ID (default: a random UUID; with --db: DST)")),
    db
  },
  ({ db, id, leaf, source, to }) =>
    Backend.run(db, Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const forked = yield* sessions.fork(source, leaf, to, Option.isSome(id) ? { id: id.value } : undefined)
      yield* Console.log(printable(forked.id))
    }))
).pipe(Command.withDescription("Copy the root→ENTRY path of SRC into a new session DST; prints its ID. SRC is not changed."))

const exportCommand = Command.make(
  "export",
  {
    source: Args.text({ name: "SRC" }).pipe(Args.withDescription("the session to export")),
    format: Options.choice("format", ["jsonl", "markdown", "html"]).pipe(
      Options.withDefault("jsonl" as const),
      Options.withDescription("jsonl: the canonical generation; markdown: the root→leaf transcript; html: a page of the whole tree")
    ),
    leaf: Options.text("leaf").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("markdown, html: the leaf of the path shown (default: the newest entry)")),
    out: Options.text("out").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("write to FILE (atomically) instead of stdout")),
    db
  },
  ({ db, format, leaf, out, source }) =>
    Effect.gen(function*() {
      if (format === "jsonl" && Option.isSome(leaf)) return yield* new UsageError({ reason: "--leaf applies to markdown and html; jsonl is the whole session" })
      // One run: --out is written with the backend's Fs, so a database export builds one pool.
      yield* Backend.run(db, Effect.gen(function*() {
        const sessions = yield* Sessions.Sessions
        let text: string
        if (format === "jsonl") {
          text = yield* sessions.exportJsonl(source)
        } else {
          const loaded = yield* sessions.read(source)
          const View = yield* Effect.promise(() => import("@session-tree/view"))
          const options = { leaf: Option.getOrUndefined(leaf) }
          text = format === "markdown"
            ? yield* View.Markdown.render(loaded.header, loaded.entries, options)
            : yield* View.Html.render(loaded.header, loaded.entries, options)
        }
        if (Option.isSome(out)) return yield* Files.writeFile(out.value, text)
        yield* Effect.sync(() => process.stdout.write(text))
      }))
    })
).pipe(Command.withDescription("Print a session as its canonical JSONL, a Markdown transcript, or a self-contained HTML page."))

/** The most a Pi session file may hold: images make them large, and a lossy import drops those. */
const MAX_PI_FILE_BYTES = 256 * 1024 * 1024

const dropped = (converted: PiSession.Converted): string => {
  const parts = Object.entries(converted.dropped).filter(([, n]) => n > 0).map(([kind, n]) => `${n} ${kind}`)
  return parts.length === 0 ? "nothing was dropped" : `dropped ${parts.join(", ")}`
}

const importCommand = Command.make(
  "import",
  {
    file: Args.text({ name: "FILE" }).pipe(Args.withDescription("the session file to import")),
    to: Options.text("to").pipe(Options.withPseudoName("PATH"), Options.optional, Options.withDescription("where the new session goes (required on files; with --db: the header's ID)")),
    from: Options.choice("from", ["session-tree", "pi"]).pipe(Options.withDefault("session-tree" as const), Options.withDescription("the format of FILE")),
    lossy: Options.boolean("lossy").pipe(Options.withDescription("pi: drop what Message IR cannot hold (images, thinking, summaries) instead of refusing")),
    db
  },
  ({ db, file, from, lossy, to }) =>
    Effect.gen(function*() {
      const onDatabase = db._tag === "Database"
      if (Option.isNone(to) && !onDatabase) return yield* new UsageError({ reason: "import needs --to PATH on files" })
      if (lossy && from !== "pi") return yield* new UsageError({ reason: "--lossy applies to --from pi only" })
      const imported = yield* Backend.run(db, Effect.gen(function*() {
        let records: Sessions.Records
        if (from === "pi") {
          const converted = yield* Effect.flatMap(Files.readBytes(file, MAX_PI_FILE_BYTES), (bytes) => PiSession.fromPi(bytes, { lossy }))
          if (lossy) yield* Console.error(dropped(converted))
          records = converted
        } else {
          records = yield* FileJournal.readSession(file)
        }
        return yield* (yield* Sessions.Sessions).import(records, Option.getOrUndefined(to))
      }))
      yield* Console.log(printable(imported.id))
    })
).pipe(Command.withDescription("Store the session in FILE (this project's format, or Pi's) as a new session that keeps its header; prints its ID."))

// --- migrate ------------------------------------------------------------------------------

const migrate = Command.make(
  "migrate",
  { db, json },
  ({ db, json }) =>
    Effect.gen(function*() {
      if (db._tag === "Files") return yield* new UsageError({ reason: "migrate needs --db URL (or $SESSION_TREE_DB)" })
      const Migrations = yield* Effect.promise(() => import("@session-tree/pg/Migrations"))
      const migrated = yield* Migrations.migrateUrl(db.url)
      if (json) return yield* Console.log(jsonLine({ ok: true, ...migrated }))
      yield* Console.log(
        migrated.applied.length === 0
          ? `the schema is up to date (version ${migrated.version})`
          : `migrated to version ${migrated.version}: applied ${migrated.applied.join(", ")}`
      )
    })
).pipe(Command.withDescription("Create or upgrade the database schema (idempotent, safe when several nodes start at once)."))

// --- the application ----------------------------------------------------------------------

const root = Command.make("session-tree", {}, () =>
  new UsageError({ reason: "a command is required: create, append, verify, recover, log, tree, list, fork, export, import or migrate" })).pipe(
    Command.withDescription("A durable, append-only, branching JSONL store for agent conversations."),
    Command.withSubcommands([create, append, verify, recover, log, tree, list, fork, exportCommand, importCommand, migrate])
  )

const cli = Command.run(root, { name: "session-tree", version: "0.1.0" })

// Option names are matched exactly: `--User` is a usage error, not a guess.
const ConfigLive = CliConfig.layer({ isCaseSensitive: true })

/**
 * Runs one command line (`argv` as `process.argv`: runtime, script, arguments…) and
 * resolves with the exit code. Never fails: every error is printed here, without stack traces.
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> =>
  cli(argv).pipe(
    Effect.provide(ConfigLive),
    Effect.as(EXIT_OK),
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        const error: unknown = failure.value
        // The parser has already printed what was wrong and the usage.
        if (ValidationError.isValidationError(error)) return Effect.succeed(EXIT_USAGE)
        if (error instanceof UsageError) {
          return Effect.as(Console.error(`usage: ${error.reason} (see session-tree --help)`), EXIT_USAGE)
        }
        if (isSessionError(error)) return Effect.as(Console.error(formatError(error)), EXIT_FAILURE)
      }
      const squashed = Cause.squash(cause)
      return Effect.as(
        Console.error(`INTERNAL ${squashed instanceof Error ? squashed.message : String(squashed)}`),
        EXIT_FAILURE
      )
    })
  )

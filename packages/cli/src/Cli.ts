/**
 * The `session-tree` command: thin shells over the library — the
 * Effect API of `@session-tree/core`, its backends `@session-tree/file` (session
 * files) and, with `--db URL`, `@session-tree/pg` (PostgreSQL), and the views of
 * `@session-tree/view`. Every decision about what is valid belongs to the
 * library; this file only parses arguments, picks defaults, and prints.
 *
 * Exit codes: 0 success; 1 rejected (the error code first on stderr); 2 wrong usage;
 * 3 busy: another process kept changing the session while a command wrote to it,
 * nothing was written, and running the command again is expected to work.
 */
import * as Args from "@effect/cli/Args"
import type * as CliApp from "@effect/cli/CliApp"
import * as CliConfig from "@effect/cli/CliConfig"
import * as Command from "@effect/cli/Command"
import * as Descriptor from "@effect/cli/CommandDescriptor"
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Ids from "@session-tree/core/Ids"
import { Message } from "@session-tree/core/Record"
import * as RecordV2 from "@session-tree/core/RecordV2"
import { isSessionError, type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as Files from "@session-tree/file/Files"
import * as Recovery from "@session-tree/file/Recovery"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as NodePath from "node:path"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Backend from "./Backend.js"
import { importCommand } from "./commands/import.js"
import { syncCommand } from "./commands/sync.js"
import { db, formatVersion, json } from "./options.js"
import * as Input from "./input.js"
import * as Usage from "./usage.js"
import { fieldPath, plainIssue, schemaWords } from "./words.js"
import * as SelfContained from "./selfContained.js"
import { search } from "./commands/search.js"
import { serve } from "./commands/serve.js"
import { stats } from "./commands/stats.js"
import { formatError, json as jsonLine, listLine, logJson, printable, renderLog, renderTree, treeJson, visible } from "@session-tree/view/Text"

/**
 * Wrong usage the option parser cannot express (exclusive flags); exits 2 like the parser's own errors.
 *
 * @since 0.1.0
 * @category errors
 */
export const UsageError = Backend.UsageError
/**
 * Wrong usage the option parser cannot express; exits 2.
 *
 * @since 0.1.0
 * @category errors
 */
export type UsageError = Backend.UsageError

/**
 * Exit code of a command that did what it was asked.
 *
 * @since 0.1.0
 * @category constants
 */
export const EXIT_OK = 0
/**
 * Exit code of a command that failed (a typed error, printed on stderr).
 *
 * @since 0.1.0
 * @category constants
 */
export const EXIT_FAILURE = 1
/**
 * Exit code of wrong usage (an unknown option, a missing value, exclusive flags).
 *
 * @since 0.1.0
 * @category constants
 */
export const EXIT_USAGE = 2
/**
 * Exit code of a session another writer holds (`SESSION_BUSY`): try again later.
 *
 * @since 0.1.0
 * @category constants
 */
export const EXIT_BUSY = 3

/**
 * A race with another process lost on every attempt: exits EXIT_BUSY with `error` (already worded for a user).
 *
 * @since 0.1.0
 * @category errors
 */
export class Busy extends Data.TaggedError("Busy")<{ readonly error: SessionError }> {}

/** How often a command that loads afresh tries again, and how long it waits between tries (randomized, so racers spread out). */
const RETRIES = 9
const RETRY = Schedule.exponential("20 millis", 1.6).pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(RETRIES)))

/** A recovery marker left by an interrupted save: no retry resolves it, only `recover` (whose command the library's message names). */
const needsRecover = (error: SessionError): boolean => error.code === "SESSION_BUSY" && error.reason.includes("session-tree recover ")

/** A race another process won: this command's fresh load is stale, and loading again can win. */
const isRace = (error: SessionError): boolean =>
  error.code === "SESSION_REPLACED" || (error.code === "SESSION_BUSY" && !needsRecover(error))

/** Runs `read` again while it loses a race: a session replaced while it was read is read again. */
const retryRace = <A, R>(read: Effect.Effect<A, SessionError, R>): Effect.Effect<A, SessionError, R> =>
  Effect.retry(read, { schedule: RETRY, while: isRace })

/**
 * Runs `attempt` (a fresh load and a write) again while it loses a race, a bounded number
 * of times; a race still lost is `Busy`, and a recovery marker is explained with its remedy.
 * A marker that looks abandoned is tried again too: another process's save can be seen
 * between putting its file in place and removing its marker, when no file names it any more.
 */
const retryRaces = <A, R>(attempt: Effect.Effect<A, SessionError, R>, backend: Backend.Backend, path: string): Effect.Effect<A, Busy | SessionError, R> =>
  attempt.pipe(
    Effect.retry({ schedule: RETRY, while: (error) => isRace(error) || needsRecover(error) }),
    Effect.catchIf(needsRecover, (error) =>
      Effect.fail(Backend.locate(
        sessionError(
          "SESSION_BUSY",
          `appends are blocked by a recovery marker an interrupted save left beside the session: run \`session-tree recover ${path}\`, then append again`
        ),
        backend,
        error.path ?? path
      ))),
    Effect.catchIf(isRace, (error) =>
      Effect.fail(new Busy({
        error: Backend.locate(
          sessionError(error.code, `another process was changing this session at the same time; after ${RETRIES + 1} attempts nothing was written: run the command again`),
          backend,
          path
        )
      })))
  )

/** Whether anything is at `path` (a broken symlink counts: it is there to look at). */
const exists = (path: string): boolean => {
  try {
    return NFS.lstatSync(path, { throwIfNoEntry: false }) !== undefined
  } catch {
    return true
  }
}

/** The file a save links beside a session while it replaces it (`NAME.marker`, as the format document names it). */
const hasMarker = (path: string): boolean => {
  try {
    return NFS.lstatSync(`${NodePath.resolve(path)}.marker`, { throwIfNoEntry: false }) !== undefined
  } catch {
    // The session itself was just read from this directory: a marker that cannot be looked at is not reported.
    return false
  }
}

/** The library's words for its own parts, in a user's: what a person sees is files, sessions and processes. */
const USER_WORDS: ReadonlyArray<readonly [RegExp, string]> = [
  [/ \(Recovery\.recover\)/g, ""],
  [/\bthis store\b/g, "this command"],
  [/\bthe store's\b/g, "this command's"],
  [/\bthe store\b/g, "the session"],
  [/\bgenerations\b/g, "versions"],
  [/\bgeneration\b/g, "version"],
  [/\bwriter's commit\b/g, "process's save"],
  [/\bwriters\b/g, "processes"],
  [/\bwriter\b/g, "process"]
]

/**
 * A library error as a user reads it: the same code and cause in a user's words, and the
 * remedy where the cause has a known one.
 *
 * @since 0.1.0
 * @category running
 */
export const forUser = (error: SessionError): SessionError => {
  let reason = schemaWords(USER_WORDS.reduce((text, [from, to]) => text.replace(from, to), error.reason))
  const remedy = (text: string) => {
    if (!reason.includes(text)) reason += `; ${text}`
  }
  if (error.code === "SESSION_UNSUPPORTED_VERSION" && /^header version 3\b/.test(error.reason)) {
    remedy("this looks like a Pi session file: `session-tree import FILE --to PATH` converts it")
  }
  if (error.code === "SESSION_INVALID_JSON" && error.line === 1 && error.reason.includes("\uFEFF")) {
    remedy("the file starts with a byte order mark, which a session file never holds: remove it")
  }
  // The library's own words stay the error's detail (`--verbose`).
  return reason === error.reason ? error : sessionError(error.code, reason, { line: error.line, path: error.path, cause: error })
}

// Every value from a session or a directory is printed through the Text view's escaping
// (`printable`, `jsonLine`, `listLine`, `formatError`): none may reach a terminal raw.

const path = Args.text({ name: "PATH" }).pipe(Args.withDescription("the session file (with --db: the session ID)"))

// --- create -------------------------------------------------------------------------------

const create = Command.make(
  "create",
  {
    path,
    id: Options.text("id").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the session ID (default: a random UUID; with --db: PATH)")),
    version: formatVersion("the format: 2, the agent format (default), or 1, the course format"),
    db
  },
  ({ db, id, path, version }) =>
    Effect.zipRight(
      Backend.checkPaths(db, [path]),
      Backend.run(db, Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { id: Option.getOrUndefined(id), version: Option.getOrUndefined(version) })
        yield* Console.log(printable(store.header.id))
      })), path)
    )
).pipe(Command.withDescription("Create a new session; prints the session ID."))

// --- append -------------------------------------------------------------------------------

/** An optional option that takes a value, shown in the help as `--NAME PSEUDO`. */
const optionalText = (name: string, pseudo: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(pseudo), Options.optional, Options.withDescription(description))

// All optional, so that the command itself can say that exactly one of them is required.
const user = optionalText("user", "TEXT", "append a user message with this content; - reads it from stdin")
const userFile = optionalText("user-file", "PATH", "append a user message whose content is this file's text, byte for byte")
const messageJson = optionalText("message", "JSON", "append this Message IR value (JSON); - reads it from stdin")
const messageFile = optionalText("message-file", "PATH", "append the Message IR value (JSON) this file holds")

/** Where `append` takes its message from: exactly one of its four options. */
const messageSource = (given: {
  readonly user: Option.Option<string>
  readonly userFile: Option.Option<string>
  readonly message: Option.Option<string>
  readonly messageFile: Option.Option<string>
}): Effect.Effect<{ readonly json: boolean; readonly option: string; readonly text: Effect.Effect<string, SessionError> }, UsageError> => {
  const chosen = [
    Option.map(given.user, (text) => ({ json: false, option: "--user", text: text === "-" ? Input.readText("--user", { stdin: true }, Input.LINE_BYTES) : Effect.succeed(text) })),
    Option.map(given.userFile, (file) => ({ json: false, option: "--user-file", text: Input.readText("--user", file === "-" ? { stdin: true } : { file }, Input.LINE_BYTES) })),
    Option.map(given.message, (text) => ({ json: true, option: "--message", text: text === "-" ? Input.readText("--message", { stdin: true }, Input.JSON_BYTES) : Effect.succeed(text) })),
    Option.map(given.messageFile, (file) => ({ json: true, option: "--message-file", text: Input.readText("--message", file === "-" ? { stdin: true } : { file }, Input.JSON_BYTES) }))
  ].filter(Option.isSome)
  return chosen.length === 1
    ? Effect.succeed(chosen[0]!.value)
    : Effect.fail(
      new UsageError({
        reason: "append needs exactly one of --user and --message: --user TEXT (or --user-file PATH) for a user message, " +
          "--message JSON (or --message-file PATH) for any message; - reads either from stdin"
      })
    )
}

const decodeOptions = { onExcessProperty: "error", errors: "first", exact: true } as const
const decodeMessageV1 = Schema.decodeUnknownEither(Message, decodeOptions)
const decodeMessageV2 = Schema.decodeUnknownEither(RecordV2.Message, decodeOptions)

/**
 * The library refused a message given as JSON: when the value does not have the shape of a
 * message, the first wrong field and what was expected there, instead of the whole union of
 * shapes (which stays the error's detail, shown with --verbose).
 */
const explainMessage = (error: SessionError, value: unknown, version: 1 | 2, option: string): SessionError => {
  if (error.code !== "SESSION_INVALID_MESSAGE") return error
  // What the store decodes with: a version-2 session takes a version-1-shaped message in its version-2 form.
  const fault = version === 1 || RecordV2.isVersion1Shaped(value) ? Either.getLeft(decodeMessageV1(value)) : Either.getLeft(decodeMessageV2(value))
  if (Option.isNone(fault)) return error
  const issue = ParseResult.ArrayFormatter.formatErrorSync(fault.value)[0]
  if (issue === undefined) return error
  const at = issue.path.length === 0 ? "the message" : fieldPath(issue.path)
  const what = issue._tag === "Unexpected" ? ": a field Message IR does not have" : issue._tag === "Missing" ? " is missing" : `: ${plainIssue(issue.message)}`
  return sessionError("SESSION_INVALID_MESSAGE", `${option}: ${at}${what}`, { path: error.path, cause: error })
}

const parseMessage = (text: string, option: string): Effect.Effect<unknown, SessionError> =>
  Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (cause) =>
      sessionError("SESSION_INVALID_MESSAGE", `${option} is not JSON: ${cause instanceof Error ? cause.message : String(cause)}`)
  })

const append = Command.make(
  "append",
  {
    path,
    user,
    userFile,
    message: messageJson,
    messageFile,
    parent: Options.text("parent").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the parent entry (default: the newest entry)")),
    root: Options.boolean("root").pipe(Options.withDescription("start a new root (parent null)")),
    db
  },
  ({ db, message: messageText, messageFile, parent, path, root, user, userFile }) =>
    Effect.gen(function*() {
      // Usage and the message's JSON are checked before the backend is reached, so they never wait on it.
      const source = yield* messageSource({ user, userFile, message: messageText, messageFile })
      if (root && Option.isSome(parent)) {
        return yield* new UsageError({ reason: "--parent and --root exclude each other" })
      }
      yield* Backend.checkPaths(db, [path])
      const text = yield* source.text
      const message: Either.Either<string, string> = source.json ? Either.right(text) : Either.left(text)
      const parsed = Either.isRight(message) ? yield* parseMessage(message.right, source.option) : undefined
      const entry = yield* retryRaces(
        Backend.run(db, Effect.scoped(Effect.gen(function*() {
          const body = Either.isLeft(message) ? { role: "user", id: yield* (yield* Ids.Ids).entryId, content: message.left } : parsed
          const store = yield* SessionStore.load(path)
          // The tree's leaf after a load is the newest entry: the documented default parent.
          const leaf = (yield* SessionTree.make(store)).activeLeafId
          return yield* store.append(root ? null : Option.getOrElse(parent, () => leaf), body).pipe(
            // The store's error names the first wrong field in Schema's words, or the whole union of shapes.
            Effect.mapError((error) => (source.json ? explainMessage(error, parsed, store.header.version, source.option) : error))
          )
        })), path),
        db,
        path
      )
      yield* Console.log(printable(entry.id))
    })
).pipe(Command.withDescription("Append one entry; prints its ID. Default parent: the newest entry."))

// --- verify -------------------------------------------------------------------------------

const verify = Command.make(
  "verify",
  { path, json, db },
  ({ db, json, path }) =>
    Effect.zipRight(Backend.checkPaths(db, [path]), Backend.run(db, retryRace(SessionStore.read(path)).pipe(
      Effect.mapError((error) => forUser(Backend.locate(error, db, path))),
      Effect.matchEffect({
        onSuccess: (loaded) => {
          const leaf = loaded.entries.at(-1)?.id ?? null
          // It loads, so `ok` stays true; a marker beside it still blocks every append, and says so.
          const blocked = db._tag === "Files" && hasMarker(path)
            ? `SESSION_BUSY appends are blocked: a recovery marker left by an interrupted save is beside the file; ` +
              `run \`session-tree recover ${path}\` to resolve it (unless another process is saving to it right now)`
            : undefined
          return Console.log(
            json
              ? jsonLine({ ok: true, entries: loaded.entries.length, leaf, tail: loaded.tail, ...(blocked === undefined ? {} : { blocked }) })
              : `ok ${loaded.entries.length} entries, leaf ${leaf === null ? "(none)" : printable(leaf)}, tail ${loaded.tail}` +
                (blocked === undefined ? "" : `\n${visible(blocked)}`)
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
    ), path))
).pipe(Command.withDescription("Load a session read-only: exit 0 when it loads, 1 when it is rejected."))

// --- recover ------------------------------------------------------------------------------

const markerText: Record<Recovery.RecoveryReport["marker"], string> = {
  none: "no recovery marker",
  removed: "recovery marker removed: the file holds the newest complete version",
  restored: "recovery marker restored onto the path: the previous complete version is back"
}

const batchText: Record<Exclude<Recovery.RecoveryReport["batch"], "none">, string> = {
  kept: "interrupted append finished: its entries were all written and are kept",
  removed: "interrupted append undone: the file is cut back to its last complete append"
}

const recover = Command.make(
  "recover",
  { path, json, db },
  ({ db, json, path }) =>
    Effect.gen(function*() {
      yield* Backend.checkPaths(db, [path])
      if (db._tag === "Database") {
        // Every commit is one transaction: a crash leaves nothing beside the rows to resolve.
        yield* Backend.run(db, SessionStore.read(path), path)
        if (json) return yield* Console.log(jsonLine({ ok: true, marker: "none", batch: "none", removed: [] }))
        return yield* Console.log("nothing to recover: every commit to the database is one transaction, so a crash leaves nothing behind")
      }
      const report = yield* Backend.run(db, Recovery.recover(path), path)
      // Nothing resolved and no session there: a path given wrongly, not a session without leftovers.
      if (report.marker === "none" && report.batch === "none" && report.removed.length === 0 && !exists(path)) {
        return yield* sessionError("SESSION_NOT_FOUND", `no session at this path, and nothing an interrupted save left beside it: ${path}`, { path })
      }
      if (json) {
        return yield* Console.log(jsonLine({ ok: true, marker: report.marker, batch: report.batch, removed: report.removed }))
      }
      yield* Console.log(report.batch === "none" ? markerText[report.marker] : batchText[report.batch])
      yield* Console.log(
        report.removed.length === 0
          ? "no leftover files"
          : `removed ${report.removed.length} leftover file(s):\n${report.removed.map((n) => `  ${printable(n)}`).join("\n")}`
      )
    })
).pipe(Command.withDescription("Resolve what an interrupted save left beside the file (recovery marker, temp files)."))

// --- delete -------------------------------------------------------------------------------

const deleteCommand = Command.make(
  "delete",
  { path, json, db },
  ({ db, json, path }) =>
    Effect.zipRight(
      Backend.checkPaths(db, [path]),
      Backend.run(db, Effect.gen(function*() {
        const sessions = yield* Sessions.Sessions
        // What is printed of the session is read just before; a session that does not load is deleted all the same.
        const before = yield* Effect.either(sessions.read(path))
        const deleted = yield* sessions.delete(path).pipe(
          Effect.retry({ schedule: RETRY, while: isRace }),
          Effect.catchIf(isRace, (error) =>
            Effect.fail(new Busy({
              error: Backend.locate(
                sessionError(error.code, `another process was saving to this session at the same time; after ${RETRIES + 1} attempts nothing was deleted: run the command again`),
                db,
                path
              )
            })))
        )
        if (json) {
          return yield* Console.log(jsonLine(
            Either.isRight(before)
              ? { ok: true, location: deleted, id: before.right.header.id, entries: before.right.entries.length }
              : { ok: true, location: deleted }
          ))
        }
        yield* Console.log(
          Either.isRight(before)
            ? `deleted ${printable(deleted)}: session ${printable(before.right.header.id)}, ${before.right.entries.length} entries`
            : `deleted ${printable(deleted)} (it did not load: ${before.left.code})`
        )
      }), path)
    )
).pipe(Command.withDescription("Delete a whole session (and its blobs) for good; prints what was deleted. SESSION_NOT_FOUND when there is none."))

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
      yield* Backend.checkPaths(db, [path])
      const loaded = yield* Backend.run(db, retryRace(SessionStore.read(path)), path)
      const options = { leaf: Option.getOrUndefined(leaf) }
      // An unknown --leaf names the session it is not an entry of.
      const about = (error: SessionError) => Backend.locate(error, db, path)
      if (json) return yield* Console.log(jsonLine(yield* Effect.mapError(logJson(loaded.entries, options), about)))
      for (const line of yield* Effect.mapError(renderLog(loaded.entries, options), about)) yield* Console.log(line)
    })
).pipe(Command.withDescription("Print the path from the root to a leaf (default: the newest entry)."))

const tree = Command.make(
  "tree",
  { path, json, db },
  ({ db, json, path }) =>
    Effect.gen(function*() {
      yield* Backend.checkPaths(db, [path])
      const loaded = yield* Backend.run(db, retryRace(SessionStore.read(path)), path)
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
    limit: Options.integer("limit").pipe(Options.withPseudoName("N"), Options.optional, Options.withDescription("list at most N sessions (only those are read): a page of a large directory")),
    offset: Options.integer("offset").pipe(Options.withPseudoName("N"), Options.withDefault(0), Options.withDescription("skip the N newest first (default: 0)")),
    db
  },
  ({ db, dir, json, limit, offset }) =>
    Effect.gen(function*() {
      if (Option.isSome(dir) && db._tag === "Database") {
        return yield* new UsageError({
          reason: db.fromEnvironment
            ? `list takes a DIR on files only, but SESSION_TREE_DB chose ${Backend.describe(db)}: add --files to list DIR, or leave DIR out to list the database`
            : "list takes a DIR on files only; with --db it lists the database"
        })
      }
      const directory = Option.getOrUndefined(dir)
      const listing = yield* Backend.run(db, Effect.flatMap(Sessions.Sessions, (sessions) => sessions.list({ directory, offset, limit: Option.getOrUndefined(limit) })), directory).pipe(
        Effect.mapError((error) =>
          // A session file given for DIR: the command that shows one session, and the directory to list.
          error.code === "SESSION_NOT_REGULAR_FILE" && directory !== undefined
            ? sessionError(error.code, `${error.reason}; list the directory that holds it: session-tree list ${NodePath.dirname(directory)}`, {
              path: error.path,
              cause: error
            })
            : error
        )
      )
      if (json) return yield* Console.log(jsonLine(listing.sessions))
      if (listing.sessions.length === 0) return yield* Console.log("no sessions")
      for (const listed of listing.sessions) {
        // A session that does not load: its error in a reader's words (--json keeps the library's).
        yield* Console.log(listLine(Sessions.isUnreadable(listed) ? { ...listed, error: { ...listed.error, message: schemaWords(listed.error.message) } } : listed))
      }
    })
).pipe(Command.withDescription("List the sessions in DIR (or the database), the one updated last first, with the time of its last commit; unreadable ones with their error code."))

const fork = Command.make(
  "fork",
  {
    source: Args.text({ name: "SRC" }).pipe(Args.withDescription("the session to fork")),
    leaf: Options.text("leaf").pipe(Options.withPseudoName("ENTRY"), Options.withDescription("the last entry of the path to copy")),
    to: Options.text("to").pipe(Options.withPseudoName("DST"), Options.withDescription("the new session")),
    id: Options.text("id").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the new session's ID (default: a random UUID; with --db: DST)")),
    version: formatVersion("the new session's format (default: SRC's); 2 converts a version-1 SRC"),
    db
  },
  ({ db, id, leaf, source, to, version }) =>
    Effect.zipRight(
      Backend.checkPaths(db, [source, to]),
      Backend.run(db, Effect.gen(function*() {
        const sessions = yield* Sessions.Sessions
        const forked = yield* sessions.fork(source, leaf, to, { id: Option.getOrUndefined(id), version: Option.getOrUndefined(version) })
        yield* Console.log(printable(forked.id))
      }), source)
    )
).pipe(Command.withDescription("Copy the root→ENTRY path of SRC into a new session DST; prints its ID. SRC is not changed."))

// --- export --out: never replace what this command did not create ------------------------

/** The most of a file read to tell whether it is a session: its first line, as far as a header can reach. */
const HEADER_BYTES = 64 * 1024

/**
 * Whether the regular file at `path` holds a session of any format or state: its first line
 * is (or starts) a JSON object whose `type` is "session", after an optional byte order mark.
 */
const holdsSession = (path: string): boolean => {
  const fd = NFS.openSync(path, NFS.constants.O_RDONLY | NFS.constants.O_NOFOLLOW | NFS.constants.O_NONBLOCK)
  try {
    const buffer = Buffer.alloc(HEADER_BYTES)
    const n = NFS.readSync(fd, buffer, 0, HEADER_BYTES, 0)
    const start = buffer.toString("utf8", 0, n).replace(/^\uFEFF/, "").trimStart()
    const first = start.split("\n", 1)[0]!
    try {
      const parsed: unknown = JSON.parse(first)
      if (typeof parsed === "object" && parsed !== null && (parsed as { type?: unknown }).type === "session") return true
    } catch {
      // Not one JSON object: a header that is cut or damaged is still recognised by how it starts.
    }
    return /^\{\s*"type"\s*:\s*"session"/.test(start)
  } finally {
    NFS.closeSync(fd)
  }
}

const fsyncDirectory = (dir: string): void => {
  const fd = NFS.openSync(dir, NFS.constants.O_RDONLY | NFS.constants.O_DIRECTORY)
  try {
    NFS.fsyncSync(fd)
  } finally {
    NFS.closeSync(fd)
  }
}

const ioError = (what: string, path: string) => (cause: unknown): SessionError =>
  isSessionError(cause)
    ? cause
    : sessionError(
      (cause as { code?: unknown }).code === "ENOENT" ? "SESSION_NOT_FOUND" : "SESSION_IO",
      `${what}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { path, cause }
    )

/**
 * Writes an export to `out`. A new path is written whole under a temporary name and linked
 * into place, which fails when anything appeared there meanwhile: nothing is ever replaced.
 * With `force` an existing regular file is replaced, unless it holds a session.
 */
const writeOut = (out: string, text: string, force: boolean): Effect.Effect<void, SessionError, Backend.Library> =>
  Effect.gen(function*() {
    const path = NodePath.resolve(out)
    const existing = yield* Effect.try({ try: () => NFS.lstatSync(path, { throwIfNoEntry: false }), catch: ioError("cannot look at --out", path) })
    if (existing !== undefined) {
      if (!force) {
        return yield* sessionError("SESSION_EXISTS", `--out ${out} already exists; add --force to replace it (a session is never replaced)`, { path })
      }
      if (existing.isFile() && (yield* Effect.try({ try: () => holdsSession(path), catch: ioError("cannot read --out", path) }))) {
        return yield* sessionError(
          "SESSION_EXISTS",
          `--out ${out} holds a session, which export never replaces, even with --force; choose another file`,
          { path }
        )
      }
      // Anything else that is not a regular file is refused by the write itself.
      return yield* Files.writeFile(path, text)
    }
    const temp = NodePath.join(NodePath.dirname(path), `.${NodePath.basename(path)}.${process.pid}-${Math.random().toString(36).slice(2)}.export`)
    yield* Files.writeFile(temp, text)
    yield* Effect.try({
      try: () => {
        try {
          NFS.linkSync(temp, path)
        } finally {
          NFS.unlinkSync(temp)
        }
        fsyncDirectory(NodePath.dirname(path))
      },
      catch: (cause) =>
        (cause as { code?: unknown }).code === "EEXIST"
          ? sessionError("SESSION_EXISTS", `--out ${out} appeared while the export was written; it was left as it is`, { path })
          : ioError("cannot put the export in place", path)(cause)
    })
  })

const exportCommand = Command.make(
  "export",
  {
    source: Args.text({ name: "SRC" }).pipe(Args.withDescription("the session to export")),
    format: Options.choice("format", ["jsonl", "markdown", "html"]).pipe(
      Options.withDefault("jsonl" as const),
      Options.withDescription("jsonl: the session's canonical file, byte for byte; markdown: the root→leaf transcript for a reader (with --verbose: every ID, provider option and model detail); html: a page of the whole tree (default: jsonl)")
    ),
    leaf: Options.text("leaf").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("markdown, html: the leaf of the path shown (default: the newest entry)")),
    out: Options.text("out").pipe(Options.withPseudoName("FILE"), Options.optional, Options.withDescription("write to FILE (atomically) instead of stdout; FILE must not exist")),
    force: Options.boolean("force").pipe(Options.withDescription("let --out replace an existing file (never a session)")),
    inlineBlobs: Options.boolean("inline-blobs").pipe(
      Options.withDescription("jsonl: a self-contained export, every blob's bytes inline as base64 (import stores them as blobs again)")
    ),
    db
  },
  ({ db, force, format, inlineBlobs, leaf, out, source }) =>
    Effect.gen(function*() {
      if (format === "jsonl" && Option.isSome(leaf)) return yield* new UsageError({ reason: "--leaf applies to markdown and html; jsonl is the whole session" })
      if (inlineBlobs && format !== "jsonl") return yield* new UsageError({ reason: "--inline-blobs applies to --format jsonl only" })
      if (force && Option.isNone(out)) return yield* new UsageError({ reason: "--force applies to --out only" })
      yield* Backend.checkPaths(db, [source])
      // One run: --out is written with the backend's Fs, so a database export builds one pool.
      yield* Backend.run(db, Effect.gen(function*() {
        const sessions = yield* Sessions.Sessions
        let text: string
        if (format === "jsonl" && inlineBlobs) {
          const loaded = yield* retryRace(sessions.read(source))
          text = yield* SelfContained.inlineBlobs(loaded.header, loaded.entries, loaded.blob)
        } else if (format === "jsonl") {
          text = yield* retryRace(sessions.exportJsonl(source))
        } else {
          const loaded = yield* retryRace(sessions.read(source))
          const View = yield* Effect.promise(() => import("@session-tree/view"))
          // The views read blobs through the session's own store: an image blob is drawn in the page, a missing one refused.
          const options = { leaf: Option.getOrUndefined(leaf), blobs: loaded.blob, verbose: yield* Verbose }
          text = format === "markdown"
            ? yield* View.Markdown.render(loaded.header, loaded.entries, options)
            : yield* View.Html.render(loaded.header, loaded.entries, options)
        }
        if (Option.isSome(out)) return yield* writeOut(out.value, text, force)
        yield* Effect.sync(() => process.stdout.write(text))
      }), source)
    })
).pipe(Command.withDescription("Print a session as its canonical JSONL, a Markdown transcript, or a self-contained HTML page."))

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

/** The commands, in the order the help lists them; a new one is registered with a line here. */
const COMMANDS = [create, append, verify, recover, deleteCommand, log, tree, list, fork, exportCommand, importCommand, syncCommand, migrate, search, stats, serve] as const

const root = Command.make("session-tree", {}, () =>
  new UsageError({ reason: `a command is required: ${[...COMMAND_NAMES].join(", ")}` })).pipe(
    Command.withDescription("A durable, append-only, branching JSONL store for agent conversations."),
    Command.withSubcommands(COMMANDS)
  )

const cli = Command.run(root, { name: "session-tree", version: "0.1.0" })

// Option names are matched exactly: `--User` is a usage error, not a guess. The built-in options
// are listed once, in the top-level help (`readableHelp`), not in every command's.
const CONFIG = { isCaseSensitive: true, showBuiltIns: false } as const
const ConfigLive = CliConfig.layer(CONFIG)

/** The parser's description of a command, whatever its options. */
const descriptorOf = (command: (typeof COMMANDS)[number]): Descriptor.Command<unknown> => command.descriptor as Descriptor.Command<unknown>

const nameOf = (command: (typeof COMMANDS)[number]): string => [...Descriptor.getNames(descriptorOf(command))][0]!

const COMMAND_NAMES: ReadonlySet<string> = new Set(COMMANDS.map(nameOf))

/** The options every command takes, from the argument parser; listed once, in the top-level help. */
const BUILT_INS = `BUILT-IN OPTIONS (every command takes them)

-h, --help                  show this help, or a command's: session-tree COMMAND --help

--version                   print the version

--completions SHELL         print a completion script for sh, bash, fish or zsh

--log-level LEVEL           the least log level shown: all, trace, debug, info, warning, error, fatal or none (default: info)

--wizard                    build the command line by answering questions

--verbose                   an error with the whole of its detail; export --format markdown with every ID, provider option and model detail
`

const EXIT_CODES = `EXIT CODES

0  success

1  rejected: the error code is the first word on stderr, the cause and the remedy follow

2  wrong usage

3  busy: another process kept changing the session; nothing was written, run the command again
`

const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g

// What the parser says of every option by its type, which each option's own description says better.
const TYPE_LINE = /^(A user-defined piece of text\.|A true or false value\.|This setting is optional\.|One of the following: .*|An integer\.)$/

/**
 * The parser's help, as a person reads it: usage lines start with the command's name
 * (`session-tree create …`), the lines that only restate an option's type are left out, and
 * the top-level help lists the built-in options before the commands.
 *
 * @since 0.1.0
 * @category running
 */
export const readableHelp = (text: string, topLevel: boolean): string => {
  const out: Array<string> = []
  // The parser's help starts with the name, then the name and version: the name is said once.
  let banner = true
  for (const line of text.split("\n")) {
    const plainLine = line.replace(ANSI, "").trim()
    if (banner && plainLine === "") continue
    if (banner) {
      banner = false
      if (plainLine === "session-tree") continue
    }
    if (TYPE_LINE.test(plainLine)) continue
    if (plainLine.startsWith("$ ")) {
      out.push(plainLine === "$ session-tree" ? "session-tree COMMAND [OPTIONS] [ARGUMENTS]" : line.replace("$ ", plainLine.startsWith("$ session-tree") ? "" : "session-tree "))
      continue
    }
    if (topLevel && plainLine === "COMMANDS") out.push(...BUILT_INS.split("\n"))
    out.push(line)
  }
  if (topLevel) out.push("", ...EXIT_CODES.split("\n"))
  // One blank line between paragraphs, where left-out lines leave several; none before the first.
  return out.join("\n").replace(/\n(?:[ \t]*\n){2,}/g, "\n\n").replace(/^(?:[ \t]*\n)+/, "")
}

/** Whether `args` ask for help (the parser then prints it and runs nothing), and whose. */
const helpWanted = (args: ReadonlyArray<string>): { readonly topLevel: boolean } | undefined => {
  if (!args.some((arg) => arg === "--help" || arg === "-h")) return undefined
  return { topLevel: !COMMAND_NAMES.has(args.find((arg) => !arg.startsWith("-")) ?? "") }
}

/** Runs `effect` with what it logs held back, then logs it as `readableHelp` shows it. */
const withReadableHelp = <A, E, R>(effect: Effect.Effect<A, E, R>, topLevel: boolean): Effect.Effect<A, E, R> =>
  Console.consoleWith((base) => {
    const lines: Array<string> = []
    const holding: Console.Console = { ...base, log: (...args) => Effect.sync(() => void lines.push(args.map(String).join(" "))) }
    return Effect.ensuring(
      Console.withConsole(effect, holding),
      Effect.suspend(() => (lines.length === 0 ? Effect.void : Console.log(readableHelp(lines.join("\n"), topLevel))))
    )
  })

/**
 * Whether the command line asked for every detail (`--verbose`): errors in whole, the Markdown export with everything.
 *
 * @since 0.2.0
 * @category models
 */
export class Verbose extends Context.Reference<Verbose>()("@session-tree/cli/Verbose", { defaultValue: () => false }) {}

/**
 * The commands and each one's options, as its usage line shows them (for `usage.ts`'s checks and
 * suggestions). A command's options are read from its help's words (not its laid-out text) the
 * first time they are asked for: laying out every command's help took half of each start.
 */
const commandsOf = (config: CliConfig.CliConfig): Pick<Usage.Context, "commands" | "options"> => {
  const byName = new Map(COMMANDS.map((command) => [nameOf(command), command] as const))
  const known = new Map<string, ReadonlyArray<Usage.OptionName>>()
  const options = (name: string): ReadonlyArray<Usage.OptionName> => {
    const command = byName.get(name)
    if (command === undefined) return []
    let found = known.get(name)
    if (found === undefined) {
      found = Usage.optionsOf(Usage.plainText(Descriptor.getHelp(descriptorOf(command), config)))
      known.set(name, found)
    }
    return found
  }
  return { commands: [...byName.keys()], options }
}

const BUILT_IN_NAMES = ["--help", "--version", "--completions", "--log-level", "--wizard", "--verbose"]

/**
 * The words of a command line as the parser takes them: `help [COMMAND]` is `[COMMAND] --help`,
 * and `--verbose` (every command takes it) is taken out and reported apart. A `--verbose` that is
 * the value of an option before it (`--user --verbose`) stays that value.
 */
const commandLine = (args: ReadonlyArray<string>, commands: Pick<Usage.Context, "commands" | "options">) => {
  const words = args[0] === "help" ? [...args.slice(1), "--help"] : [...args]
  const command = Usage.commandOf({ args: words, commands: commands.commands })
  // Only a command line that holds --verbose needs to know which options take a value.
  const valued = new Set(command === undefined || !words.includes("--verbose") ? [] : commands.options(command).filter((o) => o.value !== undefined).map((o) => o.name))
  const end = words.indexOf("--")
  let verbose = false
  const kept = words.filter((word, i) => {
    if (word !== "--verbose" || (end >= 0 && i > end) || (i > 0 && valued.has(words[i - 1]!))) return true
    verbose = true
    return false
  })
  return { args: kept, verbose }
}

/**
 * Wrong usage, in a user's words, before anything runs: what the parser refuses (with the
 * command or option most likely meant), and an option given without its value. Undefined when
 * the parser accepts the command line (help and the built-in options included).
 */
const wrongUsage = (args: ReadonlyArray<string>, config: CliConfig.CliConfig, commands: Pick<Usage.Context, "commands" | "options">) =>
  Effect.gen(function*() {
    const context: Usage.Context = { args, ...commands, builtIns: BUILT_IN_NAMES }
    if (args.includes("--help") || args.includes("-h")) return undefined
    const missing = Usage.missingValue(context)
    if (missing !== undefined) return missing
    const parsed = yield* Effect.either(Descriptor.parse(root.descriptor, ["session-tree", ...args], config))
    if (Either.isLeft(parsed)) {
      const error = parsed.left
      if (ValidationError.isHelpRequested(error)) return undefined
      return Usage.explain(HelpDoc.toAnsiText(error.error).replace(ANSI, ""), context)
    }
    const directive = parsed.right
    if (directive._tag === "UserDefined" && directive.leftover.length > 0) {
      return Usage.explain(`Received unknown argument: '${directive.leftover[0]}'`, context)
    }
    return undefined
  })

/** The longest first line of an error (the paths it names aside): the cause and what it is about; the rest is the detail, for --verbose. */
const FIRST_LINE = 200

/** What reads as a file path in a message: `/` and the name's characters up to a space, quote or punctuation after it. */
const PATHS = /(?:\.{0,2}\/[^\s:;,()`'"]+)+/g

/** The library's own words for an error, when the cause chain holds longer ones than those shown (its detail). */
const detailOf = (error: SessionError): string | undefined => {
  let detail: string | undefined
  for (let cause: unknown = error.cause; isSessionError(cause); cause = cause.cause) {
    if (cause.reason !== error.reason) detail = cause.reason
  }
  return detail
}

/**
 * An error as stderr shows it: the code, the cause and what it is about on the first line, at
 * most about 200 characters (the middle of a longer one is left out); with --verbose (or --json)
 * the whole of it, then the library's detail.
 *
 * @since 0.2.0
 * @category running
 */
export const errorText = (error: SessionError, verbose: boolean): string => {
  const whole = formatError(error)
  if (verbose) {
    const detail = detailOf(error)
    return detail === undefined ? whole : `${whole}\n  detail: ${visible(detail)}`
  }
  // The paths it names do not count: a long directory must not push the cause out of the line,
  // and a path is never cut (each stands in the shortening as one character of its own).
  const paths = [...new Set(whole.match(PATHS) ?? [])]
  if (whole.length - paths.reduce((n, path) => n + path.length, 0) <= FIRST_LINE) return whole
  const reason = paths.reduce((text, path, i) => text.replaceAll(path, String.fromCharCode(0xe000 + i)), visible(error.reason))
  const others = formatError(sessionError(error.code, "", { line: error.line })).length
  const room = FIRST_LINE - others - " … (--verbose shows all)".length
  const head = reason.slice(0, Math.floor(room * 0.6)).replace(/\s+\S*$/, "")
  const tail = reason.slice(reason.length - Math.floor(room * 0.4)).replace(/^\S*\s+/, "")
  const shortened = `${head} … ${tail}`.replace(/[\ue000-\uf8ff]/g, (c) => paths[c.charCodeAt(0) - 0xe000] ?? "")
  return `${formatError(sessionError(error.code, shortened, { line: error.line }))} (--verbose shows all)`
}

/**
 * Runs one command line (`argv` as `process.argv`: runtime, script, arguments…) and
 * resolves with the exit code. Never fails: every error is printed here, without stack traces.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> => {
  const config = CliConfig.make(CONFIG)
  const commands = commandsOf(config)
  const line = commandLine(argv.slice(2), commands)
  // --json asks for everything too: the whole error, for a program to read.
  const verbose = line.verbose || line.args.includes("--json")
  const help = helpWanted(line.args)
  const program = Effect.gen(function*() {
    const wrong = yield* wrongUsage(line.args, config, commands)
    if (wrong !== undefined) {
      yield* Console.error(`usage: ${wrong}`)
      return EXIT_USAGE
    }
    const parsed = cli([...argv.slice(0, 2), ...line.args])
    yield* help === undefined ? parsed : withReadableHelp(parsed, help.topLevel)
    return EXIT_OK
  })
  return program.pipe(
    Effect.provide(ConfigLive),
    Effect.provideService(Verbose, line.verbose),
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      if (Option.isSome(failure)) {
        const error: unknown = failure.value
        // The parser has already printed what was wrong.
        if (ValidationError.isValidationError(error)) return Effect.succeed(EXIT_USAGE)
        if (error instanceof UsageError) {
          return Effect.as(Console.error(`usage: ${error.reason} (see session-tree --help)`), EXIT_USAGE)
        }
        if (error instanceof Busy) return Effect.as(Console.error(errorText(error.error, verbose)), EXIT_BUSY)
        if (isSessionError(error)) return Effect.as(Console.error(errorText(forUser(error), verbose)), EXIT_FAILURE)
      }
      const squashed = Cause.squash(cause)
      return Effect.as(
        Console.error(`INTERNAL ${squashed instanceof Error ? squashed.message : String(squashed)}`),
        EXIT_FAILURE
      )
    })
  )
}

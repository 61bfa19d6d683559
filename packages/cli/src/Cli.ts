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
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Codec from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import { Message } from "@session-tree/core/Record"
import { isSessionError, restated, type SessionError, sessionError } from "@session-tree/core/SessionError"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as ClaudeSession from "@session-tree/core/ClaudeSession"
import * as PiSession from "@session-tree/core/PiSession"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Files from "@session-tree/file/Files"
import * as Recovery from "@session-tree/file/Recovery"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
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
import * as SelfContained from "./selfContained.js"
import { search } from "./commands/search.js"
import { serve } from "./commands/serve.js"
import { stats } from "./commands/stats.js"
import { formatError, json as jsonLine, listLine, logJson, printable, renderLog, renderTree, treeJson, visible } from "@session-tree/view/Text"

/** Wrong usage the option parser cannot express (exclusive flags); exits 2 like the parser's own errors. */
export const UsageError = Backend.UsageError
export type UsageError = Backend.UsageError

export const EXIT_OK = 0
export const EXIT_FAILURE = 1
export const EXIT_USAGE = 2
export const EXIT_BUSY = 3

/** A race with another process lost on every attempt: exits EXIT_BUSY with `error` (already worded for a user). */
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
          `appends to this session are blocked: an interrupted save left a recovery marker beside it, and no process is saving to it now; run \`session-tree recover ${path}\`, then append again`
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
 */
export const forUser = (error: SessionError): SessionError => {
  let reason = USER_WORDS.reduce((text, [from, to]) => text.replace(from, to), error.reason)
  const remedy = (text: string) => {
    if (!reason.includes(text)) reason += `; ${text}`
  }
  if (error.code === "SESSION_UNSUPPORTED_VERSION" && /^header version 3\b/.test(error.reason)) {
    remedy("this looks like a Pi session file: `session-tree import FILE --from pi --to PATH` converts it")
  }
  if (error.code === "SESSION_INVALID_JSON" && error.line === 1 && error.reason.includes("\uFEFF")) {
    remedy("the file starts with a byte order mark, which a session file never holds: remove it")
  }
  return reason === error.reason ? error : sessionError(error.code, reason, { line: error.line, path: error.path, cause: error.cause })
}

// Every value from a session or a directory is printed through the Text view's escaping
// (`printable`, `jsonLine`, `listLine`, `formatError`): none may reach a terminal raw.

const path = Args.text({ name: "PATH" }).pipe(Args.withDescription("the session file (with --db: the session ID)"))
const json = Options.boolean("json").pipe(Options.withDescription("print one JSON object on stdout"))
// Parsed straight into the backend they name, so each command chooses it once (the rule: Backend.ts).
const db = Backend.option

// --- create -------------------------------------------------------------------------------

/** `--format-version 1|2`: a format version (`--version` prints the command's own). */
const formatVersion = (description: string) =>
  Options.choice("format-version", ["1", "2"]).pipe(
    Options.map((v) => (v === "1" ? 1 : 2) as 1 | 2),
    Options.optional,
    Options.withDescription(description)
  )

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

// Both optional, so that the command itself can say that exactly one of them is required.
const user = Options.text("user").pipe(Options.withPseudoName("TEXT"), Options.optional, Options.withDescription("append a user message with this content"))
const messageJson = Options.text("message").pipe(Options.withPseudoName("JSON"), Options.optional, Options.withDescription("append this Message IR value (JSON)"))

const decodeMessage = Schema.decodeUnknownEither(Message, { onExcessProperty: "error", errors: "first", exact: true })

/** A Schema path as a reader writes it: `toolCalls[0].arguments`. */
const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${String(key)}`)).join("")

/** Schema's words for the types of Message IR, in a reader's. */
const plainTypes = (text: string): string =>
  text.replaceAll("{ readonly [x: string]: unknown }", "a JSON object").replaceAll("minLength(1)", "a non-empty string")

/**
 * The library refused `--message`: when the value does not have the shape of a message, the
 * first wrong field and what was expected there, instead of the whole union of shapes.
 */
const explainMessage = (error: SessionError, value: unknown): SessionError => {
  if (error.code !== "SESSION_INVALID_MESSAGE") return error
  const decoded = decodeMessage(value)
  if (Either.isRight(decoded)) return error
  const issue = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)[0]
  if (issue === undefined) return error
  const at = issue.path.length === 0 ? "the message" : fieldPath(issue.path)
  const what = issue._tag === "Unexpected" ? "a field Message IR does not have" : plainTypes(issue.message)
  return sessionError("SESSION_INVALID_MESSAGE", `--message: ${at}: ${what}`, { path: error.path })
}

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
    user,
    message: messageJson,
    parent: Options.text("parent").pipe(Options.withPseudoName("ID"), Options.optional, Options.withDescription("the parent entry (default: the newest entry)")),
    root: Options.boolean("root").pipe(Options.withDescription("start a new root (parent null)")),
    db
  },
  ({ db, message: messageText, parent, path, root, user }) =>
    Effect.gen(function*() {
      // Usage and the message's JSON are checked before the backend is reached, so they never wait on it.
      if (Option.isSome(user) === Option.isSome(messageText)) {
        return yield* new UsageError({ reason: "append needs exactly one of --user and --message: --user TEXT for a user message, --message JSON for any message" })
      }
      const message: Either.Either<string, string> = Option.isSome(messageText) ? Either.right(messageText.value) : Either.left(Option.getOrThrow(user))
      if (root && Option.isSome(parent)) {
        return yield* new UsageError({ reason: "--parent and --root exclude each other" })
      }
      yield* Backend.checkPaths(db, [path])
      const parsed = Either.isRight(message) ? yield* parseMessage(message.right) : undefined
      const entry = yield* retryRaces(
        Backend.run(db, Effect.scoped(Effect.gen(function*() {
          const body = Either.isLeft(message) ? { role: "user", id: yield* (yield* Ids.Ids).entryId, content: message.left } : parsed
          const store = yield* SessionStore.load(path)
          // The tree's leaf after a load is the newest entry: the documented default parent.
          const leaf = (yield* SessionTree.make(store)).activeLeafId
          return yield* store.append(root ? null : Option.getOrElse(parent, () => leaf), body).pipe(
            // Version 2's errors already name the first wrong field; version 1's union needs the explanation.
            Effect.mapError((error) => (Either.isRight(message) && store.header.version === 1 ? explainMessage(error, parsed) : error))
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
      if (json) return yield* Console.log(jsonLine(yield* logJson(loaded.entries, options)))
      for (const line of yield* renderLog(loaded.entries, options)) yield* Console.log(line)
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
      const { listing, scanned } = yield* Backend.run(db, Effect.gen(function*() {
        // The times the listing is ordered by, so that the time shown is the time sorted by.
        const scanned = yield* (yield* SessionCatalog).scan(directory)
        const listing = yield* (yield* Sessions.Sessions).list({ directory, offset, limit: Option.getOrUndefined(limit) })
        return { listing, scanned }
      }), directory)
      const changedAt = new Map(scanned.map((entry) => [entry.location, entry.changed]))
      // A session that appeared between the two looks counts as the newest change.
      const key = (listed: Sessions.Listed) => changedAt.get(listed.location) ?? Number.MAX_VALUE
      const rows = [...listing.sessions].sort((a, b) => key(b) - key(a)).map((listed) => {
        const changed = changedAt.get(listed.location)
        return { listed, changed: changed === undefined ? undefined : new Date(changed).toISOString() }
      })
      if (json) return yield* Console.log(jsonLine(rows.map(({ changed, listed }) => (changed === undefined ? listed : { ...listed, changed }))))
      if (rows.length === 0) return yield* Console.log("no sessions")
      for (const { changed, listed } of rows) yield* Console.log(listLine(listed, changed))
    })
).pipe(Command.withDescription("List the sessions in DIR (or the database), newest change first, with the time of that change; unreadable ones with their error code."))

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
      Options.withDescription("jsonl: the session's canonical file, byte for byte; markdown: the root→leaf transcript; html: a page of the whole tree (default: jsonl)")
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
          const options = { leaf: Option.getOrUndefined(leaf), blobs: loaded.blob }
          text = format === "markdown"
            ? yield* View.Markdown.render(loaded.header, loaded.entries, options)
            : yield* View.Html.render(loaded.header, loaded.entries, options)
        }
        if (Option.isSome(out)) return yield* writeOut(out.value, text, force)
        yield* Effect.sync(() => process.stdout.write(text))
      }), source)
    })
).pipe(Command.withDescription("Print a session as its canonical JSONL, a Markdown transcript, or a self-contained HTML page."))

/** The most a Pi session file or a Claude Code transcript may hold: images make them large. */
const MAX_PI_FILE_BYTES = 256 * 1024 * 1024

const dropped = (converted: PiSession.Converted): string => {
  const parts = Object.entries(converted.dropped).filter(([, n]) => n > 0).map(([kind, n]) => `${n} ${kind}`)
  return parts.length === 0 ? "nothing was dropped" : `dropped ${parts.join(", ")}`
}

/** The lines of a transcript that are not part of the conversation, per kind, in the order first met. */
const skippedLines = (converted: ClaudeSession.Converted): string => {
  const parts = Object.entries(converted.skipped).map(([kind, n]) => `${n} ${kind}`)
  return parts.length === 0 ? "nothing was skipped" : `skipped ${parts.join(", ")}`
}

/** The most a self-contained export may hold: its lines and every blob's bytes as base64. */
const MAX_SELF_CONTAINED_BYTES = 512 * 1024 * 1024

/**
 * A self-contained export's records (inline data over 65,536 bytes turned back into blob
 * references) and the blobs' bytes; undefined for a file that holds no such data, or that cannot
 * be read here, which the ordinary reading then judges with its own errors.
 */
const readSelfContained = (file: string) =>
  Effect.gen(function*() {
    const bytes = yield* Effect.option(Files.readBytes(file, MAX_SELF_CONTAINED_BYTES))
    if (Option.isNone(bytes)) return undefined
    const unpacked = SelfContained.unpack(new TextDecoder("utf-8", { fatal: false }).decode(bytes.value))
    if (unpacked === undefined) return undefined
    const sizes = new Map([...unpacked.blobs].map(([ref, blob]) => [ref.slice("sha256:".length), blob.length]))
    const decoded = Codec.decodeLines({ lines: unpacked.lines, sizes: unpacked.lines.map(Codec.utf8Length), tail: "none", blobs: sizes })
    if (Either.isLeft(decoded)) {
      const error = decoded.left
      return yield* restated(error, error.reason, { line: error.line, path: file, cause: error.cause })
    }
    const records: Sessions.Records = { header: decoded.right.header, entries: decoded.right.history.entries }
    return { records, blobs: unpacked.blobs }
  })

const importCommand = Command.make(
  "import",
  {
    file: Args.text({ name: "FILE" }).pipe(Args.withDescription("the session file to import")),
    to: Options.text("to").pipe(Options.withPseudoName("PATH"), Options.optional, Options.withDescription("where the new session goes (required on files; with --db: the header's ID)")),
    from: Options.choice("from", ["session-tree", "pi", "claude"]).pipe(
      Options.withDefault("session-tree" as const),
      Options.withDescription("the format of FILE: this project's, a Pi coding-agent session, or a Claude Code transcript (default: session-tree)")
    ),
    version: formatVersion("the new session's format (default: FILE's for session-tree, 2 for pi and claude); 1 converts a Pi session to the course format, refusing what it cannot hold"),
    lossy: Options.boolean("lossy").pipe(Options.withDescription("pi: version 1, dropping what it cannot hold (images, thinking, summaries) instead of refusing")),
    db
  },
  ({ db, file, from, lossy, to, version }) =>
    Effect.gen(function*() {
      const onDatabase = db._tag === "Database"
      const asked = Option.getOrUndefined(version)
      if (Option.isNone(to) && !onDatabase) return yield* new UsageError({ reason: "import needs --to PATH on files" })
      if (lossy && from !== "pi") return yield* new UsageError({ reason: "--lossy applies to --from pi only" })
      if (lossy && asked === 2) return yield* new UsageError({ reason: "--lossy makes a version-1 session: version 2 keeps everything, without --lossy" })
      if (from === "claude" && asked === 1) return yield* new UsageError({ reason: "a Claude Code transcript imports as version 2 only" })
      yield* Backend.checkPaths(db, Option.toArray(to))
      // A line number in a conversion's error is FILE's, so the error names FILE, not the new session.
      const convert = <A>(f: (bytes: Uint8Array) => Either.Either<A, SessionError>) =>
        Effect.flatMap(Files.readBytes(file, MAX_PI_FILE_BYTES), (bytes) =>
          Effect.mapError(f(bytes), (e) => e.path === undefined ? sessionError(e.code, e.reason, { line: e.line, path: file, cause: e.cause }) : e))
      const imported = yield* Backend.run(db, Effect.gen(function*() {
        let records: Sessions.Records
        if (from === "pi" && (lossy || asked === 1)) {
          const converted = yield* convert((bytes) => PiSession.fromPi(bytes, { lossy }))
          if (lossy) yield* Console.error(dropped(converted))
          records = converted
        } else if (from === "pi") {
          records = yield* convert(PiSession.fromPiV2)
        } else if (from === "claude") {
          const converted = yield* convert(ClaudeSession.fromClaude)
          yield* Console.error(skippedLines(converted))
          records = converted
        } else {
          const unpacked = yield* readSelfContained(file)
          if (unpacked !== undefined) {
            return yield* (yield* Sessions.Sessions).import(unpacked.records, Option.getOrUndefined(to), { version: asked, blobs: unpacked.blobs })
          }
          // A session file's blobs live beside it (FILE.blobs/): the new session gets their bytes.
          const loaded = yield* FileJournal.readSession(file)
          const blobs = yield* SelfContained.blobsOf(loaded.entries, loaded.blob)
          return yield* (yield* Sessions.Sessions).import(loaded, Option.getOrUndefined(to), {
            version: asked,
            blobs: blobs.size === 0 ? undefined : blobs
          })
        }
        return yield* (yield* Sessions.Sessions).import(records, Option.getOrUndefined(to), { version: asked })
      }), Option.getOrElse(to, () => file))
      yield* Console.log(printable(imported.id))
    })
).pipe(Command.withDescription("Store the session in FILE (this project's format with the blobs beside it, Pi's or Claude Code's) as a new session that keeps its header; prints its ID."))

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
  new UsageError({ reason: "a command is required: create, append, verify, recover, delete, log, tree, list, fork, export, import, migrate, search, stats or serve" })).pipe(
    Command.withDescription("A durable, append-only, branching JSONL store for agent conversations."),
    Command.withSubcommands([create, append, verify, recover, deleteCommand, log, tree, list, fork, exportCommand, importCommand, migrate, search, stats, serve])
  )

const cli = Command.run(root, { name: "session-tree", version: "0.1.0" })

// Option names are matched exactly: `--User` is a usage error, not a guess. The built-in options
// are listed once, in the top-level help (`readableHelp`), not in every command's.
const ConfigLive = CliConfig.layer({ isCaseSensitive: true, showBuiltIns: false })

const COMMAND_NAMES = new Set(["create", "append", "verify", "recover", "delete", "log", "tree", "list", "fork", "export", "import", "migrate", "search", "stats", "serve"])

/** The options every command takes, from the argument parser; listed once, in the top-level help. */
const BUILT_INS = `BUILT-IN OPTIONS (every command takes them)

-h, --help                  show this help, or a command's: session-tree COMMAND --help

--version                   print the version

--completions SHELL         print a completion script for sh, bash, fish or zsh

--log-level LEVEL           the least log level shown: all, trace, debug, info, warning, error, fatal or none (default: info)

--wizard                    build the command line by answering questions
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
 */
export const readableHelp = (text: string, topLevel: boolean): string => {
  const out: Array<string> = []
  for (const line of text.split("\n")) {
    const plainLine = line.replace(ANSI, "").trim()
    if (TYPE_LINE.test(plainLine)) continue
    if (plainLine.startsWith("$ ")) {
      out.push(plainLine === "$ session-tree" ? "session-tree COMMAND [OPTIONS] [ARGUMENTS]" : line.replace("$ ", plainLine.startsWith("$ session-tree") ? "" : "session-tree "))
      continue
    }
    if (topLevel && plainLine === "COMMANDS") out.push(...BUILT_INS.split("\n"))
    out.push(line)
  }
  if (topLevel) out.push("", ...EXIT_CODES.split("\n"))
  // One blank line between paragraphs, where left-out lines leave several.
  return out.join("\n").replace(/\n(?:[ \t]*\n){2,}/g, "\n\n")
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
 * Runs one command line (`argv` as `process.argv`: runtime, script, arguments…) and
 * resolves with the exit code. Never fails: every error is printed here, without stack traces.
 */
export const run = (argv: ReadonlyArray<string>): Effect.Effect<number, never, CliApp.CliApp.Environment> => {
  const help = helpWanted(argv.slice(2))
  return (help === undefined ? cli(argv) : withReadableHelp(cli(argv), help.topLevel)).pipe(
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
        if (error instanceof Busy) return Effect.as(Console.error(formatError(error.error)), EXIT_BUSY)
        if (isSessionError(error)) return Effect.as(Console.error(formatError(forUser(error))), EXIT_FAILURE)
      }
      const squashed = Cause.squash(cause)
      return Effect.as(
        Console.error(`INTERNAL ${squashed instanceof Error ? squashed.message : String(squashed)}`),
        EXIT_FAILURE
      )
    })
  )
}

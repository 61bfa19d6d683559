/**
 * Which backend a command runs on: session files, or the PostgreSQL database
 * named by `--db URL` (default: the environment variable `SESSION_TREE_DB`).
 * The database package is loaded only when a command uses it, so the file
 * commands start without it.
 *
 * The rule, so that no command goes where its user did not mean:
 * - `--files` forces session files, whatever `SESSION_TREE_DB` says; `--db ""`
 *   means files too. `--files` with `--db URL` is wrong usage.
 * - `--db URL` chooses the database: its PATH arguments are session IDs, whatever
 *   they look like.
 * - When only `SESSION_TREE_DB` chose the database, a PATH that looks like a file
 *   path (it holds a `/` or `\`, or ends in `.jsonl`) is refused as wrong usage,
 *   with a message that names the database and says how to choose either.
 * - Errors name what they were about: the file's path, or the session ID and the
 *   database (host, port and database name; never the user or password).
 */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Ids from "@session-tree/core/Ids"
import type { SearchIndex } from "@session-tree/core/Search"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionChanges } from "@session-tree/core/SessionChanges"
import { isSessionError, type SessionError, sessionError } from "@session-tree/core/SessionError"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Fs from "@session-tree/file/Fs"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as NodePath from "node:path"
import { schemaWords } from "./words.js"

/**
 * What every command may use: the sessions of the backend and its ports (search and changes
 * included), IDs, and the filesystem (import and export files).
 *
 * @since 0.2.0
 * @category models
 */
export type Library = Sessions.Sessions | SessionJournal | SessionCatalog | SearchIndex | SessionChanges | Ids.Ids | Fs.Fs

/**
 * Where the sessions of a command are: files (`--dir`, paths), or the PostgreSQL database of a
 * URL.
 *
 * @since 0.1.0
 * @category models
 */
export type Backend =
  | { readonly _tag: "Files" }
  | { readonly _tag: "Database"; readonly url: string; readonly fromEnvironment: boolean }

/**
 * Wrong usage the option parser cannot express (exclusive flags, a path where an ID is meant); exits 2 like the parser's own errors.
 *
 * @since 0.1.0
 * @category errors
 */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly reason: string }> {}

/**
 * What the options `--db` and `--files` say, before a command knows its arguments.
 *
 * @since 0.1.0
 * @category models
 */
export interface Choice {
  readonly db: Option.Option<string>
  readonly files: boolean
}

/**
 * The backend of `--files`, `--db` (or `$SESSION_TREE_DB` when neither is given); files when
 * none is set; Left with the reason for `--files` together with `--db URL`.
 *
 * @since 0.1.0
 * @category backends
 */
export const choose = ({ db, files }: Choice): Either.Either<Backend, string> => {
  if (files) {
    return Option.isSome(db) && db.value !== ""
      ? Either.left("--files and --db URL exclude each other: --files uses session files, --db a database")
      : Either.right({ _tag: "Files" })
  }
  if (Option.isSome(db)) {
    if (db.value === "") return Either.right({ _tag: "Files" })
    return isDatabaseUrl(db.value) ? Either.right({ _tag: "Database", url: db.value, fromEnvironment: false }) : Either.left(`--db ${NOT_A_URL}`)
  }
  const env = process.env["SESSION_TREE_DB"]
  if (env === undefined || env === "") return Either.right({ _tag: "Files" })
  return isDatabaseUrl(env) ? Either.right({ _tag: "Database", url: env, fromEnvironment: true }) : Either.left(`SESSION_TREE_DB ${NOT_A_URL}`)
}

/** What is said of a database URL that is not one; the value itself is not repeated, as it may hold a password. */
const NOT_A_URL = "is not a PostgreSQL URL: give one like postgres://USER:PASSWORD@HOST:5432/DATABASE (or \"\" for session files)"

/**
 * Whether `url` is a URL of a PostgreSQL database (`postgres://` or `postgresql://`).
 *
 * @since 0.2.0
 * @category guards
 */
export const isDatabaseUrl = (url: string): boolean => {
  try {
    const parsed = new URL(url)
    return parsed.protocol === "postgres:" || parsed.protocol === "postgresql:"
  } catch {
    return false
  }
}

/**
 * `--db URL` and `--files`, parsed straight into the backend they name, so each command chooses it once.
 *
 * @since 0.2.0
 * @category backends
 */
export const option = Options.all({
  db: Options.text("db").pipe(
    Options.withPseudoName("URL"),
    Options.optional,
    Options.withDescription("a PostgreSQL database (default: $SESSION_TREE_DB); session paths are then session IDs; \"\" means files")
  ),
  files: Options.boolean("files").pipe(Options.withDescription("use session files, whatever $SESSION_TREE_DB says"))
}).pipe(
  Options.mapEffect((choice) => Either.mapLeft(choose(choice), (reason) => ValidationError.invalidValue(HelpDoc.p(reason))))
)

/**
 * Whether `arg` reads as a file path rather than a session ID.
 *
 * @since 0.1.0
 * @category backends
 */
export const looksLikePath = (arg: string): boolean => arg.includes("/") || arg.includes("\\") || arg.endsWith(".jsonl")

/**
 * The database a URL names, for messages: host, port and database name, never the user or
 * password (a URL the parser cannot read is not shown at all).
 *
 * @since 0.1.0
 * @category backends
 */
export const describeDatabase = (url: string): string => {
  try {
    const parsed = new URL(url)
    const host = parsed.hostname === "" ? (parsed.searchParams.get("host") ?? "localhost") : parsed.hostname
    const name = decodeURIComponent(parsed.pathname.replace(/^\//, ""))
    return `${host}${parsed.port === "" ? "" : `:${parsed.port}`}/${name}`
  } catch {
    return "(a URL that cannot be read)"
  }
}

/**
 * The backend in words: where the command went.
 *
 * @since 0.1.0
 * @category backends
 */
export const describe = (backend: Backend): string =>
  backend._tag === "Files"
    ? "session files"
    : `the database ${describeDatabase(backend.url)}${backend.fromEnvironment ? " (from SESSION_TREE_DB)" : ""}`

/**
 * Refuses PATH arguments that look like file paths when only the environment chose the
 * database: the user most likely meant a file.
 *
 * @since 0.1.0
 * @category backends
 */
export const checkPaths = (backend: Backend, args: ReadonlyArray<string>): Effect.Effect<void, UsageError> => {
  if (backend._tag !== "Database" || !backend.fromEnvironment) return Effect.void
  const path = args.find(looksLikePath)
  if (path === undefined) return Effect.void
  return Effect.fail(
    new UsageError({
      reason: `${JSON.stringify(path)} looks like a file path, but SESSION_TREE_DB chose the database ${describeDatabase(backend.url)}, ` +
        `where sessions are named by ID. Add --files (or --db "") to use session files, or --db URL to use it as an ID in the database`
    })
  )
}

const FilesLive: Layer.Layer<Library> = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))

/**
 * The services of `backend`; connecting to a database that cannot be reached is SESSION_IO.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (backend: Backend): Effect.Effect<Layer.Layer<Library, SessionError>> =>
  backend._tag === "Files"
    ? Effect.succeed(FilesLive)
    : Effect.map(Effect.promise(() => import("@session-tree/pg/PgJournal")), (PgJournal) =>
      Layer.provideMerge(Sessions.layer, Layer.mergeAll(PgJournal.layerUrl(backend.url), Ids.layerRandom, Fs.layer)))

/** The errno of a failed file system step (`Fs.FsError`), when `error` is one. */
const errnoOf = (error: SessionError): string | undefined => {
  const cause = error.cause as { readonly _tag?: unknown; readonly errno?: unknown } | undefined
  return cause?._tag === "FsError" && typeof cause.errno === "string" ? cause.errno : undefined
}

/**
 * A write the system refused (EACCES, EPERM, EROFS) in a user's words: which session could not
 * be written and which directory or file is not writable, with the remedy, instead of the name
 * of a temporary or lock file of the library.
 */
const refusedWrite = (error: SessionError, subject: string | undefined): SessionError | undefined => {
  const errno = errnoOf(error)
  if (error.code !== "SESSION_IO" || (errno !== "EACCES" && errno !== "EPERM" && errno !== "EROFS") || error.path === undefined) return undefined
  const failed = NodePath.resolve(error.path)
  const directory = NodePath.dirname(failed)
  const session = subject === undefined ? undefined : NodePath.resolve(subject)
  // The library writes beside the session (temporary files, its lock, its marker): the directory is what must be writable.
  const about = session !== undefined && (session === failed || NodePath.dirname(session) === directory) ? `the session ${session}` : failed
  const reason = errno === "EROFS"
    ? `${about} cannot be written: ${directory} is on a read-only file system; choose a path on a writable one`
    : session === failed
    ? `${about} cannot be written: permission denied on the file; make it writable (chmod u+w ${failed})`
    : `${about} cannot be written: permission denied in the directory ${directory}; make it writable (chmod u+w ${directory}) or choose another directory`
  return sessionError(error.code, reason, { line: error.line, path: session ?? failed, cause: error })
}

/**
 * `error` with what it was about: the file path, or the session ID and the database. A reason
 * that already names it is left as it is. A refused write names the session and what is not
 * writable, with the remedy.
 *
 * @since 0.1.0
 * @category backends
 */
export const locate = (error: SessionError, backend: Backend, subject?: string): SessionError => {
  if (backend._tag === "Files") {
    const refused = refusedWrite(error, subject)
    if (refused !== undefined) return refused
  }
  // Schema's words for a wrong value become the field and its fault; the library's stay the detail.
  const worded = schemaWords(error.reason)
  if (worded !== error.reason) error = sessionError(error.code, worded, { line: error.line, path: error.path, cause: error })
  const about = error.path ?? subject
  const named = about !== undefined && !error.reason.includes(about)
  let where: string
  if (backend._tag === "Files") {
    if (!named) return error
    where = `: ${about}`
  } else {
    const database = describe(backend)
    if (error.reason.includes(database)) return error
    where = `${named ? `: session ${JSON.stringify(about)}` : ""} in ${database}`
  }
  return sessionError(error.code, `${error.reason}${where}`, { line: error.line, path: error.path, cause: error.cause })
}

/**
 * Runs `effect` on `backend` (chosen once per command). A failure names what it was about:
 * its own path, or else `subject` (the command's PATH or session ID).
 *
 * @since 0.1.0
 * @category backends
 */
export const run = <A, E>(
  backend: Backend,
  effect: Effect.Effect<A, E, Library>,
  subject?: string
): Effect.Effect<A, E | SessionError> =>
  Effect.flatMap(layer(backend), (live) => Effect.provide(effect, live)).pipe(
    Effect.mapError((error) => (isSessionError(error) ? locate(error, backend, subject) : error))
  )

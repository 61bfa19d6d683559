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

/**
 * What every command may use: the sessions of the backend and its ports (search and changes
 * included), IDs, and the filesystem (import and export files).
 */
export type Library = Sessions.Sessions | SessionJournal | SessionCatalog | SearchIndex | SessionChanges | Ids.Ids | Fs.Fs

export type Backend =
  | { readonly _tag: "Files" }
  | { readonly _tag: "Database"; readonly url: string; readonly fromEnvironment: boolean }

/** Wrong usage the option parser cannot express (exclusive flags, a path where an ID is meant); exits 2 like the parser's own errors. */
export class UsageError extends Data.TaggedError("UsageError")<{ readonly reason: string }> {}

/** What the options `--db` and `--files` say, before a command knows its arguments. */
export interface Choice {
  readonly db: Option.Option<string>
  readonly files: boolean
}

/**
 * The backend of `--files`, `--db` (or `$SESSION_TREE_DB` when neither is given); files when
 * none is set; Left with the reason for `--files` together with `--db URL`.
 */
export const choose = ({ db, files }: Choice): Either.Either<Backend, string> => {
  if (files) {
    return Option.isSome(db) && db.value !== ""
      ? Either.left("--files and --db URL exclude each other: --files uses session files, --db a database")
      : Either.right({ _tag: "Files" })
  }
  if (Option.isSome(db)) return Either.right(db.value === "" ? { _tag: "Files" } : { _tag: "Database", url: db.value, fromEnvironment: false })
  const env = process.env["SESSION_TREE_DB"]
  return Either.right(env === undefined || env === "" ? { _tag: "Files" } : { _tag: "Database", url: env, fromEnvironment: true })
}

/** `--db URL` and `--files`, parsed straight into the backend they name, so each command chooses it once. */
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

/** Whether `arg` reads as a file path rather than a session ID. */
export const looksLikePath = (arg: string): boolean => arg.includes("/") || arg.includes("\\") || arg.endsWith(".jsonl")

/**
 * The database a URL names, for messages: host, port and database name, never the user or
 * password (a URL the parser cannot read is not shown at all).
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

/** The backend in words: where the command went. */
export const describe = (backend: Backend): string =>
  backend._tag === "Files"
    ? "session files"
    : `the database ${describeDatabase(backend.url)}${backend.fromEnvironment ? " (from SESSION_TREE_DB)" : ""}`

/**
 * Refuses PATH arguments that look like file paths when only the environment chose the
 * database: the user most likely meant a file.
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

/** The services of `backend`; connecting to a database that cannot be reached is SESSION_IO. */
export const layer = (backend: Backend): Effect.Effect<Layer.Layer<Library, SessionError>> =>
  backend._tag === "Files"
    ? Effect.succeed(FilesLive)
    : Effect.map(Effect.promise(() => import("@session-tree/pg/PgJournal")), (PgJournal) =>
      Layer.provideMerge(Sessions.layer, Layer.mergeAll(PgJournal.layerUrl(backend.url), Ids.layerRandom, Fs.layer)))

/**
 * `error` with what it was about: the file path, or the session ID and the database. A reason
 * that already names it is left as it is.
 */
export const locate = (error: SessionError, backend: Backend, subject?: string): SessionError => {
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
 */
export const run = <A, E>(
  backend: Backend,
  effect: Effect.Effect<A, E, Library>,
  subject?: string
): Effect.Effect<A, E | SessionError> =>
  Effect.flatMap(layer(backend), (live) => Effect.provide(effect, live)).pipe(
    Effect.mapError((error) => (isSessionError(error) ? locate(error, backend, subject) : error))
  )

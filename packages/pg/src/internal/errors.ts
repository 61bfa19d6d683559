/**
 * How a failure of the database reaches the caller: always a `SessionError`
 * with the `SqlError` as its cause, never an untyped error or a defect.
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import { SqlError } from "@effect/sql/SqlError"
import { type ConflictError, type IoError, isSessionError, type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

const isSqlError = (u: unknown): u is SqlError =>
  u instanceof SqlError || (typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "SqlError")

/**
 * The SQLSTATE of a failure the server reported, or undefined when there is none (a lost
 * connection, a refused connect: node's own codes such as ECONNREFUSED are not SQLSTATEs).
 */
export const sqlState = (error: SqlError): string | undefined => {
  const cause = error.cause as { readonly code?: unknown; readonly severity?: unknown } | undefined
  return typeof cause === "object" && cause !== null && typeof cause.severity === "string" && typeof cause.code === "string"
    ? cause.code
    : undefined
}

/** What went wrong, in words: the client's message, the driver's, and the SQLSTATE or errno. */
const describe = (error: SqlError): string => {
  const cause = error.cause as { readonly message?: unknown; readonly code?: unknown } | undefined
  const inner = typeof cause?.message === "string" && cause.message !== "" ? `: ${cause.message}` : ""
  const code = typeof cause?.code === "string" ? ` (${sqlState(error) !== undefined ? "SQLSTATE " : ""}${cause.code})` : ""
  const hint = sqlState(error) === "42P01"
    ? "; the session-tree schema is missing: run `session-tree migrate --db URL` (Migrations.migrate)"
    : ""
  return `${error.message}${inner}${code}${hint}`
}

/** A failed step as SESSION_IO, naming what was attempted. */
export const ioError = (what: string, error: SqlError, location?: string): IoError =>
  sessionError("SESSION_IO", `${what}: ${describe(error)}`, { path: location, cause: error })

/** Whether a failure at COMMIT proves that the server rolled the transaction back. */
const refusedAtCommit = (error: SqlError): boolean => {
  const state = sqlState(error)
  // Class 23 (a deferred constraint) and 40 (serialization, deadlock) are the server refusing to
  // commit; anything else at COMMIT (a lost connection, a shutdown) leaves the outcome unknown.
  return state !== undefined && (state.startsWith("23") || state.startsWith("40"))
}

/**
 * Whether the failure of a statement that is its own transaction proves that nothing of it was
 * committed: an error the server raised while it ran the statement (bad data, a constraint, a
 * lock wait timed out, a conflict, a missing table). A lost connection, or a server shutting
 * down or failing (classes 08, 53, 57, 58, XX), may come after the commit: the outcome is unknown.
 */
export const refusedStatement = (error: unknown): boolean => {
  if (!isSqlError(error)) return true
  const state = sqlState(error)
  return state !== undefined && ["22", "23", "25", "40", "42", "54", "55"].includes(state.slice(0, 2))
}

/** Where a transaction was when it failed: before COMMIT nothing can have been written. */
export interface Progress {
  committing: boolean
}

/**
 * Runs `body` in one transaction of `sql`. `@effect/sql` turns a failed COMMIT or ROLLBACK into a
 * defect; here it is a failure again, so that a lost connection at COMMIT is a typed error.
 * `progress.committing` is set once the body has succeeded, i.e. when COMMIT is about to be sent.
 */
export const transaction = <A, E, R>(
  sql: SqlClient.SqlClient,
  progress: Progress,
  body: Effect.Effect<A, E, R>
): Effect.Effect<A, E | SqlError, R> =>
  sql.withTransaction(Effect.tap(body, () => Effect.sync(() => (progress.committing = true)))).pipe(
    Effect.catchSomeDefect((defect) => (isSqlError(defect) ? Option.some(Effect.fail(defect)) : Option.none()))
  )

/** The SessionError of a failed write transaction: its own typed failure, or what the database said. */
export const writeError = <E extends SessionError = SessionError>(
  what: string,
  error: E | SqlError,
  progress: Progress,
  location?: string
): E | ConflictError | IoError => {
  if (isSessionError(error)) return error
  if (!isSqlError(error)) {
    return sessionError("SESSION_IO", `${what}: ${String(error)}`, { path: location, cause: error })
  }
  const state = sqlState(error)
  if (state === "55P03") {
    return sessionError("SESSION_BUSY", `${what}: another writer's commit holds the session (lock wait timed out)`, {
      path: location,
      cause: error
    })
  }
  if (progress.committing && !refusedAtCommit(error)) {
    return ioError(
      `${what}: the connection failed while COMMIT was in flight, so whether it committed is unknown; a reload shows the whole batch or none of it`,
      error,
      location
    )
  }
  return ioError(`${what}: nothing was committed`, error, location)
}

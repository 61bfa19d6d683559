/**
 * The one error family of the library. Every failure carries a stable `code`
 * (SPEC B4) that tools, tests and the Promise facade rely on; `line` names the
 * 1-based physical line of the file where one applies.
 */
import * as Schema from "effect/Schema"

export const SessionErrorCode = Schema.Literal(
  "SESSION_INVALID_JSON",
  "SESSION_INVALID_UTF8",
  "SESSION_LINE_TOO_LONG",
  "SESSION_FILE_TOO_LARGE",
  "SESSION_TOO_MANY_ENTRIES",
  "SESSION_INVALID_HEADER",
  "SESSION_INVALID_RECORD",
  "SESSION_UNSUPPORTED_VERSION",
  "SESSION_DUPLICATE_ID",
  "SESSION_UNKNOWN_PARENT",
  "SESSION_INVALID_MESSAGE",
  "SESSION_TOOL_LINK",
  "SESSION_NOT_REGULAR_FILE",
  "SESSION_NOT_FOUND",
  "SESSION_EXISTS",
  "SESSION_REPLACED",
  "SESSION_BUSY",
  "SESSION_IO",
  "SESSION_ROLLBACK_FAILED",
  "SESSION_INVALID_OPTIONS",
  "SESSION_UNKNOWN_ENTRY"
)
export type SessionErrorCode = typeof SessionErrorCode.Type

export class SessionError extends Schema.TaggedError<SessionError>("@session-tree/SessionError")(
  "SessionError",
  {
    code: SessionErrorCode,
    reason: Schema.String,
    line: Schema.optional(Schema.Number),
    path: Schema.optional(Schema.String),
    cause: Schema.optional(Schema.Defect)
  }
) {
  override get message(): string {
    const where = this.line === undefined ? "" : ` (line ${this.line})`
    return `${this.code}: ${this.reason}${where}`
  }
}

/** Shorthand used across the pipeline. */
export const sessionError = (
  code: SessionErrorCode,
  reason: string,
  extra?: { readonly line?: number | undefined; readonly path?: string | undefined; readonly cause?: unknown }
): SessionError => {
  const fields: {
    code: SessionErrorCode
    reason: string
    line?: number
    path?: string
    cause?: unknown
  } = { code, reason }
  if (extra?.line !== undefined) fields.line = extra.line
  if (extra?.path !== undefined) fields.path = extra.path
  if (extra?.cause !== undefined) fields.cause = extra.cause
  // Fields are built right here, so the constructor's validation would only cost time on hot failure paths.
  return new SessionError(fields, true)
}

export const isSessionError = (u: unknown): u is SessionError =>
  typeof u === "object" && u !== null && (u as { _tag?: unknown })._tag === "SessionError"

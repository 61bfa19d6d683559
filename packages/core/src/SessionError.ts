/**
 * The library's errors, one class for each party that must act: the caller
 * (`InputError`), whoever repairs stored data (`CorruptError`), a caller that may
 * reload and retry (`ConflictError`), the operator of the disk, network or server
 * (`IoError`), and the operator of a store left in an unproven state
 * (`LockedError`). Every one carries the stable `code` that tools, tests and the
 * Promise facade rely on (`docs/format.md`, "Error codes"), so that a signature
 * can name the narrow class it fails with and a caller can use `Effect.catchTag`;
 * `line` names the 1-based physical line where one applies.
 *
 * A code belongs to one class by default (`classOf`). The codes that judge a
 * session's content (an invalid message, a broken tool link, a cap) describe
 * corrupt data when a session is read, and a refused input when a caller appends:
 * the store raises those as `InputError` (`asInput`).
 */
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"

/**
 * The stable codes of the library's errors (`docs/format.md`, "Error codes").
 *
 * @since 0.1.0
 * @category models
 */
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
  "SESSION_UNKNOWN_ENTRY",
  "SESSION_BLOB_MISSING",
  "SESSION_BLOB_CORRUPT",
  "SESSION_UNKNOWN_FORMAT",
  "SESSION_SOURCE_CHANGED"
)
/**
 * The stable codes of the library's errors (`docs/format.md`, "Error codes").
 *
 * @since 0.1.0
 * @category models
 */
export type SessionErrorCode = typeof SessionErrorCode.Type

/**
 * Marks every error of this module, whatever its class.
 *
 * @since 0.1.0
 * @category symbols
 */
export const TypeId: unique symbol = Symbol.for("@session-tree/core/SessionError")
/**
 * The type of `TypeId`.
 *
 * @since 0.1.0
 * @category symbols
 */
export type TypeId = typeof TypeId

const fields = {
  code: SessionErrorCode,
  reason: Schema.String,
  line: Schema.optional(Schema.Number),
  path: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect)
}

const describe = (
  error: { readonly code: SessionErrorCode; readonly reason: string; readonly line?: number | undefined }
): string => `${error.code}: ${error.reason}${error.line === undefined ? "" : ` (line ${error.line})`}`

/**
 * The caller's input was refused: a message, a parent, an option, a location. Fix the input.
 *
 * @since 0.1.0
 * @category errors
 */
export class InputError extends Schema.TaggedError<InputError>("@session-tree/core/InputError")("InputError", fields) {
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return describe(this)
  }
}

/**
 * Stored data is not a valid session and was refused whole. Someone must repair or remove it.
 *
 * @since 0.1.0
 * @category errors
 */
export class CorruptError extends Schema.TaggedError<CorruptError>("@session-tree/core/CorruptError")("CorruptError", fields) {
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return describe(this)
  }
}

/**
 * Another writer got there first, or something already holds the name. Reload and retry, or choose another name.
 *
 * @since 0.1.0
 * @category errors
 */
export class ConflictError extends Schema.TaggedError<ConflictError>("@session-tree/core/ConflictError")(
  "ConflictError",
  fields
) {
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return describe(this)
  }
}

/**
 * An I/O step failed (disk, network, server) and what was committed before is intact. Retry once it works again.
 *
 * @since 0.1.0
 * @category errors
 */
export class IoError extends Schema.TaggedError<IoError>("@session-tree/core/IoError")("IoError", fields) {
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return describe(this)
  }
}

/**
 * A rollback could not be proven: the store commits nothing more, and the session needs its recovery.
 *
 * @since 0.1.0
 * @category errors
 */
export class LockedError extends Schema.TaggedError<LockedError>("@session-tree/core/LockedError")("LockedError", fields) {
  readonly [TypeId]: TypeId = TypeId
  override get message(): string {
    return describe(this)
  }
}

/**
 * Any error of the library.
 *
 * @since 0.1.0
 * @category errors
 */
export type SessionError = InputError | CorruptError | ConflictError | IoError | LockedError

/**
 * The Schema of any error of the library, e.g. to send one between processes.
 *
 * @since 0.1.0
 * @category errors
 */
export const SessionError = Schema.Union(InputError, CorruptError, ConflictError, IoError, LockedError)

/**
 * The class of an error, as its `_tag` names it.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionErrorTag = SessionError["_tag"]

/**
 * Whether `u` is an error of the library, whatever its class.
 *
 * @since 0.1.0
 * @category guards
 */
export const isSessionError = (u: unknown): u is SessionError => Predicate.hasProperty(u, TypeId)

const CLASS_OF = {
  SESSION_INVALID_JSON: "CorruptError",
  SESSION_INVALID_UTF8: "CorruptError",
  SESSION_LINE_TOO_LONG: "CorruptError",
  SESSION_FILE_TOO_LARGE: "CorruptError",
  SESSION_TOO_MANY_ENTRIES: "CorruptError",
  SESSION_INVALID_HEADER: "CorruptError",
  SESSION_INVALID_RECORD: "CorruptError",
  SESSION_UNSUPPORTED_VERSION: "CorruptError",
  SESSION_DUPLICATE_ID: "CorruptError",
  SESSION_UNKNOWN_PARENT: "CorruptError",
  SESSION_INVALID_MESSAGE: "CorruptError",
  SESSION_TOOL_LINK: "CorruptError",
  SESSION_NOT_REGULAR_FILE: "InputError",
  SESSION_NOT_FOUND: "InputError",
  SESSION_EXISTS: "ConflictError",
  SESSION_REPLACED: "ConflictError",
  SESSION_BUSY: "ConflictError",
  SESSION_IO: "IoError",
  SESSION_ROLLBACK_FAILED: "LockedError",
  SESSION_INVALID_OPTIONS: "InputError",
  SESSION_UNKNOWN_ENTRY: "InputError",
  SESSION_BLOB_MISSING: "CorruptError",
  SESSION_BLOB_CORRUPT: "CorruptError",
  SESSION_UNKNOWN_FORMAT: "InputError",
  SESSION_SOURCE_CHANGED: "ConflictError"
} as const satisfies { readonly [C in SessionErrorCode]: SessionErrorTag }

/**
 * The class of error that `sessionError(code, …)` makes for each code, so that a signature can name it.
 *
 * @since 0.1.0
 * @category models
 */
export type ErrorOf<C extends SessionErrorCode> = Extract<SessionError, { readonly _tag: (typeof CLASS_OF)[C] }>

/**
 * The codes whose errors are of class `Tag` by default.
 *
 * @since 0.1.0
 * @category models
 */
export type CodeOf<Tag extends SessionErrorTag> = { [C in SessionErrorCode]: (typeof CLASS_OF)[C] extends Tag ? C : never }[SessionErrorCode]

/**
 * The class a code belongs to where nothing says otherwise.
 *
 * @since 0.1.0
 * @category utils
 */
export const classOf = (code: SessionErrorCode): SessionErrorTag => CLASS_OF[code]

interface Fields {
  code: SessionErrorCode
  reason: string
  line?: number
  path?: string
  cause?: unknown
}

/**
 * Where an error applies, and what caused it.
 *
 * @since 0.1.0
 * @category models
 */
export interface Extra {
  readonly line?: number | undefined
  readonly path?: string | undefined
  readonly cause?: unknown
}

const fieldsOf = (code: SessionErrorCode, reason: string, extra: Extra | undefined): Fields => {
  const fields: Fields = { code, reason }
  if (extra?.line !== undefined) fields.line = extra.line
  if (extra?.path !== undefined) fields.path = extra.path
  if (extra?.cause !== undefined) fields.cause = extra.cause
  return fields
}

// Fields are built by this module, so the constructors' validation (`true` skips it) would only cost time on hot failure paths.
const make = (tag: SessionErrorTag, fields: Fields): SessionError => {
  switch (tag) {
    case "InputError":
      return new InputError(fields, true)
    case "CorruptError":
      return new CorruptError(fields, true)
    case "ConflictError":
      return new ConflictError(fields, true)
    case "IoError":
      return new IoError(fields, true)
    case "LockedError":
      return new LockedError(fields, true)
  }
}

/**
 * An error of the class that `code` belongs to (`classOf`), typed as that class.
 *
 * @since 0.1.0
 * @category constructors
 */
export const sessionError = <C extends SessionErrorCode>(code: C, reason: string, extra?: Extra): ErrorOf<C> =>
  make(CLASS_OF[code], fieldsOf(code, reason, extra)) as ErrorOf<C>

/**
 * An error of the same class and code as `error`, with another reason and place (a problem restated where it comes from).
 *
 * @since 0.1.0
 * @category constructors
 */
export const restated = <E extends SessionError>(error: E, reason: string, extra?: Extra): E =>
  make(error._tag, fieldsOf(error.code, reason, extra)) as E

/**
 * An `InputError`, whatever class the code has elsewhere: the caller's input was refused.
 *
 * @since 0.1.0
 * @category constructors
 */
export const inputError = (code: SessionErrorCode, reason: string, extra?: Extra): InputError =>
  new InputError(fieldsOf(code, reason, extra), true)

/**
 * The same error as the caller's fault: what judges stored data on a read judges an append's input.
 *
 * @since 0.1.0
 * @category constructors
 */
export const asInput = (error: SessionError): InputError =>
  error._tag === "InputError" ? error : new InputError(fieldsOf(error.code, error.reason, error), true)

/**
 * The codes an error channel `E` can carry.
 *
 * @since 0.1.0
 * @category models
 */
export type CodesIn<E> = Extract<E, SessionError>["code"]

/**
 * The errors of channel `E` whose code is one of `C`: of whichever class each code has there.
 *
 * @since 0.1.0
 * @category models
 */
export type WithCode<E, C extends SessionErrorCode> = Extract<E, SessionError> & { readonly code: C }

/**
 * Recovers from the errors whose `code` is one of `codes` (one code, or several), whatever class
 * they have: `catchTag` tells the classes apart, this the codes within a class (SESSION_BUSY, a
 * commit in flight, from SESSION_REPLACED, a session changed since it was read: both
 * `ConflictError`). Every other failure passes through unchanged, so the error channel keeps `E`.
 *
 * @since 0.1.0
 * @category error handling
 */
export const catchCode: {
  <E, const C extends CodesIn<E>, A2, E2, R2>(
    codes: C | ReadonlyArray<C>,
    f: (error: WithCode<E, C>) => Effect.Effect<A2, E2, R2>
  ): <A, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A | A2, E | E2, R | R2>
  <A, E, R, const C extends CodesIn<E>, A2, E2, R2>(
    self: Effect.Effect<A, E, R>,
    codes: C | ReadonlyArray<C>,
    f: (error: WithCode<E, C>) => Effect.Effect<A2, E2, R2>
  ): Effect.Effect<A | A2, E | E2, R | R2>
} = dual(3, <A, E, R, C extends SessionErrorCode, A2, E2, R2>(
  self: Effect.Effect<A, E, R>,
  codes: C | ReadonlyArray<C>,
  f: (error: WithCode<E, C>) => Effect.Effect<A2, E2, R2>
): Effect.Effect<A | A2, E | E2, R | R2> => {
  const wanted: ReadonlyArray<SessionErrorCode> = typeof codes === "string" ? [codes] : codes
  return Effect.catchIf(self, (error): error is E & WithCode<E, C> => isSessionError(error) && wanted.includes(error.code), f)
})

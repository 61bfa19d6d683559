/**
 * Building the entries of appends: an append's input checked and copied when it
 * is called, then, when its batch is committed, its entry checked against the
 * history it will follow, given an ID and a time, encoded, and held to the caps
 * on a line and on a whole session.
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { type Caps, encodeRecord, utf8Length } from "../Codec.js"
import type { History } from "../History.js"
import type { IdsService } from "../Ids.js"
import { deepFreeze, type Entry, type Header, isCanonicalTimestamp } from "../Record.js"
import * as V2 from "../RecordV2.js"
import { asInput, type InputError, isSessionError, type SessionError, sessionError } from "../SessionError.js"
import type { Lines } from "../SessionJournal.js"
import { snapshotBody, snapshotMessageFor } from "./snapshot.js"

/** The time now as a record's timestamp; a clock that fails or leaves years 0000-9999 is the caller's mistake. */
export const timestampNow = (clock: Clock.Clock): Effect.Effect<string, SessionError> =>
  clock.currentTimeMillis.pipe(
    Effect.catchAllDefect((defect) => Effect.fail(defect)),
    Effect.flatMap((ms) => {
      const text = Number.isSafeInteger(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : ""
      return isCanonicalTimestamp(text)
        ? Effect.succeed(text)
        : Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `the clock returned ${String(ms)}, not a time in years 0000-9999`))
    }),
    Effect.mapError((e) =>
      isSessionError(e) ? e : sessionError("SESSION_INVALID_OPTIONS", "the clock failed", { cause: e })
    )
  )

export const validId = (what: string, id: unknown): Effect.Effect<string, SessionError> =>
  typeof id === "string" && id.length > 0
    ? Effect.succeed(id)
    : Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `the ID factory returned ${JSON.stringify(id) ?? String(id)} for a ${what}`))

export const catchDefects = <A>(what: string, effect: Effect.Effect<A, SessionError>): Effect.Effect<A, SessionError> =>
  Effect.catchAllDefect(effect, (cause) => Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `${what} threw`, { cause })))

export const encodeAll = (records: ReadonlyArray<Header | Entry>): Lines => {
  const lines = records.map(encodeRecord)
  return { lines, sizes: lines.map(utf8Length) }
}

/** The size of a whole session in bytes, every line with its newline. */
export const totalBytes = (lines: Lines): number => lines.sizes.reduce((sum, size) => sum + size + 1, 0)

/**
 * An append as it is queued: its parent, the version of its session, and the frozen keys its
 * entry holds after `timestamp`, in canonical order (`message` in version 1; `kind` and the
 * kind's keys in version 2).
 */
export interface Append {
  readonly parentId: string | null
  readonly version: 1 | 2
  readonly fields: { readonly [key: string]: unknown }
}

const checkParent = (parentId: unknown): SessionError | undefined =>
  parentId !== null && (typeof parentId !== "string" || parentId === "")
    ? sessionError("SESSION_UNKNOWN_PARENT", "the parent must be null or a non-empty entry ID")
    : undefined


/**
 * Checks and copies a message append at call time, so later changes to `message` cannot reach the
 * entry: Message IR of the session's version (a v1 message to a v2 session in its v2 form).
 */
export const prepare = (parentId: unknown, message: unknown, version: 1 | 2 = 1): Append | SessionError => {
  const parent = checkParent(parentId)
  if (parent !== undefined) return parent
  const snapshot = snapshotMessageFor(message, version)
  if (isSessionError(snapshot)) return snapshot
  const fields = version === 1 ? { message: snapshot } : { kind: "message" as const, message: snapshot as V2.Message }
  const blob = version === 2 ? V2.missingBlob(fields as V2.Body) : undefined
  return blob ?? { parentId: parentId as string | null, version, fields: Object.freeze(fields) }
}

/** Checks and copies an append of any kind (the body's keys after `kind`); version 2 only. */
export const prepareEntry = (parentId: unknown, body: unknown, version: 1 | 2): Append | SessionError => {
  const parent = checkParent(parentId)
  if (parent !== undefined) return parent
  if (version === 1) {
    return sessionError("SESSION_UNSUPPORTED_VERSION", "a version-1 session holds messages only; entries of other kinds need version 2")
  }
  const snapshot = snapshotBody(body)
  if (isSessionError(snapshot)) return snapshot
  return V2.missingBlob(snapshot) ?? { parentId: parentId as string | null, version, fields: snapshot }
}

/** The entry of an append with this ID and time: the envelope, then the append's keys in order. */
const entryOf = (append: Append, id: string, timestamp: string): Entry =>
  ({ type: "entry", version: append.version, id, parentId: append.parentId, timestamp, ...append.fields }) as Entry

/**
 * The entry an append would add, before it has an ID or a time: what the parent
 * and tool-link checks look at. No entry can have the empty ID, so a check of it
 * never meets an entry of the history.
 */
const candidate = (append: Append): Entry => entryOf(append, "", "")

/** An entry built for a batch, with its canonical line and that line's size in bytes. */
export interface Built {
  readonly entry: Entry
  readonly line: string
  readonly size: number
}

/**
 * Builds the entries of one batch in order, each checked against `history` as it
 * stands (the batch's earlier entries included, since the caller adds each one
 * it keeps). The entries of a batch share one reading of the clock, taken when
 * the first of them needs it.
 */
export class BatchBuilder {
  /** The bytes the batch's entries add, every line with its newline. */
  added = 0
  private stamp: string | undefined = undefined

  constructor(
    private readonly ids: IdsService,
    private readonly clock: Clock.Clock,
    private readonly history: History,
    /** The size of what is committed before the batch. */
    private readonly committedBytes: () => number,
    private readonly caps: Caps
  ) {}

  private readonly now: Effect.Effect<string, SessionError> = Effect.suspend(() =>
    this.stamp !== undefined
      ? Effect.succeed(this.stamp)
      : Effect.map(timestampNow(this.clock), (t) => (this.stamp = t))
  )

  /**
   * The entry of `append`; parent and tool links are checked first, so a refused append uses up no ID.
   * Every refusal here is the caller's (its message, its parent, its options), whatever the code.
   */
  build(append: Append): Effect.Effect<Built, InputError> {
    return Effect.mapError(this.buildChecked(append), asInput)
  }

  private buildChecked(append: Append): Effect.Effect<Built, SessionError> {
    if (this.history.size >= this.caps.entries) {
      return Effect.fail(sessionError("SESSION_TOO_MANY_ENTRIES", `the session already holds ${this.caps.entries} entries`))
    }
    const problem = this.history.check(candidate(append))
    if (problem !== undefined) return Effect.fail(problem)
    return Effect.flatMap(
      catchDefects("the ID factory", Effect.flatMap(this.ids.entryId, (id) => validId("entry", id))),
      (id) =>
        this.history.has(id)
          ? Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `the ID factory returned "${id}" twice`))
          : Effect.flatMap(this.now, (timestamp) => this.encode(id, timestamp, append))
    )
  }

  private encode(id: string, timestamp: string, append: Append): Effect.Effect<Built, SessionError> {
    const entry = deepFreeze(entryOf(append, id, timestamp))
    const line = encodeRecord(entry)
    const size = utf8Length(line)
    if (size > this.caps.lineBytes) {
      return Effect.fail(
        sessionError("SESSION_LINE_TOO_LONG", `the entry line would hold ${size} bytes, more than ${this.caps.lineBytes}`)
      )
    }
    if (this.committedBytes() + this.added + size + 1 > this.caps.sessionBytes) {
      return Effect.fail(sessionError("SESSION_FILE_TOO_LARGE", `the session would exceed ${this.caps.sessionBytes} bytes`))
    }
    this.added += size + 1
    return Effect.succeed({ entry, line, size })
  }
}

/**
 * Building the entries of appends: an append's input checked and copied when it
 * is called, then, when its batch is committed, its entry checked against the
 * history it will follow, given an ID and a time, encoded, and held to the caps
 * on a line and on a whole session.
 */
import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { encodeRecord, MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINE_BYTES, utf8Length } from "../Codec.js"
import type { History } from "../History.js"
import type { IdsService } from "../Ids.js"
import { type Message, deepFreeze, isCanonicalTimestamp, type SessionEntry, type SessionHeader } from "../Record.js"
import { asInput, type InputError, isSessionError, type SessionError, sessionError } from "../SessionError.js"
import type { Lines } from "../SessionJournal.js"
import { snapshotMessage } from "./snapshot.js"

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

export const encodeAll = (records: ReadonlyArray<SessionHeader | SessionEntry>): Lines => {
  const lines = records.map(encodeRecord)
  return { lines, sizes: lines.map(utf8Length) }
}

/** The size of a whole session in bytes, every line with its newline. */
export const totalBytes = (lines: Lines): number => lines.sizes.reduce((sum, size) => sum + size + 1, 0)

/** An append as it is queued: its parent, and a frozen copy of its message. */
export interface Append {
  readonly parentId: string | null
  readonly message: Message
}

/** Checks and copies an append's input at call time, so later changes to `message` cannot reach the entry. */
export const prepare = (parentId: unknown, message: unknown): Append | SessionError => {
  if (parentId !== null && (typeof parentId !== "string" || parentId === "")) {
    return sessionError("SESSION_UNKNOWN_PARENT", "the parent must be null or a non-empty entry ID")
  }
  const snapshot = snapshotMessage(message)
  return isSessionError(snapshot) ? snapshot : { parentId, message: snapshot }
}

/**
 * The entry an append would add, before it has an ID or a time: what the parent
 * and tool-link checks look at. No entry can have the empty ID, so a check of it
 * never meets an entry of the history.
 */
const candidate = (append: Append): SessionEntry => ({
  type: "entry",
  version: 1,
  id: "",
  parentId: append.parentId,
  timestamp: "",
  message: append.message
})

/** An entry built for a batch, with its canonical line and that line's size in bytes. */
export interface Built {
  readonly entry: SessionEntry
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
    private readonly committedBytes: () => number
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
    if (this.history.size >= MAX_ENTRIES) {
      return Effect.fail(sessionError("SESSION_TOO_MANY_ENTRIES", `the session already holds ${MAX_ENTRIES} entries`))
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
    const entry: SessionEntry = deepFreeze({
      type: "entry",
      version: 1,
      id,
      parentId: append.parentId,
      timestamp,
      message: append.message
    })
    const line = encodeRecord(entry)
    const size = utf8Length(line)
    if (size > MAX_LINE_BYTES) {
      return Effect.fail(
        sessionError("SESSION_LINE_TOO_LONG", `the entry line would hold ${size} bytes, more than ${MAX_LINE_BYTES}`)
      )
    }
    if (this.committedBytes() + this.added + size + 1 > MAX_FILE_BYTES) {
      return Effect.fail(sessionError("SESSION_FILE_TOO_LARGE", `the session would exceed ${MAX_FILE_BYTES} bytes`))
    }
    this.added += size + 1
    return Effect.succeed({ entry, line, size })
  }
}

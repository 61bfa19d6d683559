/**
 * Building the entries of appends: an append's input checked and copied when it
 * is called, then, when its batch is committed, its entry checked against the
 * history it will follow, given an ID and a time, encoded, and held to the caps
 * on a line and on a whole session.
 */
import type * as Clock from "effect/Clock"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import { type Caps, encodeRecord, utf8Length } from "../Codec.js"
import type { History } from "../History.js"
import type { IdsService } from "../Ids.js"
import { deepFreeze, type Entry, type Header, isCanonicalTimestamp } from "../Record.js"
import * as V2 from "../RecordV2.js"
import * as Either from "effect/Either"
import {
  asInput,
  type CorruptError,
  type InputError,
  inputError,
  isSessionError,
  type SessionError,
  sessionError
} from "../SessionError.js"
import type { Lines } from "../SessionJournal.js"
import { type BlobBytes, extractBody, extractMessage, type Sha256 } from "./blobs.js"
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
 * What an append adds, checked and copied when the append was called: the version of its session,
 * the frozen keys its entry holds after `timestamp`, in canonical order (`message` in version 1;
 * `kind` and the kind's keys in version 2), and the blobs its file data became (version 2), stored
 * with the batch unless the session holds them. The parent is given when it is committed.
 */
export interface Content {
  readonly version: 1 | 2
  readonly fields: { readonly [key: string]: unknown }
  readonly blobs: ReadonlyArray<BlobBytes>
}

/** An append of `content` under `parentId`, as a batch builds it. */
export interface Append extends Content {
  readonly parentId: string | null
}

/** A parent as an append names it: null (a new root) or a non-empty entry ID. */
export const checkParent = (parentId: unknown): Either.Either<string | null, InputError> =>
  parentId !== null && (typeof parentId !== "string" || parentId === "")
    ? Either.left(asInput(sessionError("SESSION_UNKNOWN_PARENT", "the parent must be null or a non-empty entry ID")))
    : Either.right(parentId)

/**
 * Checks and copies a message at call time, so later changes to `message` cannot reach the entry:
 * Message IR of the session's version (a v1 message to a v2 session in its v2 form). In version 2,
 * large file data becomes blobs named by `sha256` first.
 */
export const prepareMessage = (message: unknown, version: 1 | 2, sha256: Sha256): Either.Either<Content, InputError> => {
  let blobs: ReadonlyArray<BlobBytes> = NO_BLOBS
  if (version === 2) {
    const extracted = extractMessage(message, sha256)
    if (Either.isLeft(extracted)) return refused(extracted.left)
    blobs = extracted.right.blobs
    message = extracted.right.value
  }
  const snapshot = snapshotMessageFor(message, version)
  if (Either.isLeft(snapshot)) return refused(snapshot.left)
  const fields = version === 1 ? { message: snapshot.right } : { kind: "message" as const, message: snapshot.right as V2.Message }
  return Either.right({ version, fields: Object.freeze(fields), blobs })
}

/** What judges stored data judges an append's input: its refusal is the caller's to fix. */
const refused = (error: CorruptError): Either.Either<never, InputError> => Either.left(asInput(error))

/** Checks and copies an entry of any kind (the body's keys after `kind`); version 2 only. */
export const prepareBody = (body: unknown, version: 1 | 2, sha256: Sha256): Either.Either<Content, InputError> => {
  if (version === 1) {
    return refused(
      sessionError("SESSION_UNSUPPORTED_VERSION", "a version-1 session holds messages only; entries of other kinds need version 2")
    )
  }
  const extracted = extractBody(body, sha256)
  if (Either.isLeft(extracted)) return refused(extracted.left)
  const snapshot = snapshotBody(extracted.right.value)
  if (Either.isLeft(snapshot)) return refused(snapshot.left)
  return Either.right({ version, fields: snapshot.right, blobs: extracted.right.blobs })
}

/** Checks and copies the bodies of a chain, each as `prepareBody` does. */
export const prepareChain = (bodies: unknown, version: 1 | 2, sha256: Sha256): Either.Either<ReadonlyArray<Content>, InputError> => {
  if (!Array.isArray(bodies) || bodies.length === 0) {
    return Either.left(asInput(sessionError("SESSION_INVALID_RECORD", "a chain is a non-empty array of entry bodies")))
  }
  const chain: Array<Content> = []
  for (const body of bodies) {
    const content = prepareBody(body, version, sha256)
    if (Either.isLeft(content)) return Either.left(content.left)
    chain.push(content.right)
  }
  return Either.right(chain)
}

const NO_BLOBS: ReadonlyArray<BlobBytes> = []

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
 * it keeps). The caller takes each entry's ID between `check` and `encode`, so a
 * refused append uses up no ID, and one reading of the clock for the batch.
 * Every refusal here is the caller's (its message, its parent, its options), whatever the code.
 */
export class BatchBuilder {
  /** The bytes the batch's entries add, every line with its newline. */
  added = 0
  /** The blobs the batch's entries are the first to refer to, in order. */
  readonly blobs: Array<BlobBytes> = []
  private readonly staged = new Map<string, number>()

  constructor(
    private readonly history: History,
    /** The size of what is committed before the batch (computed when first asked, after a load). */
    private readonly committedBytes: () => number,
    private readonly caps: Caps,
    /** The blobs the session holds, by hash, with their sizes. */
    private readonly held: ReadonlyMap<string, number>
  ) {}

  /** Where the batch stands, so that a refused chain can take back what it added (`restore`). */
  mark(): { readonly added: number; readonly blobs: number } {
    return { added: this.added, blobs: this.blobs.length }
  }

  restore(mark: { readonly added: number; readonly blobs: number }): void {
    this.added = mark.added
    for (const blob of this.blobs.splice(mark.blobs)) this.staged.delete(blob.hash)
  }

  /** The size of blob `hash` as the session or this batch holds it, or as `append` brings it. */
  private blobSize(hash: string, append: Append): number | undefined {
    return this.held.get(hash) ?? this.staged.get(hash) ?? append.blobs.find((blob) => blob.hash === hash)?.size
  }

  /** Why `append` cannot follow the history as it stands: the entry cap, its parent, its tool links, its blobs. */
  check(append: Append): InputError | undefined {
    if (this.history.size >= this.caps.entries) {
      return inputError("SESSION_TOO_MANY_ENTRIES", `the session already holds ${this.caps.entries} entries`)
    }
    const entry = candidate(append)
    const problem = this.history.check(entry)
    if (problem !== undefined) return asInput(problem)
    if (append.version === 2) {
      const refs = entry.version === 2 && entry.kind === "message" ? V2.blobsOf(entry.message) : []
      if (refs.length > 0) {
        const sizes = new Map<string, number>()
        for (const ref of refs) {
          const hash = V2.hashOf(ref.blob)
          const size = this.blobSize(hash, append)
          if (size !== undefined) sizes.set(hash, size)
        }
        const missing = V2.missingBlob(entry as V2.SessionEntry, sizes)
        if (missing !== undefined) return asInput(missing)
      }
    }
    return undefined
  }

  /** Why the ID factory's `id` cannot name a new entry: the history (or the batch) has it already. */
  checkId(id: string): InputError | undefined {
    return this.history.has(id) ? inputError("SESSION_INVALID_OPTIONS", `the ID factory returned "${id}" twice`) : undefined
  }

  /** The entry of `append` (which `check` accepted) under this ID and time, encoded, held to the caps on a line and a session. */
  encode(append: Append, id: string, timestamp: string): Built | InputError {
    const entry = deepFreeze(entryOf(append, id, timestamp))
    const line = encodeRecord(entry)
    const size = utf8Length(line)
    if (size > this.caps.lineBytes) {
      return inputError("SESSION_LINE_TOO_LONG", `the entry line would hold ${size} bytes, more than ${this.caps.lineBytes}`)
    }
    if (this.committedBytes() + this.added + size + 1 > this.caps.sessionBytes) {
      return inputError("SESSION_FILE_TOO_LARGE", `the session would exceed ${this.caps.sessionBytes} bytes`)
    }
    this.added += size + 1
    for (const blob of append.blobs) {
      if (this.held.has(blob.hash) || this.staged.has(blob.hash)) continue
      this.staged.set(blob.hash, blob.size)
      this.blobs.push(blob)
    }
    return { entry, line, size }
  }
}

/**
 * An entry ID from `ids`, checked, or why there is none: what the factory fails with, throws or
 * returns that is no ID is the caller's. Read from its exit, in one step of the fiber.
 */
export const entryIdFrom = (ids: IdsService): Effect.Effect<Either.Either<string, InputError>> =>
  Effect.map(Effect.exit(ids.entryId), (exit) => {
    if (Exit.isSuccess(exit)) {
      const id: unknown = exit.value
      return typeof id === "string" && id.length > 0
        ? Either.right(id)
        : Either.left(inputError("SESSION_INVALID_OPTIONS", `the ID factory returned ${JSON.stringify(id) ?? String(id)} for a entry`))
    }
    const failure = Cause.failureOption(exit.cause)
    return Either.left(
      Option.isSome(failure) ? asInput(failure.value) : inputError("SESSION_INVALID_OPTIONS", "the ID factory threw", { cause: Cause.squash(exit.cause) })
    )
  })

/** The time now as a record's timestamp (see `timestampNow`), or why there is none, in one step of the fiber. */
export const timestampFrom = (clock: Clock.Clock): Effect.Effect<Either.Either<string, InputError>> =>
  Effect.map(Effect.exit(clock.currentTimeMillis), (exit) => {
    if (Exit.isFailure(exit)) return Either.left(inputError("SESSION_INVALID_OPTIONS", "the clock failed", { cause: Cause.squash(exit.cause) }))
    const ms = exit.value
    const text = Number.isSafeInteger(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : ""
    return isCanonicalTimestamp(text)
      ? Either.right(text)
      : Either.left(inputError("SESSION_INVALID_OPTIONS", `the clock returned ${String(ms)}, not a time in years 0000-9999`))
  })

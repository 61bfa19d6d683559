/**
 * How the server reads a session: as `SessionStore.read` does (the backend's lines, decoded and
 * checked whole: records, history, caps, blobs, the ID a database stores it under), keeping what
 * it takes to read it again cheaply after an append. A session only grows between two versions of
 * an append, so when every line read before is read again unchanged (the same text, the same IDs
 * and blobs), only the lines after them are decoded, each checked against the history kept, as
 * the loader would check it there. Anything else (a line changed or gone, an unfinished tail, a
 * cap, a line that does not check) is read whole again, so that the answer, a session or its
 * error, is the whole read's.
 */
import * as Codec from "@session-tree/core/Codec"
import type { History } from "@session-tree/core/History"
import type { CorruptError } from "@session-tree/core/SessionError"
import * as SessionJournal from "@session-tree/core/SessionJournal"
import type { ReadError, SessionJournalService, Stored } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Tracing from "@session-tree/core/Tracing"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"

/** A session as read, with its lines, blobs and checked history: what reading it again starts from. */
export interface Read {
  readonly loaded: SessionStore.Loaded
  /** The lines read, the header's first. */
  readonly lines: ReadonlyArray<string>
  readonly blobs: ReadonlyMap<string, number> | undefined
  /** The history of `loaded.entries`, checked; extended (once) by the read that follows this one. */
  readonly history: History
  /** Whether a later read extended `history` already: then that read is the one to start from. */
  taken: boolean
  /**
   * How it was read: whole; whole but only the lines after those of the read before decoded
   * (`compared`); or only the lines after those (`after`: the backend's `readAfter`).
   */
  readonly how: "whole" | "compared" | "after"
  /** How many lines the backend gave this read: all of them, or (`after`) only the new ones. */
  readonly linesRead: number
  /** What the backend gave, as one read of the whole session: where `readAfter` starts from next. */
  readonly stored: Stored
}

/** The lines of `stored` decoded whole, as a load decodes them. */
const whole = (journal: SessionJournalService, stored: Stored): Either.Either<Read, CorruptError> =>
  Either.map(SessionStore.decodeStored(journal, stored), (decoded): Read => ({
    loaded: SessionStore.loadedOf(journal, stored, decoded.header, decoded.history.entries),
    lines: stored.lines,
    blobs: stored.blobs,
    history: decoded.history,
    taken: false,
    how: "whole",
    linesRead: stored.lines.length,
    stored
  }))

/**
 * The lines after those of `before` (`added`, at line `n + 1` on) decoded, each checked against the
 * history kept, as the loader would check it there; undefined (and the history as it was) when one
 * does not check, or when the session they make is over a cap.
 */
const extend = (
  journal: SessionJournalService,
  before: Read,
  added: Pick<Stored, "lines" | "sizes" | "ids">,
  blobs: ReadonlyMap<string, number>,
  whole: Stored,
  how: "compared" | "after",
  linesRead: number
): Read | undefined => {
  const n = before.lines.length
  const header = before.loaded.header
  const caps = Codec.capsOf(header.version)
  const from = added.lines.length - (whole.lines.length - n)
  if (whole.lines.length - 1 > caps.entries || whole.size > caps.sessionBytes) return undefined
  for (let i = from; i < added.lines.length; i++) if (added.sizes[i]! > caps.lineBytes) return undefined
  const history = before.history
  for (let i = from; i < added.lines.length; i++) {
    const line = n + i - from
    const decoded = Codec.decodeEntryLine(header.version, added.lines[i]!, line + 1, blobs)
    const ok = Either.isRight(decoded) &&
      history.checkAndAdd(decoded.right, line + 1) === undefined &&
      (added.ids === undefined || added.ids[i] === decoded.right.id)
    if (!ok) {
      history.truncate(n - 1)
      return undefined
    }
  }
  before.taken = true
  return {
    loaded: SessionStore.loadedOf(journal, whole, header, history.entries),
    lines: whole.lines,
    blobs: whole.blobs,
    history,
    taken: false,
    how,
    linesRead,
    stored: whole
  }
}

/** Whether reading on from `before` can give what a whole read gives: a whole session, not started from already. */
const extensible = (before: Read): boolean => !before.taken && before.loaded.tail === "none" && before.lines.length > 0

/**
 * `stored` (read whole) read as `before` and the lines after those: undefined whenever that is not
 * certain to be what decoding it whole gives (then it is decoded whole).
 */
const compared = (journal: SessionJournalService, before: Read, stored: Stored): Read | undefined => {
  const old = before.lines
  const lines = stored.lines
  const n = old.length
  if (!extensible(before) || stored.tail !== "none" || lines.length < n) return undefined
  // Every line read before, as it was (the header first), under the same ID, with the same blobs.
  for (let i = 0; i < n; i++) if (lines[i] !== old[i]) return undefined
  const entries = before.loaded.entries
  const ids = stored.ids
  if (ids !== undefined) for (let i = 1; i < n; i++) if (ids[i - 1] !== entries[i - 1]!.id) return undefined
  if (before.blobs !== undefined) {
    for (const [hash, size] of before.blobs) if (stored.blobs?.get(hash) !== size) return undefined
  }
  // A load checks blobs against the map the backend gives, none when it gives none.
  const blobs = stored.blobs ?? new Map<string, number>()
  const added = { lines, sizes: stored.sizes, ids: ids === undefined ? undefined : ["", ...ids] }
  return extend(journal, before, added, blobs, stored, "compared", lines.length)
}

/**
 * The lines the backend read after `before` (`after`: only those, the lines before proven
 * unchanged by the backend) decoded and checked as `compared` checks them: undefined when one does
 * not check (then the session is read whole, for the whole read's answer).
 */
const following = (journal: SessionJournalService, before: Read, after: Stored): Read | undefined => {
  if (!extensible(before) || after.tail !== "none") return undefined
  // The blobs the lines before referred to were checked by the read before; the new ones by the backend's now.
  const blobs = new Map(before.blobs ?? [])
  if (after.blobs !== undefined) for (const [hash, size] of after.blobs) blobs.set(hash, size)
  const whole: Stored = {
    location: after.location,
    lines: before.lines.concat(after.lines),
    sizes: before.stored.sizes.concat(after.sizes),
    ...(before.stored.ids === undefined || after.ids === undefined ? {} : { ids: before.stored.ids.concat(after.ids) }),
    tail: "none",
    size: after.size,
    mark: after.mark,
    ...(blobs.size === 0 ? {} : { blobs })
  }
  return extend(journal, before, after, blobs, whole, "after", after.lines.length)
}

/** The span attribute saying how a read was made (`Read.how`). */
export const HOW = "session_tree.read"

/** Runs a read in the span `name`, as `SessionStore.read` runs in its own, saying how it was read. */
const spanned = (name: string, location: string) => (self: Effect.Effect<Read, ReadError>): Effect.Effect<Read, ReadError> =>
  self.pipe(Effect.tap((read) => Effect.annotateCurrentSpan(HOW, read.how)), Tracing.span(name, { session: location }))

/** Reads the session at `location` whole. */
export const read = (journal: SessionJournalService, location: string): Effect.Effect<Read, ReadError> =>
  Effect.flatMap(journal.read(location), (stored) => whole(journal, stored)).pipe(spanned("Server.read", location))

/**
 * Reads the session at `location` again after `before`: only the lines appended since, when the
 * backend can read them alone (`SessionJournal.readAfter`); else whole, decoding only the lines
 * after those of `before` when every one of those is there unchanged; else whole.
 */
export const readAgain = (journal: SessionJournalService, location: string, before: Read): Effect.Effect<Read, ReadError> =>
  Effect.flatMap(SessionJournal.readAfter(journal, location, before.stored), (got) => {
    if (got._tag === "After") {
      const more = following(journal, before, got.stored)
      return more !== undefined ? Effect.succeed(more) : Effect.flatMap(journal.read(location), (stored) => whole(journal, stored))
    }
    const more = compared(journal, before, got.stored)
    return more !== undefined ? Effect.succeed(more) : whole(journal, got.stored)
  }).pipe(spanned("Server.readAgain", location))

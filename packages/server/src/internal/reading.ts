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
import type { ReadError, SessionJournalService, Stored } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
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
  /** How it was read: whole, or the lines after those of the read before. */
  readonly how: "whole" | "appended"
}

/** The lines of `stored` decoded whole, as a load decodes them. */
const whole = (journal: SessionJournalService, stored: Stored): Either.Either<Read, CorruptError> =>
  Either.map(SessionStore.decodeStored(journal, stored), (decoded): Read => ({
    loaded: SessionStore.loadedOf(journal, stored, decoded.header, decoded.history.entries),
    lines: stored.lines,
    blobs: stored.blobs,
    history: decoded.history,
    taken: false,
    how: "whole"
  }))

/**
 * `stored` read as `before` and the lines after those: undefined whenever that is not certain to be
 * what decoding it whole gives (then it is decoded whole).
 */
const appended = (journal: SessionJournalService, before: Read, stored: Stored): Read | undefined => {
  const old = before.lines
  const lines = stored.lines
  const n = old.length
  if (before.taken || before.loaded.tail !== "none" || stored.tail !== "none" || lines.length < n || n === 0) return undefined
  const header = before.loaded.header
  const caps = Codec.capsOf(header.version)
  if (lines.length - 1 > caps.entries || stored.size > caps.sessionBytes) return undefined
  for (let i = n; i < lines.length; i++) if (stored.sizes[i]! > caps.lineBytes) return undefined
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
  const history = before.history
  for (let i = n; i < lines.length; i++) {
    const decoded = Codec.decodeEntryLine(header.version, lines[i]!, i + 1, blobs)
    const ok = Either.isRight(decoded) &&
      history.checkAndAdd(decoded.right, i + 1) === undefined &&
      (ids === undefined || ids[i - 1] === decoded.right.id)
    if (!ok) {
      history.truncate(n - 1)
      return undefined
    }
  }
  before.taken = true
  return { loaded: SessionStore.loadedOf(journal, stored, header, history.entries), lines, blobs: stored.blobs, history, taken: false, how: "appended" }
}

/** Reads the session at `location` whole. */
export const read = (journal: SessionJournalService, location: string): Effect.Effect<Read, ReadError> =>
  Effect.flatMap(journal.read(location), (stored) => whole(journal, stored))

/** Reads the session at `location` again after `before`: the lines appended since, when only that changed. */
export const readAgain = (journal: SessionJournalService, location: string, before: Read): Effect.Effect<Read, ReadError> =>
  Effect.flatMap(journal.read(location), (stored) => {
    const more = appended(journal, before, stored)
    return more !== undefined ? Effect.succeed(more) : whole(journal, stored)
  })

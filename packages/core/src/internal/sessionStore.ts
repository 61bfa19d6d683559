import type * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { decodeLines, encodeRecord, MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINE_BYTES, utf8Length } from "../Codec.js"
import { History } from "../History.js"
import { Ids } from "../Ids.js"
import { currentClock } from "../Options.js"
import { type CourseMessage, deepFreeze, isCanonicalTimestamp, type SessionEntry, type SessionHeader } from "../Record.js"
import { SessionError, sessionError } from "../SessionError.js"
import { type Lines, SessionJournal, type SessionJournalService, type Stored, type Writer } from "../SessionJournal.js"
import type { Loaded, SessionStore } from "../SessionStore.js"
import { snapshotMessage } from "./snapshot.js"
import { encodeSummary, summarize } from "./summary.js"

const timestampNow = (clock: Clock.Clock): Effect.Effect<string, SessionError> =>
  clock.currentTimeMillis.pipe(
    Effect.catchAllDefect((defect) => Effect.fail(defect)),
    Effect.flatMap((ms) => {
      const text = Number.isSafeInteger(ms) && Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : ""
      return isCanonicalTimestamp(text)
        ? Effect.succeed(text)
        : Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `the clock returned ${String(ms)}, not a time in years 0000-9999`))
    }),
    Effect.mapError((e) =>
      e instanceof SessionError ? e : sessionError("SESSION_INVALID_OPTIONS", "the clock failed", { cause: e })
    )
  )

const validId = (what: string, id: unknown): Effect.Effect<string, SessionError> =>
  typeof id === "string" && id.length > 0
    ? Effect.succeed(id)
    : Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `the ID factory returned ${JSON.stringify(id) ?? String(id)} for a ${what}`))

const catchDefects = <A>(what: string, effect: Effect.Effect<A, SessionError>): Effect.Effect<A, SessionError> =>
  Effect.catchAllDefect(effect, (cause) => Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `${what} threw`, { cause })))

/**
 * The entry an append would add, before it has an ID or a time: what the parent
 * and tool-link checks look at. No entry can have the empty ID, so a check of it
 * never meets an entry of the history.
 */
const candidate = (parentId: string | null, message: CourseMessage): SessionEntry => ({
  type: "entry",
  version: 1,
  id: "",
  parentId,
  timestamp: "",
  message
})

/** The history and header of decoded lines, or the first reason they are not a valid session at `location`. */
export const decode = (
  journal: SessionJournalService,
  stored: Stored
): { readonly header: SessionHeader; readonly history: History } | SessionError => {
  const decoded = decodeLines(stored)
  if (decoded instanceof SessionError) return decoded
  const expected = journal.sessionIdAt(stored.location)
  if (expected !== undefined && decoded.header.id !== expected) {
    return sessionError("SESSION_INVALID_HEADER", `the header names session "${decoded.header.id}", stored as "${expected}"`, {
      line: 1,
      path: stored.location
    })
  }
  return decoded
}

export const read = (location: string): Effect.Effect<Loaded, SessionError, SessionJournal> =>
  Effect.flatMap(SessionJournal, (journal) =>
    Effect.flatMap(journal.read(location), (stored) => {
      const decoded = decode(journal, stored)
      return decoded instanceof SessionError
        ? Effect.fail(decoded)
        : Effect.succeed({
          location: stored.location,
          header: decoded.header,
          entries: Object.freeze(decoded.history.entries.slice()),
          tail: stored.tail,
          size: stored.size
        })
    }))

/** What a request's caller is woken with: its outcome (the entry of an append), or its turn to commit. */
type Next = Effect.Effect<SessionEntry | void, SessionError>

/** A queued append (or, with no message, a flush): its checked input, and how its caller is woken. */
interface Request {
  readonly parentId: string | null
  readonly message: CourseMessage | undefined
  /** The waiting caller, once it waits; what it is woken with before that waits in `next`. */
  resume: ((next: Next) => void) | undefined
  next: Next | undefined
  answered: boolean
}

/**
 * Wakes a request's caller with the effect it goes on with: its outcome, or its turn to commit.
 * A plain callback is lighter than a Deferred per append, which Effect builds by spreading a prototype.
 */
const wake = (request: Request, next: Next): void => {
  const resume = request.resume
  if (resume === undefined) request.next = next
  else {
    request.resume = undefined
    resume(next)
  }
}

/** Gives a request its outcome; only the first one counts. */
const answer = (request: Request, outcome: Next): void => {
  if (request.answered) return
  request.answered = true
  wake(request, outcome)
}

const awaitWake = (request: Request): Next =>
  Effect.async((resume) => {
    const next = request.next
    if (next === undefined) request.resume = resume
    else {
      request.next = undefined
      resume(next)
    }
  })

interface State {
  /** How many entries of `history` are committed; the rest belong to a batch in flight. */
  committed: number
  /** The frozen array `entries` returns, made on first read after a commit (so appends stay O(1)). */
  view: ReadonlyArray<SessionEntry> | undefined
  /** The canonical size of what is committed, every line with its newline; computed when first needed after a load. */
  bytes: number | undefined
  /** The canonical lines of what is committed, from when they are first computed until a commit has taken them. */
  canonical: Lines | undefined
  tail: "none" | "incomplete"
  /** Set by SESSION_ROLLBACK_FAILED: the backend's state is unproven, so nothing more is committed. */
  locked: SessionError | undefined
  /** Set once the store's scope has closed: its writer is released, so nothing may commit. */
  closed: boolean
}

/** Checks and snapshots an append's input at call time, so later changes to `message` cannot reach the entry. */
const prepare = (parentId: unknown, message: unknown): Request | SessionError => {
  if (parentId !== null && (typeof parentId !== "string" || parentId === "")) {
    return sessionError("SESSION_UNKNOWN_PARENT", "the parent must be null or a non-empty entry ID")
  }
  const snapshot = snapshotMessage(message)
  return snapshot instanceof SessionError
    ? snapshot
    : { parentId, message: snapshot, resume: undefined, next: undefined, answered: false }
}

const encodeAll = (records: ReadonlyArray<SessionHeader | SessionEntry>): Lines => {
  const lines = records.map(encodeRecord)
  return { lines, sizes: lines.map(utf8Length) }
}

/** The empty batch of a flush: it asks for the canonical generation only. */
const NOTHING: Lines & { readonly ids: ReadonlyArray<string> } = { lines: [], sizes: [], ids: [] }

/** The size of a whole session in bytes, every line with its newline. */
const totalBytes = (lines: Lines): number => lines.sizes.reduce((sum, size) => sum + size + 1, 0)

/** A store over a session that `writer` holds, whose accepted records are `header` and `history`. */
const assemble = (
  location: string,
  header: SessionHeader,
  history: History,
  writer: Writer,
  state: State
): Effect.Effect<SessionStore, never, Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const ids = yield* Ids
    const clock = yield* currentClock
    const pending: Array<Request> = []

    // Registered after the backend's own finalizer, so it runs first: no commit starts once the scope closes.
    yield* Effect.addFinalizer(() => Effect.sync(() => (state.closed = true)))

    /** Why this store commits nothing now, or undefined when it may. */
    const whyRefused = (): SessionError | undefined =>
      state.locked ??
        (state.closed ? sessionError("SESSION_IO", "the store's scope is closed", { path: location }) : undefined)

    const accepted = (): Lines => (state.canonical ??= encodeAll([header, ...history.entries.slice(0, state.committed)]))
    const committedBytes = (): number => (state.bytes ??= totalBytes(accepted()))
    // Asked during a commit, when the history holds the batch's entries too.
    const listing = (at: string): string => encodeSummary(summarize(at, { header, entries: history.entries }))

    /** Hands `batch` to the backend; on success the committed size grows by `added` bytes. */
    const write = (lines: Lines & { readonly ids: ReadonlyArray<string> }, added: number): Effect.Effect<void, SessionError> =>
      Effect.matchEffect(writer.append({ ...lines, accepted, listing }), {
        onFailure: (error) => {
          if (error.code === "SESSION_ROLLBACK_FAILED") state.locked = error
          return Effect.fail(error)
        },
        onSuccess: () =>
          Effect.sync(() => {
            // Unknown stays unknown (a flush after a load): it is computed when a cap needs it.
            if (state.bytes !== undefined) state.bytes += added
            state.canonical = undefined
            state.tail = "none"
          })
      })

    /** The entry and line of one append, checked against the history as it stands; IDs and time come last. */
    const build = (parentId: string | null, message: CourseMessage, added: number, now: Effect.Effect<string, SessionError>) => {
      if (history.size >= MAX_ENTRIES) {
        return Effect.fail(sessionError("SESSION_TOO_MANY_ENTRIES", `the session already holds ${MAX_ENTRIES} entries`))
      }
      // Parent and tool links first, so a refused append does not use up an ID of the factory.
      const problem = history.check(candidate(parentId, message))
      if (problem !== undefined) return Effect.fail(problem)
      return Effect.flatMap(
        catchDefects("the ID factory", Effect.flatMap(ids.entryId, (id) => validId("entry", id))),
        (id) =>
          history.has(id)
            ? Effect.fail(sessionError("SESSION_INVALID_OPTIONS", `the ID factory returned "${id}" twice`))
            : Effect.flatMap(now, (timestamp) => {
              const entry: SessionEntry = deepFreeze({
                type: "entry",
                version: 1,
                id,
                parentId,
                timestamp,
                message
              })
              const line = encodeRecord(entry)
              const size = utf8Length(line)
              if (size > MAX_LINE_BYTES) {
                return Effect.fail(
                  sessionError("SESSION_LINE_TOO_LONG", `the entry line would hold ${size} bytes, more than ${MAX_LINE_BYTES}`)
                )
              }
              if (committedBytes() + added + size + 1 > MAX_FILE_BYTES) {
                return Effect.fail(sessionError("SESSION_FILE_TOO_LARGE", `the session would exceed ${MAX_FILE_BYTES} bytes`))
              }
              return Effect.succeed({ entry, line, size })
            })
      )
    }

    /** Validates every request of `batch` in order against the growing history, then commits the accepted ones. */
    const commitBatch = (batch: ReadonlyArray<Request>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const refused = whyRefused()
        if (refused !== undefined) {
          for (const request of batch) answer(request, Effect.fail(refused))
          return
        }
        const accepted: Array<{ readonly request: Request; readonly entry: SessionEntry }> = []
        const lines: Array<string> = []
        const sizes: Array<number> = []
        const entryIds: Array<string> = []
        let added = 0
        // One reading of the clock for the entries of one commit, taken when the first of them needs it.
        let stamp: string | undefined
        const now = Effect.suspend(() =>
          stamp !== undefined ? Effect.succeed(stamp) : Effect.map(timestampNow(clock), (t) => (stamp = t))
        )
        const flushes: Array<Request> = []
        for (const request of batch) {
          if (request.message === undefined) {
            flushes.push(request)
            continue
          }
          const built = yield* Effect.either(build(request.parentId, request.message, added, now))
          if (built._tag === "Left") {
            answer(request, Effect.fail(built.left))
            continue
          }
          const { entry, line, size } = built.right
          history.add(entry)
          accepted.push({ request, entry })
          lines.push(line)
          sizes.push(size)
          entryIds.push(entry.id)
          added += size + 1
        }
        if (accepted.length > 0) {
          const committed = yield* Effect.exit(write({ lines, sizes, ids: entryIds }, added))
          if (Exit.isSuccess(committed)) {
            state.committed = history.size
            state.view = undefined
            for (const { entry, request } of accepted) answer(request, Effect.succeed(entry))
          } else {
            history.truncate(state.committed)
            for (const { request } of accepted) answer(request, Effect.failCause(committed.cause))
          }
        }
        // Flushes come after the batch's appends, in the same turn: the writer has one batch at a time.
        if (flushes.length > 0) {
          const refusedNow = whyRefused()
          const flushed = refusedNow !== undefined ? Exit.fail(refusedNow) : yield* Effect.exit(write(NOTHING, 0))
          for (const request of flushes) answer(request, Exit.isSuccess(flushed) ? Effect.void : Effect.failCause(flushed.cause))
        }
      })

    /** Commits everything pending. A defect must not leave a caller waiting forever or tentative entries behind. */
    const drain: Effect.Effect<void> = Effect.suspend(() => {
      const batch = pending.splice(0)
      if (batch.length === 0) return Effect.void
      return commitBatch(batch).pipe(
        Effect.catchAllCause((cause) =>
          Effect.suspend(() => {
            if (history.size > state.committed) history.truncate(state.committed)
            for (const request of batch) answer(request, Effect.failCause(cause))
            return Effect.void
          })
        )
      )
    })

    /**
     * Commits everything pending, in the fiber of a caller whose request is in the batch (no fiber
     * is forked per append). The caller that finds no commit running takes the turn; requests that
     * queue up meanwhile wait, and when the batch is done the first of them is woken to commit the
     * next one. A caller whose request an earlier batch has committed is answered at once instead of
     * waiting for a turn, so batches grow while a commit is in flight. Flushes queue the same way.
     */
    let committing = false
    const commitTurn: Effect.Effect<void> = Effect.zipRight(
      // Yields once first, so that appends started alongside this one (by other fibers) share its
      // commit even when every step of the commit is synchronous.
      Effect.zipRight(Effect.yieldNow(), drain),
      Effect.sync(() => {
        const first = pending[0]
        if (first === undefined) committing = false
        else wake(first, Effect.zipRight(commitTurn, awaitWake(first)))
      })
    )

    /**
     * Queues `request` and waits for its outcome, taking the commit turn when none is running.
     * Uninterruptible from queueing to the answer: a queued request is committed either way, so its
     * caller must see the outcome.
     */
    const enqueue = (request: Request): Next =>
      Effect.uninterruptible(Effect.suspend(() => {
        const refused = whyRefused()
        if (refused !== undefined) return Effect.fail(refused)
        pending.push(request)
        if (committing) return awaitWake(request)
        committing = true
        return Effect.zipRight(commitTurn, awaitWake(request))
      }))

    // An empty batch, queued like an append, so that it never overlaps a commit.
    const flush: Effect.Effect<void, SessionError> = Effect.suspend(() =>
      Effect.asVoid(enqueue({ parentId: null, message: undefined, resume: undefined, next: undefined, answered: false }))
    )

    const store: SessionStore = {
      location,
      header,
      get entries() {
        return state.view ??= Object.freeze(history.entries.slice(0, state.committed))
      },
      get tail() {
        return state.tail
      },
      // Entries of a batch in flight are in `history` for checking, but only committed ones are visible.
      get: (id) => history.get(id, state.committed),
      append: (parentId, message) => {
        const request = prepare(parentId, message)
        if (request instanceof SessionError) {
          return Effect.suspend(() => Effect.fail(whyRefused() ?? request))
        }
        // A request with a message is answered with its entry.
        return enqueue(request) as Effect.Effect<SessionEntry, SessionError>
      },
      flush
    }
    return store
  })

/** Runs `use` with a scope of its own inside the caller's, closed at once if `use` fails. */
const withChildScope = <A, R>(
  use: (scope: Scope.Scope) => Effect.Effect<A, SessionError, R>
): Effect.Effect<A, SessionError, R | Scope.Scope> =>
  Effect.flatMap(Scope.Scope, (parent) =>
    Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (child) =>
      Effect.onExit(use(child), (exit) => Exit.isFailure(exit) ? Scope.close(child, exit) : Effect.void)))

/**
 * The ID of a new session at `location`: the caller's, else the one the backend requires there,
 * else a fresh one from `Ids`.
 */
export const newSessionId = (
  journal: SessionJournalService,
  location: string,
  given: string | undefined
): Effect.Effect<string, SessionError, Ids> =>
  Effect.gen(function*() {
    const required = journal.sessionIdAt(location)
    const id = yield* (given !== undefined
      ? validId("session", given).pipe(
        Effect.mapError(() => sessionError("SESSION_INVALID_HEADER", "the session ID must be a non-empty string"))
      )
      : required !== undefined
      ? Effect.succeed(required)
      : Effect.flatMap(Ids, (ids) => catchDefects("the ID factory", Effect.flatMap(ids.sessionId, (id) => validId("session", id)))))
    if (required !== undefined && id !== required) {
      return yield* sessionError("SESSION_INVALID_HEADER", `a session at "${location}" must have the ID "${required}"`)
    }
    return id
  })

/** A new header with this ID, stamped now. */
export const newHeader = (id: string): Effect.Effect<SessionHeader, SessionError> =>
  Effect.flatMap(currentClock, (clock) =>
    Effect.map(timestampNow(clock), (timestamp): SessionHeader => Object.freeze({ type: "session", version: 1, id, timestamp })))

export const create = (
  location: string,
  options?: { readonly id?: string }
): Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const journal = yield* SessionJournal
    const id = yield* newSessionId(journal, location, options?.id)
    const header = yield* newHeader(id)
    const line = encodeRecord(header)
    const size = utf8Length(line)
    if (size > MAX_LINE_BYTES) {
      return yield* sessionError("SESSION_LINE_TOO_LONG", "the header line would be too long")
    }
    const lines: Lines = { lines: [line], sizes: [size] }
    // Uninterruptible from the backend's first resource to the finalizer that owns it.
    return yield* Effect.uninterruptible(withChildScope((scope) =>
      Effect.flatMap(
        Scope.extend(journal.create(location, { ...lines, ids: [], listing: (at) => encodeSummary(summarize(at, { header, entries: [] })) }), scope),
        (created) =>
          Scope.extend(
            assemble(created.location, header, new History(), created.writer, {
              committed: 0,
              view: undefined,
              bytes: size + 1,
              canonical: lines,
              tail: "none",
              locked: undefined,
              closed: false
            }),
            scope
          )
      )
    ))
  })

/**
 * Stores a whole session at once (a fork, an import): its canonical lines, validated exactly as a
 * load validates them, so no backend ever holds what the loader would refuse. Holds nothing afterwards.
 */
export const createWhole = (
  journal: SessionJournalService,
  location: string,
  header: SessionHeader,
  entries: ReadonlyArray<SessionEntry>
): Effect.Effect<{ readonly location: string; readonly header: SessionHeader; readonly entries: ReadonlyArray<SessionEntry> }, SessionError> =>
  Effect.suspend(() => {
    const lines = encodeAll([header, ...entries])
    const decoded = decodeLines({ ...lines, tail: "none" })
    if (decoded instanceof SessionError) return Effect.fail(decoded)
    const required = journal.sessionIdAt(location)
    if (required !== undefined && header.id !== required) {
      return Effect.fail(sessionError("SESSION_INVALID_HEADER", `a session at "${location}" must have the ID "${required}"`))
    }
    return Effect.scoped(Effect.map(
      journal.create(location, {
        lines: lines.lines,
        sizes: lines.sizes,
        ids: entries.map((entry) => entry.id),
        listing: (at) => encodeSummary(summarize(at, { header: decoded.header, entries: decoded.history.entries }))
      }),
      (created) => ({ location: created.location, header: decoded.header, entries: decoded.history.entries })
    ))
  })

export const load = (location: string): Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> =>
  Effect.uninterruptible(Effect.flatMap(SessionJournal, (journal) =>
    withChildScope((scope) =>
      Effect.flatMap(Scope.extend(journal.open(location), scope), (opened) => {
        const decoded = decode(journal, opened)
        if (decoded instanceof SessionError) return Effect.fail(decoded)
        return Scope.extend(
          assemble(opened.location, decoded.header, decoded.history, opened.writer, {
            committed: decoded.history.size,
            view: undefined,
            bytes: undefined,
            canonical: undefined,
            tail: opened.tail,
            locked: undefined,
            closed: false
          }),
          scope
        )
      })
    )))

export const open = (location: string): Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> =>
  load(location).pipe(
    Effect.catchIf((e) => e.code === "SESSION_NOT_FOUND", () =>
      create(location).pipe(Effect.catchIf((e) => e.code === "SESSION_EXISTS", () => load(location))))
  )

/**
 * SessionStore: one session file, its accepted history in memory, and durable
 * appends (SPEC Part A "Mechanism", B5).
 *
 * Every append is validated before it is queued and again, against the history
 * it will follow, inside a lock shared by every store of the same file in this
 * process. Appends started together, or queued behind a commit in flight, share
 * one generation (group commit); each resolves only once the commit that holds
 * it is durable, and a failed commit fails exactly those appends and changes
 * neither memory nor disk.
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import * as Scope from "effect/Scope"
import { decodeSession, encodeLine, MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINE_BYTES } from "./Codec.js"
import { Fs, type Handle } from "./Fs.js"
import { History } from "./History.js"
import { Ids } from "./Ids.js"
import * as Generation from "./internal/generation.js"
import { closeQuietly } from "./internal/io.js"
import { lockFor } from "./internal/locks.js"
import * as Paths from "./internal/paths.js"
import { snapshotJson } from "./internal/snapshot.js"
import { decodeCanonicalMessage, decodeMessage, deepFreeze, isCanonicalTimestamp, type CourseMessage, type SessionEntry, type SessionHeader } from "./Record.js"
import { SessionError, sessionError } from "./SessionError.js"

export interface SessionStore {
  /** The absolute path of the session file. */
  readonly path: string
  readonly header: SessionHeader
  /** Every accepted entry in commit order; a frozen array, replaced (never mutated) by each commit. */
  readonly entries: ReadonlyArray<SessionEntry>
  /** Whether the loaded generation ended in a skipped incomplete tail that no commit has removed yet. */
  readonly tail: "none" | "incomplete"
  readonly get: (id: string) => SessionEntry | undefined
  /**
   * Appends one entry. The message is snapshot when `append` is called (own data
   * properties only, no caller code runs), so later changes to it never reach the
   * entry; the entry resolves once durable. Once the store's scope has closed,
   * `append` and `flush` fail with SESSION_IO.
   */
  readonly append: (parentId: string | null, message: unknown) => Effect.Effect<SessionEntry, SessionError>
  /** Commits the canonical generation of what is accepted, with no new entry; a no-op when already canonical. */
  readonly flush: Effect.Effect<void, SessionError>
}

export const SessionStore: Context.Tag<SessionStore, SessionStore> = Context.GenericTag<SessionStore>(
  "@session-tree/SessionStore"
)

/** What a read-only load finds. */
export interface Loaded {
  readonly path: string
  readonly header: SessionHeader
  readonly entries: ReadonlyArray<SessionEntry>
  readonly tail: "none" | "incomplete"
  readonly size: number
}


/** Commits at or above this size copy the current generation in the kernel (reflink/copy_file_range). */
export const KERNEL_COPY_MIN_BYTES = 256 * 1024

/** Loads a session read-only: it never writes, and holds nothing open afterwards. */
export const read = (path: string): Effect.Effect<Loaded, SessionError, Fs> => {
  const paths = Paths.make(path)
  return Effect.acquireUseRelease(
    Generation.open(paths),
    (opened) =>
      Effect.suspend(() => {
        const decoded = decodeSession(opened.bytes)
        return decoded instanceof SessionError
          ? Effect.fail(decoded)
          : Effect.succeed({
            path: paths.path,
            header: decoded.header,
            entries: Object.freeze(decoded.history.entries.slice()),
            tail: decoded.tail,
            size: opened.bytes.length
          })
      }),
    (opened) => closeQuietly(opened.held.handle)
  )
}

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

const unidentified = { type: "entry", version: 1, id: "", timestamp: "" } as const

/** A queued append: its checked input, and how its caller is woken. */
interface Request {
  readonly parentId: string | null
  readonly message: CourseMessage
  /** The waiting caller, once it waits; what it is woken with before that waits in `next`. */
  resume: ((next: Effect.Effect<SessionEntry, SessionError>) => void) | undefined
  next: Effect.Effect<SessionEntry, SessionError> | undefined
  answered: boolean
}

/**
 * Wakes a request's caller with the effect it goes on with: its outcome, or its turn to commit.
 * A plain callback is lighter than a Deferred per append, which Effect builds by spreading a prototype.
 */
const wake = (request: Request, next: Effect.Effect<SessionEntry, SessionError>): void => {
  const resume = request.resume
  if (resume === undefined) request.next = next
  else {
    request.resume = undefined
    resume(next)
  }
}

/** Gives a request its outcome; only the first one counts. */
const answer = (request: Request, outcome: Effect.Effect<SessionEntry, SessionError>): void => {
  if (request.answered) return
  request.answered = true
  wake(request, outcome)
}

const awaitWake = (request: Request): Effect.Effect<SessionEntry, SessionError> =>
  Effect.async((resume) => {
    const next = request.next
    if (next === undefined) request.resume = resume
    else {
      request.next = undefined
      resume(next)
    }
  })

/** Growable bytes of the canonical generation, so the next one is the previous plus its new lines. */
class GenerationBuffer {
  private buffer: Buffer
  length: number
  constructor(initial: Buffer) {
    this.buffer = Buffer.allocUnsafe(Math.max(initial.length * 2, 4096))
    initial.copy(this.buffer)
    this.length = initial.length
  }
  /** Writes `lines` after the current bytes without committing them; returns the whole candidate. */
  stage(lines: ReadonlyArray<Buffer>, extra: number): Buffer {
    const needed = this.length + extra
    if (needed > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2))
      this.buffer.copy(grown, 0, 0, this.length)
      this.buffer = grown
    }
    let at = this.length
    for (const line of lines) at += line.copy(this.buffer, at)
    return this.buffer.subarray(0, needed)
  }
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length)
  }
}

interface State {
  /** How many entries of `history` are committed; the rest belong to a batch in flight. */
  committed: number
  /** The frozen array `entries` returns, made on first read after a commit (so appends stay O(1)). */
  view: ReadonlyArray<SessionEntry> | undefined
  base: Generation.Held
  /** The canonical generation; built on the first commit of a loaded file. */
  generation: GenerationBuffer | undefined
  /** Bytes read at load, kept until the first commit decides whether they are canonical. */
  loadedBytes: Uint8Array | undefined
  /** Whether the file holds exactly `generation`. */
  diskCanonical: boolean
  tail: "none" | "incomplete"
  locked: SessionError | undefined
  /** Set once the store's scope has closed: its descriptors are gone, so nothing may commit. */
  closed: boolean
  leftover: Array<string>
}

type Prepared = { readonly parentId: string | null; readonly message: CourseMessage } | SessionError

/** Checks and snapshots an append's input at call time, so later changes to `message` cannot reach the entry. */
const prepare = (parentId: unknown, message: unknown): Prepared => {
  if (parentId !== null && (typeof parentId !== "string" || parentId === "")) {
    return sessionError("SESSION_UNKNOWN_PARENT", "the parent must be null or a non-empty entry ID")
  }
  const snapshot = snapshotMessage(message)
  return snapshot instanceof SessionError ? snapshot : { parentId, message: snapshot }
}

/**
 * Copies and decodes a message without running caller code (see `internal/snapshot.ts`):
 * a fresh, deeply frozen Message IR value, or the error that refuses it.
 */
export const snapshotMessage = (message: unknown): CourseMessage | SessionError => {
  const snapshot = snapshotJson(message, 2)
  if (!snapshot.ok) {
    return sessionError(snapshot.tooLarge ? "SESSION_LINE_TOO_LONG" : "SESSION_INVALID_MESSAGE", snapshot.reason)
  }
  // Messages in schema key order (the usual case) skip the Schema interpreter; it decides the rest.
  const decoded = decodeCanonicalMessage(snapshot.value) ?? decodeMessage(snapshot.value)
  return decoded instanceof SessionError ? decoded : deepFreeze(decoded)
}

const make = (
  paths: Paths.SessionPaths,
  header: SessionHeader,
  history: History,
  state: State,
  dir: { readonly handle: Handle; readonly id: Generation.Held["id"] }
): Effect.Effect<SessionStore, never, Fs | Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const fs = yield* Fs
    const ids = yield* Ids
    const clock = yield* Effect.clock
    const runFork = Runtime.runFork(yield* Effect.runtime<never>())
    const pathLock = lockFor(paths.lockKey(dir.id.dev, dir.id.ino))
    const pending: Array<Request> = []
    const provide = <A, E>(effect: Effect.Effect<A, E, Fs>) => Effect.provideService(effect, Fs, fs)

    const removeLeftovers = Effect.suspend(() =>
      state.leftover.length === 0 ? Effect.void : Effect.forEach(state.leftover.splice(0), (name) =>
        Effect.flatMap(Effect.either(fs.unlink(name)), (gone) =>
          Effect.sync(() => {
            if (gone._tag === "Left" && gone.left.errno !== "ENOENT") state.leftover.push(name)
          })), { discard: true })
    )

    /**
     * Closes replaced generations in the background: the last close of one frees its blocks (about
     * a millisecond per MB on ext4), which no caller needs to wait for. A close starts on the event
     * loop's next turn, after the append that replaced the generation has resolved, so that its cost
     * (a fiber, a thread-pool call) is not paid by the append either. Appends that follow each other
     * with no turn in between start the waiting close themselves; at most one close runs, and one
     * waits to start, at any time, and the scope waits for both.
     */
    let unclosed: Handle | undefined
    let closing: Fiber.RuntimeFiber<void> | undefined
    let running = false
    const startClose = (): void => {
      if (unclosed === undefined || running) return
      const handle = unclosed
      unclosed = undefined
      running = true
      // When it ends, a close that waited meanwhile starts.
      closing = runFork(Effect.ensuring(Effect.ignore(fs.close(handle)), Effect.sync(() => {
        running = false
        startClose()
      })))
    }
    // `await`, not `join`: a join would also merge the closing fiber's FiberRefs into this one.
    const awaitClosing = Effect.suspend(() => (running ? Fiber.await(closing!) : Effect.void))
    const retire = (handle: Handle): Effect.Effect<void> =>
      Effect.suspend(() => {
        startClose()
        if (unclosed === undefined) {
          unclosed = handle
          setImmediate(startClose)
          return Effect.void
        }
        // One close runs and one waits: the end of the running one starts the waiting one.
        return Effect.zipRight(awaitClosing, retire(handle))
      })
    const awaitRetired: Effect.Effect<void> = Effect.suspend(() => {
      startClose()
      return running ? Effect.zipRight(awaitClosing, awaitRetired) : Effect.void
    })

    // Waits for a commit in flight, then releases the generation this store holds. The directory
    // handle is released after this (it was acquired first), so no later call may use either.
    yield* Effect.addFinalizer(() =>
      pathLock.withLock(Effect.suspend(() => {
        state.closed = true
        return awaitRetired.pipe(Effect.zipRight(closeQuietly(state.base.handle)), Effect.zipRight(removeLeftovers), provide)
      }))
    )

    const refusal = (): SessionError | undefined =>
      state.locked ?? (state.closed ? sessionError("SESSION_IO", "the store's scope is closed", { path: paths.path }) : undefined)

    const ensureGeneration = (): GenerationBuffer => {
      if (state.generation === undefined) {
        const lines = [encodeLine(header), ...history.entries.map(encodeLine)]
        const canonical = Buffer.from(lines.join(""), "utf8")
        state.diskCanonical = state.loadedBytes !== undefined && canonical.equals(state.loadedBytes)
        state.generation = new GenerationBuffer(canonical)
        state.loadedBytes = undefined
      }
      return state.generation
    }

    /** Commits `bytes` (the current generation plus `added` new bytes) and makes it the base on success. */
    const commitBytes = (bytes: Buffer, added: number): Effect.Effect<void, SessionError> =>
      Effect.gen(function*() {
        yield* removeLeftovers
        const copyPrefix = state.diskCanonical && bytes.length >= KERNEL_COPY_MIN_BYTES ? bytes.length - added : 0
        const result = yield* Generation.commit(fs, {
          paths,
          dirHandle: dir.handle,
          dirId: dir.id,
          base: state.base,
          bytes,
          copyPrefix
        })
        switch (result._tag) {
          case "Committed": {
            const old = state.base
            state.base = result.held
            state.diskCanonical = true
            state.tail = "none"
            state.leftover.push(...result.leftover)
            yield* retire(old.handle)
            return
          }
          case "Failed":
            state.leftover.push(...result.leftover)
            return yield* result.error
          case "Locked":
            state.locked = result.error
            return yield* result.error
        }
      })

    const guarded = <A>(effect: Effect.Effect<A, SessionError, Fs>): Effect.Effect<A, SessionError, Fs> =>
      pathLock.withLock(
        Effect.suspend(() => {
          const refused = refusal()
          return refused !== undefined ? Effect.fail(refused) : effect
        })
      )

    /** The entry and line of one request, checked against the history as it stands; IDs and time come last. */
    const build = (request: Request, generation: GenerationBuffer, added: number, now: Effect.Effect<string, SessionError>) => {
      if (history.size >= MAX_ENTRIES) {
        return Effect.fail(sessionError("SESSION_TOO_MANY_ENTRIES", `the session already holds ${MAX_ENTRIES} entries`))
      }
      // Parent and tool links first, under an ID no entry can have (IDs are non-empty), so a
      // refused append does not use up an ID of the factory.
      const problem = history.check({ ...unidentified, parentId: request.parentId, message: request.message })
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
                parentId: request.parentId,
                timestamp,
                message: request.message
              })
              const line = Buffer.from(encodeLine(entry), "utf8")
              if (line.length - 1 > MAX_LINE_BYTES) {
                return Effect.fail(
                  sessionError("SESSION_LINE_TOO_LONG", `the entry line would hold ${line.length - 1} bytes, more than ${MAX_LINE_BYTES}`)
                )
              }
              if (generation.length + added + line.length > MAX_FILE_BYTES) {
                return Effect.fail(sessionError("SESSION_FILE_TOO_LARGE", `the file would exceed ${MAX_FILE_BYTES} bytes`))
              }
              return Effect.succeed({ entry, line })
            })
      )
    }

    /** Validates every request of `batch` in order against the growing history, then commits the accepted ones. */
    const commitBatch = (batch: ReadonlyArray<Request>): Effect.Effect<void> =>
      Effect.gen(function*() {
        const refused = refusal()
        if (refused !== undefined) {
          for (const request of batch) answer(request, Effect.fail(refused))
          return
        }
        const generation = ensureGeneration()
        const accepted: Array<{ readonly request: Request; readonly entry: SessionEntry }> = []
        const lines: Array<Buffer> = []
        let added = 0
        // One reading of the clock for the entries of one commit, taken when the first of them needs it.
        let stamp: string | undefined
        const now = Effect.suspend(() =>
          stamp !== undefined ? Effect.succeed(stamp) : Effect.map(timestampNow(clock), (t) => (stamp = t))
        )
        for (const request of batch) {
          const built = yield* Effect.either(build(request, generation, added, now))
          if (built._tag === "Left") {
            answer(request, Effect.fail(built.left))
            continue
          }
          history.add(built.right.entry)
          accepted.push({ request, entry: built.right.entry })
          lines.push(built.right.line)
          added += built.right.line.length
        }
        if (accepted.length === 0) return
        const committed = yield* Effect.exit(commitBytes(generation.stage(lines, added), added))
        if (Exit.isSuccess(committed)) {
          generation.length += added
          state.committed = history.size
          state.view = undefined
          for (const { entry, request } of accepted) answer(request, Effect.succeed(entry))
        } else {
          history.truncate(state.committed)
          for (const { request } of accepted) answer(request, Effect.failCause(committed.cause))
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
     * next one. (When each caller queued for the permit itself, a caller whose request an earlier
     * batch had already committed still waited for it, and Effect's semaphore lets a newcomer take a
     * free permit before a woken waiter does: newcomers then committed one by one while the others
     * waited, so batches stayed at one append.)
     */
    let committing = false
    const commitTurn: Effect.Effect<void> = Effect.zipRight(
      // Yields once first, so that appends started alongside this one (by other fibers) share its
      // commit even when every step of the commit is synchronous.
      Effect.zipRight(Effect.yieldNow(), pathLock.withLock(drain)),
      Effect.sync(() => {
        const first = pending[0]
        if (first === undefined) committing = false
        else wake(first, Effect.zipRight(commitTurn, awaitWake(first)))
      })
    )

    const store: SessionStore = {
      path: paths.path,
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
        const prepared = prepare(parentId, message)
        // Uninterruptible from queueing to the answer: a queued request is committed either way,
        // so its caller must see the outcome.
        return Effect.uninterruptible(Effect.suspend(() => {
          const refused = refusal()
          if (refused !== undefined) return Effect.fail(refused)
          if (prepared instanceof SessionError) return Effect.fail(prepared)
          const request: Request = { parentId: prepared.parentId, message: prepared.message, resume: undefined, next: undefined, answered: false }
          pending.push(request)
          if (committing) return awaitWake(request)
          committing = true
          return Effect.zipRight(commitTurn, awaitWake(request))
        }))
      },
      flush: Effect.uninterruptible(provide(guarded(Effect.suspend(() => {
        const generation = ensureGeneration()
        return state.diskCanonical ? Effect.void : commitBytes(generation.bytes(), 0)
      }))))
    }
    return store
  })

/**
 * Creates a new session file holding one header: exclusive, fsynced, linked into
 * place, directory fsynced. The ID comes from `Ids` (or `options.id`), the time from `Clock`.
 */
export const create = (
  path: string,
  options?: { readonly id?: string }
): Effect.Effect<SessionStore, SessionError, Fs | Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const paths = Paths.make(path)
    const ids = yield* Ids
    const clock = yield* Effect.clock
    const id = yield* (options?.id !== undefined
      ? validId("session", options.id).pipe(
        Effect.mapError(() => sessionError("SESSION_INVALID_HEADER", "the session ID must be a non-empty string"))
      )
      : catchDefects("the ID factory", Effect.flatMap(ids.sessionId, (id) => validId("session", id))))
    const timestamp = yield* timestampNow(clock)
    const header: SessionHeader = Object.freeze({ type: "session", version: 1, id, timestamp })
    const line = Buffer.from(encodeLine(header), "utf8")
    if (line.length - 1 > MAX_LINE_BYTES) {
      return yield* sessionError("SESSION_LINE_TOO_LONG", "the header line would be too long")
    }
    // Uninterruptible from the first descriptor to the finalizer that owns it.
    return yield* Effect.uninterruptible(Effect.gen(function*() {
      const dirStat = yield* Generation.statDirectory(paths)
      const dirHandle = yield* Effect.acquireRelease(Generation.openDirectory(paths, dirStat), closeQuietly)
      const lock = lockFor(paths.lockKey(dirStat.dev, dirStat.ino))
      const created = yield* lock.withLock(Generation.create(paths, line, dirHandle, dirStat))
      return yield* make(paths, header, new History(), {
        committed: 0,
        view: undefined,
        base: created.held,
        generation: new GenerationBuffer(line),
        loadedBytes: undefined,
        diskCanonical: true,
        tail: "none",
        locked: undefined,
        closed: false,
        leftover: created.leftover.slice()
      }, { handle: dirHandle, id: dirStat })
    }))
  })

/** Loads a session for appending; the store holds the file and its directory open until its scope closes. */
export const load = (path: string): Effect.Effect<SessionStore, SessionError, Fs | Ids | Scope.Scope> =>
  Effect.uninterruptible(Effect.gen(function*() {
    const paths = Paths.make(path)
    const opened = yield* Generation.open(paths)
    return yield* Effect.gen(function*() {
      const decoded = decodeSession(opened.bytes)
      if (decoded instanceof SessionError) return yield* decoded
      const dirHandle = yield* Effect.acquireRelease(Generation.openDirectory(paths, opened.dir), closeQuietly)
      return yield* make(paths, decoded.header, decoded.history, {
        committed: decoded.history.size,
        view: undefined,
        base: opened.held,
        generation: undefined,
        loadedBytes: opened.bytes,
        diskCanonical: false,
        tail: decoded.tail,
        locked: undefined,
        closed: false,
        leftover: []
      }, { handle: dirHandle, id: opened.dir })
    }).pipe(Effect.onError(() => closeQuietly(opened.held.handle)))
  }))

/** Loads the session at `path`, creating it first when nothing is there. */
export const open = (path: string): Effect.Effect<SessionStore, SessionError, Fs | Ids | Scope.Scope> =>
  load(path).pipe(
    Effect.catchIf((e) => e.code === "SESSION_NOT_FOUND", () =>
      create(path).pipe(Effect.catchIf((e) => e.code === "SESSION_EXISTS", () => load(path))))
  )

export const layerLoad = (path: string): Layer.Layer<SessionStore, SessionError, Fs | Ids> =>
  Layer.scoped(SessionStore, load(path))
export const layerCreate = (path: string, options?: { readonly id?: string }): Layer.Layer<SessionStore, SessionError, Fs | Ids> =>
  Layer.scoped(SessionStore, create(path, options))
export const layerOpen = (path: string): Layer.Layer<SessionStore, SessionError, Fs | Ids> =>
  Layer.scoped(SessionStore, open(path))

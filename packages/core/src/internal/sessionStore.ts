import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import { type Caps, capsOf, decodeLines, encodeRecord, utf8Length } from "../Codec.js"
import { History } from "../History.js"
import { Ids } from "../Ids.js"
import { currentClock } from "../Options.js"
import type { Entry, Header } from "../Record.js"
import * as V2 from "../RecordV2.js"
import {
  asInput,
  catchCode,
  type CorruptError,
  type InputError,
  inputError,
  type SessionError,
  sessionError
} from "../SessionError.js"
import {
  type AppendError,
  type BlobError,
  type Lines,
  type NewBlob,
  type ReadError,
  SessionJournal,
  type SessionJournalService,
  type Stored,
  type Writer
} from "../SessionJournal.js"
import type { CreateOptions, Loaded, LoadOptions, Prepared, SessionStore } from "../SessionStore.js"
import { PreparedTypeId } from "../SessionStore.js"
import * as Tracing from "../Tracing.js"
import { BLOB_REF, type BlobBytes, type Sha256 } from "./blobs.js"
import { CommittedHistory } from "./committed.js"
import {
  BatchBuilder,
  catchDefects,
  checkParent,
  type Content,
  encodeAll,
  entryIdFrom,
  prepareBody,
  prepareChain,
  prepareMessage,
  timestampFrom,
  timestampNow,
  validId
} from "./entries.js"
import * as GroupCommit from "./groupCommit.js"
import { listingOf, SessionLister } from "./listing.js"
import { type NewLines, NOTHING, SessionWriter } from "./sessionWriter.js"
import { sha256 as defaultSha256 } from "./sha256.js"

/** The ID a session at `location` must carry: the location itself where the backend locates sessions by ID. */
const requiredId = (journal: SessionJournalService, location: string): string | undefined =>
  journal.locations === "sessionId" ? location : undefined

/** The history and header of decoded lines, or the first reason they are not a valid session at `location`. */
export const decode = (
  journal: SessionJournalService,
  stored: Stored
): Either.Either<{ readonly header: Header; readonly history: History }, CorruptError> =>
  Either.flatMap(decodeLines(stored), (decoded) => {
    const expected = requiredId(journal, stored.location)
    return expected !== undefined && decoded.header.id !== expected
      ? Either.left(sessionError("SESSION_INVALID_HEADER", `the header names session "${decoded.header.id}", stored as "${expected}"`, {
        line: 1,
        path: stored.location
      }))
      : Either.right(decoded)
  })

/** The bytes of the blob `ref` (`sha256:` and its hash) of the session at `location`, checked by the backend. */
export const readBlob = (journal: SessionJournalService, location: string, ref: unknown): Effect.Effect<Uint8Array, BlobError> =>
  (typeof ref === "string" && BLOB_REF.test(ref)
    ? journal.blob(location, V2.hashOf(ref))
    : Effect.fail(sessionError(
      "SESSION_INVALID_OPTIONS",
      `${JSON.stringify(ref) ?? String(ref)} is not a blob reference ("sha256:" and 64 lowercase hexadecimal digits)`
    ))).pipe(Tracing.span("SessionStore.blob", { session: location }))

export const read = (location: string): Effect.Effect<Loaded, ReadError, SessionJournal> =>
  Effect.flatMap(SessionJournal, (journal) =>
    Effect.flatMap(journal.read(location), (stored) =>
      Either.map(decode(journal, stored), (decoded) => loadedOf(journal, stored, decoded.header, decoded.history.entries)))).pipe(
      Tracing.span("SessionStore.read", { session: location })
    )

/**
 * What a read of `stored` gives, with `entries` as its entries. Made apart from the read so that
 * the blob reader closes over the location only: a closure in the read's scope would keep its
 * lines alive for as long as the result.
 */
export const loadedOf = (
  journal: SessionJournalService,
  stored: Pick<Stored, "location" | "tail" | "size">,
  header: Header,
  entries: ReadonlyArray<Entry>
): Loaded => {
  const location = stored.location
  return {
    location,
    header,
    entries: Object.freeze(entries.slice()),
    tail: stored.tail,
    size: stored.size,
    blob: (ref: string) => readBlob(journal, location, ref)
  }
}

/** An append this store checked and copied: what it adds (one entry, or a chain's), and the store that made it. */
interface PreparedAppend extends Prepared<unknown> {
  readonly contents: ReadonlyArray<Content>
  readonly chain: boolean
  readonly store: object
}

const preparedOf = (store: object, contents: ReadonlyArray<Content>, chain: boolean): PreparedAppend =>
  ({ [PreparedTypeId]: PREPARED, contents, chain, store }) as PreparedAppend
const PREPARED = { _A: (_: never) => _ }

/**
 * What the group commit of a store commits: prepared contents under a parent (an append, or a
 * chain: appends each the child of the one before, all of them or none), or a flush (which adds nothing).
 */
type Input = Pending | typeof FLUSH
const FLUSH = "flush" as const
interface Pending {
  readonly parentId: string | null
  readonly prepared: PreparedAppend
}
type Answer = Entry | ReadonlyArray<Entry> | void
type Outcome = Exit.Exit<Answer, AppendError>

/** What the commits of one store share: its history, its writer, and where IDs, times and caps come from. */
interface Committer {
  readonly history: CommittedHistory
  readonly writer: SessionWriter
  readonly caps: Caps
  readonly entryId: Effect.Effect<Either.Either<string, InputError>>
  readonly now: Effect.Effect<Either.Either<string, InputError>>
}

/**
 * Builds the entries of one pending append into the batch, each checked against the history as it
 * grows; all of a chain or none of it. Its answer, or why it is refused (the batch then holds none of it).
 */
const buildInto = (
  committer: Committer,
  builder: BatchBuilder,
  lines: NewBatch,
  pending: Pending,
  clock: { stamp: string | undefined }
): Effect.Effect<Either.Either<Entry | ReadonlyArray<Entry>, InputError>> =>
  Effect.gen(function*() {
    const { history } = committer
    const start = { entries: history.history.size, lines: lines.lines.length, builder: builder.mark() }
    const made: Array<Entry> = []
    const refuse = (refusal: InputError) => {
      // What the refused append added to the batch is taken out again.
      history.history.truncate(start.entries)
      lines.lines.length = lines.sizes.length = lines.ids.length = start.lines
      builder.restore(start.builder)
      return Either.left(refusal)
    }
    for (const content of pending.prepared.contents) {
      // A chain's later items are children of the entry before them, whose ID exists only now.
      const append = { ...content, parentId: made.length === 0 ? pending.parentId : made[made.length - 1]!.id }
      const problem = builder.check(append)
      if (problem !== undefined) return refuse(problem)
      const id = yield* committer.entryId
      if (Either.isLeft(id)) return refuse(id.left)
      const taken = builder.checkId(id.right)
      if (taken !== undefined) return refuse(taken)
      if (clock.stamp === undefined) {
        const now = yield* committer.now
        if (Either.isLeft(now)) return refuse(now.left)
        clock.stamp = now.right
      }
      const built = builder.encode(append, id.right, clock.stamp)
      if (!("entry" in built)) return refuse(built)
      history.history.add(built.entry)
      made.push(built.entry)
      lines.lines.push(built.line)
      lines.sizes.push(built.size)
      lines.ids.push(built.entry.id)
    }
    return Either.right(pending.prepared.chain ? Object.freeze(made) : made[0]!)
  })

interface NewBatch {
  readonly lines: Array<string>
  readonly sizes: Array<number>
  readonly ids: Array<string>
}

/**
 * Commits one batch of a store: every append is checked in order against the
 * history as it grows, the accepted ones are handed to the backend as one
 * batch, and the history keeps them only once the backend has them. Flushes
 * come after the batch's appends, in the same turn: the writer takes one batch
 * at a time.
 */
const commitBatch = (committer: Committer) =>
(batch: ReadonlyArray<Input>): Effect.Effect<GroupCommit.Outcomes<Answer, AppendError>, AppendError> =>
  Effect.gen(function*() {
    const { history, writer } = committer
    const refused = writer.locked
    if (refused !== undefined) return batch.map(() => Exit.fail(refused))
    const outcomes: Array<Outcome> = new Array(batch.length)
    const builder = new BatchBuilder(history.history, () => writer.committedBytes(), committer.caps, writer.blobs)
    const lines: NewBatch = { lines: [], sizes: [], ids: [] }
    const clock = { stamp: undefined as string | undefined }
    const accepted: Array<{ readonly at: number; readonly answer: Entry | ReadonlyArray<Entry> }> = []
    const flushes: Array<number> = []
    for (let i = 0; i < batch.length; i++) {
      const input = batch[i]!
      if (input === FLUSH) {
        flushes.push(i)
        continue
      }
      const built = yield* buildInto(committer, builder, lines, input, clock)
      if (Either.isLeft(built)) outcomes[i] = Exit.fail(built.left)
      else accepted.push({ at: i, answer: built.right })
    }
    if (accepted.length > 0) {
      const committed = yield* written(writer, lines, builder.added, builder.blobs)
      if (Exit.isSuccess(committed)) history.commit()
      else history.rollback()
      for (const { answer, at } of accepted) outcomes[at] = Exit.isSuccess(committed) ? Exit.succeed(answer) : committed
    }
    if (flushes.length > 0) {
      const refusedNow = writer.locked
      const flushed: Outcome = refusedNow !== undefined ? Exit.fail(refusedNow) : yield* written(writer, NOTHING, 0, [])
      for (const at of flushes) outcomes[at] = flushed
    }
    return outcomes
  }).pipe(
    // A defect must not leave entries of the batch behind; the group commit fails the batch with it.
    Effect.catchAllCause((cause) => Effect.zipRight(Effect.sync(() => committer.history.rollback()), Effect.failCause(cause)))
  )

/** The outcome of handing `lines` to the backend, told to the writer. */
const written = (
  writer: SessionWriter,
  lines: NewLines,
  added: number,
  blobs: ReadonlyArray<BlobBytes>
): Effect.Effect<Exit.Exit<void, AppendError>> =>
  Effect.map(Effect.exit(Tracing.leaf("SessionJournal.append", { session: writer.location, batch: lines.lines.length })(writer.write(lines, blobs))), (exit) => {
    if (Exit.isSuccess(exit)) writer.committed(added, blobs)
    else Option.map(Cause.failureOption(exit.cause), (error) => writer.failed(error))
    return exit
  })

/** A store over a session that `journalWriter` holds, whose accepted records are `header` and `loaded`. */
const assemble = (
  journal: SessionJournalService,
  location: string,
  header: Header,
  loaded: History,
  journalWriter: Writer,
  start: {
    readonly bytes: number | undefined
    readonly canonical: Lines | undefined
    readonly held: ReadonlyArray<string> | "canonical"
    readonly tail: "none" | "incomplete"
    readonly blobs?: ReadonlyMap<string, number> | undefined
  }
): Effect.Effect<SessionStore, never, Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const ids = yield* Ids
    const clock = yield* currentClock
    const lister = yield* SessionLister
    const history = new CommittedHistory(loaded)
    const closedError = () => sessionError("SESSION_IO", "the store's scope is closed", { path: location })
    const writer = new SessionWriter(location, journalWriter, header, history, lister, start)
    const committer: Committer = { history, writer, caps: capsOf(header.version), entryId: entryIdFrom(ids), now: timestampFrom(clock) }
    // Made after the backend's writer, so its scope closes first: nothing commits once the store's scope closes.
    const group = yield* GroupCommit.make({ commit: commitBatch(committer), closed: closedError })
    const flush = group.submit(FLUSH) as Effect.Effect<void, AppendError>
    const appends = appendsOf(location, header.version, journal.sha256 ?? defaultSha256, writer, group, closedError)
    return {
      location,
      header,
      get entries() {
        return history.entries
      },
      get tail() {
        return writer.tail
      },
      get: (id) => history.get(id),
      ...appends,
      flush: Effect.suspend(() => {
        const locked = writer.locked
        return locked !== undefined ? Effect.fail(locked) : flush
      }).pipe(Tracing.span("SessionStore.flush", { session: location, batch: 0 })),
      blob: (ref) => readBlob(journal, location, ref)
    } satisfies SessionStore
  })

/**
 * The appends of a store: each input checked and copied when the append is called (a parent given
 * then is checked first), then submitted to the group commit; or prepared now and appended later.
 */
const appendsOf = (
  location: string,
  version: 1 | 2,
  sha256: Sha256,
  writer: SessionWriter,
  group: GroupCommit.GroupCommit<Input, Answer, AppendError>,
  closedError: () => AppendError
): Pick<SessionStore, "append" | "appendEntry" | "appendChain" | "prepareMessage" | "prepareEntry" | "prepareChain" | "appendPrepared"> => {
  const refuse = (error: InputError): Effect.Effect<never, AppendError> =>
    Effect.flatMap(group.isClosed, (closed) => Effect.fail(writer.locked ?? (closed ? closedError() : error))).pipe(
      Tracing.leaf("SessionStore.append", { session: location })
    )
  const submit = <A>(parentId: string | null, prepared: PreparedAppend): Effect.Effect<A, AppendError> =>
    Effect.suspend(() => {
      const locked = writer.locked
      return locked !== undefined ? Effect.fail(locked) : group.submit({ parentId, prepared }) as Effect.Effect<A, AppendError>
    }).pipe(Tracing.leaf("SessionStore.append", { session: location, batch: prepared.contents.length }))
  const appendNow = <A>(parentId: unknown, prepare: () => Either.Either<PreparedAppend, InputError>): Effect.Effect<A, AppendError> => {
    const parent = checkParent(parentId)
    if (Either.isLeft(parent)) return refuse(parent.left)
    const prepared = prepare()
    return Either.isLeft(prepared) ? refuse(prepared.left) : submit(parent.right, prepared.right)
  }
  // What an append prepared by this store carries, so that no other store commits it.
  const identity = {}
  const message = (input: unknown) => Either.map(prepareMessage(input, version, sha256), (content) => preparedOf(identity, [content], false))
  const entry = (input: unknown) => Either.map(prepareBody(input, version, sha256), (content) => preparedOf(identity, [content], false))
  const chain = (input: unknown) => Either.map(prepareChain(input, version, sha256), (contents) => preparedOf(identity, contents, true))
  return {
    append: (parentId, input) => appendNow(parentId, () => message(input)),
    appendEntry: (parentId, input) => appendNow(parentId, () => entry(input)),
    appendChain: (parentId, bodies) => appendNow(parentId, () => chain(bodies)),
    prepareMessage: message as SessionStore["prepareMessage"],
    prepareEntry: entry as SessionStore["prepareEntry"],
    prepareChain: chain as SessionStore["prepareChain"],
    appendPrepared: <A>(parentId: string | null, prepared: Prepared<A>): Effect.Effect<A, AppendError> => {
      const own = prepared as unknown as PreparedAppend
      if (typeof own !== "object" || own === null || own.store !== identity) {
        return refuse(inputError("SESSION_INVALID_OPTIONS", "the append was prepared by another store"))
      }
      return appendNow(parentId, () => Either.right(own))
    }
  }
}

/** Runs `use` with a scope of its own inside the caller's, closed at once if `use` fails. */
const withChildScope = <A, E, R>(
  use: (scope: Scope.Scope) => Effect.Effect<A, E, R>
): Effect.Effect<A, E, R | Scope.Scope> =>
  Effect.flatMap(Scope.Scope, (parent) =>
    Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Scope.fork(parent, ExecutionStrategy.sequential), (child) =>
        Effect.onExit(restore(use(child)), (exit) => Exit.isFailure(exit) ? Scope.close(child, exit) : Effect.void))))

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
    const required = requiredId(journal, location)
    const id = yield* (given !== undefined
      ? validId("session", given).pipe(
        Effect.mapError(() => sessionError("SESSION_INVALID_HEADER", "the session ID must be a non-empty string"))
      )
      : required !== undefined
      ? Effect.succeed(required)
      : Effect.flatMap(Ids, (ids) => catchDefects("the ID factory", Effect.flatMap(ids.sessionId, (id) => validId("session", id)))))
    const wrong = wrongId(location, required, id)
    if (wrong !== undefined) return yield* wrong
    return id
  })

/** Why `id` cannot name a session at `location`, where the backend requires `required`. */
const wrongId = (location: string, required: string | undefined, id: string): SessionError | undefined =>
  required !== undefined && id !== required
    ? sessionError("SESSION_INVALID_HEADER", `a session at "${location}" must have the ID "${required}"`)
    : undefined

/** What a new session's header holds besides its ID and time. */
export interface HeaderOptions {
  /** The format version: 2 unless 1 is asked for. */
  readonly version?: 1 | 2 | undefined
  /** Where a fork came from (version 2 only). */
  readonly forkedFrom?: V2.ForkedFrom | undefined
}

/** A new header with this ID, stamped now. */
export const newHeader = (id: string, options?: HeaderOptions): Effect.Effect<Header, SessionError> =>
  Effect.flatMap(currentClock, (clock) =>
    Effect.flatMap(timestampNow(clock), (timestamp): Effect.Effect<Header, SessionError> => {
      const version = options?.version ?? V2.VERSION
      if (version !== 1 && version !== 2) {
        return Effect.fail(sessionError("SESSION_UNSUPPORTED_VERSION", `version ${String(version)} is not a format version (1 or 2)`))
      }
      const forkedFrom = options?.forkedFrom
      if (version === 1) {
        return forkedFrom === undefined
          ? Effect.succeed(Object.freeze({ type: "session", version: 1, id, timestamp }))
          : Effect.fail(sessionError("SESSION_UNSUPPORTED_VERSION", "a version-1 header cannot say where a fork came from"))
      }
      if (forkedFrom === undefined) return Effect.succeed(Object.freeze({ type: "session", version: 2, id, timestamp }))
      return V2.decodeHeader({ type: "session", version: 2, id, timestamp, forkedFrom }, 1)
    }))

export const create = (
  location: string,
  options?: CreateOptions
): Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const journal = yield* SessionJournal
    const id = yield* newSessionId(journal, location, options?.id)
    const header = yield* Effect.mapError(newHeader(id, options), asInput)
    const line = encodeRecord(header)
    const size = utf8Length(line)
    if (size > capsOf(header.version).lineBytes) {
      return yield* sessionError("SESSION_LINE_TOO_LONG", "the header line would be too long")
    }
    const lines: Lines = { lines: [line], sizes: [size] }
    const lister = yield* SessionLister
    // Uninterruptible from the backend's first resource to the finalizer that owns it.
    return yield* Effect.uninterruptible(withChildScope((scope) =>
      Effect.flatMap(
        Scope.extend(journal.create(location, { ...lines, ids: [], listing: listingOf(lister, { header, entries: [] }) }), scope),
        (created) =>
          Scope.extend(
            assemble(journal, created.location, header, new History(), created.writer, { bytes: size + 1, canonical: lines, held: "canonical", tail: "none" }),
            scope
          )
      )
    ))
  }).pipe(Tracing.span("SessionStore.create", { session: location }))

/**
 * Stores a whole session at once (a fork, an import): its canonical lines, validated exactly as a
 * load validates them, so no backend ever holds what the loader would refuse. `blobs` are the
 * blobs its entries refer to, stored with it. Holds nothing afterwards.
 */
export const createWhole = (
  journal: SessionJournalService,
  location: string,
  header: Header,
  entries: ReadonlyArray<Entry>,
  blobs: ReadonlyArray<NewBlob> = []
): Effect.Effect<{ readonly location: string; readonly header: Header; readonly entries: ReadonlyArray<Entry> }, SessionError> =>
  Effect.flatMap(SessionLister, (lister) => {
    const lines = encodeAll([header, ...entries])
    const checked = decodeLines({ ...lines, tail: "none", blobs: new Map(blobs.map((blob) => [blob.hash, blob.size])) })
    if (Either.isLeft(checked)) return Effect.fail(checked.left)
    const decoded = checked.right
    const wrong = wrongId(location, requiredId(journal, location), header.id)
    if (wrong !== undefined) return Effect.fail(wrong)
    return Effect.scoped(Effect.map(
      journal.create(location, {
        lines: lines.lines,
        sizes: lines.sizes,
        ids: entries.map((entry) => entry.id),
        listing: listingOf(lister, { header: decoded.header, entries: decoded.history.entries }),
        ...(blobs.length > 0 ? { blobs } : {})
      }),
      (created) => ({ location: created.location, header: decoded.header, entries: decoded.history.entries })
    ))
  }).pipe(Tracing.span("SessionStore.createWhole", { session: location, batch: entries.length }))

/**
 * Loads the session at `location` and holds it until the scope closes. Interruptible: the backend
 * takes each resource it holds uninterruptibly, in a scope of the load's own that an interruption
 * or failure closes, so a load stopped anywhere leaves nothing held.
 */
export const load = (
  location: string,
  options?: LoadOptions
): Effect.Effect<SessionStore, ReadError, SessionJournal | Ids | Scope.Scope> =>
  Effect.flatMap(SessionJournal, (journal) =>
    withChildScope((scope) =>
      Effect.flatMap(Scope.extend(journal.hold(location), scope), (held) => {
        const checked = decode(journal, held)
        if (Either.isLeft(checked)) return Effect.fail(checked.left)
        const decoded = checked.right
        const wanted = options?.version
        if (wanted !== undefined && decoded.header.version !== wanted) {
          return Effect.fail(sessionError(
            "SESSION_UNSUPPORTED_VERSION",
            `header version ${decoded.header.version} is not supported here (version ${wanted} only)`,
            { line: 1, path: held.location }
          ))
        }
        return Scope.extend(
          assemble(journal, held.location, decoded.header, decoded.history, held.writer, {
            bytes: undefined,
            canonical: undefined,
            held: held.lines,
            tail: held.tail,
            blobs: held.blobs
          }),
          scope
        )
      })
    )).pipe(Tracing.span("SessionStore.load", { session: location }))

export const open = (
  location: string,
  options?: CreateOptions
): Effect.Effect<SessionStore, SessionError, SessionJournal | Ids | Scope.Scope> => {
  const only: LoadOptions | undefined = options?.version === undefined ? undefined : { version: options.version }
  return load(location, only).pipe(
    catchCode("SESSION_NOT_FOUND", () => create(location, options).pipe(catchCode("SESSION_EXISTS", () => load(location, only)))),
    Tracing.span("SessionStore.open", { session: location })
  )
}

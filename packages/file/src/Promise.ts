/**
 * The Promise facade of the session store, the tree and the many sessions of a
 * directory, for code outside Effect, on session files. It only runs the Effect
 * API: every rule lives in `@session-tree/core` and the file backend.
 *
 * - `SessionStore`: create (optionally with a session ID), load, open (load, or
 *   create when missing), read (without holding anything), append, flush, close.
 * - `SessionTree`: the branch navigation over a store.
 * - `Sessions`: list a directory, the latest session, fork, read, delete, export
 *   the canonical JSONL, import a file (this project's session, a Pi session, a
 *   Claude Code transcript or a Codex rollout, the format detected from its
 *   content), sync a tree of transcripts into a directory, search the sessions
 *   of a directory, sum their usage.
 *
 * Each store owns a Scope that holds its file and directory open; `close()`
 * releases them, and a store that is dropped without `close()` is released when
 * it is garbage-collected. Failures reject with `SessionError`, an `Error` whose
 * `code` is one of the codes listed in the README.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Either from "effect/Either"
import * as Scope from "effect/Scope"
import * as NodeUtil from "node:util"
import type { Ids } from "@session-tree/core/Ids"
import * as Options from "@session-tree/core/Options"
import * as PiSession from "@session-tree/core/PiSession"
import type * as Search from "@session-tree/core/Search"
import type * as Stats from "@session-tree/core/Stats"
import type * as RecordV2 from "@session-tree/core/RecordV2"
import type { AnyMessage, CourseMessage, Entry, Header, Message, SessionEntry, SessionHeader } from "@session-tree/core/Record"
import * as Errors from "@session-tree/core/SessionError"
import * as CoreSessions from "@session-tree/core/Sessions"
import * as Core from "@session-tree/core/SessionStore"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Tree from "@session-tree/core/SessionTree"
import * as Import from "@session-tree/core/Import"
import * as Sync from "@session-tree/core/Sync"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileJournal from "./FileJournal.js"
import * as Recovery from "./Recovery.js"
import * as SyncFiles from "./SyncFiles.js"
import * as Files from "./Files.js"
import { type Fs, Fs as FsTag } from "./Fs.js"

/**
 * What every promise of this module rejects with: the library's error as one `Error` class, so that
 * code outside Effect can use `instanceof` and read `code`. `kind` says who must act (the class of
 * the Effect API's error: `InputError`, `CorruptError`, `ConflictError`, `IoError`, `LockedError`),
 * and `cause` is that error itself.
 *
 * @since 0.1.0
 * @category errors
 */
export class SessionError extends Error {
  readonly code: Errors.SessionErrorCode
  readonly kind: Errors.SessionErrorTag
  readonly line?: number
  readonly path?: string
  constructor(error: Errors.SessionError) {
    super(error.message, { cause: error })
    this.name = "SessionError"
    this.code = error.code
    this.kind = error._tag
    if (error.line !== undefined) this.line = error.line
    if (error.path !== undefined) this.path = error.path
  }
}

/** The facade's error for any failure of the library; anything else (a defect, a bug) as itself. */
const toFacade = (failure: unknown): unknown => Errors.isSessionError(failure) ? new SessionError(failure) : failure

const sessionError = Errors.sessionError
/**
 * The record types the facade reads and writes.
 *
 * @since 0.1.0
 * @category reexports
 */
export type { AnyMessage, CourseMessage, Entry, Header, Message, SessionEntry, SessionHeader }
/**
 * What a lossy Pi import dropped.
 *
 * @since 0.1.0
 * @category reexports
 */
export type { Dropped } from "@session-tree/core/PiSession"
/**
 * The shapes of a listing and of records to import.
 *
 * @since 0.1.0
 * @category reexports
 */
export type { Listed, ListingPage, Records, Summary, Unreadable } from "@session-tree/core/Sessions"
/**
 * What a search finds.
 *
 * @since 0.2.0
 * @category reexports
 */
export type { Hit, SearchOptions, SearchResult, Snippet } from "@session-tree/core/Search"
/**
 * What usage sums.
 *
 * @since 0.2.0
 * @category reexports
 */
export type { StatsOptions, StatsResult, StatsRow, Totals } from "@session-tree/core/Stats"
/**
 * What a read-only load finds.
 *
 * @since 0.1.0
 * @category reexports
 */
export type { Loaded } from "@session-tree/core/SessionStore"

/**
 * Whether a listed session is one that does not load (it then holds `error` instead of a summary).
 *
 * @since 0.1.0
 * @category guards
 */
export const isUnreadable: (listed: CoreSessions.Listed) => listed is CoreSessions.Unreadable = CoreSessions.isUnreadable

/**
 * `now`: epoch milliseconds for timestamps; `createId`: entry IDs (the core's options, the one
 * definition). Session IDs are random UUIDs unless `create` is given one.
 *
 * @since 0.1.0
 * @category models
 */
export type SessionOptions = Options.SessionOptions

/**
 * `SessionOptions`, `id`: the new session's ID (a random UUID by default), and `version`: the
 * format, 2 (the agent format) unless 1 (the course format) is asked for.
 *
 * @since 0.1.0
 * @category models
 */
export interface CreateOptions extends Options.SessionOptions {
  readonly id?: string
  readonly version?: 1 | 2
}

/**
 * `SessionOptions`, and `version`: the only format version to accept (any by default).
 *
 * @since 0.1.0
 * @category models
 */
export interface LoadOptions extends Options.SessionOptions {
  readonly version?: 1 | 2
}

/** What the facade takes out of the options before the rest is validated as `SessionOptions`. */
interface Own {
  readonly id: string | undefined
  readonly version: 1 | 2 | undefined
}

/**
 * Splits `id` and `version` off the options, reading only own data properties (no getter or trap
 * runs); the rest is validated with the other options.
 */
const splitOwn = (options: unknown): Either.Either<{ readonly own: Own; readonly rest: unknown }, Errors.InputError> => {
  const none: Own = { id: undefined, version: undefined }
  if (typeof options !== "object" || options === null || NodeUtil.types.isProxy(options)) {
    return Either.right({ own: none, rest: options })
  }
  const id = Object.getOwnPropertyDescriptor(options, "id")
  const version = Object.getOwnPropertyDescriptor(options, "version")
  if (id === undefined && version === undefined) return Either.right({ own: none, rest: options })
  for (const [key, d] of [["id", id], ["version", version]] as const) {
    if (d !== undefined && !("value" in d)) {
      return Either.left(sessionError("SESSION_INVALID_OPTIONS", `option ${key} is an accessor, not a data property`))
    }
  }
  if (id?.value !== undefined && typeof id.value !== "string") {
    return Either.left(sessionError("SESSION_INVALID_OPTIONS", "option id must be a string"))
  }
  if (version?.value !== undefined && version.value !== 1 && version.value !== 2) {
    return Either.left(sessionError("SESSION_INVALID_OPTIONS", "option version must be 1 or 2"))
  }
  const descriptors = Object.getOwnPropertyDescriptors(options) as Record<PropertyKey, PropertyDescriptor>
  delete descriptors["id"]
  delete descriptors["version"]
  return Either.right({
    own: { id: id?.value as string | undefined, version: version?.value as 1 | 2 | undefined },
    rest: Object.create(Object.getPrototypeOf(options), descriptors)
  })
}

/** Runs `use` with the split options, or rejects with why they are refused. */
const withOwn = <A>(options: unknown, use: (own: Own, rest: SessionOptions | undefined) => Promise<A>): Promise<A> =>
  Either.match(splitOwn(options), {
    onLeft: (error) => Promise.reject(toFacade(error)),
    onRight: ({ own, rest }) => use(own, rest as SessionOptions | undefined)
  })

/** Resolves with the value, or rejects with the SessionError (a defect, a bug, rejects as itself). */
const run = <A>(effect: Effect.Effect<A, Errors.SessionError>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) =>
    Exit.isSuccess(exit) ? exit.value : Promise.reject(toFacade(Cause.squash(exit.cause)))
  )

const release = (scope: Scope.CloseableScope) => Scope.close(scope, Exit.void)

/**
 * Closes the scope of a store that was dropped without `close()` once it is collected. One for
 * the process: a registry must outlive the objects it watches.
 */
const registry = new FinalizationRegistry<Scope.CloseableScope>((scope) => {
  Effect.runFork(release(scope))
})

/** The core store a facade store runs, read by the tree of this module only (a symbol no caller can name). */
const CORE = Symbol("@session-tree/file/Promise/core")

/** Builds a store in a scope of its own, closed at once when the build fails and by `close` otherwise. */
const acquire = async <S extends SessionStore>(
  make: new(core: Core.SessionStore, scope: Scope.CloseableScope) => S,
  path: string,
  options: SessionOptions | undefined,
  build: (path: string) => Effect.Effect<Core.SessionStore, Errors.SessionError, SessionJournal | Scope.Scope | Ids>
): Promise<S> => {
  const scope = Effect.runSync(Scope.make())
  const acquiring = build(path).pipe(
    Scope.extend(scope),
    Effect.provide(Layer.merge(FileJournal.layerWithFs(), Options.layer(options))),
    Effect.onError(() => release(scope))
  )
  return new make(await run(acquiring), scope)
}

/** The class a static constructor of `SessionStore` was called on (a subclass builds its own instances). */
type StoreClass<S extends SessionStore> = new(core: Core.SessionStore, scope: Scope.CloseableScope) => S

/**
 * One session file, held open for appending. Get one with `create`, `load` or `open`; release it with `close`.
 *
 * @since 0.1.0
 * @category facade
 */
export class SessionStore {
  /**
   * Creates a new session file holding only its header; SESSION_EXISTS if the path exists.
   * `options.id` names the session (a random UUID by default).
   */
  static create<S extends SessionStore>(this: StoreClass<S>, path: string, options?: CreateOptions): Promise<S> {
    return withOwn(options, (own, rest) => acquire(this ?? SessionStore, path, rest, (p) => Core.create(p, own)))
  }

  /** Loads an existing session file for appending; `options.version` accepts only that format version. */
  static load<S extends SessionStore>(this: StoreClass<S>, path: string, options?: LoadOptions): Promise<S> {
    return withOwn(options, (own, rest) => acquire(this ?? SessionStore, path, rest, (p) => Core.load(p, own)))
  }

  /**
   * Loads the session file at `path` for appending, creating it (with a random session ID, and
   * `options.version`) when nothing is there.
   */
  static open<S extends SessionStore>(this: StoreClass<S>, path: string, options?: LoadOptions): Promise<S> {
    return withOwn(options, (own, rest) => acquire(this ?? SessionStore, path, rest, (p) => Core.open(p, own)))
  }

  /**
   * Loads a session file read-only: it never writes, holds nothing afterwards and needs no
   * `close`, e.g. for a viewer. A skipped incomplete tail shows as `tail: "incomplete"`.
   */
  static read(path: string): Promise<Core.Loaded> {
    return run(Core.read(path).pipe(Effect.provide(FileJournal.layerWithFs())))
  }

  readonly #core: Core.SessionStore
  readonly #scope: Scope.CloseableScope
  #closed = false

  /** @internal use `create` or `load`. */
  constructor(core: Core.SessionStore, scope: Scope.CloseableScope) {
    this.#core = core
    this.#scope = scope
    registry.register(this, scope, this)
  }

  /** @internal the core store, for `SessionTree`. */
  get [CORE](): Core.SessionStore {
    return this.#core
  }

  /** The absolute path of the session file. */
  get path(): string {
    return this.#core.location
  }

  get header(): Header {
    return this.#core.header
  }

  /** Frozen, commit order; the very objects `append` resolved with. */
  get entries(): ReadonlyArray<Entry> {
    return this.#core.entries
  }

  /** Whether the loaded file ended in a skipped incomplete tail that no commit has removed yet. */
  get tail(): "none" | "incomplete" {
    return this.#core.tail
  }

  /** The entry with this ID, or undefined. */
  get(id: string): Entry | undefined {
    return this.#core.get(id)
  }

  /**
   * Appends one message under `parentId` (null: a new root); resolves once the entry is durable.
   * Message IR of the session's version (a version-1 message to a version-2 session is stored in its version-2 form).
   */
  append(parentId: string | null, message: AnyMessage): Promise<Entry> {
    return run(this.#core.append(parentId, message))
  }

  /** Appends one entry of any kind under `parentId` (version 2): `body` holds `kind` first, then that kind's keys. */
  appendEntry(parentId: string | null, body: RecordV2.Body): Promise<Entry> {
    return run(this.#core.appendEntry(parentId, body))
  }

  /** Commits the canonical generation of what is accepted, with no new entry; a no-op when the file already holds it. */
  flush(): Promise<void> {
    return run(this.#core.flush)
  }

  /** Releases the file and directory once any commit in flight is done; later appends and flushes reject (SESSION_IO). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    registry.unregister(this)
    await run(release(this.#scope))
  }
}


/**
 * The branches of a store: the active leaf, the root→leaf path, and appends that continue it.
 *
 * @since 0.1.0
 * @category facade
 */
export class SessionTree {
  readonly #tree: Tree.SessionTree
  // The tree keeps its SessionStore reachable: the store's scope closes when the store is collected.
  readonly #store: SessionStore

  constructor(store: SessionStore) {
    if (!(store instanceof SessionStore)) throw toFacade(sessionError("SESSION_INVALID_OPTIONS", "SessionTree needs a SessionStore"))
    this.#store = store
    this.#tree = Effect.runSync(Tree.make(store[CORE]))
  }

  /** The store this tree appends through. */
  get store(): SessionStore {
    return this.#store
  }

  get activeLeafId(): string | null {
    return this.#tree.activeLeafId
  }

  get entries(): ReadonlyArray<Entry> {
    return this.#tree.entries
  }

  /** The root→leaf path: entries of every kind. */
  get activeEntries(): ReadonlyArray<Entry> {
    return this.#tree.activeEntries
  }

  /** The messages of the root→leaf path. */
  get activeMessages(): ReadonlyArray<AnyMessage> {
    return this.#tree.activeMessages
  }

  /** Changes only the in-memory leaf; null selects the position of a new root. */
  moveTo(id: string | null): Promise<void> {
    return run(this.#tree.moveTo(id))
  }

  /** Appends under the active leaf and makes the new entry the active leaf. */
  append(message: AnyMessage): Promise<Entry> {
    return run(this.#tree.append(message))
  }

  /** Appends an entry of any kind under the active leaf (version 2) and makes it the active leaf. */
  appendEntry(body: RecordV2.Body): Promise<Entry> {
    return run(this.#tree.appendEntry(body))
  }

  /** Appends a chain of entries under the active leaf in one commit, all or none; the last becomes the active leaf. */
  appendChain(bodies: ReadonlyArray<RecordV2.Body>): Promise<ReadonlyArray<Entry>> {
    return run(this.#tree.appendChain(bodies))
  }

  /** Labels an earlier entry (null removes its label). */
  label(targetId: string, label: string | null): Promise<Entry> {
    return run(this.#tree.label(targetId, label))
  }

  /** Names the session. */
  setTitle(title: string): Promise<Entry> {
    return run(this.#tree.setTitle(title))
  }

  /** Records a change of model on this branch. */
  setModel(model: { readonly provider: string; readonly model: string; readonly thinking?: string }): Promise<Entry> {
    return run(this.#tree.setModel(model))
  }

  /** Stores an extension's data on this branch. */
  custom(customType: string, data: unknown): Promise<Entry> {
    return run(this.#tree.custom(customType, data))
  }

  /** Records a compaction: what came before `firstKeptEntryId` is replaced by `summary` in the context. */
  compact(compaction: { readonly summary: string; readonly firstKeptEntryId: string | null; readonly tokensBefore?: number }): Promise<Entry> {
    return run(this.#tree.compact(compaction))
  }

  /** The entries whose parent is `id` (null: the roots), in commit order. */
  children(id: string | null): ReadonlyArray<Entry> {
    return this.#tree.children(id)
  }

  /** The entries without children, in commit order. */
  get leaves(): ReadonlyArray<Entry> {
    return this.#tree.leaves
  }

  /** The root→`id` path; empty when `id` is not in the tree. */
  pathTo(id: string): ReadonlyArray<Entry> {
    return this.#tree.pathTo(id)
  }
}

/**
 * What `Sessions.import` reads.
 *
 * @since 0.1.0
 * @category models
 */
export interface ImportOptions {
  /**
   * The format of the file: this project's, a Pi coding-agent session (format 3), a Claude Code
   * transcript or a Codex rollout. Detected from the content when not given.
   */
  from?: "session-tree" | "pi" | "claude" | "codex"
  /** Pi only: 1 converts to the course format, refusing what Message IR v1 cannot hold; version 2 (the default) keeps everything. */
  version?: 1 | 2
  /** Pi only: a version-1 session, dropping what Message IR cannot hold (images, thinking, summaries) instead of refusing the file. */
  lossy?: boolean
  /** Pi, Claude Code, Codex: store every line that has no place in version 2 as a `custom` entry `<format>:<kind>`. */
  keepAll?: boolean
  /** Pi, Claude Code, Codex: import around damaged lines, each kept in the session and listed in `damaged`. */
  skipDamaged?: boolean
}

/**
 * What an import stored, and what it did not or could not store.
 *
 * @since 0.1.0
 * @category models
 */
export interface Imported {
  /** The file's own session. */
  readonly session: CoreSessions.Summary
  /** The sessions of the subagents whose lines the file holds (Claude Code sidechains), beside `to`. */
  readonly subagents: ReadonlyArray<CoreSessions.Summary>
  /** What a lossy Pi import dropped (all zero otherwise). */
  readonly dropped: PiSession.Dropped
  /** Lines not stored, per kind; lines kept whole (`keepAll`), per kind. */
  readonly skipped: Readonly<Record<string, number>>
  readonly kept: Readonly<Record<string, number>>
  /** Damaged lines kept aside (`skipDamaged`), and a last line left out because it was cut short. */
  readonly damaged: ReadonlyArray<Import.Damaged>
  readonly torn: Import.TornLine | undefined
}

/**
 * What `Sessions.sync` takes besides its sources and directory (see `Sync.SyncOptions`).
 *
 * @since 0.2.0
 * @category models
 */
export interface SyncOptions {
  keepAll?: boolean
  skipDamaged?: boolean
  /** How long a source must be unchanged for a response whose blocks may still arrive to be stored; default 10,000 ms. */
  quietMs?: number
}

/** The most a Pi session file may hold: images make them large, and a lossy import drops those. */
const MAX_PI_FILE_BYTES = 256 * 1024 * 1024

/** The names of the files beside `file` (none when its directory cannot be read): where a subagent's parent rollout may be. */
const siblings = (file: string) => Effect.flatMap(FsTag, (fs) => fs.readdir(Path.dirname(Path.resolve(file)))).pipe(Effect.orElseSucceed((): ReadonlyArray<string> => []))

const NOTHING_DROPPED: PiSession.Dropped = {
  images: 0,
  thinking: 0,
  compactions: 0,
  branchSummaries: 0,
  customMessages: 0,
  bashExecutions: 0
}


/**
 * The session files of any directory: list, fork, read, delete, export and import. One instance keeps
 * its listing cache, so a repeated listing reads again only the files that changed.
 * `options` (`now`, `createId`) set the clock and entry IDs of what it writes, as for a store;
 * an invalid one throws SESSION_INVALID_OPTIONS.
 *
 * @since 0.1.0
 * @category facade
 */
export class Sessions {
  readonly #service: CoreSessions.SessionsService
  readonly #live: Layer.Layer<SessionJournal | SessionCatalog | Fs | Ids | Options.CallerClock>

  constructor(options?: SessionOptions) {
    const valid = Options.validate(options)
    if (Either.isLeft(valid)) throw toFacade(valid.left)
    this.#live = Layer.merge(FileJournal.layerWithFs(), Options.layerValid(valid.right))
    this.#service = Effect.runSync(CoreSessions.make.pipe(Effect.provide(this.#live)))
  }

  /**
   * A page of the session files (`*.jsonl`) of `options.directory` (the current one by
   * default), newest change first. A file that does not load is listed with its error
   * (`isUnreadable`), never skipped.
   */
  list(options?: CoreSessions.ListOptions): Promise<CoreSessions.ListingPage> {
    return this.#run((s) => s.list(options))
  }

  /** The most recently changed session of a directory; SESSION_NOT_FOUND when it holds none. */
  latest(dir?: string): Promise<CoreSessions.Listed> {
    return this.#run((s) => s.latest(dir))
  }

  /** Loads a session file read-only (as `SessionStore.read`). */
  read(path: string): Promise<Core.Loaded> {
    return this.#run((s) => s.read(path))
  }

  /**
   * Creates `target` holding exactly the root→`leaf` path of `source` (the same entry IDs,
   * parents, timestamps and messages) under a new header; `source` is not changed.
   * SESSION_UNKNOWN_ENTRY when `leaf` is not in the source, SESSION_EXISTS when `target` is taken.
   */
  fork(source: string, leaf: string, target: string, options?: { readonly id?: string; readonly version?: 1 | 2 }): Promise<CoreSessions.Summary> {
    return this.#run((s) => s.fork(source, leaf, target, options))
  }

  /**
   * Deletes the session file at `path` whole, with its blob directory (see `docs/format.md`,
   * "Deleting a session"); resolves with its absolute path. SESSION_NOT_FOUND when there is none.
   */
  delete(path: string): Promise<string> {
    return this.#run((s) => s.delete(path))
  }

  /**
   * The canonical JSONL of a session, byte for byte what a commit writes. The Markdown and HTML
   * views of a session are in `@session-tree/view`.
   */
  exportJsonl(path: string): Promise<string> {
    return this.#run((s) => s.exportJsonl(path))
  }

  /**
   * Stores the session in `file` as a new session file at `to` that keeps its header, validated as
   * a load validates; SESSION_EXISTS when `to` is taken. The format is detected from the content
   * (SESSION_UNKNOWN_FORMAT when it is none read) unless `from` says it: a Pi session, a Claude
   * Code transcript or a Codex rollout becomes version 2 (`docs/import.md`), its subagents'
   * sessions beside `to` (`<to without .jsonl>.<…>.jsonl`, all stored or none); with `version: 1`
   * or `lossy` a Pi session becomes version 1, as `PiSession.fromPi` converts it.
   */
  import(file: string, to: string, options?: ImportOptions): Promise<Imported> {
    const lossy = options?.lossy ?? false
    return this.#run((s) =>
      Effect.gen(function*() {
        const bytes = yield* Files.readBytes(file, MAX_PI_FILE_BYTES)
        const from = options?.from ?? (yield* Import.detect(bytes))
        const nothing = { subagents: [], skipped: {}, kept: {}, damaged: [], torn: undefined }
        if ((lossy || options?.version === 1) && from !== "pi") return yield* sessionError("SESSION_INVALID_OPTIONS", "lossy and version 1 apply to imports from pi only")
        if (lossy || options?.version === 1) {
          const converted = yield* PiSession.fromPi(bytes, { lossy })
          return { ...nothing, session: yield* s.import(converted, to), dropped: converted.dropped }
        }
        if (from === "session-tree") return { ...nothing, session: yield* s.import(yield* FileJournal.readSession(file), to), dropped: NOTHING_DROPPED }
        const convertOptions = { from, keepAll: options?.keepAll, skipDamaged: options?.skipDamaged }
        let imported = yield* Import.convert(bytes, convertOptions)
        // A subagent's file: its parent's transcript (where Claude Code keeps it, a Codex rollout beside it) names the call that started it.
        const parent = Import.parentToFind(imported)
        if (parent !== undefined) {
          for (const candidate of Import.parentPaths(Path.resolve(file).split(Path.sep).join("/"), parent, yield* siblings(file))) {
            // Not there: looked for elsewhere; there but unreadable: the import fails, naming it.
            const parentBytes = yield* Files.readBytes(candidate, MAX_PI_FILE_BYTES).pipe(
              Effect.catchIf((e) => e.code === "SESSION_NOT_FOUND" || e.code === "SESSION_NOT_REGULAR_FILE", () => Effect.succeed(undefined))
            )
            if (parentBytes === undefined) continue
            imported = yield* Import.convert(bytes, { ...convertOptions, parent: parentBytes })
            break
          }
        }
        const stem = to.endsWith(".jsonl") ? to.slice(0, -".jsonl".length) : to
        const [own, ...subagents] = imported.sessions
        const made: Array<CoreSessions.Summary> = []
        for (const session of [own!, ...subagents]) {
          const id = session.header.id
          const suffix = id.startsWith(`${own!.header.id}.`) ? id.slice(own!.header.id.length + 1) : id
          const at = session === own ? to : Path.join(Path.dirname(stem), Sync.fileName(`${Path.basename(stem)}.${suffix}`))
          const stored = yield* Effect.either(s.import(session, at))
          if (Either.isLeft(stored)) {
            for (const summary of made) yield* Effect.ignore(s.delete(summary.location))
            return yield* stored.left
          }
          made.push(stored.right)
        }
        const [session, ...rest] = made
        return { session: session!, subagents: rest, dropped: NOTHING_DROPPED, skipped: imported.skipped, kept: imported.kept, damaged: imported.damaged, torn: imported.torn }
      })
    )
  }

  /**
   * The entries of the session files of `options.directory` (the current one by default) that
   * match `options.query`: words and "quoted phrases", all required, without case, in message
   * text, tool arguments and results; newest first, a page of `options.limit` (50) hits and how
   * many there are. Filters: `roles`, `models`, `since`, `until`, `sessions`. See `Search`.
   */
  search(options: Search.SearchOptions): Promise<Search.SearchResult> {
    return this.#run((s) => s.search(options))
  }

  /**
   * The usage (`meta.usage`: tokens, and the cost where the usage carries it) of the session
   * files of `options.directory`, in all and, with `options.by`, per day, model or session. See `Stats`.
   */
  stats(options?: Stats.StatsOptions): Promise<Stats.StatsResult> {
    return this.#run((s) => s.stats(options))
  }

  /**
   * Syncs every transcript under `sources` (files or directories) into `dir` (`docs/sync.md`): one
   * session file each, named by its ID; a rerun appends only what is new. Resolves with the report
   * of each source (a source that changed where it was imported, or failed, is in it with its error).
   */
  sync(sources: ReadonlyArray<string>, dir: string, options?: SyncOptions): Promise<Sync.SyncReport> {
    const target = Path.resolve(dir)
    return this.#run(() =>
      Effect.gen(function*() {
        const fs = yield* FsTag
        yield* Effect.sync(() => NFS.mkdirSync(target, { recursive: true }))
        return yield* Sync.sync(sources, {
          locate: (id) => Path.join(target, Sync.fileName(id)),
          exclude: [target],
          keepAll: options?.keepAll,
          skipDamaged: options?.skipDamaged,
          quietMs: options?.quietMs,
          recover: (location) => Effect.provideService(Recovery.recover(location), FsTag, fs)
        }).pipe(Effect.provideService(Sync.SyncFiles, SyncFiles.make(fs, { state: Path.join(target, SyncFiles.STATE_FILE) })))
      }).pipe(Effect.provideService(CoreSessions.Sessions, this.#service))
    )
  }

  /** Stores `records` (a header and its entries) as a new session file at `to`, validated as a load validates. */
  importRecords(records: CoreSessions.Records, to: string, options?: { readonly version?: 1 | 2 }): Promise<CoreSessions.Summary> {
    return this.#run((s) => s.import(records, to, options))
  }

  #run<A>(f: (sessions: CoreSessions.SessionsService) => Effect.Effect<A, Errors.SessionError, Fs>): Promise<A> {
    return run(Effect.suspend(() => f(this.#service)).pipe(Effect.provide(this.#live)))
  }
}

/**
 * The Promise facade of the session store and tree (SPEC B7), for code outside
 * Effect, on session files. It only runs the Effect API: every rule lives in
 * `@session-tree/core` and the file backend.
 *
 * Each store owns a Scope that holds its file and directory open; `close()`
 * releases them, and a store that is dropped without `close()` is released when
 * it is garbage-collected. Failures reject with `SessionError`, an `Error` whose
 * `code` is one of SPEC B4.
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import type { Ids } from "@session-tree/core/Ids"
import * as Options from "@session-tree/core/Options"
import type { CourseMessage, SessionEntry, SessionHeader } from "@session-tree/core/Record"
import { SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Core from "@session-tree/core/SessionStore"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Tree from "@session-tree/core/SessionTree"
import * as FileJournal from "./FileJournal.js"

export { SessionError }
export type { CourseMessage, SessionEntry, SessionHeader }

/** `now`: epoch milliseconds for timestamps; `createId`: entry IDs. Session IDs are random UUIDs. */
export interface SessionOptions {
  now?: () => number
  createId?: () => string
}

/** Resolves with the value, or rejects with the SessionError (a defect, a bug, rejects as itself). */
const run = <A>(effect: Effect.Effect<A, SessionError>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) =>
    Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause))
  )

interface Internal {
  readonly core: Core.SessionStore
  readonly scope: Scope.CloseableScope
  closed: boolean
}

const internals = new WeakMap<SessionStore, Internal>()

const release = (scope: Scope.CloseableScope) => Scope.close(scope, Exit.void)
const registry = new FinalizationRegistry<Scope.CloseableScope>((scope) => {
  Effect.runFork(release(scope))
})

const open = async (
  path: string,
  options: SessionOptions | undefined,
  build: (path: string) => Effect.Effect<Core.SessionStore, SessionError, SessionJournal | Scope.Scope | Ids>
): Promise<SessionStore> => {
  const scope = Effect.runSync(Scope.make())
  const opened = build(path).pipe(
    Scope.extend(scope),
    Effect.provide(Layer.merge(FileJournal.layerWithFs(), Options.layer(options))),
    Effect.onError(() => release(scope))
  )
  return new SessionStore(await run(opened), scope)
}

export class SessionStore {
  /** Creates a new session file holding only its header; SESSION_EXISTS if the path exists. */
  static create(path: string, options?: SessionOptions): Promise<SessionStore> {
    return open(path, options, (p) => Core.create(p))
  }

  /** Loads an existing session file for appending. */
  static load(path: string, options?: SessionOptions): Promise<SessionStore> {
    return open(path, options, Core.load)
  }

  /** @internal use `create` or `load`. */
  constructor(core: Core.SessionStore, scope: Scope.CloseableScope) {
    internals.set(this, { core, scope, closed: false })
    registry.register(this, scope, this)
  }

  /** The absolute path of the session file. */
  get path(): string {
    return internals.get(this)!.core.location
  }

  get header(): SessionHeader {
    return internals.get(this)!.core.header
  }

  /** Frozen, commit order; the very objects `append` resolved with. */
  get entries(): ReadonlyArray<SessionEntry> {
    return internals.get(this)!.core.entries
  }

  append(parentId: string | null, message: CourseMessage): Promise<SessionEntry> {
    return run(internals.get(this)!.core.append(parentId, message))
  }

  /** Commits the canonical generation of what is accepted, with no new entry; a no-op when the file already holds it. */
  flush(): Promise<void> {
    return run(internals.get(this)!.core.flush)
  }

  /** Releases the file and directory once any commit in flight is done; later appends and flushes reject (SESSION_IO). */
  async close(): Promise<void> {
    const internal = internals.get(this)!
    if (internal.closed) return
    internal.closed = true
    registry.unregister(this)
    await run(release(internal.scope))
  }
}

// The tree keeps its SessionStore reachable: the store's scope closes when the store is collected.
const trees = new WeakMap<SessionTree, { readonly tree: Tree.SessionTree; readonly store: SessionStore }>()

export class SessionTree {
  constructor(store: SessionStore) {
    const internal = internals.get(store)
    if (internal === undefined) throw sessionError("SESSION_INVALID_OPTIONS", "SessionTree needs a SessionStore")
    trees.set(this, { tree: Effect.runSync(Tree.make(internal.core)), store })
  }

  get activeLeafId(): string | null {
    return trees.get(this)!.tree.activeLeafId
  }

  get entries(): ReadonlyArray<SessionEntry> {
    return trees.get(this)!.tree.entries
  }

  get activeEntries(): ReadonlyArray<SessionEntry> {
    return trees.get(this)!.tree.activeEntries
  }

  get activeMessages(): ReadonlyArray<CourseMessage> {
    return trees.get(this)!.tree.activeMessages
  }

  /** Changes only the in-memory leaf; null selects the position of a new root. */
  moveTo(id: string | null): Promise<void> {
    return run(trees.get(this)!.tree.moveTo(id))
  }

  append(message: CourseMessage): Promise<SessionEntry> {
    return run(trees.get(this)!.tree.append(message))
  }
}

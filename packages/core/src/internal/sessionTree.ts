/** The tree over a store, and the pure navigation over entry lists (`SessionTree.ts` holds the contracts). */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { type AnyMessage, type Entry, messageOf } from "../Record.js"
import { type InputError, inputError } from "../SessionError.js"
import type { AppendError } from "../SessionJournal.js"
import type { Index, Linked, SessionTree } from "../SessionTree.js"
import type { Prepared, SessionStore } from "../SessionStore.js"
import * as Tracing from "../Tracing.js"

const EMPTY: ReadonlyArray<never> = Object.freeze([])

/** The messages among `entries`, in order. */
const messagesOf = (entries: ReadonlyArray<Entry>): Array<AnyMessage> => {
  const messages: Array<AnyMessage> = []
  for (const entry of entries) {
    const message = messageOf(entry)
    if (message !== undefined) messages.push(message)
  }
  return messages
}

/** Walks parents from `id` using `get`; returns the frozen root-to-`id` path ([] if `id` is unknown). */
const walk = <E extends Linked>(
  get: (id: string) => E | undefined,
  id: string,
  limit: number
): ReadonlyArray<E> => {
  const path: Array<E> = []
  let current = get(id)
  // `limit` guards lists that are not in commit order (a cycle would otherwise never end).
  while (current !== undefined && path.length <= limit) {
    path.push(current)
    current = current.parentId === null ? undefined : get(current.parentId)
  }
  if (path.length === 0 || path.length > limit || path[path.length - 1]!.parentId !== null) return EMPTY
  return Object.freeze(path.reverse())
}

/**
 * What a tree knows of its store's committed entries: its own map of their IDs, extended as the
 * store's view grows (a commit only adds at the end), so it never sees an entry whose commit is
 * still in flight; one cached projection for the last (entries, leaf) pair seen; and the
 * navigation of the entries, made again when a commit has replaced them.
 */
class Sight {
  private readonly byId = new Map<string, Entry>()
  private indexed = 0
  private cache: {
    readonly entries: ReadonlyArray<Entry>
    readonly leaf: string | null
    readonly path: ReadonlyArray<Entry>
    messages: ReadonlyArray<AnyMessage> | undefined
  } | undefined = undefined
  private navigation: Index<Entry> | undefined = undefined

  constructor(private readonly store: SessionStore) {}

  get(id: string): Entry | undefined {
    const entries = this.store.entries
    for (; this.indexed < entries.length; this.indexed++) this.byId.set(entries[this.indexed]!.id, entries[this.indexed]!)
    return this.byId.get(id)
  }

  pathTo(id: string): ReadonlyArray<Entry> {
    return walk((key) => this.get(key), id, this.store.entries.length)
  }

  /** The root-to-`leaf` path, and its messages once asked for. */
  projection(leaf: string | null) {
    const entries = this.store.entries
    if (this.cache === undefined || this.cache.entries !== entries || this.cache.leaf !== leaf) {
      this.cache = { entries, leaf, path: leaf === null ? EMPTY : this.pathTo(leaf), messages: undefined }
    }
    return this.cache
  }

  navigate(): Index<Entry> {
    const entries = this.store.entries
    if (this.navigation === undefined || this.navigation.entries !== entries) this.navigation = index(entries)
    return this.navigation
  }
}

const one = (entry: Entry) => entry
const lastOf = (entries: ReadonlyArray<Entry>) => entries[entries.length - 1]!

export const make = (store: SessionStore): Effect.Effect<SessionTree> =>
  Effect.sync(() => {
    // One operation at a time. The body runs uninterruptibly, so that an append's commit and its
    // leaf move happen together or not at all; an operation interrupted while it waits never runs.
    const permit = Effect.unsafeMakeSemaphore(1)
    const serialized = <A, E>(body: Effect.Effect<A, E>): Effect.Effect<A, E> => permit.withPermits(1)(Effect.uninterruptible(body))
    const sight = new Sight(store)
    const initial = store.entries
    let leaf: string | null = initial.length === 0 ? null : initial[initial.length - 1]!.id

    /**
     * Commits an append the store prepared when it was called (not when its turn in the tree
     * comes), as a child of the leaf once the operations before it are done, and moves the leaf to
     * its last entry.
     */
    const atLeaf = <A extends Entry | ReadonlyArray<Entry>>(
      prepared: Either.Either<Prepared<A>, InputError>,
      last: (added: A) => Entry
    ): Effect.Effect<A, AppendError> =>
      (Either.isLeft(prepared)
        ? Effect.fail(prepared.left)
        : serialized(Effect.tap(Effect.suspend(() => store.appendPrepared(leaf, prepared.right)), (added) => {
          leaf = last(added).id
        }))).pipe(Tracing.leaf("SessionTree.append", { session: store.location }))
    const appendEntry = (body: unknown): Effect.Effect<Entry, AppendError> => Effect.suspend(() => atLeaf(store.prepareEntry(body), one))
    const moveTo = (id: string | null): Effect.Effect<void, InputError> =>
      serialized(Effect.suspend(() => {
        if (id !== null && (typeof id !== "string" || sight.get(id) === undefined)) {
          return Effect.fail(inputError("SESSION_UNKNOWN_ENTRY", `${JSON.stringify(id) ?? String(id)} is not an entry of this session`))
        }
        leaf = id
        return Effect.void
      })).pipe(Tracing.leaf("SessionTree.moveTo", { session: store.location }))
    return {
      store,
      get activeLeafId() {
        return leaf
      },
      get entries() {
        return store.entries
      },
      get activeEntries() {
        return sight.projection(leaf).path
      },
      get activeMessages() {
        const p = sight.projection(leaf)
        if (p.messages === undefined) p.messages = Object.freeze(messagesOf(p.path))
        return p.messages
      },
      moveTo,
      append: (message) => Effect.suspend(() => atLeaf(store.prepareMessage(message), one)),
      appendEntry,
      appendChain: (bodies) => Effect.suspend(() => atLeaf(store.prepareChain(bodies), lastOf)),
      ...kinds(appendEntry),
      children: (id) => sight.navigate().children(id),
      get leaves() {
        return sight.navigate().leaves
      },
      pathTo: (id) => (typeof id === "string" ? sight.pathTo(id) : EMPTY)
    }
  })

/** The tree's appends of one kind each, in the words of their kind, through `appendEntry`. */
const kinds = (appendEntry: (body: unknown) => Effect.Effect<Entry, AppendError>): Pick<SessionTree, "label" | "setTitle" | "setModel" | "custom" | "compact"> => ({
  label: (targetId, label) => appendEntry({ kind: "label", targetId, label }),
  setTitle: (title) => appendEntry({ kind: "title", title }),
  setModel: ({ model, provider, thinking }) =>
    appendEntry(thinking === undefined ? { kind: "model", provider, model } : { kind: "model", provider, model, thinking }),
  custom: (customType, data) => appendEntry({ kind: "custom", customType, data }),
  compact: ({ firstKeptEntryId, summary, tokensBefore }) =>
    appendEntry(
      tokensBefore === undefined
        ? { kind: "compaction", summary, firstKeptEntryId }
        : { kind: "compaction", summary, firstKeptEntryId, tokensBefore }
    )
})

/** The navigation of `entries` (see `SessionTree.Index`), built in one pass. */
export const index = <E extends Linked>(entries: ReadonlyArray<E>): Index<E> => {
  const byId = new Map<string, E>()
  const children = new Map<string | null, Array<E>>()
  const hasChild = new Set<string>()
  for (const entry of entries) {
    if (!byId.has(entry.id)) byId.set(entry.id, entry)
    const siblings = children.get(entry.parentId)
    if (siblings === undefined) children.set(entry.parentId, [entry])
    else siblings.push(entry)
    if (entry.parentId !== null) hasChild.add(entry.parentId)
  }
  for (const list of children.values()) Object.freeze(list)
  const leaves = Object.freeze(entries.filter((entry) => !hasChild.has(entry.id)))
  return {
    entries,
    get: (id) => byId.get(id),
    children: (id) => children.get(id) ?? EMPTY,
    leaves,
    pathTo: (id) => walk((key) => byId.get(key), id, entries.length)
  }
}

/**
 * The indexes the three functions below keep of the frozen lists they are asked about (a store's
 * views never change), so that a caller walking a tree with them does not index the list again at
 * each node. `index` is the same navigation as a value the caller holds; once every caller holds
 * one, this cache goes.
 */
const indexes = new WeakMap<ReadonlyArray<Linked>, Index<Linked>>()

const indexOf = <E extends Linked>(entries: ReadonlyArray<E>): Index<E> => {
  const cached = indexes.get(entries) as Index<E> | undefined
  if (cached !== undefined) return cached
  const made = index(entries)
  if (Object.isFrozen(entries)) indexes.set(entries, made as unknown as Index<Linked>)
  return made
}

/** The root-to-`id` path; [] when `id` is not in `entries` or its chain does not reach a root. */
export const pathTo = <E extends Linked>(entries: ReadonlyArray<E>, id: string): ReadonlyArray<E> => indexOf(entries).pathTo(id)

/** The children of `id` in commit order; null gives the roots. */
export const childrenOf = <E extends Linked>(entries: ReadonlyArray<E>, id: string | null): ReadonlyArray<E> => indexOf(entries).children(id)

/** The entries nobody names as parent, in commit order. */
export const leavesOf = <E extends Linked>(entries: ReadonlyArray<E>): ReadonlyArray<E> => indexOf(entries).leaves

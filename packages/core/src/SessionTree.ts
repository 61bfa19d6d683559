/**
 * SessionTree: the current leaf of a session and the root-to-leaf projection of
 * its entries.
 *
 * A branch is nothing but parent links plus the leaf pointer: `moveTo` changes
 * only the pointer (no byte on disk), `append` adds a child of the leaf through
 * the store and moves the pointer once the commit is durable. Every tree
 * operation waits for the earlier ones, so a `moveTo` issued after an `append`
 * sees that append's entry and an `append` issued after a `moveTo` uses the
 * leaf it chose. Operations that wait run in the order they began waiting.
 *
 * The pure functions at the bottom work on any entry list in commit order (a
 * parent always precedes its children), so read-only tools use the same
 * navigation as the tree.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { type AnyMessage, type Entry, messageOf } from "./Record.js"
import { asInput, type InputError, inputError, type SessionError } from "./SessionError.js"
import { carry, extractBody, extractMessage } from "./internal/blobs.js"
import { hasherOf } from "./internal/sessionStore.js"
import { snapshotBody, snapshotMessageFor } from "./internal/snapshot.js"
import { SessionStore } from "./SessionStore.js"

export interface SessionTree {
  readonly store: SessionStore
  /** The entry the next `append` becomes a child of; null selects a new root. */
  readonly activeLeafId: string | null
  /** Every entry of every branch in commit order (the store's frozen array). */
  readonly entries: ReadonlyArray<Entry>
  /** The frozen root-to-leaf path. */
  readonly activeEntries: ReadonlyArray<Entry>
  /** The messages of `activeEntries`, frozen. */
  readonly activeMessages: ReadonlyArray<AnyMessage>
  /** Selects `id` (or the position for a new root) as the leaf; SESSION_UNKNOWN_ENTRY if it is not in the tree. */
  readonly moveTo: (id: string | null) => Effect.Effect<void, InputError>
  /**
   * Appends `message` as a child of the leaf; the leaf moves to the new entry once it is durable.
   * Message IR of the session's version (a version-1 message to a version-2 session is stored in its version-2 form).
   */
  readonly append: (message: unknown) => Effect.Effect<Entry, SessionError>
  /** Appends an entry of any kind as a child of the leaf (`RecordV2.Body`: `kind` first); version 2 only. */
  readonly appendEntry: (body: unknown) => Effect.Effect<Entry, SessionError>
  /**
   * Appends a chain of entries under the leaf in one commit, all or none, each a child of the one
   * before; the leaf moves to the last. Version 2 only.
   */
  readonly appendChain: (bodies: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Entry>, SessionError>
  /** Labels `targetId` (an earlier entry, any branch); null removes its label. The newest label of a target wins. */
  readonly label: (targetId: string, label: string | null) => Effect.Effect<Entry, SessionError>
  /** Names the session: its title is the newest title entry in commit order. */
  readonly setTitle: (title: string) => Effect.Effect<Entry, SessionError>
  /** Records a change of model (and reasoning level) on this branch. */
  readonly setModel: (model: { readonly provider: string; readonly model: string; readonly thinking?: string }) => Effect.Effect<Entry, SessionError>
  /** Stores an extension's data on this branch; it is never sent to a model. */
  readonly custom: (customType: string, data: unknown) => Effect.Effect<Entry, SessionError>
  /**
   * Records a compaction: from here on, what came before `firstKeptEntryId` (an ancestor; null for
   * everything) is replaced by `summary` when the context is built. Nothing is deleted.
   */
  readonly compact: (compaction: {
    readonly summary: string
    readonly firstKeptEntryId: string | null
    readonly tokensBefore?: number
  }) => Effect.Effect<Entry, SessionError>
  /** The children of `id` in commit order; null gives the roots. */
  readonly children: (id: string | null) => ReadonlyArray<Entry>
  /** Entries without children, in commit order. */
  readonly leaves: ReadonlyArray<Entry>
  /** The root-to-`id` path, or [] when `id` is not in the tree. */
  readonly pathTo: (id: string) => ReadonlyArray<Entry>
}

export const SessionTree: Context.Tag<SessionTree, SessionTree> = Context.GenericTag<SessionTree>(
  "@session-tree/SessionTree"
)

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

export const make = (store: SessionStore): Effect.Effect<SessionTree> =>
  Effect.sync(() => {
    // One operation at a time. The body runs uninterruptibly, so that an append's commit and its
    // leaf move happen together or not at all; an operation interrupted while it waits never runs.
    const permit = Effect.unsafeMakeSemaphore(1)
    const serialized = <A, E>(body: Effect.Effect<A, E>): Effect.Effect<A, E> =>
      permit.withPermits(1)(Effect.uninterruptible(body))
    const initial = store.entries
    let leaf: string | null = initial.length === 0 ? null : initial[initial.length - 1]!.id
    // IDs of committed entries, extended as the store's view grows (a commit only adds at the end).
    // The tree keeps its own map so it never sees an entry whose commit is still in flight.
    const byId = new Map<string, Entry>()
    let indexed = 0
    const get = (id: string): Entry | undefined => {
      const entries = store.entries
      for (; indexed < entries.length; indexed++) byId.set(entries[indexed]!.id, entries[indexed]!)
      return byId.get(id)
    }
    // One cached projection for the last (entries array, leaf) pair seen; commits replace the array.
    let cache: {
      readonly entries: ReadonlyArray<Entry>
      readonly leaf: string | null
      readonly path: ReadonlyArray<Entry>
      messages: ReadonlyArray<AnyMessage> | undefined
    } | undefined

    const projection = () => {
      const entries = store.entries
      if (cache === undefined || cache.entries !== entries || cache.leaf !== leaf) {
        const path = leaf === null ? EMPTY : walk(get, leaf, entries.length)
        cache = { entries, leaf, path, messages: undefined }
      }
      return cache
    }

    /** Runs an append as a child of the leaf in the tree's order, moving the leaf to its entry. */
    const atLeaf = (append: (parent: string | null) => Effect.Effect<Entry, SessionError>) =>
      serialized(Effect.tap(Effect.suspend(() => append(leaf)), (entry) => {
        leaf = entry.id
      }))
    // Large file data becomes blobs before the copy, which carries them to the store.
    const sha256 = hasherOf(store)
    const copyBody = (body: unknown): Either.Either<unknown, InputError> =>
      Either.mapLeft(
        Either.flatMap(extractBody(body, sha256), (extracted) =>
          Either.map(snapshotBody(extracted.value), (snapshot) => carry(snapshot, extracted.blobs))),
        asInput
      )
    const appendEntry = (body: unknown): Effect.Effect<Entry, SessionError> =>
      Effect.suspend(() => {
        if (store.header.version === 1) return store.appendEntry(leaf, body)
        const snapshot = copyBody(body)
        return Either.isLeft(snapshot)
          ? Effect.fail(snapshot.left)
          : atLeaf((parent) => store.appendEntry(parent, snapshot.right))
      })
    const appendChain = (bodies: ReadonlyArray<unknown>): Effect.Effect<ReadonlyArray<Entry>, SessionError> =>
      Effect.suspend(() => {
        if (store.header.version === 1 || !Array.isArray(bodies)) return store.appendChain(leaf, bodies)
        const snapshots: Array<unknown> = []
        for (const body of bodies) {
          const snapshot = copyBody(body)
          if (Either.isLeft(snapshot)) return Effect.fail(snapshot.left)
          snapshots.push(snapshot.right)
        }
        return serialized(Effect.tap(Effect.suspend(() => store.appendChain(leaf, snapshots)), (entries) => {
          leaf = entries[entries.length - 1]!.id
        }))
      })
    const tree: SessionTree = {
      store,
      get activeLeafId() {
        return leaf
      },
      get entries() {
        return store.entries
      },
      get activeEntries() {
        return projection().path
      },
      get activeMessages() {
        const p = projection()
        if (p.messages === undefined) p.messages = Object.freeze(messagesOf(p.path))
        return p.messages
      },
      moveTo: (id) =>
        serialized(Effect.suspend(() => {
          if (id !== null && (typeof id !== "string" || get(id) === undefined)) {
            return Effect.fail(
              inputError("SESSION_UNKNOWN_ENTRY", `${JSON.stringify(id) ?? String(id)} is not an entry of this session`)
            )
          }
          leaf = id
          return Effect.void
        })),
      append: (message) =>
        Effect.suspend(() => {
          // Copied at call time, not when its turn in the tree comes.
          const extracted = store.header.version === 2 ? extractMessage(message, sha256) : Either.right({ value: message, blobs: [] })
          if (Either.isLeft(extracted)) return Effect.fail(asInput(extracted.left))
          const snapshot = snapshotMessageFor(extracted.right.value, store.header.version)
          return Either.isLeft(snapshot)
            ? Effect.fail(asInput(snapshot.left))
            : atLeaf((parent) => store.append(parent, carry(snapshot.right, extracted.right.blobs)))
        }),
      appendEntry,
      appendChain,
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
        ),
      children: (id) => childrenOf(store.entries, id),
      get leaves() {
        return leavesOf(store.entries)
      },
      pathTo: (id) => (typeof id === "string" ? walk(get, id, store.entries.length) : EMPTY)
    }
    return tree
  })

export const layer: Layer.Layer<SessionTree, never, SessionStore> = Layer.effect(
  SessionTree,
  Effect.flatMap(SessionStore, make)
)

// ---------------------------------------------------------------------------------------------
// Pure navigation over any entry list in commit order.

/** What the navigation needs of an entry: its ID and its parent's. */
export interface Linked {
  readonly id: string
  readonly parentId: string | null
}

interface Index<E extends Linked> {
  readonly byId: Map<string, E>
  readonly children: Map<string | null, ReadonlyArray<E>>
  readonly leaves: ReadonlyArray<E>
}

/** Indexes of frozen lists (the store's views never change); other lists are indexed per call. */
const indexes = new WeakMap<ReadonlyArray<Linked>, Index<Linked>>()

const indexOf = <E extends Linked>(entries: ReadonlyArray<E>): Index<E> => {
  const cached = indexes.get(entries) as Index<E> | undefined
  if (cached !== undefined) return cached
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
  const index: Index<E> = {
    byId,
    children,
    leaves: Object.freeze(entries.filter((entry) => !hasChild.has(entry.id)))
  }
  if (Object.isFrozen(entries)) indexes.set(entries, index)
  return index
}

/** The root-to-`id` path; [] when `id` is not in `entries` or its chain does not reach a root. */
export const pathTo = <E extends Linked>(entries: ReadonlyArray<E>, id: string): ReadonlyArray<E> => {
  const { byId } = indexOf(entries)
  return walk((key) => byId.get(key), id, entries.length)
}

/** The children of `id` in commit order; null gives the roots. */
export const childrenOf = <E extends Linked>(entries: ReadonlyArray<E>, id: string | null): ReadonlyArray<E> =>
  indexOf(entries).children.get(id) ?? EMPTY

/** The entries nobody names as parent, in commit order. */
export const leavesOf = <E extends Linked>(entries: ReadonlyArray<E>): ReadonlyArray<E> => indexOf(entries).leaves

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
import * as Layer from "effect/Layer"
import * as internal from "./internal/sessionTree.js"
import type { AnyMessage, Entry } from "./Record.js"
import type { InputError } from "./SessionError.js"
import type { AppendError } from "./SessionJournal.js"
import { SessionStore } from "./SessionStore.js"

/**
 * The tree over a store: the current leaf, the root-to-leaf projection, and appends that continue it.
 *
 * @since 0.1.0
 * @category models
 */
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
  readonly append: (message: unknown) => Effect.Effect<Entry, AppendError>
  /** Appends an entry of any kind as a child of the leaf (`RecordV2.Body`: `kind` first); version 2 only. */
  readonly appendEntry: (body: unknown) => Effect.Effect<Entry, AppendError>
  /**
   * Appends a chain of entries under the leaf in one commit, all or none, each a child of the one
   * before; the leaf moves to the last. Version 2 only.
   */
  readonly appendChain: (bodies: ReadonlyArray<unknown>) => Effect.Effect<ReadonlyArray<Entry>, AppendError>
  /** Labels `targetId` (an earlier entry, any branch); null removes its label. The newest label of a target wins. */
  readonly label: (targetId: string, label: string | null) => Effect.Effect<Entry, AppendError>
  /** Names the session: its title is the newest title entry in commit order. */
  readonly setTitle: (title: string) => Effect.Effect<Entry, AppendError>
  /** Records a change of model (and reasoning level) on this branch. */
  readonly setModel: (model: { readonly provider: string; readonly model: string; readonly thinking?: string }) => Effect.Effect<Entry, AppendError>
  /** Stores an extension's data on this branch; it is never sent to a model. */
  readonly custom: (customType: string, data: unknown) => Effect.Effect<Entry, AppendError>
  /**
   * Records a compaction: from here on, what came before `firstKeptEntryId` (an ancestor; null for
   * everything) is replaced by `summary` when the context is built. Nothing is deleted.
   */
  readonly compact: (compaction: {
    readonly summary: string
    readonly firstKeptEntryId: string | null
    readonly tokensBefore?: number
  }) => Effect.Effect<Entry, AppendError>
  /** The children of `id` in commit order; null gives the roots. */
  readonly children: (id: string | null) => ReadonlyArray<Entry>
  /** Entries without children, in commit order. */
  readonly leaves: ReadonlyArray<Entry>
  /** The root-to-`id` path, or [] when `id` is not in the tree. */
  readonly pathTo: (id: string) => ReadonlyArray<Entry>
}

/**
 * The tag of a tree in the context, a class as every tag of the library is. Its identifier is the
 * service's own interface (`SessionTree`), the name every caller already types a tree with.
 *
 * @since 0.1.0
 * @category tags
 */
export class SessionTreeTag extends Context.Tag("@session-tree/SessionTree")<SessionTree, SessionTree>() {}

/**
 * The tree in the context (see `SessionTreeTag`).
 *
 * @since 0.1.0
 * @category models
 */
export const SessionTree: typeof SessionTreeTag = SessionTreeTag

/**
 * The tree over `store`: its operations run one at a time (a one-permit semaphore), each seeing
 * the store as the last one left it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (store: SessionStore) => Effect.Effect<SessionTree> = internal.make

/**
 * The tree over the store in the context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SessionTree, never, SessionStore> = Layer.effect(
  SessionTree,
  Effect.flatMap(SessionStore, make)
)

// ---------------------------------------------------------------------------------------------
// Pure navigation over any entry list in commit order.

/**
 * What the navigation needs of an entry: its ID and its parent's.
 *
 * @since 0.1.0
 * @category models
 */
export interface Linked {
  readonly id: string
  readonly parentId: string | null
}

/**
 * The navigation of one entry list, built once, for a caller that asks it many questions (a view walking the tree).
 *
 * @since 0.1.0
 * @category models
 */
export interface Index<E extends Linked> {
  /** The list, as given. */
  readonly entries: ReadonlyArray<E>
  /** The first entry with this ID. */
  readonly get: (id: string) => E | undefined
  /** The children of `id` in commit order; null gives the roots. */
  readonly children: (id: string | null) => ReadonlyArray<E>
  /** The entries nobody names as parent, in commit order. */
  readonly leaves: ReadonlyArray<E>
  /** The root-to-`id` path; [] when `id` is not in the list or its chain does not reach a root. */
  readonly pathTo: (id: string) => ReadonlyArray<E>
}

/**
 * The navigation of `entries`, built in one pass: what the functions below answer, as a value to keep.
 *
 * @since 0.1.0
 * @category navigation
 */
export const index: <E extends Linked>(entries: ReadonlyArray<E>) => Index<E> = internal.index

/**
 * The root-to-`id` path; [] when `id` is not in `entries` or its chain does not reach a root.
 *
 * @since 0.1.0
 * @category navigation
 */
export const pathTo: <E extends Linked>(entries: ReadonlyArray<E>, id: string) => ReadonlyArray<E> = internal.pathTo

/**
 * The children of `id` in commit order; null gives the roots.
 *
 * @since 0.1.0
 * @category navigation
 */
export const childrenOf: <E extends Linked>(entries: ReadonlyArray<E>, id: string | null) => ReadonlyArray<E> = internal.childrenOf

/**
 * The entries nobody names as parent, in commit order.
 *
 * @since 0.1.0
 * @category navigation
 */
export const leavesOf: <E extends Linked>(entries: ReadonlyArray<E>) => ReadonlyArray<E> = internal.leavesOf

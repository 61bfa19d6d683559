/**
 * What the server knows of the sessions it serves, kept as they change: the
 * catalog's entries (from one scan, then from the backend's changes), a hub the
 * live pages listen to, the layouts of recently opened sessions and the titles
 * of recently listed ones, each under the version it was made for.
 */
import type { Entry as CatalogEntry, ScanError, SessionCatalogService } from "@session-tree/core/SessionCatalog"
import type { SessionChangesService } from "@session-tree/core/SessionChanges"
import type { SessionError } from "@session-tree/core/SessionError"
import type { ReadError, SessionJournalService } from "@session-tree/core/SessionJournal"
import type { SessionsService } from "@session-tree/core/Sessions"
import * as Sessions from "@session-tree/core/Sessions"
import type { Loaded } from "@session-tree/core/SessionStore"
import * as HtmlParts from "@session-tree/view/HtmlParts"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as PubSub from "effect/PubSub"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type Link, linksAfter, linksOf } from "./links.js"
import * as Reading from "./reading.js"

/** A change the live pages hear of: the keys of the sessions that changed, or `all` after a rescan. */
export interface Heard {
  readonly keys: ReadonlyArray<string>
  readonly all: boolean
}

/** A session laid out for its page, under the version it was read at, with the parts every request of it sends. */
export interface Opened {
  readonly version: string
  readonly loaded: Loaded
  readonly layout: HtmlParts.Layout
  /** Where the session came from and what it started, as its page's header shows them. */
  readonly links: ReadonlyArray<Link>
  /**
   * The parts beyond the first screen (the tree, the facts): drawn once, when first asked for, so
   * that a large session's page goes out with its path's newest cards before its tree is drawn.
   */
  readonly rest: () => Rest
  /** Whether `rest` was drawn already. */
  readonly restReady: () => boolean
  /** The indexes of the path from a root to the newest entry (made once, from the version before's where it goes on from it). */
  readonly newestPath: () => ReadonlyArray<number>
  /**
   * The version this one was laid out from by extending it (the entries appended since), with the
   * tree's rows it had when they were drawn: what `/since` sends a page of that version only the
   * changes against. Undefined for a session laid out whole.
   */
  readonly since: { readonly version: string; readonly rows: ReadonlyArray<string> | undefined } | undefined
}

/** The parts of a session's page beyond its first screen. */
export interface Rest {
  /** The tree's rows: a page's tree is them joined by newlines. */
  readonly rows: ReadonlyArray<string>
  readonly facts: string
  readonly treeHeading: string
}

/**
 * The path from a root to the newest entry of `layout`: the path of `before` (the layout it was
 * extended from) and the entries after its newest, when the newest descends from it; else walked
 * from the newest entry up.
 */
const newestPathOf = (layout: HtmlParts.Layout, before: Opened | undefined): ReadonlyArray<number> => {
  const n = layout.entries.length
  if (n === 0) return []
  if (before !== undefined) {
    const old = before.layout.entries.length
    const below: Array<number> = []
    let at: number | undefined = n - 1
    while (at !== undefined && at >= old && below.length <= n) {
      below.push(at)
      const parent: string | null = layout.entries[at]!.parentId
      at = parent === null ? undefined : HtmlParts.indexOf(layout, parent)
    }
    if (at === old - 1 && old > 0) return before.newestPath().concat(below.reverse())
  }
  return HtmlParts.pathOf(layout, n - 1)
}

/** How many laid-out sessions are kept: a layout of 100,000 entries holds them all in memory. */
export const OPENED = 4
/** How many titles are kept for the search page. */
const TITLES = 10_000

export interface State {
  /** The key of a location in URLs: a file's name in the directory, a database's session ID. */
  readonly keyOf: (location: string) => string
  /** The location of a key the catalog lists now, or undefined: no other key reaches a session. */
  readonly locationOf: (key: string) => string | undefined
  readonly entryOf: (location: string) => CatalogEntry | undefined
  /** The catalog as the server keeps it: `scan` answers from memory. */
  readonly catalog: SessionCatalogService
  readonly hub: PubSub.PubSub<Heard>
  /** The session at `location` laid out, read again when its version changed. */
  readonly open: (location: string, blobSrc: (key: string) => HtmlParts.LayoutOptions["blobSrc"]) => Effect.Effect<Opened, ReadError | SessionError>
  /** The title `list` shows for the session at `location` (read once per version); "" when it does not load. */
  readonly titleOf: (location: string) => Effect.Effect<string>
  /** Remembers titles a listing just showed. */
  readonly rememberTitles: (listed: ReadonlyArray<Sessions.Listed>) => void
  /**
   * Lays out the `count` most recently changed sessions ahead of their first request (at most as
   * many as are kept), one after another: the session an agent is writing now opens at once.
   */
  readonly warmUp: (blobSrc: (key: string) => HtmlParts.LayoutOptions["blobSrc"], count: number) => Effect.Effect<void>
}

/**
 * Follows the backend's changes from now on and answers once the first scan is done. Fails when the
 * served directory cannot be scanned or watched.
 */
export const make = (options: {
  readonly directory: string | undefined
  readonly files: boolean
  readonly catalog: SessionCatalogService
  readonly changes: SessionChangesService
  readonly journal: SessionJournalService
  readonly sessions: () => SessionsService
  readonly basename: (location: string) => string
}): Effect.Effect<State, ScanError, Scope.Scope> =>
  Effect.gen(function*() {
    const { catalog, changes } = options
    const entries = new Map<string, CatalogEntry>()
    const byKey = new Map<string, string>()
    const keyOf = (location: string) => (options.files ? options.basename(location) : location)
    const hub = yield* PubSub.unbounded<Heard>()
    const ready = yield* Deferred.make<void, ScanError>()

    const put = (entry: CatalogEntry) => {
      entries.set(entry.location, entry)
      byKey.set(keyOf(entry.location), entry.location)
    }
    const remove = (location: string) => {
      entries.delete(location)
      byKey.delete(keyOf(location))
    }
    const rescan = Effect.flatMap(catalog.scan(options.directory), (scanned) =>
      Effect.sync(() => {
        entries.clear()
        byKey.clear()
        for (const entry of scanned) put(entry)
      }))

    // The first batch of every watch is a Resync: the scan then misses nothing that follows.
    yield* Effect.forkScoped(
      Stream.runForEach(changes.watch(options.directory), (batch) =>
        Effect.gen(function*() {
          const keys = new Set<string>()
          let all = false
          for (const change of batch) {
            if (change._tag === "Resync") {
              const scanned = yield* Effect.either(rescan)
              if (scanned._tag === "Left") {
                // Before the first scan a failure stops the server; after it, the next resync tries again.
                yield* Deferred.fail(ready, scanned.left)
                continue
              }
              all = true
              yield* Deferred.succeed(ready, undefined)
            } else if (change._tag === "Changed") {
              if (entries.get(change.entry.location)?.version === change.entry.version) continue
              put(change.entry)
              keys.add(keyOf(change.entry.location))
            } else if (entries.has(change.location)) {
              remove(change.location)
              keys.add(keyOf(change.location))
            }
          }
          if (all || keys.size > 0) yield* PubSub.publish(hub, { keys: [...keys], all })
        })).pipe(Effect.catchAll((error) => Deferred.fail(ready, error)))
    )
    yield* Deferred.await(ready)

    const served: SessionCatalogService = {
      ...catalog,
      scan: () => Effect.sync(() => [...entries.values()])
    }

    // Laid-out sessions, most recently used last; a read in flight is shared by every request for it.
    const opened = new Map<string, { readonly version: string; readonly made: Effect.Effect<Opened, ReadError | SessionError> }>()
    // The newest read of each session kept laid out, with its layout: the next version is read from
    // it (what was appended) and laid out by extending it.
    const reads = new Map<string, { readonly read: Reading.Read; readonly opened: Opened }>()
    const layoutOf = (location: string, version: string, blobSrc: (key: string) => HtmlParts.LayoutOptions["blobSrc"]) =>
      Effect.suspend(() => {
        const before = reads.get(location)
        return Effect.map(
          before === undefined ? Reading.read(options.journal, location) : Reading.readAgain(options.journal, location, before.read),
          (read) => ({ read, before })
        )
      }).pipe(Effect.map(({ read, before }): Opened => {
        const loaded = read.loaded
        // A read that went on from the one before has the same entries first: its layout goes on from that one's.
        const previous = read.how !== "whole" && before !== undefined ? before.opened : undefined
        const extended = previous === undefined ? undefined : HtmlParts.extend(previous.layout, loaded.entries)
        const layout = extended ?? HtmlParts.layout(loaded.header, loaded.entries, { blobSrc: blobSrc(keyOf(location)) })
        const from = extended === undefined ? undefined : previous
        titles.set(location, { version, title: layout.heading })
        let rest: Rest | undefined
        // Made now from the layout before (which is then let go), else when first asked for.
        let path: ReadonlyArray<number> | undefined = from === undefined ? undefined : newestPathOf(layout, from)
        const made: Opened = {
          version,
          loaded,
          layout,
          links: from === undefined ? linksOf(loaded.header, loaded.entries) : linksAfter(loaded.header, loaded.entries, from.loaded.entries.length, from.links),
          rest: () => {
            if (rest === undefined) {
              const rows = HtmlParts.treeRows(layout)
              rest = { rows, facts: HtmlParts.factsHtml(layout), treeHeading: HtmlParts.treeHeading(layout) }
            }
            return rest
          },
          restReady: () => rest !== undefined,
          newestPath: () => (path ??= newestPathOf(layout, undefined)),
          since: from === undefined ? undefined : { version: from.version, rows: from.restReady() ? from.rest().rows : undefined }
        }
        if (opened.get(location)?.version === version) reads.set(location, { read, opened: made })
        return made
      }))
    const open = (location: string, blobSrc: (key: string) => HtmlParts.LayoutOptions["blobSrc"]): Effect.Effect<Opened, ReadError | SessionError> =>
      Effect.suspend((): Effect.Effect<Opened, ReadError | SessionError> => {
        const version = entries.get(location)?.version ?? ""
        const kept = opened.get(location)
        if (kept !== undefined && kept.version === version) {
          opened.delete(location)
          opened.set(location, kept)
          return kept.made
        }
        return Effect.flatMap(Effect.cached(layoutOf(location, version, blobSrc)), (made) => {
          // A failed read is not kept: the next request reads again.
          const guarded: Effect.Effect<Opened, ReadError | SessionError> = Effect.tapError(made, () =>
            Effect.sync(() => {
              if (opened.get(location)?.made === guarded) {
                opened.delete(location)
                reads.delete(location)
              }
            }))
          opened.delete(location)
          opened.set(location, { version, made: guarded })
          while (opened.size > OPENED) {
            const oldest = opened.keys().next().value!
            opened.delete(oldest)
            reads.delete(oldest)
          }
          return guarded
        })
      })

    const titles = new Map<string, { readonly version: string; readonly title: string }>()
    const keep = (location: string, title: string) => {
      titles.delete(location)
      titles.set(location, { version: entries.get(location)?.version ?? "", title })
      while (titles.size > TITLES) titles.delete(titles.keys().next().value!)
    }
    const titleOf = (location: string) =>
      Effect.suspend(() => {
        const kept = titles.get(location)
        if (kept !== undefined && kept.version === entries.get(location)?.version) return Effect.succeed(kept.title)
        return Effect.match(options.sessions().read(location), {
          onFailure: () => "",
          onSuccess: (loaded) => {
            const title = Sessions.summarize(location, loaded).title
            keep(location, title)
            return title
          }
        })
      })

    return {
      keyOf,
      locationOf: (key) => byKey.get(key),
      entryOf: (location) => entries.get(location),
      catalog: served,
      hub,
      open,
      titleOf,
      warmUp: (blobSrc, count) =>
        Effect.suspend(() => {
          const recent = [...entries.values()].sort((a, b) => b.changed - a.changed).slice(0, Math.min(count, OPENED)).reverse()
          return Effect.forEach(recent, (entry) => Effect.ignore(Effect.map(open(entry.location, blobSrc), (o) => o.rest())), { discard: true })
        }),
      rememberTitles: (listed) => {
        for (const item of listed) if (!Sessions.isUnreadable(item)) keep(item.location, item.title)
      }
    }
  })

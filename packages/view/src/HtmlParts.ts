/**
 * The HTML view in parts, for a page that is served rather than exported whole
 * (`@session-tree/server`): the same rows, cards, facts and style as
 * `Html.render`, laid out once per session and asked for a part at a time, so
 * that a session of 100,000 entries sends only what is on screen.
 *
 * A layout marks no path: the page that shows it marks the path it selects
 * (each row names its parent's row in `data-p`, each card is `m` and its index,
 * each row `r` and its index). Long single-child chains fold as in the export,
 * their rows left out (`data-run`, `data-n`, `data-level` on the `<details>`) for
 * `runHtml` to give when the run is opened. An image held in a blob is drawn
 * from the address `blobSrc` gives, never inline. Every value from the session
 * is escaped as text, as in the export.
 *
 * @since 0.2.0
 */
import type { Entry, Header } from "@session-tree/core/Record"
import * as internal from "./internal/html.js"
import { STYLE_V2, STYLE_V2_HASH } from "./internal/page.js"
import { type Counts, countsOf, plural, settled, summaryOf } from "./internal/session.js"

/**
 * A session laid out for its parts.
 * @since 0.2.0
 * @category models
 */
export interface Layout {
  readonly header: Header
  /** In commit order; an entry's index here names its row and card. */
  readonly entries: ReadonlyArray<Entry>
  /** The page's heading: the session's title as `list` shows it, else `Session <ID>` (not escaped). */
  readonly heading: string
  /** @internal */
  readonly page: internal.Page
  /** @internal The counts the facts and the tree's heading show: made once, when first asked for. */
  readonly counts: () => Counts
}

/**
 * @since 0.2.0
 * @category models
 */
export interface LayoutOptions {
  /** Where the page loads the image held in blob `ref` from (a URL of its server); undefined: shown by name. */
  readonly blobSrc?: ((ref: string, mediaType: string) => string | undefined) | undefined
}

/**
 * Lays out `entries` (in commit order, as a store holds them) once, for any number of parts.
 * @since 0.2.0
 * @category constructors
 */
export const layout = (header: Header, entries: ReadonlyArray<Entry>, options?: LayoutOptions): Layout => {
  const list = settled(entries)
  const summary = summaryOf(header, list)
  return {
    header,
    entries: list,
    heading: summary.title.trim() === "" ? `Session ${header.id}` : summary.title,
    page: internal.pageOf(header, list, [], new Map(), { blobSrc: options?.blobSrc, lazyRuns: true }),
    counts: once(() => countsOf(list))
  }
}

/** `make`'s value, made at the first call; `make` (and what it holds: an earlier layout) is let go then. */
const once = <A>(make: () => A): () => A => {
  let pending: (() => A) | undefined = make
  let value: A | undefined
  return () => {
    if (pending !== undefined) {
      value = pending()
      pending = undefined
    }
    return value as A
  }
}

/**
 * `layout` with `entries` laid out, where `entries` are the entries of `layout` (the same objects)
 * and those appended after them: the same layout as `layout(header, entries)` gives, at the cost
 * of the new entries (and of a summary of the session). Undefined when it cannot be extended (other
 * entries, a layout extended already, too many entries added since it was laid out whole): lay
 * it out whole then. `layout` stays as it was.
 * @since 0.2.0
 * @category constructors
 */
export const extend = (layout: Layout, entries: ReadonlyArray<Entry>): Layout | undefined => {
  const list = settled(entries)
  const page = internal.extendPage(layout.page, list)
  if (page === undefined) return undefined
  const old = layout.entries.length
  const before = layout.counts
  const summary = summaryOf(layout.header, list)
  return {
    header: layout.header,
    entries: list,
    heading: summary.title.trim() === "" ? `Session ${layout.header.id}` : summary.title,
    page,
    counts: once(() => {
      const was = before()
      const added = countsOf(list.slice(old))
      // Leaves: the new entries, less each entry that was a leaf (or is new) and is a parent now.
      const parents = new Set<number>()
      for (let i = old; i < list.length; i++) {
        const parentId = list[i]!.parentId
        const at = parentId === null ? undefined : internal.indexIn(page, parentId)
        if (at !== undefined && (at >= old || internal.isLeafIn(layout.page, at))) parents.add(at)
      }
      return {
        entries: list.length,
        leaves: was.leaves + (list.length - old) - parents.size,
        toolCalls: was.toolCalls + added.toolCalls,
        toolResults: was.toolResults + added.toolResults,
        errors: was.errors + added.errors
      }
    })
  }
}

/**
 * The rows of the whole tree, folded runs left to `runHtml`.
 * @since 0.2.0
 * @category parts
 */
export const treeHtml = (layout: Layout): string => internal.treeOf(layout.page).join("\n")

/**
 * The rows `treeHtml` joins: each a row, a folded run's opening (`<details>` and its summary) or its end.
 * @since 0.2.0
 * @category parts
 */
export const treeRows = (layout: Layout): ReadonlyArray<string> => internal.treeOf(layout.page)

/**
 * The rows of a folded run: `n` entries from the one at index `start`, at `level`, as its `<details>` names them.
 * @since 0.2.0
 * @category parts
 */
export const runHtml = (layout: Layout, start: number, n: number, level: number): string =>
  start >= 0 && start < layout.entries.length ? internal.runRows(layout.page, start, n, level).join("\n") : ""

/**
 * At most `n` rows of a folded run from the entry at index `start`, and the index of the entry the
 * run goes on with (-1 at its end): for a page that loads a long run a part at a time.
 * @since 0.2.0
 * @category parts
 */
export const runPage = (layout: Layout, start: number, n: number, level: number): { readonly html: string; readonly next: number } => {
  if (start < 0 || start >= layout.entries.length) return { html: "", next: -1 }
  const rows = internal.runRows(layout.page, start, n + 1, level)
  if (rows.length <= n) return { html: rows.join("\n"), next: -1 }
  // The row past the page names the next entry: its index is in its `r` id.
  const next = Number(/ id="r(\d+)"/.exec(rows[n]!)![1])
  return { html: rows.slice(0, n).join("\n"), next }
}

/**
 * The card of the entry at `index`.
 * @since 0.2.0
 * @category parts
 */
export const cardHtml = (layout: Layout, index: number): string => internal.cardOf(layout.page, index)

/**
 * The facts under the heading (session, fork, times, counts, the newest entry) and the legend of kinds.
 * @since 0.2.0
 * @category parts
 */
export const factsHtml = (layout: Layout): string => {
  const counts = layout.counts()
  const newest = layout.entries.at(-1)?.id ?? null
  return `<dl class="facts">${internal.factsHtml(layout.page, summaryOf(layout.header, layout.entries), counts, newest, true)}</dl>` +
    `<div class="legend">${layout.header.version === 1 ? internal.LEGEND : internal.LEGEND_V2}</div>`
}

/**
 * "N entries in M branches", as the tree's heading says it.
 * @since 0.2.0
 * @category parts
 */
export const treeHeading = (layout: Layout): string => {
  const counts = layout.counts()
  return `${plural(counts.entries, "entry", "entries")} in ${plural(counts.leaves, "branch", "branches")}`
}

/**
 * The index of the entry `id`, or undefined.
 * @since 0.2.0
 * @category navigation
 */
export const indexOf = (layout: Layout, id: string): number | undefined => internal.indexIn(layout.page, id)

/**
 * The indices of the root-to-`index` path, in order.
 * @since 0.2.0
 * @category navigation
 */
export const pathOf = (layout: Layout, index: number): Array<number> => {
  const path: Array<number> = []
  const { byId } = layout.page
  for (let i: number | undefined = index; i !== undefined && i >= 0 && path.length <= layout.entries.length;) {
    path.push(i)
    const parent: string | null = layout.entries[i]!.parentId
    i = parent === null ? undefined : byId.get(parent)
  }
  return path.reverse()
}

/**
 * The style sheet of every part (version 1's rules and version 2's), and its hash for a policy.
 * @since 0.2.0
 * @category style
 */
export const STYLE: string = STYLE_V2

/**
 * `'sha256-…'` of `STYLE`.
 * @since 0.2.0
 * @category style
 */
export const STYLE_HASH: string = STYLE_V2_HASH

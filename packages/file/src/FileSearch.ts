/**
 * Search on session files (`Sessions.search`). By default through an index kept
 * beside the sessions (`docs/search-index.md`): one segment per session file, made
 * by the first search whose query is common in it, from the file's bytes as a load sees them,
 * used only while the file is unchanged, and checked by the library against the
 * page's lines; a query of words is then counted and ranked without reading the
 * sessions. Without the index (`layerScan`), a scan of the bytes of every session
 * file for the lines that hold every word of the query in any case, each of which
 * the library decodes and matches. Both give the same answers; see BENCHMARKS.md,
 * "Serve", for their cost against `grep -c -F`.
 *
 * @since 0.2.0
 */
import { SearchIndex, type SearchIndexService } from "@session-tree/core/Search"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Fs, type FsService } from "./Fs.js"
import * as internal from "./internal/fileSearch.js"

/**
 * How session files are searched: `index` (true by default) keeps and uses the index beside them;
 * false scans their bytes at every search and writes nothing. `settleMs` (2,000 by default): a file
 * changed more recently than this is scanned, not indexed, since a change within the file system's
 * clock tick may leave its times as they were.
 * @since 0.3.0
 * @category models
 */
export interface Options {
  readonly index?: boolean | undefined
  readonly settleMs?: number | undefined
  /**
   * A session with no segment to trust (none yet, or its file changed) is indexed by a search only
   * when the lines its scan finds hold at least this share of its bytes (1/4 by default; 0 indexes
   * every session a search reads). A query rare in a session is answered by the scan, which decodes
   * a few lines where making a segment decodes and splits into words all of them (several times the
   * scan's time); a query common in it, whose scan decodes much of it anyway, makes the segment that
   * answers the searches after it. A value outside 0–1 (or a `settleMs` that is not a finite number of
   * milliseconds, 0 or more) makes every search fail with SESSION_INVALID_OPTIONS.
   * @since 0.3.0
   */
  readonly indexShare?: number | undefined
}

/**
 * The search of session files, every step through `fs`.
 * @since 0.2.0
 * @category constructors
 */
export const make: (fs: FsService, options?: Options) => SearchIndexService = internal.make

/**
 * The search of session files over the `Fs` in context, through the index beside them.
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<SearchIndex, never, Fs> = Layer.effect(SearchIndex, Effect.map(Fs, (fs) => make(fs)))

/**
 * The search of session files over the `Fs` in context by a scan of their bytes, with no index
 * read or written (a directory whose index is not wanted).
 * @since 0.3.0
 * @category layers
 */
export const layerScan: Layer.Layer<SearchIndex, never, Fs> = Layer.effect(SearchIndex, Effect.map(Fs, (fs) => make(fs, { index: false })))

/**
 * Search on session files (`Sessions.search`): a scan of the bytes of every
 * session file of a directory, as a load sees them (an append in flight settled
 * by its intent, a torn tail left out), for the lines that hold every word of the
 * query in any case. The library then decodes and matches each of those lines;
 * nothing is kept between searches, so nothing can go stale.
 *
 * The scan reads a window of whole lines at a time as one string and runs one
 * regular expression over it (`Search.Pattern`), so its cost is close to reading
 * the bytes: see BENCHMARKS.md, "Serve", for the ratio to `grep -c -F`.
 *
 * @since 0.2.0
 */
import { SearchIndex, type SearchIndexService } from "@session-tree/core/Search"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Fs, type FsService } from "./Fs.js"
import * as internal from "./internal/fileSearch.js"

/**
 * The search of session files, every step through `fs`.
 * @since 0.2.0
 * @category constructors
 */
export const make: (fs: FsService) => SearchIndexService = internal.make

/**
 * The search of session files over the `Fs` in context.
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<SearchIndex, never, Fs> = Layer.effect(SearchIndex, Effect.map(Fs, make))

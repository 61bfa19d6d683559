/**
 * The file backend: one session per JSONL file. Reads
 * never write and hold nothing afterwards; every commit writes the whole next
 * generation beside the file and installs it atomically and durably, behind a
 * recovery marker that is also the lock between processes, with rollback. A
 * commit on a file of 256 KB or more that already holds the canonical
 * generation copies it in the kernel and writes only the new lines.
 *
 * Locations are paths; the session file is never followed through a symlink,
 * and its directory is pinned by (device, inode) for as long as it is held.
 * Within a process, stores of one file share a lock, so their commits take
 * turns; the loser of a race gets SESSION_REPLACED or SESSION_BUSY.
 */
import { SearchIndex } from "@session-tree/core/Search"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import { SessionChanges } from "@session-tree/core/SessionChanges"
import * as SessionStore from "@session-tree/core/SessionStore"
import { type ReadError, SessionJournal, type SessionJournalService } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { type Around, Fs, type FsService, intercept, node } from "./Fs.js"
import * as FileCatalog from "./FileCatalog.js"
import * as FileChanges from "./FileChanges.js"
import * as FileSearch from "./FileSearch.js"
import * as internal from "./internal/fileJournal.js"

/**
 * Commits of a canonical file of at least this many bytes copy it in the kernel (the default of `kernelCopyFrom`).
 *
 * @since 0.1.0
 * @category constants
 */
export const KERNEL_COPY_MIN_BYTES: number = internal.KERNEL_COPY_MIN_BYTES

/**
 * How the file journal commits.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /**
   * A commit on a file of at least this many bytes that holds the canonical generation copies
   * it in the kernel (reflink, copy_file_range) and writes only the new lines; smaller files, and
   * any file after a load until its first commit, are written whole. `Infinity` writes every
   * generation whole. Default: `KERNEL_COPY_MIN_BYTES` (256 KB).
   */
  readonly kernelCopyFrom?: number | undefined
}

/**
 * The journal of session files, every filesystem step through `fs`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (fs: FsService, options?: Options) => SessionJournalService = internal.make

/**
 * The file journal over the `Fs` service in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SessionJournal, never, Fs> = Layer.effect(SessionJournal, Effect.map(Fs, (fs) => make(fs)))

/**
 * What a program that stores sessions in files is given by `layerWithFs`.
 *
 * @since 0.2.0
 * @category models
 */
export type Services = SessionJournal | SessionCatalog | SearchIndex | SessionChanges | Fs

/**
 * The file journal, its catalog (`FileCatalog`), its search (`FileSearch`), its changes
 * (`FileChanges`) and the filesystem service they run on (the real one, `Fs.node`, by default):
 * everything a program that stores sessions in files provides.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWithFs = (fs: FsService = node, options?: Options): Layer.Layer<Services> =>
  Layer.mergeAll(
    Layer.succeed(SessionJournal, make(fs, options)),
    Layer.succeed(SessionCatalog, FileCatalog.make(fs)),
    Layer.succeed(SearchIndex, FileSearch.make(fs)),
    Layer.succeed(SessionChanges, FileChanges.make(fs)),
    Layer.succeed(Fs, fs)
  )

/**
 * The file journal on the real filesystem seen through `around` (see `Fs.intercept`), and that `Fs`.
 *
 * @since 0.1.0
 * @category testing
 */
export const layerIntercepted = (around: Around): Layer.Layer<Services> =>
  layerWithFs(intercept(node, around))

/**
 * Loads the session file at `path` read-only through this journal, whatever journal the context
 * holds: the source of an import into another backend.
 *
 * @since 0.1.0
 * @category constructors
 */
export const readSession = (path: string): Effect.Effect<SessionStore.Loaded, ReadError, Fs> =>
  Effect.flatMap(Fs, (fs) => Effect.provideService(SessionStore.read(path), SessionJournal, make(fs)))

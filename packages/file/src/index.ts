/**
 * The catalog of a directory of session files.
 *
 * @since 0.1.0
 * @category modules
 */
export * as FileCatalog from "./FileCatalog.js"
/**
 * What changes in a directory of session files, as it changes (`fs.watch`).
 *
 * @since 0.2.0
 * @category modules
 */
export * as FileChanges from "./FileChanges.js"
/**
 * The file backend: one session per JSONL file.
 *
 * @since 0.1.0
 * @category modules
 */
export * as FileJournal from "./FileJournal.js"
/**
 * Files that are not sessions: what imports read and exports write.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Files from "./Files.js"
/**
 * Search over a directory of session files: a scan of their bytes.
 *
 * @since 0.2.0
 * @category modules
 */
export * as FileSearch from "./FileSearch.js"
/**
 * The filesystem service every step of the store goes through.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Fs from "./Fs.js"
/**
 * A session file's bytes to its record lines.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Jsonl from "./Jsonl.js"
/**
 * Resolving what a crashed commit left beside a session file.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Recovery from "./Recovery.js"
/**
 * The files of a sync (`Sync.SyncFiles` of `@session-tree/core`) on this machine: the walk of the
 * sources, a source read as far as it went when it was opened, and the sync's state as one JSON
 * file written atomically.
 *
 * @since 0.2.0
 * @category modules
 */
export * as SyncFiles from "./SyncFiles.js"
/**
 * The following part of `sync --watch`: a round of sync run at once, then again whenever a file
 * under the sources changes (inotify, through `fs.watch` with `recursive`, debounced), when the
 * last round asked for one (what it left waiting will be quiet by then), and every `rescanMs`
 * whatever happens, so that an event the kernel dropped delays a change, never loses it.
 *
 * @since 0.2.0
 * @category modules
 */
export * as SyncWatch from "./SyncWatch.js"

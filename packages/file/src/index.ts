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
export * as SyncFiles from "./SyncFiles.js"
export * as SyncWatch from "./SyncWatch.js"

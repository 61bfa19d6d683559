/**
 * The catalog of a directory of session files.
 *
 * @since 0.1.0
 * @category modules
 */
export * as FileCatalog from "./FileCatalog.js"
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

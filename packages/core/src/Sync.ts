/**
 * Sync (`session-tree sync SOURCE… --to DIR | --db URL`, `docs/sync.md`): every transcript under
 * the given files and directories (Claude Code projects, Codex sessions, Pi sessions; the format
 * detected from the content) kept as one session each, subagents each their own, with IDs derived
 * from the source, so that a rerun is idempotent:
 * - an unchanged source costs the `stat` its walk already made, and writes nothing;
 * - a grown one appends its new complete entries, in one commit per session;
 * - a source whose imported part changed is reported (SESSION_SOURCE_CHANGED) and left alone;
 * - what a source is still writing waits: a torn last line, and a response whose blocks may still
 *   be arriving, until a later line shows it complete or the source has been quiet for `quietMs`
 *   (judged by its modification time).
 *
 * The sessions themselves are the truth: the state a sync keeps (`SyncFiles.loadState`) only says
 * which sources were unchanged since, so that they need not be read; losing it costs one full read.
 * The files are reached through the `SyncFiles` port (`@session-tree/file` implements it), so the
 * core stays free of any platform module.
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Import from "./Import.js"
import * as internal from "./internal/sync.js"
import type { Sessions } from "./Sessions.js"
import type { SessionError } from "./SessionError.js"

/**
 * A source file as a walk or a stat saw it.
 *
 * @since 0.2.0
 * @category models
 */
export interface SourceFile {
  /** Absolute. */
  readonly path: string
  readonly size: number
  readonly mtimeMs: number
  /** Differs whenever the file may have changed: its device, inode, size, modification and change times. */
  readonly fingerprint: string
}

/**
 * What a sync remembers of each source it synced completely: its fingerprint then, and the
 * sessions it made. Never trusted over the sessions: it only lets an unchanged source go unread.
 *
 * @since 0.2.0
 * @category models
 */
export interface SyncState {
  readonly sources: Readonly<Record<string, { readonly fingerprint: string; readonly sessions: ReadonlyArray<string>; readonly pending: boolean }>>
}

/**
 * The files a sync reads and the state it keeps, as a platform provides them.
 *
 * @since 0.2.0
 * @category ports
 */
export interface SyncFilesService {
  /**
   * The `.jsonl` files under `roots` (each a file or a directory, walked recursively, links not
   * followed), except under `exclude`, sorted by path. SESSION_NOT_FOUND for a root that is not there.
   */
  readonly walk: (roots: ReadonlyArray<string>, exclude: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<SourceFile>, SessionError>
  /** A file's bytes as far as it went when it was opened, with what `fstat` said then. */
  readonly read: (path: string) => Effect.Effect<{ readonly bytes: Uint8Array; readonly file: SourceFile }, SessionError>
  /** The state of the last sync; empty when there is none or it cannot be read (it is only a cache). */
  readonly loadState: Effect.Effect<SyncState>
  readonly saveState: (state: SyncState) => Effect.Effect<void, SessionError>
}

/** @since 0.2.0 @category ports */
export class SyncFiles extends Context.Tag("@session-tree/SyncFiles")<SyncFiles, SyncFilesService>() {}

/**
 * What became of one source: `unchanged` (not read: its fingerprint is the one synced),
 * `current` (read; nothing new), `synced` (sessions created or extended), `ignored` (not a
 * transcript: no format read, or a session-tree file), `changed` (SESSION_SOURCE_CHANGED: what
 * was imported of it is no longer what it says; left alone), `failed` (any other error).
 *
 * @since 0.2.0
 * @category models
 */
export type SourceStatus = "unchanged" | "current" | "synced" | "ignored" | "changed" | "failed"

/** @since 0.2.0 @category models */
export interface SourceReport {
  readonly path: string
  readonly status: SourceStatus
  readonly format?: Import.Format | undefined
  /** Each session of the source: its ID and location, whether created, how many entries appended. */
  readonly sessions: ReadonlyArray<{ readonly id: string; readonly location: string; readonly created: boolean; readonly appended: number }>
  /** Lines not stored, per kind (without `keepAll`), and lines kept whole, per kind. */
  readonly skipped: Readonly<Record<string, number>>
  readonly kept: Readonly<Record<string, number>>
  /** Damaged lines recorded (with `skipDamaged`). */
  readonly damaged: ReadonlyArray<Import.Damaged>
  readonly torn?: Import.TornLine | undefined
  /** Lines waiting for what they belong to to be complete. */
  readonly pending: number
  readonly error?: SessionError | undefined
}

/** @since 0.2.0 @category models */
export interface SyncReport {
  readonly sources: ReadonlyArray<SourceReport>
}

/** @since 0.2.0 @category models */
export interface SyncOptions {
  /** Where the session of a session ID goes; by default its ID, on a backend that locates sessions by ID. */
  readonly locate?: ((sessionId: string) => string) | undefined
  /** Store what has no place in version 2 as `custom` entries `<format>:<kind>`. */
  readonly keepAll?: boolean | undefined
  /** Import around damaged lines, recording each (`Import.convert`). */
  readonly skipDamaged?: boolean | undefined
  /** How long a source must have been unchanged for what may still be arriving to be stored. Default `QUIET_MS`. */
  readonly quietMs?: number | undefined
  /** Directories the walk leaves out (the target directory). */
  readonly exclude?: ReadonlyArray<string> | undefined
  /**
   * Clears what an interrupted commit left at a session (files: `Recovery.recover`), when a session
   * stays busy after other writers had their turns; without it such a session is reported failed.
   */
  readonly recover?: ((location: string) => Effect.Effect<unknown, SessionError>) | undefined
}

/**
 * How long, by default, a source must have been unchanged for a response whose blocks may still
 * be arriving to be stored: 10 seconds.
 *
 * @since 0.2.0
 * @category constants
 */
export const QUIET_MS: number = internal.QUIET_MS

/**
 * Syncs every transcript under `roots`. Fails only when the walk fails (a root that is not
 * there) or the state cannot be saved; each source's own problem is in its report.
 *
 * @since 0.2.0
 * @category syncing
 */
export const sync: (roots: ReadonlyArray<string>, options?: SyncOptions) => Effect.Effect<SyncReport, SessionError, Sessions | SyncFiles> =
  internal.sync

/**
 * Syncs the given files, as a walk found them or a watcher saw them change.
 *
 * @since 0.2.0
 * @category syncing
 */
export const syncFiles: (files: ReadonlyArray<SourceFile>, options?: SyncOptions) => Effect.Effect<SyncReport, SessionError, Sessions | SyncFiles> =
  internal.syncFiles

/**
 * The file name of a session in a sync's directory: `<id>.jsonl` for an ID of letters, digits,
 * `.`, `_` and `-`; otherwise those kept, the rest `_`, and a part of the ID's SHA-256 so that
 * distinct IDs stay distinct.
 *
 * @since 0.2.0
 * @category locations
 */
export const fileName: (sessionId: string) => string = internal.fileName

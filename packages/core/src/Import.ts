/**
 * The common front of every import, by `import FILE` or by `sync`: which format a source is, read from
 * its content; its lines, with a torn last line (the agent still writing it) left out and
 * reported; damage refused whole, naming the line, or (`skipDamaged`) left out and recorded, each
 * line (its number, bytes and why) in a `custom` entry `session-tree:damaged-line` of the session
 * and in the result; and the format's converter (`ClaudeSession`, `PiSession`, `CodexSession`), whose
 * sessions, counts and withheld lines the result holds. `docs/import.md` gives every format's
 * mapping. Pure: bytes in, records out, no I/O and no platform module.
 *
 * @since 0.2.0
 */
import type * as Either from "effect/Either"
import * as internal from "./internal/imports.js"
import * as links from "./internal/links.js"
import * as source from "./internal/source.js"
import type { InputError, SessionError } from "./SessionError.js"

/**
 * The formats read: this project's sessions (`session-tree`, stored as they are, never
 * converted), Pi coding-agent sessions (`pi`, format 3), Claude Code transcripts (`claude`), Codex
 * rollouts (`codex`).
 *
 * @since 0.2.0
 * @category models
 */
export type Format = internal.Format

/** @since 0.2.0 @category constants */
export const FORMATS: ReadonlyArray<Format> = internal.FORMATS

/** @since 0.2.0 @category models */
export type SourceLine = source.SourceLine
/** A last line without its newline that is not a whole record: left out. @since 0.2.0 @category models */
export type TornLine = source.TornLine
/** @since 0.2.0 @category models */
export type SourceLines = source.SourceLines
/** @since 0.2.0 @category models */
export type ImportedSession = internal.ImportedSession
/** @since 0.2.0 @category models */
export type Damaged = internal.Damaged
/** @since 0.2.0 @category models */
export type Imported = internal.Imported
/** @since 0.2.0 @category models */
export type ImportOptions = internal.ImportOptions

/**
 * The custom type of the entry that keeps a damaged line with `skipDamaged`: its data is
 * `{ line, code, reason, text }` (or `base64` for bytes that are not UTF-8).
 *
 * @since 0.2.0
 * @category constants
 */
export const DAMAGED_LINE: typeof links.DAMAGED_LINE = links.DAMAGED_LINE

/**
 * A source's lines: each one JSON object with its 1-based line number; the damaged ones (not
 * UTF-8, not one JSON object, a number no JavaScript number holds exactly) listed apart; a last
 * line without its newline that does not parse, left out as torn. Never fails.
 *
 * @since 0.2.0
 * @category reading
 */
export const readSource: (bytes: Uint8Array) => SourceLines = source.readSource

/**
 * The format of a source, from its first lines; SESSION_UNKNOWN_FORMAT (naming every format read)
 * when it is none of them.
 *
 * @since 0.2.0
 * @category reading
 */
export const detect: (bytes: Uint8Array) => Either.Either<Format, InputError> = internal.detect

/**
 * Converts a source (Pi, Claude Code or Codex) to version-2 sessions: the source's own first, then
 * its subagents'. Without `skipDamaged`, the first damaged line in file order is refused with its
 * code and line (SESSION_INVALID_UTF8, SESSION_INVALID_JSON, SESSION_INVALID_RECORD), as is the
 * first line the converter refuses; with it, each such line is left out and recorded, and what
 * hangs from it hangs from its parent. SESSION_UNKNOWN_FORMAT for a source of no known format;
 * SESSION_INVALID_OPTIONS for a session-tree file (stored as it is, never converted).
 *
 * @since 0.2.0
 * @category converting
 */
export const convert: (bytes: Uint8Array, options?: ImportOptions) => Either.Either<Imported, SessionError> = internal.convert

/**
 * The parent session a Claude Code subagent's own file names, when the conversion could not name
 * the tool call that started it (no `parent` given, or none found there): the session whose
 * transcript to look for.
 *
 * @since 0.2.0
 * @category subagents
 */
export const parentToFind: (imported: Imported) => string | undefined = internal.parentToFind

/**
 * Where session `sessionId`'s transcript is looked for, seen from its subagent's file at `path`
 * (`/` separators): where Claude Code keeps it, beside it (2.0) or two directories up, from
 * `<sessionId>/subagents/` (2.1); and, among `names` (the files beside it), the Codex rollouts of
 * that thread (`rollout-<time>-<sessionId>.jsonl`).
 *
 * @since 0.2.0
 * @category subagents
 */
export const parentPaths: (path: string, sessionId: string, names?: ReadonlyArray<string>) => ReadonlyArray<string> = internal.parentPaths

/**
 * Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`) →
 * a version-2 session (`import --from claude`; `docs/import.md` gives the
 * mapping). Pure: bytes in, records out, no I/O and no platform module.
 *
 * A transcript is a `.jsonl` file of lines of many types; the conversation is
 * its `user` and `assistant` lines, linked by `uuid` / `parentUuid`, whose
 * `message` holds Anthropic Messages API content blocks. Everything else
 * (progress, hook and timing lines, file-history snapshots, titles, summaries,
 * sub-agent sidechains, …) is skipped and counted by kind.
 */
import type * as Either from "effect/Either"
import * as Internal from "./internal/claude.js"
import type { CorruptError } from "./SessionError.js"

/**
 * A converted transcript, frozen: a version-2 header (the transcript's
 * `sessionId` and the first timestamp in it), its entries in file order, and
 * the lines skipped per kind (`progress`, `file-history-snapshot`,
 * `system:turn_duration`, `sidechain`, …).
 */
export type Converted = Internal.ConvertedClaude

/**
 * Converts the bytes of a Claude Code transcript to version 2:
 * - text, thinking (with its `signature` in `options.anthropic`), redacted
 *   thinking (`""`, its `data` in `options.anthropic.redactedData`), images
 *   and documents (file parts), `tool_use` (tool-call parts), server-run tool
 *   calls and their results (provider-executed calls and tool-result parts);
 * - the blocks of one API response, which Claude Code writes one per line with
 *   the same `message.id`, become one assistant message whose ID is its first
 *   line's `uuid`; the results of its calls are chained after it in file order
 *   (Claude Code hangs each from the line of its call, which would leave all
 *   but one off the conversation's path);
 * - each `tool_result` block is a tool message (a line's other blocks follow
 *   as a user message), with the line's `toolUseResult` as its `result` when
 *   the line holds one result;
 * - a compaction boundary and its summary line become one `compaction` entry
 *   (`firstKeptEntryId` null, `tokensBefore` from `compactMetadata.preTokens`)
 *   under the boundary's logical parent.
 *
 * Returns an `Either` (also an Effect): Left with the first problem, whose
 * `line` is the 1-based line of the transcript: SESSION_INVALID_UTF8,
 * SESSION_INVALID_JSON (a line that is not one JSON object), SESSION_INVALID_RECORD
 * (a line without a string type, a conversation line without uuid or ISO
 * timestamp, an inexact number), SESSION_INVALID_HEADER (no sessionId at all;
 * a Pi or session-tree file), SESSION_INVALID_MESSAGE (an unknown block, a
 * message that is not valid Message IR v2 once mapped), SESSION_DUPLICATE_ID,
 * SESSION_UNKNOWN_PARENT, SESSION_TOOL_LINK (a result whose call is nowhere
 * earlier); and whatever the loader refuses in the converted session (a call
 * answered twice, a line over the cap, …), at the line the entry comes from.
 */
export const fromClaude: (bytes: Uint8Array) => Either.Either<Converted, CorruptError> = Internal.fromClaude

/**
 * Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, and the subagents'
 * `agent-<id>.jsonl` beside them or under `<session>/subagents/`) → version-2 sessions (`import`,
 * `sync`; `docs/import.md` gives the mapping). Pure: lines in, records out, no I/O and no platform
 * module.
 *
 * A transcript is a `.jsonl` file of lines of many types; the conversation is its `user` and
 * `assistant` lines, linked by `uuid` / `parentUuid`, whose `message` holds Anthropic Messages API
 * content blocks. `ai-title`, `summary` and `custom-title` lines become titles; a subagent's lines
 * (sidechains) become a session of their own, linked both ways to the session and the tool call
 * that started it; every other line is counted by kind, or kept whole with `keepAll`.
 */
import * as Either from "effect/Either"
import * as Internal from "./internal/claude.js"
import { readSource, type SourceLine, strictly, type TornLine } from "./internal/source.js"
import type { CorruptError } from "./SessionError.js"

/**
 * One converted session: a version-2 header, its entries in file order, and the source line of each entry.
 *
 * @since 0.2.0
 * @category models
 */
export type ConvertedSession = Internal.ConvertedSession

/**
 * A converted transcript, frozen: its own session (the header's ID is the transcript's
 * `sessionId`, or for a subagent's file `<sessionId>.agent-<agentId>`; its timestamp the first in
 * the file), the sessions of the subagents whose lines it holds inline (sidechains), the lines read
 * per kind, those not stored (`skipped`) or kept whole (`kept`) per kind, and the lines withheld as
 * still changing (`pending`, with `final: false`).
 *
 * @since 0.2.0
 * @category models
 */
export type ConvertedLines = Internal.ConvertedClaude

/**
 * `ConvertedLines`, and the last line left out because it was cut short (the agent still writing it).
 *
 * @since 0.2.0
 * @category models
 */
export interface Converted extends ConvertedLines {
  readonly torn: TornLine | undefined
}

/**
 * How a transcript is converted: `keepAll`, `final`, `skip`, `stored` (see each field).
 *
 * @since 0.2.0
 * @category models
 */
export type Options = Internal.ClaudeOptions

/**
 * What an earlier conversion stored, by session ID and entry ID (`Options.stored`).
 *
 * @since 0.2.0
 * @category models
 */
export type StoredEntries = Internal.StoredEntries

/**
 * The prefix of the custom type of a line kept whole with `keepAll`: `claude:` and the line's kind.
 *
 * @since 0.2.0
 * @category constants
 */
export const KEPT_PREFIX: typeof Internal.KEPT_PREFIX = Internal.KEPT_PREFIX

/**
 * Converts the lines of a Claude Code transcript (parsed, each with its line number) to version 2:
 * - text, thinking (its `signature` in `options.anthropic` as `{ type: "thinking", signature }`),
 *   redacted thinking (`""`, `options.anthropic` `{ type: "redacted_thinking", redactedData }`),
 *   images and documents (file parts), `tool_use` (tool-call parts), server-run tool calls and
 *   their results (provider-executed calls and tool-result parts);
 * - the blocks of one API response, which Claude Code writes one per line chained by `parentUuid`
 *   with the same `message.id`, become one assistant message whose ID is its first line's `uuid`
 *   (a block written twice is one part; another block under the same tool-call ID is refused);
 *   the results of its calls are chained after it in file order;
 * - each `tool_result` block is a tool message (a line's other blocks follow as a user message),
 *   with the line's `toolUseResult` as its `result` when the line holds one result;
 * - a compaction boundary and its summary line become one `compaction` entry under the boundary's
 *   logical parent, or where the file's order puts it when that line is not in the file;
 * - titles, subagents' sessions and links, lines kept whole (`docs/import.md`).
 *
 * Returns an `Either` (also an Effect): Left with the first problem, whose `line` is the 1-based
 * line of the transcript: SESSION_INVALID_RECORD (a line without a string type, a conversation
 * line without uuid or ISO timestamp), SESSION_INVALID_HEADER (no sessionId at all; a Pi or
 * session-tree file), SESSION_INVALID_MESSAGE (an unknown block, a message that is not valid
 * Message IR v2 once mapped), SESSION_DUPLICATE_ID, SESSION_UNKNOWN_PARENT, SESSION_TOOL_LINK (a
 * result whose call is nowhere earlier); and whatever the loader refuses in a converted session (a
 * call answered twice, a line over the cap, …), at the line the entry comes from.
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromClaudeLines: (lines: ReadonlyArray<SourceLine>, options?: Options) => Either.Either<ConvertedLines, CorruptError> =
  Internal.fromClaudeLines

/**
 * `fromClaudeLines` on the bytes of a transcript: a last line cut short is left out (`torn`);
 * any other line that is not one JSON object is refused (SESSION_INVALID_UTF8,
 * SESSION_INVALID_JSON, SESSION_INVALID_RECORD for a number that cannot be held exactly).
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromClaude = (bytes: Uint8Array, options?: Options): Either.Either<Converted, CorruptError> => {
  const source = readSource(bytes)
  return Either.map(strictly(source, (lines) => Internal.fromClaudeLines(lines, options)), (converted) => Object.freeze({ ...converted, torn: source.torn }))
}

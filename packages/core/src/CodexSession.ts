/**
 * Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) → a
 * version-2 session (`docs/import.md`, "Codex rollouts", gives the mapping, kind by kind).
 * Pure: lines in, records out, no I/O and no platform module.
 *
 * A rollout is one JSON object per line, `{timestamp, type, payload}`: the
 * `session_meta` first, then `response_item` lines (the items the model was
 * sent and answered: messages, reasoning, tool calls and their outputs),
 * `turn_context` (the model and settings of each turn), `compacted`, and
 * `event_msg` lines (what Codex showed and counted: token counts, and repeats
 * of the items for its display). Early rollouts have no envelope: a bare
 * `{id, timestamp, …}` first, then bare items and `record_type` lines.
 *
 * Each line becomes at most a couple of entries that depend only on that line
 * and the ones before it, with IDs `<session ID>:<line>` (a line's second
 * entry `<session ID>:<line>.1`); the session is one branch, each entry the
 * child of the one before. So converting the same lines twice gives the same
 * records, and a rollout that grew converts to the records of its first part
 * followed by new ones: a sync appends only those.
 *
 * @since 0.2.0
 */
import type * as Either from "effect/Either"
import * as Internal from "./internal/codex.js"
import type { CorruptError } from "./SessionError.js"

/**
 * One line of a source file, as the import's common front reads it: its
 * 1-based line number and the JSON object on it.
 *
 * @since 0.2.0
 * @category models
 */
export type SourceLine = Internal.SourceLine

/**
 * How a rollout is converted.
 *
 * `keepAll`: store every line that has no version-2 place of its own (Codex's
 * state and events: `task_started`, `exec_command_end`, rate limits, turn
 * contexts that change no model, the repeats of items, kinds added later, …)
 * as a `custom` entry `codex:<kind>` holding the line without its timestamp,
 * so that nothing of the file is lost; `skipped` is then empty.
 *
 * @since 0.2.0
 * @category models
 */
export type CodexOptions = Internal.CodexOptions

/**
 * A converted rollout, frozen:
 * - `header`: version 2, the session meta's `id` and `timestamp`;
 * - `entries`: in file order, one branch;
 * - `origins`: the source line of each entry (`origins[i]` for `entries[i]`);
 * - `read`: every line, counted by kind (`session_meta`, `turn_context`,
 *   `compacted`, `response_item:<type>`, `event_msg:<type>`, any other line
 *   type; `state` for the early layout's `record_type` lines);
 * - `skipped`: the lines counted but not stored, by kind: repeats, token
 *   counts that repeat the previous one or hold rate limits only, turn
 *   contexts that change no model, and (without `keepAll`) every kind with no
 *   place. Each line read is either the origin of an entry or skipped.
 *
 * @since 0.2.0
 * @category models
 */
export type ConvertedCodex = Internal.ConvertedCodex

/**
 * The custom type of the entry holding a `session_meta` line (the first entry
 * of a converted rollout): `data` is the line without its timestamp, the base
 * instructions' text aside (it is the system message that follows).
 *
 * @since 0.2.0
 * @category constants
 */
export const SESSION_META: typeof Internal.SESSION_META = Internal.SESSION_META

/**
 * The custom type of the entry right after a compaction holding the
 * `compacted` line's fields besides its message (`replacement_history`, the
 * window IDs, …).
 *
 * @since 0.2.0
 * @category constants
 */
export const COMPACTION_FIELDS: typeof Internal.COMPACTION_FIELDS = Internal.COMPACTION_FIELDS

/**
 * The prefix of the custom type of a line kept whole: `codex:` and its kind
 * (`codex:event_msg:task_started`, `codex:response_item:ghost_snapshot`, …).
 *
 * @since 0.2.0
 * @category constants
 */
export const WHOLE_PREFIX: typeof Internal.WHOLE_PREFIX = Internal.WHOLE_PREFIX

/**
 * The provider of the `model` entries when no session meta names one
 * (`model_provider`, absent from older rollouts): Codex's default provider.
 *
 * @since 0.2.0
 * @category constants
 */
export const DEFAULT_PROVIDER: typeof Internal.DEFAULT_PROVIDER = Internal.DEFAULT_PROVIDER

/**
 * The `event_msg` kinds that repeat an item written beside them
 * (`user_message`, `agent_message`, `agent_reasoning`,
 * `agent_reasoning_raw_content`, and `context_compacted` for a `compacted`
 * line): counted, not stored twice.
 *
 * @since 0.2.0
 * @category constants
 */
export const REPEATS: ReadonlySet<string> = Internal.REPEATS

/**
 * Converts the lines of a Codex rollout to a version-2 session, losing
 * nothing of the conversation (`docs/import.md`, "Codex rollouts"):
 * - the session meta: a `custom` entry `codex:session_meta`, and its base
 *   instructions (the model's system prompt) a system message after it;
 * - messages: user and assistant messages (text and images); developer
 *   messages are system messages (`options.codex.role: "developer"`);
 * - reasoning: an assistant message of reasoning parts (one per summary text)
 *   whose `options.openai` is `{ itemId?, encryptedContent }`, the encrypted
 *   reasoning byte for byte, as `@effect/ai-openai` sends it back;
 * - function calls, custom tool calls, local shell calls and tool searches:
 *   an assistant message of one tool-call part; their outputs tool messages;
 *   web searches provider-executed tool calls;
 * - token counts: the usage (`meta.usage`) of an assistant message with no
 *   parts, at the count's place (the entries of a response are already
 *   stored when Codex writes its count);
 * - turn contexts: a `model` entry when the model or reasoning effort
 *   changes; compactions: `compaction` entries;
 * - every field of an item with no key of its own: `options.codex` of its
 *   message or part. A line of a kind with a place that does not fit it (an
 *   output of a call that was never made, a call ID used twice, a message of
 *   an unknown role, …) is kept whole as a `custom` entry `codex:<kind>`.
 *
 * Returns an `Either` (also an Effect): Left with the first problem, a
 * `CorruptError` whose `line` is the source line: SESSION_INVALID_HEADER when
 * the first line is not a session meta (the file is not a Codex rollout; the
 * message says what was expected, and what the line looks like: a
 * session-tree or Pi session, a Claude Code transcript); SESSION_INVALID_RECORD
 * for a line without a string type, a payload object or (except in the early
 * layout) an ISO-8601 UTC timestamp as `toISOString` writes it;
 * SESSION_DUPLICATE_ID for a line number given twice; and whatever the loader
 * refuses in the converted session (a line over the version-2 cap, …), at
 * the line the entry comes from. The records are taken as parsed: numbers
 * that their text held inexactly are the front's to refuse (`fromCodex` does).
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromCodexLines: (
  lines: ReadonlyArray<SourceLine>,
  options?: CodexOptions
) => Either.Either<ConvertedCodex, CorruptError> = Internal.fromCodexLines

/**
 * `fromCodexLines` on the bytes of a rollout: UTF-8, then one JSON object per
 * line. Refuses, before any line is converted, bytes that are not UTF-8
 * (SESSION_INVALID_UTF8), a line that is not one JSON object, a torn last
 * line included (SESSION_INVALID_JSON), and a number the line's text holds
 * that no JavaScript number holds exactly (SESSION_INVALID_RECORD).
 *
 * @since 0.2.0
 * @category conversions
 */
export const fromCodex: (bytes: Uint8Array, options?: CodexOptions) => Either.Either<ConvertedCodex, CorruptError> =
  Internal.fromCodex

/**
 * Pi coding-agent session files (format v3, `@mariozechner/pi-coding-agent`)
 * → this project's records (`import --from pi`). Pure: bytes in, records out,
 * no I/O and no platform module.
 *
 * Two conversions: `fromPiV2` to version 2, which keeps every field Pi wrote
 * (`docs/import.md` gives its mapping), and `fromPi` to version 1, which keeps
 * what Message IR v1 holds and refuses or (lossy) drops the rest; the rest of
 * this comment documents `fromPi` (`docs/format.md`, "Importing Pi sessions").
 *
 * The conversion is one pass over Pi's lines in file order. Pi's own entries
 * are read through the Schemas below, which check them only as far as the
 * conversion depends on them (the envelope, IDs, parents, the parts of
 * messages); everything the result must satisfy is then
 * checked by the loader itself: the records are encoded canonically and decoded
 * with `Codec.decodeLines`, so an import can never produce a session that a load
 * would refuse. Problems of the Pi file are reported first, in file order; then
 * those of the converted session (tool links, caps), at the Pi line they come
 * from.
 *
 * Mapping, per Pi entry type (`type` of each line after the header):
 * - `message`: by `message.role`
 *   - `user` → `{ role: "user", id, content }`; a string content is kept as is,
 *     a part array becomes its text parts joined with `"\n"` (the separator Pi's
 *     own providers use when they flatten parts into one string);
 *   - `assistant` → `{ role: "assistant", id, content, toolCalls }`: the text
 *     parts joined with `"\n"`, and each `toolCall` part as `{ id, name, arguments }`
 *     in order (an aborted message with `content: []` becomes `""` and `[]`);
 *   - `toolResult` → `{ role: "tool", id, toolCallId, toolName, content, isError }`,
 *     the text parts joined with `"\n"`;
 *   - `bashExecution` (a `!` command the user ran), `custom` (an extension's
 *     message), `branchSummary`, `compactionSummary`: content Message IR cannot
 *     hold, see below.
 *   The message `id` is the Pi entry ID: Pi messages have none of their own, and
 *   the entry ID is unique in the file and stable across imports.
 * - `model_change`, `thinking_level_change`, `label`, `session_info`, `custom`:
 *   not conversation content; skipped (counted in `skipped`, never an error),
 *   and their children re-attached to the nearest kept ancestor.
 * - `compaction`, `branch_summary`, `custom_message`: content Message IR cannot
 *   hold (a summary that stands in for earlier context, an extension's injected
 *   message); see below. Re-attaching past a dropped compaction keeps every
 *   message before it: what is lost is only the summary.
 * - any other type, role or part type is refused (SESSION_INVALID_RECORD,
 *   SESSION_INVALID_MESSAGE) even when lossy: it may hold content, and lossy
 *   only drops what is known.
 *
 * Unrepresentable content: images (parts of user and tool-result messages),
 * thinking blocks (parts of assistant messages, redacted ones included),
 * compactions, branch summaries, custom messages (`custom_message` entries and
 * `custom` messages), bash executions. Without `lossy` the first entry in file
 * order that holds any is refused with SESSION_INVALID_MESSAGE naming its Pi
 * entry ID, its line and what it holds. With `lossy` parts are removed from
 * their message (which is kept, so the tree keeps its shape) and whole entries
 * are dropped like skipped ones; `dropped` counts each kind.
 *
 * Metadata that is not conversation content is not kept and not counted as
 * lost: the header's `cwd`, `parentSession` and version; an assistant's `api`,
 * `provider`, `model`, `responseModel`, `responseId`, `diagnostics`, `usage`,
 * `stopReason`, `errorMessage`; a tool result's `details`; every message's epoch
 * `timestamp` (the entry's ISO timestamp is kept); signatures on parts
 * (`textSignature`, `thoughtSignature`); any other field of a known shape.
 *
 * The header keeps the Pi session's ID and timestamp; entries keep their IDs,
 * timestamps and order; parents are the nearest kept ancestors.
 */
import type * as Either from "effect/Either"
import type { SessionEntry, SessionHeader } from "./Record.js"
import type { CorruptError } from "./SessionError.js"
import * as File from "./internal/piFile.js"
import * as V1 from "./internal/piV1.js"
import * as V2 from "./internal/piV2.js"

/**
 * The only Pi session format this module reads. Pi migrates older files when it opens them.
 *
 * @since 0.1.0
 * @category constants
 */
export const PI_VERSION = File.PI_VERSION

/**
 * Options of `fromPi`.
 *
 * @since 0.1.0
 * @category models
 */
export interface FromPiOptions {
  /** Drop content Message IR cannot hold instead of refusing the file; `dropped` says how much. */
  readonly lossy?: boolean | undefined
}

/**
 * Content removed by a lossy conversion, per kind. All zero for a lossless one.
 *
 * @since 0.1.0
 * @category models
 */
export interface Dropped {
  /** Image parts of user and tool-result messages. */
  readonly images: number
  /** Thinking parts of assistant messages. */
  readonly thinking: number
  /** `compaction` entries and `compactionSummary` messages. */
  readonly compactions: number
  /** `branch_summary` entries and `branchSummary` messages. */
  readonly branchSummaries: number
  /** `custom_message` entries and `custom` messages. */
  readonly customMessages: number
  /** `bashExecution` messages. */
  readonly bashExecutions: number
}

/**
 * Entries that are not messages, skipped without loss, per Pi entry type.
 *
 * @since 0.1.0
 * @category models
 */
export interface Skipped {
  readonly modelChanges: number
  readonly thinkingLevelChanges: number
  readonly labels: number
  readonly sessionInfo: number
  readonly custom: number
}

/**
 * A converted Pi session; every part of it is frozen.
 *
 * @since 0.1.0
 * @category models
 */
export interface Converted {
  /** Version 1 of this project, with the Pi session's ID and timestamp. */
  readonly header: SessionHeader
  /** Valid Message IR v1 entries in Pi's file order (so parents come first), deeply frozen. */
  readonly entries: ReadonlyArray<SessionEntry>
  readonly dropped: Dropped
  readonly skipped: Skipped
}

// ---------------------------------------------------------------------------
// Pi's format 3, as Schemas: what this module reads of it. Unknown fields are
// ignored, as Pi ignores them. Fields carried over unchanged into Message IR
// (tool-call IDs, names and arguments, a result's `toolCallId`, `toolName` and
// `isError`, the header's ID and timestamp) are `Unknown` here: the loader's own
// decoder checks them on the converted record, so its explanation names them.

/**
 * The first line of a Pi session file.
 *
 * @since 0.1.0
 * @category models
 */
export const PiHeader: typeof File.PiHeader = File.PiHeader
/**
 * What every Pi entry after the header has: a type, an ID, a parent and an ISO timestamp.
 *
 * @since 0.1.0
 * @category models
 */
export const PiEntry: typeof File.PiEntry = File.PiEntry
/**
 * A `message` entry: the entry and its message, read by role.
 *
 * @since 0.1.0
 * @category models
 */
export const PiMessageEntry: typeof V1.PiMessageEntry = V1.PiMessageEntry
/**
 * A Pi user message, as Pi writes it.
 *
 * @since 0.1.0
 * @category models
 */
export const PiUserMessage: typeof V1.PiUserMessage = V1.PiUserMessage
/**
 * A Pi tool result message, as Pi writes it.
 *
 * @since 0.1.0
 * @category models
 */
export const PiToolResultMessage: typeof V1.PiToolResultMessage = V1.PiToolResultMessage
/**
 * A Pi assistant message, as Pi writes it.
 *
 * @since 0.1.0
 * @category models
 */
export const PiAssistantMessage: typeof V1.PiAssistantMessage = V1.PiAssistantMessage
/**
 * A text part of a Pi message.
 *
 * @since 0.1.0
 * @category models
 */
export const PiTextPart: typeof V1.PiTextPart = V1.PiTextPart
/**
 * Only the kind of an image or thinking part is read: Message IR never holds one.
 *
 * @since 0.1.0
 * @category models
 */
export const PiImagePart: typeof V1.PiImagePart = V1.PiImagePart
/**
 * A thinking part of a Pi assistant message.
 *
 * @since 0.1.0
 * @category models
 */
export const PiThinkingPart: typeof V1.PiThinkingPart = V1.PiThinkingPart
/**
 * A tool call part of a Pi assistant message.
 *
 * @since 0.1.0
 * @category models
 */
export const PiToolCallPart: typeof V1.PiToolCallPart = V1.PiToolCallPart

/**
 * Converts the bytes of a Pi session file (format v3) to this project's header
 * and entries; see the module's documentation for the mapping.
 *
 * Returns an `Either` (synchronous; in Effect 3 an `Either` is also an Effect,
 * so it can be yielded in `Effect.gen`): Right with the converted session, or
 * Left with the first problem as a `CorruptError` whose `line` is the 1-based
 * line of the Pi file:
 * - SESSION_INVALID_UTF8: the bytes are not UTF-8;
 * - SESSION_INVALID_JSON: a line that is not one JSON object (an empty line, a
 *   line cut short, trailing text; a byte order mark on the first line);
 * - SESSION_INVALID_HEADER: no header, one that is not Pi's (this project's own
 *   files included), a second header;
 * - SESSION_UNSUPPORTED_VERSION: a Pi format other than 3;
 * - SESSION_INVALID_RECORD: an entry without a valid type, ID, parent or ISO
 *   timestamp, or of an unknown type;
 * - SESSION_DUPLICATE_ID, SESSION_UNKNOWN_PARENT: among all Pi entries,
 *   skipped ones included (a parent must be an earlier entry);
 * - SESSION_INVALID_MESSAGE: content Message IR cannot hold (without `lossy`),
 *   an unknown role or part, or a message the loader's decoder refuses;
 * - SESSION_TOOL_LINK: a result without a call among its kept ancestors, a call
 *   answered twice on a branch, a tool-call ID repeated on a branch;
 * - SESSION_TOO_MANY_ENTRIES, SESSION_LINE_TOO_LONG, SESSION_FILE_TOO_LARGE:
 *   the caps of Codec, on the converted session (its entries, its canonical
 *   lines and generation), not on the Pi file, which may be larger.
 *
 * @since 0.1.0
 * @category conversions
 */
export const fromPi: (bytes: Uint8Array, options?: FromPiOptions) => Either.Either<Converted, CorruptError> = V1.fromPi

/**
 * A Pi session converted to version 2; every part of it is frozen.
 *
 * @since 0.1.0
 * @category models
 */
export type ConvertedV2 = V2.ConvertedV2

/**
 * The ID and custom type of the root entry holding the Pi header's fields that the header has no key for (`cwd`, `parentSession`).
 *
 * @since 0.1.0
 * @category constants
 */
export const SESSION_ENTRY: typeof V2.SESSION_ENTRY = V2.SESSION_ENTRY
/**
 * The custom type of the entry right after a compaction that holds its fields without a key (`details`, `fromHook`).
 *
 * @since 0.1.0
 * @category constants
 */
export const COMPACTION_FIELDS: typeof V2.COMPACTION_FIELDS = V2.COMPACTION_FIELDS
/**
 * The prefix of the custom type of a Pi entry kept whole (`pi:branch_summary`, `pi:message`, …).
 *
 * @since 0.1.0
 * @category constants
 */
export const WHOLE_PREFIX: typeof V2.WHOLE_PREFIX = V2.WHOLE_PREFIX
/**
 * `options.pi.content` of a message whose content Pi wrote as one string instead of parts.
 *
 * @since 0.1.0
 * @category constants
 */
export const STRING_CONTENT: typeof V2.STRING_CONTENT = V2.STRING_CONTENT

/**
 * Converts the bytes of a Pi session file (format v3) to a version-2 header
 * and entries, losing nothing (`docs/import.md`): every field of every Pi
 * object is either mapped to its version-2 key or kept verbatim under
 * `options.pi` of its part or message; entries with no version-2 kind of their
 * own (or not fitting it) are kept whole as `custom` entries `pi:<type>`.
 *
 * The header keeps the Pi session's ID and timestamp; the first entry is a
 * root `custom` entry `pi:session` holding the rest of Pi's header. Pi's
 * entries keep their IDs, parents and timestamps, in file order (a
 * compaction's children hang from the entry holding its other fields).
 *
 * Returns an `Either` (also an Effect): Right with the session, or Left with
 * the first problem, whose `line` is the 1-based line of the Pi file:
 * SESSION_INVALID_UTF8, SESSION_INVALID_JSON, SESSION_INVALID_HEADER and
 * SESSION_UNSUPPORTED_VERSION as `fromPi`; SESSION_INVALID_RECORD for an entry
 * without a valid envelope, of an unknown type, with a field a message entry
 * has no place for, or holding a number that cannot be held exactly;
 * SESSION_DUPLICATE_ID, SESSION_UNKNOWN_PARENT; SESSION_INVALID_MESSAGE for an
 * unknown role or part, or a message that is not valid Message IR v2 once
 * mapped (an empty tool-call ID, an image that is not canonical base64, …).
 * Last, the loader reads the converted session: what it refuses (a broken tool
 * link, a line over the cap, …) is reported with its code at the Pi line the
 * entry comes from.
 *
 * @since 0.1.0
 * @category conversions
 */
export const fromPiV2: (bytes: Uint8Array) => Either.Either<ConvertedV2, CorruptError> = V2.fromPiV2

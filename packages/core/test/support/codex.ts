/**
 * Codex rollouts for the tests: lines built from the format Codex writes
 * (`codex-rs/protocol`: `RolloutLine` = `{timestamp, type, payload}`), and the
 * checks every conversion must pass whatever its input.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { ConvertedCodex, SourceLine } from "../../src/CodexSession.js"
import * as RecordV2 from "../../src/RecordV2.js"
import { isSessionError, type SessionError } from "../../src/SessionError.js"

export type Obj = Record<string, unknown>

export const SESSION = "01950000-aaaa-7bbb-8ccc-000000000001"
/** A canonical timestamp, `n` seconds into the session. */
export const ts = (n: number): string => new Date(Date.UTC(2026, 2, 1, 10, 0, 0) + n * 1000).toISOString()

export const line = (n: number, type: string, payload: unknown): Obj => ({ timestamp: ts(n), type, payload })
export const meta = (extra: Obj = {}): Obj =>
  line(0, "session_meta", {
    id: SESSION,
    timestamp: ts(0),
    cwd: "/work",
    originator: "codex_cli_rs",
    cli_version: "0.120.0",
    source: "cli",
    model_provider: "openai",
    base_instructions: { text: "You are Codex, a coding agent." },
    git: { commit_hash: "0123abcd", branch: "main" },
    ...extra
  })
export const item = (n: number, payload: Obj): Obj => line(n, "response_item", payload)
export const event = (n: number, payload: Obj): Obj => line(n, "event_msg", payload)
export const turn = (n: number, model: string, effort: string | null): Obj =>
  line(n, "turn_context", { turn_id: `turn-${n}`, cwd: "/work", approval_policy: "on-request", sandbox_policy: { type: "workspace-write" }, model, effort, summary: "auto" })
export const text = (role: string, t: string, extra: Obj = {}): Obj =>
  ({ type: "message", role, content: [{ type: role === "assistant" ? "output_text" : "input_text", text: t }], ...extra })
export const usage = (input: number, cached: number, output: number, reasoning: number): Obj =>
  ({ input_tokens: input, cached_input_tokens: cached, output_tokens: output, reasoning_output_tokens: reasoning, total_tokens: input + output })
export const tokenCount = (n: number, last: Obj, total: Obj): Obj =>
  event(n, { type: "token_count", info: { total_token_usage: total, last_token_usage: last, model_context_window: 272000 }, rate_limits: { primary: { used_percent: 3.5 } } })

/** Source lines numbered from 1, as the import's front gives them. */
export const numbered = (records: ReadonlyArray<Obj>): Array<SourceLine> => records.map((record, i) => ({ line: i + 1, record }))
export const jsonl = (records: ReadonlyArray<unknown>): Uint8Array => new TextEncoder().encode(records.map((r) => JSON.stringify(r)).join("\n") + "\n")

const strict = { onExcessProperty: "error", exact: true } as const
const decodeEntry = Schema.decodeUnknownEither(RecordV2.SessionEntry, strict)
const decodeHeader = Schema.decodeUnknownEither(RecordV2.SessionHeader, strict)

/**
 * Why a conversion's answer is wrong, or undefined: a success whose records are not valid version 2
 * on their own, not one branch in order, or whose counts do not add up; a failure that is not a
 * typed error naming a source line (bytes that are not UTF-8 name none).
 */
export const judge = (result: Either.Either<ConvertedCodex, SessionError>, lines: ReadonlyArray<number>): string | undefined => {
  if (Either.isLeft(result)) {
    const error = result.left
    if (!isSessionError(error) || error._tag !== "CorruptError") return `not a CorruptError: ${String(error)}`
    if (error.code === "SESSION_INVALID_UTF8") return undefined
    if (error.line === undefined || !lines.includes(error.line)) return `${error.code} names line ${error.line}, not a source line`
    return undefined
  }
  const converted = result.right
  if (!Object.isFrozen(converted) || !Object.isFrozen(converted.entries)) return "the result is not frozen"
  if (Either.isLeft(decodeHeader(JSON.parse(JSON.stringify(converted.header))))) return "an invalid header"
  let parent: string | null = null
  for (const [i, entry] of converted.entries.entries()) {
    const text = JSON.stringify(entry)
    const decoded = decodeEntry(JSON.parse(text))
    if (Either.isLeft(decoded) || JSON.stringify(decoded.right) !== text) return `entry ${i} is not a canonical version-2 entry`
    if (entry.parentId !== parent) return `entry ${i} is not the child of the one before`
    if (!Object.isFrozen(entry)) return `entry ${i} is not frozen`
    parent = entry.id
  }
  if (converted.origins.length !== converted.entries.length) return "not one origin per entry"
  const sum = (counts: Readonly<Record<string, number>>) => Object.values(counts).reduce((a, b) => a + b, 0)
  if (new Set(converted.origins).size + sum(converted.skipped) !== sum(converted.read)) return "stored and skipped lines do not add up to the lines read"
  if (sum(converted.read) !== lines.length) return "not every line is read"
  return undefined
}

/** Every string, number and boolean of a JSON value, with the key it is under. */
export const leaves = (value: unknown, key = ""): Array<readonly [string, string | number | boolean]> => {
  if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") return [[key, value]]
  if (Array.isArray(value)) return value.flatMap((v) => leaves(v, key))
  if (typeof value === "object" && value !== null) return Object.entries(value).flatMap(([k, v]) => leaves(v, k))
  return []
}

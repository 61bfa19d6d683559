/**
 * Import fuzzing: Claude Code transcripts, Pi sessions and Codex rollouts (written here, and the
 * real ones of the shared collection when it is there) with lines mutated at random (bytes
 * flipped, lines cut, glued, swapped, repeated, keys removed, values retyped, IDs pointed
 * elsewhere) go through the import's front with every combination of its options. Every answer
 * must be a converted session that loads, or a `SessionError` with one of the library's codes:
 * no exception, no untyped error. 10^4 mutated lines per format in `npm test`, 10^5 with
 * RELIABILITY=long.
 */
import * as Import from "@session-tree/core/Import"
import { isSessionError, SessionErrorCode } from "@session-tree/core/SessionError"
import * as Transcripts from "@session-tree/testing/Transcripts"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { expect, it } from "vitest"
import { count, report } from "./support/config.js"

const LINES = Number(process.env["RELIABILITY_IMPORT_LINES"] ?? count(10_000, 100_000))
const seed = Number(process.env["RELIABILITY_SEED"] ?? Date.now() % 1_000_000_007)
const CODES = new Set<string>(SessionErrorCode.literals)

/**
 * Lets the test runner's own messages through: the conversions are synchronous work, and a worker
 * that answers none of them for a minute is reported as an error of the run.
 */
const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve))

type Rng = () => number
const rngFrom = (start: number): Rng => {
  let s = start >>> 0 || 1
  return () => {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    return (s >>> 0) / 2 ** 32
  }
}
const pick = <A>(rng: Rng, items: ReadonlyArray<A>): A => items[Math.floor(rng() * items.length)]!

const ts = (n: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, 5) + n * 1000).toISOString()
const SESSION = "0c1d2e3f-0000-4000-8000-0000000000ff"

/** A Claude Code transcript of every kind of line the importer reads. */
const claude = (): Array<unknown> => {
  const c = { isSidechain: false, sessionId: SESSION, userType: "external" }
  const block = (uuid: string, parentUuid: string, n: number, id: string, content: unknown, stop: string | null = null) =>
    ({ parentUuid, ...c, type: "assistant", message: { id, role: "assistant", model: "m", content, stop_reason: stop, usage: { input_tokens: 1, output_tokens: 2 } }, uuid, timestamp: ts(n) })
  const user = (uuid: string, parentUuid: string | null, n: number, content: unknown, extra: object = {}) =>
    ({ parentUuid, ...c, type: "user", message: { role: "user", content }, uuid, timestamp: ts(n), ...extra })
  return [
    { type: "summary", summary: "A <b>title</b>", leafUuid: "u1" },
    user("u1", null, 1, "go"),
    block("a1", "u1", 2, "m1", [{ type: "thinking", thinking: "hm", signature: "c2ln" }]),
    block("a2", "a1", 3, "m1", [{ type: "tool_use", id: "t1", name: "Task", input: { prompt: "look" } }, { type: "tool_use", id: "t2", name: "Bash", input: { command: "ls" } }]),
    { parentUuid: "a2", ...c, type: "progress", data: {}, uuid: "p1", timestamp: ts(4) },
    { ...user("s1", null, 5, "look"), isSidechain: true },
    { ...block("s2", "s1", 6, "m9", [{ type: "text", text: "seen" }], "end_turn"), isSidechain: true },
    user("r1", "a2", 7, [{ type: "tool_result", tool_use_id: "t1", content: "seen" }], { toolUseResult: { agentId: "ab12" } }),
    user("r2", "p1", 8, [{ type: "tool_result", tool_use_id: "t2", content: [{ type: "text", text: "a" }, { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } }] }]),
    { type: "system", subtype: "turn_duration", parentUuid: "r2", ...c, uuid: "sd", timestamp: ts(9) },
    { parentUuid: null, logicalParentUuid: "r2", ...c, type: "system", subtype: "compact_boundary", uuid: "cb", timestamp: ts(10), compactMetadata: { preTokens: 9 } },
    user("cs", "cb", 11, "Summary.", { isCompactSummary: true }),
    block("a3", "cs", 12, "m2", [{ type: "redacted_thinking", data: "ZW5j" }, { type: "text", text: "done" }], "end_turn"),
    { type: "ai-title", aiTitle: "Fuzzed", sessionId: SESSION }
  ]
}

/** A Pi session of every entry kind. */
const pi = (): Array<unknown> => {
  const at = (id: string, parentId: string | null, n: number) => ({ id, parentId, timestamp: ts(n) })
  return [
    { type: "session", version: 3, id: SESSION, timestamp: ts(0), cwd: "/p" },
    { type: "model_change", ...at("m", null, 1), provider: "anthropic", modelId: "claude" },
    { type: "thinking_level_change", ...at("t", "m", 2), thinkingLevel: "high" },
    { type: "message", ...at("u", "t", 3), message: { role: "user", content: [{ type: "text", text: "hi" }], timestamp: 3 } },
    {
      type: "message",
      ...at("a", "u", 4),
      message: {
        role: "assistant",
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude",
        content: [{ type: "thinking", thinking: "hm", thinkingSignature: "c2ln" }, { type: "toolCall", id: "c1", name: "bash", arguments: { command: "ls" } }],
        usage: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0, totalTokens: 3 },
        stopReason: "toolUse",
        timestamp: 4
      }
    },
    { type: "message", ...at("r", "a", 5), message: { role: "toolResult", toolCallId: "c1", toolName: "bash", content: [{ type: "text", text: "x" }], isError: false, timestamp: 5 } },
    { type: "compaction", ...at("c", "r", 6), summary: "s", firstKeptEntryId: "u", tokensBefore: 9, details: {} },
    { type: "label", ...at("l", "c", 7), targetId: "a", label: "here" },
    { type: "session_info", ...at("i", "l", 8), name: "Fuzzed" },
    { type: "custom", ...at("x", "i", 9), customType: "ext", data: { n: 1 } }
  ]
}

/** A Codex rollout of the kinds its importer reads. */
const codex = (): Array<unknown> => {
  const line = (n: number, type: string, payload: unknown) => ({ timestamp: ts(n), type, payload })
  return [
    line(0, "session_meta", { id: "019a0000-0000-7000-8000-000000000001", timestamp: ts(0), cwd: "/p", originator: "codex_cli_rs", cli_version: "0.58.0", instructions: null }),
    line(1, "turn_context", { cwd: "/p", model: "gpt-5", effort: "medium" }),
    line(2, "response_item", { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] }),
    line(3, "event_msg", { type: "user_message", message: "hi" }),
    line(4, "response_item", { type: "reasoning", summary: [{ type: "summary_text", text: "Thinking." }], encrypted_content: "gAAAA" }),
    line(5, "response_item", { type: "function_call", name: "shell", arguments: "{\"command\":[\"ls\"]}", call_id: "call_1" }),
    line(6, "response_item", { type: "function_call_output", call_id: "call_1", output: "a.ts" }),
    line(7, "event_msg", { type: "token_count", info: { total_token_usage: { input_tokens: 5, output_tokens: 2 }, last_token_usage: { input_tokens: 5, output_tokens: 2 } } }),
    line(8, "response_item", { type: "message", role: "assistant", content: [{ type: "output_text", text: "done" }] })
  ]
}

const corpus = (kind: "claude" | "pi" | "codex", synthetic: Array<unknown>): Array<Array<string>> => {
  const real = Transcripts.files(kind)
    .map((name) => NFS.readFileSync(Path.join(Transcripts.dir(kind), name), "utf8"))
    .filter((text) => text.length < 150_000)
    .map((text) => text.split("\n").filter((l) => l !== ""))
  return [synthetic.map((r) => JSON.stringify(r)), ...real]
}

/** A JSON value with one random change somewhere in it: a key removed, a value retyped, a string changed. */
const mutateValue = (rng: Rng, value: unknown, depth = 0): unknown => {
  if (Array.isArray(value)) {
    if (value.length === 0 || rng() < 0.2) return rng() < 0.5 ? [] : [...value, pick(rng, [null, 1, "x", {}])]
    const i = Math.floor(rng() * value.length)
    return value.map((v, k) => (k === i ? mutateValue(rng, v, depth + 1) : v))
  }
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value)
    if (keys.length === 0 || depth > 6) return pick(rng, [null, "x", 1, []])
    const key = pick(rng, keys)
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) }
    const r = rng()
    if (r < 0.25) delete out[key]
    else if (r < 0.5) out[key] = pick(rng, [null, true, 0, -1, 1.5, "", "x", [], {}, "2026-13-45T00:00:00Z", "u1", "a1", "t1", "c1", "call_1"])
    else out[key] = mutateValue(rng, out[key], depth + 1)
    return out
  }
  if (typeof value === "string") return pick(rng, ["", value + "x", value.slice(1), "u1", "\u0000", "🙂".repeat(3)])
  return pick(rng, [null, "x", 12345678901234567890, -0, 1e400, {}])
}

/** One line changed by one of the mutations. */
const mutateLine = (rng: Rng, lines: Array<string>, i: number): void => {
  const text = lines[i]!
  switch (Math.floor(rng() * 8)) {
    case 0: // A byte flipped (maybe into invalid UTF-8 later, when the line is encoded with a lone surrogate).
      if (text.length > 0) {
        const at = Math.floor(rng() * text.length)
        lines[i] = text.slice(0, at) + String.fromCharCode(Math.floor(rng() * 0xffff)) + text.slice(at + 1)
      }
      return
    case 1: // Cut short.
      lines[i] = text.slice(0, Math.floor(rng() * text.length))
      return
    case 2: // Glued to the next.
      if (i + 1 < lines.length) lines.splice(i, 2, text + lines[i + 1]!)
      return
    case 3: // Swapped with another.
      {
        const j = Math.floor(rng() * lines.length)
        ;[lines[i], lines[j]] = [lines[j]!, text]
      }
      return
    case 4: // Repeated.
      lines.splice(i, 0, text)
      return
    case 5: // Removed.
      lines.splice(i, 1)
      return
    default: { // A value inside changed.
      let parsed: unknown
      try {
        parsed = JSON.parse(text)
      } catch {
        lines[i] = "{" + text
        return
      }
      lines[i] = JSON.stringify(mutateValue(rng, parsed))
    }
  }
}

it(`fuzzes the import of each format with ${LINES} mutated lines: every answer a session that loads or a typed error`, async () => {
  const rng = rngFrom(seed)
  const stats: Record<string, { inputs: number; lines: number; converted: number; refused: Record<string, number> }> = {}
  const started = performance.now()
  const findings: Array<string> = []
  for (const [kind, synthetic] of [["claude", claude()], ["pi", pi()], ["codex", codex()]] as const) {
    const bases = corpus(kind, synthetic)
    const s = (stats[kind] = { inputs: 0, lines: 0, converted: 0, refused: {} as Record<string, number> })
    while (s.lines < LINES) {
      const base = pick(rng, bases)
      // Small inputs most of the time: a real file's first lines, so that many mutations are tried.
      const lines = base.slice(0, rng() < 0.98 ? Math.min(base.length, 3 + Math.floor(rng() * 14)) : base.length)
      const mutated = 1 + Math.floor(rng() * 6)
      for (let m = 0; m < mutated && lines.length > 0; m++) mutateLine(rng, lines, Math.floor(rng() * lines.length))
      s.lines += mutated
      if (++s.inputs % 500 === 0) await yieldNow()
      const text = lines.join("\n") + (rng() < 0.9 ? "\n" : "")
      const options = { keepAll: rng() < 0.5, skipDamaged: rng() < 0.5, final: rng() < 0.7 }
      let result: Either.Either<Import.Imported, unknown>
      try {
        result = Import.convert(new TextEncoder().encode(text), options)
      } catch (e) {
        findings.push(`${kind} threw ${String(e)} on ${JSON.stringify(text).slice(0, 300)}`)
        continue
      }
      if (Either.isRight(result)) {
        s.converted++
        continue
      }
      const error = result.left
      if (!isSessionError(error) || !CODES.has(error.code)) {
        findings.push(`${kind} failed untyped: ${String(error)}`)
        continue
      }
      s.refused[error.code] = (s.refused[error.code] ?? 0) + 1
    }
  }
  report("import-fuzz", { seed, lines: LINES, seconds: Math.round((performance.now() - started) / 1000), ...stats })
  expect(findings.slice(0, 5)).toEqual([])
})

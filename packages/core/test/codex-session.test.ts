/**
 * CodexSession.fromCodex / fromCodexLines: rollouts written here from the
 * format of `codex-rs/protocol` (every kind of line the converter places), the
 * real rollouts of the shared collection read in place, variants of them, and
 * a fuzz of mutated lines.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Transcripts from "@session-tree/testing/Transcripts"
import { decodeLines, utf8Length } from "../src/Codec.js"
import {
  COMPACTION_FIELDS,
  type ConvertedCodex,
  fromCodex,
  fromCodexLines,
  REPEATS,
  SESSION_META,
  type SourceLine
} from "../src/CodexSession.js"
import type * as RecordV2 from "../src/RecordV2.js"
import { isSessionError, type SessionErrorCode } from "../src/SessionError.js"
import { toJsonl } from "../src/Sessions.js"
import { event, item, jsonl, judge, leaves, line, meta, numbered, type Obj, SESSION, text, tokenCount, ts, turn, usage } from "./support/codex.js"
import { PNG } from "./support/pi.js"
import { brokenRule } from "./support/piInverse.js"

const LONG = process.env["RELIABILITY"] === "long"

const ok = (result: Either.Either<ConvertedCodex, unknown>): ConvertedCodex => {
  if (Either.isLeft(result)) throw new Error(`expected a conversion, got ${String(result.left)}`)
  return result.right
}
const expectError = (
  result: Either.Either<ConvertedCodex, unknown>,
  code: SessionErrorCode,
  atLine: number | undefined,
  reason?: RegExp
): void => {
  if (Either.isRight(result)) throw new Error(`expected ${code}, got ${result.right.entries.length} entries`)
  const error = result.left
  expect(isSessionError(error)).toBe(true)
  if (!isSessionError(error)) return
  expect(error._tag).toBe("CorruptError")
  expect({ code: error.code, line: error.line }).toEqual({ code, line: atLine })
  if (reason !== undefined) expect(error.reason).toMatch(reason)
}
const sum = (counts: Readonly<Record<string, number>>): number => Object.values(counts).reduce((a, b) => a + b, 0)
/** The entries each source line became, by line. */
const byLine = (converted: ConvertedCodex): Map<number, Array<RecordV2.SessionEntry>> => {
  const out = new Map<number, Array<RecordV2.SessionEntry>>()
  converted.entries.forEach((entry, i) => {
    const n = converted.origins[i]!
    out.set(n, [...(out.get(n) ?? []), entry])
  })
  return out
}
const indexes = new WeakMap<ConvertedCodex, Map<number, Array<RecordV2.SessionEntry>>>()
/** The entries source line `n` became. */
const at = (converted: ConvertedCodex, n: number): Array<RecordV2.SessionEntry> => {
  let index = indexes.get(converted)
  if (index === undefined) indexes.set(converted, index = byLine(converted))
  return index.get(n) ?? []
}
const id = (n: number, k = 0): string => (k === 0 ? `${SESSION}:${n}` : `${SESSION}:${n}.${k}`)

const DEVELOPER = ["<permissions instructions>\nread-only\n</permissions instructions>", "<collaboration_mode>default</collaboration_mode>"]
const TOTAL_1 = usage(100, 40, 20, 8)
const TOTAL_2 = usage(300, 190, 50, 18)
const REPLACEMENT = [text("user", "fix the build"), { type: "compaction", encrypted_content: "gAAAAcompacted==" }]

/** A rollout holding every kind of line the converter places, and some it does not; the comment gives each line's number. */
const rollout = (): Array<Obj> => [
  meta(), // 1
  item(1, { type: "message", role: "developer", content: DEVELOPER.map((t) => ({ type: "input_text", text: t })) }), // 2
  item(1, text("user", "# AGENTS.md instructions for /work")), // 3
  event(1, { type: "task_started", turn_id: "t1", model_context_window: 272000 }), // 4
  item(2, {
    type: "message",
    role: "user",
    content: [
      { type: "input_text", text: "What is in this screenshot?" },
      { type: "input_image", image_url: `data:image/png;base64,${PNG}` },
      { type: "input_image", image_url: "https://example.com/a.png", detail: "high" }
    ]
  }), // 5
  event(2, { type: "user_message", message: "What is in this screenshot?", images: [], local_images: [], text_elements: [] }), // 6
  turn(2, "gpt-5.3-codex", "medium"), // 7
  event(3, { type: "token_count", info: null, rate_limits: { primary: { used_percent: 3 } } }), // 8
  event(4, { type: "agent_reasoning", text: "**Looking**" }), // 9
  item(4, {
    type: "reasoning",
    id: "rs_1",
    summary: [{ type: "summary_text", text: "**Looking**" }, { type: "summary_text", text: "**Reading the log**" }],
    content: null,
    encrypted_content: "gAAAAB1reasoning=="
  }), // 10
  item(5, { ...text("assistant", "Let me look."), id: "msg_1", phase: "commentary" }), // 11
  item(5, { type: "function_call", id: "fc_1", name: "exec_command", arguments: "{\"cmd\":\"ls\"}", call_id: "call_1" }), // 12
  item(5, { type: "function_call", name: "exec_command", arguments: "{\"cmd\": \"cat log\", \"max\": 12000}", call_id: "call_2" }), // 13
  tokenCount(6, TOTAL_1, TOTAL_1), // 14
  item(6, { type: "function_call_output", call_id: "call_1", output: "log\nsrc" }), // 15
  item(6, { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "see:" }, { type: "input_image", image_url: `data:image/png;base64,${PNG}` }] }), // 16
  turn(7, "gpt-5.3-codex", "medium"), // 17
  tokenCount(7, TOTAL_1, TOTAL_1), // 18
  item(8, { type: "reasoning", summary: [], content: null, encrypted_content: "gAAAAB2reasoning==" }), // 19
  item(8, { type: "custom_tool_call", status: "completed", call_id: "call_3", name: "apply_patch", input: "*** Begin Patch\n*** End Patch\n" }), // 20
  event(8, { type: "patch_apply_end", call_id: "call_3", success: true }), // 21
  item(8, { type: "custom_tool_call_output", call_id: "call_3", output: "{\"output\":\"Success.\"}" }), // 22
  item(9, { type: "web_search_call", status: "completed", action: { type: "search", query: "vitest projects" } }), // 23
  item(9, { type: "local_shell_call", call_id: "call_4", status: "completed", action: { type: "exec", command: ["ls"], timeout_ms: null, working_directory: null, env: null, user: null } }), // 24
  item(9, { type: "function_call_output", call_id: "call_4", output: { content: "permission denied", success: false } }), // 25
  item(10, { type: "tool_search_call", call_id: "call_5", status: "completed", execution: "client", arguments: { query: "agents", limit: 2 } }), // 26
  item(10, { type: "tool_search_output", call_id: "call_5", status: "completed", execution: "client", tools: [{ type: "function", name: "spawn_agent" }] }), // 27
  item(10, { type: "ghost_snapshot", ghost_commit: { id: "abc", parent: "def" } }), // 28
  tokenCount(11, usage(200, 150, 30, 10), TOTAL_2), // 29
  item(11, { type: "function_call_output", call_id: "call_9", output: "an output of no call" }), // 30
  item(11, { type: "function_call", name: "exec_command", arguments: "{}", call_id: "call_1" }), // 31
  item(11, { type: "message", role: "tool", content: [{ type: "input_text", text: "?" }] }), // 32
  turn(12, "gpt-5.4", "high"), // 33
  line(13, "compacted", { message: "The build is fixed.", replacement_history: REPLACEMENT, window_number: 1 }), // 34
  event(13, { type: "context_compacted" }), // 35
  line(13, "world_state", { agents_md: "…" }), // 36
  item(14, text("assistant", "Done.")) // 37
]

describe("a rollout in Codex's format", () => {
  const converted = ok(fromCodexLines(numbered(rollout())))

  it("converts to valid version-2 records, one branch in file order, with IDs from the session and the line", () => {
    expect(judge(Either.right(converted), rollout().map((_, i) => i + 1))).toBeUndefined()
    expect(brokenRule(converted.entries)).toBeUndefined()
    expect(converted.header).toEqual({ type: "session", version: 2, id: SESSION, timestamp: ts(0) })
    expect(converted.origins).toEqual([1, 1, 2, 3, 5, 7, 10, 11, 12, 13, 14, 15, 16, 19, 20, 22, 23, 24, 25, 26, 27, 29, 30, 31, 32, 33, 34, 34, 37])
    expect(converted.entries.map((e) => e.id)).toEqual(converted.origins.map((n, i) => id(n, converted.origins[i - 1] === n ? 1 : 0)))
    expect(converted.entries.map((e) => e.timestamp)).toEqual(converted.origins.map((n) => rollout()[n - 1]!.timestamp))
  })

  it("counts every line by kind; repeats, unchanged turns, repeated counts and kinds with no place are skipped", () => {
    expect(converted.read).toEqual({
      session_meta: 1,
      "response_item:message": 6,
      "event_msg:task_started": 1,
      "event_msg:user_message": 1,
      turn_context: 3,
      "event_msg:token_count": 4,
      "event_msg:agent_reasoning": 1,
      "response_item:reasoning": 2,
      "response_item:function_call": 3,
      "response_item:function_call_output": 4,
      "response_item:custom_tool_call": 1,
      "event_msg:patch_apply_end": 1,
      "response_item:custom_tool_call_output": 1,
      "response_item:web_search_call": 1,
      "response_item:local_shell_call": 1,
      "response_item:tool_search_call": 1,
      "response_item:tool_search_output": 1,
      "response_item:ghost_snapshot": 1,
      compacted: 1,
      "event_msg:context_compacted": 1,
      world_state: 1
    })
    expect(converted.skipped).toEqual({
      "event_msg:task_started": 1,
      "event_msg:user_message": 1,
      "event_msg:token_count": 2,
      "event_msg:agent_reasoning": 1,
      turn_context: 1,
      "event_msg:patch_apply_end": 1,
      "response_item:ghost_snapshot": 1,
      "event_msg:context_compacted": 1,
      world_state: 1
    })
  })

  it("keeps the session meta whole and its base instructions as the system message after it", () => {
    const [metaEntry, system] = at(converted, 1)
    const { base_instructions: _, ...payload } = meta().payload as Obj
    expect(metaEntry).toMatchObject({ kind: "custom", customType: SESSION_META, data: { type: "session_meta", payload: { ...payload, base_instructions: {} } } })
    expect(system).toMatchObject({
      parentId: id(1),
      kind: "message",
      message: { role: "system", id: id(1, 1), content: "You are Codex, a coding agent.", options: { codex: { from: "session_meta.base_instructions" } } }
    })
  })

  it("makes developer messages system messages, their texts joined, and keeps the role and each text's length", () => {
    expect(at(converted, 2)[0]).toMatchObject({
      message: { role: "system", content: DEVELOPER.join("\n"), options: { codex: { role: "developer", split: DEVELOPER.map((t) => t.length) } } }
    })
    expect(at(converted, 3)[0]).toMatchObject({ message: { role: "user", content: [{ type: "text", text: "# AGENTS.md instructions for /work" }] } })
    expect((at(converted, 3)[0] as RecordV2.MessageEntry).message.options).toBeUndefined()
  })

  it("keeps images: a data URL as its bytes, any other URL as written", () => {
    expect(at(converted, 5)[0]).toMatchObject({
      message: {
        role: "user",
        content: [
          { type: "text", text: "What is in this screenshot?" },
          { type: "file", mediaType: "image/png", data: { base64: PNG } },
          { type: "file", mediaType: "image/*", data: { url: "https://example.com/a.png" }, options: { codex: { detail: "high" } } }
        ]
      }
    })
  })

  it("writes a model entry when the model or the reasoning effort changes", () => {
    expect(at(converted, 7)).toEqual([{ type: "entry", version: 2, id: id(7), parentId: id(5), timestamp: ts(2), kind: "model", provider: "openai", model: "gpt-5.3-codex", thinking: "medium" }])
    expect(at(converted, 17)).toEqual([])
    expect(at(converted, 33)[0]).toMatchObject({ kind: "model", provider: "openai", model: "gpt-5.4", thinking: "high" })
  })

  it("keeps reasoning with its summary and its encrypted content in options.openai, as @effect/ai-openai sends it back", () => {
    const openai = { itemId: "rs_1", encryptedContent: "gAAAAB1reasoning==" }
    expect((at(converted, 10)[0] as RecordV2.MessageEntry).message).toEqual({
      role: "assistant",
      id: id(10),
      content: [
        { type: "reasoning", text: "**Looking**", options: { openai } },
        { type: "reasoning", text: "**Reading the log**", options: { openai } }
      ],
      options: { codex: { content: null } }
    })
    // No summary: one empty part carries the payload, and the options say the summary was empty.
    expect((at(converted, 19)[0] as RecordV2.MessageEntry).message).toEqual({
      role: "assistant",
      id: id(19),
      content: [{ type: "reasoning", text: "", options: { openai: { encryptedContent: "gAAAAB2reasoning==" } } }],
      options: { codex: { summary: [], content: null } }
    })
  })

  it("maps assistant text and calls, keeping the item IDs where @effect/ai-openai looks and the arguments as written when JSON would respell them", () => {
    expect((at(converted, 11)[0] as RecordV2.MessageEntry).message).toEqual({
      role: "assistant",
      id: id(11),
      content: [{ type: "text", text: "Let me look.", options: { openai: { itemId: "msg_1" } } }],
      options: { codex: { phase: "commentary" } }
    })
    expect((at(converted, 12)[0] as RecordV2.MessageEntry).message).toEqual({
      role: "assistant",
      id: id(12),
      content: [{ type: "tool-call", id: "call_1", name: "exec_command", arguments: { cmd: "ls" }, options: { openai: { itemId: "fc_1" } } }]
    })
    expect((at(converted, 13)[0] as RecordV2.MessageEntry).message).toEqual({
      role: "assistant",
      id: id(13),
      content: [{ type: "tool-call", id: "call_2", name: "exec_command", arguments: { cmd: "cat log", max: 12000 } }],
      options: { codex: { arguments: "{\"cmd\": \"cat log\", \"max\": 12000}" } }
    })
  })

  it("answers each call with a tool message; custom tools, local shell and tool search too; web search is the provider's", () => {
    const message = (n: number) => (at(converted, n)[0] as RecordV2.MessageEntry).message
    expect(message(15)).toEqual({ role: "tool", id: id(15), toolCallId: "call_1", toolName: "exec_command", isError: false, content: [{ type: "text", text: "log\nsrc" }] })
    expect(message(16)).toMatchObject({ toolCallId: "call_2", content: [{ type: "text", text: "see:" }, { type: "file", mediaType: "image/png", data: { base64: PNG } }] })
    expect(message(20)).toMatchObject({
      content: [{ type: "tool-call", id: "call_3", name: "apply_patch", arguments: { input: "*** Begin Patch\n*** End Patch\n" } }],
      options: { codex: { type: "custom_tool_call", status: "completed" } }
    })
    expect(message(22)).toMatchObject({ toolCallId: "call_3", toolName: "apply_patch", options: { codex: { type: "custom_tool_call_output" } } })
    expect(message(23)).toMatchObject({
      content: [{ type: "tool-call", id: id(23), name: "web_search", arguments: { type: "search", query: "vitest projects" }, providerExecuted: true }],
      options: { codex: { type: "web_search_call", status: "completed" } }
    })
    expect(message(24)).toMatchObject({ content: [{ type: "tool-call", id: "call_4", name: "local_shell", arguments: { type: "exec", command: ["ls"] } }] })
    expect(message(25)).toMatchObject({
      toolCallId: "call_4",
      toolName: "local_shell",
      isError: true,
      content: [{ type: "text", text: "permission denied" }],
      options: { codex: { output: { success: false } } }
    })
    expect(message(26)).toMatchObject({ content: [{ type: "tool-call", id: "call_5", name: "tool_search", arguments: { query: "agents", limit: 2 } }] })
    expect(message(27)).toMatchObject({ toolCallId: "call_5", toolName: "tool_search", content: [], result: [{ type: "function", name: "spawn_agent" }] })
  })

  it("makes each new token count the usage of an assistant message at its place", () => {
    expect((at(converted, 14)[0] as RecordV2.MessageEntry).message).toEqual({
      role: "assistant",
      id: id(14),
      content: [],
      meta: { usage: { inputTokens: 100, outputTokens: 20, reasoningTokens: 8, cachedInputTokens: 40 } },
      options: {
        codex: {
          rate_limits: { primary: { used_percent: 3.5 } },
          info: { total_token_usage: TOTAL_1, model_context_window: 272000, last_token_usage: { total_tokens: 120 } }
        }
      }
    })
    expect(at(converted, 18)).toEqual([])
    expect(at(converted, 29)[0]).toMatchObject({ message: { meta: { usage: { inputTokens: 200, outputTokens: 30, reasoningTokens: 10, cachedInputTokens: 150 } } } })
  })

  it("keeps a line whole when it does not fit its kind: an output of no call, a call ID used again, a message of an unknown role", () => {
    for (const [n, kind] of [[30, "function_call_output"], [31, "function_call"], [32, "message"]] as const) {
      const { timestamp: _, ...data } = rollout()[n - 1]!
      expect(at(converted, n)).toEqual([{ type: "entry", version: 2, id: id(n), parentId: converted.entries[converted.origins.indexOf(n) - 1]!.id, timestamp: ts(11), kind: "custom", customType: `codex:response_item:${kind}`, data }])
    }
  })

  it("makes a compacted line a compaction, its other fields an entry after it", () => {
    expect(at(converted, 34)).toEqual([
      { type: "entry", version: 2, id: id(34), parentId: id(33), timestamp: ts(13), kind: "compaction", summary: "The build is fixed.", firstKeptEntryId: null },
      { type: "entry", version: 2, id: id(34, 1), parentId: id(34), timestamp: ts(13), kind: "custom", customType: COMPACTION_FIELDS, data: { replacement_history: REPLACEMENT, window_number: 1 } }
    ])
    expect(at(converted, 37)[0]!.parentId).toBe(id(34, 1))
  })

  it("with keepAll stores every line: the skipped ones whole, a turn context also after its model entry", () => {
    const all = ok(fromCodexLines(numbered(rollout()), { keepAll: true }))
    expect(judge(Either.right(all), rollout().map((_, i) => i + 1))).toBeUndefined()
    expect(all.skipped).toEqual({})
    expect(new Set(all.origins)).toEqual(new Set(rollout().map((_, i) => i + 1)))
    const kept: ReadonlyArray<readonly [number, string]> = [
      [4, "event_msg:task_started"],
      [6, "event_msg:user_message"],
      [8, "event_msg:token_count"],
      [9, "event_msg:agent_reasoning"],
      [17, "turn_context"],
      [18, "event_msg:token_count"],
      [21, "event_msg:patch_apply_end"],
      [28, "response_item:ghost_snapshot"],
      [35, "event_msg:context_compacted"],
      [36, "world_state"]
    ]
    for (const [n, kind] of kept) {
      const { timestamp: _, ...data } = rollout()[n - 1]!
      expect(at(all, n)).toEqual([{ type: "entry", version: 2, id: id(n), parentId: all.entries[all.origins.indexOf(n) - 1]!.id, timestamp: rollout()[n - 1]!.timestamp, kind: "custom", customType: `codex:${kind}`, data }])
    }
    expect(at(all, 7).map((e) => e.kind === "custom" ? e.customType : e.kind)).toEqual(["model", "codex:turn_context"])
    // What both conversions store keeps its IDs.
    const stored = new Set(all.entries.map((e) => e.id))
    for (const entry of converted.entries) expect(stored.has(entry.id)).toBe(true)
  })

  it("gives the same records for the same lines, and for the lines a longer rollout begins with", () => {
    const lines = numbered(rollout())
    expect(fromCodexLines(lines)).toEqual(fromCodexLines(lines))
    for (let k = 1; k <= lines.length; k++) expectPrefix(fromCodexLines(lines.slice(0, k)), converted)
  })

  it("leaves the lines it is given as they were", () => {
    const lines = numbered(rollout())
    const before = JSON.stringify(lines)
    const result = ok(fromCodexLines(lines, { keepAll: true }))
    expect(JSON.stringify(lines)).toBe(before)
    expect(lines.some((l) => Object.isFrozen(l.record) || Object.isFrozen(l.record.payload))).toBe(false)
    // The entries share no object with the lines: their data is a copy.
    const data = (at(result, 4)[0] as RecordV2.CustomEntry).data as Obj
    expect(data.payload).toEqual(lines[3]!.record.payload)
    expect(data.payload).not.toBe(lines[3]!.record.payload)
  })

  it("reads bytes: UTF-8, one object per line, a final line without its newline", () => {
    const bytes = jsonl(rollout())
    expect(ok(fromCodex(bytes))).toEqual(converted)
    expect(ok(fromCodex(bytes.subarray(0, bytes.length - 1)))).toEqual(converted)
  })
})

/** The conversion of a prefix is a prefix of the whole's: the same records for the lines they share. */
const expectPrefix = (part: Either.Either<ConvertedCodex, unknown>, whole: ConvertedCodex): void => {
  const prefix = ok(part)
  const lines = sum(prefix.read)
  const n = whole.origins.filter((origin) => origin <= lines).length
  expect(prefix.entries).toEqual(whole.entries.slice(0, n))
  expect(prefix.origins).toEqual(whole.origins.slice(0, n))
}

describe("subagent threads (spawn_agent)", () => {
  const CHILD = "01950000-aaaa-7bbb-8ccc-0000000000c1"
  const spawn = (n: number, callId: string, message: string) =>
    item(n, { type: "function_call", name: "spawn_agent", arguments: JSON.stringify({ agent_type: "explorer", message }), call_id: callId })
  const spawned = (n: number, callId: string, agent: string) => item(n, { type: "function_call_output", call_id: callId, output: JSON.stringify({ agent_id: agent, nickname: "Ada" }) })
  const parent = [meta(), item(1, text("user", "review it")), spawn(2, "call-a", "look at A"), spawn(3, "call-b", "look at B"), spawned(4, "call-a", "other"), spawned(5, "call-b", CHILD)]
  const child = (source: unknown, extra: Obj = {}) => [
    meta({ id: CHILD, source, ...extra }),
    item(6, text("user", "look at B")),
    item(7, text("assistant", "B is fine", { phase: "final_answer" }))
  ]
  const threadSpawn = { subagent: { thread_spawn: { parent_thread_id: SESSION, depth: 1, agent_role: "explorer" } } }

  it("the parent: after each spawn_agent output naming its agent, a link to the agent's thread naming the call", () => {
    const result = ok(fromCodexLines(numbered(parent)))
    const links = result.entries.filter((e) => e.kind === "custom" && e.customType === "session-tree:subagent")
    expect(links.map((e) => [e.id, e.parentId, (e as RecordV2.CustomEntry).data])).toEqual([
      [`${SESSION}:5.1`, `${SESSION}:5`, { session: "other", toolCallId: "call-a" }],
      [`${SESSION}:6.1`, `${SESSION}:6`, { session: CHILD, toolCallId: "call-b" }]
    ])
    expect(brokenRule(result.entries)).toBeUndefined()
    // Another call's output holding an agent_id names nothing.
    const other = ok(fromCodexLines(numbered([meta(), item(1, { type: "function_call", name: "exec", arguments: "{}", call_id: "x" }), spawned(2, "x", CHILD)])))
    expect(other.entries.filter((e) => e.kind === "custom" && e.customType === "session-tree:subagent")).toEqual([])
  })

  it("the subagent: its first entry links the thread that spawned it, and the call where its parent's rollout is given", () => {
    for (const [source, extra] of [[threadSpawn, {}], ["vscode", { parent_thread_id: SESSION }]] as const) {
      const alone = ok(fromCodexLines(numbered(child(source, extra))))
      expect(alone.entries.slice(0, 2).map((e) => [e.id, e.parentId, e.kind === "custom" ? e.customType : e.kind])).toEqual([
        ["subagent-of", null, "session-tree:subagent-of"],
        [`${CHILD}:1`, "subagent-of", SESSION_META]
      ])
      expect((alone.entries[0] as RecordV2.CustomEntry).data).toEqual({ session: SESSION })
      expect(brokenRule(alone.entries)).toBeUndefined()
      const linked = ok(fromCodexLines(numbered(child(source, extra)), { parent: numbered(parent) }))
      expect((linked.entries[0] as RecordV2.CustomEntry).data).toEqual({ session: SESSION, toolCallId: "call-b" })
      expect(linked.entries.slice(1)).toEqual(alone.entries.slice(1))
    }
    // Another thread's rollout, or a parent that spawned no such agent, names no call.
    const elsewhere = numbered([meta({ id: "someone-else" }), ...parent.slice(1)])
    expect((ok(fromCodexLines(numbered(child(threadSpawn)), { parent: elsewhere })).entries[0] as RecordV2.CustomEntry).data).toEqual({ session: SESSION })
    expect((ok(fromCodexLines(numbered(child(threadSpawn)), { parent: numbered(parent.slice(0, 5)) })).entries[0] as RecordV2.CustomEntry).data).toEqual({ session: SESSION })
    // A link stored before stays as it was.
    const stored = ok(fromCodexLines(numbered(child(threadSpawn)))).entries[0]!
    const again = ok(fromCodexLines(numbered(child(threadSpawn)), { parent: numbered(parent), stored: (session, id) => session === CHILD && id === "subagent-of" ? stored : undefined }))
    expect((again.entries[0] as RecordV2.CustomEntry).data).toEqual({ session: SESSION })
    // A rollout that is no subagent's starts with its session meta.
    expect(ok(fromCodexLines(numbered(child("cli")))).entries[0]).toMatchObject({ customType: SESSION_META, parentId: null })
  })
})

describe("the early layout, before the envelope", () => {
  const legacy = [
    { id: SESSION, timestamp: ts(0), instructions: "Follow AGENTS.md", git: { branch: "main" } },
    { record_type: "state" },
    text("user", "<user_instructions>Follow AGENTS.md</user_instructions>"),
    { type: "reasoning", id: "rs_9", summary: [], content: null, encrypted_content: "gAAAAlegacy==" },
    { type: "function_call", name: "shell", arguments: "{\"command\":[\"ls\"]}", call_id: "c1" },
    { type: "function_call_output", call_id: "c1", output: "ok" },
    { record_type: "state" }
  ]

  it("converts bare items, every entry at the session's time, the first line kept whole", () => {
    const converted = ok(fromCodex(jsonl(legacy)))
    expect(judge(Either.right(converted), legacy.map((_, i) => i + 1))).toBeUndefined()
    expect(converted.header).toEqual({ type: "session", version: 2, id: SESSION, timestamp: ts(0) })
    expect(converted.entries[0]).toMatchObject({ kind: "custom", customType: SESSION_META, data: legacy[0] })
    expect(converted.entries.every((e) => e.timestamp === ts(0))).toBe(true)
    expect(converted.origins).toEqual([1, 3, 4, 5, 6])
    expect(converted.read).toEqual({ session_meta: 1, state: 2, "response_item:message": 1, "response_item:reasoning": 1, "response_item:function_call": 1, "response_item:function_call_output": 1 })
    expect(converted.skipped).toEqual({ state: 2 })
    expect(converted.entries[2]).toMatchObject({ message: { content: [{ type: "reasoning", text: "", options: { openai: { itemId: "rs_9", encryptedContent: "gAAAAlegacy==" } } }] } })
    expect(converted.entries[4]).toMatchObject({ message: { role: "tool", toolCallId: "c1", toolName: "shell" } })
    expect(at(ok(fromCodex(jsonl(legacy), { keepAll: true })), 2)[0]).toMatchObject({ kind: "custom", customType: "codex:state", data: { record_type: "state" } })
  })

  it("refuses a line that is neither an item nor a record_type line", () => {
    expectError(fromCodex(jsonl([...legacy, { what: 1 }])), "SESSION_INVALID_RECORD", 8, /early Codex rollout/)
  })
})

describe("what is not a Codex rollout, and what is damaged", () => {
  const base = rollout().slice(0, 3)
  it("refuses a file whose first line is not a session meta, saying what was expected", () => {
    const notCodex = /not a Codex rollout.*expected a session_meta line/
    expectError(fromCodex(new Uint8Array(0)), "SESSION_INVALID_HEADER", 1, /the file is empty/)
    expectError(fromCodexLines([]), "SESSION_INVALID_HEADER", 1, /empty/)
    expectError(fromCodex(jsonl([{ type: "session", version: 3, id: "p", timestamp: ts(0), cwd: "/" }])), "SESSION_INVALID_HEADER", 1, /Pi or session-tree/)
    expectError(fromCodex(jsonl([{ type: "session", version: 2, id: "s", timestamp: ts(0) }])), "SESSION_INVALID_HEADER", 1, /Pi or session-tree/)
    expectError(fromCodex(jsonl([{ parentUuid: null, sessionId: "x", type: "user", message: {} }])), "SESSION_INVALID_HEADER", 1, /Claude Code/)
    expectError(fromCodex(jsonl([item(0, text("user", "hi"))])), "SESSION_INVALID_HEADER", 1, notCodex)
    expectError(fromCodex(jsonl([{ record_type: "state" }])), "SESSION_INVALID_HEADER", 1, notCodex)
    expectError(fromCodex(jsonl([line(0, "session_meta", "x")])), "SESSION_INVALID_HEADER", 1, /without a payload object/)
    expectError(fromCodex(jsonl([meta({ id: "" })])), "SESSION_INVALID_HEADER", 1, /non-empty string id/)
    expectError(fromCodex(jsonl([meta({ timestamp: "2026-03-01T10:00:00Z" })])), "SESSION_INVALID_HEADER", 1, /ISO-8601/)
    // The front may have left out a damaged first line: the error names the line it read.
    expectError(fromCodexLines([{ line: 2, record: { type: "event_msg" } }]), "SESSION_INVALID_HEADER", 2)
  })

  it("refuses a damaged line, naming it", () => {
    expectError(fromCodex(jsonl([...base, { payload: {} }])), "SESSION_INVALID_RECORD", 4, /no string type/)
    expectError(fromCodex(jsonl([...base, { ...item(1, text("user", "x")), timestamp: "yesterday" }])), "SESSION_INVALID_RECORD", 4, /ISO-8601/)
    expectError(fromCodex(jsonl([...base, { timestamp: ts(1), type: "response_item", payload: [] }])), "SESSION_INVALID_RECORD", 4, /payload object/)
    expectError(fromCodex(jsonl([...base, event(1, { message: "no type" })])), "SESSION_INVALID_RECORD", 4, /no string type/)
    expectError(fromCodexLines([...numbered(base), { line: 3, record: item(1, text("user", "again")) }]), "SESSION_DUPLICATE_ID", 3, /line number given twice/)
  })

  it("refuses bytes that are not UTF-8, a line that is not one JSON object, a torn last line, an inexact number", () => {
    const good = new TextDecoder().decode(jsonl(base))
    const bytes = (s: string) => new TextEncoder().encode(s)
    expectError(fromCodex(new Uint8Array([...jsonl(base), 0xc3])), "SESSION_INVALID_UTF8", undefined)
    expectError(fromCodex(bytes(`${good}${JSON.stringify(item(1, text("user", "a")))}${JSON.stringify(event(1, { type: "x" }))}\n`)), "SESSION_INVALID_JSON", 4)
    expectError(fromCodex(bytes(`${good}\n${JSON.stringify(item(1, text("user", "a")))}\n`)), "SESSION_INVALID_JSON", 4)
    expectError(fromCodex(bytes(`${good}{"timestamp":"${ts(1)}","type":"response_item","payload":{"type":"mess`)), "SESSION_INVALID_JSON", 4)
    expectError(fromCodex(bytes(`${good}{"timestamp":"${ts(1)}","type":"event_msg","payload":{"type":"x","n":12345678901234567891}}\n`)), "SESSION_INVALID_RECORD", 4, /cannot be held exactly/)
    expectError(fromCodex(bytes(`${good}{"timestamp":"${ts(1)}","type":"event_msg","payload":{"type":"x","__proto__":{}}}\n`)), "SESSION_INVALID_JSON", 4)
  })

  it("refuses what the loader would refuse in the converted session, at the source line", () => {
    const long = "x".repeat(1_048_576)
    expectError(fromCodex(jsonl([...base, item(1, text("user", long))])), "SESSION_LINE_TOO_LONG", 4, /Codex rollout line converted to entry/)
  })
})

// ---------------------------------------------------------------------------
// The real rollouts

const REAL = Transcripts.dir("codex")
const real = Transcripts.files("codex")
const linesOf = (name: string): Array<SourceLine> =>
  new TextDecoder().decode(NFS.readFileSync(Path.join(REAL, name))).split("\n").filter((l) => l !== "").map((l, i) => ({ line: i + 1, record: JSON.parse(l) as Obj }))
const payloadOf = (record: Obj): Obj => (typeof record.payload === "object" && record.payload !== null ? record.payload : record) as Obj
const LINKS = new Set(["session-tree:subagent", "session-tree:subagent-of"])
const CALLS = new Set(["function_call", "custom_tool_call", "local_shell_call", "tool_search_call"])
const OUTPUTS = new Set(["function_call_output", "custom_tool_call_output", "tool_search_output"])

/** Every `encrypted_content` string of a JSON value, at any depth. */
const encrypted = (value: unknown): Array<string> =>
  leaves(value).flatMap(([key, v]) => (key === "encrypted_content" && typeof v === "string" ? [v] : []))

describe.skipIf(real.length === 0)(`the real Codex rollouts in ${REAL}`, () => {
  const converted = new Map(real.map((name) => [name, ok(fromCodexLines(linesOf(name)))]))

  it.each(real)("%s converts and loads as a version-2 session", (name) => {
    const lines = linesOf(name)
    const result = converted.get(name)!
    expect(judge(Either.right(result), lines.map((l) => l.line))).toBeUndefined()
    expect(brokenRule(result.entries)).toBeUndefined()
    expect(result.header.id).toBe(payloadOf(lines[0]!.record).id)
    // Nothing of a kind with a place was kept whole for want of fitting it.
    expect(result.entries.filter((e) => e.kind === "custom").map((e) => (e as RecordV2.CustomEntry).customType).filter((t) => t !== SESSION_META && t !== COMPACTION_FIELDS && !LINKS.has(t))).toEqual([])
    // The records read back from their canonical JSONL are the same records.
    const text = toJsonl({ header: result.header, entries: result.entries })
    const records = text.split("\n").slice(0, -1)
    const loaded = decodeLines({ lines: records, sizes: records.map(utf8Length), tail: "none" })
    if (Either.isLeft(loaded)) throw loaded.left
    expect(loaded.right.header).toEqual(result.header)
    expect(loaded.right.history.entries).toEqual(result.entries)
    // The same lines give the same records, byte for byte.
    expect(toJsonl({ header: result.header, entries: ok(fromCodexLines(lines)).entries })).toBe(text)
  })

  it.each(real)("%s: a subagent thread is linked both ways to its parent thread and the spawn_agent call that started it", (name) => {
    const lines = linesOf(name)
    const result = converted.get(name)!
    const own = payloadOf(lines[0]!.record)
    // Every spawn_agent output that names its agent is followed by a link naming it and the call.
    const spawns = new Set(lines.flatMap(({ record }) => { const p = payloadOf(record); return record.type === "response_item" && p.type === "function_call" && p.name === "spawn_agent" ? [p.call_id] : [] }))
    const spawned = lines.flatMap(({ record }) => {
      const p = payloadOf(record)
      if (record.type !== "response_item" || p.type !== "function_call_output" || !spawns.has(p.call_id)) return []
      const agent = (JSON.parse(p.output as string) as Obj).agent_id
      return typeof agent === "string" ? [{ session: agent, toolCallId: p.call_id }] : []
    })
    const links = result.entries.filter((e) => e.kind === "custom" && e.customType === "session-tree:subagent")
    expect(links.map((e) => (e as RecordV2.CustomEntry).data)).toEqual(spawned)
    for (const link of links) expect(result.entries.find((e) => e.id === link.parentId)).toMatchObject({ kind: "message", message: { role: "tool", toolName: "spawn_agent" } })
    // A subagent thread's rollout starts with its link to the thread that spawned it.
    const source = own.source as Obj | string | undefined
    const parentThread = typeof source === "object" ? ((source.subagent as Obj | undefined)?.thread_spawn as Obj | undefined)?.parent_thread_id : undefined
    const first = result.entries[0]!
    if (typeof parentThread !== "string") {
      expect(first.kind === "custom" && first.customType).toBe(SESSION_META)
      return
    }
    expect(first).toMatchObject({ id: "subagent-of", parentId: null, kind: "custom", customType: "session-tree:subagent-of", data: { session: parentThread } })
    expect(result.entries[1]).toMatchObject({ parentId: "subagent-of", customType: SESSION_META })
    // Converted with its parent's rollout, where the collection holds it, it names the call whose output named it.
    const parentName = real.find((other) => other !== name && other.endsWith(`-${parentThread}.jsonl`))
    if (parentName === undefined) {
      expect((first as RecordV2.CustomEntry).data).toEqual({ session: parentThread })
      return
    }
    const parentLinks = converted.get(parentName)!.entries.filter((e) => e.kind === "custom" && (e.data as Obj).session === own.id)
    expect(parentLinks.length).toBe(1)
    const linked = ok(fromCodexLines(lines, { parent: linesOf(parentName) }))
    expect(linked.entries[0]).toMatchObject({ data: { session: parentThread, toolCallId: (parentLinks[0] as RecordV2.CustomEntry & { data: Obj }).data.toolCallId } })
    expect(linked.entries.slice(1)).toEqual(result.entries.slice(1))
  })

  it.each(real)("%s: every encrypted_content is stored byte for byte, a reasoning item's in options.openai", (name) => {
    const lines = linesOf(name)
    const result = converted.get(name)!
    let found = 0
    for (const { line: n, record } of lines) {
      const stored = at(result, n)
      const wanted = encrypted(record)
      const held = new Set(leaves(stored).map(([, v]) => v))
      for (const secret of wanted) {
        expect(held.has(secret)).toBe(true)
        found++
      }
      const p = payloadOf(record)
      if (p.type === "reasoning" && typeof p.encrypted_content === "string") {
        const message = (stored[0] as RecordV2.MessageEntry).message as RecordV2.AssistantMessage
        for (const part of message.content) expect((part.options?.openai as Obj).encryptedContent).toBe(p.encrypted_content)
        expect(message.content.map((part) => part.type === "reasoning" ? part.text : "")).toEqual(
          (p.summary as Array<Obj>).length === 0 ? [""] : (p.summary as Array<Obj>).map((s) => s.text)
        )
      }
    }
    expect(found).toBe(encrypted(lines.map((l) => l.record)).length)
    expect(found).toBeGreaterThan(0)
  })

  it.each(real)("%s: every call is a tool-call part, and every output a tool message linked to its call", (name) => {
    const lines = linesOf(name)
    const result = converted.get(name)!
    const names = new Map<string, string>()
    let calls = 0
    let outputs = 0
    for (const { line: n, record } of lines) {
      const p = payloadOf(record)
      // An item: a response_item line, or a bare line of the early layout.
      if (record.type !== "response_item" && "payload" in record) continue
      const [entry] = at(result, n)
      if (CALLS.has(p.type as string)) {
        const part = ((entry as RecordV2.MessageEntry).message as RecordV2.AssistantMessage).content[0] as RecordV2.ToolCallPart
        expect(part).toMatchObject({ type: "tool-call", id: p.call_id })
        names.set(p.call_id as string, part.name)
        calls++
      }
      if (OUTPUTS.has(p.type as string)) {
        expect((entry as RecordV2.MessageEntry).message).toMatchObject({ role: "tool", toolCallId: p.call_id, toolName: names.get(p.call_id as string) })
        outputs++
      }
    }
    expect(calls).toBeGreaterThan(0)
    expect(outputs).toBe(calls)
    const parts = result.entries.flatMap((e) => e.kind === "message" && e.message.role === "assistant" ? e.message.content : [])
    expect(parts.filter((p) => p.type === "tool-call" && p.providerExecuted !== true).length).toBe(calls)
  })

  it.each(real)("%s: stored and skipped lines add up; with keepAll nothing is skipped and every value is stored", (name) => {
    const lines = linesOf(name)
    const result = converted.get(name)!
    expect(sum(result.read)).toBe(lines.length)
    expect(new Set(result.origins).size + sum(result.skipped)).toBe(lines.length)
    const all = ok(fromCodexLines(lines, { keepAll: true }))
    expect(all.skipped).toEqual({})
    expect(all.read).toEqual(result.read)
    expect(new Set(all.origins).size).toBe(lines.length)
    for (const { line: n, record } of lines) {
      const stored = JSON.stringify(at(all, n))
      for (const [key, value] of leaves(record)) {
        // A type is what the mapping reads: the entry's kind, role or part type says it.
        if (key === "type") continue
        // Arguments JSON is stored as its object when that gives it back exactly.
        const wanted = key === "arguments" && typeof value === "string" && value.startsWith("{") ? leaves(JSON.parse(value)).map(([, v]) => v) : [value]
        for (const v of wanted) expect(stored.includes(JSON.stringify(v).slice(typeof v === "string" ? 1 : 0, typeof v === "string" ? -1 : undefined))).toBe(true)
      }
    }
  })

  it.each(real)("%s: the repeats repeat an item stored beside them, but for a turn aborted before its item was written", (name) => {
    const lines = linesOf(name)
    const result = converted.get(name)!
    const texts = JSON.stringify(result.entries)
    lines.forEach(({ record }, i) => {
      const kind = `${String(record.type)}:${String(payloadOf(record).type)}`
      if (!REPEATS.has(kind) || kind === "event_msg:context_compacted") return
      const p = payloadOf(record)
      const said = p.message ?? p.text
      if (typeof said !== "string" || texts.includes(JSON.stringify(said).slice(1, -1))) return
      // Not stored anywhere: the turn was aborted before the item came.
      const next = lines.slice(i + 1).find((l) => l.record.type === "response_item" || payloadOf(l.record).type === "turn_aborted")
      expect(payloadOf(next!.record).type).toBe("turn_aborted")
    })
  })

  it("the first k lines of a rollout convert to the first entries of the whole rollout, for every k", () => {
    const small = [...real].sort((a, b) => linesOf(a).length - linesOf(b).length).slice(0, 2)
    for (const name of small) {
      const lines = linesOf(name)
      for (let k = 1; k <= lines.length; k++) expectPrefix(fromCodexLines(lines.slice(0, k)), converted.get(name)!)
    }
    // Three cuts of every other rollout.
    for (const name of real.filter((n) => !small.includes(n))) {
      const lines = linesOf(name)
      for (let j = 1; j <= 3; j++) expectPrefix(fromCodexLines(lines.slice(0, Math.ceil((lines.length * j) / 4))), converted.get(name)!)
    }
  })

  it("variants (lines dropped, swapped, fields changed or removed) give valid sessions or typed errors at a source line", () => {
    const rng = seeded(7)
    const counts: Record<string, number> = {}
    for (const name of real) {
      const lines = shortened(linesOf(name))
      for (let v = 0; v < 40; v++) {
        // The first line and a run of 40 lines after it, whole files for the small ones.
        const from = 1 + rng(Math.max(1, lines.length - 40))
        const variant = vary([lines[0]!, ...lines.slice(from, from + 40)], rng)
        const result = fromCodexLines(variant.lines)
        expect(judge(result, variant.lines.map((l) => l.line)), variant.what).toBeUndefined()
        const outcome = Either.isLeft(result) ? result.left.code : "valid"
        counts[outcome] = (counts[outcome] ?? 0) + 1
      }
    }
    expect(counts["valid"]).toBeGreaterThan(0)
  })
})
if (real.length === 0) it.skip(`the real Codex rollouts: ${REAL} is missing`, () => {})

// ---------------------------------------------------------------------------
// Variants and fuzzing

/** A small deterministic generator, so that a failing variant can be found again. */
const seeded = (seed: number) => {
  let s = seed >>> 0
  return (n: number): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s % n
  }
}

const VALUES: ReadonlyArray<unknown> = [null, "", "x", 0, -1, 1.5, true, [], {}, { type: "message" }, "function_call", ts(99), "2026-01-01", 2 ** 53, [1, "a"]]
const TYPES: ReadonlyArray<string> = ["session_meta", "response_item", "event_msg", "turn_context", "compacted", "message", "reasoning", "function_call", "function_call_output", "token_count", "custom_tool_call", "web_search_call", "nope"]

/** Every path to a value inside a record, nearest first. */
const pathsOf = (value: unknown, prefix: ReadonlyArray<string> = [], out: Array<ReadonlyArray<string>> = []): Array<ReadonlyArray<string>> => {
  if (typeof value !== "object" || value === null || prefix.length > 5) return out
  for (const key of Object.keys(value)) {
    out.push([...prefix, key])
    pathsOf((value as Obj)[key], [...prefix, key], out)
  }
  return out
}

/** `record` with the value at `path` replaced (`undefined`: removed), the rest shared. */
const setAt = (record: unknown, path: ReadonlyArray<string>, value: unknown): unknown => {
  if (path.length === 0) return value
  const [key, ...restPath] = path
  const copy: Obj = Array.isArray(record) ? ([...record] as unknown as Obj) : { ...(record as Obj) }
  const next = setAt(copy[key!], restPath, value)
  if (next === undefined) delete copy[key!]
  else copy[key!] = next
  return copy
}

/** One variant of a rollout's lines: a line dropped, two swapped, a field changed, removed or given another type. */
const vary = (lines: ReadonlyArray<SourceLine>, rng: (n: number) => number): { readonly lines: Array<SourceLine>; readonly what: string } => {
  const out = [...lines]
  const i = rng(lines.length)
  switch (rng(4)) {
    case 0:
      out.splice(i, 1)
      return { lines: out, what: `line ${i + 1} dropped` }
    case 1: {
      const j = rng(lines.length)
      out[i] = { line: lines[i]!.line, record: lines[j]!.record }
      out[j] = { line: lines[j]!.line, record: lines[i]!.record }
      return { lines: out, what: `lines ${i + 1} and ${j + 1} swapped` }
    }
    default: {
      const paths = pathsOf(lines[i]!.record)
      const path = paths[rng(paths.length)] ?? ["type"]
      const value = rng(3) === 0 ? undefined : rng(2) === 0 ? TYPES[rng(TYPES.length)] : VALUES[rng(VALUES.length)]
      out[i] = { line: lines[i]!.line, record: setAt(lines[i]!.record, path, value) as Obj }
      return { lines: out, what: `line ${i + 1}: ${path.join(".")} = ${JSON.stringify(value)}` }
    }
  }
}

/** `bytes` cut at `pos` (op 0), with `byte` inserted there (1), without the byte there (2), or with it replaced (3). */
const damage = (bytes: Uint8Array, pos: number, op: number, byte: number): Uint8Array => {
  if (op === 0) return bytes.subarray(0, pos)
  if (op === 3) return bytes.map((b, j) => (j === pos ? byte : b))
  const out = new Uint8Array(bytes.length + (op === 1 ? 1 : -1))
  out.set(bytes.subarray(0, pos))
  if (op === 1) {
    out[pos] = byte
    out.set(bytes.subarray(pos), pos + 1)
  } else out.set(bytes.subarray(pos + 1), pos)
  return out
}

/**
 * Real lines with every string cut to 200 characters: the same shapes, at a fraction of the cost
 * (a real session meta holds 20 KB of instructions, an output 40 KB).
 */
const shortened = (lines: ReadonlyArray<SourceLine>): Array<SourceLine> =>
  lines.map(({ line: n, record }) => ({ line: n, record: JSON.parse(JSON.stringify(record, (_, v) => (typeof v === "string" ? v.slice(0, 200) : v))) as Obj }))

/** The bases the fuzz mutates: the rollout written here, and the real ones (shortened) when they are there. */
const bases = (): Array<ReadonlyArray<SourceLine>> => [numbered(rollout()), ...real.map((name) => shortened(linesOf(name)))]

describe("fuzzing", () => {
  const target = LONG ? 100_000 : 10_000
  it(`${target} mutated lines give valid sessions or typed errors, never a throw`, () => {
    const all = bases()
    let mutated = 0
    const outcomes: Record<string, number> = {}
    const mutation = fc.record({
      base: fc.nat(),
      from: fc.nat(),
      width: fc.integer({ min: 2, max: 10 }),
      edits: fc.array(
        fc.record({ at: fc.nat(), deep: fc.nat({ max: 4 }), path: fc.nat(), op: fc.nat({ max: 5 }), value: fc.jsonValue({ maxDepth: 2 }), type: fc.constantFrom(...TYPES) }),
        { minLength: 4, maxLength: 4 }
      ),
      // One case in five also damages a byte of the file.
      text: fc.oneof(
        { arbitrary: fc.constant(null), weight: 4 },
        { arbitrary: fc.record({ at: fc.nat(), op: fc.nat({ max: 3 }), byte: fc.integer({ min: 0, max: 255 }) }), weight: 1 }
      )
    })
    fc.assert(
      fc.property(mutation, (m) => {
        const lines = all[m.base % all.length]!
        // The first line and a window of the lines after it, with their own numbers.
        const from = 1 + (m.from % Math.max(1, lines.length - 1))
        const window = [lines[0]!, ...lines.slice(from, from + m.width)]
        for (const edit of m.edits) {
          const i = edit.at % window.length
          const record = window[i]!.record
          // Mostly a field inside the payload, so that most cases reach the mapping of their kind.
          const all = pathsOf(record)
          const inner = all.filter((p) => p.length > 1)
          const paths = edit.deep > 0 && inner.length > 0 ? inner : all
          const path = paths[edit.path % Math.max(1, paths.length)] ?? ["type"]
          let next: unknown
          switch (edit.op) {
            case 0:
              next = setAt(record, path, undefined)
              break
            case 1:
              next = setAt(record, path, edit.type)
              break
            case 2:
              next = setAt(record, path.slice(0, -1).concat("type"), edit.type)
              break
            default:
              next = setAt(record, path, edit.value)
          }
          window[i] = { line: window[i]!.line, record: (typeof next === "object" && next !== null && !Array.isArray(next) ? next : {}) as Obj }
          mutated++
        }
        let result: Either.Either<ConvertedCodex, unknown>
        let numbers: ReadonlyArray<number> = window.map((l) => l.line)
        if (m.text === null) result = fromCodexLines(window)
        else {
          // A damaged byte of the file (the window's lines renumbered from 1).
          const bytes = jsonl(window.map((l) => l.record))
          const pos = m.text.at % Math.max(1, bytes.length)
          const damaged = damage(bytes, pos, m.text.op, m.text.byte)
          const texts = new TextDecoder().decode(damaged).split("\n")
          if (texts.length > 1 && texts[texts.length - 1] === "") texts.pop()
          numbers = texts.map((_, j) => j + 1)
          result = fromCodex(damaged)
        }
        const problem = judge(result as Either.Either<ConvertedCodex, never>, numbers)
        if (problem !== undefined) throw new Error(problem)
        const outcome = Either.isLeft(result) ? (result.left as { code: string }).code : "valid"
        outcomes[outcome] = (outcomes[outcome] ?? 0) + 1
      }),
      LONG ? { numRuns: target / 4 } : { numRuns: target / 4, seed: 20_260_301 }
    )
    expect(mutated).toBe(target)
    expect(outcomes["valid"]).toBeGreaterThan(0)
    expect(Object.keys(outcomes).length).toBeGreaterThan(2)
  })
})

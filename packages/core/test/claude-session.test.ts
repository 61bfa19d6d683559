/**
 * ClaudeSession.fromClaude on transcripts written here from Claude Code's
 * documented line format (and the shapes the real files show), and on the real
 * transcripts of the shared collection, read in place.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { type Converted, fromClaude, type StoredEntries } from "../src/ClaudeSession.js"
import * as Import from "../src/Import.js"
import * as RecordV2 from "../src/RecordV2.js"
import { isSessionError, type SessionErrorCode } from "../src/SessionError.js"
import { PNG } from "./support/pi.js"
import { brokenRule } from "./support/piInverse.js"
import { blocksOf, contentOf, leavesOf, type Obj, sourceLeaves } from "./support/claudeSource.js"
import * as Transcripts from "@session-tree/testing/Transcripts"

const SESSION = "6f1c1b8e-0000-4000-8000-000000000001"
const ts = (n: number) => `2026-01-02T03:04:${String(n).padStart(2, "0")}.000Z`
const context = { isSidechain: false, userType: "external", cwd: "/p", sessionId: SESSION, version: "2.1.33", gitBranch: "main" }

const userLine = (uuid: string, parentUuid: string | null, n: number, content: unknown, extra: object = {}) =>
  ({ parentUuid, ...context, type: "user", message: { role: "user", content }, uuid, timestamp: ts(n), ...extra })
/** One content block of response `id`, as Claude Code writes each block of a streamed response on a line of its own. */
const block = (uuid: string, parentUuid: string | null, n: number, id: string, content: ReadonlyArray<unknown>, stop: string | null = null) => ({
  parentUuid,
  ...context,
  message: {
    model: "claude-opus-4-6",
    id,
    type: "message",
    role: "assistant",
    content,
    stop_reason: stop,
    stop_sequence: null,
    usage: { input_tokens: 3, cache_creation_input_tokens: 100, cache_read_input_tokens: 200, output_tokens: 12, service_tier: "standard" }
  },
  requestId: `req_${id}`,
  type: "assistant",
  uuid,
  timestamp: ts(n)
})
const result = (id: string, content: unknown, isError?: boolean) =>
  ({ type: "tool_result", tool_use_id: id, content, ...(isError === undefined ? {} : { is_error: isError }) })
const toolUse = (id: string, name: string, input: object) => ({ type: "tool_use", id, name, input })

const jsonl = (...records: ReadonlyArray<unknown>): Uint8Array => new TextEncoder().encode(records.map((r) => JSON.stringify(r)).join("\n") + "\n")

const ok = (bytes: Uint8Array | Either.Either<Converted, unknown>): Converted => {
  const converted = bytes instanceof Uint8Array ? fromClaude(bytes) : bytes
  if (Either.isLeft(converted)) throw new Error(`expected a conversion, got ${String(converted.left)}`)
  return converted.right
}
const fromClaudeKeeping = (bytes: Uint8Array) => fromClaude(bytes, { keepAll: true })
const expectError = (bytes: Uint8Array, code: SessionErrorCode, line: number, reason?: RegExp): void => {
  const converted = fromClaude(bytes)
  if (Either.isRight(converted)) throw new Error(`expected ${code}, got ${converted.right.entries.length} entries`)
  expect(isSessionError(converted.left)).toBe(true)
  expect({ code: converted.left.code, line: converted.left.line }).toEqual({ code, line })
  if (reason !== undefined) expect(converted.left.reason).toMatch(reason)
}

const strict = { onExcessProperty: "error", exact: true } as const
const decodeEntry = Schema.decodeUnknownSync(RecordV2.SessionEntry, strict)
const expectValid = (converted: Converted): void => {
  Schema.decodeUnknownSync(RecordV2.SessionHeader, strict)(converted.header)
  for (const entry of converted.entries) {
    const line = JSON.stringify(entry)
    expect(JSON.stringify(decodeEntry(JSON.parse(line)))).toBe(line)
  }
  expect(brokenRule(converted.entries)).toBeUndefined()
}

/** The messages on the path from the root to `leaf` (default: the newest entry). */
const pathTo = (converted: Converted, leaf = converted.entries[converted.entries.length - 1]!.id): Array<RecordV2.SessionEntry> => {
  const byId = new Map(converted.entries.map((e) => [e.id, e]))
  const path: Array<RecordV2.SessionEntry> = []
  for (let at: string | null = leaf; at !== null; at = byId.get(at)!.parentId) path.push(byId.get(at)!)
  return path.reverse()
}
/** Tool calls on the path that no tool message on it answers, apart from the newest assistant message's. */
const unanswered = (path: ReadonlyArray<RecordV2.SessionEntry>): Array<string> => {
  const answered = new Set(path.flatMap((e) => e.kind === "message" && e.message.role === "tool" ? [e.message.toolCallId] : []))
  const assistants = path.filter((e) => e.kind === "message" && e.message.role === "assistant")
  return assistants.slice(0, -1).flatMap((e) =>
    e.kind === "message" && e.message.role === "assistant"
      ? e.message.content.flatMap((p) => p.type === "tool-call" && p.providerExecuted !== true && !answered.has(p.id) ? [p.id] : [])
      : []
  )
}

/** Entries as a map, as a sync reads them from the stored session. */
const storedOf = (converted: Converted): StoredEntries => {
  const byId = new Map(converted.entries.map((e) => [e.id, e]))
  return (session, id) => (session === converted.header.id ? byId.get(id) : undefined)
}

describe("a transcript in Claude Code's format", () => {
  const transcript = () => jsonl(
    { type: "summary", summary: "Fixing the build", leafUuid: "u9" },
    { type: "file-history-snapshot", messageId: "u1", snapshot: { messageId: "u1", trackedFileBackups: {}, timestamp: ts(1) }, isSnapshotUpdate: false },
    { parentUuid: null, ...context, type: "progress", data: { type: "hook_progress", hookEvent: "SessionStart" }, toolUseID: "h1", parentToolUseID: "h1", uuid: "p0", timestamp: ts(1) },
    userLine("u1", "p0", 2, "Why does the build fail?"),
    block("a1", "u1", 3, "msg_1", [{ type: "thinking", thinking: "Look at the log first.", signature: "EqQBCkgIARAB+sig==" }]),
    block("a2", "a1", 3, "msg_1", [{ type: "redacted_thinking", data: "EmwKAhgBEgy3va+encrypted" }]),
    block("a3", "a2", 4, "msg_1", [{ type: "text", text: "Two things to check." }]),
    block("a4", "a3", 4, "msg_1", [toolUse("toolu_1", "Bash", { command: "npm run build" })]),
    { parentUuid: "a4", ...context, type: "progress", data: { type: "bash_progress" }, uuid: "p1", timestamp: ts(5) },
    // The first call's result arrives before the response's last block is written, and hangs from its call's line.
    userLine("r1", "a4", 5, [result("toolu_1", "exit 1", true)], { toolUseResult: "Error: exit 1", sourceToolAssistantUUID: "a4" }),
    block("a5", "r1", 6, "msg_1", [toolUse("toolu_2", "Read", { file_path: "/p/log.txt" })], "tool_use"),
    userLine("r2", "a5", 7, [result("toolu_2", [{ type: "text", text: "line 1" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }])], {
      toolUseResult: { type: "text", file: { filePath: "/p/log.txt" } }
    }),
    { parentUuid: "r2", ...context, type: "system", subtype: "turn_duration", durationMs: 1234, uuid: "s1", timestamp: ts(8), isMeta: false },
    block("a6", "s1", 9, "msg_2", [{ type: "server_tool_use", id: "srvtoolu_1", name: "web_search", input: { query: "tsc error" } }, {
      type: "web_search_tool_result",
      tool_use_id: "srvtoolu_1",
      content: [{ type: "web_search_result", url: "https://example.com", title: "x" }]
    }, { type: "text", text: "Fixed.", citations: null }], "end_turn"),
    userLine("u2", "a6", 10, [{ type: "text", text: "Here is a screenshot:" }, { type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }]),
    { parentUuid: "u2", ...context, isSidechain: true, agentId: "a1b2", type: "user", message: { role: "user", content: "sub-agent prompt" }, uuid: "sc1", timestamp: ts(11) },
    { parentUuid: null, logicalParentUuid: "u2", ...context, type: "system", subtype: "compact_boundary", content: "Conversation compacted", isMeta: false, timestamp: ts(12), uuid: "c1", level: "info", compactMetadata: { trigger: "auto", preTokens: 168483 } },
    userLine("cs", "c1", 12, "This session is being continued from a previous conversation. Summary: the build is fixed.", { isCompactSummary: true, isVisibleInTranscriptOnly: true }),
    userLine("u3", "cs", 13, "Thanks", { isMeta: true })
  )
  it("converts to a valid version-2 session: one message per response, its results chained after it, a compaction", () => {
    const converted = ok(transcript())
    expectValid(converted)
    expect(converted.header).toEqual({ type: "session", version: 2, id: SESSION, timestamp: ts(1) })
    expect(converted.skipped).toEqual({ "file-history-snapshot": 1, progress: 2, "system:turn_duration": 1 })
    expect(converted.read).toEqual({ summary: 1, "file-history-snapshot": 1, progress: 2, user: 7, assistant: 6, "system:turn_duration": 1, "system:compact_boundary": 1 })
    expect(converted.entries.map((e) => [e.id, e.parentId, e.kind === "message" ? e.message.role : e.kind])).toEqual([
      ["summary:1", null, "title"],
      ["u1", "summary:1", "user"],
      ["a1", "u1", "assistant"],
      ["r1", "a1", "tool"],
      ["r2", "r1", "tool"],
      ["a6", "r2", "assistant"],
      ["u2", "a6", "user"],
      // The subagent's first line starts its own session; the link to it follows the conversation.
      ["sc1:subagent", "u2", "custom"],
      ["c1", "sc1:subagent", "compaction"],
      ["u3", "c1", "user"]
    ])
    const [title, u1, a1, r1, r2, a6, u2, link, c1, u3] = converted.entries
    expect(title).toMatchObject({ kind: "title", title: "Fixing the build", timestamp: ts(1) })
    expect(link).toMatchObject({ kind: "custom", customType: "session-tree:subagent", data: { session: `${SESSION}.agent-a1b2` }, timestamp: ts(11) })
    expect(converted.subagents.map((s) => [s.header, s.entries.map((e) => [e.id, e.parentId, e.kind])])).toEqual([[
      { type: "session", version: 2, id: `${SESSION}.agent-a1b2`, timestamp: ts(11) },
      [["subagent-of", null, "custom"], ["sc1", "subagent-of", "message"]]
    ]])
    expect(converted.subagents[0]!.entries[0]).toMatchObject({ data: { session: SESSION, agentId: "a1b2" } })
    expect(u1).toMatchObject({ timestamp: ts(2), message: { content: [{ type: "text", text: "Why does the build fail?" }], options: { claude: { content: "string" } } } })
    expect(a1).toMatchObject({
      timestamp: ts(3),
      message: {
        content: [
          { type: "reasoning", text: "Look at the log first.", options: { anthropic: { type: "thinking", signature: "EqQBCkgIARAB+sig==" } } },
          { type: "reasoning", text: "", options: { anthropic: { type: "redacted_thinking", redactedData: "EmwKAhgBEgy3va+encrypted" } } },
          { type: "text", text: "Two things to check." },
          { type: "tool-call", id: "toolu_1", name: "Bash", arguments: { command: "npm run build" } },
          { type: "tool-call", id: "toolu_2", name: "Read", arguments: { file_path: "/p/log.txt" } }
        ],
        meta: {
          model: "claude-opus-4-6",
          responseId: "msg_1",
          usage: { inputTokens: 3, outputTokens: 12, cachedInputTokens: 200, cacheWriteTokens: 100 },
          stopReason: "tool_use"
        },
        options: { claude: { requestId: "req_msg_1", lines: ["a1", "a2", "a3", "a4", "a5"] } }
      }
    })
    expect(r1).toMatchObject({ message: { toolCallId: "toolu_1", toolName: "Bash", isError: true, content: [{ type: "text", text: "exit 1" }], result: "Error: exit 1" } })
    expect(r2).toMatchObject({
      message: { toolCallId: "toolu_2", toolName: "Read", isError: false, content: [{ type: "text", text: "line 1" }, { type: "file", mediaType: "image/png", data: { base64: PNG } }] }
    })
    expect(a6).toMatchObject({
      message: {
        content: [
          { type: "tool-call", id: "srvtoolu_1", name: "web_search", providerExecuted: true },
          { type: "tool-result", toolCallId: "srvtoolu_1", toolName: "web_search", isError: false, result: [{ type: "web_search_result", url: "https://example.com", title: "x" }] },
          { type: "text", text: "Fixed.", options: { anthropic: { citations: null } } }
        ],
        meta: { stopReason: "end_turn" }
      }
    })
    expect(u2).toMatchObject({ message: { content: [{ type: "text" }, { type: "file", mediaType: "image/png", data: { base64: PNG } }] } })
    expect(c1).toEqual({
      type: "entry",
      version: 2,
      id: "c1",
      parentId: "sc1:subagent",
      timestamp: ts(12),
      kind: "compaction",
      summary: "This session is being continued from a previous conversation. Summary: the build is fixed.",
      firstKeptEntryId: null,
      tokensBefore: 168483
    })
    expect(u3).toMatchObject({ message: { options: { claude: { isMeta: true } } } })
    expect(unanswered(pathTo(converted))).toEqual([])
  })

  it("splits a line holding several results and text into tool messages, then a user message", () => {
    const converted = ok(jsonl(
      userLine("u1", null, 1, "go"),
      block("a1", "u1", 2, "msg_1", [toolUse("t1", "A", {}), toolUse("t2", "B", {})]),
      userLine("r", "a1", 3, [result("t1", "one"), result("t2", "two"), { type: "text", text: "[Request interrupted by user]" }], { toolUseResult: { any: 1 } }),
      userLine("u2", "r", 4, "next")
    ))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["a1", "u1"], ["r", "a1"], ["r:1", "r"], ["r:2", "r:1"], ["u2", "r:2"]])
    // With two results on the line, its toolUseResult belongs to neither alone.
    expect(converted.entries.some((e) => e.kind === "message" && e.message.role === "tool" && "result" in e.message)).toBe(false)
  })

  it("keeps files by URL and documents, and the fields of a block in options", () => {
    const converted = ok(jsonl(userLine("u1", null, 1, [
      { type: "image", source: { type: "url", url: "https://example.com/a.png" } },
      { type: "document", source: { type: "base64", media_type: "application/pdf", data: "JVBERg==" }, title: "spec", cache_control: { type: "ephemeral" } },
      { type: "text", text: "compare", cache_control: { type: "ephemeral" } }
    ])))
    expectValid(converted)
    expect(converted.entries[0]).toMatchObject({
      message: {
        content: [
          { type: "file", mediaType: "image/*", data: { url: "https://example.com/a.png" } },
          { type: "file", mediaType: "application/pdf", data: { base64: "JVBERg==" }, options: { anthropic: { title: "spec", cache_control: { type: "ephemeral" } } } },
          { type: "text", text: "compare", options: { anthropic: { cache_control: { type: "ephemeral" } } } }
        ]
      }
    })
  })

  it("refuses what is not a Claude Code transcript, naming the line", () => {
    expectError(jsonl({ type: "session", version: 3, id: "x", timestamp: ts(1), cwd: "/" }), "SESSION_INVALID_HEADER", 1, /not a Claude Code transcript/)
    expectError(jsonl({ type: "session", version: 2, id: "x", timestamp: ts(1) }), "SESSION_INVALID_HEADER", 1)
    expectError(jsonl({ type: "file-history-snapshot", messageId: "m" }), "SESSION_INVALID_HEADER", 1, /no line names a sessionId/)
    expectError(new TextEncoder().encode(""), "SESSION_INVALID_HEADER", 1)
    expectError(jsonl(userLine("u1", null, 1, "a"), { no: "type" }), "SESSION_INVALID_RECORD", 2)
    expectError(new TextEncoder().encode(`${JSON.stringify(userLine("u1", null, 1, "a"))}{"type":"user"}\n`), "SESSION_INVALID_JSON", 1)
    expectError(jsonl(userLine("u1", null, 1, "a"), userLine("u1", "u1", 2, "b")), "SESSION_DUPLICATE_ID", 2)
    expectError(jsonl(userLine("u1", "nowhere", 1, "a")), "SESSION_UNKNOWN_PARENT", 1)
    expectError(jsonl(userLine("u1", null, 1, "a"), userLine("r", "u1", 2, [result("t9", "x")])), "SESSION_TOOL_LINK", 2)
    // A call made on another branch, or answered twice: what the loader refuses, at the transcript's line.
    expectError(jsonl(userLine("u1", null, 1, "a"), block("a1", "u1", 2, "m1", [toolUse("t1", "A", {})]), userLine("u2", "u1", 3, [result("t1", "x")])), "SESSION_TOOL_LINK", 3)
    expectError(jsonl(userLine("u1", null, 1, "a"), block("a1", "u1", 2, "m1", [toolUse("t1", "A", {})]), userLine("r", "a1", 3, [result("t1", "x"), result("t1", "y")])), "SESSION_TOOL_LINK", 3)
    expectError(jsonl(userLine("u1", null, 1, [{ type: "audio", data: "x" }])), "SESSION_INVALID_MESSAGE", 1, /"audio"/)
    expectError(jsonl(userLine("u1", null, 1, "a"), block("a1", "u1", 2, "m", [{ type: "image", source: { type: "base64", media_type: "image/png", data: PNG } }])), "SESSION_INVALID_MESSAGE", 2)
    expectError(jsonl(userLine("u1", null, 1, [{ type: "image", source: { type: "base64", media_type: "image/png", data: "not base64" } }])), "SESSION_INVALID_MESSAGE", 1, /base64/)
    expectError(jsonl(userLine("u1", null, 1, "a"), { ...userLine("u2", "u1", 2, "b"), timestamp: "yesterday" }), "SESSION_INVALID_RECORD", 2)
    expectError(jsonl({ ...userLine("u1", null, 1, "a"), timestamp: "yesterday" }), "SESSION_INVALID_HEADER", 1)
    expectError(jsonl({ ...userLine("u1", null, 1, "a"), message: { role: "assistant", content: "a" } }), "SESSION_INVALID_MESSAGE", 1)
    expectError(new Uint8Array([0xc3, 0x0a]), "SESSION_INVALID_UTF8", 1)
    // The first problem in file order, whether the line is damaged or refused by the conversion.
    expectError(
      new TextEncoder().encode(`${JSON.stringify(userLine("u1", "nowhere", 1, "a"))}\n{"type":\n${JSON.stringify(userLine("u2", null, 2, "b"))}\n`),
      "SESSION_UNKNOWN_PARENT",
      1
    )
    expectError(new TextEncoder().encode(`${JSON.stringify(userLine("u1", null, 1, "a"))}\n{"type":\n`), "SESSION_INVALID_JSON", 2)
    // A tool call written twice in one response with different content.
    expectError(jsonl(userLine("u1", null, 1, "a"), block("a1", "u1", 2, "m", [toolUse("t1", "A", {})]), block("a2", "a1", 2, "m", [toolUse("t1", "A", { x: 1 })])), "SESSION_INVALID_MESSAGE", 3, /written twice/)
  })

  it("a subagent's own file is the subagent's session, whose first entry names the session that started it", () => {
    const converted = ok(jsonl(
      { ...userLine("s1", null, 1, "task"), isSidechain: true, agentId: "x" },
      { ...block("s2", "s1", 2, "m", [{ type: "text", text: "done" }]), isSidechain: true, agentId: "x" }
    ))
    expectValid(converted)
    expect(converted.header).toEqual({ type: "session", version: 2, id: `${SESSION}.agent-x`, timestamp: ts(1) })
    expect(converted.entries.map((e) => [e.id, e.parentId, e.kind])).toEqual([["subagent-of", null, "custom"], ["s1", "subagent-of", "message"], ["s2", "s1", "message"]])
    expect(converted.entries[0]).toMatchObject({ customType: "session-tree:subagent-of", data: { session: SESSION, agentId: "x" }, timestamp: ts(1) })
    expect(converted.subagents).toEqual([])
  })

  it("inline sidechains are subagents' sessions, linked both ways to the session and the Task call whose prompt they start with", () => {
    const sidechain = (uuid: string, parentUuid: string | null, n: number, content: unknown) => ({ ...userLine(uuid, parentUuid, n, content), isSidechain: true })
    const sideBlock = (uuid: string, parentUuid: string, n: number, id: string, content: ReadonlyArray<unknown>) => ({ ...block(uuid, parentUuid, n, id, content), isSidechain: true })
    const converted = ok(jsonl(
      userLine("u1", null, 1, "explore"),
      block("a1", "u1", 2, "m1", [toolUse("task-1", "Task", { prompt: "look at A" }), toolUse("task-2", "Task", { prompt: "look at B" })]),
      sidechain("b1", null, 3, "look at B"),
      sidechain("x1", null, 4, "look at A"),
      sideBlock("x2", "x1", 5, "s1", [toolUse("t1", "Read", { file_path: "/a" })]),
      sidechain("x3", "x2", 6, [result("t1", "contents")]),
      sideBlock("x4", "x3", 7, "s2", [{ type: "text", text: "A is fine" }]),
      userLine("r1", "a1", 8, [result("task-1", "A is fine")]),
      sideBlock("b2", "b1", 9, "s3", [{ type: "text", text: "B is fine" }]),
      userLine("r2", "a1", 10, [result("task-2", "B is fine")]),
      block("a2", "r2", 11, "m2", [{ type: "text", text: "Both fine." }])
    ))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId])).toEqual([
      ["u1", null],
      ["a1", "u1"],
      ["b1:subagent", "a1"],
      ["x1:subagent", "b1:subagent"],
      ["r1", "x1:subagent"],
      ["r2", "r1"],
      ["a2", "r2"]
    ])
    expect(converted.entries.slice(2, 4).map((e) => e.kind === "custom" && e.data)).toEqual([
      { session: `${SESSION}.sidechain-b1`, toolCallId: "task-2" },
      { session: `${SESSION}.sidechain-x1`, toolCallId: "task-1" }
    ])
    for (const s of converted.subagents) expectValid(s as Converted)
    expect(converted.subagents.map((s) => [s.header.id, s.entries.map((e) => e.id), s.entries[0]!.kind === "custom" && s.entries[0]!.data])).toEqual([
      [`${SESSION}.sidechain-b1`, ["subagent-of", "b1", "b2"], { session: SESSION, toolCallId: "task-2" }],
      [`${SESSION}.sidechain-x1`, ["subagent-of", "x1", "x2", "x3", "x4"], { session: SESSION, toolCallId: "task-1" }]
    ])
    expect(unanswered(pathTo(converted))).toEqual([])
  })

  it("a subagent's result names its agent: the link follows the result, and the conversation follows the link", () => {
    const converted = ok(jsonl(
      userLine("u1", null, 1, "explore"),
      block("a1", "u1", 2, "m1", [toolUse("task-1", "Task", { prompt: "look" })]),
      userLine("r1", "a1", 3, [result("task-1", "done")], { toolUseResult: { agentId: "a712b66", status: "completed" } }),
      block("a2", "r1", 4, "m2", [{ type: "text", text: "Done." }])
    ))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["a1", "u1"], ["r1", "a1"], ["r1:subagent", "r1"], ["a2", "r1:subagent"]])
    expect(converted.entries[3]).toMatchObject({ customType: "session-tree:subagent", data: { session: `${SESSION}.agent-a712b66`, toolCallId: "task-1" } })
  })

  describe("a subagent's own file, converted with its parent's transcript, names the tool call that started it", () => {
    const task = (id: string, prompt: string) => toolUse(id, "Task", { description: "d", prompt, subagent_type: "Explore" })
    const child = jsonl(
      { ...userLine("s1", null, 3, "look at A"), isSidechain: true, agentId: "a1" },
      { ...block("s2", "s1", 4, "sm", [{ type: "text", text: "A is fine" }], "end_turn"), isSidechain: true, agentId: "a1" }
    )
    const progress = (uuid: string, parentUuid: string, n: number, call: string, agentId: string) =>
      ({ parentUuid, ...context, type: "progress", data: { type: "agent_progress", prompt: "…", agentId }, toolUseID: `agent_${uuid}`, parentToolUseID: call, uuid, timestamp: ts(n) })
    const parentOf = (...records: ReadonlyArray<unknown>) => Import.readSource(jsonl(userLine("u1", null, 1, "explore"), ...records)).lines
    const startedBy = (parent: ReadonlyArray<Import.SourceLine> | undefined, options: Parameters<typeof fromClaude>[1] = {}) => {
      const converted = ok(fromClaude(child, { ...options, parent }))
      expectValid(converted)
      return converted.entries[0]!.kind === "custom" ? converted.entries[0]!.data : undefined
    }
    const twoCalls = block("a1", "u1", 2, "m1", [task("task-1", "look at B"), task("task-2", "look at A")], "tool_use")

    it("the call whose result names the agent (Claude Code 2.0: the parent's result line, toolUseResult.agentId)", () => {
      const parent = parentOf(
        twoCalls,
        userLine("r1", "a1", 5, [result("task-2", "A is fine")], { toolUseResult: { status: "completed", agentId: "a1", prompt: "look at A" } })
      )
      expect(startedBy(parent)).toEqual({ session: SESSION, toolCallId: "task-2", agentId: "a1" })
      // The parent's own link names the same call.
      const link = ok(fromClaude(jsonl(userLine("u1", null, 1, "explore"), twoCalls, userLine("r1", "a1", 5, [result("task-2", "A is fine")], { toolUseResult: { agentId: "a1" } })))).entries
        .find((e) => e.kind === "custom" && e.customType === "session-tree:subagent")
      expect(link).toMatchObject({ data: { session: `${SESSION}.agent-a1`, toolCallId: "task-2" } })
    })

    it("while the subagent still runs: the call its agent_progress lines name (2.1), else the one call given its prompt", () => {
      expect(startedBy(parentOf(twoCalls, progress("p1", "a1", 3, "task-1", "a1")))).toEqual({ session: SESSION, toolCallId: "task-1", agentId: "a1" })
      expect(startedBy(parentOf(twoCalls))).toEqual({ session: SESSION, toolCallId: "task-2", agentId: "a1" })
      // Another agent's progress claims the call with the same prompt: the other call is this one.
      const same = block("a1", "u1", 2, "m1", [task("task-1", "look at A"), task("task-2", "look at A")], "tool_use")
      expect(startedBy(parentOf(same, progress("p1", "a1", 3, "task-1", "zz")))).toEqual({ session: SESSION, toolCallId: "task-2", agentId: "a1" })
    })

    it("no call when it is not one call, nor from another session's transcript; a link stored before stays as stored", () => {
      // Two calls given the same prompt, and nothing says which started it.
      expect(startedBy(parentOf(block("a1", "u1", 2, "m1", [task("task-1", "look at A"), task("task-2", "look at A")], "tool_use")))).toEqual({ session: SESSION, agentId: "a1" })
      // No call given its prompt.
      expect(startedBy(parentOf(block("a1", "u1", 2, "m1", [task("task-1", "look at B")], "tool_use")))).toEqual({ session: SESSION, agentId: "a1" })
      // A transcript of another session, and another subagent's file of this one, name no call.
      const other = Import.readSource(jsonl({ ...userLine("u1", null, 1, "explore"), sessionId: "other" }, { ...twoCalls, sessionId: "other" })).lines
      expect(startedBy(other)).toEqual({ session: SESSION, agentId: "a1" })
      const sibling = Import.readSource(jsonl({ ...userLine("x1", null, 1, "look at A"), isSidechain: true, agentId: "b2" }, { ...twoCalls, parentUuid: "x1", isSidechain: true })).lines
      expect(startedBy(sibling)).toEqual({ session: SESSION, agentId: "a1" })
      expect(startedBy(undefined)).toEqual({ session: SESSION, agentId: "a1" })
      // Stored without the call (its parent was not there then): converted again with the parent, it stays as it was.
      const before = ok(fromClaude(child))
      expect(startedBy(parentOf(twoCalls), { stored: storedOf(before) })).toEqual({ session: SESSION, agentId: "a1" })
    })

    it("through the front: Import.convert with parent, and parentToFind says which session to look for until the call is named", () => {
      const alone = Import.convert(child)
      expect(Either.isRight(alone) && Import.parentToFind(alone.right)).toBe(SESSION)
      const linked = Import.convert(child, { parent: jsonl(userLine("u1", null, 1, "explore"), twoCalls) })
      expect(Either.isRight(linked) && linked.right.sessions[0]!.entries[0]).toMatchObject({ data: { toolCallId: "task-2" } })
      expect(Either.isRight(linked) && Import.parentToFind(linked.right)).toBe(undefined)
      expect(Import.parentPaths(`/c/project/agent-a1.jsonl`, SESSION)).toEqual([`/c/project/${SESSION}.jsonl`])
      expect(Import.parentPaths(`/c/project/${SESSION}/subagents/agent-a1.jsonl`, SESSION)).toEqual([
        `/c/project/${SESSION}/subagents/${SESSION}.jsonl`,
        `/c/project/${SESSION}.jsonl`
      ])
    })
  })

  it("a compaction whose logical parent is not in the file follows the conversation where the file's order puts it", () => {
    const converted = ok(jsonl(
      userLine("u1", null, 1, "a"),
      block("a1", "u1", 2, "m1", [{ type: "text", text: "b" }]),
      { parentUuid: null, logicalParentUuid: "elsewhere", ...context, type: "system", subtype: "compact_boundary", timestamp: ts(3), uuid: "c1", compactMetadata: { preTokens: 5 } },
      userLine("cs", "c1", 3, "Summary: a and b.", { isCompactSummary: true }),
      userLine("u2", "cs", 4, "c")
    ))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["a1", "u1"], ["c1", "a1"], ["u2", "c1"]])
    expect(converted.entries[2]).toMatchObject({ kind: "compaction", summary: "Summary: a and b.", tokensBefore: 5 })
  })

  it("ai-title, summary and custom-title lines are titles in plain text; a title repeated or empty is counted, not stored", () => {
    const converted = ok(jsonl(
      userLine("u1", null, 1, "a"),
      { type: "ai-title", aiTitle: "<command-name>/init</command-name>  Set up  the <b>repo</b>", sessionId: SESSION },
      { type: "ai-title", aiTitle: "/init\n Set up the repo ", sessionId: SESSION },
      { type: "summary", summary: "<br/>", leafUuid: "u1" },
      block("a1", "u1", 2, "m1", [{ type: "text", text: "b" }]),
      { type: "custom-title", customTitle: "Mine", sessionId: SESSION }
    ))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId, e.kind === "title" ? e.title : e.kind])).toEqual([
      ["u1", null, "message"],
      ["ai-title:2", "u1", "/init Set up the repo"],
      ["a1", "ai-title:2", "message"],
      ["custom-title:6", "a1", "Mine"]
    ])
    expect(converted.skipped).toEqual({ "ai-title": 1, summary: 1 })
  })

  it("with keepAll, every other line is a custom entry claude:<kind> holding the whole line, on the conversation's branch", () => {
    const bytes = jsonl(
      { type: "file-history-snapshot", messageId: "u1", snapshot: {}, isSnapshotUpdate: false },
      userLine("u1", null, 1, "a"),
      block("a1", "u1", 2, "m1", [toolUse("t1", "Bash", { command: "ls" })]),
      { parentUuid: "a1", ...context, type: "progress", data: { type: "bash_progress" }, uuid: "p1", timestamp: ts(3) },
      userLine("r1", "p1", 4, [result("t1", "a.ts")]),
      { parentUuid: "r1", ...context, type: "system", subtype: "turn_duration", durationMs: 9, uuid: "s1", timestamp: ts(5) },
      userLine("u2", "s1", 6, "next")
    )
    const converted = ok(fromClaudeKeeping(bytes))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId, e.kind === "custom" ? e.customType : e.kind])).toEqual([
      ["line:1", null, "claude:file-history-snapshot"],
      ["u1", "line:1", "message"],
      ["a1", "u1", "message"],
      ["p1", "a1", "claude:progress"],
      ["r1", "p1", "message"],
      ["s1", "r1", "claude:system:turn_duration"],
      ["u2", "s1", "message"]
    ])
    const lines = new TextDecoder().decode(bytes).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
    expect(converted.entries[0]).toMatchObject({ data: lines[0], timestamp: ts(1) })
    expect(converted.kept).toEqual({ "file-history-snapshot": 1, progress: 1, "system:turn_duration": 1 })
    expect(converted.skipped).toEqual({})
  })

  it("Claude Code's blocks of one response, chained through the results of calls it made while streaming, are one message", () => {
    const converted = ok(jsonl(
      userLine("u1", null, 1, "go"),
      block("a1", "u1", 2, "m1", [toolUse("t1", "A", {})]),
      block("a2", "a1", 3, "m1", [toolUse("t2", "B", {})]),
      userLine("r1", "a1", 4, [result("t1", "one")]),
      block("a3", "r1", 5, "m1", [toolUse("t3", "C", {})]),
      userLine("r2", "a2", 6, [result("t2", "two")]),
      userLine("r3", "a3", 7, [result("t3", "three")]),
      // The same block written twice in one response is one part.
      block("a4", "r3", 8, "m2", [toolUse("t4", "D", {})]),
      block("a5", "a4", 8, "m2", [toolUse("t4", "D", {})]),
      userLine("r4", "a5", 9, [result("t4", "four")])
    ))
    expectValid(converted)
    expect(converted.entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["a1", "u1"], ["r1", "a1"], ["r2", "r1"], ["r3", "r2"], ["a4", "r3"], ["r4", "a4"]])
    expect(converted.entries[1]).toMatchObject({ message: { options: { claude: { lines: ["a1", "a2", "a3"] } } } })
    expect(converted.entries[5]).toMatchObject({ message: { content: [{ id: "t4" }], options: { claude: { lines: ["a4", "a5"] } } } })
    expect(converted.skipped).toEqual({ "repeated block": 1 })
  })
})

describe("a transcript still being written (final: false), and converted again as it grows", () => {
  const lines = [
    userLine("u1", null, 1, "go"),
    block("a1", "u1", 2, "m1", [{ type: "thinking", thinking: "hmm", signature: "c2ln" }]),
    block("a2", "a1", 3, "m1", [toolUse("t1", "A", {})]),
    userLine("r1", "a2", 4, [result("t1", "one")]),
    block("a3", "r1", 5, "m2", [{ type: "text", text: "done" }]),
    userLine("u2", "a3", 6, "thanks")
  ]

  it("a response is withheld until a later line shows it complete; what follows it waits with it", () => {
    const growing = ok(fromClaude(jsonl(...lines.slice(0, 4)), { final: false }))
    expect(growing.entries.map((e) => e.id)).toEqual(["u1"])
    expect(growing.pending).toBe(3)
    const proven = ok(fromClaude(jsonl(...lines.slice(0, 5)), { final: false }))
    expect(proven.entries.map((e) => e.id)).toEqual(["u1", "a1", "r1"])
    expect(proven.pending).toBe(1)
    const whole = ok(fromClaude(jsonl(...lines)))
    expect(whole.entries.map((e) => e.id)).toEqual(["u1", "a1", "r1", "a3", "u2"])
    // A stop reason shows a response complete by itself.
    const stopped = ok(fromClaude(jsonl(userLine("u1", null, 1, "go"), block("a1", "u1", 2, "m1", [{ type: "text", text: "x" }], "end_turn")), { final: false }))
    expect(stopped.entries.map((e) => e.id)).toEqual(["u1", "a1"])
  })

  it("stored once the source was quiet, a response's later blocks become a message of their own that continues it; entries stored before never change", () => {
    const early = ok(fromClaude(jsonl(...lines.slice(0, 2)), { final: true }))
    expect(early.entries.map((e) => e.id)).toEqual(["u1", "a1"])
    const grown = ok(fromClaude(jsonl(...lines), { final: false, stored: storedOf(early) }))
    expectValid(grown)
    expect(grown.entries.slice(0, 2)).toEqual(early.entries)
    expect(grown.entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["a1", "u1"], ["a2", "a1"], ["r1", "a2"], ["a3", "r1"], ["u2", "a3"]])
    expect(grown.entries[2]).toMatchObject({ message: { content: [{ type: "tool-call", id: "t1" }], options: { claude: { continues: "a1" } } } })
    // Converted again with what it stored, the source gives the same entries.
    expect(ok(fromClaude(jsonl(...lines), { stored: storedOf(grown) })).entries).toEqual(grown.entries)
  })
})

const REAL = Transcripts.dir("claude")
const real = Transcripts.files("claude")
const parsed = (bytes: Uint8Array): Array<Obj> | undefined => {
  try {
    return new TextDecoder().decode(bytes).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Obj)
  } catch {
    return undefined
  }
}
describe.skipIf(real.length === 0)(`the real Claude Code transcripts in ${REAL}`, () => {
  const convert = (name: string, options?: Parameters<typeof fromClaude>[1]) => fromClaude(NFS.readFileSync(Path.join(REAL, name)), options)

  it.each(real)("%s: every line read and accounted for, one branch where the source is one, signatures byte for byte", (name) => {
    const bytes = NFS.readFileSync(Path.join(REAL, name))
    const lines = parsed(bytes)
    if (lines === undefined) {
      // A line holding two objects glued together (an interrupted append): refused at that line.
      const result = fromClaude(bytes)
      expect(Either.isLeft(result) && result.left.code).toBe("SESSION_INVALID_JSON")
      const at = Either.isLeft(result) ? result.left.line! : 0
      expect(() => JSON.parse(new TextDecoder().decode(bytes).split("\n")[at - 1]!)).toThrow()
      return
    }
    for (const keepAll of [false, true]) {
      const converted = ok(convert(name, { keepAll }))
      const sessions = [converted, ...converted.subagents]
      for (const session of sessions) expectValid(session as Converted)
      expect(Object.values(converted.read).reduce((a, b) => a + b, 0)).toBe(lines.length)
      expect(converted.pending).toBe(0)
      const entries = sessions.flatMap((s) => s.entries)
      const messages = entries.flatMap((e) => (e.kind === "message" ? [e.message] : []))
      const parts = messages.flatMap((m) => (m.role === "assistant" || m.role === "user" || m.role === "tool" ? m.content : []))
      const conversation = lines.filter((l) => l.type === "user" || l.type === "assistant")
      const blocks = (type: string) => conversation.flatMap((l) => blocksOf(l).filter((b) => b.type === type))
      // Every line of the conversation is an entry, or one of the lines of a response, or a compaction's summary.
      const ids = new Set(entries.map((e) => e.id))
      const listed = new Set(messages.flatMap((m) => ((m.options?.claude as Obj | undefined)?.lines as Array<string> | undefined) ?? []))
      const summaries = new Set(entries.flatMap((e) => (e.kind === "compaction" ? [e.summary] : [])))
      for (const l of conversation) {
        const text = typeof contentOf(l) === "string" ? contentOf(l) : blocksOf(l).filter((b) => b.type === "text").map((b) => b.text).join("\n")
        expect(ids.has(l.uuid as string) || listed.has(l.uuid as string) || (l.isCompactSummary === true && summaries.has(text as string))).toBe(true)
      }
      expect(messages.filter((m) => m.role === "tool").length).toBe(blocks("tool_result").length)
      expect(parts.filter((p) => p.type === "tool-call").length).toBe(blocks("tool_use").length - (converted.skipped["repeated block"] ?? 0))
      const thinking = blocks("thinking")
      expect(parts.filter((p) => p.type === "reasoning").map((p) => [p.text, p.options?.anthropic])).toEqual(
        thinking.map((b) => [b.thinking, { type: "thinking", signature: b.signature }])
      )
      // Every signature of the source, byte for byte, in what is stored.
      const stored = entries.map((e) => JSON.stringify(e)).join("\n")
      for (const b of thinking) expect(stored.includes(JSON.stringify(b.signature))).toBe(true)
      const images = blocks("image").length + blocks("tool_result").flatMap((b) => Array.isArray(b.content) ? (b.content as Array<Obj>).filter((c) => c.type === "image") : []).length
      expect(parts.filter((p) => p.type === "file").length).toBe(images)
      expect(entries.filter((e) => e.kind === "compaction").length).toBe(lines.filter((l) => l.type === "system" && l.subtype === "compact_boundary").length)
      // One branch where the source is one: as many leaves as the source's own conversation has.
      const own = lines.filter((l) => converted.header.id.includes(".agent-") || l.isSidechain !== true)
      expect(leavesOf(converted.entries)).toBe(sourceLeaves(own))
      // Kept or skipped, every other line is counted by its kind.
      const others = Object.values(keepAll ? converted.kept : converted.skipped).reduce((a, b) => a + b, 0) - (converted.skipped["repeated block"] ?? 0)
      const titles = entries.filter((e) => e.kind === "title").length
      const links = entries.filter((e) => e.kind === "custom" && e.customType === "session-tree:subagent").length
      const customs = entries.filter((e) => e.kind === "custom" && e.customType.startsWith("claude:")).length
      expect(customs).toBe(keepAll ? others : 0)
      const boundaries = entries.filter((e) => e.kind === "compaction").length
      const skippedTitles = keepAll ? Object.entries(converted.skipped).filter(([k]) => k !== "repeated block").reduce((a, [, n]) => a + n, 0) : 0
      expect(conversation.length + boundaries + titles + others + skippedTitles).toBe(lines.length)
      expect(links).toBeGreaterThanOrEqual(0)
    }
  })

  it.each(real.filter((name) => /agent-[0-9a-f]+\.jsonl$/.test(name)))("%s: a subagent's file is a session of its own, linked both ways with its parent's", (name) => {
    const child = ok(convert(name))
    const lines = parsed(NFS.readFileSync(Path.join(REAL, name)))!
    const sessionId = lines.find((l) => typeof l.sessionId === "string")!.sessionId as string
    const agentId = lines.find((l) => typeof l.agentId === "string")!.agentId as string
    expect(child.header.id).toBe(`${sessionId}.agent-${agentId}`)
    expect(child.entries.length).toBeGreaterThan(1)
    expect(child.entries[0]).toMatchObject({ parentId: null, kind: "custom", customType: "session-tree:subagent-of", data: { session: sessionId, agentId } })
    const parentName = real.find((other) => other !== name && other.includes(sessionId) && !/agent-/.test(other))
    if (parentName === undefined) return
    const parent = ok(convert(parentName))
    expect(parent.header.id).toBe(sessionId)
    const link = parent.entries.find((e) => e.kind === "custom" && e.customType === "session-tree:subagent" && (e.data as Obj).session === child.header.id)
    expect(link).toBeDefined()
    // The link names the Task call that started the subagent: its prompt is the subagent's first line.
    const toolCallId = (link as { data: Obj }).data.toolCallId
    const call = parent.entries.flatMap((e) => e.kind === "message" && e.message.role === "assistant" ? e.message.content : []).find((p) => p.type === "tool-call" && p.id === toolCallId)
    expect(call).toMatchObject({ type: "tool-call", arguments: { prompt: contentOf(lines[0]!) } })
    // Converted with its parent's transcript, the subagent's own link names the same call.
    const parentLines = Import.readSource(NFS.readFileSync(Path.join(REAL, parentName))).lines
    const linked = ok(fromClaude(NFS.readFileSync(Path.join(REAL, name)), { parent: parentLines }))
    expect(linked.entries[0]).toMatchObject({ data: { session: sessionId, toolCallId, agentId } })
    expect(linked.entries.slice(1)).toEqual(child.entries.slice(1))
    // Each way the parent's transcript names it: its result line, and (2.1) its agent_progress lines.
    const progress = parentLines.filter((l) => l.record.type === "progress" && (l.record.data as Obj | undefined)?.agentId === agentId)
    for (const l of progress) expect(l.record.parentToolUseID).toBe(toolCallId)
    const withoutResults = parentLines.filter((l) => !(l.record.type === "user" && (l.record.toolUseResult as Obj | undefined)?.agentId === agentId))
    const fromRunning = ok(fromClaude(NFS.readFileSync(Path.join(REAL, name)), { parent: withoutResults }))
    expect(fromRunning.entries[0]).toMatchObject({ data: { toolCallId } })
  })

  it.each(real)("%s: inline sidechains are sessions of their own, each linked to its parent's Task call", (name) => {
    const lines = parsed(NFS.readFileSync(Path.join(REAL, name)))
    if (lines === undefined || /agent-[0-9a-f]+\.jsonl$/.test(name)) return
    const converted = ok(convert(name))
    const roots = lines.filter((l) => l.isSidechain === true && (l.parentUuid === null || !lines.some((o) => o.isSidechain === true && o.uuid === l.parentUuid)))
    expect(converted.subagents.length).toBe(roots.length)
    const links = converted.entries.filter((e) => e.kind === "custom" && e.customType === "session-tree:subagent")
    for (const [i, subagent] of converted.subagents.entries()) {
      expect(subagent.entries[0]).toMatchObject({ kind: "custom", customType: "session-tree:subagent-of", data: { session: converted.header.id } })
      const link = links.find((e) => e.kind === "custom" && (e.data as Obj).session === subagent.header.id)
      expect(link).toBeDefined()
      expect((link as { data: Obj }).data.toolCallId).toBe((subagent.entries[0] as { data: Obj }).data.toolCallId)
      expect(typeof (link as { data: Obj }).data.toolCallId).toBe("string")
      expect(subagent.entries[1]!.id).toBe(roots[i]!.uuid)
    }
    // Every sidechain line is in a subagent's session.
    const inSubagents = new Set(converted.subagents.flatMap((s) => s.entries.map((e) => e.id)))
    for (const l of lines.filter((l) => l.isSidechain === true && l.type === "user")) expect(inSubagents.has(l.uuid as string)).toBe(true)
  })
})
if (real.length === 0) it.skip(`the real Claude Code transcripts: ${REAL} is missing`, () => {})

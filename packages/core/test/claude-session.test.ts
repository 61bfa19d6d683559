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
import { type Converted, fromClaude } from "../src/ClaudeSession.js"
import * as RecordV2 from "../src/RecordV2.js"
import { isSessionError, type SessionErrorCode } from "../src/SessionError.js"
import { PNG } from "./support/pi.js"
import { brokenRule } from "./support/piInverse.js"
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

const ok = (bytes: Uint8Array): Converted => {
  const converted = fromClaude(bytes)
  if (Either.isLeft(converted)) throw new Error(`expected a conversion, got ${converted.left.message}`)
  return converted.right
}
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
    expect(converted.skipped).toEqual({ summary: 1, "file-history-snapshot": 1, progress: 2, "system:turn_duration": 1, sidechain: 1 })
    expect(converted.entries.map((e) => [e.id, e.parentId, e.kind === "message" ? e.message.role : e.kind])).toEqual([
      ["u1", null, "user"],
      ["a1", "u1", "assistant"],
      ["r1", "a1", "tool"],
      ["r2", "r1", "tool"],
      ["a6", "r2", "assistant"],
      ["u2", "a6", "user"],
      ["c1", "u2", "compaction"],
      ["u3", "c1", "user"]
    ])
    const [u1, a1, r1, r2, a6, u2, c1, u3] = converted.entries
    expect(u1).toMatchObject({ timestamp: ts(2), message: { content: [{ type: "text", text: "Why does the build fail?" }], options: { claude: { content: "string" } } } })
    expect(a1).toMatchObject({
      timestamp: ts(3),
      message: {
        content: [
          { type: "reasoning", text: "Look at the log first.", options: { anthropic: { signature: "EqQBCkgIARAB+sig==" } } },
          { type: "reasoning", text: "", options: { anthropic: { redactedData: "EmwKAhgBEgy3va+encrypted" } } },
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
      parentId: "u2",
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
    expectError(new Uint8Array([0xc3]), "SESSION_INVALID_UTF8", undefined as never)
  })

  it("a transcript of a sub-agent alone (every line a sidechain) is an empty session, every line counted", () => {
    const converted = ok(jsonl(
      { ...userLine("s1", null, 1, "task"), isSidechain: true, agentId: "x" },
      { ...block("s2", "s1", 2, "m", [{ type: "text", text: "done" }]), isSidechain: true, agentId: "x" }
    ))
    expect(converted.entries).toEqual([])
    expect(converted.skipped).toEqual({ sidechain: 2 })
    expect(converted.header.timestamp).toBe(ts(1))
  })
})

const REAL = Transcripts.dir("claude")
const real = Transcripts.files("claude")
const parsed = (bytes: Uint8Array): Array<Record<string, unknown>> | undefined => {
  try {
    return new TextDecoder().decode(bytes).split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>)
  } catch {
    return undefined
  }
}

describe.skipIf(real.length === 0)(`the real Claude Code transcripts in ${REAL}`, () => {
  it.each(real)("%s", (name) => {
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
    const converted = ok(bytes)
    expectValid(converted)
    expect(converted.header.id).toBe(lines.find((l) => "sessionId" in l)!.sessionId)
    expect(converted.header.timestamp).toBe(lines.find((l) => "timestamp" in l)!.timestamp)
    // Counts: every line is skipped, or is (part of) an entry; every block of the conversation is a part or a message.
    const main = lines.filter((l) => (l.type === "user" || l.type === "assistant") && l.isSidechain !== true)
    const skippedLines = Object.values(converted.skipped).reduce((a, b) => a + b, 0)
    const boundaries = lines.filter((l) => l.type === "system" && l.subtype === "compact_boundary").length
    expect(skippedLines + main.length + boundaries).toBe(lines.length)
    expect(converted.skipped.sidechain ?? 0).toBe(lines.filter((l) => l.isSidechain === true).length)
    const blocks = (type: string, role: string) =>
      main.filter((l) => l.type === role).flatMap((l) => {
        const content = (l.message as { content: unknown }).content
        return Array.isArray(content) ? content.filter((b: { type: string }) => b.type === type) : []
      })
    const messages = converted.entries.flatMap((e) => (e.kind === "message" ? [e.message] : []))
    const parts = messages.flatMap((m) => (m.role === "assistant" || m.role === "user" || m.role === "tool" ? m.content : []))
    expect(messages.filter((m) => m.role === "tool").length).toBe(blocks("tool_result", "user").length)
    expect(parts.filter((p) => p.type === "tool-call").length).toBe(blocks("tool_use", "assistant").length)
    const thinking = blocks("thinking", "assistant") as Array<{ thinking: string; signature: string }>
    const reasoning = parts.filter((p) => p.type === "reasoning")
    expect(reasoning.map((p) => [p.text, p.options?.anthropic])).toEqual(thinking.map((b) => [b.thinking, { signature: b.signature }]))
    expect(parts.filter((p) => p.type === "file").length).toBe(
      blocks("image", "user").length +
        blocks("tool_result", "user").flatMap((b: { content?: unknown }) => Array.isArray(b.content) ? b.content.filter((c: { type: string }) => c.type === "image") : []).length
    )
    expect(messages.filter((m) => m.role === "assistant").length).toBe(new Set(main.filter((l) => l.type === "assistant").map((l) => (l.message as { id: string }).id)).size)
    expect(converted.entries.filter((e) => e.kind === "compaction").length).toBe(boundaries)
    // The conversation's path ends with every call answered: parallel results are on it, not on side branches.
    if (converted.entries.length > 0) expect(unanswered(pathTo(converted))).toEqual([])
  })
})
if (real.length === 0) it.skip(`the real Claude Code transcripts: ${REAL} is missing`, () => {})

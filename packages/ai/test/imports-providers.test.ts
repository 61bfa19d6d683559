/**
 * Imported sessions resumed with a real provider: the Claude Code and Pi
 * transcripts of the shared collection (skipped, saying so, where it is
 * absent), a Claude Code transcript written here with redacted thinking (no
 * real file holds one), and a Pi session written by Pi's own SessionManager
 * with Anthropic thinking, redacted thinking and an OpenAI Responses reasoning
 * item, each imported by today's importer (whatever form it writes, the
 * legacy one included), reloaded and sent by `@effect/ai-anthropic` and
 * `@effect/ai-openai`: every signature, redacted payload and encrypted
 * reasoning item is in the requests byte for byte (support/imports.ts).
 */
import { ClaudeSession, CodexSession, PiSession } from "@session-tree/core"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { loadPi, piAssistant, piToolResult, piUser, tempDir, text, thinking, toolCall, writePi } from "../../core/test/support/pi.js"
import { claudePayloads, codexPayloads, type Format, piPayloads, realSources, sendsEveryPayloadBack } from "./support/imports.js"

const claude: Format = { kind: "Claude Code", convert: ClaudeSession.fromClaude, payloads: claudePayloads }
const pi: Format = { kind: "Pi", convert: PiSession.fromPiV2, payloads: piPayloads }
const codex: Format = { kind: "Codex", convert: CodexSession.fromCodex, payloads: codexPayloads }

sendsEveryPayloadBack(claude, realSources("claude"))
sendsEveryPayloadBack(pi, realSources("pi"))
sendsEveryPayloadBack(codex, realSources("codex"))

const SESSION = "7a2b3c4d-0000-4000-8000-00000000000a"
const line = (uuid: string, parentUuid: string | null, n: number, type: string, message: unknown, extra: object = {}) => ({
  parentUuid,
  isSidechain: false,
  userType: "external",
  cwd: "/p",
  sessionId: SESSION,
  version: "2.1.40",
  type,
  message,
  uuid,
  timestamp: `2026-02-03T04:05:${String(n).padStart(2, "0")}.000Z`,
  ...extra
})
const response = (id: string, content: ReadonlyArray<unknown>, stop: string | null = null) => ({
  model: "claude-sonnet-4-5-20250929",
  id,
  type: "message",
  role: "assistant",
  content,
  stop_reason: stop,
  stop_sequence: null,
  usage: { input_tokens: 12, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 30 }
})

/** A Claude Code transcript as Claude Code writes one: each block of a response on a line of its own. */
const claudeTranscript = (): Uint8Array =>
  new TextEncoder().encode([
    line("u1", null, 1, "user", { role: "user", content: "What is in /project?" }),
    line("a1", "u1", 2, "assistant", response("msg_1", [{ type: "thinking", thinking: "I should list it.", signature: "EqQBCkYIBxgCKkAclaudeFixtureSignature==" }])),
    line("a2", "a1", 3, "assistant", response("msg_1", [{ type: "redacted_thinking", data: "EmwKAhgBEgyclaudeFixtureRedactedData" }])),
    line("a3", "a2", 4, "assistant", response("msg_1", [{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls /project" } }], "tool_use")),
    line("r1", "a3", 5, "user", { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "README.md" }] }),
    line("a4", "r1", 6, "assistant", response("msg_2", [{ type: "thinking", thinking: "", signature: "" }])),
    line("a5", "a4", 7, "assistant", response("msg_2", [{ type: "text", text: "README.md." }], "end_turn")),
    line("u2", "a5", 8, "user", { role: "user", content: "Thanks." })
  ].map((l) => JSON.stringify(l)).join("\n") + "\n")

sendsEveryPayloadBack(claude, [{ name: "thinking, redacted thinking, an empty signature", bytes: claudeTranscript }], "written here", { nonEmpty: true })

/** A Pi session written by Pi's SessionManager: Anthropic's thinking, then OpenAI's Responses API on the same branch. */
const piSession = async (): Promise<Uint8Array> => {
  const module = await loadPi()
  const dir = tempDir()
  try {
    return writePi(module, Path.join(dir, "session.jsonl"), (sm) => {
      sm.appendMessage(piUser("What is in /project?"))
      sm.appendMessage(piAssistant([
        thinking("I should list it.", { thinkingSignature: "EqQBCkgIARABGAIiQLpiFixtureSignature==" }),
        thinking("[Reasoning redacted]", { thinkingSignature: "EmwKAhgBEgy3vapiFixtureRedacted", redacted: true }),
        toolCall("toolu_1", "bash", { command: "ls /project" })
      ]))
      sm.appendMessage(piToolResult("toolu_1", "bash", [text("README.md")]))
      sm.appendMessage(piAssistant([text("README.md.")]))
      sm.appendModelChange("openai", "gpt-5")
      sm.appendMessage(piUser("And why?"))
      sm.appendMessage(piAssistant([
        thinking("Because it is there.", {
          thinkingSignature: JSON.stringify({
            type: "reasoning",
            id: "rs_piFixture01",
            summary: [{ type: "summary_text", text: "Because it is there." }],
            encrypted_content: "gAAAAABpiFixtureEncryptedReasoning"
          })
        }),
        text("It was put there.")
      ], { api: "openai-responses", provider: "openai", model: "gpt-5" }))
      sm.appendMessage(piUser("Thanks."))
    }).bytes
  } finally {
    NFS.rmSync(dir, { recursive: true, force: true })
  }
}

sendsEveryPayloadBack(pi, [{ name: "Anthropic thinking and redacted thinking, then an OpenAI reasoning item", bytes: piSession }], "written by Pi's SessionManager", {
  nonEmpty: true
})

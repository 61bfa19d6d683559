/**
 * The Pi session of `imports-providers.test.ts`, written by Pi's own SessionManager: Anthropic's
 * thinking and redacted thinking, then OpenAI's Responses API on the same branch. Pi is optional
 * (`npm run pi:install`); without it the tests read `fixtures/pi-reasoning.jsonl`, which Pi wrote.
 * Record it again when the pinned Pi changes:
 *
 *   node --conditions=@session-tree/source --import tsx packages/ai/test/support/piReasoning.ts
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { loadPi, type PiModule, piAssistant, piToolResult, piUser, tempDir, text, thinking, toolCall, writePi } from "../../../core/test/support/pi.js"

export const RECORDED = fileURLToPath(new URL("../fixtures/pi-reasoning.jsonl", import.meta.url))

/** The session's bytes as Pi writes them. */
export const writeReasoningSession = (module: PiModule): Uint8Array => {
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

// Run as a script: record the file.
if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  NFS.writeFileSync(RECORDED, writeReasoningSession(await loadPi()))
  console.log(`recorded ${RECORDED}`)
}

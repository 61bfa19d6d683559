/**
 * Pi sessions that the tests of the Pi mapping build with Pi's own SessionManager, shared by the
 * tests that call Pi and by the recorder of the fixtures that the recorded check reads when Pi
 * is not installed (`fixtures/pi/record.ts`).
 */
import { image, piAssistant, piBash, piCustom, piParts, type PiModule, type PiSessionManager, piToolResult, piUser, text, thinking, toolCall, writePi } from "./pi.js"

/**
 * A session holding every entry kind and content block Pi writes, at `file` (which must not
 * exist): the IDs Pi gave the entries the tests look at, its bytes and its manager.
 */
export const everything = (pi: PiModule, file: string): { readonly ids: Record<string, string>; readonly bytes: Uint8Array; readonly sm: PiSessionManager } => {
  const ids: Record<string, string> = {}
  const { bytes, sm } = writePi(pi, file, (sm) => {
    sm.appendSessionInfo("Everything Pi writes")
    sm.appendModelChange("anthropic", "claude-sonnet-4-5")
    sm.appendThinkingLevelChange("high")
    ids.u1 = sm.appendMessage(piUser("A string prompt"))
    ids.a1 = sm.appendMessage(piAssistant([
      thinking("Let me think about this.", { thinkingSignature: "EqQBCkgIARABGAIiQL+signature==" }),
      thinking("[Reasoning redacted]", { thinkingSignature: "EmwKAhgBEgy3va+encrypted", redacted: true }),
      { type: "text", text: "I will look.", textSignature: "{\"v\":1,\"id\":\"msg_1\"}" } as never,
      { ...toolCall("toolu_01", "read", { path: "a.png", opts: { n: 1.5, list: [1, null, "x"] } }), thoughtSignature: "sig-tc" } as never,
      toolCall("toolu_02", "bash", { command: "ls" })
    ], { responseId: "msg_01", responseModel: "claude-sonnet-4-5-20250929" }))
    ids.t1 = sm.appendMessage(piToolResult("toolu_01", "read", [text("the image:"), image()], false, { bytes: 70, lines: [1, 2] }))
    ids.t2 = sm.appendMessage(piToolResult("toolu_02", "bash", [text("permission denied")], true))
    ids.u2 = sm.appendMessage(piUser([text("Look at this:"), image(), text("and this")]))
    ids.a2 = sm.appendMessage(piAssistant([text("Partial")], { stopReason: "aborted", errorMessage: "Request was aborted" }))
    ids.label = sm.appendLabelChange(ids.a1!, "checkpoint")
    sm.appendLabelChange(ids.a1!, undefined)
    ids.bash = sm.appendMessage(piBash("ls -la", "total 0"))
    ids.custom = sm.appendMessage(piCustom("my-ext", "an extension's message"))
    sm.appendCustomMessageEntry("my-ext", piParts([text("injected"), image()]), false, { source: "hook" })
    sm.appendCustomMessageEntry("my-ext", "injected as a string", true)
    sm.appendCustomEntry("my-ext-state", { count: 42, nested: { list: [true, false] } })
    sm.appendCustomEntry("my-ext-empty")
    ids.compaction = sm.appendCompaction("Summary of the work so far.", ids.u2!, 12345, { readFiles: ["a.png"], modifiedFiles: [] }, false)
    ids.u3 = sm.appendMessage(piUser([text("after the compaction")]))
    sm.appendModelChange("openai", "gpt-5")
    sm.appendThinkingLevelChange("low")
    ids.a3 = sm.appendMessage(piAssistant([text("Answer from another model.")], { provider: "openai", model: "gpt-5", api: "openai-responses" }))
    sm.appendSessionInfo("")
    sm.appendCompaction("A second summary, no details.", ids.u3!, 99)
    ids.summary = sm.branchWithSummary(ids.a1!, "What the abandoned branch did.", { files: 2 }, true)
    ids.u4 = sm.appendMessage(piUser("on the new branch"))
    ids.a4 = sm.appendMessage(piAssistant([]))
    sm.resetLeaf()
    sm.appendThinkingLevelChange("minimal")
    sm.appendMessage(piUser("a second root"))
  })
  return { ids, bytes, sm }
}

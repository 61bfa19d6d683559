/**
 * The links between a session and its subagents' sessions (`Subagents`, written by imports) in the
 * views: the Markdown transcript and the HTML page say which session the link names and the tool
 * call that started the subagent, the IDs escaped like any other stored text.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Html from "../src/Html.js"
import * as Markdown from "../src/Markdown.js"
import { build2 } from "./support/v2.js"

const parent = build2("parent", (s) => {
  s.add({ kind: "message", message: { role: "user", id: "u", content: [{ type: "text", text: "explore" }] } })
  s.add({ kind: "message", message: { role: "assistant", id: "a", content: [{ type: "tool-call", id: "toolu_1", name: "Task", arguments: { prompt: "look" } }] } })
  s.add({ kind: "custom", customType: "session-tree:subagent", data: { session: "parent.agent-<b>x</b>", toolCallId: "toolu_1" } })
})
const child = build2("parent.agent-x", (s) => {
  s.add({ kind: "custom", customType: "session-tree:subagent-of", data: { session: "parent", agentId: "x" } })
  s.add({ kind: "message", message: { role: "user", id: "c", content: [{ type: "text", text: "look" }] } })
})

describe("subagent links in the views", () => {
  it("Markdown names the subagent's session and the call that started it, and the parent of a subagent's session", async () => {
    const md = await Effect.runPromise(Markdown.render(parent.header, parent.entries))
    expect(md).toContain("A subagent's session `parent.agent-<b>x</b>`, started by tool call `toolu_1`.")
    const sub = await Effect.runPromise(Markdown.render(child.header, child.entries))
    expect(sub).toContain("A subagent of session `parent`.")
  })

  it("HTML names them, escaped", async () => {
    const html = await Effect.runPromise(Html.render(parent.header, parent.entries))
    expect(html).toContain(`a subagent's session <span class="tn">parent.agent-&lt;b&gt;x&lt;/b&gt;</span> · started by tool call <span class="tn">toolu_1</span>`)
    expect(html).not.toContain("<b>x</b>")
    const sub = await Effect.runPromise(Html.render(child.header, child.entries))
    expect(sub).toContain(`a subagent of session <span class="tn">parent</span>`)
  })
})

/**
 * The Markdown transcript for a reader (the default): what a person reads, without what only a
 * program needs. No entry, message or call ID (sections refer to each other by number), no
 * provider options, no model meta but an error, and a tool's result once: its text, or its JSON
 * value when it has no text. `verbose` shows all of it (the other Markdown tests).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Markdown from "../src/Markdown.js"
import { demo } from "./support/sessions.js"
import { agent, build2, type Session2 } from "./support/v2.js"

const render = (session: Session2, options: Markdown.Options = {}) => Effect.runPromise(Markdown.render(session.header, session.entries, options))

/** Every ID of the agent session's first branch: its entries', messages' and calls'. */
const idsOf = (session: Session2): Array<string> =>
  session.entries.flatMap((entry) => [
    entry.id,
    ...(entry.kind === "message"
      ? [entry.message.id, ...(entry.message.role === "assistant" ? entry.message.content.flatMap((p) => (p.type === "tool-call" ? [p.id] : [])) : [])]
      : [])
  ])

describe("Markdown.render for a reader", () => {
  it("names no ID, no provider option and no model meta but the error; sections refer to each other by number", async () => {
    const session = agent()
    const md = await render(session, { leaf: "text 59#e10" })
    for (const id of idsOf(session)) expect(md, id).not.toContain(`\`${id}\``)
    expect(md).not.toMatch(/options: `/)
    expect(md).not.toContain("Model `claude-x text 28`")
    expect(md).not.toContain("usage:")
    expect(md).toContain("**Error** `overloaded text 31`")
    expect(md.split("\n").filter((line) => line.startsWith("## "))).toEqual([
      "## 1. System",
      "## 2. User",
      "## 3. Assistant",
      "## 4. Tool result `zoom text 20`",
      "## 5. Model change",
      "## 6. Compaction",
      "## 7. Label",
      "## 8. Title",
      "## 9. Custom `my-extension text 42`",
      "## 10. Assistant"
    ])
    expect(md).toContain("### Tool call 1: `zoom text 20`\n\nAnswered in section 4.")
    expect(md).toContain("Answers the `zoom text 20` call of section 3 · **error**")
    expect(md).toContain("Keeps the entries from section 2 on")
    expect(md).toContain("Labels section 2 as `important text 40`.")
    expect(md).toContain("- Leaf: section 10 (chosen)")
  })

  it("shows a tool's result once: its text, or its JSON value when it has no text; verbose shows both", async () => {
    const session = agent()
    const reader = await render(session, { leaf: "text 59#e10" })
    expect(reader).toContain("```text\nzoomed text 33\n```")
    expect(reader).not.toContain("Result:")
    expect(reader).not.toContain("\"pixels\": 16")
    const verbose = await render(session, { leaf: "text 59#e10", verbose: true })
    expect(verbose).toContain("```text\nzoomed text 33\n```")
    expect(verbose).toContain("Result:\n\n```json\n{\n  \"pixels\": 16,")
    const only = build2("json-only", (s) => {
      s.add({ kind: "message", message: { role: "user", id: "u", content: [{ type: "text", text: "Count." }] } })
      s.add({ kind: "message", message: { role: "assistant", id: "a", content: [{ type: "tool-call", id: "c", name: "count", arguments: {} }] } })
      s.add({ kind: "message", message: { role: "tool", id: "t", toolCallId: "c", toolName: "count", isError: false, content: [], result: { n: 3 } } })
    })
    const md = await render(only)
    expect(md.match(/"n": 3/g)).toHaveLength(1)
    expect(md).toContain("Result:\n\n```json\n{\n  \"n\": 3\n}\n```")
  })

  it("a version-1 transcript names no ID either", async () => {
    const session = await demo()
    const md = await render(session as unknown as Session2, { leaf: "entry-004" })
    expect(md).not.toMatch(/`entry-00\d`|`call-1`|`m-\d`/)
    expect(md).toContain("### Tool call 1: `list_dir`\n\nAnswered in section 3.")
    expect(md).toContain("## 3. Tool result `list_dir`\n\n")
    expect(md).toContain("Answers the `list_dir` call of section 2 · ok")
  })
})

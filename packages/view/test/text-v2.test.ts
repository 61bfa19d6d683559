/**
 * The terminal views of a version-2 session: each entry by its kind (a message
 * by its role) with what it holds, each labelled entry with its label, the
 * title after the header, and the JSON forms naming kinds, labels and the
 * title. Hostile caller text in any field reaches no terminal as a control.
 */
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import * as Text from "../src/Text.js"
import { agent, build2, hostileAgent } from "./support/v2.js"

const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

const log = (session: ReturnType<typeof agent>, leaf?: string) => Effect.runPromise(Text.renderLog(session.entries, { leaf }))
const tree = (session: ReturnType<typeof agent>) => Effect.runPromise(Text.renderTree(session.header, session.entries))

describe("Text on version 2", () => {
  it("log: one line per entry of the path, by kind or role, with what each holds", async () => {
    const session = agent()
    const lines = await log(session, "text 59#e10")
    expect(lines).toEqual([
      "text 50#e1  system     \"You are careful. text 1\"",
      "text 51#e2  user       \"What is in this picture? text 5\"  file image/png \"pixel text 6.png\"  file text/htmltext 7 \"page text 8\"  " +
      "file application/pdftext 9 \"report text 10.pdf\" blob 123,456 bytes sha256:abababababab  file image/svg+xmltext 11  file image/png \"unsafe link text 12\"  [label \"important text 40\"]",
      "text 52#e3  assistant  \"Let me look closer. text 18\"  reasoning 35 chars  calls zoom text 20({\"text 21\":\"text 22\",\"factor\":4}) [text 19#call-1], " +
      "web_search text 24({\"query\":\"text 25\"}) [text 23#search] by the provider  result web_search text 24 [text 23#search]  model claude-x text 28  error \"overloaded text 31\"",
      "text 53#e4  tool       zoom text 20 [text 19#call-1] error → \"zoomed text 33\"  file image/png \"zoomed text 34.png\"",
      "text 54#e5  model      openai text 36/gpt-y text 37 thinking high text 38",
      "text 55#e6  compaction \"The user asked about a picture. text 39\"  keeps from text 51#e2",
      "text 56#e7  label      text 51#e2 → \"important text 40\"",
      "text 57#e8  title      \"Picture questions text 41\"",
      "text 58#e9  custom     my-extension text 42 {\"text 43\":[\"text 44\",1,null]}",
      "text 59#e10  assistant  \"It is one pixel. text 46\""
    ])
  })

  it("shows redacted reasoning, a compaction that keeps nothing, a removed label and the newest label only", async () => {
    const session = build2("s", (s) => {
      const u = s.add({ kind: "message", message: { role: "user", id: "u", content: [{ type: "text", text: "hi" }] } })
      s.add({ kind: "message", message: { role: "assistant", id: "a", content: [{ type: "reasoning", text: "", options: { data: "x" } }] } })
      s.add({ kind: "compaction", summary: "all", firstKeptEntryId: null })
      s.add({ kind: "label", targetId: u, label: "first" })
      s.add({ kind: "label", targetId: u, label: "second" })
      const gone = s.add({ kind: "model", provider: "p", model: "m" })
      s.add({ kind: "label", targetId: gone, label: "temporary" })
      s.add({ kind: "label", targetId: gone, label: null })
    })
    const lines = await log(session)
    expect(lines[0]).toBe("entry-001  user       \"hi\"  [label \"second\"]")
    expect(lines[1]).toBe("entry-002  assistant  \"\"  reasoning (redacted)")
    expect(lines[2]).toBe("entry-003  compaction \"all\"  keeps nothing before it")
    expect(lines[5]).toBe("entry-006  model      p/m")
    expect(lines[7]).toBe("entry-008  label      entry-006 unlabelled")
  })

  it("a tool message whose result is data, with no text, shows the result's JSON", async () => {
    const session = build2("s", (s) => {
      s.add({ kind: "message", message: { role: "assistant", id: "a", content: [{ type: "tool-call", id: "c1", name: "ls", arguments: {} }] } })
      s.add({ kind: "message", message: { role: "tool", id: "t", toolCallId: "c1", toolName: "ls", isError: false, content: [], result: { files: ["a", "b"] } } })
    })
    expect((await log(session))[1]).toBe("entry-002  tool       ls [c1] → {\"files\":[\"a\",\"b\"]}")
  })

  it("tree: the title on the line after the header, labels on their targets, every kind in its place", async () => {
    const session = agent()
    const lines = await tree(session)
    expect(lines[0]).toBe("session agent-session  2026-03-02T09:00:00.000Z  11 entries")
    expect(lines[1]).toBe("title \"Picture questions text 41\"")
    expect(lines[3]).toMatch(/^● text 51#e2  user {7}.*\[label "important text 40"\]$/)
    expect(lines.slice(8)).toEqual([
      "├── ○ text 56#e7  label      text 51#e2 → \"important text 40\"",
      "│   ○ text 57#e8  title      \"Picture questions text 41\"",
      "│   ○ text 58#e9  custom     my-extension text 42 {\"text 43\":[\"text 44\",1,null]}",
      "│   ○ text 59#e10  assistant  \"It is one pixel. text 46\"",
      "└── ● text 60#e11  user       \"And now? text 48\"  ← leaf"
    ])
    // No title entry: no title line; the newest title entry wins.
    const untitled = build2("u", (s) => void s.add({ kind: "message", message: { role: "system", id: "s", content: "x" } }))
    expect((await tree(untitled))[1]).toBe("● entry-001  system     \"x\"  ← leaf")
    const retitled = build2("r", (s) => {
      s.add({ kind: "title", title: "old" })
      s.add({ kind: "title", title: "new" })
    })
    expect((await tree(retitled))[1]).toBe("title \"new\"")
  })

  it("tree --json: kind, role (null for other kinds), label and the session's title", async () => {
    const session = agent()
    const json = await Effect.runPromise(Text.treeJson(session.header, session.entries))
    expect(json).toMatchObject({ session: "agent-session", leaf: "text 60#e11", title: "Picture questions text 41" })
    expect(json.nodes.map((node) => "kind" in node ? [node.kind, node.role, node.label] : [])).toEqual([
      ["message", "system", null],
      ["message", "user", "important text 40"],
      ["message", "assistant", null],
      ["message", "tool", null],
      ["model", null, null],
      ["compaction", null, null],
      ["label", null, null],
      ["title", null, null],
      ["custom", null, null],
      ["message", "assistant", null],
      ["message", "user", null]
    ])
    const untitled = build2("u", (s) => void s.add({ kind: "message", message: { role: "system", id: "s", content: "x" } }))
    expect(await Effect.runPromise(Text.treeJson(untitled.header, untitled.entries))).toMatchObject({ title: null })
  })

  it("prints no control character of any caller text: media types, names, labels, titles, kinds' fields", async () => {
    const session = hostileAgent()
    const lines = [...await log(session, session.entries[9]!.id), ...await log(session), ...await tree(session)]
    expect(lines.length).toBeGreaterThan(20)
    for (const line of lines) expect(line).not.toMatch(CONTROL)
    // The values are there, escaped.
    expect(lines.join("\n")).toContain("\\u0000")
    expect(lines.join("\n")).toContain("\\u2028")
    const json = Text.json(await Effect.runPromise(Text.treeJson(session.header, session.entries)))
    expect(json).not.toMatch(CONTROL)
  })
})

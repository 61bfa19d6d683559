/**
 * The Markdown transcript of a version-2 session: every kind of entry and
 * every part on the path, in order, each test failing if what it names were
 * left out; and a structure no caller text can change, checked on a session
 * whose every text field is hostile against its harmless twin.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Markdown from "../src/Markdown.js"
import { escapeTerminal } from "../src/internal/session.js"
import { blocks, codeSpans, normalize, spanValue, withoutSpans } from "./support/commonmark.js"
import { HOSTILE } from "./support/sessions.js"
import { agent, BLOB, build2, harmlessAgent, hostileAgent, PIXEL, type Session2 } from "./support/v2.js"

const render = (session: Session2, leaf?: string | null) => Effect.runPromise(Markdown.render(session.header, session.entries, { leaf, verbose: true }))

/** The transcript of the agent session's first branch, which holds every kind of entry. */
const full = () => render(agent(), "text 59#e10")

/** The section of `md` whose heading contains `id`, up to the next `## `. */
const section = (md: string, id: string): string => {
  const start = md.indexOf(`· \`${id}\`\n`)
  expect(start, id).toBeGreaterThan(0)
  const end = md.indexOf("\n## ", start)
  return md.slice(md.lastIndexOf("\n## ", start), end < 0 ? md.length : end)
}

describe("Markdown.render on version 2", () => {
  it("titles the document by the session's title and names the session and its origin", async () => {
    const md = await full()
    expect(md.startsWith("# `Picture questions text 41`\n\n- Session: `agent-session`\n- Created:")).toBe(true)
    expect(md).toContain("- Branches: 2 leaves; tool calls: 2")
    const untitled = build2("plain", (s) => void s.add({ kind: "message", message: { role: "system", id: "s", content: "x" } }), {
      forkedFrom: { session: "source", entry: "e9" }
    })
    const plain = await render(untitled)
    expect(plain).toContain("# Session `plain`\n\n- Forked from: session `source`, entry `e9`\n- Created:")
    expect(plain).not.toContain("- Session:")
  })

  it("shows the system prompt and the sections of every kind, in path order", async () => {
    const md = await full()
    const headings = md.split("\n").filter((line) => line.startsWith("## "))
    expect(headings).toEqual([
      "## 1. System · `text 50#e1`",
      "## 2. User · `text 51#e2`",
      "## 3. Assistant · `text 52#e3`",
      "## 4. Tool result `zoom text 20` · `text 53#e4`",
      "## 5. Model change · `text 54#e5`",
      "## 6. Compaction · `text 55#e6`",
      "## 7. Label · `text 56#e7`",
      "## 8. Title · `text 57#e8`",
      "## 9. Custom `my-extension text 42` · `text 58#e9`",
      "## 10. Assistant · `text 59#e10`"
    ])
    expect(section(md, "text 50#e1")).toContain("Message options: `text 2`\n\n```text\nYou are careful. text 1\n```")
  })

  it("shows a labelled entry's label, the newest one, and nothing once it is removed", async () => {
    const md = await full()
    expect(section(md, "text 51#e2")).toContain("· parent `text 50#e1`\n\nLabel: `important text 40`\n\n")
    expect(section(md, "text 56#e7")).toContain("Labels entry `text 51#e2` as `important text 40`.")
    const relabelled = build2("l", (s) => {
      const u = s.add({ kind: "message", message: { role: "user", id: "u", content: [{ type: "text", text: "hi" }] } })
      s.add({ kind: "label", targetId: u, label: "old" })
      const v = s.add({ kind: "label", targetId: u, label: "new" })
      s.add({ kind: "label", targetId: v, label: "gone" })
      s.add({ kind: "label", targetId: v, label: null })
    })
    const out = await render(relabelled)
    expect(section(out, "entry-001")).toContain("Label: `new`")
    expect(section(out, "entry-001")).not.toContain("`old`")
    expect(section(out, "entry-003")).not.toContain("Label:")
    expect(section(out, "entry-005")).toContain("Removes the label of entry `entry-003`.")
  })

  it("shows files: an inline image for base64 raster data only, a link for http(s) only, a blob by name, size and the start of its hash", async () => {
    const user = section(await full(), "text 51#e2")
    expect(user).toContain(`File \`pixel text 6.png\` · \`image/png\` · 70 bytes\n\n![image](data:image/png;base64,${PIXEL})`)
    expect(user).toContain("File `page text 8` · `text/htmltext 7`\n\nLink: [`https://example.com/a?b=1&c=(2)`](<https://example.com/a?b=1\\&c=(2)>)")
    expect(user).toContain(`File \`report text 10.pdf\` · \`application/pdftext 9\` · 123,456 bytes · blob \`${BLOB.slice(0, 19)}…\``)
    // SVG can hold script: named, never drawn; a javascript: URL is text, never a link.
    expect(user).toContain("File · `image/svg+xmltext 11` · 11 bytes\n\n*(inline data, not shown)*")
    expect(user).toContain("URL (not a web link): `javascript:alert(1)text 13`")
    expect(user.match(/\]\(/g)).toHaveLength(2)
  })

  it("shows reasoning collapsed in <details>, redacted reasoning, and the options' keys only", async () => {
    const assistant = section(await full(), "text 52#e3")
    expect(assistant).toContain(
      "<details>\n<summary>Reasoning (35 characters)</summary>\n\n```text\nThinking about the picture. text 15\n```\n\n</details>\n\nReasoning options: `signature`"
    )
    expect(assistant).not.toContain("<details open")
    expect(assistant).toContain("*Reasoning, redacted.*\n\nReasoning options: `redacted`")
    expect(assistant).not.toContain("sig text 16")
    // Parts in their order: reasoning, text, then the calls.
    const order = ["<summary>Reasoning", "*Reasoning, redacted.*", "Let me look closer.", "### Tool call 1", "### Tool call 2", "### Provider result"]
    const at = order.map((text) => assistant.indexOf(text))
    expect(at.every((n) => n >= 0)).toBe(true)
    expect([...at].sort((a, b) => a - b)).toEqual(at)
  })

  it("shows tool calls with arguments, a provider-executed call with its result, and the assistant's meta", async () => {
    const md = await full()
    const assistant = section(md, "text 52#e3")
    expect(assistant).toContain(
      "### Tool call 1: `zoom text 20` · `text 19#call-1`\n\nAnswered by entry `text 53#e4`.\n\n```json\n{\n  \"text 21\": \"text 22\",\n  \"factor\": 4\n}\n```"
    )
    expect(assistant).toContain("### Tool call 2: `web_search text 24` · `text 23#search`\n\nRun by the provider; its result is in this message.")
    expect(assistant).toContain(
      "### Provider result: `web_search text 24` · `text 23#search`\n\nAnswers the call `text 23#search` above · ok\n\n```json\n{\n  \"hits\": [\n    \"text 26\"\n  ]\n}\n```"
    )
    expect(assistant).toContain(
      "Model `claude-x text 28` · provider `anthropic text 27` · response `resp text 29` · " +
        "usage: 1,200 input, 345 output, 67 reasoning, 800 cached input, 9 cache write tokens · stop reason `tool_use text 30` · **error** `overloaded text 31`"
    )
  })

  it("shows a tool message's answer, parts and result", async () => {
    const tool = section(await full(), "text 53#e4")
    expect(tool).toContain("Answers call `text 19#call-1` (`zoom text 20`, entry `text 52#e3`) · **error**")
    expect(tool).toContain("```text\nzoomed text 33\n```\n\nFile `zoomed text 34.png` · `image/png` · 70 bytes\n\n![image](data:image/png;base64,")
    expect(tool).toContain("Result:\n\n```json\n{\n  \"pixels\": 16,\n  \"note\": \"text 35\"\n}\n```")
  })

  it("shows a compaction, a model change, a title and a custom entry", async () => {
    const md = await full()
    expect(section(md, "text 55#e6")).toContain(
      "Keeps the entries from `text 51#e2` on · 4,321 tokens before; summary:\n\n```text\nThe user asked about a picture. text 39\n```"
    )
    expect(section(md, "text 54#e5")).toContain("Switches to model `gpt-y text 37` of `openai text 36`, thinking `high text 38`.")
    expect(section(md, "text 57#e8")).toContain("Titles the session `Picture questions text 41`.")
    expect(section(md, "text 58#e9")).toContain("Extension data, never sent to a model:\n\n```json\n{\"text 43\":[\"text 44\",1,null]}\n```")
    const nothingKept = build2("c", (s) => void s.add({ kind: "compaction", summary: "", firstKeptEntryId: null }))
    expect(await render(nothingKept)).toContain("Keeps nothing before it; summary:\n\n*(empty summary)*")
  })

  it("keeps its structure whatever the caller text: the same document as the harmless twin outside code", async () => {
    const session = hostileAgent()
    const twin = harmlessAgent()
    for (const leaf of [session.entries[9]!.id, undefined]) {
      const md = await render(session, leaf)
      const plain = await render(twin, leaf === undefined ? undefined : twin.entries[9]!.id)
      const shape = (text: string) => blocks(text).map((b) => (b.kind === "fence" ? `fence ${b.info}` : withoutSpans(b.text)))
      expect(shape(md)).toEqual(shape(plain))
      // Outside code, only the renderer's own HTML, and only its own links and images.
      const outside = blocks(md).flatMap((b) => (b.kind === "line" ? [withoutSpans(b.text)] : []))
      const link = "Link: [`…`](<https://example.com/a?b=1\\&c=(2)>)"
      expect(outside.filter((line) => /</.test(line) && line !== link && !/^(<details>|<summary>Reasoning \([\d,]+ characters?\)<\/summary>|<\/details>)$/.test(line)))
        .toEqual([])
      expect(outside.filter((line) => /\]\(/.test(line))).toEqual([`![image](data:image/png;base64,${PIXEL})`, link, `![image](data:image/png;base64,${PIXEL})`])
    }
    // Every hostile value is there, in code, as the caller wrote it (controls escaped).
    const md = await render(session, session.entries[9]!.id)
    const spans = blocks(md).flatMap((b) => (b.kind === "line" ? codeSpans(b.text).map(spanValue) : []))
    expect(spans).toContain(`Picture questions ${HOSTILE[41 % HOSTILE.length]}`)
    expect(spans).toContain(`important ${HOSTILE[40 % HOSTILE.length]}`)
    expect(spans).toContain(`my-extension ${HOSTILE[42 % HOSTILE.length]}`)
    expect(spans).toContain(`text/html${HOSTILE[7 % HOSTILE.length]}`)
    expect(spans).toContain(`javascript:alert(1)${HOSTILE[13 % HOSTILE.length]}`)
    expect(spans).toContain(`source ${HOSTILE[3]}`)
    expect(spans).toContain(`entry ${HOSTILE[12]}`)
    const fences = blocks(md).flatMap((b) => (b.kind === "fence" ? [b.text] : []))
    expect(fences).toContain(escapeTerminal(`Thinking about the picture. ${HOSTILE[15 % HOSTILE.length]}`))
    expect(md).not.toMatch(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/)
  })

  it("keeps every text in its own fence whatever it holds: backtick runs, headings, HTML, fences of every kind", async () => {
    const nasty = [
      "```\n# not a heading\n```",
      "````````````````````` a run of 21",
      "~~~\n<details open>\n~~~",
      "</details>\n\n<script>alert(1)</script>\n",
      "# H1\n## H2\n===\n---\n> quote\n- item\n1. item",
      "text with\r\n# heading after CRLF\r## and after CR",
      "ends with backticks ```"
    ]
    const session = build2("nasty", (s) => {
      for (const [k, text] of nasty.entries()) {
        s.add({ kind: "message", message: { role: "user", id: `u${k}`, content: [{ type: "text", text }] } })
        s.add({ kind: "message", message: { role: "assistant", id: `a${k}`, content: [{ type: "reasoning", text }, { type: "text", text }] } })
        s.add({ kind: "compaction", summary: text, firstKeptEntryId: null })
        s.add({ kind: "custom", customType: text, data: { [text]: text } })
      }
    })
    const md = await render(session)
    const parsed = blocks(md)
    const fenced = parsed.flatMap((b) => (b.kind === "fence" ? [b.text] : []))
    const expected = nasty.flatMap((text) => {
      const shown = escapeTerminal(normalize(text))
      return [shown, shown, shown, shown, escapeTerminal(JSON.stringify({ [text]: text }))]
    })
    expect(fenced).toEqual(expected)
    // The only headings are the renderer's: the title and one per entry.
    const headings = parsed.filter((b) => b.kind === "line" && /^ {0,3}#{1,6}(\s|$)/.test(b.text))
    expect(headings).toHaveLength(1 + session.entries.length)
  })
})

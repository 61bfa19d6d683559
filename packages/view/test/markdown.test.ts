/**
 * The Markdown transcript: the root-to-leaf path of the core's `pathTo`, told
 * apart by role, with tool calls and results; and a structure that no content
 * can change. The structure is read back with CommonMark's block rules for
 * what the transcript uses (fenced code blocks, ATX headings, HTML blocks) and
 * its code-span rule, so a test fails if content could close a fence, start a
 * heading or open raw HTML.
 */
import { describe, expect, it } from "@effect/vitest"
import type { SessionEntry } from "@session-tree/core/Record"
import { pathTo } from "@session-tree/core/SessionTree"
import * as Effect from "effect/Effect"
import * as Markdown from "../src/Markdown.js"
import { escapeTerminal } from "../src/internal/session.js"
import { blocks, codeSpans, normalize, spanValue } from "./support/commonmark.js"
import { build, demo, HOSTILE, hostile, type Session } from "./support/sessions.js"

const render = (session: Session, leaf?: string | null) => Effect.runPromise(Markdown.render(session.header, session.entries, { leaf, verbose: true }))

/**
 * Checks the whole structure of a transcript of `path`: exactly one heading per
 * message and per tool call and the title, each naming its ID in a code span;
 * each message's text and each call's arguments in their own fence, verbatim
 * (terminal controls as their escapes);
 * no raw HTML and no other heading anywhere outside code.
 */
const expectStructure = (md: string, session: Session, path: ReadonlyArray<SessionEntry>) => {
  const parsed = blocks(md)
  const headings = parsed.filter((b) => b.kind === "line" && /^ {0,3}#{1,6}(\s|$)/.test(b.text)).map((b) => b.text)
  const expected: Array<string> = [session.header.id]
  const fences: Array<{ info: string; text: string }> = []
  for (const entry of path) {
    expected.push(entry.id)
    // Verbatim but for terminal controls, which show as their escapes.
    if (entry.message.content !== "") fences.push({ info: "text", text: escapeTerminal(normalize(entry.message.content)) })
    if (entry.message.role === "assistant") {
      for (const call of entry.message.toolCalls) {
        expected.push(call.id)
        fences.push({ info: "json", text: escapeTerminal(JSON.stringify(call.arguments, null, 2)) })
      }
    }
  }
  // The last code span of each heading is the ID it introduces.
  expect(headings.map((h) => spanValue(codeSpans(h).at(-1)!))).toEqual(expected)
  expect(headings.map((h) => /^#+/.exec(h)![0].length)).toEqual(
    [1, ...path.flatMap((e) => [2, ...(e.message.role === "assistant" ? e.message.toolCalls.map(() => 3) : [])])]
  )
  expect(parsed.filter((b) => b.kind === "fence").map((b) => ({ info: (b as { info: string }).info, text: b.text }))).toEqual(fences)
  // Nothing outside code starts an HTML block, a block quote, a list other than the header's, or a setext heading.
  const outside = parsed.filter((b) => b.kind === "line").map((b) => b.text)
  expect(outside.filter((line) => /^ {0,3}(<|>|=+\s*$|-{2,}\s*$|\*\s|\+\s|\d+[.)]\s)/.test(line))).toEqual([])
}

describe("Markdown.render", () => {
  it("renders the newest entry's path by default: a header, one section per message", async () => {
    const session = await demo()
    const md = await render(session)
    const path = pathTo(session.entries, "entry-006")
    expect(path.map((e) => e.id)).toEqual(["entry-001", "entry-005", "entry-006"])
    expectStructure(md, session, path)
    expect(md).toContain("# Session `demo-session`")
    expect(md).toContain(`- Created: \`${session.header.timestamp}\``)
    expect(md).toContain(`- Updated: \`${session.entries[5]!.timestamp}\``)
    expect(md).toContain("- Entries: 6 in the session, 3 on this path")
    expect(md).toContain("- Branches: 2 leaves; tool calls: 1")
    expect(md).toContain("- Leaf: `entry-006` (the newest entry)")
    expect(md).toContain("## 1. User · `entry-001`")
    expect(md).toContain("## 2. Assistant · `entry-005`")
    expect(md).toContain("## 3. User · `entry-006`")
    expect(md).not.toContain("list_dir")
  })

  it("renders a chosen leaf's path with its tool call, arguments and the result that answers it", async () => {
    const session = await demo()
    const md = await render(session, "entry-004")
    const path = pathTo(session.entries, "entry-004")
    expect(path.map((e) => e.id)).toEqual(["entry-001", "entry-002", "entry-003", "entry-004"])
    expectStructure(md, session, path)
    expect(md).toContain("- Leaf: `entry-004` (chosen)")
    expect(md).toContain("## 2. Assistant · `entry-002`")
    expect(md).toContain("### Tool call 1: `list_dir` · `call-1`\n\nAnswered by entry `entry-003`.\n\n```json\n{\n  \"path\": \"/project\"\n}\n```")
    expect(md).toContain("## 3. Tool result `list_dir` · `entry-003`")
    expect(md).toContain("Answers call `call-1` (`list_dir`, entry `entry-002`) · ok")
    expect(md).toContain("```text\nREADME.md\nsrc/\n```")
    expect(md).not.toContain("Shall I list it recursively?")
  })

  it("shows a failed tool result as an error, and a call with no result on the path as unanswered", async () => {
    const session = await build((tree) =>
      Effect.gen(function*() {
        yield* tree.append({ role: "user", id: "u", content: "Read two files." })
        yield* tree.append({
          role: "assistant",
          id: "a",
          content: "",
          toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }, { id: "c2", name: "read_file", arguments: { path: "b.txt" } }]
        })
        yield* tree.append({ role: "tool", id: "t", toolCallId: "c2", toolName: "read_file", content: "ENOENT", isError: true })
      }), { id: "s" })
    const md = await render(session)
    expectStructure(md, session, session.entries)
    expect(md).toContain("### Tool call 1: `read_file` · `c1`\n\nNot answered on this path.")
    expect(md).toContain("### Tool call 2: `read_file` · `c2`\n\nAnswered by entry `entry-003`.")
    expect(md).toContain("Answers call `c2` (`read_file`, entry `entry-002`) · **error**")
    expect(md).toContain("## 2. Assistant · `entry-002`\n\n`")
    expect(md).toContain("*(no text)*")
  })

  it("fails with SESSION_UNKNOWN_ENTRY for a leaf that is not an entry, and renders no path for null", async () => {
    const session = await demo()
    const error = await Effect.runPromise(Effect.flip(Markdown.render(session.header, session.entries, { leaf: "entry-999" })))
    expect(error.code).toBe("SESSION_UNKNOWN_ENTRY")
    expect(error.message).toContain("entry-999")
    const none = await render(session, null)
    expectStructure(none, session, [])
    expect(none).toContain("- Leaf: none (the empty path)")
    expect(none).toContain("0 on this path")
    const empty = await build(() => Effect.void, { id: "empty" })
    expect(await render(empty)).toContain("- Entries: 0 in the session, 0 on this path")
  })

  it("keeps its structure whatever the content: long backtick runs, headings, HTML, fences of every kind", async () => {
    const nasty = [
      "```\n# not a heading\n```",
      "````````````````````` a run of 21",
      "~~~\n<details open>\n~~~",
      "</details>\n\n<script>alert(1)</script>\n",
      "   ```\n    ```\n``` ```\n`` ` ``",
      "# H1\n## H2\n===\n---\n> quote\n- item\n1. item",
      "text with\r\n# heading after CRLF\r## and after CR",
      "ends with backticks ```",
      "```json\n{\"a\": 1}\n```\n\n\n",
      "",
      " ",
      "\n",
      "`"
    ]
    const session = await build((tree) =>
      Effect.gen(function*() {
        for (const [k, content] of nasty.entries()) {
          yield* tree.append({ role: "user", id: `u${k}`, content })
          const callId = `c\`\`${k}\n# x`
          const name = `n\` ${k} </details>`
          yield* tree.append({
            role: "assistant",
            id: `a${k}`,
            content,
            toolCalls: [{ id: callId, name, arguments: { [`k${"`".repeat(k + 3)}`]: content, "# h": [content] } }]
          })
          yield* tree.append({ role: "tool", id: `t${k}`, toolCallId: callId, toolName: name, content, isError: k % 2 === 1 })
        }
      }), { id: "`` session\n# with a heading ``", entryIds: (() => {
        let n = 0
        return () => `${"`".repeat(++n % 5)}entry ${n}\n## ${n}${n % 3 === 0 ? " " : ""}`
      })() })
    const md = await render(session)
    expectStructure(md, session, session.entries)
    const hostilePage = await hostile()
    const leaf = hostilePage.entries.at(-1)!.id
    expectStructure(await render(hostilePage), hostilePage, pathTo(hostilePage.entries, leaf))
    expect(await render(hostilePage)).toContain(HOSTILE[0])
  })

  it("round-trips arbitrary text through fences and code spans", () => {
    // A deterministic sweep over strings built from the characters that matter to Markdown.
    const alphabet = ["`", "`", "``", "~", "#", "\n", "\r", " ", "a", "<", ">", "\\", "*", "|"]
    let seed = 12345
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
    for (let n = 0; n < 400; n++) {
      const text = Array.from({ length: Math.floor(next() * 24) }, () => alphabet[Math.floor(next() * alphabet.length)]!).join("")
      const fenced = blocks(Markdown.fencedBlock(text, "text"))
      expect(fenced).toHaveLength(1)
      expect(fenced[0]).toMatchObject({ kind: "fence", info: "text", text: normalize(text) })
      if (text !== "") {
        const line = `## x ${Markdown.inlineCode(text)}`
        expect(line.split(/\r\n|\r|\n/)).toHaveLength(1)
        expect(spanValue(codeSpans(line).at(-1)!)).toBe(text)
      }
    }
  })
})

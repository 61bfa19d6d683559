/**
 * The terminal views: whatever a session holds, no control character reaches
 * the terminal. IDs, tool names, tool-call IDs, arguments and text carrying an
 * ESC sequence (CSI), a C1 control (0x9b is a one-byte CSI, 0x85 a line break)
 * or a line separator are printed with their escapes visible.
 */
import { sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import * as Text from "../src/Text.js"
import { build, demo } from "./support/sessions.js"

/** What a terminal would act on: C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/

const CSI = "\u001b[2J\u001b[31m"
const C1 = "\u009b31m\u0085"

const terminal = () => {
  let n = 0
  return build((tree) =>
    Effect.gen(function*() {
      const root = yield* tree.append({ role: "user", id: "m-1", content: `clear ${CSI} and ${C1} and \u2028` })
      const call = yield* tree.append({
        role: "assistant",
        id: "m-2",
        content: "Let me look.",
        toolCalls: [{ id: `call${C1}`, name: `list${CSI}dir`, arguments: { [`k${C1}`]: "\u2029" } }]
      })
      yield* tree.append({ role: "tool", id: "m-3", toolCallId: `call${C1}`, toolName: `list${CSI}dir`, content: "ok", isError: false })
      void call
      yield* tree.moveTo(root.id)
      yield* tree.append({ role: "user", id: "m-4", content: "other" })
    }), { id: `session${CSI}${C1}`, entryIds: () => `entry${++n}${n % 2 === 0 ? CSI : C1}` })
}

describe("Text", () => {
  it("prints no control character of an ID, a tool name, a tool-call ID, arguments or text", async () => {
    const session = await terminal()
    const leaf = session.entries[2]!.id
    const log = await Effect.runPromise(Text.renderLog(session.entries, { leaf }))
    const tree = await Effect.runPromise(Text.renderTree(session.header, session.entries, { leaf }))
    expect(log).toHaveLength(3)
    expect(tree).toHaveLength(5)
    for (const line of [...log, ...tree]) expect(line).not.toMatch(CONTROL)
    // The values are still there, escaped.
    expect(log[1]).toContain("\"list\\u001b[2J\\u001b[31mdir\"({\"k\\u009b31m\\u0085\":\"\\u2029\"}) [\"call\\u009b31m\\u0085\"]")
    expect(log[2]).toMatch(/^"entry3\\u009b31m\\u0085" {2}tool {7}"list\\u001b\[2J\\u001b\[31mdir" \["call\\u009b31m\\u0085"\] → "ok"$/)
    expect(log[0]).toContain("\"clear \\u001b[2J\\u001b[31m and \\u009b31m\\u0085 and \\u2028\"")
    expect(tree[0]).toMatch(/^session "session\\u001b\[2J\\u001b\[31m\\u009b31m\\u0085" /)
  })

  it("prints a plain value as it is, and a blank one quoted", async () => {
    const session = await demo()
    const log = await Effect.runPromise(Text.renderLog(session.entries, { leaf: session.entries[2]!.id }))
    expect(log[1]).toBe("entry-002  assistant  \"Let me look.\"  calls list_dir({\"path\":\"/project\"}) [call-1]")
    expect(Text.printable("a b")).toBe("a b")
    expect(Text.printable("  ")).toBe("\"  \"")
    expect(Text.printable(`x${C1}`)).toBe("\"x\\u009b31m\\u0085\"")
  })

  it("lists and reports errors without a control character of a location, an ID, a title or a reason", () => {
    const listed = Text.listLine({
      id: `s${CSI}`,
      location: `dir/${C1}.jsonl`,
      entries: 2,
      leaf: "e",
      created: "2026-03-02T09:00:00.000Z",
      updated: "2026-03-02T09:00:07.000Z",
      title: `title ${CSI}${C1}`
    })
    const unreadable = Text.listLine({ location: `bad${CSI}.jsonl`, error: { code: "SESSION_INVALID_JSON", message: `not JSON: ${C1} (line 2)` } })
    const error = Text.formatError(sessionError("SESSION_UNKNOWN_ENTRY", `"e${C1}" is not an entry of this session`))
    for (const line of [listed, unreadable, error]) expect(line).not.toMatch(CONTROL)
    expect(listed).toBe(
      "2026-03-02T09:00:07.000Z     2 entries  \"s\\u001b[2J\\u001b[31m\"  \"title \\u001b[2J\\u001b[31m\\u009b31m\\u0085\"  \"dir/\\u009b31m\\u0085.jsonl\""
    )
    expect(unreadable).toMatch(/^SESSION_INVALID_JSON "bad\\u001b/)
    expect(error).toBe("SESSION_UNKNOWN_ENTRY \"e\\u009b31m\\u0085\" is not an entry of this session")
    expect(JSON.parse(Text.json({ title: `t${C1}\u2028` }))).toEqual({ title: `t${C1}\u2028` })
    expect(Text.json({ title: `t${C1}\u2028` })).not.toMatch(CONTROL)
  })
})

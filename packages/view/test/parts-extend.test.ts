/**
 * `HtmlParts.extend`: a layout extended with the entries appended after its own is the layout of
 * the whole session, part for part (the tree's rows, every card, the folded runs, the facts, the
 * heading, the paths and the index of every ID), whatever the entries appended: tool results
 * answering earlier calls, forks, new roots, labels set and removed, titles, long chains.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Entry } from "@session-tree/core/Record"
import * as HtmlParts from "../src/HtmlParts.js"
import { agent, build2, type Session2 } from "./support/v2.js"

/** A session whose later entries answer, fork from, label and retitle earlier ones. */
const grown = (): Session2 =>
  build2("grown", (s) => {
    const root = s.add({ kind: "message", message: { role: "user", id: "u1", content: [{ type: "text", text: "Start here" }] } })
    const asked = s.add({
      kind: "message",
      message: {
        role: "assistant",
        id: "a1",
        content: [{ type: "tool-call", id: "c1", name: "read", arguments: { path: "a" } }, { type: "tool-call", id: "c2", name: "grep", arguments: { q: "b" } }]
      }
    })
    s.add({ kind: "message", message: { role: "tool", id: "t1", toolCallId: "c1", toolName: "read", isError: false, content: [{ type: "text", text: "read a" }] } })
    for (let i = 0; i < 14; i++) s.add({ kind: "message", message: { role: i % 2 === 0 ? "user" : "assistant", id: `chain${i}`, content: [{ type: "text", text: `step ${i}` }] } })
    s.add({ kind: "label", targetId: root, label: "first" })
    // A fork from the call: its other result, on another branch.
    s.moveTo(asked)
    s.add({ kind: "message", message: { role: "tool", id: "t2", toolCallId: "c2", toolName: "grep", isError: true, content: [{ type: "text", text: "no b" }] } })
    s.add({ kind: "title", title: "Grown session" })
    s.add({ kind: "label", targetId: root, label: null })
    s.add({ kind: "message", message: { role: "tool", id: "t3", toolCallId: "c1", toolName: "read", isError: false, content: [{ type: "text", text: "read a again" }] } })
    // A second root, and a chain under it long enough to fold.
    s.add({ kind: "message", message: { role: "user", id: "r2", content: [{ type: "text", text: "Another start" }] } }, null)
    for (let i = 0; i < 12; i++) s.add({ kind: "message", message: { role: "user", id: `more${i}`, content: [{ type: "text", text: `more ${i}` }] } })
    s.add({ kind: "label", targetId: asked, label: "the call" })
  })

/** Every part of `layout`, for comparing two layouts of the same entries. */
const partsOf = (layout: HtmlParts.Layout) => {
  const rows = HtmlParts.treeRows(layout)
  const runs = rows.flatMap((row) => {
    const m = / data-run="(\d+)" data-n="(\d+)" data-level="(\d+)"/.exec(row)
    return m === null ? [] : [HtmlParts.runHtml(layout, Number(m[1]), Number(m[2]), Number(m[3]))]
  })
  return {
    heading: layout.heading,
    tree: HtmlParts.treeHtml(layout),
    rows,
    runs,
    cards: layout.entries.map((_, i) => HtmlParts.cardHtml(layout, i)),
    facts: HtmlParts.factsHtml(layout),
    treeHeading: HtmlParts.treeHeading(layout),
    paths: layout.entries.map((_, i) => HtmlParts.pathOf(layout, i)),
    indexes: layout.entries.map((entry) => HtmlParts.indexOf(layout, entry.id))
  }
}

const wholeOf = (session: Session2, n: number) => HtmlParts.layout(session.header, session.entries.slice(0, n))

describe("HtmlParts.extend", () => {
  for (const [name, session] of [["grown", grown()], ["agent", agent()]] as const) {
    it(`gives the whole layout of ${name} from a layout of any of its prefixes, once or step by step`, () => {
      const entries: ReadonlyArray<Entry> = session.entries
      const whole = partsOf(wholeOf(session, entries.length))
      expect(whole.runs.length + (name === "agent" ? 1 : 0)).toBeGreaterThan(0)
      for (let k = 0; k < entries.length; k++) {
        const extended = HtmlParts.extend(wholeOf(session, k), entries)
        expect(extended, `from ${k}`).toBeDefined()
        expect(partsOf(extended!), `from ${k}`).toEqual(whole)
      }
      // One entry at a time, each layout extended from the one before.
      let layout = wholeOf(session, 1)
      for (let k = 2; k <= entries.length; k++) {
        // The facts asked for on the way, as a served page asks for them after each change.
        HtmlParts.factsHtml(layout)
        layout = HtmlParts.extend(layout, entries.slice(0, k))!
        expect(partsOf(layout), `at ${k}`).toEqual(partsOf(wholeOf(session, k)))
      }
    })
  }

  it("is refused for other entries, and for a layout extended already (its index of IDs has moved on)", () => {
    const session = grown()
    const base = wholeOf(session, 10)
    const other = grown().entries
    expect(HtmlParts.extend(base, other)).toBeUndefined()
    expect(HtmlParts.extend(base, session.entries.slice(0, 5))).toBeUndefined()
    const once = HtmlParts.extend(base, session.entries.slice(0, 20))!
    expect(HtmlParts.extend(base, session.entries)).toBeUndefined()
    // The layout extended from keeps its own entries: an ID added after them is not one of its.
    expect(HtmlParts.indexOf(base, session.entries[15]!.id)).toBeUndefined()
    expect(HtmlParts.indexOf(once, session.entries[15]!.id)).toBe(15)
    expect(partsOf(base)).toEqual(partsOf(wholeOf(session, 10)))
  })
})

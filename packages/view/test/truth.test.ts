/**
 * What the views show is true: the HTML tree indents every child of a fork
 * under its parent (the last one too), "(chosen)" appears only for a leaf that
 * is not the newest entry, "Updated" never precedes "Created", and the
 * Markdown transcript carries no terminal control character from the session.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Html from "../src/Html.js"
import { MAX_LEVEL } from "../src/internal/page.js"
import * as Markdown from "../src/Markdown.js"
import { big, build, demo, type Session } from "./support/sessions.js"

interface Row {
  readonly index: number
  readonly level: number
  readonly parent: number
}

const rowsOf = (page: string): Array<Row> =>
  [...page.matchAll(/<button type="button" class="row [^"]*\bl(\d+)\b[^"]*" id="r(\d+)" data-p="(-?\d+)"/g)]
    .map((m) => ({ level: Number(m[1]), index: Number(m[2]), parent: Number(m[3]) }))

/** Every child of a fork one level under its parent; an only child in its parent's column; roots in the first. */
const expectParenthood = (page: string) => {
  const rows = rowsOf(page)
  const byIndex = new Map(rows.map((row) => [row.index, row]))
  const children = new Map<number, number>()
  for (const row of rows) children.set(row.parent, (children.get(row.parent) ?? 0) + 1)
  for (const row of rows) {
    if (row.parent < 0) {
      expect(row.level, `root r${row.index}`).toBe(0)
      continue
    }
    const parent = byIndex.get(row.parent)!
    const expected = children.get(row.parent)! > 1 ? Math.min(parent.level + 1, MAX_LEVEL) : parent.level
    expect(row.level, `r${row.index} under r${row.parent}`).toBe(expected)
  }
  return rows
}

const html = (session: Session, leaf?: string | null) => Effect.runPromise(Html.render(session.header, session.entries, { leaf }))
const markdown = (session: Session, leaf?: string | null) => Effect.runPromise(Markdown.render(session.header, session.entries, { leaf }))

describe("views that tell the truth", () => {
  it("the HTML tree indents a fork's last child under its parent, as its other children", async () => {
    const session = await demo()
    const rows = expectParenthood(await html(session))
    // The root's two children (entry-002 and entry-005) are both one level in, not beside the root.
    expect(rows.filter((row) => row.parent === 0).map((row) => [row.index, row.level]).sort()).toEqual([[1, 1], [4, 1]])
    expectParenthood(await html(session, "entry-003"))
    expectParenthood(await html(await big()))
  })

  it("(chosen) only for a leaf that is not the newest entry", async () => {
    const session = await demo()
    const newest = session.entries.at(-1)!.id
    for (const page of [await html(session, newest), await markdown(session, newest)]) {
      expect(page).not.toContain("(chosen)")
      expect(page).toContain("(the newest entry)")
    }
    expect(await markdown(session, "entry-003")).toContain("(chosen)")
  })

  it("Updated never precedes Created: a session whose entries are older than its header (a fork) shows its creation", async () => {
    const session = await demo()
    const forked: Session = { header: { ...session.header, timestamp: "2027-01-01T00:00:00.000Z" }, entries: session.entries }
    const md = await markdown(forked)
    expect(md).toContain("- Created: `2027-01-01T00:00:00.000Z`")
    expect(md).toContain("- Updated: `2027-01-01T00:00:00.000Z`")
    const page = await html(forked)
    expect(page).toContain("<dt>Updated</dt><dd><span class=\"ts\">2027-01-01T00:00:00.000Z</span>")
  })

  it("the Markdown transcript escapes terminal control characters of the session, keeping its line breaks", async () => {
    const csi = "\u001b[2J\u001b[31m"
    const c1 = "\u009b31m\u0085"
    const session = await build((tree) =>
      Effect.gen(function*() {
        const root = yield* tree.append({ role: "user", id: "m-1", content: `clear ${csi}\nbell \u0007 del \u007f c1 ${c1}\ttab` })
        yield* tree.append({ role: "assistant", id: "m-2", content: "", toolCalls: [{ id: "c", name: "t", arguments: { x: `${csi}${c1}` } }] })
        void root
      }), { id: "controls" })
    const md = await markdown(session)
    expect(md).not.toMatch(/[\u0000-\u0008\u000b-\u000c\u000e-\u001f\u007f-\u009f]/)
    expect(md).toContain("clear \\u001b[2J\\u001b[31m\nbell \\u0007 del \\u007f c1 \\u009b31m\\u0085\ttab")
    expect(md).toContain("\\u009b31m\\u0085")
  })
})

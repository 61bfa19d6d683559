/**
 * The links a session page's header shows: `forkedFrom` today, and any other
 * header field naming a session (an object with `session`, or a list of them),
 * as the imports of subagents and transcripts will write them; text as text.
 */
import type { Header } from "@session-tree/core/Record"
import { describe, expect, it } from "vitest"
import { linksOf } from "../src/internal/app.js"

const header = (extra: Record<string, unknown>) =>
  ({ type: "session", version: 2, id: "s", timestamp: "2026-01-01T00:00:00.000Z", ...extra }) as unknown as Header

describe("a session header's links", () => {
  it("shows forkedFrom, any field naming sessions, and text fields as text; nothing of the record's own keys", () => {
    expect(linksOf(header({}))).toEqual([])
    expect(linksOf(header({ forkedFrom: { session: "src", entry: "e7" } }))).toEqual([{ label: "Forked from", session: "src", entry: "e7" }])
    expect(linksOf(header({ subagentOf: { session: "parent", entry: "call-3" }, subagents: [{ session: "a" }, { session: "b", entry: "x" }], importedFrom: "/home/me/.claude/x.jsonl", n: 3, flag: true, odd: { session: 1 } }))).toEqual([
      { label: "Subagent of", session: "parent", entry: "call-3" },
      { label: "Subagents", session: "a", entry: undefined },
      { label: "Subagents", session: "b", entry: "x" },
      { label: "Imported from", text: "/home/me/.claude/x.jsonl" },
      { label: "N", text: "3" }
    ])
  })
})

/**
 * The links a session page's header shows: `forkedFrom` and any other header
 * field naming a session (an object with `session`, or a list of them), text as
 * text; the subagent links imports write as entries (`session-tree:subagent-of`
 * in the subagent's session, `session-tree:subagent` in its parent's); what an
 * imported source's kept header says of its origin (a Codex thread's parent, a
 * Pi session's parent file and working directory).
 */
import type { Entry, Header } from "@session-tree/core/Record"
import * as Subagents from "@session-tree/core/Subagents"
import { describe, expect, it } from "vitest"
import { headerLinks, linksOf } from "../src/internal/links.js"

const header = (extra: Record<string, unknown>) =>
  ({ type: "session", version: 2, id: "s", timestamp: "2026-01-01T00:00:00.000Z", ...extra }) as unknown as Header

const custom = (id: string, parentId: string | null, customType: string, data: unknown) =>
  ({ type: "entry", version: 2, id, parentId, timestamp: "2026-01-01T00:00:01.000Z", kind: "custom", customType, data }) as unknown as Entry
const user = (id: string, parentId: string | null) =>
  ({ type: "entry", version: 2, id, parentId, timestamp: "2026-01-01T00:00:02.000Z", kind: "message", message: { role: "user", id: `m-${id}`, content: [{ type: "text", text: "hi" }] } }) as unknown as Entry

describe("a session header's links", () => {
  it("shows forkedFrom, any field naming sessions, and text fields as text; nothing of the record's own keys", () => {
    expect(headerLinks(header({}))).toEqual([])
    expect(headerLinks(header({ forkedFrom: { session: "src", entry: "e7" } }))).toEqual([{ label: "Forked from", session: "src", entry: "e7" }])
    expect(headerLinks(header({ subagentOf: { session: "parent", entry: "call-3" }, subagents: [{ session: "a" }, { session: "b", entry: "x" }], importedFrom: "/home/me/.claude/x.jsonl", n: 3, flag: true, odd: { session: 1 } }))).toEqual([
      { label: "Subagent of", session: "parent", entry: "call-3" },
      { label: "Subagents", session: "a", entry: undefined },
      { label: "Subagents", session: "b", entry: "x" },
      { label: "Imported from", text: "/home/me/.claude/x.jsonl" },
      { label: "N", text: "3" }
    ])
  })
})

describe("a session's links from its entries", () => {
  it("links a subagent's session to its parent, and a parent to each of its subagents once", () => {
    const child = [custom("subagent-of", null, Subagents.SUBAGENT_OF, { session: "parent-id", toolCallId: "toolu_1", agentId: "a1" }), user("u1", "subagent-of")]
    expect(linksOf(header({}), child)).toEqual([{ label: "Subagent of", session: "parent-id" }])
    const parent = [
      user("u1", null),
      custom("u1:subagent", "u1", Subagents.SUBAGENT, { session: "parent-id.agent-a1", toolCallId: "toolu_1" }),
      custom("u2:subagent", "u1:subagent", Subagents.SUBAGENT, { session: "parent-id.agent-a2" }),
      // The same subagent named again on another branch is one link.
      custom("u3:subagent", "u1", Subagents.SUBAGENT, { session: "parent-id.agent-a1" }),
      // Not a link: another custom type, no session.
      custom("x", "u1", "pi:note", { session: "nope" }),
      custom("y", "u1", Subagents.SUBAGENT, { toolCallId: "toolu_9" })
    ]
    expect(linksOf(header({ forkedFrom: { session: "src", entry: "e7" } }), parent)).toEqual([
      { label: "Forked from", session: "src", entry: "e7" },
      { label: "Subagent", session: "parent-id.agent-a1" },
      { label: "Subagent", session: "parent-id.agent-a2" }
    ])
  })

  it("shows what an imported source's header says of its origin: a Codex thread's parent as a link, Pi's parent file and directory as text", () => {
    const codex = [custom("meta", null, "codex:session_meta", { cwd: "/w", source: { subagent: { thread_spawn: { parent_thread_id: "0199-parent", depth: 1 } } } })]
    expect(linksOf(header({}), codex)).toEqual([{ label: "Spawned by thread", session: "0199-parent" }])
    // A Codex rollout started by a person names no parent.
    expect(linksOf(header({}), [custom("meta", null, "codex:session_meta", { cwd: "/w", source: "cli" })])).toEqual([])
    const pi = [custom("pi:session", null, "pi:session", { cwd: "/home/me/project", parentSession: "/home/me/.pi/sessions/a.jsonl" })]
    expect(linksOf(header({}), pi)).toEqual([
      { label: "Pi parent session", text: "/home/me/.pi/sessions/a.jsonl" },
      { label: "Working directory", text: "/home/me/project" }
    ])
  })
})

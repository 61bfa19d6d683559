/** The Promise API's door to imports and sync: `Sessions.import` detecting a transcript's format, `Sessions.sync`. */
import { afterAll, describe, expect, it } from "vitest"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { Sessions } from "../src/Promise.js"

const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-promise-sync-"))
afterAll(() => NFS.rmSync(dir, { recursive: true, force: true }))

const session = "0c1d2e3f-0000-4000-8000-0000000000bb"
const line = (uuid: string, parentUuid: string | null, second: number, extra: object = {}) =>
  JSON.stringify({ parentUuid, isSidechain: false, sessionId: session, type: "user", message: { role: "user", content: `line ${second}` }, uuid, timestamp: `2026-01-02T03:04:0${second}.000Z`, ...extra }) + "\n"

describe("the Promise API's imports and sync", () => {
  it("import detects a Claude Code transcript and says what it left out; sync mirrors a tree of them, a rerun appending only the new line", async () => {
    const sources = Path.join(dir, "sources")
    NFS.mkdirSync(sources)
    const source = Path.join(sources, `${session}.jsonl`)
    NFS.writeFileSync(source, line("u1", null, 1) + JSON.stringify({ type: "file-history-snapshot", messageId: "u1", snapshot: {} }) + "\n" + line("u2", "u1", 2))
    const sessions = new Sessions()
    const imported = await sessions.import(source, Path.join(dir, "imported.jsonl"))
    expect([imported.session.id, imported.session.entries, imported.skipped, imported.torn]).toEqual([session, 2, { "file-history-snapshot": 1 }, undefined])
    const mirror = Path.join(dir, "mirror")
    const first = await sessions.sync([sources], mirror)
    expect(first.sources.map((s) => [s.status, s.sessions.map((x) => [x.id, x.created, x.appended])])).toEqual([["synced", [[session, true, 2]]]])
    NFS.appendFileSync(source, line("u3", "u2", 3))
    const second = await sessions.sync([sources], mirror)
    expect(second.sources.map((s) => [s.status, s.sessions.map((x) => x.appended)])).toEqual([["synced", [1]]])
    expect((await sessions.read(Path.join(mirror, `${session}.jsonl`))).entries.map((e) => e.id)).toEqual(["u1", "u2", "u3"])
    expect((await sessions.sync([sources], mirror)).sources.map((s) => s.status)).toEqual(["unchanged"])
  })

  it("import of a subagent's own file names the tool call that started it, from its parent's transcript beside it", async () => {
    const project = Path.join(dir, "project")
    NFS.mkdirSync(project)
    const call = { id: "m1", role: "assistant", content: [{ type: "tool_use", id: "t3", name: "Task", input: { prompt: "line 2" } }], stop_reason: "tool_use" }
    NFS.writeFileSync(Path.join(project, `${session}.jsonl`), line("u1", null, 1) + line("a1", "u1", 2, { type: "assistant", message: call }))
    const child = Path.join(project, "agent-cd.jsonl")
    NFS.writeFileSync(child, line("s1", null, 2, { isSidechain: true, agentId: "cd" }))
    const imported = await new Sessions().import(child, Path.join(dir, "child.jsonl"))
    expect(imported.session.id).toBe(`${session}.agent-cd`)
    const read = await new Sessions().read(Path.join(dir, "child.jsonl"))
    expect(read.entries[0]).toMatchObject({ customType: "session-tree:subagent-of", data: { session, toolCallId: "t3", agentId: "cd" } })
  })
})

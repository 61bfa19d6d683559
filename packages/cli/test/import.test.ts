/**
 * `session-tree import --from pi | claude` into version 2, run as the built
 * command: a Pi session holding every entry kind, written by Pi's own
 * SessionManager, goes through import and export and must map back, field by
 * field, to what Pi's SessionManager reads from the original; a Claude Code
 * transcript imports with its skipped lines counted; version 1 stays reachable.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { afterAll, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import * as Schema from "effect/Schema"
import * as RecordV2 from "@session-tree/core/RecordV2"
import { image, loadPi, piAssistant, piBash, piCustom, piParts, piToolResult, piUser, text, thinking, toolCall, writePi } from "../../core/test/support/pi.js"
import { withoutPi } from "../../core/test/support/piSkip.js"
import { asWritten, brokenRule, toPi } from "../../core/test/support/piInverse.js"
import { firstWord, records, removeTempDirs, runCli, STACK_FRAME, tempDir } from "./support.js"
import * as Transcripts from "@session-tree/testing/Transcripts"

let scope: Scope.CloseableScope
let db: string

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("import"), scope))
}, 60_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const expectFailure = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, code: string) => {
  expect(run.code).toBe(1)
  expect(firstWord(run.stderr)).toBe(code)
  expect(run.stderr).not.toMatch(STACK_FRAME)
  expect(run.stdout).toBe("")
}

const strict = { onExcessProperty: "error", exact: true } as const

describe.concurrent("session-tree import into version 2", { timeout: 180_000 }, () => {
  it.skipIf(withoutPi("--from pi keeps everything: import, then export, maps back to what Pi's SessionManager reads, field by field"))("--from pi keeps everything: import, then export, maps back to what Pi's SessionManager reads, field by field", async ({ expect }) => {
    const dir = tempDir()
    const pi = await loadPi()
    const source = Path.join(dir, "pi.jsonl")
    writePi(pi, source, (sm) => {
      sm.appendSessionInfo("Everything")
      sm.appendModelChange("anthropic", "claude-sonnet-4-5")
      sm.appendThinkingLevelChange("high")
      const u = sm.appendMessage(piUser([text("What is this?"), image()]))
      const a = sm.appendMessage(piAssistant([
        thinking("Hmm.", { thinkingSignature: "sig==" }),
        thinking("[Reasoning redacted]", { thinkingSignature: "enc", redacted: true }),
        text("Let me look."),
        toolCall("call-1", "bash", { command: "ls" })
      ]))
      sm.appendMessage(piToolResult("call-1", "bash", [text("a.ts"), image()], false, { exit: 0 }))
      sm.appendMessage(piAssistant([text("A pixel.")], { stopReason: "stop", responseId: "r-1" }))
      sm.appendLabelChange(a, "here")
      sm.appendMessage(piBash("ls", "a.ts"))
      sm.appendMessage(piCustom("ext", "hello"))
      sm.appendCustomMessageEntry("ext", piParts([text("injected")]), true, { k: 1 })
      sm.appendCustomEntry("ext-state", { n: 1 })
      sm.appendCompaction("summary", u, 1000, { readFiles: [] }, false)
      sm.branchWithSummary(u, "the other branch", undefined, false)
      sm.appendMessage(piAssistant([text("On a new branch.")]))
    })
    const target = Path.join(dir, "imported.jsonl")
    const imported = await runCli("import", source, "--from", "pi", "--to", target)
    const original = pi.SessionManager.open(source, dir, "/elsewhere")
    // What has no version-2 kind of its own is kept whole, and said so.
    expect(imported).toEqual({ code: 0, stdout: `${original.getHeader()!.id}\n`, stderr: "kept whole 1 message:bashExecution, 1 branch_summary\n" })
    const exported = await runCli("export", target)
    expect(exported.code).toBe(0)
    expect(exported.stdout).toBe(NFS.readFileSync(target, "utf8"))
    const [header, ...entries] = exported.stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
    const v2Header = Schema.decodeUnknownSync(RecordV2.SessionHeader, strict)(header)
    const v2Entries = entries.map((e) => Schema.decodeUnknownSync(RecordV2.SessionEntry, strict)(e))
    expect(brokenRule(v2Entries)).toBeUndefined()
    const back = toPi(v2Header, v2Entries)
    expect(back.header).toStrictEqual(asWritten(original.getHeader()))
    expect(back.entries).toStrictEqual(asWritten(original.getEntries()))
  })
  it.skipIf(withoutPi("--from pi --format-version 1 is the course format as before: refuses what it cannot hold; --lossy drops it"))("--from pi --format-version 1 is the course format as before: refuses what it cannot hold; --lossy drops it", async ({ expect }) => {
    const dir = tempDir()
    const pi = await loadPi()
    const source = Path.join(dir, "pi.jsonl")
    writePi(pi, source, (sm) => {
      sm.appendMessage(piUser([text("What is this?"), image()]))
      sm.appendMessage(piAssistant([thinking("Hmm."), text("A pixel.")]))
    })
    const [v2, v1, lossy, both] = await Promise.all([
      runCli("import", source, "--from", "pi", "--to", Path.join(dir, "v2.jsonl")),
      runCli("import", source, "--from", "pi", "--format-version", "1", "--to", Path.join(dir, "v1.jsonl")),
      runCli("import", source, "--from", "pi", "--lossy", "--to", Path.join(dir, "lossy.jsonl")),
      runCli("import", source, "--from", "pi", "--lossy", "--format-version", "2", "--to", Path.join(dir, "never.jsonl"))
    ])
    expect(v2.code).toBe(0)
    expect(records(Path.join(dir, "v2.jsonl")).map((r) => r.version)).toEqual([2, 2, 2, 2])
    expectFailure(expect, v1, "SESSION_INVALID_MESSAGE")
    expect(v1.stderr).toMatch(/image/)
    // A conversion's error names the line of FILE, and FILE.
    expect(v1.stderr).toContain(`${source} (line 2)`)
    expect(NFS.existsSync(Path.join(dir, "v1.jsonl"))).toBe(false)
    expect([lossy.code, lossy.stderr]).toEqual([0, "dropped 1 images, 1 thinking\n"])
    expect(records(Path.join(dir, "lossy.jsonl")).map((r) => r.version)).toEqual([1, 1, 1])
    expect(both.code).not.toBe(0)
    expect(both.stderr).toMatch(/^usage: --lossy makes a version-1 session/)
    expect(NFS.existsSync(Path.join(dir, "never.jsonl"))).toBe(false)
  })

  it("--from claude stores the conversation as version 2 and prints the skipped lines by kind", async ({ expect }) => {
    const dir = tempDir()
    const session = "0c1d2e3f-0000-4000-8000-000000000002"
    const line = (uuid: string, parentUuid: string | null, second: number, type: string, message: unknown, extra: object = {}) =>
      ({ parentUuid, isSidechain: false, sessionId: session, type, message, uuid, timestamp: `2026-01-02T03:04:0${second}.000Z`, ...extra })
    const response = (content: ReadonlyArray<unknown>) =>
      ({ model: "claude-opus-4-6", id: "msg_1", type: "message", role: "assistant", content, stop_reason: null, usage: { input_tokens: 3, output_tokens: 5 } })
    const source = Path.join(dir, "transcript.jsonl")
    NFS.writeFileSync(source, [
      { type: "summary", summary: "Listing", leafUuid: "r" },
      line("u", null, 1, "user", { role: "user", content: "List the files" }),
      line("a1", "u", 2, "assistant", response([{ type: "thinking", thinking: "ls will do.", signature: "c2ln" }])),
      line("a2", "a1", 3, "assistant", response([{ type: "tool_use", id: "toolu_1", name: "Bash", input: { command: "ls" } }])),
      { parentUuid: "a2", isSidechain: false, sessionId: session, type: "progress", data: { type: "bash_progress" }, uuid: "p", timestamp: "2026-01-02T03:04:04.000Z" },
      line("r", "p", 5, "user", { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.ts" }] }, { toolUseResult: { stdout: "a.ts" } }),
      { parentUuid: "r", isSidechain: false, sessionId: session, type: "system", subtype: "turn_duration", durationMs: 10, uuid: "s", timestamp: "2026-01-02T03:04:06.000Z" }
    ].map((r) => JSON.stringify(r)).join("\n") + "\n")
    const target = Path.join(dir, "imported.jsonl")
    const [imported, refused, notClaude] = await Promise.all([
      // Detected from its content.
      runCli("import", source, "--to", target),
      runCli("import", source, "--from", "claude", "--format-version", "1", "--to", Path.join(dir, "never.jsonl")),
      runCli("import", source, "--from", "pi", "--to", Path.join(dir, "never2.jsonl"))
    ])
    expect(imported).toEqual({ code: 0, stdout: `${session}\n`, stderr: "skipped 1 progress, 1 system:turn_duration\n" })
    const stored = records(target)
    expect(stored[0]).toEqual({ type: "session", version: 2, id: session, timestamp: "2026-01-02T03:04:01.000Z" })
    expect(stored.slice(1).map((e) => [e.id, e.parentId, e.kind === "message" ? (e.message as { role: string }).role : e.kind])).toEqual([
      ["summary:1", null, "title"],
      ["u", "summary:1", "user"],
      ["a1", "u", "assistant"],
      ["r", "a1", "tool"]
    ])
    expect((stored[3]!.message as { content: unknown }).content).toEqual([
      { type: "reasoning", text: "ls will do.", options: { anthropic: { type: "thinking", signature: "c2ln" } } },
      { type: "tool-call", id: "toolu_1", name: "Bash", arguments: { command: "ls" } }
    ])
    expect(stored[4]!.message).toMatchObject({ toolCallId: "toolu_1", toolName: "Bash", content: [{ type: "text", text: "a.ts" }], result: { stdout: "a.ts" } })
    const verify = await runCli("verify", target)
    expect(verify.code).toBe(0)
    expect(refused.stderr).toMatch(/^usage: a Claude Code transcript imports as version 2 only/)
    expectFailure(expect, notClaude, "SESSION_INVALID_HEADER")
    // The error names the source and its line, not the destination.
    expect(notClaude.stderr).toContain(`${source} (line 1)`)
    const piAsClaude = await runCli("import", Path.join(dir, "imported.jsonl"), "--from", "claude", "--to", Path.join(dir, "never3.jsonl"))
    expectFailure(expect, piAsClaude, "SESSION_INVALID_HEADER")
    expect(piAsClaude.stderr).toMatch(/not a Claude Code transcript/)
  })

  it("detects the format, names the source and its line in every error, and lists the formats read when it knows none", async ({ expect }) => {
    const dir = tempDir()
    const unknown = Path.join(dir, "notes.jsonl")
    NFS.writeFileSync(unknown, '{"hello":"world"}\n')
    const torn = Path.join(dir, "torn.jsonl")
    const session = "0c1d2e3f-0000-4000-8000-000000000003"
    const u = (uuid: string, parentUuid: string | null, content: string) =>
      JSON.stringify({ parentUuid, isSidechain: false, sessionId: session, type: "user", message: { role: "user", content }, uuid, timestamp: "2026-01-02T03:04:05.000Z" })
    NFS.writeFileSync(torn, `${u("u1", null, "one")}\n${u("u2", "u1", "two")}\n{"parentUuid":"u2","type":"us`)
    const damaged = Path.join(dir, "damaged.jsonl")
    NFS.writeFileSync(damaged, `${u("u1", null, "one")}\n${u("u2", "u1", "two")}${u("u3", "u2", "glued")}\n${u("u4", "u2", "four")}\n`)
    const [notKnown, asCodex, tornRun, refused, skipped, json] = await Promise.all([
      runCli("import", unknown, "--to", Path.join(dir, "a.jsonl")),
      runCli("import", torn, "--from", "codex", "--to", Path.join(dir, "b.jsonl")),
      runCli("import", torn, "--to", Path.join(dir, "c.jsonl")),
      runCli("import", damaged, "--to", Path.join(dir, "d.jsonl")),
      runCli("import", damaged, "--skip-damaged", "--to", Path.join(dir, "e.jsonl")),
      runCli("import", damaged, "--skip-damaged", "--json", "--to", Path.join(dir, "f.jsonl"))
    ])
    expectFailure(expect, notKnown, "SESSION_UNKNOWN_FORMAT")
    expect(notKnown.stderr).toContain(unknown)
    expect(notKnown.stderr).toMatch(/session-tree .*pi .*claude .*codex/)
    expectFailure(expect, asCodex, "SESSION_INVALID_HEADER")
    expect(asCodex.stderr).toContain(`${torn} (line 1)`)
    expect(tornRun).toEqual({ code: 0, stdout: `${session}\n`, stderr: "left out the last line (line 3, 29 bytes): it is cut short, as a line still being written is\n" })
    expectFailure(expect, refused, "SESSION_INVALID_JSON")
    expect(refused.stderr).toContain(`${damaged} (line 2)`)
    expect(NFS.existsSync(Path.join(dir, "d.jsonl"))).toBe(false)
    expect(skipped.code).toBe(0)
    expect(skipped.stderr).toMatch(/^damaged line 2 \(\d+ bytes\) kept aside: SESSION_INVALID_JSON /m)
    expect(records(Path.join(dir, "e.jsonl")).slice(1).map((r) => [r.id, r.parentId])).toEqual([["u1", null], ["damaged:2", "u1"], ["u4", "damaged:2"]])
    const report = JSON.parse(json.stdout)
    expect(report).toMatchObject({ ok: true, format: "claude", sessions: [{ id: session, entries: 3 }], damaged: [{ line: 2, code: "SESSION_INVALID_JSON" }], torn: null })
  })

  it("a transcript's subagents are sessions of their own: beside --to on files, at their IDs in the database; --keep-all keeps every line", async ({ expect }) => {
    expect((await runCli("migrate", "--db", db)).code).toBe(0)
    const dir = tempDir()
    const session = "0c1d2e3f-0000-4000-8000-000000000004"
    const line = (uuid: string, parentUuid: string | null, type: string, message: unknown, extra: object = {}) =>
      ({ parentUuid, isSidechain: false, sessionId: session, type, message, uuid, timestamp: "2026-01-02T03:04:05.000Z", ...extra })
    const source = Path.join(dir, "transcript.jsonl")
    NFS.writeFileSync(source, [
      line("u1", null, "user", { role: "user", content: "explore" }),
      line("a1", "u1", "assistant", { id: "m1", role: "assistant", content: [{ type: "tool_use", id: "t1", name: "Task", input: { prompt: "look" } }], stop_reason: "tool_use" }),
      line("s1", null, "user", { role: "user", content: "look" }, { isSidechain: true }),
      line("s2", "s1", "assistant", { id: "m2", role: "assistant", content: [{ type: "text", text: "seen" }], stop_reason: "end_turn" }, { isSidechain: true }),
      { parentUuid: "s2", isSidechain: true, sessionId: session, type: "progress", data: {}, uuid: "p1", timestamp: "2026-01-02T03:04:06.000Z" },
      line("r1", "a1", "user", { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "seen" }] })
    ].map((r) => JSON.stringify(r)).join("\n") + "\n")
    const child = `${session}.sidechain-s1`
    const [onFiles, onDb, kept] = await Promise.all([
      runCli("import", source, "--to", Path.join(dir, "main.jsonl")),
      runCli("import", source, "--db", db),
      runCli("import", source, "--keep-all", "--to", Path.join(dir, "kept.jsonl"))
    ])
    expect(onFiles).toEqual({ code: 0, stdout: `${session}\n${child}\n`, stderr: "skipped 1 progress\n" })
    expect(records(Path.join(dir, "main.sidechain-s1.jsonl"))[0]).toMatchObject({ id: child })
    expect(records(Path.join(dir, "main.jsonl")).find((r) => r.kind === "custom")).toMatchObject({ customType: "session-tree:subagent", data: { session: child, toolCallId: "t1" } })
    expect(onDb).toEqual({ code: 0, stdout: `${session}\n${child}\n`, stderr: "skipped 1 progress\n" })
    const [listed, exported] = await Promise.all([runCli("list", "--json", "--db", db), runCli("export", child, "--db", db)])
    const sessions = JSON.parse(listed.stdout) as Array<Record<string, unknown>>
    expect(sessions.find((s) => s.id === session)).toMatchObject({ subagents: [child] })
    expect(sessions.find((s) => s.id === child)).toMatchObject({ parent: session })
    expect(exported.stdout).toBe(NFS.readFileSync(Path.join(dir, "main.sidechain-s1.jsonl"), "utf8"))
    expect(kept).toEqual({ code: 0, stdout: `${session}\n${child}\n`, stderr: "kept whole 1 progress\n" })
    expect(records(Path.join(dir, "kept.sidechain-s1.jsonl")).find((r) => r.kind === "custom" && r.customType === "claude:progress")).toMatchObject({ id: "p1" })
    // A listing says which sessions are subagents', and of which session.
    const list = await runCli("list", dir)
    expect(list.stdout).toMatch(new RegExp(`${child}  "look"  .*main\\.sidechain-s1\\.jsonl  subagent of ${session}`))
    expect(list.stdout).toMatch(/main\.jsonl  1 subagent$/m)
    // All its sessions or none: a subagent's location taken refuses the import, and the session stored first goes again.
    const again = await runCli("import", source, "--to", Path.join(dir, "other.jsonl"))
    expect(again.code).toBe(0)
    NFS.rmSync(Path.join(dir, "other.jsonl"))
    const taken = await runCli("import", source, "--to", Path.join(dir, "other.jsonl"))
    expectFailure(expect, taken, "SESSION_EXISTS")
    expect(NFS.existsSync(Path.join(dir, "other.jsonl"))).toBe(false)
  })

  it("a subagent's own file names the tool call that started it, read from its parent's transcript where Claude Code keeps it; where that is not there, it says so", async ({ expect }) => {
    const dir = tempDir()
    const session = "0c1d2e3f-0000-4000-8000-000000000005"
    const line = (uuid: string, parentUuid: string | null, type: string, message: unknown, extra: object = {}) =>
      ({ parentUuid, isSidechain: false, sessionId: session, type, message, uuid, timestamp: "2026-01-02T03:04:05.000Z", ...extra })
    const sub = { isSidechain: true, agentId: "ab12" }
    const child = [
      line("s1", null, "user", { role: "user", content: "look" }, sub),
      line("s2", "s1", "assistant", { id: "m2", role: "assistant", content: [{ type: "text", text: "seen" }], stop_reason: "end_turn" }, sub)
    ]
    const parent = [
      line("u1", null, "user", { role: "user", content: "explore" }),
      line("a1", "u1", "assistant", { id: "m1", role: "assistant", content: [{ type: "tool_use", id: "t7", name: "Task", input: { prompt: "look" } }], stop_reason: "tool_use" }),
      line("r1", "a1", "user", { role: "user", content: [{ type: "tool_result", tool_use_id: "t7", content: "seen" }] }, { toolUseResult: { agentId: "ab12" } })
    ]
    const write = (path: string, lines: ReadonlyArray<unknown>) => {
      NFS.mkdirSync(Path.dirname(path), { recursive: true })
      NFS.writeFileSync(path, lines.map((r) => JSON.stringify(r)).join("\n") + "\n")
    }
    // Claude Code 2.1: <project>/<session>/subagents/agent-<id>.jsonl; 2.0: beside the parent; and alone.
    const newer = Path.join(dir, "p21", session, "subagents", "agent-ab12.jsonl")
    write(Path.join(dir, "p21", `${session}.jsonl`), parent)
    write(newer, child)
    const older = Path.join(dir, "p20", "agent-ab12.jsonl")
    write(Path.join(dir, "p20", `${session}.jsonl`), parent)
    write(older, child)
    const alone = Path.join(dir, "alone", "agent-ab12.jsonl")
    write(alone, child)
    const [a, b, c] = await Promise.all([
      runCli("import", newer, "--to", Path.join(dir, "newer.jsonl")),
      runCli("import", older, "--to", Path.join(dir, "older.jsonl")),
      runCli("import", alone, "--to", Path.join(dir, "alone.jsonl"))
    ])
    for (const [run, to] of [[a, "newer.jsonl"], [b, "older.jsonl"]] as const) {
      expect(run).toEqual({ code: 0, stdout: `${session}.agent-ab12\n`, stderr: "" })
      expect(records(Path.join(dir, to))[1]).toMatchObject({ customType: "session-tree:subagent-of", data: { session, toolCallId: "t7", agentId: "ab12" } })
    }
    expect(c.code).toBe(0)
    expect(c.stderr).toContain(`subagent of ${session}: its parent's transcript is not beside it`)
    expect(records(Path.join(dir, "alone.jsonl"))[1]!.data).toEqual({ session, agentId: "ab12" })
  })

  it.skipIf(Transcripts.files("pi").length + Transcripts.files("claude").length + Transcripts.files("codex").length === 0)(
    "a real transcript of each format, as a user runs it: detected, imported on files and in the database alike, exported self-contained, imported again to the same bytes (every file: import-real.test.ts)",
    async ({ expect }) => {
      expect((await runCli("migrate", "--db", db)).code).toBe(0)
      const dir = tempDir()
      // Of each kind, what is hardest: the legacy Pi file, an image over 65,536 bytes, a glued line, the largest rollout.
      const pick = (kind: "pi" | "claude" | "codex", keep: (names: ReadonlyArray<string>) => ReadonlyArray<string>) =>
        keep(Transcripts.files(kind)).map((f) => Path.join(Transcripts.dir(kind), f))
      const largest = (kind: "pi" | "claude" | "codex") => (names: ReadonlyArray<string>) =>
        [...names].sort((a, b) => NFS.statSync(Path.join(Transcripts.dir(kind), b)).size - NFS.statSync(Path.join(Transcripts.dir(kind), a)).size)
      const sources = [
        ...pick("pi", (names) => largest("pi")(names).slice(0, 2)),
        ...pick("claude", (names) => names.filter((f) => f.startsWith("M-Thisness__M-Claude__transcripts__1364") || f.startsWith("entireio__cli__5a"))),
        ...pick("codex", (names) => largest("codex")(names).slice(0, 1))
      ]
      let stored = 0
      for (const file of sources) {
        const target = Path.join(dir, `${stored}.jsonl`)
        const [onFiles, onDb] = await Promise.all([
          runCli("import", file, "--skip-damaged", "--to", target),
          runCli("import", file, "--skip-damaged", "--db", db)
        ])
        if (onFiles.code !== 0) {
          // The legacy Pi format, refused at line 1 whatever else it holds.
          expect(onFiles.stderr).toMatch(new RegExp(`^SESSION_UNSUPPORTED_VERSION .*${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(line 1\\)$`, "m"))
          expect(onDb.code).toBe(1)
          continue
        }
        stored++
        const id = onFiles.stdout.split("\n")[0]!
        expect(onDb.stdout).toBe(onFiles.stdout)
        const selfContained = Path.join(dir, `${stored}.self.jsonl`)
        const fromDb = Path.join(dir, `${stored}.db.jsonl`)
        const exported = await Promise.all([runCli("export", id, "--db", db, "--out", fromDb), runCli("export", target, "--inline-blobs", "--out", selfContained)])
        expect(exported.map((r) => r.code)).toEqual([0, 0])
        // The same records on both backends: file data over 65,536 bytes a blob on each.
        expect(NFS.readFileSync(fromDb, "utf8")).toBe(NFS.readFileSync(target, "utf8"))
        const again = Path.join(dir, `${stored}.again.jsonl`)
        expect((await runCli("import", selfContained, "--to", again)).code).toBe(0)
        expect(NFS.readFileSync(again, "utf8")).toBe(NFS.readFileSync(target, "utf8"))
      }
      expect(stored).toBe(sources.length - 1)
    }
  )

})

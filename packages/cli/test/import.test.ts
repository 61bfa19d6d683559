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
    expect(imported).toEqual({ code: 0, stdout: `${original.getHeader()!.id}\n`, stderr: "" })
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
      runCli("import", source, "--from", "claude", "--to", target),
      runCli("import", source, "--from", "claude", "--format-version", "1", "--to", Path.join(dir, "never.jsonl")),
      runCli("import", source, "--from", "pi", "--to", Path.join(dir, "never2.jsonl"))
    ])
    expect(imported).toEqual({ code: 0, stdout: `${session}\n`, stderr: "skipped 1 summary, 1 progress, 1 system:turn_duration\n" })
    const stored = records(target)
    expect(stored[0]).toEqual({ type: "session", version: 2, id: session, timestamp: "2026-01-02T03:04:01.000Z" })
    expect(stored.slice(1).map((e) => [e.id, e.parentId, (e.message as { role: string }).role])).toEqual([["u", null, "user"], ["a1", "u", "assistant"], ["r", "a1", "tool"]])
    expect((stored[2]!.message as { content: unknown }).content).toEqual([
      { type: "reasoning", text: "ls will do.", options: { anthropic: { signature: "c2ln" } } },
      { type: "tool-call", id: "toolu_1", name: "Bash", arguments: { command: "ls" } }
    ])
    expect(stored[3]!.message).toMatchObject({ toolCallId: "toolu_1", toolName: "Bash", content: [{ type: "text", text: "a.ts" }], result: { stdout: "a.ts" } })
    const verify = await runCli("verify", target)
    expect(verify.code).toBe(0)
    expect(refused.stderr).toMatch(/^usage: a Claude Code transcript imports as version 2 only/)
    expectFailure(expect, notClaude, "SESSION_INVALID_HEADER")
    const piAsClaude = await runCli("import", Path.join(dir, "imported.jsonl"), "--from", "claude", "--to", Path.join(dir, "never3.jsonl"))
    expectFailure(expect, piAsClaude, "SESSION_INVALID_HEADER")
    expect(piAsClaude.stderr).toMatch(/not a Claude Code transcript/)
  })

  it.skipIf(Transcripts.files("pi").length + Transcripts.files("claude").length === 0)("with --db: the real Pi sessions and Claude Code transcripts that convert are stored, and export as they were stored", async ({ expect }) => {
    expect((await runCli("migrate", "--db", db)).code).toBe(0)
    const dir = tempDir()
    const sources = (["pi", "claude"] as const).flatMap((from) => Transcripts.files(from).map((f) => [from, Path.join(Transcripts.dir(from), f)] as const))
    let stored = 0
    for (const [from, file] of sources) {
      const imported = await runCli("import", file, "--from", from, "--db", db)
      if (imported.code !== 0) {
        // The legacy Pi format and a transcript holding two objects on one line, refused at line 1 and 115.
        expect(imported.stderr).toMatch(/^(SESSION_UNSUPPORTED_VERSION|SESSION_INVALID_JSON) .*\(line (1|115)\)$/m)
        continue
      }
      stored++
      const id = imported.stdout.trim()
      const out = Path.join(dir, `${stored}.jsonl`)
      const [exported, verified] = await Promise.all([runCli("export", id, "--db", db, "--out", out), runCli("verify", id, "--db", db, "--json")])
      expect(exported.code).toBe(0)
      const lines = NFS.readFileSync(out, "utf8").split("\n").filter((l) => l !== "")
      expect(JSON.parse(lines[0]!)).toMatchObject({ type: "session", version: 2, id })
      expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, entries: lines.length - 1 })
    }
    expect(stored).toBe(sources.length - 2)
  })
})

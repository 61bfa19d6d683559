/**
 * Sync on session files (`Sync` over `SyncFiles` and the file journal): one session per source
 * transcript, idempotent to the byte, a grown source appending exactly its new entries, what is
 * still being written withheld, a changed source reported and left alone, and a sync interrupted
 * at any step converging to the same bytes on the next run. The real transcripts of the shared
 * collection are grown line by line and must end as their one-shot import.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Import from "@session-tree/core/Import"
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as Sync from "@session-tree/core/Sync"
import * as Transcripts from "@session-tree/testing/Transcripts"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import { Fs, FsError, intercept, node, type Step } from "../src/Fs.js"
import * as Recovery from "../src/Recovery.js"
import * as SyncFiles from "../src/SyncFiles.js"

const dirs: Array<string> = []
const tempDir = (name: string): string => {
  const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), `session-tree-sync-${name}-`))
  dirs.push(dir)
  return dir
}
afterAll(() => {
  for (const dir of dirs.splice(0)) NFS.rmSync(dir, { recursive: true, force: true })
})

const SESSION = "0c1d2e3f-0000-4000-8000-0000000000aa"
const ts = (n: number) => new Date(Date.UTC(2026, 0, 2, 3, 4, n)).toISOString()
const context = { isSidechain: false, sessionId: SESSION, userType: "external", cwd: "/p", version: "2.1.33" }
const user = (uuid: string, parentUuid: string | null, n: number, content: unknown, extra: object = {}) =>
  ({ parentUuid, ...context, type: "user", message: { role: "user", content }, uuid, timestamp: ts(n), ...extra })
const block = (uuid: string, parentUuid: string, n: number, id: string, content: ReadonlyArray<unknown>, stop: string | null = null) =>
  ({ parentUuid, ...context, type: "assistant", message: { model: "m", id, type: "message", role: "assistant", content, stop_reason: stop, usage: { input_tokens: 1, output_tokens: 1 } }, uuid, timestamp: ts(n) })
const jsonl = (records: ReadonlyArray<unknown>) => records.map((r) => JSON.stringify(r) + "\n").join("")

/** Everything under `dir` (the state included), by relative path, as bytes' hashes. */
const snapshot = (dir: string): Record<string, string> => {
  const out: Record<string, string> = {}
  const visit = (at: string) => {
    for (const name of NFS.readdirSync(at).sort()) {
      const path = Path.join(at, name)
      const stat = NFS.lstatSync(path)
      if (stat.isDirectory()) visit(path)
      else if (stat.isSymbolicLink()) out[Path.relative(dir, path)] = `-> ${NFS.readlinkSync(path)}`
      else out[Path.relative(dir, path)] = createHash("sha256").update(NFS.readFileSync(path)).digest("hex")
    }
  }
  visit(dir)
  return out
}

const WRITES = new Set<Step["op"]>(["write", "rename", "link", "unlink", "mkdir", "rmdir", "ftruncate", "symlink", "copyFile"])

/** Runs a sync of `roots` into `dir` on files; `around` sees (and may fail) every filesystem step. */
const syncInto = (roots: ReadonlyArray<string>, dir: string, options: Sync.SyncOptions = {}, around?: (step: Step) => Effect.Effect<void, FsError>) => {
  const fs = around === undefined ? node : intercept(node, (step, run) => Effect.zipRight(around(step), run))
  const live = Layer.mergeAll(
    Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(fs), Ids.layerRandom)),
    Layer.succeed(Sync.SyncFiles, SyncFiles.make(fs, { state: Path.join(dir, SyncFiles.STATE_FILE) }))
  )
  const recover = (location: string) => Recovery.recover(location).pipe(Effect.provideService(Fs, fs))
  return Effect.runPromise(Sync.sync(roots, { locate: (id) => Path.join(dir, Sync.fileName(id)), exclude: [dir], recover, ...options }).pipe(Effect.provide(live)))
}

const records = (path: string) => NFS.readFileSync(path, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as Record<string, unknown>)

describe("sync on files", () => {
  it("one session per transcript (subagents their own), named by the source's IDs; what is not a transcript is ignored", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    NFS.mkdirSync(Path.join(sources, "project", SESSION, "subagents"), { recursive: true })
    NFS.writeFileSync(Path.join(sources, "project", `${SESSION}.jsonl`), jsonl([
      user("u1", null, 1, "explore"),
      block("a1", "u1", 2, "m1", [{ type: "tool_use", id: "task-1", name: "Task", input: { prompt: "look" } }], "tool_use"),
      user("r1", "a1", 3, [{ type: "tool_result", tool_use_id: "task-1", content: "done" }], { toolUseResult: { agentId: "ab12" } }),
      block("a2", "r1", 4, "m2", [{ type: "text", text: "Done." }], "end_turn")
    ]))
    NFS.writeFileSync(Path.join(sources, "project", SESSION, "subagents", "agent-ab12.jsonl"), jsonl([
      { ...user("s1", null, 2, "look"), isSidechain: true, agentId: "ab12" },
      { ...block("s2", "s1", 3, "m9", [{ type: "text", text: "seen" }], "end_turn"), isSidechain: true, agentId: "ab12" }
    ]))
    NFS.writeFileSync(Path.join(sources, "history.jsonl"), jsonl([{ display: "a prompt", timestamp: 1 }]))
    NFS.writeFileSync(Path.join(sources, "notes.txt"), "not a transcript")
    const report = await syncInto([sources], dir)
    expect(report.sources.map((s) => [Path.relative(sources, s.path), s.status, s.format, s.sessions.map((x) => [x.id, x.created, x.appended])])).toEqual([
      ["history.jsonl", "ignored", undefined, []],
      [`project/${SESSION}.jsonl`, "synced", "claude", [[SESSION, true, 5]]],
      [`project/${SESSION}/subagents/agent-ab12.jsonl`, "synced", "claude", [[`${SESSION}.agent-ab12`, true, 3]]]
    ])
    expect(NFS.readdirSync(dir).sort()).toEqual([SyncFiles.STATE_FILE, `${SESSION}.agent-ab12.jsonl`, `${SESSION}.jsonl`])
    const parent = records(Path.join(dir, `${SESSION}.jsonl`))
    expect(parent.find((r) => r.kind === "custom")).toMatchObject({ customType: "session-tree:subagent", data: { session: `${SESSION}.agent-ab12`, toolCallId: "task-1" } })
    // Its parent's transcript, where Claude Code 2.1 keeps it, names the call that started it: both links name it.
    expect(records(Path.join(dir, `${SESSION}.agent-ab12.jsonl`))[1]).toMatchObject({ customType: "session-tree:subagent-of", data: { session: SESSION, toolCallId: "task-1", agentId: "ab12" } })
  })

  it("a subagent's file beside its parent (Claude Code 2.0) names the call; one synced before its parent was there keeps the link it was stored with", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    const parentFile = Path.join(sources, `${SESSION}.jsonl`)
    const childFile = Path.join(sources, "agent-cd34.jsonl")
    const sub = (uuid: string, parentUuid: string | null, n: number, content: unknown) =>
      parentUuid === null ? { ...user(uuid, null, n, content as string), isSidechain: true, agentId: "cd34" } : { ...block(uuid, parentUuid, n, `m-${uuid}`, content as Array<unknown>, "end_turn"), isSidechain: true, agentId: "cd34" }
    NFS.writeFileSync(childFile, jsonl([sub("s1", null, 2, "look"), sub("s2", "s1", 3, [{ type: "text", text: "seen" }])]))
    const linkOf = () => records(Path.join(dir, `${SESSION}.agent-cd34.jsonl`))[1]!.data
    // Alone, its link names the parent session and the agent only.
    await syncInto([sources], dir)
    expect(linkOf()).toEqual({ session: SESSION, agentId: "cd34" })
    // The parent appears, still running its Task call; the subagent grows: appended to, its link as stored.
    NFS.writeFileSync(parentFile, jsonl([
      user("u1", null, 1, "explore"),
      block("a1", "u1", 2, "m1", [{ type: "tool_use", id: "task-9", name: "Task", input: { prompt: "look" } }], "tool_use")
    ]))
    NFS.appendFileSync(childFile, jsonl([sub("s3", "s2", 4, [{ type: "text", text: "more" }])]))
    const grown = await syncInto([sources], dir)
    expect(grown.sources.map((s) => [Path.basename(s.path), s.status])).toEqual([[`${SESSION}.jsonl`, "synced"], ["agent-cd34.jsonl", "synced"]])
    expect(linkOf()).toEqual({ session: SESSION, agentId: "cd34" })
    // Synced anew with its parent there: the call whose prompt it was given.
    const fresh = tempDir("fresh")
    await syncInto([sources], fresh)
    expect(records(Path.join(fresh, `${SESSION}.agent-cd34.jsonl`))[1]!.data).toEqual({ session: SESSION, toolCallId: "task-9", agentId: "cd34" })
  })

  it("a Codex subagent thread's rollout is linked both ways with the rollout that spawned it, found among the files walked", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    const parentId = "01950000-aaaa-7bbb-8ccc-0000000000p1"
    const childId = "01950000-aaaa-7bbb-8ccc-0000000000c1"
    const at = (n: number) => ts(n)
    const metaLine = (id: string, source: unknown) => ({ timestamp: at(0), type: "session_meta", payload: { id, timestamp: at(0), cwd: "/w", originator: "codex_cli_rs", cli_version: "0.104.0", source, model_provider: "openai" } })
    const itemLine = (n: number, payload: object) => ({ timestamp: at(n), type: "response_item", payload })
    const day = Path.join(sources, "2026", "02", "19")
    NFS.mkdirSync(day, { recursive: true })
    NFS.writeFileSync(Path.join(day, `rollout-2026-02-19T19-07-06-${parentId}.jsonl`), jsonl([
      metaLine(parentId, "cli"),
      itemLine(1, { type: "function_call", name: "spawn_agent", arguments: "{\"message\":\"look\"}", call_id: "call-s" }),
      itemLine(2, { type: "function_call_output", call_id: "call-s", output: JSON.stringify({ agent_id: childId }) })
    ]))
    NFS.writeFileSync(Path.join(day, `rollout-2026-02-19T19-08-47-${childId}.jsonl`), jsonl([
      metaLine(childId, { subagent: { thread_spawn: { parent_thread_id: parentId, depth: 1 } } }),
      itemLine(3, { type: "message", role: "user", content: [{ type: "input_text", text: "look" }] })
    ]))
    const report = await syncInto([sources], dir)
    expect(report.sources.map((s) => [s.status, s.sessions.map((x) => x.id)])).toEqual([["synced", [parentId]], ["synced", [childId]]])
    expect(records(Path.join(dir, `${parentId}.jsonl`)).find((r) => r.kind === "custom" && r.customType === "session-tree:subagent")!.data).toEqual({ session: childId, toolCallId: "call-s" })
    expect(records(Path.join(dir, `${childId}.jsonl`))[1]).toMatchObject({ id: "subagent-of", customType: "session-tree:subagent-of", data: { session: parentId, toolCallId: "call-s" } })
  })

  it("the walk gives the sources sorted by path, each once; the state reads back what was saved, whatever its paths and IDs hold", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    // Names whose order differs by a character below and above "/" (".", "-", "0"), a directory among files, nesting.
    const names = ["a.jsonl", "a-b.jsonl", "a/x.jsonl", "a/b/c.jsonl", "a0.jsonl", "a.b/y.jsonl", "b.jsonl", "B.jsonl", "a/b.jsonl", "z/z/z.jsonl"]
    for (const name of names) {
      NFS.mkdirSync(Path.dirname(Path.join(sources, name)), { recursive: true })
      NFS.writeFileSync(Path.join(sources, name), "x")
    }
    NFS.writeFileSync(Path.join(sources, "a", "notes.txt"), "not a source")
    const files = SyncFiles.make(node, { state: Path.join(dir, SyncFiles.STATE_FILE) })
    const walked = await Effect.runPromise(files.walk([sources], []))
    const expected = names.map((n) => Path.join(sources, n)).sort()
    expect(walked.map((f) => f.path)).toEqual(expected)
    // Several roots, overlapping: each file once, sorted.
    const twice = await Effect.runPromise(files.walk([Path.join(sources, "a"), sources, Path.join(sources, "b.jsonl")], []))
    expect(twice.map((f) => f.path)).toEqual(expected)
    const state: Sync.SyncState = {
      sources: {
        "/p/plain.jsonl": { fingerprint: "1:2:3:4.5:6.5", pending: false, sessions: ["s1"] },
        "/p/two.jsonl": { fingerprint: "1:2:3:4:5", pending: true, sessions: ["s1", "s1.agent-x"] },
        "/p/none.jsonl": { fingerprint: "f", pending: false, sessions: [] },
        "/p/empty-id.jsonl": { fingerprint: "f", pending: false, sessions: [""] },
        "/p/tab\there.jsonl": { fingerprint: "f", pending: true, sessions: ["a\tb", "\"quoted"] },
        "/p/line\nbreak.jsonl": { fingerprint: "f", pending: false, sessions: ["x"] },
        "\"/p/quote.jsonl": { fingerprint: "\"f", pending: false, sessions: ["y"] },
        "/p/after.jsonl": { fingerprint: "g", pending: false, sessions: ["z"] }
      }
    }
    await Effect.runPromise(files.saveState(state))
    expect(await Effect.runPromise(files.loadState)).toEqual(state)
    // A state that is not one is ignored: only a cache.
    NFS.writeFileSync(Path.join(dir, SyncFiles.STATE_FILE), "session-tree sync state 1\nfingerprint\tq\t/p\ts\n")
    expect(await Effect.runPromise(files.loadState)).toEqual({ sources: {} })
  })

  it("a second sync of unchanged sources writes nothing and reads no source; a line appended is one entry appended", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    const file = Path.join(sources, `${SESSION}.jsonl`)
    const lines = [user("u1", null, 1, "a"), block("a1", "u1", 2, "m1", [{ type: "text", text: "b" }], "end_turn")]
    NFS.writeFileSync(file, jsonl(lines))
    await syncInto([sources], dir)
    const before = snapshot(dir)
    const steps: Array<Step> = []
    const again = await syncInto([sources], dir, {}, (step) => Effect.sync(() => void steps.push(step)))
    expect(again.sources.map((s) => s.status)).toEqual(["unchanged"])
    expect(snapshot(dir)).toEqual(before)
    expect(steps.filter((s) => WRITES.has(s.op) || (s.op === "open" && s.path === file))).toEqual([])
    NFS.appendFileSync(file, jsonl([user("u2", "a1", 3, "c")]))
    const grown = await syncInto([sources], dir)
    expect(grown.sources[0]).toMatchObject({ status: "synced", sessions: [{ id: SESSION, created: false, appended: 1 }] })
    expect(records(Path.join(dir, `${SESSION}.jsonl`)).map((r) => r.id)).toEqual([SESSION, "u1", "a1", "u2"])
  })

  it("a response whose blocks may still arrive waits until a later line shows it complete, or the source has been quiet", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    const file = Path.join(sources, `${SESSION}.jsonl`)
    const session = Path.join(dir, `${SESSION}.jsonl`)
    NFS.writeFileSync(file, jsonl([user("u1", null, 1, "a"), block("a1", "u1", 2, "m1", [{ type: "thinking", thinking: "x", signature: "s" }])]))
    const waiting = await syncInto([sources], dir, { quietMs: 3_600_000 })
    expect([waiting.sources[0]!.pending, records(session).map((r) => r.id)]).toEqual([1, [SESSION, "u1"]])
    // The state says something waits: the next sync reads the source again once it is quiet.
    const quiet = await syncInto([sources], dir, { quietMs: 0 })
    expect(quiet.sources[0]).toMatchObject({ status: "synced", pending: 0, sessions: [{ appended: 1 }] })
    // A block arriving after its response was stored becomes a message that continues it; nothing stored changes.
    const stored = NFS.readFileSync(session, "utf8")
    NFS.appendFileSync(file, jsonl([block("a2", "a1", 3, "m1", [{ type: "text", text: "y" }]), user("u2", "a2", 4, "next")]))
    const later = await syncInto([sources], dir, { quietMs: 3_600_000 })
    expect(later.sources[0]).toMatchObject({ status: "synced", pending: 0, sessions: [{ appended: 2 }] })
    expect(NFS.readFileSync(session, "utf8").startsWith(stored)).toBe(true)
    expect(records(session).slice(3)).toMatchObject([{ id: "a2", parentId: "a1", message: { options: { claude: { continues: "a1" } } } }, { id: "u2", parentId: "a2" }])
  })

  it("a source whose imported part changed is reported (SESSION_SOURCE_CHANGED) and left alone, every run until it is mended", async () => {
    const sources = tempDir("sources")
    const dir = tempDir("target")
    const file = Path.join(sources, `${SESSION}.jsonl`)
    NFS.writeFileSync(file, jsonl([user("u1", null, 1, "a"), user("u2", "u1", 2, "b")]))
    await syncInto([sources], dir)
    const before = snapshot(dir)
    NFS.writeFileSync(file, jsonl([user("u1", null, 1, "edited"), user("u2", "u1", 2, "b"), user("u3", "u2", 3, "c")]))
    for (let run = 0; run < 2; run++) {
      const changed = await syncInto([sources], dir)
      expect(changed.sources[0]).toMatchObject({ status: "changed", error: { code: "SESSION_SOURCE_CHANGED", _tag: "ConflictError" } })
      const { [SyncFiles.STATE_FILE]: _, ...sessions } = snapshot(dir)
      const { [SyncFiles.STATE_FILE]: __, ...sessionsBefore } = before
      expect(sessions).toEqual(sessionsBefore)
    }
  })

  it("interrupted at any step, the next sync converges to the bytes of a sync never interrupted", async () => {
    const sources = tempDir("sources")
    NFS.mkdirSync(Path.join(sources, "sub"))
    const main = Path.join(sources, `${SESSION}.jsonl`)
    const start = jsonl([
      user("u1", null, 1, "explore"),
      block("a1", "u1", 2, "m1", [{ type: "tool_use", id: "task-1", name: "Task", input: { prompt: "look" } }], "tool_use"),
      user("r1", "a1", 3, [{ type: "tool_result", tool_use_id: "task-1", content: "done" }], { toolUseResult: { agentId: "ab12" } })
    ])
    const more = [jsonl([block("a2", "r1", 4, "m2", [{ type: "text", text: "Done." }], "end_turn"), user("u2", "a2", 5, "thanks")])]
    NFS.writeFileSync(Path.join(sources, "sub", "agent-ab12.jsonl"), jsonl([{ ...user("s1", null, 2, "look"), isSidechain: true, agentId: "ab12" }]))
    // The reference: a sync, the source grown, a sync; never interrupted.
    const rounds = async (dir: string, around?: (step: Step) => Effect.Effect<void, FsError>) => {
      NFS.writeFileSync(main, start)
      for (let round = 0; round <= more.length; round++) {
        if (round > 0) NFS.appendFileSync(main, more[round - 1]!)
        if (around !== undefined) await syncInto([sources], dir, {}, around).catch(() => undefined)
        await syncInto([sources], dir)
      }
    }
    const reference = tempDir("reference")
    await rounds(reference)
    // The sessions and their blobs: a leftover an interrupted save left (a marker) is the file backend's to clear, not a session's bytes.
    const sessions = (dir: string) => Object.fromEntries(Object.entries(snapshot(dir)).filter(([name]) => name.endsWith(".jsonl")))
    const expected = sessions(reference)
    let steps = 0
    await rounds(tempDir("count"), () => Effect.sync(() => void steps++))
    expect(steps).toBeGreaterThan(40)
    for (let k = 1; k <= steps; k++) {
      const dir = tempDir(`fail-${k}`)
      let n = 0
      // The k-th step of the whole run fails, wherever it falls: a walk, a read, a create, an append, the state.
      await rounds(dir, (step) => (++n === k ? Effect.fail(new FsError({ op: step.op, path: step.path, errno: "EIO" })) : Effect.void))
      expect([k, sessions(dir)]).toEqual([k, expected])
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

const REAL = (["claude", "pi", "codex"] as const).flatMap((kind) => Transcripts.files(kind).map((name) => Path.join(Transcripts.dir(kind), name)))

describe.skipIf(REAL.length === 0)("the real transcripts, grown as their agent wrote them", () => {
  it.each(REAL)("%s: synced at growing lengths, then once complete, the sessions are its one-shot import's", async (path) => {
    const bytes = NFS.readFileSync(path)
    const whole = Import.convert(bytes, { skipDamaged: true })
    if (Either.isLeft(whole)) return
    const sources = tempDir("real")
    const dir = tempDir("real-target")
    const source = Path.join(sources, "transcript.jsonl")
    const ends: Array<number> = []
    for (let i = bytes.indexOf(0x0a); i >= 0; i = bytes.indexOf(0x0a, i + 1)) ends.push(i + 1)
    // Two cuts, one in the middle of a line (a torn last line), then the whole file.
    const cuts = [ends[Math.floor(ends.length / 2)]! + 7, ends[Math.floor((ends.length * 3) / 4)]!, bytes.length]
    for (const cut of cuts) {
      NFS.writeFileSync(source, bytes.subarray(0, cut))
      const report = await syncInto([sources], dir, { quietMs: 3_600_000, skipDamaged: true })
      expect(report.sources[0]!.status === "synced" || report.sources[0]!.status === "current").toBe(true)
    }
    // Quiet at last: what waited is stored.
    await syncInto([sources], dir, { quietMs: 0, skipDamaged: true })
    for (const session of whole.right.sessions) {
      const stored = records(Path.join(dir, Sync.fileName(session.header.id)))
      const expected = [session.header, ...session.entries].map((r) => JSON.parse(JSON.stringify(r)))
      // Inline data over the inline size is a blob in the store; the rest is the import, record for record.
      expect(stored.length).toBe(expected.length)
      expect(JSON.stringify(stored).replace(/"data":\{"blob":"sha256:[0-9a-f]+","size":\d+\}/g, "")).toBe(
        JSON.stringify(expected).replace(/"data":\{"base64":"[^"]{87384,}"\}/g, "")
      )
    }
  })
})

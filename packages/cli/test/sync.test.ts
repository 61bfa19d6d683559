/**
 * `session-tree sync`, run as the built command on files and on PostgreSQL: one session per
 * transcript, a rerun that writes nothing, one line appended is one entry appended, a changed
 * source reported and left alone while the others sync; `--watch` mirroring each of 100 appends
 * (p95 within a second) until SIGINT; and a sync killed at random moments converging, rerun, to
 * the bytes of one never killed.
 */
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as PgJournal from "@session-tree/pg/PgJournal"
import { track } from "@session-tree/testing/Children"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import { type ChildProcess, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { bin, firstWord, records, removeTempDirs, runCli, tempDir } from "./support.js"

let scope: Scope.CloseableScope
let db: string
/** The test's own reader of the database, one pool for the file (the watch test asks every 5 ms). */
let onDb: ManagedRuntime.ManagedRuntime<Sessions.Sessions, unknown>

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("sync"), scope))
  await runCli("migrate", "--db", db)
  onDb = ManagedRuntime.make(Layer.provideMerge(Sessions.layer, Layer.merge(PgJournal.layerUrl(db), Ids.layerRandom)))
}, 120_000)
afterAll(async () => {
  removeTempDirs()
  await onDb?.dispose()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const ts = (n: number) => new Date(Date.UTC(2026, 0, 2, 3, 0, 0) + n * 1000).toISOString()
const user = (session: string, uuid: string, parentUuid: string | null, n: number, content: string) =>
  JSON.stringify({ parentUuid, isSidechain: false, sessionId: session, type: "user", message: { role: "user", content }, uuid, timestamp: ts(n) }) + "\n"
const answer = (session: string, uuid: string, parentUuid: string, n: number, text: string) =>
  JSON.stringify({
    parentUuid,
    isSidechain: false,
    sessionId: session,
    type: "assistant",
    message: { id: `msg-${uuid}`, role: "assistant", model: "m", content: [{ type: "text", text }], stop_reason: "end_turn" },
    uuid,
    timestamp: ts(n)
  }) + "\n"
const pi = (id: string) =>
  [
    { type: "session", version: 3, id, timestamp: ts(0), cwd: "/p" },
    { type: "message", id: "e1", parentId: null, timestamp: ts(1), message: { role: "user", content: "hi", timestamp: 1 } }
  ].map((r) => JSON.stringify(r) + "\n").join("")

/** A tree of sources: two Claude Code transcripts in a project directory, a Pi session, a file that is not a transcript. */
const sourcesTree = (): { readonly root: string; readonly claude: string; readonly other: string } => {
  const root = tempDir()
  NFS.mkdirSync(Path.join(root, "claude", "project"), { recursive: true })
  NFS.mkdirSync(Path.join(root, "pi"))
  const claude = Path.join(root, "claude", "project", "c0000000-0000-4000-8000-000000000001.jsonl")
  NFS.writeFileSync(claude, user("c0000000-0000-4000-8000-000000000001", "u1", null, 1, "first") + answer("c0000000-0000-4000-8000-000000000001", "a1", "u1", 2, "ok"))
  const other = Path.join(root, "claude", "project", "c0000000-0000-4000-8000-000000000002.jsonl")
  NFS.writeFileSync(other, user("c0000000-0000-4000-8000-000000000002", "v1", null, 1, "second"))
  NFS.writeFileSync(Path.join(root, "pi", "p.jsonl"), pi("p0000000-0000-4000-8000-000000000003"))
  NFS.writeFileSync(Path.join(root, "claude", "history.jsonl"), `{"display":"x"}\n`)
  return { root, claude, other }
}

const hashes = (dir: string): Record<string, string> =>
  Object.fromEntries(NFS.readdirSync(dir).sort().map((name) => [name, createHash("sha256").update(NFS.readFileSync(Path.join(dir, name))).digest("hex")]))

const exportFromDb = (id: string) => onDb.runPromise(Effect.flatMap(Sessions.Sessions, (s) => s.exportJsonl(id)))

describe("session-tree sync", { timeout: 300_000 }, () => {
  it("on files: one session per transcript in DIR; a rerun writes nothing; one line appended is one entry; a changed source is reported while the others sync", async ({ expect }) => {
    const { claude, other, root } = sourcesTree()
    const dir = Path.join(tempDir(), "mirror")
    const first = await runCli("sync", root, "--to", dir)
    expect(first.code).toBe(0)
    expect(first.stdout.split("\n").filter((l) => l !== "")).toEqual([
      expect.stringMatching(/^new \+2 +c0000000-0000-4000-8000-000000000001  .*\.jsonl$/),
      expect.stringMatching(/^new \+1 +c0000000-0000-4000-8000-000000000002  /),
      expect.stringMatching(/^new \+2 +p0000000-0000-4000-8000-000000000003  /),
      "4 sources: 3 synced, 1 ignored"
    ])
    const listed = await runCli("list", dir)
    expect(listed.stdout.split("\n").filter((l) => l !== "")).toHaveLength(3)
    const before = hashes(dir)
    const again = await runCli("sync", root, "--to", dir)
    expect(again).toEqual({ code: 0, stdout: "4 sources: 4 unchanged\n", stderr: "" })
    expect(hashes(dir)).toEqual(before)
    NFS.appendFileSync(claude, user("c0000000-0000-4000-8000-000000000001", "u2", "a1", 3, "more"))
    const grown = await runCli("sync", root, "--to", dir)
    expect(grown.stdout).toMatch(/^ {4}\+1 +c0000000-0000-4000-8000-000000000001 /m)
    expect(records(Path.join(dir, "c0000000-0000-4000-8000-000000000001.jsonl")).map((r) => r.id)).toEqual(["c0000000-0000-4000-8000-000000000001", "u1", "a1", "u2"])
    // The second transcript changes where it was imported; the first grows again: it syncs, the other is reported.
    NFS.writeFileSync(other, user("c0000000-0000-4000-8000-000000000002", "v1", null, 1, "edited"))
    NFS.appendFileSync(claude, user("c0000000-0000-4000-8000-000000000001", "u3", "u2", 4, "and more"))
    const stuck = NFS.readFileSync(Path.join(dir, "c0000000-0000-4000-8000-000000000002.jsonl"))
    const changed = await runCli("sync", root, "--to", dir)
    expect(changed.code).toBe(1)
    expect(changed.stdout).toMatch(/\+1 +c0000000-0000-4000-8000-000000000001 /)
    expect(changed.stderr).toMatch(/^SESSION_SOURCE_CHANGED .*c0000000-0000-4000-8000-000000000002\.jsonl/m)
    expect(firstWord(changed.stderr.split("\n").at(-2)!)).toBe("SESSION_SOURCE_CHANGED")
    expect(NFS.readFileSync(Path.join(dir, "c0000000-0000-4000-8000-000000000002.jsonl"))).toEqual(stuck)
    const usage = await runCli("sync", root)
    expect([usage.code, usage.stderr]).toEqual([2, "usage: sync needs --to DIR on files (see session-tree --help)\n"])
  })

  it("on PostgreSQL: the same sessions; a rerun changes nothing; an appended line is one entry", async ({ expect }) => {
    const { claude, root } = sourcesTree()
    const state = Path.join(tempDir(), "state.json")
    const first = await runCli("sync", root, "--db", db, "--state", state, "--json")
    expect(first.code).toBe(0)
    const report = JSON.parse(first.stdout) as { ok: boolean; sources: Array<{ status: string; sessions: Array<{ id: string; appended: number }> }> }
    expect(report.ok).toBe(true)
    expect(report.sources.map((s) => s.status)).toEqual(["ignored", "synced", "synced", "synced"])
    const id = "c0000000-0000-4000-8000-000000000001"
    const exported = await exportFromDb(id)
    // The same records a sync to files stores.
    const dir = tempDir()
    expect((await runCli("sync", root, "--to", dir)).code).toBe(0)
    expect(exported).toBe(NFS.readFileSync(Path.join(dir, `${id}.jsonl`), "utf8"))
    const again = await runCli("sync", root, "--db", db, "--state", state)
    expect(again).toEqual({ code: 0, stdout: "4 sources: 4 unchanged\n", stderr: "" })
    // Without the state, every source is read again: still nothing to write.
    NFS.rmSync(state)
    const cold = await runCli("sync", root, "--db", db, "--state", state)
    expect(cold).toEqual({ code: 0, stdout: "4 sources: 3 current, 1 ignored\n", stderr: "" })
    expect(await exportFromDb(id)).toBe(exported)
    NFS.appendFileSync(claude, user(id, "u2", "a1", 3, "more"))
    const grown = await runCli("sync", root, "--db", db, "--state", state)
    expect(grown.stdout).toMatch(/\+1 +c0000000-0000-4000-8000-000000000001 /)
    expect((await exportFromDb(id)).startsWith(exported)).toBe(true)
    expect((await exportFromDb(id)).split("\n").filter((l) => l !== "")).toHaveLength(4)
  })
})

/** A child `session-tree` started as Node itself runs it, so that a signal reaches the process that works. */
const start = (args: ReadonlyArray<string>): { readonly child: ChildProcess; readonly exited: Promise<number | null>; readonly out: () => string } => {
  // Tracked, as every child of the tests, so that the run fails if a watcher outlives it.
  const child = track(spawn(process.execPath, [bin, ...args], { env: { ...process.env, SESSION_TREE_DB: "", NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] }), [bin, ...args])
  let out = ""
  child.stdout!.on("data", (d) => (out += String(d)))
  child.stderr!.on("data", (d) => (out += String(d)))
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code, signal) => resolve(code ?? (signal === null ? null : 128))))
  return { child, exited, out: () => out }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const p95 = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.95) - 1]!

/** How long until `found()` holds, polled every 5 ms; fails after `limit` ms. */
const until = async (found: () => boolean | Promise<boolean>, limit = 10_000): Promise<number> => {
  const began = performance.now()
  while (!(await found())) {
    if (performance.now() - began > limit) throw new Error("not mirrored in time")
    await sleep(5)
  }
  return performance.now() - began
}

describe("session-tree sync --watch", { timeout: 300_000 }, () => {
  const follow = async (expect: import("vitest").ExpectStatic, backend: "files" | "db", appends: number) => {
    const root = tempDir()
    const id = backend === "files" ? "w0000000-0000-4000-8000-000000000001" : `w${Date.now().toString(16).padStart(7, "0").slice(-7)}-0000-4000-8000-000000000002`
    const source = Path.join(root, `${id}.jsonl`)
    NFS.writeFileSync(source, user(id, "m0", null, 0, "start"))
    const dir = tempDir()
    const args = backend === "files" ? ["sync", root, "--watch", "--to", dir] : ["sync", root, "--watch", "--db", db, "--state", Path.join(dir, "state.json")]
    const watcher = start(args)
    try {
      const session = Path.join(dir, `${id}.jsonl`)
      const holds = async (entry: string) =>
        backend === "files"
          ? NFS.existsSync(session) && NFS.readFileSync(session, "utf8").includes(`"id":"${entry}"`)
          : (await onDb.runPromise(Effect.either(Effect.flatMap(Sessions.Sessions, (s) => s.exportJsonl(id)))))
            .pipe((e) => e._tag === "Right" && e.right.includes(`"id":"${entry}"`))
      await until(() => holds("m0"), 30_000)
      const latencies: Array<number> = []
      for (let i = 1; i <= appends; i++) {
        NFS.appendFileSync(source, user(id, `m${i}`, `m${i - 1}`, i, `line ${i}`))
        latencies.push(await until(() => holds(`m${i}`)))
      }
      const p = p95(latencies)
      console.log(`[sync --watch on ${backend}] ${appends} appends, p95 ${p.toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms`)
      expect(p).toBeLessThan(1000)
    } finally {
      watcher.child.kill("SIGINT")
    }
    // Until interrupted: SIGINT ends it as the shell's convention says.
    expect(await watcher.exited).toBe(130)
  }

  it("mirrors each of 100 appends to files within a second (p95), until SIGINT", async ({ expect }) => {
    await follow(expect, "files", 100)
  })

  it("mirrors appends to PostgreSQL within a second (p95), until SIGINT", async ({ expect }) => {
    await follow(expect, "db", 30)
  })
})

describe("session-tree sync killed at random moments", { timeout: 300_000 }, () => {
  /** 30 transcripts of 60 lines: enough for a sync to take a while. */
  const manyTranscripts = (prefix: string): string => {
    const root = tempDir()
    for (let t = 0; t < 30; t++) {
      const id = `${prefix}-0000-4000-8000-${String(t).padStart(12, "0")}`
      let text = ""
      for (let i = 0; i < 60; i++) text += i % 2 === 0 ? user(id, `u${i}`, i === 0 ? null : `a${i - 1}`, i, `q ${i}`) : answer(id, `a${i}`, `u${i - 1}`, i, `r ${i}`)
      NFS.writeFileSync(Path.join(root, `${id}.jsonl`), text)
    }
    return root
  }
  let seed = 7
  const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  /** Runs `args` and kills it with SIGKILL once or twice at random moments; how many kills landed. */
  const killed = async (args: ReadonlyArray<string>, times: number): Promise<number> => {
    let landed = 0
    for (let k = 0; k < times; k++) {
      const run = start(args)
      await sleep(50 + random() * 600)
      if (run.child.kill("SIGKILL")) landed++
      await run.exited
    }
    return landed
  }
  const sessions = (dir: string) => Object.fromEntries(Object.entries(hashes(dir)).filter(([name]) => name.endsWith(".jsonl")))

  it("on files: a rerun after a SIGKILL at any moment converges to the bytes of a sync never killed", async ({ expect }) => {
    const root = manyTranscripts("k0000000")
    const reference = tempDir()
    expect((await runCli("sync", root, "--to", reference)).code).toBe(0)
    const expected = sessions(reference)
    let landed = 0
    for (let round = 0; round < 3; round++) {
      const dir = tempDir()
      landed += await killed(["sync", root, "--to", dir], 1 + (round % 2))
      const rerun = await runCli("sync", root, "--to", dir)
      expect([round, rerun.code, rerun.stderr]).toEqual([round, 0, ""])
      expect([round, sessions(dir)]).toEqual([round, expected])
    }
    expect(landed).toBeGreaterThan(0)
  })

  it("on PostgreSQL: the same", async ({ expect }) => {
    let landed = 0
    for (let round = 0; round < 2; round++) {
      const root = manyTranscripts(`q${String(round).padStart(3, "0")}${Date.now().toString(16).slice(-4)}`)
      const reference = tempDir()
      expect((await runCli("sync", root, "--to", reference)).code).toBe(0)
      const state = Path.join(tempDir(), "state.json")
      landed += await killed(["sync", root, "--db", db, "--state", state], 1 + (round % 2))
      const rerun = await runCli("sync", root, "--db", db, "--state", state)
      expect([round, rerun.code, rerun.stderr]).toEqual([round, 0, ""])
      for (const name of Object.keys(sessions(reference))) {
        expect(await exportFromDb(name.slice(0, -".jsonl".length))).toBe(NFS.readFileSync(Path.join(reference, name), "utf8"))
      }
    }
    expect(landed).toBeGreaterThan(0)
  })
})

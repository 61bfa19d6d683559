/**
 * The commands with `--db URL` (SPEC C5): the same commands, exit codes and
 * error-code-first rule on a PostgreSQL database, where PATH arguments are
 * session IDs; and the round trip file → database → file, byte for byte.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { firstWord, removeTempDirs, runCli, STACK_FRAME, tempDir, writeConversation } from "./support.js"

let scope: Scope.CloseableScope
let db: string

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("cli"), scope))
}, 60_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const expectFailure = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, code: string) => {
  expect([run.code, firstWord(run.stderr), run.stdout]).toEqual([1, code, ""])
  expect(run.stderr).not.toMatch(STACK_FRAME)
}

describe("session-tree --db", { timeout: 180_000 }, () => {
  it("migrate creates the schema once; the commands of B6 then work on session IDs", async ({ expect }) => {
    const first = await runCli("migrate", "--db", db)
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^migrated to version \d+: applied /)
    expect((await runCli("migrate", "--db", db)).stdout).toMatch(/^the schema is up to date \(version \d+\)/)

    expect((await runCli("create", "chat-1", "--db", db)).stdout).toBe("chat-1\n")
    expectFailure(expect, await runCli("create", "chat-1", "--db", db), "SESSION_EXISTS")
    const root = (await runCli("append", "chat-1", "--user", "What is in /project?", "--db", db)).stdout.trim()
    const second = await runCli("append", "chat-1", "--message", JSON.stringify({ role: "assistant", id: "m2", content: "Let me look.", toolCalls: [] }), "--db", db)
    expect(second.code).toBe(0)
    // The environment variable is the default of --db.
    const viaEnv = await runCli("verify", "chat-1", "--json", { env: { SESSION_TREE_DB: db } })
    expect(JSON.parse(viaEnv.stdout)).toEqual({ ok: true, entries: 2, leaf: second.stdout.trim(), tail: "none" })
    const log = await runCli("log", "chat-1", "--db", db)
    expect(log.stdout.split("\n")[0]).toMatch(new RegExp(`^${root} {2}user {7}"What is in /project\\?"`))
    expect((await runCli("tree", "chat-1", "--db", db)).stdout).toMatch(/^session chat-1 /)
    const recover = await runCli("recover", "chat-1", "--db", db)
    expect([recover.code, recover.stdout]).toEqual([0, expect.stringMatching(/^nothing to recover/)])
    const forked = await runCli("fork", "chat-1", "--leaf", root, "--to", "chat-2", "--db", db)
    expect(forked.stdout).toBe("chat-2\n")
    const listed = JSON.parse((await runCli("list", "--json", "--db", db)).stdout) as Array<Record<string, unknown>>
    expect(listed.map((s) => [s["id"], s["entries"], s["title"]])).toEqual([["chat-2", 1, "What is in /project?"], ["chat-1", 2, "What is in /project?"]])
    expectFailure(expect, await runCli("verify", "nope", "--db", db), "SESSION_NOT_FOUND")
    expectFailure(expect, await runCli("append", "chat-1", "--user", "x", "--parent", "nope", "--db", db), "SESSION_UNKNOWN_PARENT")
  })

  it("a file exported, imported into the database, exported and imported back is byte-identical", async ({ expect }) => {
    await runCli("migrate", "--db", db)
    const dir = tempDir()
    const original = Path.join(dir, "s.jsonl")
    await writeConversation(original)
    const bytes = NFS.readFileSync(original)
    const imported = await runCli("import", original, "--db", db)
    expect(imported.stdout).toBe("s-1\n")
    expectFailure(expect, await runCli("import", original, "--db", db), "SESSION_EXISTS")
    const exported = await runCli("export", "s-1", "--db", db)
    expect(Buffer.from(exported.stdout, "utf8").equals(bytes)).toBe(true)
    const out = Path.join(dir, "out.jsonl")
    expect((await runCli("export", "s-1", "--db", db, "--out", out)).code).toBe(0)
    expect((await runCli("import", out, "--to", Path.join(dir, "back.jsonl"))).stdout).toBe("s-1\n")
    expect(NFS.readFileSync(Path.join(dir, "back.jsonl")).equals(bytes)).toBe(true)
    // Forks between the two: a branch of the database session into a file, through export and import.
    const forked = await runCli("fork", "s-1", "--leaf", "entry-002", "--to", "s-1-fork", "--db", db)
    expect(forked.stdout).toBe("s-1-fork\n")
    const forkOut = await runCli("export", "s-1-fork", "--db", db)
    expect(forkOut.stdout.split("\n").slice(1)).toEqual([...bytes.toString("utf8").split("\n").slice(1, 3), ""])
  })

  it("usage and an unreachable server: exit 2, and SESSION_IO with the code first", async ({ expect }) => {
    const dir = tempDir()
    for (const run of await Promise.all([
      runCli("list", dir, "--db", db),
      runCli("migrate"),
      runCli("import", Path.join(dir, "x.jsonl"))
    ])) {
      expect(run.code).toBe(2)
      expect(run.stderr).not.toMatch(STACK_FRAME)
    }
    expectFailure(expect, await runCli("verify", "chat-1", "--db", "postgres://postgres:password@127.0.0.1:9/none"), "SESSION_IO")
  })

  it("append checks its usage and the JSON of --message before it reaches the database", async ({ expect }) => {
    const unreachable = "postgres://127.0.0.1:1/x"
    const [both, notJson] = await Promise.all([
      runCli("append", "chat-1", "--user", "a", "--parent", "e", "--root", "--db", unreachable),
      runCli("append", "chat-1", "--message", "{\"role\":", "--db", unreachable)
    ])
    expect([both.code, both.stdout]).toEqual([2, ""])
    expect(both.stderr).toMatch(/^usage: --parent and --root exclude each other/)
    expectFailure(expect, notJson, "SESSION_INVALID_MESSAGE")
  })
})

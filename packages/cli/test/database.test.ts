/**
 * The commands with `--db URL` (SPEC C5): the same commands, exit codes and
 * error-code-first rule on a PostgreSQL database, where PATH arguments are
 * session IDs; the round trip file → database → file, byte for byte, forks
 * included; and a session damaged behind the library listed with its code.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Redacted from "effect/Redacted"
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

/** Runs `f` on the test database directly, not through the library. */
const inDatabase = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(Effect.flatMap(SqlClient.SqlClient, f), PgClient.layer({ url: Redacted.make(db), maxConnections: 1 }))))

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
  })

  it("a fork crosses backends through export and import, byte for byte, and leaves its source alone", async ({ expect }) => {
    await runCli("migrate", "--db", db)
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    await writeConversation(source)
    const sourceBytes = NFS.readFileSync(source)
    const lines = sourceBytes.toString("utf8").split("\n")

    // A file session forked into a file, that fork exported and imported into the database.
    const fileFork = Path.join(dir, "fork.jsonl")
    expect((await runCli("fork", source, "--leaf", "entry-002", "--to", fileFork, "--id", "file-fork")).stdout).toBe("file-fork\n")
    const forkBytes = NFS.readFileSync(fileFork)
    expect(forkBytes.toString("utf8").split("\n").slice(1)).toEqual([...lines.slice(1, 3), ""])
    const exportedFork = Path.join(dir, "fork-export.jsonl")
    expect((await runCli("export", fileFork, "--out", exportedFork)).code).toBe(0)
    expect((await runCli("import", exportedFork, "--db", db)).stdout).toBe("file-fork\n")
    const inDatabase = await runCli("export", "file-fork", "--db", db)
    expect(Buffer.from(inDatabase.stdout, "utf8").equals(forkBytes)).toBe(true)
    expect(NFS.readFileSync(source).equals(sourceBytes)).toBe(true)

    // The reverse: a database session forked in the database, exported to a file, imported as a file session.
    // The same conversation under its own header ID, which names it in the database.
    const renamed = Path.join(dir, "db-source.jsonl")
    NFS.writeFileSync(renamed, sourceBytes.toString("utf8").replace("\"id\":\"s-1\"", "\"id\":\"db-source\""))
    expect((await runCli("import", renamed, "--db", db)).stdout).toBe("db-source\n")
    const databaseBefore = (await runCli("export", "db-source", "--db", db)).stdout
    expect(databaseBefore.split("\n").slice(1)).toEqual(lines.slice(1))
    expect((await runCli("fork", "db-source", "--leaf", "entry-005", "--to", "db-fork", "--db", db)).stdout).toBe("db-fork\n")
    const x = Path.join(dir, "x.jsonl")
    const y = Path.join(dir, "y.jsonl")
    expect((await runCli("export", "db-fork", "--db", db, "--out", x)).code).toBe(0)
    const xBytes = NFS.readFileSync(x)
    expect(xBytes.toString("utf8").split("\n").slice(1)).toEqual([lines[1], lines[4], lines[5], ""])
    expect((await runCli("import", x, "--to", y)).stdout).toBe("db-fork\n")
    expect(NFS.readFileSync(y).equals(xBytes)).toBe(true)
    expect(Buffer.from((await runCli("export", "db-fork", "--db", db)).stdout, "utf8").equals(xBytes)).toBe(true)
    expect((await runCli("export", "db-source", "--db", db)).stdout).toBe(databaseBefore)
  })

  it("list --db shows a session whose rows were damaged with its error code, the others as they are", async ({ expect }) => {
    await runCli("migrate", "--db", db)
    expect((await runCli("create", "damaged", "--db", db)).code).toBe(0)
    expect((await runCli("append", "damaged", "--user", "soon damaged", "--db", db)).code).toBe(0)
    // Behind the library's back, as a failing disk or a stray UPDATE would.
    await inDatabase((sql) => sql`UPDATE session_tree_entries SET line = 'not-json' WHERE session_id = 'damaged' AND seq = 1`)
    const [json, words] = await Promise.all([runCli("list", "--json", "--db", db), runCli("list", "--db", db)])
    expect(json.code).toBe(0)
    const listed = JSON.parse(json.stdout) as Array<Record<string, unknown>>
    expect(listed.find((s) => s["location"] === "damaged")).toEqual({
      location: "damaged",
      error: { code: "SESSION_INVALID_JSON", message: expect.any(String) }
    })
    expect(listed.filter((s) => !("error" in s)).length).toBeGreaterThan(0)
    expect(words.code).toBe(0)
    expect(words.stdout).toMatch(/^SESSION_INVALID_JSON damaged {2}\S/m)
    expectFailure(expect, await runCli("verify", "damaged", "--db", db), "SESSION_INVALID_JSON")
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

/**
 * The command never picks a backend its user did not mean: with SESSION_TREE_DB
 * set, a PATH that looks like a file path is refused (and `--files` or `--db ""`
 * choose files), while an explicit `--db URL` takes PATH as a session ID; and
 * errors name the file or the session and database they were about.
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
  db = await Effect.runPromise(Scope.extend(freshDatabase("cli_backend"), scope))
  const migrated = await runCli("migrate", "--db", db)
  if (migrated.code !== 0) throw new Error(migrated.stderr)
}, 120_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

/** The database as messages may name it: host, port and name. */
const named = () => {
  const url = new URL(db)
  return `${url.hostname}:${url.port}${url.pathname}`
}

describe.concurrent("session-tree chooses the backend its user meant", { timeout: 180_000 }, () => {
  it("with SESSION_TREE_DB set, a file path is refused unless --files or --db \"\" choose files", async ({ expect }) => {
    const dir = tempDir()
    const env = { env: { SESSION_TREE_DB: db } }
    const a = Path.join(dir, "a.jsonl")
    const b = Path.join(dir, "b.jsonl")
    const chat = Path.join(dir, "chat.jsonl")
    await writeConversation(chat)
    const [refused, refusedVerify, refusedAppend, files, emptyDb, conflict, verified] = await Promise.all([
      runCli("create", a, env),
      runCli("verify", chat, env),
      runCli("append", "sub/dir", "--user", "hi", env),
      runCli("create", a, "--files", "--id", "file-a", env),
      runCli("create", b, "--db", "", "--id", "file-b", env),
      runCli("verify", chat, "--files", "--db", db),
      runCli("verify", chat, "--files", env)
    ])
    for (const run of [refused, refusedVerify, refusedAppend]) {
      expect([run.code, run.stdout]).toEqual([2, ""])
      expect(run.stderr).toMatch(/^usage: /)
      expect(run.stderr).toContain(named())
      expect(run.stderr).toMatch(/--files/)
      expect(run.stderr).not.toMatch(STACK_FRAME)
    }
    expect(refused.stderr).toContain(JSON.stringify(a))
    expect([files.code, files.stdout]).toEqual([0, "file-a\n"])
    expect([emptyDb.code, emptyDb.stdout]).toEqual([0, "file-b\n"])
    expect(NFS.readdirSync(dir).sort()).toEqual(["a.jsonl", "b.jsonl", "chat.jsonl"])
    expect(conflict.code).toBe(2)
    expect(conflict.stderr).toMatch(/--files and --db/)
    expect([verified.code, verified.stdout]).toEqual([0, "ok 5 entries, leaf entry-005, tail none\n"])
    // Nothing reached the database: the refused create made no session there.
    const listed = await runCli("list", "--json", "--db", db)
    const locations = (JSON.parse(listed.stdout) as Array<{ location: string }>).map((l) => l.location)
    expect(locations).not.toContain(a)
    expect(locations).not.toContain(chat)
  })

  it("an explicit --db takes any PATH as a session ID; errors name the session and the database, never the password", async ({ expect }) => {
    const url = new URL(db)
    url.password = "s3cret-password"
    const [created, missing, wrongPassword] = await Promise.all([
      runCli("create", "team/chat.jsonl", "--db", db),
      runCli("verify", "no-such-chat", "--db", db),
      runCli("verify", "no-such-chat", "--db", url.toString())
    ])
    expect([created.code, created.stdout]).toEqual([0, "team/chat.jsonl\n"])
    expect([missing.code, firstWord(missing.stderr)]).toEqual([1, "SESSION_NOT_FOUND"])
    expect(missing.stderr).toContain("\"no-such-chat\"")
    expect(missing.stderr).toContain(named())
    expect(wrongPassword.code).toBe(1)
    expect(wrongPassword.stderr).not.toContain("s3cret-password")
    expect(wrongPassword.stderr).toContain(named())
  })

  it("file errors name the path", async ({ expect }) => {
    const dir = tempDir()
    const missing = Path.join(dir, "missing.jsonl")
    const [verify, json, append] = await Promise.all([
      runCli("verify", missing),
      runCli("verify", missing, "--json"),
      runCli("append", missing, "--user", "hi")
    ])
    for (const run of [verify, append]) {
      expect([run.code, firstWord(run.stderr)]).toEqual([1, "SESSION_NOT_FOUND"])
      expect(run.stderr).toContain(missing)
    }
    expect(JSON.parse(json.stdout)).toEqual({ ok: false, code: "SESSION_NOT_FOUND", message: expect.stringContaining(missing) })
  })
})

/**
 * `session-tree delete PATH` and `delete ID --db URL`: the whole session goes, the command
 * prints what it deleted, and every failure is code-first on stderr (exit 1) or wrong usage (exit 2).
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { firstWord, removeTempDirs, runCli, STACK_FRAME, tempDir } from "./support.js"

let scope: Scope.CloseableScope
let db: string

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("cli_delete"), scope))
}, 60_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const expectFailure = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, code: string) => {
  expect([run.code, firstWord(run.stderr), run.stdout]).toEqual([1, code, ""])
  expect(run.stderr).not.toMatch(STACK_FRAME)
}

describe("session-tree delete", { timeout: 180_000 }, () => {
  it("deletes a session file and its blob directory, says what it deleted; then SESSION_NOT_FOUND", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "chat.jsonl")
    const other = Path.join(dir, "other.jsonl")
    expect((await runCli("create", path, "--id", "chat-1")).code).toBe(0)
    expect((await runCli("append", path, "--user", "hello")).code).toBe(0)
    expect((await runCli("create", other, "--id", "other")).code).toBe(0)
    NFS.mkdirSync(`${path}.blobs`)
    NFS.writeFileSync(Path.join(`${path}.blobs`, "b".repeat(64)), "blob")
    const deleted = await runCli("delete", path)
    expect([deleted.code, deleted.stdout, deleted.stderr]).toEqual([0, `deleted ${path}: session chat-1, 1 entries\n`, ""])
    expect(NFS.readdirSync(dir)).toEqual(["other.jsonl"])
    const listed = JSON.parse((await runCli("list", dir, "--json")).stdout) as Array<{ readonly location: string }>
    expect(listed.map((l) => l.location)).toEqual([other])
    expectFailure(expect, await runCli("verify", path), "SESSION_NOT_FOUND")
    const again = await runCli("delete", path)
    expectFailure(expect, again, "SESSION_NOT_FOUND")
    expect(again.stderr).toContain(path)
  })

  it("deletes a session that does not load; --json prints what it deleted", async ({ expect }) => {
    const dir = tempDir()
    const broken = Path.join(dir, "broken.jsonl")
    NFS.writeFileSync(broken, "{not a session\n")
    const text = await runCli("delete", broken)
    expect([text.code, text.stdout]).toEqual([0, `deleted ${broken} (it did not load: SESSION_INVALID_JSON)\n`])
    const path = Path.join(dir, "chat.jsonl")
    await runCli("create", path, "--id", "chat-2")
    const json = await runCli("delete", path, "--json")
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({ ok: true, location: path, id: "chat-2", entries: 0 })
    expect(NFS.readdirSync(dir)).toEqual([])
  })

  it("a recovery marker beside the file: exit 1, SESSION_BUSY naming recover, nothing deleted; a symlink is refused", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "chat.jsonl")
    await runCli("create", path, "--id", "chat-3")
    NFS.linkSync(path, `${path}.marker`)
    const busy = await runCli("delete", path)
    expectFailure(expect, busy, "SESSION_BUSY")
    expect(busy.stderr).toContain(`session-tree recover ${path}`)
    expect(NFS.readdirSync(dir).sort()).toEqual(["chat.jsonl", "chat.jsonl.marker"])
    NFS.unlinkSync(`${path}.marker`)
    const link = Path.join(dir, "link.jsonl")
    NFS.symlinkSync(path, link)
    expectFailure(expect, await runCli("delete", link), "SESSION_NOT_REGULAR_FILE")
    expect(NFS.readdirSync(dir).sort()).toEqual(["chat.jsonl", "link.jsonl"])
  })

  it("wrong usage exits 2: no PATH, two PATHs, --files with --db", async ({ expect }) => {
    expect((await runCli("delete")).code).toBe(2)
    expect((await runCli("delete", "a.jsonl", "b.jsonl")).code).toBe(2)
    expect((await runCli("delete", "a", "--files", "--db", db)).code).toBe(2)
    expect((await runCli("delete", "a.jsonl", { env: { SESSION_TREE_DB: db } })).code).toBe(2)
  })

  it("--db: deletes a session by ID, leaves the others; then SESSION_NOT_FOUND", async ({ expect }) => {
    expect((await runCli("migrate", "--db", db)).code).toBe(0)
    expect((await runCli("create", "chat-1", "--db", db)).code).toBe(0)
    expect((await runCli("append", "chat-1", "--user", "hello", "--db", db)).code).toBe(0)
    expect((await runCli("create", "chat-2", "--db", db)).code).toBe(0)
    const deleted = await runCli("delete", "chat-1", "--db", db)
    expect([deleted.code, deleted.stdout]).toEqual([0, "deleted chat-1: session chat-1, 1 entries\n"])
    const listed = JSON.parse((await runCli("list", "--json", "--db", db)).stdout) as Array<{ readonly location: string }>
    expect(listed.map((l) => l.location)).toEqual(["chat-2"])
    const again = await runCli("delete", "chat-1", "--db", db)
    expectFailure(expect, again, "SESSION_NOT_FOUND")
    expect(again.stderr).toContain("chat-1")
  })
})

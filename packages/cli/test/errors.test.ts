/**
 * Errors in a user's words: the code, then the cause and the path or database it is about, on
 * a first line of at most about 200 characters (paths aside); the library's detail (a Schema's
 * union of shapes) only with --verbose or --json. `recover` of a path with no session is
 * SESSION_NOT_FOUND; `list` of a file says it wants a directory; `--db` that is no URL is wrong
 * usage; an unknown `--leaf` names the session; a directory that is not writable is named, with
 * the remedy, instead of the library's temporary and lock files.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { firstWord, removeTempDirs, runCli, STACK_FRAME, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

/** The first line of stderr, without the paths it names (which do not count against its length). */
const wordsOf = (stderr: string, ...paths: ReadonlyArray<string>): string =>
  paths.reduce((line, path) => line.replaceAll(path, ""), stderr.split("\n")[0]!)

const failed = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, code: string, ...paths: ReadonlyArray<string>) => {
  expect([run.code, firstWord(run.stderr), run.stdout]).toEqual([1, code, ""])
  expect(run.stderr).not.toMatch(STACK_FRAME)
  expect(wordsOf(run.stderr, ...paths).length, run.stderr).toBeLessThanOrEqual(200)
}

/** The user that owns nothing here, for permissions root would ignore. */
const NOBODY = 65534

describe.concurrent("session-tree words its errors for a user (third round)", { timeout: 180_000 }, () => {
  it("--message with one wrong field: the field first, the Schema's union only with --verbose", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    expect((await runCli("create", path)).code).toBe(0)
    const before = NFS.readFileSync(path)
    const noId = JSON.stringify({ role: "user", content: "no id" })
    const badPart = JSON.stringify({ role: "user", id: "m", content: [{ type: "txt", text: "x" }] })
    const [plain, verbose, part] = [
      await runCli("append", path, "--message", noId),
      await runCli("append", path, "--message", noId, "--verbose"),
      await runCli("append", path, "--message", badPart)
    ]
    failed(expect, plain, "SESSION_INVALID_MESSAGE", path)
    expect(plain.stderr).toBe(`SESSION_INVALID_MESSAGE --message: id is missing: ${path}\n`)
    failed(expect, part, "SESSION_INVALID_MESSAGE", path)
    expect(part.stderr).toBe(`SESSION_INVALID_MESSAGE --message: content[0].type: expected "text" | "file", got "txt": ${path}\n`)
    // With --verbose, the same first line and the library's whole detail under it.
    expect(verbose.stderr.split("\n")[0]).toBe(plain.stderr.trimEnd())
    expect(verbose.stderr).toMatch(/\n {2}detail: .*readonly role.*└─/)
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
  })

  it("a damaged record: the field at fault, not the union of every record's shape", async ({ expect }) => {
    const path = Path.join(tempDir(), "v1.jsonl")
    NFS.writeFileSync(
      path,
      `{"type":"session","version":1,"id":"v1","timestamp":"2026-01-02T03:04:05.006Z"}\n` +
        `{"type":"entry","id":"e1","parentId":null,"timestamp":"2026-01-02T03:04:05.006Z","message":{"role":"user","content":"x"}}\n`
    )
    const [words, json] = [await runCli("verify", path), await runCli("verify", path, "--json")]
    failed(expect, words, "SESSION_INVALID_RECORD", path)
    expect(words.stderr).toBe(`SESSION_INVALID_RECORD version is missing: ${path} (line 2)\n`)
    // --json is for programs: the whole of it.
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, code: "SESSION_INVALID_RECORD", line: 2 })
    expect(json.stderr).toMatch(/detail: .*readonly type: "entry"/)
  })

  it("recover on a path with no session is SESSION_NOT_FOUND, and leaves nothing behind", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "nope.jsonl")
    const run = await runCli("recover", path)
    failed(expect, run, "SESSION_NOT_FOUND", path)
    expect(run.stderr).toContain(path)
    expect(NFS.readdirSync(dir)).toEqual([])
  })

  it("list of a file says it takes a directory, and which one to list", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "a.jsonl")
    await writeConversation(path)
    const run = await runCli("list", path)
    failed(expect, run, "SESSION_NOT_REGULAR_FILE", path, dir)
    expect(run.stderr).toMatch(/takes a directory, and this is a file/)
    expect(run.stderr).toContain(`session-tree list ${dir}`)
    expect(run.stderr).not.toMatch(/ENOTDIR|readdir/)
  })

  it("--db that is not a URL, or SESSION_TREE_DB that is not, is wrong usage that shows no part of it", async ({ expect }) => {
    const [option, env] = [
      await runCli("list", "--db", "notaurl-s3cret"),
      await runCli("list", { env: { SESSION_TREE_DB: "notaurl-s3cret" } })
    ]
    for (const run of [option, env]) {
      expect([run.code, run.stdout]).toEqual([2, ""])
      expect(run.stderr).toMatch(/^usage: (--db|SESSION_TREE_DB) is not a PostgreSQL URL: give one like postgres:\/\//)
      expect(run.stderr).not.toMatch(/getaddrinfo|ENOTFOUND|s3cret/)
    }
    expect(env.stderr).toMatch(/^usage: SESSION_TREE_DB /)
  })

  it("log --leaf that is no entry names the session", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const [words, json] = [await runCli("log", path, "--leaf", "nope"), await runCli("log", path, "--leaf", "nope", "--json")]
    for (const run of [words, json]) {
      failed(expect, run, "SESSION_UNKNOWN_ENTRY", path)
      expect(run.stderr.split("\n")[0]).toBe(`SESSION_UNKNOWN_ENTRY "nope" is not an entry of this session: ${path}`)
    }
  })

  it("a directory that is not writable: the session and the directory, with the remedy, no temporary or lock file", async ({ expect }) => {
    const parent = tempDir()
    NFS.chmodSync(parent, 0o755)
    const dir = Path.join(parent, "read-only")
    NFS.mkdirSync(dir)
    const existing = Path.join(dir, "s.jsonl")
    await writeConversation(existing)
    NFS.chmodSync(existing, 0o644)
    const before = NFS.readFileSync(existing)
    // Root ignores permission bits: run as a user who may not write here.
    const asUser = process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY, env: { SESSION_TREE_NO_CODE_CACHE: "1" } } : (NFS.chmodSync(dir, 0o555), {})
    const created = Path.join(dir, "new.jsonl")
    const [create, append] = [
      await runCli("create", created, asUser),
      await runCli("append", existing, "--user", "hi", asUser)
    ]
    for (const [run, session] of [[create, created], [append, existing]] as const) {
      failed(expect, run, "SESSION_IO", session, dir)
      expect(run.stderr).toContain(`the session ${session} cannot be written`)
      expect(run.stderr).toContain(`the directory ${dir}`)
      expect(run.stderr).toMatch(/permission denied/)
      expect(run.stderr).toContain(`chmod u+w ${dir}`)
      expect(run.stderr).not.toMatch(/\.tmp-|\.marker|symlink|lock|intent|EACCES/)
    }
    expect(NFS.readdirSync(dir)).toEqual(["s.jsonl"])
    expect(NFS.readFileSync(existing).equals(before)).toBe(true)
  })
})

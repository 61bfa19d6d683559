/**
 * Errors in a user's words: the cause first, the remedy where there is one, the
 * error code still the first word on stderr. A Pi file gets a hint to use
 * `--from pi`; a wrong field of `--message` is named by its path; `append`
 * without a message says one is required; a byte order mark is shown by name;
 * `verify` tells that a recovery marker blocks appends.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { firstWord, removeTempDirs, runCli, STACK_FRAME, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

const INTERNAL = /generation|\bstore\b|writer|Recovery\.recover/

const failed = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, code: string) => {
  expect([run.code, firstWord(run.stderr), run.stdout]).toEqual([1, code, ""])
  expect(run.stderr).not.toMatch(STACK_FRAME)
  expect(run.stderr).not.toMatch(INTERNAL)
}

describe.concurrent("session-tree words its errors for a user", { timeout: 180_000 }, () => {
  it("a Pi file read as a session gets the hint, and import detects it; a BOM is shown by name", async ({ expect }) => {
    const dir = tempDir()
    const pi = Path.join(dir, "pi.jsonl")
    NFS.writeFileSync(pi, `{"type":"session","version":3,"id":"p","timestamp":"2026-01-02T03:04:05.006Z","cwd":"/"}\n`)
    const bom = Path.join(dir, "bom.jsonl")
    NFS.writeFileSync(bom, `\uFEFF{"type":"session","version":1,"id":"b","timestamp":"2026-01-02T03:04:05.006Z"}\n`)
    const [imported, verified, marked] = await Promise.all([
      runCli("import", pi, "--to", Path.join(dir, "x.jsonl")),
      runCli("verify", pi),
      runCli("verify", bom)
    ])
    expect(imported).toEqual({ code: 0, stdout: "p\n", stderr: "" })
    failed(expect, verified, "SESSION_UNSUPPORTED_VERSION")
    expect(verified.stderr).toMatch(/Pi session/)
    expect(verified.stderr).toContain("session-tree import FILE --to PATH")
    failed(expect, marked, "SESSION_INVALID_JSON")
    expect(marked.stderr).toContain("U+FEFF (byte order mark)")
    expect(marked.stderr).not.toContain("\uFEFF")
  })

  it("--message with one wrong field names the field and what was expected, not the whole union", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const before = NFS.readFileSync(path)
    const call = { role: "assistant", id: "m", content: "x", toolCalls: [{ id: "c", name: "n", arguments: 3 }] }
    const [args, role, extra] = await Promise.all([
      runCli("append", path, "--message", JSON.stringify(call)),
      runCli("append", path, "--message", JSON.stringify({ role: "robot", id: "m", content: "" })),
      runCli("append", path, "--message", JSON.stringify({ role: "user", id: "m", content: "", mood: "happy" }))
    ])
    for (const run of [args, role, extra]) {
      failed(expect, run, "SESSION_INVALID_MESSAGE")
      expect(run.stderr).not.toMatch(/readonly/)
      expect(run.stderr.length).toBeLessThan(300)
    }
    expect(args.stderr).toMatch(/toolCalls\[0\]\.arguments/)
    expect(args.stderr).toMatch(/a JSON object.*3/)
    expect(role.stderr).toMatch(/role/)
    expect(role.stderr).toContain("\"robot\"")
    expect(extra.stderr).toMatch(/mood/)
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
  })

  it("append with neither --user nor --message says exactly one of them is required", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const [neither, both] = await Promise.all([
      runCli("append", path),
      runCli("append", path, "--user", "a", "--message", "{}")
    ])
    for (const run of [neither, both]) {
      expect([run.code, run.stdout]).toEqual([2, ""])
      expect(run.stderr).toMatch(/exactly one of --user and --message/)
    }
  })

  it("verify of a session a recovery marker blocks says it loads but appends are blocked until recover", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    NFS.linkSync(path, `${path}.marker`)
    const [words, json] = await Promise.all([runCli("verify", path), runCli("verify", path, "--json")])
    expect(words.code).toBe(0)
    expect(words.stdout.split("\n")[0]).toBe("ok 5 entries, leaf entry-005, tail none")
    expect(words.stdout).toMatch(/appends are blocked/)
    expect(words.stdout).toContain(`session-tree recover ${path}`)
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout)
    expect(report).toEqual({ ok: true, entries: 5, leaf: "entry-005", tail: "none", blocked: expect.stringMatching(/^SESSION_BUSY appends are blocked/) })
    expect(report.blocked).toContain(`session-tree recover ${path}`)
    expect(words.stdout + report.blocked).not.toMatch(INTERNAL)
  })
})

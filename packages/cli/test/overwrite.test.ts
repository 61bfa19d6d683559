/**
 * The command never replaces what it did not create: `export --out` refuses an
 * existing file unless `--force`, and never replaces a session (a file that
 * starts with a session header) even then; the commands that make a new session
 * (`create`, `fork --to`, `import --to`) refuse any existing path.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { firstWord, removeTempDirs, runCli, STACK_FRAME, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

const refused = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, path: string) => {
  expect([run.code, firstWord(run.stderr), run.stdout]).toEqual([1, "SESSION_EXISTS", ""])
  expect(run.stderr).toContain(path)
  expect(run.stderr).not.toMatch(STACK_FRAME)
}

describe.concurrent("session-tree never overwrites", { timeout: 180_000 }, () => {
  it("export --out refuses an existing file unless --force, and a session even with --force", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    const victim = Path.join(dir, "victim.jsonl")
    const notes = Path.join(dir, "notes.txt")
    const pi = Path.join(dir, "pi.jsonl")
    const torn = Path.join(dir, "torn.jsonl")
    await Promise.all([writeConversation(source), writeConversation(victim)])
    NFS.writeFileSync(notes, "my notes\n")
    // Sessions that do not load here are still sessions: another format's, or a damaged one.
    NFS.writeFileSync(pi, `{"type":"session","version":3,"id":"p","timestamp":"2026-01-02T03:04:05.006Z","cwd":"/"}\n`)
    NFS.writeFileSync(torn, `{"type":"session","version":1,"id":"t","timest`)
    const before = new Map([victim, notes, pi, torn, source].map((p) => [p, NFS.readFileSync(p)]))
    const [html, text, forcedVictim, forcedPi, forcedTorn, forcedSelf] = await Promise.all([
      runCli("export", source, "--format", "html", "--out", victim),
      runCli("export", source, "--out", notes),
      runCli("export", source, "--format", "html", "--out", victim, "--force"),
      runCli("export", source, "--out", pi, "--force"),
      runCli("export", source, "--out", torn, "--force"),
      runCli("export", source, "--format", "markdown", "--out", source, "--force")
    ])
    refused(expect, html, victim)
    expect(html.stderr).toMatch(/--force/)
    refused(expect, text, notes)
    for (const [run, path] of [[forcedVictim, victim], [forcedPi, pi], [forcedTorn, torn], [forcedSelf, source]] as const) {
      refused(expect, run, path)
      expect(run.stderr).toMatch(/session/)
    }
    for (const [path, bytes] of before) expect(NFS.readFileSync(path).equals(bytes), path).toBe(true)
    expect(NFS.readdirSync(dir).sort()).toEqual(["notes.txt", "pi.jsonl", "s.jsonl", "torn.jsonl", "victim.jsonl"])

    // --force replaces a file that is not a session; a new path needs no --force.
    const [forced, fresh] = await Promise.all([
      runCli("export", source, "--format", "markdown", "--out", notes, "--force"),
      runCli("export", source, "--out", Path.join(dir, "new.jsonl"))
    ])
    expect([forced.code, forced.stdout, forced.stderr]).toEqual([0, "", ""])
    expect(NFS.readFileSync(notes, "utf8")).toMatch(/^# Session `s-1`/)
    expect(fresh.code).toBe(0)
    expect(NFS.readFileSync(Path.join(dir, "new.jsonl")).equals(before.get(source)!)).toBe(true)
    expect(NFS.readdirSync(dir).sort()).toEqual(["new.jsonl", "notes.txt", "pi.jsonl", "s.jsonl", "torn.jsonl", "victim.jsonl"])
  })

  it("create, fork --to and import --to refuse any existing path, a session or not, and name it", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    await writeConversation(source)
    const notes = Path.join(dir, "notes.txt")
    NFS.writeFileSync(notes, "my notes\n")
    const before = NFS.readFileSync(source)
    const runs = await Promise.all([
      runCli("create", notes),
      runCli("fork", source, "--leaf", "entry-001", "--to", notes),
      runCli("import", source, "--to", notes),
      runCli("import", source, "--to", source)
    ])
    for (const [i, run] of runs.entries()) refused(expect, run, i === 3 ? source : notes)
    expect(NFS.readFileSync(notes, "utf8")).toBe("my notes\n")
    expect(NFS.readFileSync(source).equals(before)).toBe(true)
  })
})

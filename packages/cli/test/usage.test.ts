/**
 * Wrong usage, in a user's words: an unknown option or command suggests the nearest one, an
 * option without its value says so (instead of taking the option's name for a PATH), `help
 * [COMMAND]` is the help, and every help page starts once with the name.
 */
import * as NFS from "node:fs"
import { afterAll, describe, it } from "vitest"
import { removeTempDirs, runCli, tempDir } from "./support.js"

afterAll(removeTempDirs)

const usage = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }) => {
  expect([run.code, run.stdout]).toEqual([2, ""])
  expect(run.stderr).toMatch(/^usage: /)
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1)
  expect(run.stderr.length).toBeLessThanOrEqual(200)
}

/** The commands the top-level help lists, in its order. */
const commandsOf = (help: string): Array<string> =>
  [...help.slice(help.indexOf("\nCOMMANDS")).matchAll(/^ *- (?<name>[a-z]+)\b/gm)].map((m) => m.groups!["name"]!)

describe.concurrent("session-tree's usage errors and help", { timeout: 180_000 }, () => {
  it("an unknown option suggests the nearest of the command's options", async ({ expect }) => {
    const [usr, fromat, mess] = [
      await runCli("append", "s.jsonl", "--usr", "hi"),
      await runCli("export", "s.jsonl", "--fromat", "markdown"),
      await runCli("append", "s.jsonl", "--mess", "{}")
    ]
    for (const run of [usr, fromat, mess]) usage(expect, run)
    expect(usr.stderr).toBe("usage: append has no option --usr; did you mean --user? (see session-tree append --help)\n")
    expect(fromat.stderr).toMatch(/export has no option --fromat; did you mean --format\?/)
    expect(mess.stderr).toMatch(/did you mean --message or --message-file\?/)
  })

  it("an unknown command suggests the nearest command; nothing close lists them all", async ({ expect }) => {
    const [expor, frob] = [await runCli("expor", "s.jsonl"), await runCli("frobnicate")]
    for (const run of [expor, frob]) usage(expect, run)
    expect(expor.stderr).toBe("usage: session-tree has no command \"expor\"; did you mean export? (see session-tree --help)\n")
    // Every command the help lists, in its order.
    expect(frob.stderr).toBe(`usage: session-tree has no command "frobnicate" (the commands: ${commandsOf((await runCli("--help")).stdout).join(", ")})\n`)
  })

  it("an option without its value is wrong usage, not a PATH named after the option", async ({ expect }) => {
    const dir = tempDir()
    const [id, user] = [await runCli("create", "--id", { cwd: dir }), await runCli("append", "s.jsonl", "--user")]
    for (const run of [id, user]) usage(expect, run)
    expect(id.stderr).toMatch(/^usage: --id needs a value \(create --id ID\)/)
    expect(user.stderr).toMatch(/^usage: --user needs a value \(append --user TEXT\)/)
    expect(NFS.readdirSync(dir)).toEqual([])
  })

  it("the parser's other refusals in words: a missing option, argument or choice", async ({ expect }) => {
    const [leaf, path, format] = [
      await runCli("fork", "a.jsonl", "--to", "b.jsonl"),
      await runCli("append"),
      await runCli("export", "a.jsonl", "--format", "pdf")
    ]
    for (const run of [leaf, path, format]) usage(expect, run)
    expect(leaf.stderr).toMatch(/^usage: fork needs --leaf ENTRY/)
    expect(path.stderr).toMatch(/^usage: append needs PATH/)
    expect(format.stderr).toMatch(/^usage: --format takes jsonl, markdown, html, not "pdf"/)
  })

  it("help [COMMAND] is the help; every help page starts once with the name and version", async ({ expect }) => {
    const [help, top, helpAppend, append] = [
      await runCli("help"),
      await runCli("--help"),
      await runCli("help", "append"),
      await runCli("append", "--help")
    ]
    expect([help.code, helpAppend.code]).toEqual([0, 0])
    expect(help.stdout).toBe(top.stdout)
    expect(helpAppend.stdout).toBe(append.stdout)
    for (const page of [top.stdout, append.stdout]) {
      expect(page.startsWith("session-tree 0.1.0\n")).toBe(true)
      expect(page.match(/^session-tree( 0\.1\.0)?$/gm)).toEqual(["session-tree 0.1.0"])
    }
    expect(top.stdout).toMatch(/^--verbose /m)
  })

  it("the help of every command the top-level help lists starts once with the name", async ({ expect }) => {
    const commands = commandsOf((await runCli("--help")).stdout)
    expect(commands).toEqual(expect.arrayContaining(["create", "append", "export", "list", "fork", "recover"]))
    const pages = await Promise.all(commands.map((command) => runCli(command, "--help")))
    for (const [i, page] of pages.entries()) {
      expect([page.code, page.stderr], commands[i]).toEqual([0, ""])
      expect(page.stdout.startsWith("session-tree 0.1.0\n"), commands[i]).toBe(true)
      expect(page.stdout.match(/^session-tree( 0\.1\.0)?$/gm), commands[i]).toEqual(["session-tree 0.1.0"])
    }
  })
})

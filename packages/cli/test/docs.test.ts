/**
 * `docs/cli.md` shows the help as a user sees it: each of its ```text blocks
 * that starts with `$ session-tree …` holds exactly what that command prints.
 * It also checks what the help promises: usage lines with the command's name,
 * no line that only restates an option's type, the built-in options once.
 */
import * as NFS from "node:fs"
import { describe, it } from "vitest"
import { runCli } from "./support.js"

const doc = NFS.readFileSync(new URL("../../../docs/cli.md", import.meta.url), "utf8")

const examples = [...doc.matchAll(/```text\n\$ session-tree([^\n]*)\n([\s\S]*?)\n```/g)].map((m) => ({
  args: m[1]!.trim().split(/\s+/).filter((w) => w !== ""),
  output: m[2]!
}))

describe.concurrent("docs/cli.md", { timeout: 180_000 }, () => {
  it("holds the top-level help and a command's", ({ expect }) => {
    expect(examples.map((e) => e.args.join(" "))).toEqual(["--help", "export --help"])
  })

  for (const example of examples) {
    it(`shows what session-tree ${example.args.join(" ")} prints`, async ({ expect }) => {
      const run = await runCli(...example.args)
      expect(run.code).toBe(0)
      expect(run.stdout.trimEnd()).toBe(example.output)
    })
  }

  it("help a person reads: every option described, usage lines with the command's name, built-in options once", async ({ expect }) => {
    const commands = ["create", "append", "verify", "recover", "delete", "log", "tree", "list", "fork", "export", "import", "sync", "migrate", "search", "stats", "serve"]
    const [top, ...helps] = await Promise.all([runCli("--help"), ...commands.map((c) => runCli(c, "--help"))])
    expect(top!.stdout).toMatch(/^BUILT-IN OPTIONS/m)
    expect(top!.stdout.match(/--completions/g)).toHaveLength(1)
    for (const [i, help] of helps.entries()) {
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(new RegExp(`^session-tree ${commands[i]}\\b`, "m"))
      expect(help.stdout).not.toMatch(/^\$ /m)
      expect(help.stdout).not.toMatch(/A user-defined piece of text|A true or false value|This setting is optional/)
      expect(help.stdout).not.toMatch(/--completions|--log-level|--wizard/)
      // Every option and argument has a line of its own words under it.
      const blocks = help.stdout.split("\n\n").map((b) => b.trim())
      blocks.forEach((block, k) => {
        if (/^(--[a-z-]+|<[A-Z]+>)/.test(block) && !block.includes("\n")) expect(blocks[k + 1] ?? "", block).toMatch(/^[a-z"$]/)
      })
    }
  })
})

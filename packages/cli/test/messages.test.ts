/**
 * Messages longer than a command line holds: `append --user-file PATH`, `--message-file PATH`,
 * and `-` (stdin) for `--user` and `--message`. Up to the store's cap (a line of 1 MiB in a
 * version-2 session) a message is stored exactly, byte for byte; over it, SESSION_LINE_TOO_LONG
 * and nothing written. The same checks as `--message` and `--user`: a wrong field is named, bad
 * UTF-8 refused, and exactly one source is required.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { firstWord, records, removeTempDirs, runCli, STACK_FRAME, tempDir } from "./support.js"

afterAll(removeTempDirs)

/**
 * A text of exactly `n` bytes of UTF-8: lines of ASCII with multi-byte characters, a tab and a
 * carriage return now and then (which JSON escapes, so the stored line is a little longer).
 */
const textOf = (n: number): string => {
  const unit = "A line of a long message, with é and 😀 in it, and words enough to make it longer.\tEnd\r\n"
  const whole = unit.repeat(Math.floor(n / Buffer.byteLength(unit)))
  return whole + "x".repeat(n - Buffer.byteLength(whole))
}

const MiB = 1_048_576

/** A fresh version-2 session and its bytes. */
const session = async () => {
  const path = Path.join(tempDir(), "s.jsonl")
  const created = await runCli("create", path, "--id", "s")
  if (created.code !== 0) throw new Error(created.stderr)
  return { path, before: NFS.readFileSync(path) }
}

/** The content of the user message of the last entry of `path`, as stored. */
const lastUserText = (path: string): string => {
  const entry = records(path).at(-1)! as { message: { role: string; content: Array<{ type: string; text: string }> } }
  if (entry.message.role !== "user") throw new Error(`the last entry is a ${entry.message.role} message`)
  return entry.message.content.map((part) => part.text).join("")
}

const refused = (expect: import("vitest").ExpectStatic, run: { code: number; stdout: string; stderr: string }, code: string) => {
  expect([run.code, firstWord(run.stderr), run.stdout]).toEqual([1, code, ""])
  expect(run.stderr).not.toMatch(STACK_FRAME)
}

describe.concurrent("session-tree append from a file or stdin", { timeout: 180_000 }, () => {
  it("--user-file and --user - store a message near the cap exactly, byte for byte", async ({ expect }) => {
    const { path } = await session()
    const text = textOf(MiB - 65_536)
    const file = Path.join(tempDir(), "message.txt")
    NFS.writeFileSync(file, text)
    const fromFile = await runCli("append", path, "--user-file", file)
    expect([fromFile.code, fromFile.stderr]).toEqual([0, ""])
    expect(lastUserText(path)).toBe(text)
    const fromStdin = await runCli("append", path, "--user", "-", { input: text })
    expect([fromStdin.code, fromStdin.stderr]).toEqual([0, ""])
    expect(lastUserText(path)).toBe(text)
    // The second is a child of the first: the newest entry is the default parent.
    const [, first, second] = records(path) as Array<{ id: string; parentId: string | null }>
    expect(second!.parentId).toBe(first!.id)
  })

  it("--message-file and --message - take Message IR JSON, formatted or not, up to the cap", async ({ expect }) => {
    const { path } = await session()
    const text = textOf(MiB - 65_536)
    const message = { role: "user", id: "m-big", content: [{ type: "text", text }] }
    const file = Path.join(tempDir(), "message.json")
    // Formatted JSON takes more bytes than the line it becomes.
    NFS.writeFileSync(file, JSON.stringify(message, null, 2))
    const fromFile = await runCli("append", path, "--message-file", file)
    expect([fromFile.code, fromFile.stderr]).toEqual([0, ""])
    expect(lastUserText(path)).toBe(text)
    const fromStdin = await runCli("append", path, "--message", "-", { input: JSON.stringify({ ...message, id: "m-big-2" }) })
    expect([fromStdin.code, fromStdin.stderr]).toEqual([0, ""])
    expect(lastUserText(path)).toBe(text)
  })

  it("a 2 MiB message is refused with SESSION_LINE_TOO_LONG from a file and from stdin, and nothing is written", async ({ expect }) => {
    const { before, path } = await session()
    const text = textOf(2 * MiB)
    const textFile = Path.join(tempDir(), "big.txt")
    NFS.writeFileSync(textFile, text)
    const jsonFile = Path.join(tempDir(), "big.json")
    const json = JSON.stringify({ role: "user", id: "m", content: [{ type: "text", text }] })
    NFS.writeFileSync(jsonFile, json)
    const runs = [
      await runCli("append", path, "--user-file", textFile),
      await runCli("append", path, "--user", "-", { input: text }),
      await runCli("append", path, "--message-file", jsonFile),
      await runCli("append", path, "--message", "-", { input: json })
    ]
    for (const run of runs) {
      refused(expect, run, "SESSION_LINE_TOO_LONG")
      expect(run.stderr).toMatch(/1,048,576|1048576/)
    }
    expect(runs[0]!.stderr).toContain(`--user-file ${textFile}`)
    expect(runs[1]!.stderr).toContain("--user - (stdin)")
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
  })

  it("the same checks as --message: a wrong field named, no JSON, bad UTF-8, a missing file", async ({ expect }) => {
    const { before, path } = await session()
    const dir = tempDir()
    const wrong = Path.join(dir, "wrong.json")
    NFS.writeFileSync(wrong, JSON.stringify({ role: "user", content: [{ type: "text", text: "no id" }] }))
    const notUtf8 = Path.join(dir, "latin1.txt")
    NFS.writeFileSync(notUtf8, Buffer.from([0x63, 0x61, 0x66, 0xe9]))
    const [field, notJson, badText, missing] = [
      await runCli("append", path, "--message-file", wrong),
      await runCli("append", path, "--message", "-", { input: "{ not json" }),
      await runCli("append", path, "--user-file", notUtf8),
      await runCli("append", path, "--user-file", Path.join(dir, "nope.txt"))
    ]
    refused(expect, field, "SESSION_INVALID_MESSAGE")
    expect(field.stderr).toMatch(/^SESSION_INVALID_MESSAGE --message-file: id is missing/)
    refused(expect, notJson, "SESSION_INVALID_MESSAGE")
    expect(notJson.stderr).toMatch(/--message is not JSON/)
    refused(expect, badText, "SESSION_INVALID_UTF8")
    expect(badText.stderr).toContain(notUtf8)
    refused(expect, missing, "SESSION_NOT_FOUND")
    expect(missing.stderr).toContain("nope.txt")
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
  })

  it("exactly one source: two of them, or none, is wrong usage", async ({ expect }) => {
    const { path } = await session()
    const file = Path.join(tempDir(), "m.txt")
    NFS.writeFileSync(file, "hi")
    for (const args of [["--user", "a", "--user-file", file], ["--message-file", file, "--user", "-"], []]) {
      const run = await runCli("append", path, ...args)
      expect([run.code, run.stdout]).toEqual([2, ""])
      expect(run.stderr).toMatch(/^usage: append needs exactly one of --user and --message/)
    }
  })
})

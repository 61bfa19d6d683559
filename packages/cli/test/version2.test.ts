/**
 * The command on version-2 sessions: `append --message` with Message IR v2, what `log`, `tree`,
 * `list` and the exports show of it, `fork --version 2` of a version-1 session, and refusals
 * that name the field and leave the file as it was.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { records, removeTempDirs, runCli, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

const SIGNATURE = "c2lnbmVkIGJ5IHRoZSBwcm92aWRlcg=="

const append = async (path: string, message: unknown) => {
  const run = await runCli("append", path, "--message", JSON.stringify(message))
  if (run.code !== 0) throw new Error(`append failed: ${run.stderr}`)
  return run.stdout.trim()
}

describe.concurrent("session-tree on version 2", { timeout: 180_000 }, () => {
  it("append --message stores Message IR v2 exactly; log, tree, list and the exports show it", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "agent.jsonl")
    expect((await runCli("create", path, "--id", "agent-1")).code).toBe(0)
    await append(path, { role: "system", id: "m0", content: "Be brief." })
    const question = await append(path, { role: "user", id: "m1", content: [{ type: "text", text: "What is in /project?" }] })
    const reasoning = { type: "reasoning", text: "I should list it.", options: { anthropic: { signature: SIGNATURE } } }
    const step = {
      role: "assistant",
      id: "m2",
      content: [reasoning, { type: "text", text: "Let me look." }, { type: "tool-call", id: "c1", name: "list_dir", arguments: { path: "/project" } }],
      meta: { provider: "anthropic", model: "claude-x", usage: { inputTokens: 12, outputTokens: 7 }, stopReason: "tool-calls" }
    }
    const call = await append(path, step)
    await append(path, { role: "tool", id: "m3", toolCallId: "c1", toolName: "list_dir", isError: false, content: [{ type: "text", text: "README.md" }] })

    // The line is the message exactly, in canonical key order, the signature byte for byte.
    const stored = records(path)
    expect(stored.map((r) => r["version"])).toEqual([2, 2, 2, 2, 2])
    expect(stored[3]).toMatchObject({ id: call, parentId: question, kind: "message", message: step })
    expect(NFS.readFileSync(path, "utf8")).toContain(JSON.stringify(reasoning))

    const [log, tree, list, listJson, markdown, html, jsonl] = await Promise.all([
      runCli("log", path),
      runCli("tree", path),
      runCli("list", dir),
      runCli("list", dir, "--json"),
      runCli("export", path, "--format", "markdown", "--verbose"),
      runCli("export", path, "--format", "html"),
      runCli("export", path)
    ])
    for (const run of [log, tree, list, listJson, markdown, html, jsonl]) expect([run.code, run.stderr]).toEqual([0, ""])
    expect(log.stdout.split("\n").filter((l) => l !== "")).toHaveLength(4)
    expect(log.stdout).toMatch(/system/)
    expect(log.stdout).toMatch(/list_dir/)
    expect(tree.stdout).toMatch(/list_dir/)
    expect(JSON.parse(listJson.stdout)[0]).toMatchObject({ id: "agent-1", entries: 4, title: "What is in /project?" })
    expect(markdown.stdout).toMatch(/Be brief\./)
    expect(markdown.stdout).toMatch(/<details>/)
    // The model and its usage are shown with --verbose (a reader's transcript leaves them out: markdown-reader.test.ts of the views).
    expect(markdown.stdout).toMatch(/claude-x/)
    expect(html.stdout).toMatch(/<details/)
    expect(jsonl.stdout).toBe(NFS.readFileSync(path, "utf8"))
  })

  it("export --format markdown for a reader: no provider option, model or ID, a tool's output once; --verbose shows them", async ({ expect }) => {
    const path = Path.join(tempDir(), "reader.jsonl")
    expect((await runCli("create", path, "--id", "reader-1")).code).toBe(0)
    await append(path, { role: "user", id: "m1", content: [{ type: "text", text: "What is in /project?" }], options: { claude: { cache: true } } })
    await append(path, {
      role: "assistant",
      id: "m2",
      content: [
        { type: "reasoning", text: "I should list it.", options: { anthropic: { signature: SIGNATURE } } },
        { type: "tool-call", id: "c1", name: "list_dir", arguments: { path: "/project" } }
      ],
      meta: { provider: "anthropic", model: "claude-x", stopReason: "tool-calls" }
    })
    await append(path, {
      role: "tool",
      id: "m3",
      toolCallId: "c1",
      toolName: "list_dir",
      isError: false,
      content: [{ type: "text", text: "README-of-the-project.md" }],
      result: { files: ["README-of-the-project.md"] }
    })
    const [reader, verbose] = [await runCli("export", path, "--format", "markdown"), await runCli("export", path, "--format", "markdown", "--verbose")]
    for (const run of [reader, verbose]) expect([run.code, run.stderr]).toEqual([0, ""])
    expect(reader.stdout).not.toMatch(/options: `/)
    expect(reader.stdout).not.toMatch(/claude-x|`m[123]`|`c1`|Result:/)
    expect(reader.stdout.match(/README-of-the-project\.md/g)).toHaveLength(1)
    expect(reader.stdout).toMatch(/I should list it\./)
    expect(verbose.stdout).toContain("Message options: `claude`")
    expect(verbose.stdout).toContain("Reasoning options: `anthropic`")
    expect(verbose.stdout).toMatch(/claude-x/)
    expect(verbose.stdout).toContain("Result:")
  })

  it("a title entry names the session in list; append --message refuses a bad v2 message naming its field, writing nothing", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "titled.jsonl")
    expect((await runCli("create", path)).code).toBe(0)
    await append(path, { role: "user", id: "m1", content: [{ type: "text", text: "hello" }] })
    const before = NFS.readFileSync(path)
    const bad = await runCli("append", path, "--message", JSON.stringify({ role: "user", id: "m2", content: [{ type: "text", text: "x", extra: 1 }] }))
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/^SESSION_INVALID_MESSAGE /)
    expect(bad.stderr).toMatch(/content/)
    const emptyMeta = await runCli("append", path, "--message", JSON.stringify({ role: "assistant", id: "m2", content: [], meta: {} }))
    expect(emptyMeta.stderr).toMatch(/^SESSION_INVALID_MESSAGE /)
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
    // A version-1 message is stored in its version-2 form.
    await append(path, { role: "assistant", id: "m3", content: "hi", toolCalls: [] })
    expect(records(path).at(-1)!["message"]).toEqual({ role: "assistant", id: "m3", content: [{ type: "text", text: "hi" }] })
  })

  it("fork --version 2 converts a version-1 session and says where it came from; a version-2 message to version 1 is refused", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "course.jsonl")
    const entries = await writeConversation(source)
    const leaf = entries.at(-1)!.id
    const [kept, converted] = await Promise.all([
      runCli("fork", source, "--leaf", leaf, "--to", Path.join(dir, "kept.jsonl")),
      runCli("fork", source, "--leaf", leaf, "--to", Path.join(dir, "v2.jsonl"), "--format-version", "2", "--id", "v2-copy")
    ])
    expect([kept.code, converted.code]).toEqual([0, 0])
    expect(records(Path.join(dir, "kept.jsonl"))[0]).toMatchObject({ version: 1 })
    const forked = records(Path.join(dir, "v2.jsonl"))
    expect(forked[0]).toEqual({ type: "session", version: 2, id: "v2-copy", timestamp: expect.any(String), forkedFrom: { session: "s-1", entry: leaf } })
    expect(forked.slice(1).map((r) => [r["id"], r["kind"], (r["message"] as { content: unknown }).content])).toEqual(
      entries.filter((e) => e.id === leaf || e.id === entries[0]!.id || e.id === entries.at(-1)!.parentId).map((e) => [
        e.id,
        "message",
        e.message.role === "assistant" && e.message.content === "" ? [] : [{ type: "text", text: e.message.content }]
      ])
    )
    const back = await runCli("fork", Path.join(dir, "v2.jsonl"), "--leaf", leaf, "--to", Path.join(dir, "down.jsonl"), "--format-version", "1")
    expect(back.code).toBe(1)
    expect(back.stderr).toMatch(/^SESSION_UNSUPPORTED_VERSION /)
    expect(NFS.existsSync(Path.join(dir, "down.jsonl"))).toBe(false)
    const before = NFS.readFileSync(source)
    const refused = await runCli("append", source, "--message", JSON.stringify({ role: "user", id: "m9", content: [{ type: "text", text: "x" }] }))
    expect(refused.stderr).toMatch(/^SESSION_INVALID_MESSAGE /)
    expect(NFS.readFileSync(source).equals(before)).toBe(true)
  })
})

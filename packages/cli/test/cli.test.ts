/**
 * The `session-tree` command as a user runs it: the real bin in a child process,
 * on session files in fresh temp directories. Tests run concurrently because a
 * spawn costs about a second of start-up; each one asserts all it can per spawn.
 */
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as V1 from "@session-tree/testing/Version1"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { runCommand } from "@session-tree/testing/Children"
import { image, loadPi, piAssistant, piToolResult, piUser, text, toolCall, writePi } from "../../core/test/support/pi.js"
import { withoutPi } from "../../core/test/support/piSkip.js"
import { bin, firstWord, otherBoot, records, removeTempDirs, runCli, STACK_FRAME, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

/** Every command of SPEC B6 and C5, in the order the help lists them. */
const COMMANDS = ["create", "append", "verify", "recover", "delete", "log", "tree", "list", "fork", "export", "import", "sync", "migrate", "search", "stats", "serve"]

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

const readOnly = (path: string) => Effect.runPromise(SessionStore.read(path).pipe(Effect.provide(FileJournal.layerWithFs())))

/** A failed run: exit 1, nothing on stdout, the code as first word on stderr, no stack trace. */
const expectFailure = (
  expect: import("vitest").ExpectStatic,
  run: { code: number; stdout: string; stderr: string },
  code: string
) => {
  expect(run.code).toBe(1)
  expect(firstWord(run.stderr)).toBe(code)
  expect(run.stderr).not.toMatch(STACK_FRAME)
  expect(run.stdout).toBe("")
}

/** What a terminal acts on: C0 controls (ESC), DEL, C1 controls (0x9b is a one-byte CSI), and U+2028/9. */
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029]/

/** A session whose session ID, entry IDs, tool name and tool-call ID carry an ESC sequence and C1 controls. */
const writeHostile = (path: string, csi: string, c1: string) => {
  let n = 0
  const ids = Layer.succeed(Ids.Ids, { sessionId: Effect.succeed(`s${csi}`), entryId: Effect.sync(() => `e${++n}${c1}`) })
  return Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path)
    const root = yield* store.append(null, { role: "user", id: "m-1", content: `title ${csi}${c1}` })
    const call = yield* store.append(root.id, {
      role: "assistant",
      id: "m-2",
      content: "",
      toolCalls: [{ id: `c${c1}`, name: `t${csi}`, arguments: { [c1]: 1 } }]
    })
    yield* store.append(call.id, { role: "tool", id: "m-3", toolCallId: `c${c1}`, toolName: `t${csi}`, content: c1, isError: false })
  })).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), ids))))
}

// Generous: on a loaded machine one spawn can take several seconds; a hang still fails.
describe.concurrent("session-tree", { timeout: 180_000 }, () => {
  it("create prints the session ID, refuses an existing path, and defaults to a random ID; an empty session verifies with leaf null", async ({ expect }) => {
    const dir = tempDir()
    const named = Path.join(dir, "named.jsonl")
    const random = Path.join(dir, "random.jsonl")
    const course = Path.join(dir, "course.jsonl")
    const [a, b, c] = await Promise.all([
      runCli("create", named, "--id", "s-42"),
      runCli("create", random),
      runCli("create", course, "--format-version", "1", "--id", "s-1")
    ])
    expect(a).toEqual({ code: 0, stdout: "s-42\n", stderr: "" })
    // Version 2, the agent format, unless version 1 is asked for.
    expect(records(named)).toEqual([{ type: "session", version: 2, id: "s-42", timestamp: expect.any(String) }])
    expect(c).toEqual({ code: 0, stdout: "s-1\n", stderr: "" })
    expect(records(course)).toEqual([{ type: "session", version: 1, id: "s-1", timestamp: expect.any(String) }])
    expect(b.code).toBe(0)
    expect(b.stdout.trim()).toMatch(UUID)
    expect(records(random)[0]).toMatchObject({ type: "session", id: b.stdout.trim() })

    const before = NFS.readFileSync(named)
    const [again, empty] = await Promise.all([runCli("create", named, "--id", "other"), runCli("verify", named, "--json")])
    expectFailure(expect, again, "SESSION_EXISTS")
    expect(NFS.readFileSync(named).equals(before)).toBe(true)
    expect(empty.code).toBe(0)
    expect(JSON.parse(empty.stdout)).toEqual({ ok: true, entries: 0, leaf: null, tail: "none" })
  })

  it("append --user defaults to the newest entry as parent and prints the new ID", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const run = await runCli("append", path, "--user", "And the tests?")
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    const loaded = await readOnly(path)
    expect(loaded.entries).toHaveLength(6)
    const added = loaded.entries[5]!
    expect(run.stdout).toBe(`${added.id}\n`)
    expect(added.parentId).toBe("entry-005")
    expect(V1.entry(added).message).toEqual({ role: "user", id: expect.any(String), content: "And the tests?" })
  })

  it("append --message with --parent attaches Message IR JSON where asked; --root starts a new root", async ({ expect }) => {
    const dir = tempDir()
    const a = Path.join(dir, "a.jsonl")
    const b = Path.join(dir, "b.jsonl")
    await Promise.all([writeConversation(a), writeConversation(b)])
    const message = { role: "assistant", id: "m-9", content: "It holds README.md and src/.", toolCalls: [] }
    const [parented, rooted] = await Promise.all([
      runCli("append", a, "--message", JSON.stringify(message), "--parent", "entry-003"),
      runCli("append", "--root", b, "--user", "A new topic")
    ])
    expect(parented.code).toBe(0)
    const lastA = (await readOnly(a)).entries.at(-1)!
    expect(parented.stdout).toBe(`${lastA.id}\n`)
    expect(lastA.parentId).toBe("entry-003")
    expect(V1.entry(lastA).message).toEqual(message)

    expect(rooted.code).toBe(0)
    const lastB = (await readOnly(b)).entries.at(-1)!
    expect(rooted.stdout).toBe(`${lastB.id}\n`)
    expect(lastB.parentId).toBeNull()
    expect(V1.entry(lastB).message).toMatchObject({ role: "user", content: "A new topic" })
  })

  it("append failures print the code first, exit 1 and leave the file as it was", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const before = NFS.readFileSync(path)
    // call-1 was made on the sibling branch (entry-002), not among the newest entry's ancestors.
    const orphan = { role: "tool", id: "m-9", toolCallId: "call-1", toolName: "list_dir", content: "x", isError: false }
    const [notJson, notIr, toolLink, unknownParent] = await Promise.all([
      runCli("append", path, "--message", "{\"role\":\"user\","),
      runCli("append", path, "--message", "{\"role\":\"robot\",\"id\":\"m-9\",\"content\":\"\"}"),
      runCli("append", path, "--message", JSON.stringify(orphan)),
      runCli("append", path, "--user", "hi", "--parent", "entry-404")
    ])
    expectFailure(expect, notJson, "SESSION_INVALID_MESSAGE")
    expectFailure(expect, notIr, "SESSION_INVALID_MESSAGE")
    expectFailure(expect, toolLink, "SESSION_TOOL_LINK")
    expectFailure(expect, unknownParent, "SESSION_UNKNOWN_PARENT")
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
  })

  it("verify reports a loadable file, read-only, in words and as JSON (incomplete tail included)", async ({ expect }) => {
    const dir = tempDir()
    const clean = Path.join(dir, "clean.jsonl")
    const torn = Path.join(dir, "torn.jsonl")
    await Promise.all([writeConversation(clean), writeConversation(torn)])
    NFS.appendFileSync(torn, "{\"type\":\"entry\",\"id\":\"cut")
    const tornBytes = NFS.readFileSync(torn)
    const [words, json] = await Promise.all([runCli("verify", clean), runCli("verify", torn, "--json")])
    expect(words.code).toBe(0)
    expect(words.stderr).toBe("")
    expect(words.stdout).toBe("ok 5 entries, leaf entry-005, tail none\n")
    expect(json.code).toBe(0)
    expect(json.stdout.endsWith("\n")).toBe(true)
    expect(JSON.parse(json.stdout)).toEqual({ ok: true, entries: 5, leaf: "entry-005", tail: "incomplete" })
    expect(Object.keys(JSON.parse(json.stdout))).toEqual(["ok", "entries", "leaf", "tail"])
    // verify never writes: the abandoned tail is still there.
    expect(NFS.readFileSync(torn).equals(tornBytes)).toBe(true)
  })

  it("verify rejects corruption with exit 1, the code first on stderr, and a JSON object with the line", async ({ expect }) => {
    const dir = tempDir()
    const corrupt = Path.join(dir, "corrupt.jsonl")
    await writeConversation(corrupt)
    const lines = NFS.readFileSync(corrupt, "utf8").split("\n")
    lines.splice(2, 0, "not-json")
    NFS.writeFileSync(corrupt, lines.join("\n"))
    const missing = Path.join(dir, "missing.jsonl")
    const [words, json, absent] = await Promise.all([
      runCli("verify", corrupt),
      runCli("verify", corrupt, "--json"),
      runCli("verify", missing, "--json")
    ])
    expectFailure(expect, words, "SESSION_INVALID_JSON")
    expect(words.stderr).toMatch(/\(line 3\)/)

    expect(json.code).toBe(1)
    expect(firstWord(json.stderr)).toBe("SESSION_INVALID_JSON")
    const report = JSON.parse(json.stdout)
    expect(Object.keys(report)).toEqual(["ok", "code", "message", "line"])
    expect(report).toEqual({ ok: false, code: "SESSION_INVALID_JSON", message: expect.any(String), line: 3 })

    expect(absent.code).toBe(1)
    const none = JSON.parse(absent.stdout)
    expect(none).toEqual({ ok: false, code: "SESSION_NOT_FOUND", message: expect.any(String) })
    expect(NFS.existsSync(missing)).toBe(false)
  })

  it("recover removes a marker of an installed generation and leftovers of gone writers; appends are blocked until then", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "s.jsonl")
    await writeConversation(path)
    NFS.linkSync(path, `${path}.marker`) // a crash after the install, before the marker was removed
    const leftover = `s.jsonl.tmp-${otherBoot()}-4242-99-1`
    NFS.writeFileSync(Path.join(dir, leftover), "half a generation")
    const busy = await runCli("append", path, "--user", "blocked")
    expectFailure(expect, busy, "SESSION_BUSY")
    // No writer is running, so the message names the command that resolves it.
    expect(busy.stderr).toContain(`session-tree recover ${path}`)

    const run = await runCli("recover", path)
    expect(run.code).toBe(0)
    expect(run.stderr).toBe("")
    expect(run.stdout).toMatch(/^recovery marker removed/)
    expect(run.stdout).toContain(leftover)
    expect(NFS.readdirSync(dir)).toEqual(["s.jsonl"])
    expect((await readOnly(path)).entries).toHaveLength(5)
  })

  it("recover restores the marker when the crash left no file, and reports nothing to do as JSON", async ({ expect }) => {
    const dir = tempDir()
    const path = Path.join(dir, "s.jsonl")
    const clean = Path.join(dir, "clean.jsonl")
    await Promise.all([writeConversation(path), writeConversation(clean)])
    const bytes = NFS.readFileSync(path)
    NFS.renameSync(path, `${path}.marker`)
    const [restored, nothing] = await Promise.all([runCli("recover", path, "--json"), runCli("recover", clean, "--json")])
    expect(restored.code).toBe(0)
    expect(JSON.parse(restored.stdout)).toEqual({ ok: true, marker: "restored", batch: "none", removed: [] })
    expect(NFS.readFileSync(path).equals(bytes)).toBe(true)
    expect(NFS.existsSync(`${path}.marker`)).toBe(false)
    expect(nothing.code).toBe(0)
    expect(JSON.parse(nothing.stdout)).toEqual({ ok: true, marker: "none", batch: "none", removed: [] })
  })

  it("log prints the active path root→leaf, one line per entry with tool calls and results; --json gives the records", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    const entries = await writeConversation(path)
    const [active, old, json, unknown] = await Promise.all([
      runCli("log", path),
      runCli("log", path, "--leaf", "entry-003"),
      runCli("log", path, "--json"),
      runCli("log", path, "--leaf", "entry-404")
    ])
    expect(active.code).toBe(0)
    expect(active.stderr).toBe("")
    expect(active.stdout.split("\n")).toEqual([
      "entry-001  user       \"What is in /project?\"",
      "entry-004  assistant  \"Shall I list it recursively?\"",
      "entry-005  user       \"Yes, please.\"",
      ""
    ])
    expect(old.code).toBe(0)
    expect(old.stdout.split("\n")).toEqual([
      "entry-001  user       \"What is in /project?\"",
      "entry-002  assistant  \"Let me look.\"  calls list_dir({\"path\":\"/project\"}) [call-1]",
      "entry-003  tool       list_dir [call-1] → \"README.md\\nsrc/\"",
      ""
    ])
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({ leaf: "entry-005", entries: [entries[0], entries[3], entries[4]] })
    expectFailure(expect, unknown, "SESSION_UNKNOWN_ENTRY")
  })

  it("tree draws every branch once and marks the path to the newest entry", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const [words, json] = await Promise.all([runCli("tree", path), runCli("tree", path, "--json")])
    expect(words.code).toBe(0)
    expect(words.stderr).toBe("")
    const lines = words.stdout.trimEnd().split("\n")
    expect(lines[0]).toMatch(/^session s-1 .* 5 entries$/)
    expect(lines.slice(1).map((line) => line.replace(/(entry-\d+)  .*?(  ← leaf)?$/, "$1$2"))).toEqual([
      "● entry-001",
      "├── ○ entry-002",
      "│   ○ entry-003",
      "└── ● entry-004",
      "    ● entry-005  ← leaf"
    ])

    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({
      session: "s-1",
      leaf: "entry-005",
      active: ["entry-001", "entry-004", "entry-005"],
      nodes: [
        { id: "entry-001", parentId: null, role: "user", active: true, children: ["entry-002", "entry-004"] },
        { id: "entry-002", parentId: "entry-001", role: "assistant", active: false, children: ["entry-003"] },
        { id: "entry-003", parentId: "entry-002", role: "tool", active: false, children: [] },
        { id: "entry-004", parentId: "entry-001", role: "assistant", active: true, children: ["entry-005"] },
        { id: "entry-005", parentId: "entry-004", role: "user", active: true, children: [] }
      ]
    })
  })

  it("prints no control character of a session: IDs, tool names and titles show their escapes", async ({ expect }) => {
    const dir = tempDir()
    const csi = "\u001b[2J\u001b[31m"
    const c1 = "\u009b31m\u0085"
    const path = Path.join(dir, `x${c1}.jsonl`)
    await writeHostile(path, csi, c1)
    const runs = await Promise.all([
      runCli("log", path),
      runCli("tree", path),
      runCli("list", dir),
      runCli("list", dir, "--json"),
      runCli("verify", path),
      runCli("log", path, "--json"),
      runCli("import", path, "--to", Path.join(dir, "copy.jsonl")),
      runCli("log", path, "--leaf", `nope${c1}`)
    ])
    for (const run of runs) {
      expect(run.stdout).not.toMatch(CONTROL)
      expect(run.stderr).not.toMatch(CONTROL)
    }
    const [log, tree, list, listJson, verify, logJson, imported, unknown] = runs
    expect(log!.stdout.split("\n")[1]).toBe(
      "\"e2\\u009b31m\\u0085\"  assistant  \"\"  calls \"t\\u001b[2J\\u001b[31m\"({\"\\u009b31m\\u0085\":1}) [\"c\\u009b31m\\u0085\"]"
    )
    expect(log!.stdout.split("\n")[2]).toMatch(/^"e3\\u009b31m\\u0085" {2}tool {7}"t\\u001b\[2J\\u001b\[31m" \["c\\u009b31m\\u0085"\] → "\\u009b31m\\u0085"$/)
    expect(tree!.stdout).toMatch(/^session "s\\u001b\[2J\\u001b\[31m" /)
    expect(list!.stdout).toContain("3 entries  \"s\\u001b[2J\\u001b[31m\"  \"title \\u001b[2J\\u001b[31m\\u009b31m\\u0085\"  \"")
    expect(JSON.parse(listJson!.stdout)).toMatchObject([{ id: `s${csi}`, title: `title ${csi}${c1}`, location: path }])
    expect(verify!.stdout).toBe("ok 3 entries, leaf \"e3\\u009b31m\\u0085\", tail none\n")
    expect(JSON.parse(logJson!.stdout)).toMatchObject({ leaf: `e3${c1}` })
    expect(imported!.stdout).toBe("\"s\\u001b[2J\\u001b[31m\"\n")
    expectFailure(expect, unknown!, "SESSION_UNKNOWN_ENTRY")
  })

  it("wrong usage exits 2, prints no stack trace and touches nothing", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    const before = NFS.readFileSync(path)
    const runs = await Promise.all([
      runCli("frobnicate", path),
      runCli("verify", path, "--frobnicate"),
      runCli("append", path, "--user", "a", "--message", "{}"),
      // Usage is checked before the file is opened: exit 2 even where the path does not exist.
      runCli("append", Path.join(Path.dirname(path), "missing.jsonl"), "--user", "a", "--parent", "entry-001", "--root"),
      runCli()
    ])
    for (const run of runs) {
      expect(run.code).toBe(2)
      expect(run.stdout).toBe("")
      expect(run.stderr).not.toBe("")
      expect(run.stderr).not.toMatch(STACK_FRAME)
    }
    expect(runs[3]!.stderr).toMatch(/--parent and --root/)
    expect(NFS.readFileSync(path).equals(before)).toBe(true)
  })

  it("list shows every *.jsonl session newest change first, an unreadable one with its code", async ({ expect }) => {
    const dir = tempDir()
    await writeConversation(Path.join(dir, "a.jsonl"))
    NFS.writeFileSync(Path.join(dir, "broken.jsonl"), `{"type":"session","version":1,"id":"x","timestamp":"2026-01-02T03:04:05.006Z"}\nnot-json\n`)
    NFS.writeFileSync(Path.join(dir, "notes.txt"), "not a session")
    NFS.mkdirSync(Path.join(dir, "folder.jsonl"))
    // Times set apart (and after every session's creation, which no commit can precede), so the
    // order is not left to which write the clock saw first. Whole seconds, which every file system stores exactly.
    const later = new Date(Math.floor(Date.now() / 1000) * 1000 + 60_000)
    const latest = new Date(later.getTime() + 30_000)
    NFS.utimesSync(Path.join(dir, "a.jsonl"), later, later)
    NFS.utimesSync(Path.join(dir, "folder.jsonl"), latest, latest)
    NFS.utimesSync(Path.join(dir, "broken.jsonl"), new Date(latest.getTime() + 30_000), new Date(latest.getTime() + 30_000))
    const json = await runCli("list", dir, "--json")
    expect(json.code).toBe(0)
    const listed = JSON.parse(json.stdout) as Array<Record<string, unknown>>
    expect(listed.map((l) => Path.basename(l["location"] as string))).toEqual(["broken.jsonl", "folder.jsonl", "a.jsonl"])
    expect(listed[0]).toEqual({
      location: Path.join(dir, "broken.jsonl"),
      error: { code: "SESSION_INVALID_JSON", message: expect.stringMatching(/\(line 2\)$/) }
    })
    expect(listed[1]).toMatchObject({ error: { code: "SESSION_NOT_REGULAR_FILE" } })
    expect(listed[2]).toEqual({
      id: "s-1",
      location: Path.join(dir, "a.jsonl"),
      entries: 5,
      leaf: "entry-005",
      created: expect.any(String),
      updated: later.toISOString(),
      title: "What is in /project?"
    })
    const words = await runCli("list", dir)
    expect(words.code).toBe(0)
    expect(words.stdout.split("\n")[0]).toMatch(/^SESSION_INVALID_JSON /)
    expect(words.stdout).toMatch(/5 entries {2}s-1 {2}"What is in \/project\?"/)
    const missing = await runCli("list", Path.join(dir, "nope"))
    expectFailure(expect, missing, "SESSION_NOT_FOUND")
  })

  it("fork copies exactly the root→entry path under a new header and leaves the source alone", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    const entries = await writeConversation(source)
    const before = NFS.readFileSync(source)
    const [middle, named, unknown, taken] = await Promise.all([
      runCli("fork", source, "--leaf", "entry-002", "--to", Path.join(dir, "middle.jsonl")),
      runCli("fork", source, "--leaf", "entry-005", "--to", Path.join(dir, "named.jsonl"), "--id", "forked"),
      runCli("fork", source, "--leaf", "nope", "--to", Path.join(dir, "unknown.jsonl")),
      runCli("fork", source, "--leaf", "entry-001", "--to", source)
    ])
    expect(middle.code).toBe(0)
    expect(middle.stdout.trim()).toMatch(UUID)
    expect((await readOnly(Path.join(dir, "middle.jsonl"))).entries).toEqual(entries.slice(0, 2))
    expect(named.stdout).toBe("forked\n")
    const forked = await readOnly(Path.join(dir, "named.jsonl"))
    expect(forked.header.id).toBe("forked")
    expect(forked.entries).toEqual([entries[0], entries[3], entries[4]])
    expectFailure(expect, unknown, "SESSION_UNKNOWN_ENTRY")
    expect(NFS.existsSync(Path.join(dir, "unknown.jsonl"))).toBe(false)
    expectFailure(expect, taken, "SESSION_EXISTS")
    expect(NFS.readFileSync(source).equals(before)).toBe(true)
  })

  it("export prints the canonical generation byte for byte, or writes it to --out; import stores it again", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    await writeConversation(source)
    const canonical = NFS.readFileSync(source)
    // CRLF endings and a torn tail load, and export canonically.
    NFS.writeFileSync(Path.join(dir, "crlf.jsonl"), canonical.toString("utf8").replaceAll("\n", "\r\n") + `{"type":"entry","id":"cut`)
    const [plain, crlf, out] = await Promise.all([
      runCli("export", source),
      runCli("export", Path.join(dir, "crlf.jsonl")),
      runCli("export", source, "--out", Path.join(dir, "out.jsonl"))
    ])
    expect(plain.code).toBe(0)
    expect(Buffer.from(plain.stdout, "utf8").equals(canonical)).toBe(true)
    expect(Buffer.from(crlf.stdout, "utf8").equals(canonical)).toBe(true)
    expect([out.code, out.stdout]).toEqual([0, ""])
    expect(NFS.readFileSync(Path.join(dir, "out.jsonl")).equals(canonical)).toBe(true)
    expect(NFS.readdirSync(dir).sort()).toEqual(["crlf.jsonl", "out.jsonl", "s.jsonl"])

    const imported = await runCli("import", Path.join(dir, "crlf.jsonl"), "--to", Path.join(dir, "copy.jsonl"))
    expect(imported.stdout).toBe("s-1\n")
    expect(NFS.readFileSync(Path.join(dir, "copy.jsonl")).equals(canonical)).toBe(true)
    const [again, noTarget, corrupt] = await Promise.all([
      runCli("import", source, "--to", Path.join(dir, "copy.jsonl")),
      runCli("import", source),
      runCli("import", Path.join(dir, "missing.jsonl"), "--to", Path.join(dir, "never.jsonl"))
    ])
    expectFailure(expect, again, "SESSION_EXISTS")
    expect(noTarget.code).toBe(2)
    expectFailure(expect, corrupt, "SESSION_NOT_FOUND")
    expect(NFS.existsSync(Path.join(dir, "never.jsonl"))).toBe(false)
  })

  it("help lists every command with one line each, and prints no colour codes into a pipe or under NO_COLOR", async ({ expect }) => {
    const piped = await runCli("--help")
    expect(piped.code).toBe(0)
    expect(piped.stdout).not.toMatch(/\x1b\[/)
    const commands = piped.stdout.split("\n").filter((line) => /^ {2}- /.test(line)).map((line) => line.trim().split(/\s+/)[1])
    expect(commands).toEqual(COMMANDS)
    // One line each: the summary sits on the command's line.
    for (const line of piped.stdout.split("\n").filter((l) => /^ {2}- /.test(l))) expect(line).toMatch(/\S\s{2,}\S.*[.)]$/)
    // On a terminal (a pseudo-terminal made by script(1)) colour is on, unless NO_COLOR is set.
    const tty = async (env: Record<string, string>) => {
      const ran = await runCommand("script", ["-qec", `${JSON.stringify(process.execPath)} ${JSON.stringify(bin)} --help`, "/dev/null"], {
        env: { ...process.env, NO_COLOR: "", ...env }
      })
      if (ran.code !== 0) throw new Error(`script exited ${ran.code ?? ran.signal}: ${ran.stderr}`)
      return ran.stdout
    }
    expect(await tty({})).toMatch(/\x1b\[/)
    expect(await tty({ NO_COLOR: "1" })).not.toMatch(/\x1b\[/)
    const wrong = await runCli("frobnicate")
    expect(wrong.stderr + wrong.stdout).not.toMatch(/\x1b\[/)
  })

  it.skipIf(withoutPi("import --from pi --format-version 1 converts a session Pi wrote; unrepresentable content is refused unless --lossy"))("import --from pi --format-version 1 converts a session Pi wrote; unrepresentable content is refused unless --lossy", async ({ expect }) => {
    const dir = tempDir()
    const pi = await loadPi()
    const plain = Path.join(dir, "plain-pi.jsonl")
    const { sm } = writePi(pi, plain, (sm) => {
      const u = sm.appendMessage(piUser("List the files"))
      sm.appendModelChange("anthropic", "claude")
      const a = sm.appendMessage(piAssistant([text("Let me look."), toolCall("call-1", "bash", { command: "ls" })]))
      sm.appendMessage(piToolResult("call-1", "bash", [text("a.ts")]))
      sm.branch(u)
      void a
      sm.appendMessage(piAssistant([text("Or not.")]))
    })
    const withImage = Path.join(dir, "image-pi.jsonl")
    writePi(pi, withImage, (sm) => {
      sm.appendMessage(piUser([text("What is this?"), image()]))
      sm.appendMessage(piAssistant([text("A pixel.")]))
    })
    const [converted, refused, lossy] = await Promise.all([
      runCli("import", plain, "--from", "pi", "--format-version", "1", "--to", Path.join(dir, "plain.jsonl")),
      runCli("import", withImage, "--from", "pi", "--format-version", "1", "--to", Path.join(dir, "refused.jsonl")),
      runCli("import", withImage, "--from", "pi", "--lossy", "--to", Path.join(dir, "lossy.jsonl"))
    ])
    expect(converted.stdout).toBe(`${sm.getHeader()!.id}\n`)
    const loaded = await readOnly(Path.join(dir, "plain.jsonl"))
    expect(V1.entries(loaded.entries).map((e) => [e.message.role, e.parentId === null])).toEqual([["user", true], ["assistant", false], ["tool", false], ["assistant", false]])
    expect(loaded.entries[3]!.parentId).toBe(loaded.entries[0]!.id)
    expectFailure(expect, refused, "SESSION_INVALID_MESSAGE")
    expect(refused.stderr).toMatch(/image/)
    expect(NFS.existsSync(Path.join(dir, "refused.jsonl"))).toBe(false)
    expect([lossy.code, lossy.stderr]).toEqual([0, "dropped 1 images\n"])
    expect(V1.entries((await readOnly(Path.join(dir, "lossy.jsonl"))).entries).map((e) => e.message.role === "user" && e.message.content)).toEqual(["What is this?", false])
    const notPi = await runCli("import", Path.join(dir, "plain.jsonl"), "--from", "pi", "--to", Path.join(dir, "never.jsonl"))
    expectFailure(expect, notPi, "SESSION_INVALID_HEADER")
  })

  it("export --format markdown prints the root→leaf transcript, --format html one self-contained page", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    await writeConversation(source)
    const [markdown, oldBranch, unknown, html, jsonlLeaf] = await Promise.all([
      runCli("export", source, "--format", "markdown"),
      runCli("export", source, "--format", "markdown", "--leaf", "entry-003"),
      runCli("export", source, "--format", "html", "--leaf", "nope"),
      runCli("export", source, "--format", "html", "--out", Path.join(dir, "s.html")),
      runCli("export", source, "--leaf", "entry-003")
    ])
    expect(markdown.code).toBe(0)
    expect(markdown.stdout).toContain("What is in /project?")
    expect(markdown.stdout).toContain("Yes, please.")
    expect(markdown.stdout).not.toContain("README.md")
    expect(oldBranch.stdout).toContain("list_dir")
    // The call's arguments, as JSON in their own fence.
    expect(oldBranch.stdout).toContain("```json\n{\n  \"path\": \"/project\"\n}\n```")
    expect(oldBranch.stdout).toContain("README.md")
    expect(oldBranch.stdout).not.toContain("Yes, please.")
    expectFailure(expect, unknown, "SESSION_UNKNOWN_ENTRY")
    expect([html.code, html.stdout]).toEqual([0, ""])
    const page = NFS.readFileSync(Path.join(dir, "s.html"), "utf8")
    expect(page).toMatch(/^<!doctype html>/i)
    expect(page).toMatch(/<meta http-equiv="Content-Security-Policy" content="default-src 'none';/)
    expect(page).toContain("entry-005")
    expect(jsonlLeaf.code).toBe(2)
  })

  it("keeps a code cache per command in the user's cache directory: made by its first run that succeeds, a damaged one replaced, the newest four builds' kept", async ({ expect }) => {
    const dir = tempDir()
    const home = Path.join(dir, "cache")
    const env = { env: { XDG_CACHE_HOME: home } }
    const cache = Path.join(home, "session-tree")
    const caches = () => NFS.readdirSync(cache).filter((name) => name.startsWith("code-")).sort()
    expect((await runCli("--version", env)).stdout.trim()).toBe("0.1.0")
    const [made] = caches()
    expect(caches()).toHaveLength(1)
    expect(made).toMatch(new RegExp(`^code-${process.version}-${process.arch}-\\d+-\\d+\\.none\\.bin$`))
    const build = made!.slice(0, -".none.bin".length)
    expect(NFS.statSync(cache).mode & 0o777).toBe(0o700)
    const good = NFS.readFileSync(Path.join(cache, made!))
    expect(good.length).toBeGreaterThan(100_000)
    // Damaged: V8 refuses it, the command runs as without one, and writes a sound one in its place.
    NFS.writeFileSync(Path.join(cache, made!), Buffer.alloc(good.length, 7))
    expect((await runCli("--version", env)).stdout.trim()).toBe("0.1.0")
    expect(NFS.readFileSync(Path.join(cache, made!)).equals(Buffer.alloc(good.length, 7))).toBe(false)
    // Each command its own, holding what that command compiled; a run that fails writes none.
    const file = Path.join(dir, "s.jsonl")
    expect((await runCli("verify", file, env)).code).toBe(1)
    expect(caches()).toEqual([made])
    expect((await runCli("create", file, "--id", "c", env)).code).toBe(0)
    expect((await runCli("verify", file, env)).stdout).toMatch(/^ok 0 entries/)
    expect(caches()).toEqual([`${build}.create.bin`, made, `${build}.verify.bin`])
    expect(NFS.statSync(Path.join(cache, `${build}.verify.bin`)).size).toBeGreaterThan(good.length)
    // Caches of other builds: those of the newest four builds are kept when a new one is written.
    NFS.rmSync(Path.join(cache, made!))
    for (let i = 0; i < 6; i++) {
      const old = Path.join(cache, `code-${process.version}-${process.arch}-${i}-${i}.bin`)
      NFS.writeFileSync(old, "old")
      NFS.utimesSync(old, 1_000_000 + i, 1_000_000 + i)
    }
    expect((await runCli("--version", env)).code).toBe(0)
    expect(caches()).toEqual([`${build}.create.bin`, made, `${build}.verify.bin`, ...[3, 4, 5].map((i) => `code-${process.version}-${process.arch}-${i}-${i}.bin`)].sort())
    // A directory others may write to is never used: the command runs without a cache and writes none.
    const sharedHome = Path.join(dir, "shared")
    const shared = Path.join(sharedHome, "session-tree")
    NFS.mkdirSync(shared, { recursive: true })
    NFS.chmodSync(shared, 0o777)
    const run = await runCli("verify", file, { env: { XDG_CACHE_HOME: sharedHome } })
    expect([run.code, run.stdout]).toEqual([0, "ok 0 entries, leaf (none), tail none\n"])
    expect(NFS.readdirSync(shared)).toEqual([])
    expect(NFS.statSync(shared).mode & 0o777).toBe(0o777)
  })
})

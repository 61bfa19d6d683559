/**
 * The Promise facade on version 2: new sessions are version 2 unless version 1 is asked for, a
 * load can require a version, every kind appends through the tree, a chain commits whole, and
 * the version option is read as the other options are (by descriptor, no getter runs).
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { SessionError, Sessions, SessionStore, SessionTree } from "../src/Promise.js"
import { makeTempDir } from "./fixtures/helpers.js"

const dirs: Array<string> = []
afterAll(() => dirs.forEach((d) => NFS.rmSync(d, { recursive: true, force: true })))
const tempDir = () => {
  const dir = makeTempDir()
  dirs.push(dir)
  return dir
}

const rejection = async (promise: Promise<unknown>): Promise<SessionError> => {
  try {
    await promise
  } catch (error) {
    if (error instanceof SessionError) return error
    throw error
  }
  throw new Error("expected a rejection")
}

let time = 0
const options = () => ({ now: () => (time += 1000), createId: (() => { let n = 0; return () => `e${++n}` })() })

describe("the Promise facade on version 2", () => {
  it("creates version 2 by default and version 1 when asked; a load can require a version", async () => {
    const dir = tempDir()
    const agent = await SessionStore.create(Path.join(dir, "agent.jsonl"), { id: "a", ...options() })
    const course = await SessionStore.create(Path.join(dir, "course.jsonl"), { id: "c", version: 1 })
    expect([agent.header.version, course.header.version]).toEqual([2, 1])
    await Promise.all([agent.close(), course.close()])
    expect((await rejection(SessionStore.load(Path.join(dir, "agent.jsonl"), { version: 1 }))).code).toBe("SESSION_UNSUPPORTED_VERSION")
    expect((await rejection(SessionStore.load(Path.join(dir, "course.jsonl"), { version: 2 }))).code).toBe("SESSION_UNSUPPORTED_VERSION")
    const loaded = await SessionStore.load(Path.join(dir, "agent.jsonl"), { version: 2 })
    expect(loaded.header.id).toBe("a")
    await loaded.close()
    // open creates with the version asked for, and then loads only that version.
    const opened = await SessionStore.open(Path.join(dir, "opened.jsonl"), { version: 1 })
    expect(opened.header.version).toBe(1)
    await opened.close()
    expect((await rejection(SessionStore.open(Path.join(dir, "agent.jsonl"), { version: 1 }))).code).toBe("SESSION_UNSUPPORTED_VERSION")
  })

  it("refuses a version option that is not 1 or 2, or that is an accessor, running no getter", async () => {
    const dir = tempDir()
    expect((await rejection(SessionStore.create(Path.join(dir, "three.jsonl"), { version: 3 as never }))).code).toBe("SESSION_INVALID_OPTIONS")
    let ran = false
    const sneaky = Object.defineProperty({}, "version", { get: () => ((ran = true), 1), enumerable: true })
    expect((await rejection(SessionStore.create(Path.join(dir, "getter.jsonl"), sneaky))).code).toBe("SESSION_INVALID_OPTIONS")
    expect(ran).toBe(false)
    expect(NFS.readdirSync(dir)).toEqual([])
  })

  it("appends every kind through the tree and a chain in one commit, all or none", async () => {
    const dir = tempDir()
    const path = Path.join(dir, "kinds.jsonl")
    const store = await SessionStore.create(path, options())
    const tree = new SessionTree(store)
    const question = await tree.append({ role: "user", id: "m1", content: [{ type: "text", text: "List /project" }] })
    const sizeBefore = NFS.statSync(path).size
    const refused = await rejection(tree.appendChain([
      { kind: "message", message: { role: "assistant", id: "m2", content: [{ type: "tool-call", id: "c1", name: "ls", arguments: {} }] } },
      { kind: "message", message: { role: "tool", id: "m3", toolCallId: "c1", toolName: "cat", isError: false, content: [] } }
    ]))
    expect([refused.code, refused.kind]).toEqual(["SESSION_TOOL_LINK", "InputError"])
    expect([NFS.statSync(path).size, tree.activeLeafId]).toEqual([sizeBefore, question.id])
    const step = await tree.appendChain([
      { kind: "message", message: { role: "assistant", id: "m2", content: [{ type: "tool-call", id: "c1", name: "ls", arguments: {} }] } },
      { kind: "message", message: { role: "tool", id: "m3", toolCallId: "c1", toolName: "ls", isError: false, content: [{ type: "text", text: "a b" }] } }
    ])
    await tree.label(question.id, "start")
    await tree.setTitle("Listing")
    await tree.setModel({ provider: "openai", model: "gpt-x" })
    await tree.custom("ext", [1, 2])
    await tree.compact({ summary: "Listed it.", firstKeptEntryId: step[0]!.id })
    expect(tree.activeEntries.map((e) => (e.version === 2 ? e.kind : "v1"))).toEqual(
      ["message", "message", "message", "label", "title", "model", "custom", "compaction"]
    )
    expect(tree.activeMessages.map((m) => m.id)).toEqual(["m1", "m2", "m3"])
    await store.close()
    const listed = await new Sessions().list({ directory: dir })
    expect(listed.sessions[0]).toMatchObject({ title: "Listing", entries: 8 })
  })
})

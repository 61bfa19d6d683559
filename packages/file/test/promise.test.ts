/**
 * The Promise facade beyond the course's store and tree: create with a session
 * ID, open (load or create), read without holding, and the many sessions of a
 * directory (list, latest, fork, read, export, import of a session file and of a
 * Pi file), each checked against the files on disk.
 */
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { isUnreadable, type Listed, SessionError, Sessions, SessionStore, SessionTree } from "../src/Promise.js"
import * as V1 from "@session-tree/testing/Version1"

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) NFS.rmSync(dir, { recursive: true, force: true })
})
const tempDir = (): string => {
  const dir = NFS.mkdtempSync(Path.join(NFS.realpathSync(OS.tmpdir()), "promise-"))
  dirs.push(dir)
  return dir
}

/** Deterministic entry IDs and times, as the course's tests use them. */
const deterministic = (start = 0) => {
  let n = start
  let t = Date.parse("2026-01-02T03:04:05.006Z") + start * 1000
  return { createId: () => `entry-${String(++n).padStart(3, "0")}`, now: () => (t += 1000) }
}

const rejection = async (promise: Promise<unknown>): Promise<SessionError> => {
  const error = await promise.then(() => undefined, (e: unknown) => e)
  expect(error).toBeInstanceOf(SessionError)
  return error as SessionError
}

const user = (id: string, content: string) => ({ role: "user" as const, id, content })

/** A session file with a root, two branches under it, and the path root → second branch as the newest. */
const branched = async (path: string, id = "chat-1") => {
  const store = await SessionStore.create(path, { ...deterministic(), id })
  const tree = new SessionTree(store)
  const root = await tree.append(user("m1", "root"))
  const old = await tree.append(user("m2", "old branch"))
  await tree.moveTo(root.id)
  const leaf = await tree.append(user("m3", "new branch"))
  await store.close()
  return { root, old, leaf }
}

describe("SessionStore", () => {
  it("create takes the session ID; without one the ID is a random UUID", async () => {
    const dir = tempDir()
    const named = await SessionStore.create(Path.join(dir, "a.jsonl"), { id: "chat-a" })
    expect(named.header.id).toBe("chat-a")
    await named.close()
    expect(JSON.parse(NFS.readFileSync(Path.join(dir, "a.jsonl"), "utf8").split("\n")[0]!).id).toBe("chat-a")
    const unnamed = await SessionStore.create(Path.join(dir, "b.jsonl"))
    expect(unnamed.header.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    await unnamed.close()
  })

  it("create refuses an ID that is not a string, or read through a getter, writing nothing", async () => {
    const dir = tempDir()
    const path = Path.join(dir, "a.jsonl")
    expect((await rejection(SessionStore.create(path, { id: 7 } as never))).code).toBe("SESSION_INVALID_OPTIONS")
    const getter = Object.defineProperty({}, "id", { enumerable: true, get: () => { throw new Error("getter ran") } })
    expect((await rejection(SessionStore.create(path, getter))).code).toBe("SESSION_INVALID_OPTIONS")
    // The other options are still validated beside the ID.
    expect((await rejection(SessionStore.create(path, { id: "x", clock: () => 0 } as never))).code).toBe("SESSION_INVALID_OPTIONS")
    expect(NFS.readdirSync(dir)).toEqual([])
  })

  it("create keeps the clock and ID factory given beside the session ID", async () => {
    const path = Path.join(tempDir(), "a.jsonl")
    const store = await SessionStore.create(path, { ...deterministic(), id: "chat-a" })
    const entry = await store.append(null, user("m1", "hi"))
    expect(entry.id).toBe("entry-001")
    expect(store.header.timestamp).toBe("2026-01-02T03:04:06.006Z")
    await store.close()
  })

  it("open creates a missing session, then loads it with what was appended", async () => {
    const path = Path.join(tempDir(), "a.jsonl")
    const created = await SessionStore.open(path, deterministic())
    expect(created.entries).toEqual([])
    const entry = await created.append(null, user("m1", "hi"))
    await created.close()
    const loaded = await SessionStore.open(path, deterministic(1))
    expect(loaded.header).toEqual(created.header)
    expect(loaded.entries).toEqual([entry])
    expect(loaded.get(entry.id)).toEqual(entry)
    expect(loaded.get("nothing")).toBeUndefined()
    await loaded.close()
  })

  it("read loads without holding: a writer can load the file afterwards, and the tail shows", async () => {
    const path = Path.join(tempDir(), "a.jsonl")
    const { leaf } = await branched(path)
    NFS.appendFileSync(path, `{"type":"entry","id":"cut`)
    const read = await SessionStore.read(path)
    expect(read.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002", leaf.id])
    expect(read.tail).toBe("incomplete")
    expect(read.location).toBe(path)
    const store = await SessionStore.load(path)
    expect(store.tail).toBe("incomplete")
    await store.append(leaf.id, user("m4", "next"))
    await store.close()
    // The commit removed the tail; a read never does.
    expect((await SessionStore.read(path)).tail).toBe("none")
    expect((await rejection(SessionStore.read(Path.join(Path.dirname(path), "missing.jsonl")))).code).toBe("SESSION_NOT_FOUND")
  })
})

describe("SessionError", () => {
  it("one Error class for every failure, with the code, the line, and the kind of party that must act", async () => {
    const dir = tempDir()
    const path = Path.join(dir, "s.jsonl")
    NFS.writeFileSync(path, `{"type":"session","version":1,"id":"s","timestamp":"2026-01-02T03:04:05.006Z"}\nnot json\n`)
    const corrupt = await rejection(SessionStore.load(path))
    expect([corrupt.name, corrupt.code, corrupt.kind, corrupt.line]).toEqual(["SessionError", "SESSION_INVALID_JSON", "CorruptError", 2])
    expect(corrupt.message.startsWith("SESSION_INVALID_JSON: ")).toBe(true)
    const fresh = Path.join(dir, "t.jsonl")
    const store = await SessionStore.create(fresh, deterministic())
    const tree = new SessionTree(store)
    const unknown = await rejection(tree.moveTo("nope"))
    expect([unknown.code, unknown.kind]).toEqual(["SESSION_UNKNOWN_ENTRY", "InputError"])
    const exists = await rejection(SessionStore.create(fresh))
    expect([exists.code, exists.kind]).toEqual(["SESSION_EXISTS", "ConflictError"])
    await store.close()
    const closed = await rejection(store.append(null, user("m", "x")))
    expect([closed.code, closed.kind]).toEqual(["SESSION_IO", "IoError"])
  })
})

describe("SessionTree", () => {
  it("children, leaves and pathTo show the branches", async () => {
    const path = Path.join(tempDir(), "a.jsonl")
    const { leaf, old, root } = await branched(path)
    const store = await SessionStore.load(path)
    const tree = new SessionTree(store)
    expect(tree.children(null).map((e) => e.id)).toEqual([root.id])
    expect(tree.children(root.id).map((e) => e.id)).toEqual([old.id, leaf.id])
    expect(tree.leaves.map((e) => e.id)).toEqual([old.id, leaf.id])
    expect(tree.pathTo(old.id).map((e) => e.id)).toEqual([root.id, old.id])
    await store.close()
  })
})

describe("Sessions", () => {
  it("list shows a directory's sessions newest change first, an unreadable one with its error", async () => {
    const dir = tempDir()
    await branched(Path.join(dir, "a.jsonl"), "chat-a")
    const b = await SessionStore.create(Path.join(dir, "b.jsonl"), { ...deterministic(10), id: "chat-b" })
    await b.append(null, user("m1", "later"))
    await b.close()
    NFS.writeFileSync(Path.join(dir, "broken.jsonl"), "not json\n")
    // Newest change first, by the files' modification times (after the sessions' own times: a
    // listing never shows a session updated before what its records tell).
    const now = Math.floor(Date.now() / 1000)
    NFS.utimesSync(Path.join(dir, "a.jsonl"), now + 1_000, now + 1_000)
    NFS.utimesSync(Path.join(dir, "b.jsonl"), now + 2_000, now + 2_000)
    NFS.utimesSync(Path.join(dir, "broken.jsonl"), now + 3_000, now + 3_000)
    const sessions = new Sessions()
    const listing = await sessions.list({ directory: dir })
    expect(listing.total).toBe(3)
    const [broken, second, first] = listing.sessions as [Listed, Listed, Listed]
    expect(isUnreadable(broken) ? broken.error.code : "loaded").toBe("SESSION_INVALID_JSON")
    expect(isUnreadable(second) ? "unreadable" : [second.id, second.entries, second.title]).toEqual(["chat-b", 1, "later"])
    expect(isUnreadable(first) ? "unreadable" : [first.id, first.entries, first.title]).toEqual(["chat-a", 3, "root"])
    expect((await sessions.list({ directory: dir, offset: 1, limit: 1 })).sessions).toEqual([second])
    // The deprecated name of the option still lists the directory it names; `directory` wins over it.
    expect(await sessions.list({ scope: dir })).toEqual(listing)
    expect((await sessions.list({ directory: tempDir(), scope: dir })).total).toBe(0)
    expect(await sessions.latest(dir)).toEqual(broken)
    expect((await rejection(sessions.latest(tempDir()))).code).toBe("SESSION_NOT_FOUND")
  })

  it("fork copies exactly the root→leaf path under a new header, the source untouched", async () => {
    const dir = tempDir()
    const source = Path.join(dir, "a.jsonl")
    const { leaf, root } = await branched(source)
    const before = NFS.readFileSync(source)
    const sessions = new Sessions(deterministic(100))
    const target = Path.join(dir, "fork.jsonl")
    const forked = await sessions.fork(source, leaf.id, target, { id: "chat-fork" })
    expect([forked.id, forked.entries, forked.leaf]).toEqual(["chat-fork", 2, leaf.id])
    expect(NFS.readFileSync(source)).toEqual(before)
    const read = await sessions.read(target)
    expect(read.header.id).toBe("chat-fork")
    expect(read.entries).toEqual([root, leaf])
    expect((await rejection(sessions.fork(source, "nothing", Path.join(dir, "x.jsonl")))).code).toBe("SESSION_UNKNOWN_ENTRY")
    expect((await rejection(sessions.fork(source, leaf.id, target))).code).toBe("SESSION_EXISTS")
  })

  it("exportJsonl gives the file's canonical bytes, without the incomplete tail", async () => {
    const path = Path.join(tempDir(), "a.jsonl")
    await branched(path)
    const canonical = NFS.readFileSync(path, "utf8")
    NFS.appendFileSync(path, `{"type":"entry","id":"cut`)
    expect(await new Sessions().exportJsonl(path)).toBe(canonical)
  })

  it("import stores a session file as a new one that keeps its header, and refuses a taken target", async () => {
    const dir = tempDir()
    const source = Path.join(dir, "a.jsonl")
    await branched(source)
    const sessions = new Sessions()
    const to = Path.join(dir, "copy.jsonl")
    const imported = await sessions.import(source, to)
    expect([imported.session.id, imported.session.entries, imported.session.location]).toEqual(["chat-1", 3, to])
    expect(Object.values(imported.dropped).every((n) => n === 0)).toBe(true)
    expect(NFS.readFileSync(to, "utf8")).toBe(NFS.readFileSync(source, "utf8"))
    expect((await rejection(sessions.import(source, to))).code).toBe("SESSION_EXISTS")
    expect((await rejection(sessions.import(source, Path.join(dir, "other.jsonl"), { lossy: true }))).code).toBe("SESSION_INVALID_OPTIONS")
    expect(NFS.existsSync(Path.join(dir, "other.jsonl"))).toBe(false)
  })

  it("importRecords stores records read elsewhere, validated as a load validates", async () => {
    const dir = tempDir()
    const source = Path.join(dir, "a.jsonl")
    const { leaf, root } = await branched(source)
    const sessions = new Sessions()
    const read = await sessions.read(source)
    const to = Path.join(dir, "copy.jsonl")
    const imported = await sessions.importRecords({ header: read.header, entries: [root, leaf] }, to)
    expect(imported.entries).toBe(2)
    const orphan = { header: read.header, entries: [leaf] }
    expect((await rejection(sessions.importRecords(orphan, Path.join(dir, "orphan.jsonl")))).code).toBe("SESSION_UNKNOWN_PARENT")
    expect(NFS.existsSync(Path.join(dir, "orphan.jsonl"))).toBe(false)
  })

  it("import from a Pi file converts it; content Message IR cannot hold is refused unless lossy, then counted", async () => {
    const dir = tempDir()
    const T = "2025-01-15T10:00:01.000Z"
    const lines = [
      { type: "session", version: 3, id: "pi-session-1", timestamp: "2025-01-15T10:00:00.000Z", cwd: "/p" },
      { type: "message", id: "p1", parentId: null, timestamp: T, message: { role: "user", content: "hi", timestamp: 1 } },
      {
        type: "message",
        id: "p2",
        parentId: "p1",
        timestamp: T,
        message: {
          role: "assistant",
          content: [{ type: "thinking", thinking: "hm" }, { type: "text", text: "hello" }],
          api: "x",
          provider: "x",
          model: "x",
          stopReason: "stop",
          timestamp: 2
        }
      }
    ]
    const file = Path.join(dir, "pi.jsonl")
    NFS.writeFileSync(file, lines.map((l) => JSON.stringify(l) + "\n").join(""))
    const sessions = new Sessions()
    const to = Path.join(dir, "imported.jsonl")
    expect((await rejection(sessions.import(file, to, { from: "pi", version: 1 }))).code).toBe("SESSION_INVALID_MESSAGE")
    expect(NFS.existsSync(to)).toBe(false)
    const imported = await sessions.import(file, to, { from: "pi", lossy: true })
    expect([imported.session.id, imported.session.entries, imported.dropped.thinking]).toEqual(["pi-session-1", 2, 1])
    const read = await sessions.read(to)
    expect(V1.entries(read.entries).map((e) => [e.id, e.parentId, e.message.content])).toEqual([["p1", null, "hi"], ["p2", "p1", "hello"]])
    // A Pi file read as this project's format is refused by its header's version; without `from`, its format is detected.
    expect((await rejection(sessions.import(file, Path.join(dir, "x.jsonl"), { from: "session-tree" }))).code).toBe("SESSION_UNSUPPORTED_VERSION")
    const detected = await sessions.import(file, Path.join(dir, "y.jsonl"))
    expect([detected.session.id, detected.session.entries, detected.subagents]).toEqual(["pi-session-1", 3, []])
  })

  it("an instance's clock and ID factory are validated when it is made", () => {
    expect(() => new Sessions({ clock: () => 0 } as never)).toThrow(SessionError)
  })
})

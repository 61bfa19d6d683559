/**
 * Checkpoint 10: persist the session tree (SPEC Part A). Every test works in a
 * fresh temporary directory with a deterministic clock and ID factory, so record
 * order, timestamps and chosen parents are asserted directly. Files the loader
 * must judge are written by hand, byte for byte; the commit and rollback phases
 * are driven through the Effect API with a filesystem that fails chosen steps.
 */
import { execFileSync } from "node:child_process"
import { linkSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from "node:fs"
import { writeFile } from "node:fs/promises"
import { join } from "node:path"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { afterAll, describe, expect, it } from "vitest"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Fs from "@session-tree/file/Fs"
import * as Options from "@session-tree/core/Options"
import * as Recovery from "@session-tree/file/Recovery"
import * as Core from "@session-tree/core/SessionStore"
import { type CourseMessage, type SessionEntry, SessionStore, SessionTree } from "../src/session.js"
import {
  assistant,
  callsOf,
  deterministicOptions,
  entryLine,
  expectSessionError,
  fingerprint,
  headerLine,
  iso,
  listDir,
  pad,
  removeTempDirs,
  tempSession,
  toolResult,
  user
} from "./helpers/session.js"

afterAll(removeTempDirs)

const MAX_LINE = 65_536
const MAX_FILE = 4_194_304
const MAX_ENTRIES = 4_096

const lines = (...records: ReadonlyArray<string>): string => records.map((r) => `${r}\n`).join("")
const read = (path: string): string => readFileSync(path, "utf8")

/** A session file with a header and `count` chained entries (entry-001 … entry-NNN), written by hand. */
const chainFile = (path: string, count: number): void => {
  const records = [headerLine()]
  for (let n = 1; n <= count; n++) records.push(entryLine({}, n))
  writeFileSync(path, lines(...records))
}

/** Entry `n` of a chain as a line of exactly `length` bytes (ASCII padding of its content). */
const entryOfLength = (length: number, n = 1): string => {
  const bare = entryLine({ message: user(`message-${pad(n)}`, "") }, n)
  const line = entryLine({ message: user(`message-${pad(n)}`, "x".repeat(length - bare.length)) }, n)
  expect(Buffer.byteLength(line)).toBe(length)
  return line
}

/** A valid chain session of exactly `total` bytes, built as text without going through the store. */
const sessionOfSize = (total: number): { readonly text: string; readonly count: number } => {
  let text = `${headerLine()}\n`
  let count = 0
  const minimum = entryLine({ message: user("message-999", "") }, 999).length + 1
  while (text.length < total) {
    const remaining = total - text.length
    count++
    // Full lines, but never leave a remainder too short for one more entry.
    let length = Math.min(MAX_LINE, remaining - 1)
    if (remaining - 1 - length > 0 && remaining - 1 - length < minimum) length -= minimum
    text += `${entryOfLength(length, count)}\n`
  }
  expect(text.length).toBe(total)
  return { text, count }
}

describe("the focused test", () => {
  it("branches by moving the leaf: the common prefix is shared and the old branch is kept", async () => {
    const { path: sessionPath } = tempSession()
    const store = await SessionStore.create(sessionPath, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("message-001", "root"))
    const oldLeaf = await tree.append(user("message-002", "old branch"))

    await tree.moveTo(root.id)
    const newLeaf = await tree.append(user("message-003", "new branch"))

    expect(newLeaf.parentId).toBe(root.id)
    expect(tree.activeLeafId).toBe(newLeaf.id)
    expect(tree.activeMessages.map((message) => message.content)).toEqual(["root", "new branch"])
    expect(tree.entries.map((entry) => entry.id)).toEqual([root.id, oldLeaf.id, newLeaf.id])
    expect(tree.entries.find((entry) => entry.id === oldLeaf.id)).toBe(oldLeaf)
    // The old branch is on disk too, and a reload starts at the newest entry.
    const reloaded = await SessionStore.load(sessionPath, deterministicOptions(3))
    expect(reloaded.entries.map((entry) => [entry.id, entry.parentId])).toEqual([
      ["entry-001", null],
      ["entry-002", "entry-001"],
      ["entry-003", "entry-001"]
    ])
    expect(new SessionTree(reloaded).activeLeafId).toBe("entry-003")
    await Promise.all([store.close(), reloaded.close()])
  })

  it("failure experiment: only an incomplete final object is skipped, a corrupt middle line is fatal", async () => {
    const { path: sessionPath } = tempSession()
    await writeFile(sessionPath, `${headerLine()}\n${entryLine()}\n{"type":"entry","id":"cut`, "utf8")
    const recovered = await SessionStore.load(sessionPath, deterministicOptions())
    expect(recovered.entries.map((entry) => entry.id)).toEqual(["entry-001"])
    await recovered.close()

    await writeFile(sessionPath, `${headerLine()}\nnot-json\n${entryLine()}\n`, "utf8")
    const error = await expectSessionError(SessionStore.load(sessionPath, deterministicOptions()), "SESSION_INVALID_JSON")
    expect(error.line).toBe(2)
  })
})

describe("header creation", () => {
  it("create writes exactly one frozen, versioned header with a UUID session ID and the clock's time", async () => {
    const { dir, path } = tempSession()
    const options = deterministicOptions()
    const store = await SessionStore.create(path, options)
    expect(store.header).toEqual({ type: "session", version: 1, id: expect.stringMatching(/^[0-9a-f-]{36}$/), timestamp: iso(0) })
    expect(Object.isFrozen(store.header)).toBe(true)
    expect(read(path)).toBe(`${JSON.stringify(store.header)}\n`)
    expect(store.entries).toEqual([])
    expect(Object.isFrozen(store.entries)).toBe(true)
    expect(callsOf(options).createId).toBe(0) // entry IDs are not spent on the header
    expect(new SessionTree(store).activeLeafId).toBeNull()
    expect(listDir(dir)).toEqual(["session.jsonl"]) // no temp file left
    const other = await SessionStore.create(join(dir, "other.jsonl"))
    expect(other.header.id).not.toBe(store.header.id)
    await Promise.all([store.close(), other.close()])
  })

  it("create refuses an existing path and a missing directory, writing nothing", async () => {
    const { dir, path } = tempSession()
    writeFileSync(path, "keep me")
    const before = fingerprint(path)
    await expectSessionError(SessionStore.create(path, deterministicOptions()), "SESSION_EXISTS")
    expect(fingerprint(path)).toEqual(before)
    await expectSessionError(SessionStore.create(join(dir, "missing", "s.jsonl")), "SESSION_NOT_FOUND")
    await expectSessionError(SessionStore.load(join(dir, "absent.jsonl")), "SESSION_NOT_FOUND")
    expect(listDir(dir)).toEqual(["session.jsonl"])
  })

  it("a file without a complete header is rejected", async () => {
    const { path } = tempSession()
    for (const [text, code] of [
      ["", "SESSION_INVALID_HEADER"],
      ['{"type":"session","version":1,"id":"s', "SESSION_INVALID_HEADER"],
      [`${entryLine()}\n`, "SESSION_INVALID_HEADER"],
      [`${headerLine({ id: "" })}\n`, "SESSION_INVALID_HEADER"],
      [`${headerLine({ version: 2 })}\n`, "SESSION_UNSUPPORTED_VERSION"]
    ] as const) {
      writeFileSync(path, text)
      await expectSessionError(SessionStore.load(path), code)
    }
  })
})

describe("the tree", () => {
  it("appends in deterministic order: IDs, timestamps and parents follow the calls", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const a = await tree.append(user("message-001", "root"))
    const b = await tree.append(user("message-002", "message 2"))
    const c = await tree.append(user("message-003", "message 3"))
    expect([a, b, c].map((e) => [e.id, e.parentId, e.timestamp])).toEqual([
      ["entry-001", null, iso(1)],
      ["entry-002", "entry-001", iso(2)],
      ["entry-003", "entry-002", iso(3)]
    ])
    // The file is the canonical generation: a header line, then one line per entry in commit order.
    expect(read(path)).toBe(lines(JSON.stringify(store.header), entryLine({}, 1), entryLine({}, 2), entryLine({}, 3)))
    await store.close()
  })

  it("reproduces the trace: the active path is root → new branch, the old branch is kept", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const e1 = await tree.append(user("m1", "root"))
    await tree.append(user("m2", "old branch"))
    const e3 = await tree.append(user("m3", "old leaf"))
    await tree.moveTo(e1.id)
    const e4 = await tree.append(user("m4", "new branch"))
    const e5 = await tree.append(user("m5", "current leaf"))
    expect(tree.activeEntries.map((e) => e.id)).toEqual(["entry-001", "entry-004", "entry-005"])
    expect(tree.activeMessages.map((m) => m.content)).toEqual(["root", "new branch", "current leaf"])
    expect(tree.entries).toHaveLength(5)
    expect(e4.parentId).toBe(e1.id)
    expect(e5.parentId).toBe(e4.id)
    // Back to the old leaf: its path is intact.
    await tree.moveTo(e3.id)
    expect(tree.activeMessages.map((m) => m.content)).toEqual(["root", "old branch", "old leaf"])
    const reloaded = new SessionTree(await SessionStore.load(path))
    expect(reloaded.activeLeafId).toBe("entry-005")
    expect(reloaded.activeEntries.map((e) => e.id)).toEqual(["entry-001", "entry-004", "entry-005"])
    expect(reloaded.entries).toEqual(tree.entries)
    await store.close()
  })

  it("moveTo changes no byte of the file; the next append is a child of the chosen leaf", async () => {
    const { dir, path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    const child = await tree.append(user("m2", "child"))
    const before = fingerprint(path)
    const names = listDir(dir)
    await tree.moveTo(root.id)
    await tree.moveTo(null)
    await tree.moveTo(child.id)
    await tree.moveTo(root.id)
    expect(fingerprint(path)).toEqual(before)
    expect(listDir(dir)).toEqual(names)
    expect(tree.activeLeafId).toBe(root.id)
    const sibling = await tree.append(user("m3", "sibling"))
    expect(sibling.parentId).toBe(root.id)
    await tree.moveTo(null)
    expect(tree.activeEntries).toEqual([])
    const secondRoot = await tree.append(user("m4", "second root"))
    expect(secondRoot.parentId).toBeNull()
    expect(tree.activeMessages.map((m) => m.content)).toEqual(["second root"])
    await store.close()
  })

  it("moveTo an ID that is not in the tree fails with SESSION_UNKNOWN_ENTRY and keeps the leaf", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    for (const bad of ["entry-999", "", "message-001", 42 as unknown as string]) {
      await expectSessionError(tree.moveTo(bad), "SESSION_UNKNOWN_ENTRY")
    }
    expect(tree.activeLeafId).toBe(root.id)
    await store.close()
  })

  it("projections are frozen, cached per (entries, leaf) and rebuilt after a move or a commit", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    await tree.append(user("m2", "leaf"))
    const entries = tree.activeEntries
    const messages = tree.activeMessages
    expect(Object.isFrozen(entries)).toBe(true)
    expect(Object.isFrozen(messages)).toBe(true)
    expect(Object.isFrozen(tree.entries)).toBe(true)
    expect(Object.isFrozen(messages[0])).toBe(true)
    expect(tree.activeEntries).toBe(entries)
    expect(tree.activeMessages).toBe(messages)
    expect(() => (entries as Array<SessionEntry>).push(root)).toThrow(TypeError)
    expect(() => {
      ;(messages[0] as { content: string }).content = "changed"
    }).toThrow(TypeError)
    await tree.moveTo(root.id)
    expect(tree.activeEntries).not.toBe(entries)
    expect(tree.activeEntries.map((e) => e.id)).toEqual([root.id])
    await tree.append(user("m3", "after"))
    expect(tree.activeEntries.map((e) => e.message.content)).toEqual(["root", "after"])
    await store.close()
  })

  it("concurrent tree operations run in call order", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    const results = await Promise.allSettled([
      tree.append(user("m2", "a")),
      tree.moveTo(root.id),
      tree.append(user("m3", "b")),
      tree.moveTo(null),
      tree.append(user("m4", "c")),
      tree.moveTo("entry-999"),
      tree.append(user("m5", "d"))
    ])
    const value = (i: number) => (results[i] as PromiseFulfilledResult<SessionEntry>).value
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled"])
    expect((results[5] as PromiseRejectedResult).reason).toMatchObject({ code: "SESSION_UNKNOWN_ENTRY" })
    expect([value(0), value(2), value(4), value(6)].map((e) => [e.id, e.parentId])).toEqual([
      ["entry-002", "entry-001"],
      ["entry-003", "entry-001"],
      ["entry-004", null],
      ["entry-005", "entry-004"]
    ])
    expect(tree.activeLeafId).toBe("entry-005")
    expect(tree.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002", "entry-003", "entry-004", "entry-005"])
    await store.close()
  })

  it("a failed append moves neither the leaf nor memory, and the next append still uses the old leaf", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    const before = fingerprint(path)
    await expectSessionError(tree.append(toolResult("t1", "call-1", "read")), "SESSION_TOOL_LINK")
    expect(tree.activeLeafId).toBe(root.id)
    expect(tree.entries.map((e) => e.id)).toEqual([root.id])
    expect(fingerprint(path)).toEqual(before)
    const next = await tree.append(user("m2", "next"))
    expect(next.parentId).toBe(root.id)
    await store.close()
  })
})

describe("line endings and the final line", () => {
  it("accepts CRLF line endings and a valid last line without a newline", async () => {
    const { path } = tempSession()
    writeFileSync(path, `${headerLine()}\r\n${entryLine({}, 1)}\r\n${entryLine({}, 2)}`)
    const store = await SessionStore.load(path)
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002"])
    expect(store.entries[1]).toEqual(JSON.parse(entryLine({}, 2)))
    await store.close()
    writeFileSync(path, `${headerLine()}\n${entryLine({}, 1)}`)
    const noNewline = await SessionStore.load(path)
    expect(noNewline.entries.map((e) => e.id)).toEqual(["entry-001"])
    await noNewline.close()
  })

  it("recovers a truncated tail exactly: load writes nothing, the next append writes the canonical generation", async () => {
    const { dir, path } = tempSession()
    const original = `${headerLine()}\r\n${entryLine()}\r\n{"type":"entry","version":1,"id":"cu`
    writeFileSync(path, original)
    const before = fingerprint(path)
    const store = await SessionStore.load(path, deterministicOptions(1))
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001"])
    expect(fingerprint(path)).toEqual(before) // load never writes
    const tree = new SessionTree(store)
    const next = await tree.append(user("message-002", "message 2"))
    expect(next.parentId).toBe("entry-001")
    expect(read(path)).toBe(lines(headerLine(), entryLine({}, 1), entryLine({}, 2)))
    expect(listDir(dir)).toEqual(["session.jsonl"])
    await store.close()
  })

  it.each([
    ["arbitrary text", "not-json"],
    ["a prefix that can never be completed", '{"type":"entry","id":"cut"]'],
    ["a prefix with a bare word", '{"type":entry'],
    ["valid JSON followed by garbage", `${entryLine({}, 2)} trailing`],
    ["two objects on one line", `${entryLine({}, 2)}{}`],
    ["a JSON array", "[1,2"],
    ["a closing brace alone", "}"]
  ])("a final line holding %s is corruption, not a cut tail", async (_name, last) => {
    const { path } = tempSession()
    writeFileSync(path, `${headerLine()}\n${entryLine()}\n${last}`)
    const error = await expectSessionError(SessionStore.load(path), "SESSION_INVALID_JSON")
    expect(error.line).toBe(3)
  })

  it("corruption in the middle and malformed JSON that has its newline are fatal", async () => {
    const { path } = tempSession()
    for (const [text, line] of [
      [lines(headerLine(), "not-json", entryLine()), 2],
      [lines(headerLine(), '{"type":"entry","id":"cut', entryLine()), 2],
      [lines(headerLine(), "", entryLine()), 2],
      [lines(headerLine(), entryLine(), '{"type":"entry","id":"cut'), 3],
      [lines(headerLine(), entryLine(), `${entryLine({}, 2)},`), 3]
    ] as const) {
      writeFileSync(path, text)
      const error = await expectSessionError(SessionStore.load(path), "SESSION_INVALID_JSON")
      expect(error.line).toBe(line)
    }
  })

  it("invalid UTF-8 is fatal anywhere, also in what would be a cut tail", async () => {
    const { path } = tempSession()
    const head = Buffer.from(`${headerLine()}\n${entryLine()}\n`)
    const content = (bytes: ReadonlyArray<number>) =>
      Buffer.concat([Buffer.from('{"type":"entry","id":"'), Buffer.from(bytes), Buffer.from('"}')])
    for (const bytes of [
      Buffer.concat([head, content([0xc0, 0xaf]), Buffer.from("\n")]), // overlong "/"
      Buffer.concat([head, content([0xed, 0xa0, 0x80]), Buffer.from("\n")]), // encoded surrogate
      Buffer.concat([head, Buffer.from('{"type":"entry","id":"'), Buffer.from([0xe2, 0x82])]), // truncated at the very end
      Buffer.concat([Buffer.from(headerLine()).subarray(0, 40), Buffer.from([0xff]), Buffer.from(headerLine()).subarray(40), head.subarray(headerLine().length)]) // in the header
    ]) {
      writeFileSync(path, bytes)
      await expectSessionError(SessionStore.load(path), "SESSION_INVALID_UTF8")
    }
    writeFileSync(path, Buffer.concat([head.subarray(0, head.length - 1), Buffer.from(" \u00e9 ok\n")]))
    await expectSessionError(SessionStore.load(path), "SESSION_INVALID_JSON") // valid UTF-8, still garbage
  })
})

describe("record and message validation", () => {
  const call = { id: "call-1", name: "read", arguments: { path: "a.txt" } }
  it.each([
    ["an extra entry field", lines(headerLine(), entryLine({ extra: 1 })), "SESSION_INVALID_RECORD"],
    ["a missing timestamp", lines(headerLine(), entryLine({ timestamp: undefined })), "SESSION_INVALID_RECORD"],
    ["a non-canonical timestamp", lines(headerLine(), entryLine({ timestamp: "2026-01-02T03:04:05Z" })), "SESSION_INVALID_RECORD"],
    ["an empty ID", lines(headerLine(), entryLine({ id: "" })), "SESSION_INVALID_RECORD"],
    ["an extra header field", lines(headerLine({ extra: true }), entryLine()), "SESSION_INVALID_HEADER"],
    ["an entry version 2", lines(headerLine(), entryLine({ version: 2 })), "SESSION_UNSUPPORTED_VERSION"],
    ["a duplicate ID", lines(headerLine(), entryLine(), entryLine({ id: "entry-001", parentId: null })), "SESSION_DUPLICATE_ID"],
    ["a parent that comes later", lines(headerLine(), entryLine({ parentId: "entry-002" }), entryLine({ parentId: null }, 2)), "SESSION_UNKNOWN_PARENT", 2],
    ["a parent that does not exist", lines(headerLine(), entryLine(), entryLine({ parentId: "entry-404" }, 2)), "SESSION_UNKNOWN_PARENT"],
    ["a self parent", lines(headerLine(), entryLine({ parentId: "entry-001" })), "SESSION_UNKNOWN_PARENT"],
    ["an extra message field", lines(headerLine(), entryLine({ message: { ...user("m", "x"), name: "n" } })), "SESSION_INVALID_MESSAGE"],
    ["an unknown role", lines(headerLine(), entryLine({ message: { role: "system", id: "m", content: "x" } })), "SESSION_INVALID_MESSAGE"],
    ["a tool call without arguments", lines(headerLine(), entryLine({ message: { role: "assistant", id: "m", content: "", toolCalls: [{ id: "c", name: "n" }] } })), "SESSION_INVALID_MESSAGE"],
    ["a repeated tool-call ID", lines(headerLine(), entryLine({ message: assistant("m", "", [call, call]) })), "SESSION_INVALID_MESSAGE"],
    ["a duplicate key", `${headerLine()}\n${entryLine().replace('"version":1', '"version":1,"version":1')}\n`, "SESSION_INVALID_JSON"],
    ["an escaped __proto__ key", `${headerLine()}\n${entryLine().replace('"content":"root"', '"content":"root","\\u005f_proto__":{}')}\n`, "SESSION_INVALID_JSON"]
  ] as ReadonlyArray<[string, string, string, number?]>)("the loader rejects %s", async (_name, text, code, line) => {
    const { path } = tempSession()
    writeFileSync(path, text)
    const before = fingerprint(path)
    const error = await expectSessionError(SessionStore.load(path), code)
    // The line named is the first bad one: the header, an explicit line, or else the last line.
    expect(error.line).toBe(line ?? (code === "SESSION_INVALID_HEADER" ? 1 : text.split("\n").length - 1))
    expect(fingerprint(path)).toEqual(before)
  })

  it("append checks the message and the parent before anything is written, and never runs caller code", async () => {
    const { path } = tempSession()
    const options = deterministicOptions()
    const store = await SessionStore.create(path, options)
    const root = await store.append(null, user("m1", "root"))
    const before = fingerprint(path)
    let getterCalls = 0
    const withGetter = Object.defineProperty({ role: "user", id: "m" }, "content", {
      enumerable: true,
      get: () => {
        getterCalls++
        return "x"
      }
    })
    class Message {
      role = "user"
      id = "m"
      content = "x"
    }
    const cases: ReadonlyArray<[unknown, string]> = [
      [{ ...user("m", "x"), extra: 1 }, "SESSION_INVALID_MESSAGE"],
      [{ role: "user", id: "", content: "x" }, "SESSION_INVALID_MESSAGE"],
      [{ role: "tool", id: "m", toolCallId: "c", toolName: "n", content: "x" }, "SESSION_INVALID_MESSAGE"],
      [withGetter, "SESSION_INVALID_MESSAGE"],
      [new Message(), "SESSION_INVALID_MESSAGE"],
      [new Proxy(user("m", "x"), {}), "SESSION_INVALID_MESSAGE"],
      [assistant("m", "", [{ id: "c", name: "n", arguments: { n: NaN } }]), "SESSION_INVALID_MESSAGE"],
      ["just text", "SESSION_INVALID_MESSAGE"]
    ]
    for (const [message, code] of cases) {
      await expectSessionError(store.append(root.id, message as CourseMessage), code)
    }
    await expectSessionError(store.append("entry-404", user("m", "x")), "SESSION_UNKNOWN_PARENT")
    expect(getterCalls).toBe(0)
    expect(fingerprint(path)).toEqual(before)
    expect(store.entries).toEqual([root])
    await store.close()
  })

  it("append stores a deep frozen snapshot taken when it is called", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const message = { role: "assistant", id: "m1", content: "before", toolCalls: [{ id: "c1", name: "read", arguments: { path: "a" } }] }
    const pending = tree.append(message as CourseMessage)
    message.content = "after"
    message.toolCalls[0]!.arguments.path = "b"
    const entry = await pending
    expect(entry.message).toEqual({ role: "assistant", id: "m1", content: "before", toolCalls: [{ id: "c1", name: "read", arguments: { path: "a" } }] })
    expect(entry.message).not.toBe(message)
    expect(Object.isFrozen(entry)).toBe(true)
    const stored = entry.message as { toolCalls: ReadonlyArray<{ arguments: object }> }
    expect(Object.isFrozen(stored.toolCalls[0]!.arguments)).toBe(true)
    expect(store.entries[0]).toBe(entry)
    await store.close()
  })
})

describe("tool links", () => {
  it("a result must answer a call made by an ancestor, with the same name, at most once per branch", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    await tree.append(user("m1", "read a"))
    await tree.append(assistant("m2", "", [{ id: "call-1", name: "read" }, { id: "call-2", name: "list" }]))
    await expectSessionError(tree.append(toolResult("t0", "call-1", "list")), "SESSION_TOOL_LINK")
    await expectSessionError(tree.append(toolResult("t0", "call-9", "read")), "SESSION_TOOL_LINK")
    await tree.append(toolResult("t1", "call-1", "read"))
    await expectSessionError(tree.append(toolResult("t2", "call-1", "read")), "SESSION_TOOL_LINK")
    await tree.append(toolResult("t3", "call-2", "list"))
    await expectSessionError(tree.append(assistant("m3", "", [{ id: "call-1", name: "read" }])), "SESSION_TOOL_LINK")
    expect(tree.activeMessages.map((m) => m.id)).toEqual(["m1", "m2", "t1", "t3"])
    const reloaded = await SessionStore.load(path)
    expect(reloaded.entries).toEqual(store.entries)
    await Promise.all([store.close(), reloaded.close()])
  })

  it("a call or a result in a sibling branch does not count", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    const call = await tree.append(assistant("m2", "", [{ id: "call-1", name: "read" }]))
    await tree.append(toolResult("t1", "call-1", "read"))
    // Sibling of the call: the call is not an ancestor.
    await tree.moveTo(root.id)
    await expectSessionError(tree.append(toolResult("t2", "call-1", "read")), "SESSION_TOOL_LINK")
    // The same call ID may be made again on another branch...
    await tree.append(assistant("m3", "", [{ id: "call-1", name: "read" }]))
    // ...and answered there, although a sibling branch already answered call-1.
    await tree.append(toolResult("t3", "call-1", "read"))
    // Sibling of the first answer: the call is an ancestor, the answer is not.
    await tree.moveTo(call.id)
    const again = await tree.append(toolResult("t4", "call-1", "read"))
    expect(again.parentId).toBe(call.id)
    // The loader applies the same rule to a result whose call sits only on a sibling branch.
    writeFileSync(path, lines(
      headerLine(),
      entryLine(),
      entryLine({ message: assistant("m2", "", [{ id: "call-1", name: "read" }]) }, 2),
      entryLine({ parentId: "entry-001", message: toolResult("t1", "call-1", "read") }, 3)
    ))
    const error = await expectSessionError(SessionStore.load(path), "SESSION_TOOL_LINK")
    expect(error.line).toBe(4)
    await store.close()
  })
})

describe("adversarial options", () => {
  class WithNow {
    now() {
      return 0
    }
  }
  it.each([
    ["a throwing getter", () => Object.defineProperty({}, "now", { enumerable: true, get: () => { throw new Error("getter ran") } })],
    ["a getter for createId", () => Object.defineProperty({}, "createId", { enumerable: true, get: () => () => "x" })],
    ["a non-function clock", () => ({ now: 1767323045006 })],
    ["a non-function ID factory", () => ({ createId: "entry-001" })],
    ["an unknown option", () => ({ clock: () => 0 })],
    ["a class instance", () => new WithNow()],
    ["an array", () => []],
    ["null", () => null],
    ["a string", () => "options"],
    ["a Proxy", () => new Proxy({}, { get: () => { throw new Error("trap ran") }, getOwnPropertyDescriptor: () => { throw new Error("trap ran") } })]
  ])("options that are %s are refused before anything is written", async (_name, make) => {
    const { dir, path } = tempSession()
    const options = make() as never
    await expectSessionError(SessionStore.create(path, options), "SESSION_INVALID_OPTIONS")
    expect(listDir(dir)).toEqual([])
    chainFile(path, 1)
    await expectSessionError(SessionStore.load(path, options), "SESSION_INVALID_OPTIONS")
  })

  it("a clock that throws or reads NaN, a fraction or an impossible year makes the append fail, writing nothing", async () => {
    const { path } = tempSession()
    const base = deterministicOptions()
    let bad: (() => number) | undefined
    const store = await SessionStore.create(path, { now: () => (bad === undefined ? base.now() : bad()), createId: base.createId })
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    const before = fingerprint(path)
    for (const clock of [() => NaN, () => 1.5, () => 1e20, () => -62_167_219_200_001, () => { throw new Error("no time") }, () => "now" as unknown as number]) {
      bad = clock
      await expectSessionError(tree.append(user("m2", "x")), "SESSION_INVALID_OPTIONS")
    }
    expect(fingerprint(path)).toEqual(before)
    expect(tree.entries).toEqual([root])
    expect(tree.activeLeafId).toBe(root.id)
    bad = undefined
    expect((await tree.append(user("m2", "x"))).parentId).toBe(root.id)
    await store.close()
  })

  it("a clock that fails during create leaves no file", async () => {
    const { dir, path } = tempSession()
    await expectSessionError(SessionStore.create(path, { now: () => NaN }), "SESSION_INVALID_OPTIONS")
    await expectSessionError(SessionStore.create(path, { now: () => { throw new Error("no") } }), "SESSION_INVALID_OPTIONS")
    expect(listDir(dir)).toEqual([])
  })

  it("an ID factory that throws, returns \"\", a non-string or a duplicate fails that append, writing nothing", async () => {
    const { path } = tempSession()
    const base = deterministicOptions()
    let bad: (() => string) | undefined
    const store = await SessionStore.create(path, { now: base.now, createId: () => (bad === undefined ? base.createId() : bad()) })
    const tree = new SessionTree(store)
    const root = await tree.append(user("m1", "root"))
    const before = fingerprint(path)
    for (const factory of [() => "", () => { throw new Error("no id") }, () => 7 as unknown as string, () => "entry-001"]) {
      bad = factory
      await expectSessionError(tree.append(user("m2", "x")), "SESSION_INVALID_OPTIONS")
    }
    // Two appends in a row that get the same ID: the first commits, the second is refused.
    bad = () => "entry-dup"
    const both = await Promise.allSettled([store.append(root.id, user("m3", "a")), store.append(root.id, user("m4", "b"))])
    expect(both.map((r) => r.status)).toEqual(["fulfilled", "rejected"])
    expect((both[1] as PromiseRejectedResult).reason).toMatchObject({ code: "SESSION_INVALID_OPTIONS" })
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001", "entry-dup"])
    expect(read(path).split("\n")).toHaveLength(4)
    expect(fingerprint(path).sha256).not.toBe(before.sha256)
    await store.close()
  })
})

describe("several stores on one path", () => {
  it("commits serialize: the store that loses the race fails typed, keeps its memory, and can append after a reload", async () => {
    const { path } = tempSession()
    chainFile(path, 1)
    const first = await SessionStore.load(path, deterministicOptions(1))
    const second = await SessionStore.load(path, { createId: () => "from-second" })
    const results = await Promise.allSettled([first.append("entry-001", user("a", "a")), second.append("entry-001", user("b", "b"))])
    expect(results[0]!.status).toBe("fulfilled")
    expect(results[1]!.status).toBe("rejected")
    expect(["SESSION_REPLACED", "SESSION_BUSY"]).toContain((results[1] as PromiseRejectedResult).reason.code)
    expect(second.entries.map((e) => e.id)).toEqual(["entry-001"])
    await second.close()
    const reloaded = await SessionStore.load(path, { createId: () => "from-second" })
    await reloaded.append("entry-001", user("b", "b"))
    const final = await SessionStore.load(path)
    expect(final.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002", "from-second"])
    await Promise.all([first.close(), reloaded.close(), final.close()])
  })

  it("two creates of one path: exactly one wins", async () => {
    const { path } = tempSession()
    const results = await Promise.allSettled([SessionStore.create(path), SessionStore.create(path), SessionStore.create(path)])
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1)
    for (const r of results) {
      if (r.status === "rejected") expect(r.reason).toMatchObject({ code: "SESSION_EXISTS" })
      else await r.value.close()
    }
    const loaded = await SessionStore.load(path)
    expect(loaded.entries).toEqual([])
    await loaded.close()
  })

  it("appends queued on one store share commits and resolve in call order", async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const root = await store.append(null, user("m0", "root"))
    const entries = await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(root.id, user(`m${i + 1}`, `${i + 1}`))))
    expect(entries.map((e) => e.id)).toEqual(Array.from({ length: 20 }, (_, i) => `entry-${pad(i + 2)}`))
    expect(store.entries.slice(1)).toEqual(entries)
    entries.forEach((e, i) => expect(store.entries[i + 1]).toBe(e))
    const reloaded = await SessionStore.load(path)
    expect(reloaded.entries).toEqual(store.entries)
    await Promise.all([store.close(), reloaded.close()])
  })
})

describe("flush", () => {
  it("commits the canonical generation atomically: the tail and CRLF go, and a second flush does nothing", async () => {
    const { dir, path } = tempSession()
    writeFileSync(path, `${headerLine()}\r\n${entryLine({}, 1)}\r\n${entryLine({}, 2)}\r\n{"type":"entry","id":"cu`)
    const store = await SessionStore.load(path)
    const before = fingerprint(path)
    await store.flush()
    const after = fingerprint(path)
    expect(read(path)).toBe(lines(headerLine(), entryLine({}, 1), entryLine({}, 2)))
    expect(after.ino).not.toBe(before.ino) // a new generation was renamed into place, not rewritten in place
    expect(listDir(dir)).toEqual(["session.jsonl"])
    await store.flush()
    expect(fingerprint(path)).toEqual(after)
    const reloaded = await SessionStore.load(path)
    expect(reloaded.entries).toEqual(store.entries)
    await Promise.all([store.close(), reloaded.close()])
  })

  it("flush of a freshly written canonical file changes nothing", async () => {
    const { path } = tempSession()
    chainFile(path, 2)
    const before = fingerprint(path)
    const store = await SessionStore.load(path)
    await store.flush()
    expect(fingerprint(path)).toEqual(before)
    await store.close()
  })
})

// ---------------------------------------------------------------------------------------------
// Commit phases, through the Effect API with a filesystem that fails chosen steps.

interface Fault {
  /** Which step to fail (the first match only, unless `always`). */
  match: (step: Fs.Step) => boolean
  always: boolean
  /** Answer a matching write with a short count instead of an error. */
  short: boolean
  hits: number
}

const fault: Fault = { match: () => false, always: false, short: false, hits: 0 }
const arm = (match: Fault["match"], extra: Partial<Pick<Fault, "always" | "short">> = {}) => {
  fault.match = match
  fault.always = extra.always ?? false
  fault.short = extra.short ?? false
  fault.hits = 0
}
const disarm = () => arm(() => false)

/** One armed fault hit once: SESSION_IO, the same inode and bytes, nothing beside the file, memory unchanged. */
const expectFailedOnce = (
  error: { readonly code: string },
  dir: string,
  path: string,
  before: ReturnType<typeof fingerprint>,
  store: { readonly entries: ReadonlyArray<unknown> },
  entries: ReadonlyArray<unknown>
) => {
  const hits = fault.hits
  disarm()
  expect(hits).toBe(1)
  expect(error.code).toBe("SESSION_IO")
  expect(fingerprint(path)).toEqual(before)
  expect(listDir(dir)).toEqual(["session.jsonl"])
  expect(store.entries).toBe(entries)
}

const faulty = FileJournal.layerIntercepted(<A>(step: Fs.Step, run: Effect.Effect<A, Fs.FsError>): Effect.Effect<A, Fs.FsError> => {
  if (!fault.match(step) || (!fault.always && fault.hits > 0)) return run
  fault.hits++
  return fault.short
    ? (Effect.succeed(3) as unknown as Effect.Effect<A, Fs.FsError>)
    : Effect.fail(new Fs.FsError({ op: step.op, path: step.path, errno: "EIO" }))
})

/** Loads `path` with the Effect API over the faulty filesystem; the caller closes the scope. */
const loadCore = async (path: string, existing: number) => {
  const scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(
    Core.load(path).pipe(Scope.extend(scope), Effect.provide(Layer.merge(faulty, Options.layer(deterministicOptions(existing)))))
  )
  return { store, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

const failureOf = <A, E>(effect: Effect.Effect<A, E>): Promise<E> => Effect.runPromise(Effect.flip(effect))

const isTemp = (p: string) => p.includes(".tmp-")

describe("commit phases and rollback", () => {
  it.each([
    ["creating the temp file", (s: Fs.Step) => s.op === "open" && isTemp(s.path), false],
    ["linking the marker", (s: Fs.Step) => s.op === "link" && s.target?.endsWith(".marker") === true, false],
    ["a short write", (s: Fs.Step) => s.op === "write", true],
    ["fsyncing the temp file", (s: Fs.Step) => s.op === "fsync" && isTemp(s.path), false],
    ["linking the next name", (s: Fs.Step) => s.op === "link" && s.target?.includes(".next-") === true, false],
    ["the rename", (s: Fs.Step) => s.op === "rename" && s.path.includes(".next-"), false]
  ])("a failure at %s (before the install) leaves the previous generation and memory intact", async (_name, match, short) => {
    const { dir, path } = tempSession()
    chainFile(path, 2)
    const { close, store } = await loadCore(path, 2)
    const before = fingerprint(path)
    const entries = store.entries
    arm(match, { short })
    const error = await failureOf(store.append("entry-002", user("m3", "x")))
    expectFailedOnce(error, dir, path, before, store, entries)
    // The failed ID is not reused; the store keeps working.
    const entry = await Effect.runPromise(store.append("entry-002", user("m3", "x")))
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002", entry.id])
    expect(read(path)).toBe(lines(headerLine(), entryLine({}, 1), entryLine({}, 2), JSON.stringify(entry)))
    await close()
  })

  it.each([
    ["the directory sync after the rename", (s: Fs.Step, dir: string) => s.op === "fsync" && s.path === dir],
    ["verifying the installed generation", (s: Fs.Step, _dir: string, path: string) => s.op === "lstat" && s.path === path],
    ["removing the marker", (s: Fs.Step) => s.op === "unlink" && s.path.endsWith(".marker")]
  ])("a failure at %s (after the install) rolls back to the previous generation", async (_name, match) => {
    const { dir, path } = tempSession()
    chainFile(path, 2)
    const { close, store } = await loadCore(path, 2)
    const before = fingerprint(path)
    const entries = store.entries
    let renamed = false
    // Only steps after the install's rename are candidates.
    arm((s) => {
      const candidate = renamed && match(s, dir, path)
      if (s.op === "rename" && s.path.includes(".next-")) renamed = true
      return candidate
    })
    const error = await failureOf(store.append("entry-002", user("m3", "x")))
    // The very inode of the previous generation is back, with its bytes; no marker or temp file is left.
    expectFailedOnce(error, dir, path, before, store, entries)
    const entry = await Effect.runPromise(store.append("entry-002", user("m3", "x")))
    expect(store.entries.at(-1)).toBe(entry)
    await close()
  })

  it("a rollback that cannot be proven is SESSION_ROLLBACK_FAILED: the marker stays and the store is locked until recover", async () => {
    const { dir, path } = tempSession()
    chainFile(path, 2)
    const { close, store } = await loadCore(path, 2)
    const before = fingerprint(path)
    arm((s) => s.op === "fsync" && s.path === dir, { always: true })
    const error = await failureOf(store.append("entry-002", user("m3", "x")))
    disarm()
    expect(error.code).toBe("SESSION_ROLLBACK_FAILED")
    expect(listDir(dir)).toContain("session.jsonl.marker")
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002"])
    // Locked: even with a healthy filesystem the store refuses.
    expect((await failureOf(store.append("entry-002", user("m3", "x")))).code).toBe("SESSION_ROLLBACK_FAILED")
    expect((await failureOf(store.flush)).code).toBe("SESSION_ROLLBACK_FAILED")
    await close()
    // Another store may load (load never writes) but not append while the marker is there.
    const other = await SessionStore.load(path, deterministicOptions(2))
    await expectSessionError(other.append("entry-002", user("m3", "x")), "SESSION_BUSY")
    expect(listDir(dir)).toContain("session.jsonl.marker")
    const report = await Effect.runPromise(Recovery.recover(path).pipe(Effect.provide(Fs.layer)))
    expect(report.marker).not.toBe("none")
    expect(listDir(dir)).toEqual(["session.jsonl"])
    // Whichever generation recover kept, it starts with every acknowledged entry.
    const recovered = await SessionStore.load(path, deterministicOptions(3))
    expect(recovered.entries.slice(0, 2).map((e) => e.id)).toEqual(["entry-001", "entry-002"])
    expect(read(path).startsWith(lines(headerLine(), entryLine({}, 1), entryLine({}, 2)))).toBe(true)
    expect(fingerprint(path).size).toBeGreaterThanOrEqual(before.size)
    await recovered.append("entry-002", user("m4", "after recovery"))
    await Promise.all([other.close(), recovered.close()])
  })
})

describe("the recovery marker", () => {
  it("a leftover NAME.marker makes append SESSION_BUSY until recover clears it", async () => {
    const { dir, path } = tempSession()
    chainFile(path, 1)
    linkSync(path, `${path}.marker`) // what a crash between marker and install leaves
    const store = await SessionStore.load(path, deterministicOptions(1))
    const before = fingerprint(path)
    await expectSessionError(store.append("entry-001", user("m2", "x")), "SESSION_BUSY")
    expect(fingerprint(path)).toEqual(before)
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001"])
    expect(listDir(dir)).toEqual(["session.jsonl", "session.jsonl.marker"])
    const report = await Effect.runPromise(Recovery.recover(path).pipe(Effect.provide(Fs.layer)))
    expect(report).toMatchObject({ marker: "removed", removed: [] })
    expect(listDir(dir)).toEqual(["session.jsonl"])
    const entry = await store.append("entry-001", user("m2", "x"))
    expect(store.entries).toEqual([JSON.parse(entryLine()), entry])
    expect(read(path)).toBe(lines(headerLine(), entryLine(), JSON.stringify(entry)))
    await store.close()
  })
})

describe("replaced files and directories", () => {
  it("a file replaced behind the store's back: SESSION_REPLACED, the replacement is untouched", async () => {
    const { dir, path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    await store.append(null, user("m1", "root"))
    writeFileSync(join(dir, "other"), lines(headerLine(), entryLine()))
    renameSync(join(dir, "other"), path)
    const replacement = fingerprint(path)
    await expectSessionError(store.append("entry-001", user("m2", "x")), "SESSION_REPLACED")
    expect(fingerprint(path)).toEqual(replacement)
    expect(store.entries.map((e) => e.id)).toEqual(["entry-001"])
    expect(listDir(dir)).toEqual(["session.jsonl"])
    await store.close()
  })

  it("a root directory replaced behind the store's back: SESSION_REPLACED, both copies untouched", async () => {
    const { dir } = tempSession()
    const root = join(dir, "root")
    mkdirSync(root)
    const path = join(root, "s.jsonl")
    const store = await SessionStore.create(path, deterministicOptions())
    await store.append(null, user("m1", "root"))
    renameSync(root, join(dir, "moved"))
    mkdirSync(root)
    writeFileSync(path, readFileSync(join(dir, "moved", "s.jsonl")))
    const copy = fingerprint(path)
    const moved = fingerprint(join(dir, "moved", "s.jsonl"))
    await expectSessionError(store.append("entry-001", user("m2", "x")), "SESSION_REPLACED")
    expect(fingerprint(path)).toEqual(copy)
    expect(fingerprint(join(dir, "moved", "s.jsonl"))).toEqual(moved)
    expect(listDir(root)).toEqual(["s.jsonl"])
    expect(listDir(join(dir, "moved"))).toEqual(["s.jsonl"])
    await store.close()
  })

  it("a symlink, a directory, a FIFO or a path under a file is refused with SESSION_NOT_REGULAR_FILE", async () => {
    const { dir, path } = tempSession()
    chainFile(path, 1)
    symlinkSync(path, join(dir, "link.jsonl"))
    mkdirSync(join(dir, "directory.jsonl"))
    execFileSync("mkfifo", [join(dir, "fifo.jsonl")])
    for (const name of ["link.jsonl", "directory.jsonl", "fifo.jsonl"]) {
      await expectSessionError(SessionStore.load(join(dir, name)), "SESSION_NOT_REGULAR_FILE")
    }
    await expectSessionError(SessionStore.load(join(path, "inside")), "SESSION_NOT_REGULAR_FILE")
  })
})

describe("caps", () => {
  it(`a line of ${MAX_LINE} bytes loads, ${MAX_LINE + 1} is SESSION_LINE_TOO_LONG (with CRLF too)`, async () => {
    const { path } = tempSession()
    writeFileSync(path, lines(headerLine(), entryOfLength(MAX_LINE)))
    const store = await SessionStore.load(path)
    expect(store.entries).toHaveLength(1)
    await store.close()
    writeFileSync(path, `${headerLine()}\r\n${entryOfLength(MAX_LINE)}\r\n`)
    await (await SessionStore.load(path)).close()
    writeFileSync(path, lines(headerLine(), entryOfLength(MAX_LINE + 1)))
    expect((await expectSessionError(SessionStore.load(path), "SESSION_LINE_TOO_LONG")).line).toBe(2)
    writeFileSync(path, `${headerLine()}\n${entryOfLength(MAX_LINE + 1)}`)
    await expectSessionError(SessionStore.load(path), "SESSION_LINE_TOO_LONG")
  })

  it(`append accepts an entry line of ${MAX_LINE} bytes and refuses ${MAX_LINE + 1}, writing nothing`, async () => {
    const { path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const exact = entryOfLength(MAX_LINE, 1)
    const entry = await tree.append(JSON.parse(exact).message)
    expect(JSON.stringify(entry)).toBe(exact)
    const before = fingerprint(path)
    const tooLong = JSON.parse(entryOfLength(MAX_LINE + 1, 2)).message
    await expectSessionError(tree.append(tooLong), "SESSION_LINE_TOO_LONG")
    await expectSessionError(tree.append(user("m", "x".repeat(MAX_LINE))), "SESSION_LINE_TOO_LONG")
    expect(fingerprint(path)).toEqual(before)
    expect(store.entries).toEqual([entry])
    await store.close()
  })

  it(`a file of ${MAX_FILE} bytes loads, ${MAX_FILE + 1} is SESSION_FILE_TOO_LARGE`, async () => {
    const { path } = tempSession()
    const exact = sessionOfSize(MAX_FILE)
    writeFileSync(path, exact.text)
    const store = await SessionStore.load(path)
    expect(store.entries).toHaveLength(exact.count)
    await store.close()
    writeFileSync(path, sessionOfSize(MAX_FILE + 1).text)
    await expectSessionError(SessionStore.load(path), "SESSION_FILE_TOO_LARGE")
  })

  it(`an append that would make the file exceed ${MAX_FILE} bytes fails, writing nothing`, async () => {
    const { path } = tempSession()
    const message = user("m", "last")
    // Entry IDs and parents have the same length for entries 2…999, so the next line's size is known up front.
    const next = Buffer.byteLength(entryLine({ message }, 100)) + 1
    const { count, text } = sessionOfSize(MAX_FILE - next)
    writeFileSync(path, text)
    const store = await SessionStore.load(path, deterministicOptions(count))
    const tree = new SessionTree(store)
    const last = await tree.append(message)
    expect(fingerprint(path).size).toBe(MAX_FILE)
    expect(JSON.stringify(last)).toBe(entryLine({ message }, count + 1))
    const before = fingerprint(path)
    await expectSessionError(tree.append(user("m", "")), "SESSION_FILE_TOO_LARGE")
    expect(fingerprint(path)).toEqual(before)
    expect(tree.activeLeafId).toBe(last.id)
    await store.close()
  })

  it(`${MAX_ENTRIES} entries load and the next append is SESSION_TOO_MANY_ENTRIES; a file of ${MAX_ENTRIES + 1} is refused`, async () => {
    const { path } = tempSession()
    chainFile(path, MAX_ENTRIES)
    const store = await SessionStore.load(path, deterministicOptions(MAX_ENTRIES))
    const tree = new SessionTree(store)
    expect(tree.activeEntries).toHaveLength(MAX_ENTRIES)
    const before = fingerprint(path)
    await expectSessionError(tree.append(user("m", "one more")), "SESSION_TOO_MANY_ENTRIES")
    expect(fingerprint(path)).toEqual(before)
    expect(store.entries).toHaveLength(MAX_ENTRIES)
    await store.close()
    chainFile(path, MAX_ENTRIES + 1)
    await expectSessionError(SessionStore.load(path), "SESSION_TOO_MANY_ENTRIES")
  })
})

describe("typed errors", () => {
  it("every failure of the facade is the exported SessionError, an Error carrying its B4 code", async () => {
    const { dir, path } = tempSession()
    const store = await SessionStore.create(path, deterministicOptions())
    const tree = new SessionTree(store)
    const failures: ReadonlyArray<[() => Promise<unknown>, string]> = [
      [() => SessionStore.create(path), "SESSION_EXISTS"],
      [() => SessionStore.load(dir), "SESSION_NOT_REGULAR_FILE"],
      [() => tree.moveTo("nope"), "SESSION_UNKNOWN_ENTRY"],
      [() => store.append("nope", user("m", "x")), "SESSION_UNKNOWN_PARENT"],
      [() => tree.append({ role: "user" } as CourseMessage), "SESSION_INVALID_MESSAGE"]
    ]
    for (const [run, code] of failures) {
      const error = await expectSessionError(run(), code)
      expect(error.name).toBe("SessionError")
      expect(error.message).toMatch(new RegExp(`^${code}: `))
    }
    await store.close()
    await expectSessionError(store.append(null, user("m", "x")), "SESSION_IO")
    await store.close() // closing twice is harmless
  })
})

describe("resources", () => {
  setFlagsFromString("--expose-gc")
  const gc = runInNewContext("gc") as () => void
  /** Descriptors of this process open on the file at `path`, by identity (a store may hold it by another name). */
  const openOn = (path: string) => {
    const file = statSync(path, { bigint: true })
    return readdirSync("/proc/self/fd").filter((fd) => {
      try {
        const s = statSync(`/proc/self/fd/${fd}`, { bigint: true })
        return s.ino === file.ino && s.dev === file.dev
      } catch {
        return false
      }
    }).length
  }
  /** Creates a store and keeps only a weak reference to it (in its own frame, so no temporary keeps it alive). */
  const dropped = async (path: string) => new WeakRef(await SessionStore.create(path))
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
  /** Collects garbage until `until()` holds. WeakRef#deref keeps its target for the rest of the job, so it is never followed by gc() in the same job. */
  const collect = async (until: () => boolean) => {
    for (let i = 0; i < 50; i++) {
      await sleep(0)
      gc()
      await sleep(10)
      if (until()) return
    }
  }

  it("close releases the file; a store dropped without close is released when collected", async () => {
    const { dir, path } = tempSession()
    const store = await SessionStore.create(path)
    expect(openOn(path)).toBe(1)
    await store.close()
    expect(openOn(path)).toBe(0)
    const other = join(dir, "dropped.jsonl")
    await dropped(other)
    expect(openOn(other)).toBe(1)
    await collect(() => openOn(other) === 0)
    expect(openOn(other)).toBe(0)
  })

  it("a tree keeps its store open while the tree is in use", async () => {
    const { path } = tempSession()
    const tree = new SessionTree(await SessionStore.create(path, deterministicOptions()))
    const probe = await dropped(`${path}.probe`)
    await collect(() => probe.deref() === undefined) // long enough for an unreferenced store to go
    expect(probe.deref()).toBeUndefined()
    const entry = await tree.append(user("m1", "still open"))
    expect(entry.id).toBe("entry-001")
    expect(openOn(path)).toBe(1)
  })
})

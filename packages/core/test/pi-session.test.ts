/**
 * PiSession.fromPi on session files written by Pi's own SessionManager
 * (`@mariozechner/pi-coding-agent`) at test time, and on hand-made broken
 * files for every error it reports. Every converted session is also loaded
 * back through `Codec.decodeLines`, independently of the check `fromPi` runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { decodeLines, encodeRecord, MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINE_BYTES, utf8Length } from "../src/Codec.js"
import * as Ids from "../src/Ids.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import { type Converted, type Dropped, fromPi } from "../src/PiSession.js"
import type { Message, SessionEntry, ToolCall } from "../src/Record.js"
import { SessionError, type SessionErrorCode, isSessionError } from "../src/SessionError.js"
import * as SessionStore from "../src/SessionStore.js"
import {
  image,
  lineOf,
  loadPi,
  piInstalled,
  piAssistant,
  piBash,
  piCustom,
  piParts,
  type PiModule,
  type PiPart,
  type PiSessionManager,
  piToolResult,
  piUser,
  tempDir,
  text,
  thinking,
  toolCall,
  writePi
} from "./support/pi.js"
import { describePi } from "./support/piSkip.js"

let pi: PiModule
let dir: string
let files = 0
/** A fresh path in this file's temp directory: Pi's `open` must not see an existing file. */
const fresh = (name: string): string => Path.join(dir, `${++files}-${name}.jsonl`)

beforeAll(async () => {
  if (piInstalled()) pi = await loadPi()
  dir = tempDir()
})
afterAll(() => {
  NFS.rmSync(dir, { recursive: true, force: true })
})

const ok = (result: Either.Either<Converted, SessionError>): Converted => {
  if (Either.isLeft(result)) throw new Error(`expected a conversion, got ${result.left.message}`)
  return result.right
}

const failure = (result: Either.Either<Converted, SessionError>): SessionError => {
  if (Either.isRight(result)) throw new Error(`expected a failure, got ${result.right.entries.length} entries`)
  expect(isSessionError(result.left)).toBe(true)
  return result.left
}

const expectError = (
  result: Either.Either<Converted, SessionError>,
  code: SessionErrorCode,
  line: number | undefined,
  reason?: RegExp
): SessionError => {
  const error = failure(result)
  expect({ code: error.code, line: error.line }).toEqual({ code, line })
  if (reason !== undefined) expect(error.reason).toMatch(reason)
  return error
}

const NONE: Dropped = { images: 0, thinking: 0, compactions: 0, branchSummaries: 0, customMessages: 0, bashExecutions: 0 }

/** Whether every object reachable from `value` is frozen. */
const deeplyFrozen = (value: unknown): boolean => {
  const stack = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v !== "object" || v === null) continue
    if (!Object.isFrozen(v)) return false
    for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key])
  }
  return true
}

/** The converted session loaded as the loader loads any backend's lines: it must be accepted, unchanged. */
const expectLoads = (converted: Converted): void => {
  const lines = [converted.header, ...converted.entries].map(encodeRecord)
  const loaded = decodeLines({ lines, sizes: lines.map(utf8Length), tail: "none" })
  if (Either.isLeft(loaded)) throw new Error(`the loader refuses the converted session: ${loaded.left.message}`)
  expect(loaded.right.header).toEqual(converted.header)
  expect(loaded.right.history.entries).toEqual(converted.entries)
}

/** The converted root→entry path ending at `id`, as entry IDs. */
const pathTo = (entries: ReadonlyArray<SessionEntry>, id: string): Array<string> => {
  const byId = new Map(entries.map((e) => [e.id, e]))
  const path: Array<string> = []
  for (let e = byId.get(id); e !== undefined; e = e.parentId === null ? undefined : byId.get(e.parentId)) path.push(e.id)
  return path.reverse()
}

const user = (id: string, content: string): Message => ({ role: "user", id, content })
const assistant = (id: string, content: string, toolCalls: ReadonlyArray<ToolCall> = []): Message =>
  ({ role: "assistant", id, content, toolCalls })
const tool = (id: string, toolCallId: string, toolName: string, content: string, isError = false): Message =>
  ({ role: "tool", id, toolCallId, toolName, content, isError })

describePi("a plain session written by Pi", () => {
  it("converts to the exact tree: same IDs, timestamps and messages, parents re-attached past skipped entries", () => {
    const ids: Record<string, string> = {}
    const { bytes, sm } = writePi(pi, fresh("plain"), (sm) => {
      sm.appendModelChange("anthropic", "claude-sonnet-4-5")
      sm.appendThinkingLevelChange("off")
      ids.u1 = sm.appendMessage(piUser([text("List the files"), text("in src")]))
      ids.a1 = sm.appendMessage(piAssistant([text("Let me look."), toolCall("toolu_01", "bash", { command: "ls src", flags: ["-a"] })]))
      ids.t1 = sm.appendMessage(piToolResult("toolu_01", "bash", [text("a.ts"), text("b.ts")], false, { exit: 0 }))
      ids.a2 = sm.appendMessage(piAssistant([text("Two files: a.ts and b.ts.")]))
      ids.label = sm.appendLabelChange(ids.a1!, "checkpoint-1")
      ids.u2 = sm.appendMessage(piUser("Now delete b.ts"))
      ids.a3 = sm.appendMessage(piAssistant([text("Deleted.")]))
      sm.branch(ids.a2!)
      ids.model = sm.appendModelChange("openai", "gpt-4o")
      ids.u3 = sm.appendMessage(piUser([text("Show me a.ts instead")]))
      ids.a4 = sm.appendMessage(piAssistant([toolCall("call_xyz", "read", { path: "src/a.ts" })], { provider: "openai", model: "gpt-4o" }))
      ids.t2 = sm.appendMessage(piToolResult("call_xyz", "read", [text("ENOENT")], true))
      ids.a5 = sm.appendMessage(piAssistant([text("The file could not be read.")], { stopReason: "error", errorMessage: "x" }))
      sm.appendSessionInfo("Plain session")
      sm.appendCustomEntry("my-extension", { count: 42 })
      ids.u4 = sm.appendMessage(piUser("after the custom entry"))
      sm.resetLeaf()
      sm.appendThinkingLevelChange("high")
      ids.u5 = sm.appendMessage(piUser("a second root"))
      ids.a6 = sm.appendMessage(piAssistant([]))
    })
    const converted = ok(fromPi(bytes))
    const at = (id: string) => sm.getEntry(id)!.timestamp
    const entry = (name: string, parent: string | null, message: (id: string) => Message): SessionEntry => {
      const id = ids[name]!
      return { type: "entry", version: 1, id, parentId: parent === null ? null : ids[parent]!, timestamp: at(id), message: message(id) }
    }
    expect(converted.header).toEqual({ type: "session", version: 1, id: sm.getHeader()!.id, timestamp: sm.getHeader()!.timestamp })
    expect(converted.entries).toEqual([
      // The model and thinking-level changes above u1 are skipped: u1 becomes a root.
      entry("u1", null, (id) => user(id, "List the files\nin src")),
      entry("a1", "u1", (id) => assistant(id, "Let me look.", [{ id: "toolu_01", name: "bash", arguments: { command: "ls src", flags: ["-a"] } }])),
      entry("t1", "a1", (id) => tool(id, "toolu_01", "bash", "a.ts\nb.ts")),
      entry("a2", "t1", (id) => assistant(id, "Two files: a.ts and b.ts.")),
      entry("u2", "a2", (id) => user(id, "Now delete b.ts")), // past the label
      entry("a3", "u2", (id) => assistant(id, "Deleted.")),
      entry("u3", "a2", (id) => user(id, "Show me a.ts instead")), // the branch, past the model change
      entry("a4", "u3", (id) => assistant(id, "", [{ id: "call_xyz", name: "read", arguments: { path: "src/a.ts" } }])),
      entry("t2", "a4", (id) => tool(id, "call_xyz", "read", "ENOENT", true)),
      entry("a5", "t2", (id) => assistant(id, "The file could not be read.")),
      entry("u4", "a5", (id) => user(id, "after the custom entry")), // past session info and the custom entry
      entry("u5", null, (id) => user(id, "a second root")), // resetLeaf, past a thinking-level change
      entry("a6", "u5", (id) => assistant(id, ""))
    ])
    // The label's and the model change's parents were kept; they really were skipped, not merely reparented.
    expect(sm.getEntry(ids.label!)!.parentId).toBe(ids.a2)
    expect(sm.getEntry(ids.u3!)!.parentId).toBe(ids.model)
    expect(converted.dropped).toEqual(NONE)
    expect(converted.skipped).toEqual({ modelChanges: 2, thinkingLevelChanges: 2, labels: 1, sessionInfo: 1, custom: 1 })
    expect(deeplyFrozen(converted)).toBe(true)
    expectLoads(converted)
  })

  it("converts the same with CRLF line endings and without a final newline", () => {
    const { bytes } = writePi(pi, fresh("endings"), (sm) => {
      sm.appendMessage(piUser("hello"))
      sm.appendMessage(piAssistant([text("hi")]))
    })
    const textOf = new TextDecoder().decode(bytes)
    expect(textOf.endsWith("\n")).toBe(true)
    const expected = ok(fromPi(bytes))
    expect(expected.entries).toHaveLength(2)
    const crlf = new TextEncoder().encode(textOf.replaceAll("\n", "\r\n"))
    const unterminated = new TextEncoder().encode(textOf.slice(0, -1))
    expect(ok(fromPi(crlf))).toEqual(expected)
    expect(ok(fromPi(unterminated))).toEqual(expected)
  })
})

/**
 * For each kind of content Message IR cannot hold, a Pi session holding two pieces of it in
 * two entries: refused naming the first, converted with lossy with both counted.
 */
interface LossCase {
  readonly name: string
  /** Appends the session; returns the ID of the first offending entry. */
  readonly build: (sm: PiSessionManager) => string
  readonly what: RegExp
  readonly dropped: Partial<Dropped>
  /** What the lossy conversion must hold, given the session. */
  readonly check: (converted: Converted, sm: PiSessionManager) => void
}

const messageOf = (converted: Converted, id: string): Message | undefined => converted.entries.find((e) => e.id === id)?.message
const parentOf = (converted: Converted, id: string): string | null | undefined => converted.entries.find((e) => e.id === id)?.parentId

const lossCases: ReadonlyArray<LossCase> = [
  {
    name: "images",
    build: (sm) => {
      const first = sm.appendMessage(piUser([text("What is in this picture?"), image(), image()]))
      sm.appendMessage(piAssistant([toolCall("toolu_img", "read", { path: "shot.png" })]))
      sm.appendMessage(piToolResult("toolu_img", "read", [text("Read image file [image/png]"), image()]))
      sm.appendMessage(piAssistant([text("A single red pixel.")]))
      return first
    },
    what: /2 images in a user message/,
    dropped: { images: 3 },
    check: (converted) => {
      expect(converted.entries.map((e) => e.message.content)).toEqual(["What is in this picture?", "", "Read image file [image/png]", "A single red pixel."])
    }
  },
  {
    name: "thinking",
    build: (sm) => {
      sm.appendThinkingLevelChange("high")
      sm.appendMessage(piUser("What is 17*23?"))
      const first = sm.appendMessage(piAssistant([thinking("17*20 + 17*3", { thinkingSignature: "sig" }), text("391")]))
      sm.appendMessage(piUser("And 2+2?"))
      sm.appendMessage(piAssistant([thinking("", { thinkingSignature: "opaque", redacted: true }), text("4"), toolCall("c1", "calc", { q: "2+2" })]))
      return first
    },
    what: /a thinking block/,
    dropped: { thinking: 2 },
    check: (converted) => {
      const last = converted.entries[3]!.message
      expect(converted.entries[1]!.message.content).toBe("391")
      expect(last).toEqual(assistant(last.id, "4", [{ id: "c1", name: "calc", arguments: { q: "2+2" } }]))
    }
  },
  {
    name: "a compaction",
    build: (sm) => {
      const ids: Array<string> = []
      for (let i = 1; i <= 3; i++) {
        ids.push(sm.appendMessage(piUser(`Question ${i}`)))
        ids.push(sm.appendMessage(piAssistant([text(`Answer ${i}`)])))
      }
      const first = sm.appendCompaction("Questions 1 and 2 were answered.", ids[4]!, 12345, { readFiles: ["a.ts"] })
      sm.appendMessage(piUser("Question 4"))
      sm.appendMessage(piAssistant([text("Answer 4")]))
      sm.appendCompaction("Questions 1 to 3 were answered.", ids[5]!, 23456)
      sm.appendMessage(piUser("Question 5"))
      return first
    },
    what: /a compaction summary/,
    dropped: { compactions: 2 },
    check: (converted, sm) => {
      // Every message before a compaction stays on the path: only the summary is lost.
      const leaf = converted.entries[converted.entries.length - 1]!
      expect(pathTo(converted.entries, leaf.id).map((id) => messageOf(converted, id)!.content)).toEqual([
        "Question 1", "Answer 1", "Question 2", "Answer 2", "Question 3", "Answer 3", "Question 4", "Answer 4", "Question 5"
      ])
      expect(sm.getBranch(leaf.id).filter((e) => e.type === "compaction")).toHaveLength(2)
    }
  },
  {
    name: "a branch summary",
    build: (sm) => {
      const u1 = sm.appendMessage(piUser("first question"))
      sm.appendMessage(piAssistant([text("first answer")]))
      sm.appendMessage(piUser("abandoned"))
      const first = sm.branchWithSummary(u1, "The abandoned branch asked about X.", { readFiles: [] })
      sm.appendMessage(piUser("second question"))
      sm.appendMessage(piAssistant([text("second answer")]))
      sm.branchWithSummary(null, "Everything was abandoned.")
      sm.appendMessage(piUser("a fresh start"))
      return first
    },
    what: /a branch summary/,
    dropped: { branchSummaries: 2 },
    check: (converted, sm) => {
      const second = converted.entries.find((e) => e.message.content === "second question")!
      const fresh = converted.entries.find((e) => e.message.content === "a fresh start")!
      // A branch summary's parent is the branch point, and its children are re-attached there.
      expect(parentOf(converted, second.id)).toBe(converted.entries[0]!.id)
      expect(sm.getEntry(sm.getEntry(second.id)!.parentId!)!.type).toBe("branch_summary")
      expect(fresh.parentId).toBe(null)
    }
  },
  {
    name: "custom messages",
    build: (sm) => {
      sm.appendMessage(piUser("hello"))
      const first = sm.appendCustomMessageEntry("my-extension", "Injected context", true, { foo: 1 })
      sm.appendMessage(piAssistant([text("hi")]))
      sm.appendMessage(piCustom("my-extension", "a custom-role message"))
      sm.appendMessage(piUser("bye"))
      return first
    },
    what: /a custom message/,
    dropped: { customMessages: 2 },
    check: (converted) => {
      expect(converted.entries.map((e) => [e.message.content, e.parentId])).toEqual([
        ["hello", null],
        ["hi", converted.entries[0]!.id],
        ["bye", converted.entries[1]!.id]
      ])
    }
  },
  {
    name: "bash executions",
    build: (sm) => {
      sm.appendMessage(piUser("run it"))
      sm.appendMessage(piAssistant([text("Use !echo hi.")]))
      const first = sm.appendMessage(piBash("echo hi", "hi\n"))
      sm.appendMessage(piBash("ls", "a.ts\n"))
      sm.appendMessage(piUser("done"))
      return first
    },
    what: /a bash execution/,
    dropped: { bashExecutions: 2 },
    check: (converted) => {
      expect(converted.entries.map((e) => e.message.content)).toEqual(["run it", "Use !echo hi.", "done"])
      expect(converted.entries[2]!.parentId).toBe(converted.entries[1]!.id)
    }
  }
]

describePi("content Message IR cannot hold, in sessions written by Pi", () => {
  for (const c of lossCases) {
    it(`${c.name}: refused naming the first entry that holds it; dropped and counted with lossy`, () => {
      let first = ""
      const { bytes, sm } = writePi(pi, fresh(c.name.replaceAll(" ", "-")), (sm) => {
        first = c.build(sm)
        // Pi writes only once there is an assistant message.
        if (!sm.getEntries().some((e) => e.type === "message" && (e["message"] as { role: string }).role === "assistant")) sm.appendMessage(piAssistant([text("ok")]))
      })
      const error = expectError(fromPi(bytes), "SESSION_INVALID_MESSAGE", lineOf(bytes, first), c.what)
      expect(error.reason).toContain(`"${first}"`)
      expectError(fromPi(bytes, { lossy: false }), "SESSION_INVALID_MESSAGE", lineOf(bytes, first))
      const converted = ok(fromPi(bytes, { lossy: true }))
      expect(converted.dropped).toEqual({ ...NONE, ...c.dropped })
      c.check(converted, sm)
      expect(deeplyFrozen(converted)).toBe(true)
      expectLoads(converted)
    })
  }

  it("a Pi file over the caps because of images converts with lossy: the caps hold for the converted session", () => {
    const big = "A".repeat(1_000_000)
    const { bytes } = writePi(pi, fresh("big-images"), (sm) => {
      sm.appendMessage(piUser("read the screenshots"))
      for (let i = 0; i < 5; i++) {
        sm.appendMessage(piAssistant([toolCall(`shot-${i}`, "read", { path: `${i}.png` })]))
        sm.appendMessage(piToolResult(`shot-${i}`, "read", [text(`image ${i}`), image(big)]))
      }
    })
    expect(bytes.length).toBeGreaterThan(MAX_FILE_BYTES)
    expectError(fromPi(bytes), "SESSION_INVALID_MESSAGE", 4, /an image in a tool result/)
    const converted = ok(fromPi(bytes, { lossy: true }))
    expect(converted.dropped).toEqual({ ...NONE, images: 5 })
    expect(converted.entries).toHaveLength(11)
    expectLoads(converted)
  })
})

// ---------------------------------------------------------------------------
// Hand-made files, for the errors Pi's own writer never produces.

const T = "2025-01-15T10:00:01.000Z"
const HEADER = { type: "session", version: 3, id: "01a23335-dad6-7604-a45c-3fe4dbee734a", timestamp: "2025-01-15T10:00:00.000Z", cwd: "/p" }
const piEntry = (type: string, id: string, parentId: string | null, fields: Record<string, unknown> = {}) =>
  ({ type, id, parentId, timestamp: T, ...fields })
const msg = (id: string, parentId: string | null, message: Record<string, unknown>) => piEntry("message", id, parentId, { message })
const u = (id: string, parentId: string | null, content: unknown = "hi") => msg(id, parentId, { role: "user", content, timestamp: 1 })
const a = (id: string, parentId: string | null, calls: ReadonlyArray<readonly [string, string]> = []) =>
  msg(id, parentId, {
    role: "assistant",
    content: [text("ok"), ...calls.map(([callId, name]) => toolCall(callId, name, {}))],
    api: "x", provider: "x", model: "x", stopReason: "stop", timestamp: 2
  })
const r = (id: string, parentId: string | null, callId: string, name: string) =>
  msg(id, parentId, { role: "toolResult", toolCallId: callId, toolName: name, content: [text("out")], isError: false, timestamp: 3 })
const label = (id: string, parentId: string | null, targetId: string) => piEntry("label", id, parentId, { targetId, label: "l" })

/** A file of these lines, objects as JSON, each ending in `\n`. */
const file = (...lines: ReadonlyArray<object | string>): Uint8Array =>
  new TextEncoder().encode(lines.map((l) => (typeof l === "string" ? l : JSON.stringify(l)) + "\n").join(""))
const concat = (...parts: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

describe("hand-made files that are not valid Pi v3 sessions", () => {
  it("a hand-made valid file converts (the baseline the broken ones differ from)", () => {
    const converted = ok(fromPi(file(HEADER, u("e1", null), label("l1", "e1", "e1"), a("e2", "l1", [["c1", "bash"]]), r("e3", "e2", "c1", "bash"))))
    expect(converted.entries.map((e) => [e.id, e.parentId])).toEqual([["e1", null], ["e2", "e1"], ["e3", "e2"]])
    expect(converted.header).toEqual({ type: "session", version: 1, id: HEADER.id, timestamp: HEADER.timestamp })
  })

  it("fields Pi's format does not name are ignored at every level, as Pi ignores them", () => {
    const plain = [u("e1", null), a("e2", "e1", [["c1", "bash"]]), r("e3", "e2", "c1", "bash")] as const
    const extra = { future: { nested: [1] }, role2: "x" }
    // Everywhere but in tool-call arguments, which are content.
    const widened = JSON.parse(JSON.stringify(plain), (key, value) =>
      typeof value === "object" && value !== null && !Array.isArray(value) && key !== "arguments" ? { ...value, ...extra } : value)
    expect(ok(fromPi(file({ ...HEADER, ...extra }, ...widened)))).toEqual(ok(fromPi(file(HEADER, ...plain))))
  })

  it("a role or part type that is not a string is refused, never turned into text", () => {
    const at3 = (message: Record<string, unknown>) => fromPi(file(HEADER, u("e1", null), msg("e2", "e1", message)))
    expectError(at3({ role: { toString: 1 }, content: "x" }), "SESSION_INVALID_MESSAGE", 3, /unknown message role/)
    expectError(at3({ role: "user", content: [{ type: { toString: 1 }, text: "x" }] }), "SESSION_INVALID_MESSAGE", 3, /not text or an image: object/)
  })

  it("SESSION_INVALID_UTF8: invalid bytes anywhere, a sequence cut at the very end", () => {
    const good = file(HEADER, u("e1", null, "caf"))
    // Right after "caf", inside the string.
    const cut = new TextDecoder().decode(good).indexOf("caf") + 3
    const invalid = concat(good.slice(0, cut), Uint8Array.of(0xff), good.slice(cut))
    expectError(fromPi(invalid), "SESSION_INVALID_UTF8", undefined)
    expectError(fromPi(concat(good, Uint8Array.of(0xc3))), "SESSION_INVALID_UTF8", undefined)
    // Overlong encoding of "/" and an encoded surrogate.
    expectError(fromPi(concat(good, Uint8Array.of(0xc0, 0xaf, 0x0a))), "SESSION_INVALID_UTF8", undefined)
    expectError(fromPi(concat(good, Uint8Array.of(0xed, 0xa0, 0x80, 0x0a))), "SESSION_INVALID_UTF8", undefined)
    // The same bytes with a valid "é" convert.
    expect(ok(fromPi(concat(good.slice(0, cut), Uint8Array.of(0xc3, 0xa9), good.slice(cut)))).entries).toHaveLength(1)
  })

  it("SESSION_INVALID_JSON: a line that is not one JSON object, with its line", () => {
    expectError(fromPi(file(HEADER, u("e1", null), "not-json", u("e2", "e1"))), "SESSION_INVALID_JSON", 3)
    expectError(fromPi(file(HEADER, u("e1", null), "", u("e2", "e1"))), "SESSION_INVALID_JSON", 3)
    expectError(fromPi(file(HEADER, `${JSON.stringify(u("e1", null))} x`)), "SESSION_INVALID_JSON", 2)
    expectError(fromPi(file(HEADER, `${JSON.stringify(u("e1", null))}${JSON.stringify(u("e2", "e1"))}`)), "SESSION_INVALID_JSON", 2)
    expectError(fromPi(file(HEADER, "[1,2]")), "SESSION_INVALID_JSON", 2)
    expectError(fromPi(file(HEADER, '{"type":"label","type":"message"}')), "SESSION_INVALID_JSON", 2, /duplicate key/)
    expectError(fromPi(file(HEADER, '{"__proto__":{}}')), "SESSION_INVALID_JSON", 2, /__proto__/)
    expectError(fromPi(file("{\"type\":\"session\"")), "SESSION_INVALID_JSON", 1)
    // A last line cut short (a crash during Pi's append) is not guessed at either.
    const whole = file(HEADER, u("e1", null))
    expectError(fromPi(concat(whole, new TextEncoder().encode('{"type":"message","id":"cut'))), "SESSION_INVALID_JSON", 3)
    // A byte order mark: Pi itself cannot read such a header.
    expectError(fromPi(concat(Uint8Array.of(0xef, 0xbb, 0xbf), whole)), "SESSION_INVALID_JSON", 1)
  })

  it("SESSION_INVALID_HEADER: no header, a header that is not Pi's, a second header", async () => {
    expectError(fromPi(new Uint8Array(0)), "SESSION_INVALID_HEADER", 1)
    expectError(fromPi(file("")), "SESSION_INVALID_HEADER", 1)
    expectError(fromPi(file(u("e1", null))), "SESSION_INVALID_HEADER", 1)
    expectError(fromPi(file({ ...HEADER, cwd: undefined })), "SESSION_INVALID_HEADER", 1, /no cwd/)
    expectError(fromPi(file(HEADER, u("e1", null), HEADER, u("e2", "e1"))), "SESSION_INVALID_HEADER", 3, /second header/)
    // One of this project's own session files, written by its store.
    const storage: MemoryJournal.Storage = new Map()
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function*() {
          const store = yield* SessionStore.create("own")
          yield* store.append(null, { role: "user", id: "m1", content: "hello" })
        })
      ).pipe(Effect.provide(Layer.merge(MemoryJournal.layerStorage(storage), Ids.layerDeterministic)))
    )
    const own = new TextEncoder().encode(storage.get("own")!.join("\n") + "\n")
    expect(JSON.parse(storage.get("own")![0]!)).toMatchObject({ type: "session", version: 2 })
    expectError(fromPi(own), "SESSION_INVALID_HEADER", 1, /session-tree/)
    // The header's ID and timestamp are checked as this project's header is.
    expectError(fromPi(file({ ...HEADER, id: "" })), "SESSION_INVALID_HEADER", 1)
    expectError(fromPi(file({ ...HEADER, timestamp: "2025-01-15 10:00" })), "SESSION_INVALID_HEADER", 1)
  })

  it("SESSION_UNSUPPORTED_VERSION: Pi formats 1 (no version) and 2, and a later one", () => {
    expectError(fromPi(file({ ...HEADER, version: undefined }, u("e1", null))), "SESSION_UNSUPPORTED_VERSION", 1, /no version/)
    expectError(fromPi(file({ ...HEADER, version: 1 }, u("e1", null))), "SESSION_UNSUPPORTED_VERSION", 1)
    expectError(fromPi(file({ ...HEADER, version: 2 }, u("e1", null))), "SESSION_UNSUPPORTED_VERSION", 1)
    expectError(fromPi(file({ ...HEADER, version: 4 }, u("e1", null))), "SESSION_UNSUPPORTED_VERSION", 1)
    expectError(fromPi(file({ ...HEADER, version: "3" }, u("e1", null))), "SESSION_UNSUPPORTED_VERSION", 1)
  })

  it("SESSION_INVALID_RECORD: an entry without a valid envelope, or of an unknown type", () => {
    const { id: _id, ...noId } = u("e2", "e1")
    expectError(fromPi(file(HEADER, u("e1", null), noId)), "SESSION_INVALID_RECORD", 3)
    expectError(fromPi(file(HEADER, u("e1", null), { ...u("e2", "e1"), parentId: 7 })), "SESSION_INVALID_RECORD", 3)
    expectError(fromPi(file(HEADER, u("e1", null), { ...u("e2", "e1"), parentId: undefined })), "SESSION_INVALID_RECORD", 3)
    expectError(fromPi(file(HEADER, u("e1", null), { ...u("e2", "e1"), timestamp: 1736935201000 })), "SESSION_INVALID_RECORD", 3)
    expectError(fromPi(file(HEADER, u("e1", null), { ...label("e2", "e1", "e1"), timestamp: "2025-01-15T10:00:01Z" })), "SESSION_INVALID_RECORD", 3)
    expectError(fromPi(file(HEADER, u("e1", null), piEntry("audio_clip", "e2", "e1"))), "SESSION_INVALID_RECORD", 3, /unknown type "audio_clip"/)
    // Unknown kinds are refused with lossy too: only known content is dropped.
    expectError(fromPi(file(HEADER, piEntry("audio_clip", "e2", null)), { lossy: true }), "SESSION_INVALID_RECORD", 2)
  })

  it("SESSION_INVALID_MESSAGE: unknown roles and parts, and messages the loader's decoder refuses", () => {
    const at3 = (message: Record<string, unknown>, lossy = false) =>
      fromPi(file(HEADER, u("e1", null), msg("e2", "e1", message)), { lossy })
    expectError(at3({ role: "system", content: "x" }), "SESSION_INVALID_MESSAGE", 3, /unknown message role "system"/)
    expectError(at3({ role: "system", content: "x" }, true), "SESSION_INVALID_MESSAGE", 3)
    expectError(at3({ content: "x" }), "SESSION_INVALID_MESSAGE", 3, /role/)
    expectError(fromPi(file(HEADER, piEntry("message", "e1", null))), "SESSION_INVALID_MESSAGE", 2, /not an object/)
    expectError(at3({ role: "user", content: [{ type: "audio", data: "" }] }, true), "SESSION_INVALID_MESSAGE", 3, /"audio"/)
    expectError(at3({ role: "user", content: [{ type: "text", text: 5 }] }), "SESSION_INVALID_MESSAGE", 3)
    expectError(at3({ role: "user", content: 5 }), "SESSION_INVALID_MESSAGE", 3)
    expectError(at3({ role: "assistant", content: "plain" }), "SESSION_INVALID_MESSAGE", 3)
    expectError(at3({ role: "assistant", content: [image()] }, true), "SESSION_INVALID_MESSAGE", 3, /"image"/)
    expectError(at3({ role: "toolResult", content: [thinking("x")] }, true), "SESSION_INVALID_MESSAGE", 3, /"thinking"/)
    // Checked by the loader's decoder on the converted record, reported at the Pi line and entry.
    const badCall = expectError(at3({ role: "assistant", content: [toolCall("c1", "", {})] }), "SESSION_INVALID_MESSAGE", 3)
    expect(badCall.reason).toContain('"e2"')
    expectError(at3({ role: "assistant", content: [toolCall("c1", "bash", {}), toolCall("c1", "bash", {})] }), "SESSION_INVALID_MESSAGE", 3, /repeats/)
    expectError(at3({ role: "assistant", content: [{ type: "toolCall", id: "c1", name: "bash", arguments: [1] }] }), "SESSION_INVALID_MESSAGE", 3)
    const noFlag = fromPi(file(HEADER, a("e1", null, [["c1", "bash"]]), msg("e2", "e1", { role: "toolResult", toolCallId: "c1", toolName: "bash", content: [] })))
    expectError(noFlag, "SESSION_INVALID_MESSAGE", 3, /isError/)
    // A literal no number holds exactly would be rounded by the conversion; refused as a load refuses it.
    const call = JSON.stringify(msg("e2", "e1", { role: "assistant", content: [toolCall("c1", "bash", { n: 1 })], api: "x", provider: "x", model: "x", stopReason: "stop", timestamp: 2 }))
    const snowflake = fromPi(file(HEADER, u("e1", null), call.replace(`"n":1`, `"n":12345678901234567891`)))
    expectError(snowflake, "SESSION_INVALID_MESSAGE", 3, /12345678901234567891.*12345678901234567000/)
    ok(fromPi(file(HEADER, u("e1", null), call.replace(`"n":1`, `"n":1.0`))))
  })

  it("SESSION_UNKNOWN_PARENT: a parent that does not exist or comes later, skipped entries included", () => {
    expectError(fromPi(file(HEADER, u("e1", null), u("e2", "nope"))), "SESSION_UNKNOWN_PARENT", 3, /"nope"/)
    expectError(fromPi(file(HEADER, u("e1", null), u("e2", "e3"), u("e3", "e1"))), "SESSION_UNKNOWN_PARENT", 3)
    expectError(fromPi(file(HEADER, u("e1", null), label("l1", "l2", "e1"), label("l2", "e1", "e1"))), "SESSION_UNKNOWN_PARENT", 3)
    expectError(fromPi(file(HEADER, u("e1", null), u("e2", "e2"))), "SESSION_UNKNOWN_PARENT", 3)
  })

  it("SESSION_DUPLICATE_ID: among all Pi entries, skipped ones included", () => {
    expectError(fromPi(file(HEADER, u("e1", null), u("e1", null))), "SESSION_DUPLICATE_ID", 3, /"e1"/)
    expectError(fromPi(file(HEADER, label("x", null, "x"), u("x", null))), "SESSION_DUPLICATE_ID", 3)
    expectError(fromPi(file(HEADER, u("x", null), piEntry("model_change", "x", "x"))), "SESSION_DUPLICATE_ID", 3)
  })

  it("SESSION_TOOL_LINK: results without an ancestor call, calls answered twice or repeated on a branch", () => {
    // The call is on a sibling branch.
    expectError(
      fromPi(file(HEADER, u("e1", null), a("e2", "e1", [["c1", "bash"]]), u("e3", "e1"), r("e4", "e3", "c1", "bash"))),
      "SESSION_TOOL_LINK", 5, /"e4"/
    )
    expectError(
      fromPi(file(HEADER, a("e1", null, [["c1", "bash"]]), r("e2", "e1", "c1", "bash"), label("l", "e2", "e1"), r("e3", "l", "c1", "bash"))),
      "SESSION_TOOL_LINK", 5, /already answered/
    )
    expectError(fromPi(file(HEADER, a("e1", null, [["c1", "bash"]]), r("e2", "e1", "c1", "read"))), "SESSION_TOOL_LINK", 3)
    expectError(fromPi(file(HEADER, a("e1", null, [["c1", "bash"]]), a("e2", "e1", [["c1", "bash"]]))), "SESSION_TOOL_LINK", 3)
    // A result past skipped entries still finds its call; answering on two branches is fine.
    const fine = ok(fromPi(file(
      HEADER, a("e1", null, [["c1", "bash"]]), label("l1", "e1", "e1"), piEntry("model_change", "m1", "l1"),
      r("e2", "m1", "c1", "bash"), r("e3", "e1", "c1", "bash")
    )))
    expect(fine.entries.map((e) => e.parentId)).toEqual([null, "e1", "e1"])
  })

  it("SESSION_TOO_MANY_ENTRIES: 4,096 converted entries are allowed, skipped ones not counted; the 4,097th is refused", () => {
    const chain = (n: number, labels: number): Array<object> => {
      const lines: Array<object> = [HEADER]
      let parent: string | null = null
      for (let i = 0; i < n; i++) {
        lines.push(u(`e${i}`, parent))
        parent = `e${i}`
        if (i < labels) {
          lines.push(label(`l${i}`, parent, parent))
          parent = `l${i}`
        }
      }
      return lines
    }
    const full = ok(fromPi(file(...chain(MAX_ENTRIES, 100))))
    expect(full.entries).toHaveLength(MAX_ENTRIES)
    expect(full.skipped.labels).toBe(100)
    const over = chain(MAX_ENTRIES + 1, 100)
    expectError(fromPi(file(...over)), "SESSION_TOO_MANY_ENTRIES", over.length, /"e4096"/)
  })

  it("SESSION_LINE_TOO_LONG: a converted line of 65,536 bytes is allowed, 65,537 is refused at its Pi line", () => {
    const emptyLine = encodeRecord({ type: "entry", version: 1, id: "big", parentId: null, timestamp: T, message: { role: "user", id: "big", content: "é" } })
    const content = (bytes: number) => "é" + "a".repeat(bytes - utf8Length(emptyLine))
    const at = (bytes: number) => fromPi(file(HEADER, label("l", null, "l"), u("big", "l", content(bytes))))
    expect(ok(at(MAX_LINE_BYTES)).entries).toHaveLength(1)
    expectError(at(MAX_LINE_BYTES + 1), "SESSION_LINE_TOO_LONG", 3, /"big"/)
  })

  it("SESSION_FILE_TOO_LARGE: a converted generation of 4 MiB is allowed, one byte more is refused", () => {
    const header = encodeRecord({ type: "session", version: 1, id: HEADER.id, timestamp: HEADER.timestamp })
    const lineOfSize = (i: number, content: string) =>
      utf8Length(encodeRecord({ type: "entry", version: 1, id: `e${i}`, parentId: null, timestamp: T, message: { role: "user", id: `e${i}`, content } })) + 1
    const at = (total: number) => {
      const lines: Array<object> = [HEADER]
      let size = utf8Length(header) + 1
      for (let i = 0; size < total; i++) {
        const room = total - size - lineOfSize(i, "")
        let n = Math.min(60_000, room)
        // Never leave less than a whole line's worth for the next entry.
        if (room - n > 0 && room - n < 1_000) n -= 1_000
        lines.push(u(`e${i}`, null, "a".repeat(n)))
        size += lineOfSize(i, "") + n
      }
      expect(size).toBe(total)
      return fromPi(file(...lines))
    }
    expect(ok(at(MAX_FILE_BYTES)).entries.length).toBeGreaterThan(60)
    expectError(at(MAX_FILE_BYTES + 1), "SESSION_FILE_TOO_LARGE", undefined)
  })
})

// ---------------------------------------------------------------------------
// Random sessions written by Pi.

/** mulberry32: a small seeded generator, so a failing case can be replayed from its seed. */
const random = (seed: number): (() => number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface Generated {
  readonly sm: PiSessionManager
  readonly bytes: Uint8Array
  /** Pi entry ID → the message its conversion must give, for every message that is kept. */
  readonly expected: ReadonlyMap<string, Message>
  /** The entries holding content Message IR cannot hold, in file order, with what a lossy conversion drops. */
  readonly offenders: ReadonlyArray<{ readonly id: string; readonly kind: keyof Dropped; readonly count: number }>
}

const TEXTS = ["ok", "", "line one\nline two", "é ü 🙂", "quote \" and \\ backslash", "{\"json\": true}"]

/**
 * A random sequence of SessionManager calls: messages of every kind, tool results answering an open
 * call of the current branch, branches to any entry, new roots, labels, model and thinking-level
 * changes, session info, custom entries; with `mixed`, also every kind of content Message IR cannot
 * hold. The expected conversion of each kept message is recorded as it is appended.
 */
const generate = (rng: () => number, mixed: boolean): Generated => {
  const expected = new Map<string, Message>()
  const offenders: Array<{ id: string; kind: keyof Dropped; count: number }> = []
  const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(rng() * xs.length)]!
  const chance = (p: number) => rng() < p
  let calls = 0
  const { bytes, sm } = writePi(pi, fresh(mixed ? "random-mixed" : "random"), (sm) => {
    const ids: Array<string> = []
    let assistants = 0
    /** Parts of a user message or tool result: texts, and with `mixed` sometimes images. */
    const parts = (): { parts: Array<PiPart>; texts: Array<string>; images: number } => {
      const out: Array<PiPart> = []
      const texts: Array<string> = []
      let images = 0
      for (let n = Math.floor(rng() * 3); n > 0; n--) {
        if (mixed && chance(0.15)) {
          out.push(image())
          images++
        } else {
          const t = pick(TEXTS)
          out.push(text(t))
          texts.push(t)
        }
      }
      return { parts: out, texts, images }
    }
    const openCalls = (): Array<{ id: string; name: string }> => {
      const made: Array<{ id: string; name: string }> = []
      const answered = new Set<string>()
      for (const e of sm.getBranch()) {
        if (e.type !== "message") continue
        const m = e.message as { role: string; content?: unknown; toolCallId?: string }
        if (m.role === "assistant") for (const p of m.content as Array<PiPart>) if (p.type === "toolCall") made.push({ id: p.id, name: p.name })
        if (m.role === "toolResult") answered.add(m.toolCallId!)
      }
      return made.filter((c) => !answered.has(c.id))
    }
    const ops = ["user", "assistant", "assistant", "result", "result", "branch", "reset", "label", "model", "thinkingLevel", "info", "custom"]
    const lossyOps = ["compaction", "branchSummary", "customMessage", "customRole", "bash"]
    const steps = 3 + Math.floor(rng() * 40)
    for (let step = 0; step < steps || assistants === 0; step++) {
      const op = step >= steps ? "assistant" : pick(mixed && chance(0.2) ? lossyOps : ops)
      let id: string | undefined
      switch (op) {
        case "user": {
          if (chance(0.3)) {
            const t = pick(TEXTS)
            id = sm.appendMessage(piUser(t))
            expected.set(id, user(id, t))
          } else {
            const p = parts()
            id = sm.appendMessage(piUser(p.parts))
            expected.set(id, user(id, p.texts.join("\n")))
            if (p.images > 0) offenders.push({ id, kind: "images", count: p.images })
          }
          break
        }
        case "assistant": {
          const content: Array<PiPart> = []
          const texts: Array<string> = []
          const toolCalls: Array<ToolCall> = []
          let thoughts = 0
          for (let n = Math.floor(rng() * 5); n > 0; n--) {
            const kind = rng()
            if (kind < 0.4) {
              const t = pick(TEXTS)
              content.push(text(t))
              texts.push(t)
            } else if (mixed && kind < 0.55) {
              content.push(thinking(pick(TEXTS), chance(0.5) ? { thinkingSignature: "sig", redacted: chance(0.5) } : {}))
              thoughts++
            } else {
              const call = { id: `call-${++calls}`, name: pick(["bash", "read", "edit"]), arguments: { n: calls, path: "src/a.ts", nested: { list: [1, "x", null, true, 2.5] } } }
              content.push(toolCall(call.id, call.name, call.arguments))
              toolCalls.push(call)
            }
          }
          id = sm.appendMessage(piAssistant(content, chance(0.2) ? { stopReason: "aborted", errorMessage: "aborted" } : {}))
          expected.set(id, assistant(id, texts.join("\n"), toolCalls))
          if (thoughts > 0) offenders.push({ id, kind: "thinking", count: thoughts })
          assistants++
          break
        }
        case "result": {
          const open = openCalls()
          if (open.length === 0) break
          const call = pick(open)
          const p = parts()
          const isError = chance(0.3)
          id = sm.appendMessage(piToolResult(call.id, call.name, p.parts, isError, chance(0.5) ? { lines: 3 } : undefined))
          expected.set(id, tool(id, call.id, call.name, p.texts.join("\n"), isError))
          if (p.images > 0) offenders.push({ id, kind: "images", count: p.images })
          break
        }
        case "branch":
          if (ids.length > 0) sm.branch(pick(ids))
          break
        case "reset":
          sm.resetLeaf()
          break
        case "label":
          if (ids.length > 0) id = sm.appendLabelChange(pick(ids), chance(0.8) ? `label ${step}` : undefined)
          break
        case "model":
          id = sm.appendModelChange(pick(["anthropic", "openai"]), pick(["m1", "m2"]))
          break
        case "thinkingLevel":
          id = sm.appendThinkingLevelChange(pick(["off", "low", "high"]))
          break
        case "info":
          id = sm.appendSessionInfo(`session ${step}`)
          break
        case "custom":
          id = sm.appendCustomEntry("ext", { step })
          break
        case "compaction":
          id = sm.appendCompaction("summary", ids.length > 0 ? pick(ids) : "none", 1000)
          offenders.push({ id, kind: "compactions", count: 1 })
          break
        case "branchSummary":
          id = sm.branchWithSummary(ids.length > 0 && chance(0.8) ? pick(ids) : null, "a summary")
          offenders.push({ id, kind: "branchSummaries", count: 1 })
          break
        case "customMessage":
          id = sm.appendCustomMessageEntry("ext", chance(0.5) ? "injected" : piParts([text("injected"), image()]), chance(0.5))
          offenders.push({ id, kind: "customMessages", count: 1 })
          break
        case "customRole":
          id = sm.appendMessage(piCustom("ext", "a custom message"))
          offenders.push({ id, kind: "customMessages", count: 1 })
          break
        case "bash":
          id = sm.appendMessage(piBash("ls", "a.ts\n"))
          offenders.push({ id, kind: "bashExecutions", count: 1 })
          break
      }
      if (id !== undefined) ids.push(id)
    }
  })
  return { sm, bytes, expected, offenders }
}

/**
 * The converted session holds exactly the expected messages, in Pi's file order, with Pi's
 * timestamps; and for every leaf of Pi's tree (and Pi's current leaf) the converted root→leaf path
 * is Pi's own path for that leaf restricted to the kept messages.
 */
const expectSamePaths = (g: Generated, converted: Converted, seed: number): void => {
  const { expected, sm } = g
  const piEntries = sm.getEntries()
  expect(converted.entries.map((e) => e.id), `seed ${seed}`).toEqual(piEntries.filter((e) => expected.has(e.id)).map((e) => e.id))
  for (const e of converted.entries) {
    expect(e.message, `seed ${seed}`).toEqual(expected.get(e.id))
    expect(e.timestamp).toBe(sm.getEntry(e.id)!.timestamp)
  }
  const parents = new Set(piEntries.map((e) => e.parentId))
  const leaves = piEntries.filter((e) => !parents.has(e.id)).map((e) => e.id)
  const current = sm.getLeafId()
  if (current !== null) leaves.push(current)
  for (const leaf of leaves) {
    const branch = sm.getBranch(leaf)
    const piPath = branch.filter((e) => expected.has(e.id)).map((e) => e.id)
    // Pi's context for that leaf holds the same messages, when nothing on the path is summarised or injected.
    if (branch.every((e) => e.type !== "compaction" && e.type !== "branch_summary" && e.type !== "custom_message")) {
      const context = pi.buildSessionContext(piEntries, leaf).messages.filter((m) => ["user", "assistant", "toolResult"].includes(m.role))
      expect(context.length, `seed ${seed}`).toBe(piPath.length)
    }
    const convertedPath = piPath.length === 0 ? [] : pathTo(converted.entries, piPath[piPath.length - 1]!)
    expect(convertedPath, `seed ${seed}, leaf ${leaf}`).toEqual(piPath)
  }
}

describePi("random sessions written by Pi", () => {
  it("without unrepresentable content: always a lossless conversion whose paths are Pi's message paths", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const g = generate(random(seed), false)
      const converted = ok(fromPi(g.bytes))
      expect(converted.dropped).toEqual(NONE)
      expectSamePaths(g, converted, seed)
      expectLoads(converted)
    }
  })

  it("with unrepresentable content: refused at the first offending entry; lossy drops exactly what was put in", () => {
    let refused = 0
    for (let seed = 1001; seed <= 1060; seed++) {
      const g = generate(random(seed), true)
      const strict = fromPi(g.bytes)
      const first = g.offenders[0]
      if (first === undefined) {
        expectSamePaths(g, ok(strict), seed)
      } else {
        refused++
        const error = expectError(strict, "SESSION_INVALID_MESSAGE", lineOf(g.bytes, first.id))
        expect(error.reason, `seed ${seed}`).toContain(`"${first.id}"`)
      }
      const converted = ok(fromPi(g.bytes, { lossy: true }))
      const dropped: { -readonly [K in keyof Dropped]: number } = { ...NONE }
      for (const o of g.offenders) dropped[o.kind] += o.count
      expect(converted.dropped, `seed ${seed}`).toEqual(dropped)
      expectSamePaths(g, converted, seed)
      expectLoads(converted)
    }
    // The generator must exercise the refusal, or this test proves nothing about it.
    expect(refused).toBeGreaterThan(40)
  })
})

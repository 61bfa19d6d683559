/**
 * PiSession.fromPiV2: Pi sessions written by Pi's own SessionManager, and the
 * real Pi sessions of the shared transcript collection, converted to version 2
 * and mapped back to Pi's shape (support/piInverse.ts): the result must equal,
 * field by field, what Pi's SessionManager reads from the original file.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { type ConvertedV2, fromPiV2, SESSION_ENTRY } from "../src/PiSession.js"
import * as RecordV2 from "../src/RecordV2.js"
import { isSessionError, type SessionError, type SessionErrorCode } from "../src/SessionError.js"
import { loadPi, piAssistant, type PiModule, piInstalled, piUser, PNG, tempDir, text, thinking, writePi } from "./support/pi.js"
import { describePi } from "./support/piSkip.js"
import { asWritten, brokenRule, toPi } from "./support/piInverse.js"
import { everything } from "./support/piScenarios.js"
import * as Transcripts from "@session-tree/testing/Transcripts"

let pi: PiModule
let dir: string
let files = 0
const fresh = (name: string): string => Path.join(dir, `${++files}-${name}.jsonl`)

beforeAll(async () => {
  if (piInstalled()) pi = await loadPi()
  dir = tempDir()
})
afterAll(() => {
  NFS.rmSync(dir, { recursive: true, force: true })
})

const ok = (result: Either.Either<ConvertedV2, SessionError>): ConvertedV2 => {
  if (Either.isLeft(result)) throw new Error(`expected a conversion, got ${result.left.message}`)
  return result.right
}

const expectError = (bytes: Uint8Array, code: SessionErrorCode, line: number, reason?: RegExp): SessionError => {
  const result = fromPiV2(bytes)
  if (Either.isRight(result)) throw new Error(`expected ${code}, got ${result.right.entries.length} entries`)
  expect(isSessionError(result.left)).toBe(true)
  expect({ code: result.left.code, line: result.left.line }).toEqual({ code, line })
  if (reason !== undefined) expect(result.left.reason).toMatch(reason)
  return result.left
}

const strict = { onExcessProperty: "error", exact: true } as const
const decodeEntry = Schema.decodeUnknownSync(RecordV2.SessionEntry, strict)
const decodeHeader = Schema.decodeUnknownSync(RecordV2.SessionHeader, strict)

/** Every record valid as version 2 on its own (Schemas, canonical key order) and together (tool links, compactions, labels). */
const expectValid = (converted: ConvertedV2): void => {
  expect(JSON.stringify(decodeHeader(JSON.parse(JSON.stringify(converted.header))))).toBe(JSON.stringify(converted.header))
  for (const entry of converted.entries) {
    // Decoding the written line gives the same line back: the entry is valid and already in canonical key order.
    const line = JSON.stringify(entry)
    expect(JSON.stringify(decodeEntry(JSON.parse(line)))).toBe(line)
  }
  expect(brokenRule(converted.entries)).toBeUndefined()
}

/** The lines of a Pi file as `JSON.parse` reads them: what any reader of the file gets. */
const parsedLines = (bytes: Uint8Array): Array<Record<string, unknown>> =>
  new TextDecoder().decode(bytes).split("\n").filter((line) => line !== "").map((line) => JSON.parse(line) as Record<string, unknown>)

const lines = (...records: ReadonlyArray<unknown>): Uint8Array =>
  new TextEncoder().encode(records.map((r) => JSON.stringify(r)).join("\n") + "\n")

const HEADER = { type: "session", version: 3, id: "s-1", timestamp: "2025-01-15T10:00:00.000Z", cwd: "/p" }
const at = (id: string, parentId: string | null, second: number) =>
  ({ id, parentId, timestamp: `2025-01-15T10:00:${String(second).padStart(2, "0")}.000Z` })

describePi("a Pi session holding every entry kind and content block, written by Pi's SessionManager", () => {
  const build = () => {
    const file = fresh("everything")
    return { ...everything(pi, file), file }
  }

  it("maps back to exactly what Pi's SessionManager reads from the original, field by field", () => {
    const { bytes, file } = build()
    const converted = ok(fromPiV2(bytes))
    expectValid(converted)
    // What Pi itself reads from the file, with a manager of its own.
    const reread = pi.SessionManager.open(file, dir, "/elsewhere")
    const back = toPi(converted.header, converted.entries)
    expect(back.header).toStrictEqual(asWritten(reread.getHeader()))
    expect(back.entries).toStrictEqual(asWritten(reread.getEntries()))
    // And the same against the file's own lines, where no reader has filled in anything.
    const [piHeader, ...piEntries] = parsedLines(bytes)
    expect(back.header).toStrictEqual(piHeader)
    expect(back.entries).toStrictEqual(piEntries)
  })

  it("puts each Pi field where version 2 has a key for it", () => {
    const { bytes, ids } = build()
    const converted = ok(fromPiV2(bytes))
    const byId = new Map(converted.entries.map((e) => [e.id, e]))
    const message = (id: string) => {
      const entry = byId.get(id)
      if (entry?.kind !== "message") throw new Error(`${id} is not a message entry`)
      return entry.message
    }
    expect(converted.header).toEqual({ type: "session", version: 2, id: parsedLines(bytes)[0]!.id, timestamp: parsedLines(bytes)[0]!.timestamp })
    expect(converted.entries[0]).toMatchObject({ id: SESSION_ENTRY, kind: "custom", data: { cwd: "/home/user/project" } })
    const a1 = message(ids.a1!)
    expect(a1).toMatchObject({
      role: "assistant",
      content: [
        { type: "reasoning", text: "Let me think about this.", options: { pi: { thinkingSignature: "EqQBCkgIARABGAIiQL+signature==" } } },
        { type: "reasoning", text: "", options: { pi: { thinking: "[Reasoning redacted]", thinkingSignature: "EmwKAhgBEgy3va+encrypted", redacted: true } } },
        { type: "text", text: "I will look.", options: { pi: { textSignature: "{\"v\":1,\"id\":\"msg_1\"}" } } },
        { type: "tool-call", id: "toolu_01", name: "read", arguments: { path: "a.png" }, options: { pi: { thoughtSignature: "sig-tc" } } },
        { type: "tool-call", id: "toolu_02", name: "bash", arguments: { command: "ls" } }
      ],
      meta: {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        responseId: "msg_01",
        usage: { inputTokens: 100, outputTokens: 20, cachedInputTokens: 0, cacheWriteTokens: 0 },
        stopReason: "toolUse"
      },
      options: { pi: { api: "anthropic-messages", responseModel: "claude-sonnet-4-5-20250929", usage: { totalTokens: 120 } } }
    })
    // What Anthropic's client sends back, derived from Pi's own fields, which stay as Pi wrote them.
    expect(a1.role === "assistant" && a1.content.slice(0, 2).map((p) => p.options)).toEqual([
      { pi: { thinkingSignature: "EqQBCkgIARABGAIiQL+signature==" }, anthropic: { type: "thinking", signature: "EqQBCkgIARABGAIiQL+signature==" } },
      {
        pi: { thinking: "[Reasoning redacted]", thinkingSignature: "EmwKAhgBEgy3va+encrypted", redacted: true },
        anthropic: { type: "redacted_thinking", redactedData: "EmwKAhgBEgy3va+encrypted" }
      }
    ])
    expect(message(ids.t1!)).toMatchObject({
      role: "tool",
      toolCallId: "toolu_01",
      toolName: "read",
      isError: false,
      content: [{ type: "text", text: "the image:" }, { type: "file", mediaType: "image/png", data: { base64: PNG } }],
      result: { bytes: 70, lines: [1, 2] }
    })
    expect(message(ids.t2!)).toMatchObject({ role: "tool", isError: true })
    expect(message(ids.u1!)).toMatchObject({ role: "user", content: [{ type: "text", text: "A string prompt" }], options: { pi: { content: "string" } } })
    expect(message(ids.a2!)).toMatchObject({ meta: { stopReason: "aborted", error: "Request was aborted" } })
    expect(message(ids.custom!)).toMatchObject({ role: "user", options: { pi: { role: "custom", customType: "my-ext", display: true } } })
    expect(byId.get(ids.bash!)).toMatchObject({ kind: "custom", customType: "pi:message", data: { message: { role: "bashExecution", command: "ls -la" } } })
    expect(byId.get(ids.compaction!)).toMatchObject({ kind: "compaction", summary: "Summary of the work so far.", firstKeptEntryId: ids.u2, tokensBefore: 12345 })
    expect(byId.get(`${ids.compaction}:fields`)).toMatchObject({ kind: "custom", parentId: ids.compaction, data: { details: { readFiles: ["a.png"] }, fromHook: false } })
    expect(byId.get(ids.u3!)!.parentId).toBe(`${ids.compaction}:fields`)
    expect(byId.get(ids.label!)).toMatchObject({ kind: "label", targetId: ids.a1, label: "checkpoint" })
    expect(byId.get(ids.summary!)).toMatchObject({ kind: "custom", customType: "pi:branch_summary", parentId: ids.a1, data: { fromId: ids.a1, summary: "What the abandoned branch did." } })
    const kinds = converted.entries.map((e) => e.kind === "custom" ? `custom:${e.customType}` : e.kind === "model" ? `model:${e.thinking ?? "-"}` : e.kind)
    // The thinking-level change after the model change names the new model; the one before any model on the second root is kept whole.
    expect(converted.entries.filter((e) => e.kind === "model")).toMatchObject([
      { provider: "anthropic", model: "claude-sonnet-4-5" },
      { provider: "anthropic", model: "claude-sonnet-4-5", thinking: "high" },
      { provider: "openai", model: "gpt-5" },
      { provider: "openai", model: "gpt-5", thinking: "low" }
    ])
    expect(kinds).toContain("custom:pi:thinking_level_change")
    expect(kinds).toContain("custom:pi:session_info")
    expect(kinds).toContain("custom:pi:custom")
    expect(kinds).toContain("custom:my-ext-state")
    expect(kinds.filter((k) => k === "title")).toHaveLength(1)
    expect(kinds.filter((k) => k === "compaction")).toHaveLength(2)
    expect(converted.whole).toEqual({ "message:bashExecution": 1, session_info: 1, custom: 1, branch_summary: 1, thinking_level_change: 1 })
    // One entry per Pi entry, plus the root entry and the one compaction with fields of its own.
    expect(converted.entries.length).toBe(parsedLines(bytes).length - 1 + 2)
    expect(Object.values(converted.read).reduce((a, b) => a + b, 0)).toBe(parsedLines(bytes).length - 1)
  })

  it("is frozen all the way down", () => {
    const converted = ok(fromPiV2(build().bytes))
    const stack: Array<unknown> = [converted]
    while (stack.length > 0) {
      const v = stack.pop()
      if (typeof v !== "object" || v === null) continue
      expect(Object.isFrozen(v)).toBe(true)
      stack.push(...Object.values(v))
    }
  })
})

describePi("reasoning as the provider's client sends it back", () => {
  it("an OpenAI Responses message's reasoning item (Pi's thinkingSignature) gives its item ID and encrypted content; other APIs give nothing", () => {
    const item = { type: "reasoning", id: "rs_0123", summary: [{ type: "summary_text", text: "Checked." }], encrypted_content: "gAAAAB-encrypted==" }
    const file = fresh("openai")
    const { bytes } = writePi(pi, file, (sm) => {
      sm.appendMessage(piUser([text("Why?")]))
      sm.appendMessage(piAssistant([thinking("Checked.", { thinkingSignature: JSON.stringify(item) }), text("Because.")], {
        api: "openai-responses",
        provider: "openai",
        model: "gpt-5"
      }))
      sm.appendMessage(piAssistant([thinking("Hmm.", { thinkingSignature: "reasoning_content" }), text("So.")], {
        api: "openai-completions",
        provider: "deepseek",
        model: "deepseek-reasoner"
      }))
    })
    const converted = ok(fromPiV2(bytes))
    const reasoning = converted.entries.flatMap((e) => e.kind === "message" && e.message.role === "assistant" ? e.message.content.filter((p) => p.type === "reasoning") : [])
    expect(reasoning.map((p) => p.options)).toEqual([
      { pi: { thinkingSignature: JSON.stringify(item) }, openai: { itemId: "rs_0123", encryptedContent: "gAAAAB-encrypted==" } },
      { pi: { thinkingSignature: "reasoning_content" } }
    ])
    // Mapping back reads Pi's own fields only: the derived keys change nothing of Pi's file.
    const [piHeader, ...piEntries] = parsedLines(bytes)
    const back = toPi(converted.header, converted.entries)
    expect(back.header).toStrictEqual(piHeader)
    expect(back.entries).toStrictEqual(piEntries)
  })
})

describe("what fromPiV2 refuses, naming the line", () => {
  const user = (id: string, parentId: string | null, second: number, content: unknown = "hi") =>
    ({ type: "message", ...at(id, parentId, second), message: { role: "user", content, timestamp: 1 } })

  it("an unknown entry type, role or part; a message entry with a field of its own", () => {
    expectError(lines(HEADER, user("a", null, 1), { type: "bookmark", ...at("b", "a", 2) }), "SESSION_INVALID_RECORD", 3, /unknown type "bookmark"/)
    expectError(lines(HEADER, { type: "message", ...at("a", null, 1), message: { role: "robot", content: "x" } }), "SESSION_INVALID_MESSAGE", 2, /unknown message role "robot"/)
    expectError(lines(HEADER, user("a", null, 1, [{ type: "audio", data: "AAAA" }])), "SESSION_INVALID_MESSAGE", 2, /part 0 has type "audio"/)
    expectError(
      lines(HEADER, user("a", null, 1), { type: "message", ...at("b", "a", 2), message: { role: "assistant", content: [{ type: "image", data: PNG, mimeType: "image/png" }] } }),
      "SESSION_INVALID_MESSAGE",
      3,
      /part 0 has type "image"/
    )
    expectError(lines(HEADER, { ...user("a", null, 1), extra: 1 }), "SESSION_INVALID_RECORD", 2, /"extra"/)
  })

  it("a message that is not Message IR v2 once mapped", () => {
    expectError(lines(HEADER, user("a", null, 1, [{ type: "image", data: "not base64!", mimeType: "image/png" }])), "SESSION_INVALID_MESSAGE", 2, /base64/)
    expectError(lines(HEADER, user("a", null, 1, [])), "SESSION_INVALID_MESSAGE", 2)
    expectError(
      lines(HEADER, user("a", null, 1), { type: "message", ...at("b", "a", 2), message: { role: "assistant", content: [{ type: "toolCall", id: "", name: "x", arguments: {} }] } }),
      "SESSION_INVALID_MESSAGE",
      3
    )
    expectError(
      lines(HEADER, user("a", null, 1), { type: "message", ...at("b", "a", 2), message: { role: "assistant", content: [{ type: "toolCall", id: "c", name: "x", arguments: [1] }] } }),
      "SESSION_INVALID_MESSAGE",
      3
    )
  })

  it("duplicate IDs, unknown parents, broken envelopes, inexact numbers, headers that are not Pi's", () => {
    expectError(lines(HEADER, user("a", null, 1), user("a", "a", 2)), "SESSION_DUPLICATE_ID", 3)
    expectError(lines(HEADER, user("a", "zz", 1)), "SESSION_UNKNOWN_PARENT", 2)
    expectError(lines(HEADER, { ...user("a", null, 1), timestamp: "yesterday" }), "SESSION_INVALID_RECORD", 2)
    expectError(
      new TextEncoder().encode(`${JSON.stringify(HEADER)}\n{"type":"custom","id":"a","parentId":null,"timestamp":"2025-01-15T10:00:01.000Z","customType":"x","data":12345678901234567891}\n`),
      "SESSION_INVALID_RECORD",
      2,
      /12345678901234567891/
    )
    expectError(lines({ ...HEADER, version: 2 }), "SESSION_UNSUPPORTED_VERSION", 1)
    expectError(lines({ type: "session", version: 2, id: "s", timestamp: HEADER.timestamp }), "SESSION_INVALID_HEADER", 1, /session-tree/)
    expectError(lines({ ...HEADER, id: "" }), "SESSION_INVALID_HEADER", 1)
    expectError(lines(HEADER, user("a", null, 1), HEADER), "SESSION_INVALID_HEADER", 3)
    expectError(new TextEncoder().encode(`${JSON.stringify(HEADER)}\n{"type":"message",\n`), "SESSION_INVALID_JSON", 2)
    expectError(new Uint8Array([0xff, 0x0a]), "SESSION_INVALID_UTF8", 1)
    // A last line cut short is Pi still writing it: left out, and said so.
    const torn = ok(fromPiV2(new TextEncoder().encode(`${JSON.stringify(HEADER)}\n${JSON.stringify(user("a", null, 1))}\n{"type":"message","id":"b`)))
    expect([torn.entries.length, torn.torn]).toEqual([2, { line: 3, bytes: 25 }])
  })

  it("what a load would refuse (tool links, caps), at the Pi line it comes from", () => {
    const call = (id: string, parentId: string, second: number, callId: string) =>
      ({ type: "message", ...at(id, parentId, second), message: { role: "assistant", content: [{ type: "toolCall", id: callId, name: "bash", arguments: {} }] } })
    const answer = (id: string, parentId: string, second: number, callId: string) =>
      ({ type: "message", ...at(id, parentId, second), message: { role: "toolResult", toolCallId: callId, toolName: "bash", content: [], isError: false } })
    expectError(lines(HEADER, user("a", null, 1), answer("b", "a", 2, "c1")), "SESSION_TOOL_LINK", 3, /entry "b"/)
    expectError(lines(HEADER, user("a", null, 1), call("b", "a", 2, "c1"), answer("c", "b", 3, "c1"), answer("d", "c", 4, "c1")), "SESSION_TOOL_LINK", 5)
    // A call on a sibling branch does not count.
    expectError(lines(HEADER, user("a", null, 1), call("b", "a", 2, "c1"), answer("c", "a", 3, "c1")), "SESSION_TOOL_LINK", 4)
    expectError(lines(HEADER, user("a", null, 1, "x".repeat(1_048_576))), "SESSION_LINE_TOO_LONG", 2)
  })

  it("keeps whole, as custom entries, entries that do not fit their kind", () => {
    const converted = ok(fromPiV2(lines(
      HEADER,
      user("a", null, 1),
      { type: "label", ...at("l", "a", 2), targetId: "nowhere", label: "x" },
      { type: "model_change", ...at("m", "l", 3), provider: "", modelId: "x" },
      { type: "compaction", ...at("c", "m", 4), summary: "s", firstKeptEntryId: "later", tokensBefore: 1 },
      { type: "custom", ...at("d", "c", 5), customType: "", data: 1 }
    )))
    expectValid(converted)
    expect(converted.whole).toEqual({ label: 1, model_change: 1, compaction: 1, custom: 1 })
    expect(converted.entries.slice(2)).toMatchObject([
      { kind: "custom", customType: "pi:label", data: { targetId: "nowhere", label: "x" } },
      { kind: "custom", customType: "pi:model_change", data: { provider: "", modelId: "x" } },
      { kind: "custom", customType: "pi:compaction", data: { summary: "s", firstKeptEntryId: "later", tokensBefore: 1 } },
      { kind: "custom", customType: "pi:custom", data: { customType: "", data: 1 } }
    ])
  })
})

const REAL = Transcripts.dir("pi")
const real = Transcripts.files("pi")

describe.skipIf(real.length === 0)(`the real Pi sessions in ${REAL}`, () => {
  it.each(real)("%s: converts losslessly (format 3) or is refused at line 1 (older formats)", (name) => {
    const bytes = NFS.readFileSync(Path.join(REAL, name))
    const header = parsedLines(bytes.subarray(0, bytes.indexOf(0x0a)))[0]!
    if (header.version !== 3) {
      expectError(bytes, "SESSION_UNSUPPORTED_VERSION", 1)
      return
    }
    const converted = ok(fromPiV2(bytes))
    expectValid(converted)
    const [piHeader, ...piEntries] = parsedLines(bytes)
    const back = toPi(converted.header, converted.entries)
    expect(back.header).toStrictEqual(piHeader)
    expect(back.entries).toStrictEqual(piEntries)
    expect(Object.values(converted.read).reduce((a, b) => a + b, 0)).toBe(piEntries.length)
    const companions = piEntries.filter((e) => e.type === "compaction" && ("details" in e || "fromHook" in e)).length
    expect(converted.entries.length).toBe(piEntries.length + 1 + companions)
  })
})
if (real.length === 0) it.skip(`the real Pi sessions: ${REAL} is missing`, () => {})

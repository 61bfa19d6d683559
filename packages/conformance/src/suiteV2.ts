/**
 * The conformance cases of version 2, the agent format (`docs/format.md`, "Version 2"), run
 * against every backend like the version-1 suite: every rule of the records, Message IR v2, the
 * tool links and the caps, each accepted and refused at least once, on load (lines put behind the
 * library's back) and on append (through the store and the tree, which must then store nothing).
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { CAPS_V2 } from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import { messageOf, textOf } from "@session-tree/core/Record"
import type { SessionError, SessionErrorCode } from "@session-tree/core/SessionError"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import * as SessionJournalModule from "@session-tree/core/SessionJournal"
import { SessionJournal, type SessionJournalService } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as Crypto from "node:crypto"
import { type Backend, Kit } from "./Kit.js"

const T = "1970-01-01T00:00:00.000Z"
type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

// Records are written out as objects in the canonical key order, so no case trusts the encoder it checks.
const header = (id = "s", extra: { readonly [key: string]: Json } = {}) =>
  JSON.stringify({ type: "session", version: 2, id, timestamp: T, ...extra })
const entry = (id: string, parentId: string | null, kind: string, fields: { readonly [key: string]: Json }) =>
  JSON.stringify({ type: "entry", version: 2, id, parentId, timestamp: T, kind, ...fields })
const message = (id: string, parentId: string | null, value: Json) => entry(id, parentId, "message", { message: value })

const text = (t: string, options?: Json): Json => (options === undefined ? { type: "text", text: t } : { type: "text", text: t, options })
const user = (id: string, t = "hi"): Json => ({ role: "user", id, content: [text(t)] })
const call = (id: string, name = "read", extra: { readonly [key: string]: Json } = {}): Json => ({ type: "tool-call", id, name, arguments: { q: id }, ...extra })
const assistant = (id: string, content: ReadonlyArray<Json>, extra: { readonly [key: string]: Json } = {}): Json => ({ role: "assistant", id, content, ...extra })
const toolMessage = (id: string, callId: string, name = "read", extra: { readonly [key: string]: Json } = {}): Json =>
  ({ role: "tool", id, toolCallId: callId, toolName: name, isError: false, content: [text("done")], ...extra })
const result = (callId: string, name = "search"): Json => ({ type: "tool-result", toolCallId: callId, toolName: name, isError: false, result: { hits: 2 } })
const PNG = "iVBORw0KGgo="
const SIGNED = { anthropic: { signature: "c2lnbmF0dXJl", cache: 1.5 } }

/** A conversation with a call and its result, as lines: e1 user, e2 assistant calling c1, e3 tool answering c1. */
const conversation = (): Array<string> => [
  header(),
  message("e1", null, user("m1")),
  message("e2", "e1", assistant("m2", [{ type: "reasoning", text: "", options: SIGNED }, text("Let me look."), call("c1")])),
  message("e3", "e2", toolMessage("m3", "c1"))
]

interface LoadCase {
  readonly name: string
  readonly lines: () => ReadonlyArray<string>
}

/** Version-2 sessions the loader must refuse, with the code and the line it names. */
const refused: ReadonlyArray<LoadCase & { readonly code: SessionErrorCode; readonly line: number | undefined }> = [
  // The header.
  { name: "a header with an extra key", lines: () => [header("s", { cwd: "/" })], code: "SESSION_INVALID_HEADER", line: 1 },
  { name: "forkedFrom without its entry", lines: () => [header("s", { forkedFrom: { session: "a" } })], code: "SESSION_INVALID_HEADER", line: 1 },
  { name: "forkedFrom null", lines: () => [header("s", { forkedFrom: null })], code: "SESSION_INVALID_HEADER", line: 1 },
  { name: "a version-1 entry in a version-2 session", lines: () => [header(), message("e1", null, user("m1")).replace(`"version":2`, `"version":1`)], code: "SESSION_UNSUPPORTED_VERSION", line: 2 },
  // The entry kinds.
  { name: "an unknown kind", lines: () => [header(), entry("e1", null, "note", { text: "x" })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "an entry without a kind", lines: () => [header(), JSON.stringify({ type: "entry", version: 2, id: "e1", parentId: null, timestamp: T, message: user("m1") })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a message entry with an extra key", lines: () => [header(), entry("e1", null, "message", { message: user("m1"), label: "x" })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a compaction without firstKeptEntryId", lines: () => [header(), message("e1", null, user("m1")), entry("e2", "e1", "compaction", { summary: "s" })], code: "SESSION_INVALID_RECORD", line: 3 },
  { name: "a compaction keeping from a sibling branch", lines: () => [header(), message("e1", null, user("m1")), message("e2", "e1", user("m2")), entry("e3", "e1", "compaction", { summary: "s", firstKeptEntryId: "e2" })], code: "SESSION_INVALID_RECORD", line: 4 },
  { name: "a compaction keeping from itself", lines: () => [header(), message("e1", null, user("m1")), entry("e2", "e1", "compaction", { summary: "s", firstKeptEntryId: "e2" })], code: "SESSION_INVALID_RECORD", line: 3 },
  { name: "a compaction with tokensBefore -1", lines: () => [header(), message("e1", null, user("m1")), entry("e2", "e1", "compaction", { summary: "s", firstKeptEntryId: "e1", tokensBefore: -1 })], code: "SESSION_INVALID_RECORD", line: 3 },
  { name: "a compaction with tokensBefore 1.5", lines: () => [header(), message("e1", null, user("m1")), entry("e2", "e1", "compaction", { summary: "s", firstKeptEntryId: "e1", tokensBefore: 1.5 })], code: "SESSION_INVALID_RECORD", line: 3 },
  { name: "a label of a later entry", lines: () => [header(), entry("e1", null, "label", { targetId: "e2", label: "x" }), message("e2", "e1", user("m2"))], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "an empty label", lines: () => [header(), message("e1", null, user("m1")), entry("e2", "e1", "label", { targetId: "e1", label: "" })], code: "SESSION_INVALID_RECORD", line: 3 },
  { name: "an empty title", lines: () => [header(), entry("e1", null, "title", { title: "" })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a null title", lines: () => [header(), entry("e1", null, "title", { title: null })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a model change with an empty provider", lines: () => [header(), entry("e1", null, "model", { provider: "", model: "m" })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a model change with an empty thinking level", lines: () => [header(), entry("e1", null, "model", { provider: "p", model: "m", thinking: "" })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a custom entry with an empty type", lines: () => [header(), entry("e1", null, "custom", { customType: "", data: 1 })], code: "SESSION_INVALID_RECORD", line: 2 },
  { name: "a custom entry whose data a rewrite would change", lines: () => [header(), entry("e1", null, "custom", { customType: "x", data: 1 }).replace(`"data":1`, `"data":12345678901234567891`)], code: "SESSION_INVALID_RECORD", line: 2 },
  // Message IR v2.
  { name: "an unknown role", lines: () => [header(), message("e1", null, { role: "developer", id: "m1", content: "x" })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a system message with parts", lines: () => [header(), message("e1", null, { role: "system", id: "m1", content: [text("x")] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a user message without parts", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a user message with string content (version 1's form)", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: "hi" })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a reasoning part from the user", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "reasoning", text: "x" }] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a tool call in a tool message", lines: () => [header(), message("e1", null, assistant("m1", [call("c1")])), message("e2", "e1", toolMessage("m2", "c1", "read", { content: [call("c2")] }))], code: "SESSION_INVALID_MESSAGE", line: 3 },
  { name: "a text part with an extra key", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "text", text: "x", cache: true }] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "options that are not an object", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [text("x", ["a"])] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "options whose number a rewrite would change", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [text("x", { n: 1 })] }).replace(`"n":1`, `"n":12345678901234567891`)], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "base64 that is not canonical", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "file", mediaType: "image/png", data: { base64: "QR==" } }] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a file with an empty media type", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "file", mediaType: "", data: { url: "https://example.com/a.png" } }] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "file data of two kinds", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "file", mediaType: "image/png", data: { base64: PNG, url: "https://x" } }] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a blob the store does not hold", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "file", mediaType: "image/png", data: { blob: `sha256:${"a".repeat(64)}`, size: 3 } }] })], code: "SESSION_BLOB_MISSING", line: 2 },
  { name: "a blob name in upper case", lines: () => [header(), message("e1", null, { role: "user", id: "m1", content: [{ type: "file", mediaType: "image/png", data: { blob: `sha256:${"A".repeat(64)}`, size: 3 } }] })], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "empty meta", lines: () => [header(), message("e1", null, assistant("m1", [], { meta: {} }))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "meta with an unknown key", lines: () => [header(), message("e1", null, assistant("m1", [], { meta: { cost: 1 } }))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "usage without output tokens", lines: () => [header(), message("e1", null, assistant("m1", [], { meta: { usage: { inputTokens: 1 } } }))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "negative usage", lines: () => [header(), message("e1", null, assistant("m1", [], { meta: { usage: { inputTokens: -1, outputTokens: 0 } } }))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "providerExecuted false", lines: () => [header(), message("e1", null, assistant("m1", [call("c1", "read", { providerExecuted: false })]))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a call ID twice in one message", lines: () => [header(), message("e1", null, assistant("m1", [call("c1"), call("c1")]))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a tool call with an empty name", lines: () => [header(), message("e1", null, assistant("m1", [call("c1", "")]))], code: "SESSION_INVALID_MESSAGE", line: 2 },
  // Tool links.
  { name: "a tool message answering a call no ancestor makes", lines: () => [header(), message("e1", null, assistant("m1", [call("c1")])), message("e2", null, toolMessage("m2", "c1"))], code: "SESSION_TOOL_LINK", line: 3 },
  { name: "a tool message naming another tool", lines: () => [header(), message("e1", null, assistant("m1", [call("c1")])), message("e2", "e1", toolMessage("m2", "c1", "write"))], code: "SESSION_TOOL_LINK", line: 3 },
  { name: "a call answered twice on a branch", lines: () => [...conversation(), message("e4", "e3", toolMessage("m4", "c1"))], code: "SESSION_TOOL_LINK", line: 5 },
  { name: "a call ID made again on the branch", lines: () => [...conversation(), message("e4", "e3", assistant("m4", [call("c1")]))], code: "SESSION_TOOL_LINK", line: 5 },
  { name: "a tool message answering a provider-executed call", lines: () => [header(), message("e1", null, assistant("m1", [call("c1", "search", { providerExecuted: true })])), message("e2", "e1", toolMessage("m2", "c1", "search"))], code: "SESSION_TOOL_LINK", line: 3 },
  { name: "a tool-result part without its provider-executed call", lines: () => [header(), message("e1", null, assistant("m1", [result("c1")]))], code: "SESSION_TOOL_LINK", line: 2 },
  { name: "a tool-result part before its call", lines: () => [header(), message("e1", null, assistant("m1", [result("c1"), call("c1", "search", { providerExecuted: true })]))], code: "SESSION_TOOL_LINK", line: 2 },
  { name: "a tool-result part answering a call the client runs", lines: () => [header(), message("e1", null, assistant("m1", [call("c1", "search"), result("c1")]))], code: "SESSION_TOOL_LINK", line: 2 },
  { name: "a tool-result part answering twice", lines: () => [header(), message("e1", null, assistant("m1", [call("c1", "search", { providerExecuted: true }), result("c1"), result("c1")]))], code: "SESSION_TOOL_LINK", line: 2 },
  { name: "a tool-result part naming another tool", lines: () => [header(), message("e1", null, assistant("m1", [call("c1", "search", { providerExecuted: true }), result("c1", "fetch")]))], code: "SESSION_TOOL_LINK", line: 2 },
  // Caps.
  {
    name: "a line of 1,048,577 bytes",
    lines: () => {
      const line = message("e1", null, user("m1", ""))
      return [header(), line.replace(`"text":""`, `"text":"${"x".repeat(CAPS_V2.lineBytes + 1 - line.length)}"`)]
    },
    code: "SESSION_LINE_TOO_LONG",
    line: 2
  }
]

/** Version-2 sessions the loader must accept as they are, with their entry count. */
const accepted: ReadonlyArray<LoadCase & { readonly entries: number }> = [
  { name: "the header only", lines: () => [header()], entries: 0 },
  { name: "a forked header", lines: () => [header("s", { forkedFrom: { session: "a", entry: "e9" } })], entries: 0 },
  { name: "a conversation with reasoning, a call and its result", lines: conversation, entries: 3 },
  {
    name: "every part and key of Message IR v2",
    lines: () => [
      header(),
      message("e1", null, { role: "system", id: "m0", content: "Be brief.", options: { openai: { name: "sys" } } }),
      message("e2", "e1", { role: "user", id: "m1", content: [text("Look", { a: [1, { b: null }] }), { type: "file", mediaType: "image/png", name: "a.png", data: { base64: PNG }, options: {} }, { type: "file", mediaType: "text/plain", data: { url: "https://example.com/a.txt" } }], options: { x: 1 } }),
      message("e3", "e2", assistant("m2", [
        { type: "reasoning", text: "thinking", options: SIGNED },
        { type: "reasoning", text: "", options: { anthropic: { redactedData: "abc" } } },
        text("Searching."),
        call("c1", "search", { providerExecuted: true, options: { id: 1 } }),
        { type: "tool-result", toolCallId: "c1", toolName: "search", isError: true, result: null, options: {} },
        { type: "file", mediaType: "image/png", data: { base64: "" } },
        call("c2", "read")
      ], { meta: { provider: "anthropic", model: "claude", responseId: "r1", usage: { inputTokens: 10, outputTokens: 5, reasoningTokens: 2, cachedInputTokens: 1, cacheWriteTokens: 0 }, stopReason: "tool-calls", error: "" }, options: { z: true } })),
      message("e4", "e3", toolMessage("m3", "c2", "read", { isError: true, content: [], result: ["any", 1, null] }))
    ],
    entries: 4
  },
  {
    name: "every kind of entry",
    lines: () => [
      ...conversation(),
      entry("e4", "e3", "compaction", { summary: "They looked.", firstKeptEntryId: "e2", tokensBefore: 1200 }),
      entry("e5", "e4", "compaction", { summary: "", firstKeptEntryId: null }),
      entry("e6", null, "label", { targetId: "e2", label: "checkpoint" }),
      entry("e7", "e5", "label", { targetId: "e2", label: null }),
      entry("e8", "e7", "title", { title: "Reading files" }),
      entry("e9", "e8", "model", { provider: "anthropic", model: "claude", thinking: "high" }),
      entry("e10", "e9", "model", { provider: "openai", model: "gpt" }),
      entry("e11", "e10", "custom", { customType: "ext", data: [1, { deep: [null] }] }),
      entry("e12", "e11", "custom", { customType: "ext", data: null })
    ],
    entries: 12
  },
  { name: "a call answered on one branch and again on another", lines: () => [...conversation(), message("e4", "e2", toolMessage("m4", "c1"))], entries: 4 },
  { name: "a line of 65,537 bytes (over version 1's cap)", lines: () => { const l = message("e1", null, user("m1", "")); return [header(), l.replace(`"text":""`, `"text":"${"x".repeat(65_537 - l.length)}"`)] }, entries: 1 },
  {
    name: "a line of exactly 1,048,576 bytes",
    lines: () => {
      const line = message("e1", null, user("m1", ""))
      return [header(), line.replace(`"text":""`, `"text":"${"x".repeat(CAPS_V2.lineBytes - line.length)}"`)]
    },
    entries: 1
  },
  { name: "keys in another order", lines: () => [`{"timestamp":"${T}","id":"s","version":2,"type":"session"}`, `{"message":{"content":[{"text":"hi","type":"text"}],"id":"m1","role":"user"},"kind":"message","timestamp":"${T}","parentId":null,"id":"e1","version":2,"type":"entry"}`], entries: 1 }
]

/** What an append must refuse: bodies appended in order (each the child of the one before), the last refused. */
const refusedAppends: ReadonlyArray<{ readonly name: string; readonly bodies: ReadonlyArray<unknown>; readonly code: SessionErrorCode }> = [
  { name: "an unknown kind", bodies: [{ kind: "note", text: "x" }], code: "SESSION_INVALID_RECORD" },
  { name: "a body holding an envelope key", bodies: [{ kind: "title", title: "x", id: "e1" }], code: "SESSION_INVALID_RECORD" },
  { name: "a label of an entry that is not there", bodies: [{ kind: "label", targetId: "nope", label: "x" }], code: "SESSION_INVALID_RECORD" },
  { name: "an empty title", bodies: [{ kind: "title", title: "" }], code: "SESSION_INVALID_RECORD" },
  { name: "a model change without a model", bodies: [{ kind: "model", provider: "p" }], code: "SESSION_INVALID_RECORD" },
  { name: "a compaction keeping from no ancestor", bodies: [{ kind: "message", message: user("m1") }, { kind: "compaction", summary: "s", firstKeptEntryId: "elsewhere" }], code: "SESSION_INVALID_RECORD" },
  { name: "custom data that is not JSON", bodies: [{ kind: "custom", customType: "x", data: { n: Number.NaN } }], code: "SESSION_INVALID_RECORD" },
  { name: "a user message without parts", bodies: [{ kind: "message", message: { role: "user", id: "m1", content: [] } }], code: "SESSION_INVALID_MESSAGE" },
  { name: "empty meta", bodies: [{ kind: "message", message: assistant("m1", [], { meta: {} }) }], code: "SESSION_INVALID_MESSAGE" },
  { name: "base64 that is not canonical", bodies: [{ kind: "message", message: { role: "user", id: "m1", content: [{ type: "file", mediaType: "image/png", data: { base64: "QUJ=" } }] } }], code: "SESSION_INVALID_MESSAGE" },
  { name: "a blob the store does not hold", bodies: [{ kind: "message", message: { role: "user", id: "m1", content: [{ type: "file", mediaType: "image/png", data: { blob: `sha256:${"b".repeat(64)}`, size: 1 } }] } }], code: "SESSION_BLOB_MISSING" },
  { name: "a tool message answering a provider-executed call", bodies: [{ kind: "message", message: assistant("m1", [call("c1", "search", { providerExecuted: true })]) }, { kind: "message", message: toolMessage("m2", "c1", "search") }], code: "SESSION_TOOL_LINK" },
  { name: "a tool-result part without its call", bodies: [{ kind: "message", message: assistant("m1", [result("c1")]) }], code: "SESSION_TOOL_LINK" },
  { name: "a call ID made again on the branch", bodies: [{ kind: "message", message: assistant("m1", [call("c1")]) }, { kind: "message", message: assistant("m2", [call("c1")]) }], code: "SESSION_TOOL_LINK" },
  { name: "a version-1 tool message with an empty tool name", bodies: [{ kind: "message", message: { role: "assistant", id: "m1", content: "", toolCalls: [{ id: "c1", name: "t", arguments: {} }] } }, { kind: "message", message: { role: "tool", id: "m2", toolCallId: "c1", toolName: "", content: "x", isError: false } }], code: "SESSION_INVALID_MESSAGE" },
  { name: "a line over 1,048,576 bytes", bodies: [{ kind: "message", message: user("m1", "x".repeat(CAPS_V2.lineBytes)) }], code: "SESSION_LINE_TOO_LONG" }
]

const codeOf = <A>(r: Either.Either<A, SessionError>): SessionErrorCode | "ok" => (Either.isLeft(r) ? r.left.code : "ok")

/** `size` bytes that differ with `seed`, and their SHA-256: file data over the inline size becomes a blob. */
const blobBytes = (seed: number, size = 70_000) => {
  const bytes = new Uint8Array(size).map((_, i) => (i * 131 + seed * 7 + (i >> 8)) & 0xff)
  return { bytes, hash: Crypto.createHash("sha256").update(bytes).digest("hex") }
}
const fileOf = (data: Json | Uint8Array, id = "m1") => ({
  role: "user",
  id,
  content: [text("look"), { type: "file", mediaType: "image/png", data }]
})
const idAt = (journal: SessionJournalService, location: string) => (journal.locations === "sessionId" ? location : "s")
const own = (journal: SessionJournalService, location: string, lines: ReadonlyArray<string>): ReadonlyArray<string> =>
  lines.map((line, i) => (i === 0 ? line.replace(`"id":"s"`, `"id":${JSON.stringify(idAt(journal, location))}`) : line))
const fresh = Layer.fresh(Ids.layerDeterministic)

type Needs = SessionJournal | SessionCatalog | Kit | Ids.Ids | Scope.Scope

/** Registers the version-2 cases against `backend`; counts as the version-1 suite does. */
export const conformanceV2 = (backend: Backend): { readonly cases: number; readonly passed: number } => {
  const registered = { cases: 0, passed: 0 }
  it.layer(backend.layer, { timeout: "120 seconds" })(`SessionJournal conformance, version 2: ${backend.name}`, (it) => {
    const test = (name: string, body: () => Effect.Effect<void, unknown, Needs>) => {
      registered.cases++
      it.scoped(name, () => Effect.tap(Effect.provide(body(), fresh), () => Effect.sync(() => registered.passed++)))
    }

    for (const c of refused) {
      test(`load refuses ${c.name}: ${c.code}, and changes nothing stored`, () =>
        Effect.gen(function*() {
          const kit = yield* Kit
          const journal = yield* SessionJournal
          const location = kit.location("v2-refused")
          const lines = own(journal, location, c.lines())
          yield* kit.put(location, lines)
          const read = yield* Effect.either(SessionStore.read(location))
          expect([codeOf(read), Either.isLeft(read) ? read.left.line : undefined]).toEqual([c.code, c.line])
          expect(codeOf(yield* Effect.either(SessionStore.load(location)))).toBe(c.code)
          expect(yield* kit.raw(location)).toEqual(lines)
        }))
    }

    for (const c of accepted) {
      test(`load accepts ${c.name}; its export is the canonical lines`, () =>
        Effect.gen(function*() {
          const kit = yield* Kit
          const journal = yield* SessionJournal
          const location = kit.location("v2-accepted")
          const lines = own(journal, location, c.lines())
          yield* kit.put(location, lines)
          const loaded = yield* SessionStore.read(location)
          expect([loaded.header.version, loaded.entries.length]).toEqual([2, c.entries])
          expect((yield* SessionStore.load(location)).entries).toEqual(loaded.entries)
          // The canonical lines: every record re-encoded in key order; values, options and numbers kept.
          const jsonl = yield* (yield* Sessions.make).exportJsonl(location)
          expect(jsonl).toBe(lines.map((line) => JSON.stringify(reorder(JSON.parse(line))) + "\n").join(""))
          expect(yield* kit.raw(location)).toEqual(lines)
        }))
    }

    for (const c of refusedAppends) {
      test(`append refuses ${c.name}: ${c.code}, storing nothing and leaving memory as it was`, () =>
        Effect.gen(function*() {
          const kit = yield* Kit
          const location = kit.location("v2-append-refused")
          const tree = yield* SessionTree.make(yield* SessionStore.create(location))
          for (const body of c.bodies.slice(0, -1)) yield* tree.appendEntry(body)
          const before = { raw: yield* kit.raw(location), entries: tree.entries, leaf: tree.activeLeafId }
          const refusal = yield* Effect.either(tree.appendEntry(c.bodies.at(-1)))
          expect(codeOf(refusal)).toBe(c.code)
          expect(Either.isLeft(refusal) && refusal.left._tag).toBe("InputError")
          expect({ raw: yield* kit.raw(location), entries: tree.entries, leaf: tree.activeLeafId }).toEqual(before)
        }))
    }

    test("create is version 2 by default; every kind appends through the tree, in canonical lines, and reloads equal", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const location = kit.location("v2-kinds")
        const store = yield* SessionStore.create(location, { id: idAt(journal, location) })
        expect(store.header).toEqual({ type: "session", version: 2, id: idAt(journal, location), timestamp: T })
        const tree = yield* SessionTree.make(store)
        yield* tree.append({ role: "system", id: "m0", content: "Be brief." })
        const question = yield* tree.append(user("m1", "What is in /project?"))
        const step = yield* tree.appendChain([
          { kind: "message", message: assistant("m2", [{ type: "reasoning", text: "", options: SIGNED }, call("c1")], { meta: { model: "claude", usage: { inputTokens: 3, outputTokens: 4 } } }) },
          { kind: "message", message: toolMessage("m3", "c1") }
        ])
        expect(step.map((e) => e.parentId)).toEqual([question.id, step[0]!.id])
        yield* tree.label(question.id, "start")
        yield* tree.setTitle("Project files")
        yield* tree.setModel({ provider: "anthropic", model: "claude", thinking: "high" })
        yield* tree.custom("ext", { n: 1 })
        yield* tree.compact({ summary: "They asked about /project.", firstKeptEntryId: question.id, tokensBefore: 7 })
        expect(tree.activeEntries.map((e) => (e.version === 2 ? e.kind : "v1"))).toEqual([
          "message", "message", "message", "message", "label", "title", "model", "custom", "compaction"
        ])
        expect(tree.activeMessages.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool"])
        const raw = (yield* kit.raw(location))!
        expect(raw[3]).toBe(entry("entry-003", "entry-002", "message", {
          message: { role: "assistant", id: "m2", content: [{ type: "reasoning", text: "", options: SIGNED }, call("c1")], meta: { model: "claude", usage: { inputTokens: 3, outputTokens: 4 } } }
        }))
        expect(raw[5]).toBe(entry("entry-005", "entry-004", "label", { targetId: question.id, label: "start" }))
        expect(raw[9]).toBe(entry("entry-009", "entry-008", "compaction", { summary: "They asked about /project.", firstKeptEntryId: question.id, tokensBefore: 7 }))
        expect((yield* SessionStore.read(location)).entries).toEqual(tree.entries)
        const listed = (yield* (yield* Sessions.make).list({ directory: kit.directory })).sessions.find((s) => s.location === store.location)
        expect(listed).toMatchObject({ title: "Project files", entries: 9 })
      }))

    test("readAfter gives only the lines appended after a read, and the session whole once it was replaced", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        expect(journal.readAfter).toBeDefined()
        const location = kit.location("v2-read-after")
        const store = yield* SessionStore.create(location, { id: idAt(journal, location) })
        let parent: string | null = null
        for (let i = 0; i < 3; i++) parent = (yield* store.append(parent, user(`m${i}`, `message ${i}`))).id
        const first = yield* journal.read(location)
        // Nothing appended: nothing after.
        const none = yield* SessionJournalModule.readAfter(journal, location, first)
        expect(none._tag).toBe("After")
        expect(none.stored.lines).toEqual([])
        yield* store.append(parent, user("m3", "message 3"))
        yield* store.append(null, user("m4", "a second root"))
        const after = yield* SessionJournalModule.readAfter(journal, location, first)
        const whole = yield* journal.read(location)
        expect(after._tag).toBe("After")
        expect(first.lines.concat(after.stored.lines)).toEqual(whole.lines)
        expect(after.stored.lines).toEqual(whole.lines.slice(4))
        expect(after.stored.sizes).toEqual(whole.sizes.slice(4))
        expect(after.stored.size).toBe(whole.size)
        if (whole.ids !== undefined) expect(after.stored.ids).toEqual(whole.ids.slice(3))
        // From the read after, on again.
        yield* store.append(null, user("m5", "a third root"))
        const next = yield* SessionJournalModule.readAfter(journal, location, after.stored)
        expect([next._tag, next.stored.lines]).toEqual(["After", (yield* journal.read(location)).lines.slice(6)])
        // Removed and stored again with other lines: whole, as it is now.
        yield* kit.remove(location)
        const other = own(journal, location, [header(), message("x1", null, user("x1")), message("x2", "x1", user("x2")), message("x3", "x2", user("x3"))])
        yield* kit.put(location, other)
        const replaced = yield* SessionJournalModule.readAfter(journal, location, first)
        expect([replaced._tag, replaced.stored.lines]).toEqual(["Whole", other])
        const gone = yield* Effect.either(SessionJournalModule.readAfter(journal, location + "-none", first))
        expect(codeOf(gone)).toBe("SESSION_NOT_FOUND")
      }))

    test("a version-1 message appended to a version-2 session is stored in its version-2 form", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("v2-upgrade")
        const store = yield* SessionStore.create(location)
        const root = yield* store.append(null, { role: "user", id: "m1", content: "hi" })
        const step = yield* store.append(root.id, { role: "assistant", id: "m2", content: "", toolCalls: [{ id: "c1", name: "read", arguments: { p: 1 } }] })
        yield* store.append(step.id, { role: "tool", id: "m3", toolCallId: "c1", toolName: "read", content: "", isError: true })
        expect((yield* kit.raw(location))!.slice(1)).toEqual([
          message("entry-001", null, { role: "user", id: "m1", content: [text("hi")] }),
          message("entry-002", "entry-001", { role: "assistant", id: "m2", content: [{ type: "tool-call", id: "c1", name: "read", arguments: { p: 1 } }] }),
          message("entry-003", "entry-002", { role: "tool", id: "m3", toolCallId: "c1", toolName: "read", isError: true, content: [text("")] })
        ])
        // A version-2 message to a version-1 session is refused: nothing converts down.
        const old = yield* SessionStore.create(kit.location("v1-session"), { version: 1 })
        expect(codeOf(yield* Effect.either(old.append(null, user("m1"))))).toBe("SESSION_INVALID_MESSAGE")
        expect(codeOf(yield* Effect.either(old.appendEntry(null, { kind: "title", title: "x" })))).toBe("SESSION_UNSUPPORTED_VERSION")
      }))

    test("appendChain commits all of a chain or none of it", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("v2-chain")
        const tree = yield* SessionTree.make(yield* SessionStore.create(location))
        yield* tree.append(user("m1"))
        const before = { raw: yield* kit.raw(location), leaf: tree.activeLeafId }
        const broken = yield* Effect.either(tree.appendChain([
          { kind: "message", message: assistant("m2", [call("c1")]) },
          { kind: "message", message: toolMessage("m3", "c1", "other") }
        ]))
        expect(codeOf(broken)).toBe("SESSION_TOOL_LINK")
        expect({ raw: yield* kit.raw(location), leaf: tree.activeLeafId }).toEqual(before)
        const made = yield* tree.appendChain([
          { kind: "message", message: assistant("m2", [call("c1")]) },
          { kind: "message", message: toolMessage("m3", "c1") }
        ])
        expect(tree.activeLeafId).toBe(made[1]!.id)
        expect((yield* kit.raw(location))!.length).toBe(before.raw!.length + 2)
      }))

    test("an append stores file data over 65,536 bytes as a blob: the line holds its reference, the bytes read back exactly", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("v2-blob")
        const store = yield* SessionStore.create(location)
        const tree = yield* SessionTree.make(store)
        const big = blobBytes(1)
        const small = blobBytes(2, 65_536)
        const first = yield* tree.append(fileOf(big.bytes))
        const second = yield* tree.append(fileOf({ base64: Buffer.from(small.bytes).toString("base64") }, "m2"))
        const ref = { blob: `sha256:${big.hash}`, size: big.bytes.length }
        expect((yield* kit.raw(location))!.slice(1)).toEqual([
          message(first.id, null, { role: "user", id: "m1", content: [text("look"), { type: "file", mediaType: "image/png", data: ref }] }),
          message(second.id, first.id, {
            role: "user",
            id: "m2",
            content: [text("look"), { type: "file", mediaType: "image/png", data: { base64: Buffer.from(small.bytes).toString("base64") } }]
          })
        ])
        expect(yield* kit.blobs(location)).toEqual([big.hash])
        expect(yield* store.blob(ref.blob)).toEqual(big.bytes)
        const loaded = yield* SessionStore.read(location)
        expect(loaded.entries).toEqual(tree.entries)
        expect(yield* loaded.blob(ref.blob)).toEqual(big.bytes)
        // The same bytes again, or the reference as is, store no second blob; a reference of another size is refused.
        yield* tree.append(fileOf(big.bytes, "m3"))
        yield* tree.append(fileOf(ref, "m4"))
        const before = yield* kit.raw(location)
        expect(codeOf(yield* Effect.either(tree.append(fileOf({ ...ref, size: ref.size + 1 }, "m5"))))).toBe("SESSION_BLOB_MISSING")
        expect(yield* kit.raw(location)).toEqual(before)
        expect(yield* kit.blobs(location)).toEqual([big.hash])
        expect((yield* (yield* SessionStore.load(location)).blob(ref.blob))).toEqual(big.bytes)
      }))

    test("load accepts a session whose referenced blobs are all there with their sizes", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const location = kit.location("v2-blob-put")
        const { bytes, hash } = blobBytes(3, 100)
        const lines = own(journal, location, [header(), message("e1", null, fileOf({ blob: `sha256:${hash}`, size: 100 }) as Json)])
        yield* kit.put(location, lines)
        yield* kit.putBlob(location, hash, bytes)
        const loaded = yield* SessionStore.read(location)
        expect(loaded.entries.map((e) => e.id)).toEqual(["e1"])
        expect(yield* loaded.blob(`sha256:${hash}`)).toEqual(bytes)
        expect(yield* (yield* Sessions.make).exportJsonl(location)).toBe(lines.map((line) => `${line}\n`).join(""))
      }))

    test("a missing or short blob refuses the whole session with SESSION_BLOB_MISSING at its line; a listing shows it unreadable", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("v2-blob-missing")
        const big = blobBytes(4)
        const stored = yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(location)
          const root = yield* store.append(null, user("m0"))
          yield* store.append(root.id, fileOf(big.bytes))
          return store.location
        }))
        const raw = yield* kit.raw(location)
        for (const damage of [kit.removeBlob(location, big.hash), kit.putBlob(location, big.hash, big.bytes.subarray(1))]) {
          yield* damage
          const read = yield* Effect.either(SessionStore.read(location))
          expect([codeOf(read), Either.isLeft(read) ? read.left.line : undefined]).toEqual(["SESSION_BLOB_MISSING", 3])
          expect(codeOf(yield* Effect.either(SessionStore.load(location)))).toBe("SESSION_BLOB_MISSING")
          const listed = (yield* (yield* Sessions.make).list({ directory: kit.directory })).sessions.find((l) => l.location === stored)
          expect(listed).toMatchObject({ error: { code: "SESSION_BLOB_MISSING" } })
          expect(yield* kit.raw(location)).toEqual(raw)
        }
      }))

    test("a blob whose bytes changed but not its size loads; reading it is SESSION_BLOB_CORRUPT", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("v2-blob-corrupt")
        const big = blobBytes(5)
        yield* Effect.scoped(Effect.flatMap(SessionStore.create(location), (store) => store.append(null, fileOf(big.bytes))))
        const changed = big.bytes.slice()
        changed[1000]! ^= 0x80
        yield* kit.putBlob(location, big.hash, changed)
        const loaded = yield* SessionStore.read(location)
        const read = yield* Effect.either(loaded.blob(`sha256:${big.hash}`))
        expect(codeOf(read)).toBe("SESSION_BLOB_CORRUPT")
        expect(Either.isLeft(read) && read.left._tag).toBe("CorruptError")
        expect(codeOf(yield* Effect.either(loaded.blob(`sha256:${blobBytes(6).hash}`)))).toBe("SESSION_BLOB_MISSING")
      }))

    test("fork holds the blobs of its path: removing either session leaves the other's blobs readable", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const service = yield* Sessions.make
        const source = kit.location("v2-blob-source")
        const kept = blobBytes(7)
        const other = blobBytes(8)
        const first = yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(source, { id: idAt(journal, source) })
          const first = yield* store.append(null, fileOf(kept.bytes))
          yield* store.append(null, fileOf(other.bytes, "m2"))
          return first
        }))
        const target = kit.location("v2-blob-fork")
        const forked = yield* service.fork(source, first.id, target)
        expect(yield* kit.blobs(target)).toEqual([kept.hash])
        const again = kit.location("v2-blob-fork-2")
        yield* service.fork(source, first.id, again)
        // The first fork outlives its source; the source outlives the second fork.
        yield* kit.remove(again)
        expect(yield* (yield* service.read(source)).blob(`sha256:${kept.hash}`)).toEqual(kept.bytes)
        yield* kit.remove(source)
        expect(yield* kit.raw(source)).toBeUndefined()
        const read = yield* service.read(forked.location)
        expect(read.entries.map((e) => e.id)).toEqual([first.id])
        expect(yield* read.blob(`sha256:${kept.hash}`)).toEqual(kept.bytes)
      }))

    test("import with the blobs' bytes round-trips a session with blobs: the same entries, every blob read back", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const service = yield* Sessions.make
        const source = kit.location("v2-blob-export")
        const one = blobBytes(9)
        const two = blobBytes(10, 65_537)
        yield* Effect.scoped(Effect.gen(function*() {
          const tree = yield* SessionTree.make(yield* SessionStore.create(source, { id: idAt(journal, source) }))
          yield* tree.append(fileOf(one.bytes))
          yield* tree.appendEntry({ kind: "message", message: assistant("m2", [text("seen"), { type: "file", mediaType: "image/png", data: { base64: Buffer.from(two.bytes).toString("base64") } }]) })
        }))
        const loaded = yield* service.read(source)
        const bytes = new Map<string, Uint8Array>()
        for (const hash of [one.hash, two.hash]) bytes.set(`sha256:${hash}`, yield* loaded.blob(`sha256:${hash}`))
        const into = kit.location("v2-blob-import")
        const records = { header: { ...loaded.header, id: idAt(journal, into) }, entries: loaded.entries }
        const to = journal.locations === "chosen" ? into : undefined
        expect(codeOf(yield* Effect.either(service.import(records, to)))).toBe("SESSION_BLOB_MISSING")
        expect(yield* kit.raw(into)).toBeUndefined()
        const imported = yield* service.import(records, to, { blobs: bytes })
        const stored = yield* service.read(imported.location)
        expect(stored.entries).toEqual(loaded.entries)
        expect(yield* kit.blobs(into)).toEqual([one.hash, two.hash].sort())
        expect(yield* stored.blob(`sha256:${two.hash}`)).toEqual(two.bytes)
        expect(yield* service.exportJsonl(imported.location)).toBe(Sessions.toJsonl(records))
      }))

    test("fork and import convert a version-1 source to version 2 when asked, and never down", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const service = yield* Sessions.make
        const source = kit.location("v1-source")
        const old = yield* SessionTree.make(yield* SessionStore.create(source, { version: 1, id: idAt(journal, source) }))
        yield* old.append({ role: "user", id: "m1", content: "hi" })
        const answer = yield* old.append({ role: "assistant", id: "m2", content: "hello", toolCalls: [] })
        const target = kit.location("v2-fork")
        yield* service.fork(source, answer.id, target, { version: 2 })
        const forked = yield* SessionStore.read(target)
        expect(forked.header).toMatchObject({ version: 2, forkedFrom: { session: idAt(journal, source), entry: answer.id } })
        expect(forked.entries.map((e) => [e.id, e.version, textOf(messageOf(e)!)])).toEqual([["entry-001", 2, "hi"], [answer.id, 2, "hello"]])
        const same = kit.location("v1-fork")
        yield* service.fork(source, answer.id, same)
        expect((yield* SessionStore.read(same)).header.version).toBe(1)
        const down = kit.location("never-down")
        expect(codeOf(yield* Effect.either(service.fork(target, answer.id, down, { version: 1 })))).toBe("SESSION_UNSUPPORTED_VERSION")
        expect(yield* kit.raw(down)).toBeUndefined()

        const v1 = yield* SessionStore.read(source)
        const into = kit.location("v2-import")
        const records = { header: { ...v1.header, id: idAt(journal, into) }, entries: v1.entries }
        const imported = yield* service.import(records, journal.locations === "chosen" ? into : undefined, { version: 2 })
        const stored = yield* SessionStore.read(imported.location)
        expect(stored.header).toEqual({ type: "session", version: 2, id: records.header.id, timestamp: records.header.timestamp })
        expect(stored.entries.map((e) => textOf(messageOf(e)!))).toEqual(["hi", "hello"])
        // Export gives the canonical lines byte for byte, and they import back to the same records.
        const jsonl = yield* service.exportJsonl(imported.location)
        expect(jsonl).toBe(Sessions.toJsonl(stored))
      }))
  })
  return registered
}

/** A record's keys in the canonical order of its kind (the test's own reading of the format). */
const reorder = (value: { readonly [key: string]: Json }): Json => {
  const pick = (o: { readonly [key: string]: Json }, keys: ReadonlyArray<string>, inner: { readonly [key: string]: (v: Json) => Json } = {}) =>
    Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, inner[k] ? inner[k](o[k]!) : o[k]!]))
  const part = (p: Json): Json => {
    const o = p as { readonly [key: string]: Json }
    switch (o["type"]) {
      case "text":
      case "reasoning":
        return pick(o, ["type", "text", "options"])
      case "file":
        return pick(o, ["type", "mediaType", "name", "data", "options"], { data: (d) => pick(d as never, ["base64", "url", "blob", "size"]) })
      case "tool-call":
        return pick(o, ["type", "id", "name", "arguments", "providerExecuted", "options"])
      default:
        return pick(o, ["type", "toolCallId", "toolName", "isError", "result", "options"])
    }
  }
  const parts = (c: Json) => (Array.isArray(c) ? c.map(part) : c)
  const msg = (m: Json): Json => {
    const o = m as { readonly [key: string]: Json }
    const usage = (u: Json) => pick(u as never, ["inputTokens", "outputTokens", "reasoningTokens", "cachedInputTokens", "cacheWriteTokens"])
    switch (o["role"]) {
      case "assistant":
        return pick(o, ["role", "id", "content", "meta", "options"], { content: parts, meta: (x) => pick(x as never, ["provider", "model", "responseId", "usage", "stopReason", "error"], { usage }) })
      case "tool":
        return pick(o, ["role", "id", "toolCallId", "toolName", "isError", "content", "result", "options"], { content: parts })
      default:
        return pick(o, ["role", "id", "content", "options"], { content: parts })
    }
  }
  if (value["type"] === "session") return pick(value, ["type", "version", "id", "timestamp", "forkedFrom"], { forkedFrom: (f) => pick(f as never, ["session", "entry"]) })
  const envelope = ["type", "version", "id", "parentId", "timestamp", "kind"]
  const keys: { readonly [kind: string]: ReadonlyArray<string> } = {
    message: ["message"],
    compaction: ["summary", "firstKeptEntryId", "tokensBefore", "usage"],
    label: ["targetId", "label"],
    title: ["title"],
    model: ["provider", "model", "thinking"],
    custom: ["customType", "data"]
  }
  return pick(value, [...envelope, ...keys[value["kind"] as string]!], { message: msg })
}

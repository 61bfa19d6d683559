/**
 * The benchmark conversation (`data.ts`) as an agent writes it in version 2
 * (`docs/format.md`, "Version 2"): every message upgraded as an append of it
 * is (`RecordV2.upgradeMessage`: a string becomes one text part, each tool call
 * a `tool-call` part after the text), then what a real agent adds around the same turns: each
 * assistant message opens with its reasoning, whose provider signature sits in
 * `options`, and carries `meta` (provider, model, response ID, usage, stop
 * reason); the session starts with a model entry and holds a title, a few model
 * changes and a few labels. The version-1 file of the same conversation is
 * `ourFile` of the same entries.
 */
import { Buffer } from "node:buffer"
import type * as Record1 from "@session-tree/core/Record"
import * as RecordV2 from "@session-tree/core/RecordV2"
import type { Conversation, Entry, Message } from "./data.js"
import { linearLines } from "@session-tree/testing/Corpus"

export interface HeaderV2 {
  readonly type: "session"
  readonly version: 2
  readonly id: string
  readonly timestamp: string
}

export type EntryV2 = {
  readonly type: "entry"
  readonly version: 2
  readonly id: string
  readonly parentId: string | null
  readonly timestamp: string
  readonly kind: string
  readonly [key: string]: unknown
}

export interface ConversationV2 {
  readonly header: HeaderV2
  readonly entries: ReadonlyArray<EntryV2>
}

interface ToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: { readonly [key: string]: unknown }
}

/** A Message IR v1 value in its version-2 form: the core's upgrade, as an append to a version-2 session stores it. */
export const upgrade = (m: Message): Record<string, unknown> => ({ ...RecordV2.upgradeMessage(m as unknown as Record1.Message) })

/** mulberry32, as in `data.ts`: the same extras on every machine. */
const prng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const THOUGHTS = (
  "the user wants the failing test fixed first so read the file then run the suite again " +
  "the error says the type is not assignable which means the schema changed check the record shape " +
  "maybe the parent is missing let me look at the loader before touching the writer"
).split(" ")

/**
 * The version-2 session of `c`: the same messages upgraded, with reasoning, signatures and meta on
 * every assistant message, and the extra entries of an agent's session. Its entries keep their
 * tree: an inserted entry becomes the parent of the entries that followed the one it was put after.
 */
export const agentSession = (c: Conversation, seed = 2): ConversationV2 => {
  const rand = prng(seed)
  const words = (n: number) => Array.from({ length: n }, () => THOUGHTS[Math.floor(rand() * THOUGHTS.length)]!).join(" ")
  // A signature of a realistic length: opaque base64 the provider checks byte for byte.
  const signature = () => Buffer.from(Array.from({ length: 240 + Math.floor(rand() * 240) }, () => Math.floor(rand() * 256))).toString("base64")
  const entries: Array<EntryV2> = []
  // Where each version-1 entry's children now hang: itself, or the last entry inserted after it.
  const parentOf = new Map<string, string>()
  const envelope = (id: string, parentId: string | null, timestamp: string) =>
    ({ type: "entry", version: 2, id, parentId, timestamp } as const)
  const insertAfter = (after: Entry | null, body: Record<string, unknown> & { readonly kind: string }, n: number) => {
    const parentId = after === null ? null : parentOf.get(after.id) ?? after.id
    const id = `x-${n}`
    const timestamp = after === null ? c.header.timestamp : after.timestamp
    entries.push({ ...envelope(id, parentId, timestamp), ...body })
    if (after !== null) parentOf.set(after.id, id)
    return id
  }
  const root = insertAfter(null, { kind: "model", provider: "anthropic", model: "claude-sonnet-4-5", thinking: "medium" }, 0)
  let extras = 1
  c.entries.forEach((e, i) => {
    const parentId = e.parentId === null ? root : parentOf.get(e.parentId) ?? e.parentId
    const message = upgrade(e.message)
    if (e.message.role === "assistant") {
      const calls = e.message["toolCalls"] as ReadonlyArray<ToolCall>
      message["content"] = [
        { type: "reasoning", text: words(20 + Math.floor(rand() * 60)), options: { anthropic: { signature: signature() } } },
        ...(message["content"] as ReadonlyArray<unknown>)
      ]
      message["meta"] = {
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        responseId: `msg_${e.id.replaceAll("-", "").slice(0, 24)}`,
        usage: {
          inputTokens: 1_000 + Math.floor(rand() * 20_000),
          outputTokens: 50 + Math.floor(rand() * 2_000),
          reasoningTokens: 20 + Math.floor(rand() * 500),
          cachedInputTokens: Math.floor(rand() * 15_000)
        },
        stopReason: calls.length > 0 ? "tool-calls" : "stop"
      }
    }
    entries.push({ ...envelope(e.id, parentId, e.timestamp), kind: "message", message })
    if (i === 1) insertAfter(e, { kind: "title", title: words(6) }, extras++)
    else if (i % 700 === 350 && e.message.role === "assistant") {
      insertAfter(e, { kind: "model", provider: "anthropic", model: i % 1400 === 350 ? "claude-opus-4-1" : "claude-sonnet-4-5" }, extras++)
    } else if (i % 400 === 200) {
      const target = c.entries[Math.floor(rand() * i)]!
      insertAfter(e, { kind: "label", targetId: target.id, label: `checkpoint ${i}` }, extras++)
    }
  })
  return { header: { type: "session", version: 2, id: c.header.id, timestamp: c.header.timestamp }, entries }
}

/**
 * A linear version-2 session of `n` short messages, user and assistant by turns (the session of
 * 100,000 entries that the server's Chromium test opens cold, and the live benchmark appends to):
 * the test support's lines, as records.
 */
export const linearSession = (id: string, n: number): ConversationV2 => {
  const [header, ...entries] = linearLines(id, n).map((line) => JSON.parse(line))
  return { header, entries }
}

/** The canonical generation of a version-2 session. */
export const fileV2 = (c: ConversationV2): Buffer =>
  Buffer.from([c.header, ...c.entries].map((r) => JSON.stringify(r) + "\n").join(""), "utf8")

/**
 * The longest prefix of `c` whose version-2 session fits in `bytes`, and that session: both files
 * of a comparison then hold the same messages.
 */
export const sameConversation = (c: Conversation, bytes: number): { readonly v1: Conversation; readonly v2: ConversationV2 } => {
  let lo = 1
  let hi = c.entries.length
  const fits = (n: number) => fileV2(agentSession({ header: c.header, entries: c.entries.slice(0, n) })).length <= bytes
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2)
    if (fits(mid)) lo = mid
    else hi = mid - 1
  }
  const v1 = { header: c.header, entries: c.entries.slice(0, lo) }
  return { v1, v2: agentSession(v1) }
}

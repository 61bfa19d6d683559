/**
 * Deterministic session content for the benchmarks: one conversation (user
 * turns, assistant turns with tool calls, tool results, occasional branches)
 * written in this project's format and, with the same messages, in Pi's
 * session format (version 3), so both loaders read the same conversation.
 */
import { Buffer } from "node:buffer"

export interface Message {
  readonly role: "user" | "assistant" | "tool"
  readonly [key: string]: unknown
}

export interface Entry {
  readonly type: "entry"
  readonly version: 1
  readonly id: string
  readonly parentId: string | null
  readonly timestamp: string
  readonly message: Message
}

export interface Header {
  readonly type: "session"
  readonly version: 1
  readonly id: string
  readonly timestamp: string
}

/** mulberry32: small, fast and the same on every machine. */
export const prng = (seed: number) => {
  let a = seed >>> 0
  return (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = (
  "the session file holds one header line and then one entry per line each entry names its parent " +
  "so a branch needs only a pointer to the current leaf const result = await load(path) if (result.ok) return " +
  "function append(parentId, message) { return queue.run(() => commit(next)) } src/store.ts test/load.test.ts " +
  "npm run build error TS2322 type string is not assignable expected received 42 null undefined true false"
).split(" ")
// A few non-ASCII words, as real transcripts have; `ascii: true` leaves them out.
const UNICODE_WORDS = ["naïve", "café", "—", "→", "✓", "größer", "日本語", "😀"]

const BASE_TIME = Date.UTC(2026, 0, 2, 3, 4, 5, 6)

export interface Options {
  /** How many entries. */
  readonly entries: number
  /** Average UTF-8 bytes of one entry line (approximate). */
  readonly lineBytes?: number
  /** Leave out non-ASCII text (the loader's faster latin1 path). */
  readonly ascii?: boolean
  readonly seed?: number
}

export interface Conversation {
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
}

/** A UUID-shaped ID from the generator, like `randomUUID()` writes. */
const uuid = (rand: () => number): string => {
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rand() * 16).toString(16)).join("")
  return `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`
}

export const conversation = (options: Options): Conversation => {
  const rand = prng(options.seed ?? 1)
  const lineBytes = options.lineBytes ?? 1120
  const text = (bytes: number): string => {
    const words: Array<string> = []
    let length = 0
    while (length < bytes) {
      const w = !options.ascii && rand() < 0.02
        ? UNICODE_WORDS[Math.floor(rand() * UNICODE_WORDS.length)]!
        : rand() < 0.03
        ? "\"quoted\"\n"
        : rand() < 0.01
        ? "C:\\path\\to"
        : WORDS[Math.floor(rand() * WORDS.length)]!
      words.push(w)
      length += Buffer.byteLength(w) + 1
    }
    return words.join(" ")
  }
  // Per-line overhead of the envelope (type, version, UUIDs, timestamp, message keys) is ~200 bytes.
  const body = () => Math.max(20, Math.round((lineBytes - 200) * (0.5 + rand())))
  const entries: Array<Entry> = []
  let leaf: string | null = null
  let calls = 0
  const push = (message: Message, parentId: string | null = leaf): Entry => {
    const entry: Entry = {
      type: "entry",
      version: 1,
      id: uuid(rand),
      parentId,
      timestamp: new Date(BASE_TIME + entries.length * 1_000 + Math.floor(rand() * 999)).toISOString(),
      message
    }
    entries.push(entry)
    leaf = entry.id
    return entry
  }
  while (entries.length < options.entries) {
    // Now and then go back to an earlier turn and branch from there.
    if (entries.length > 20 && rand() < 0.03) {
      const back = entries[entries.length - 1 - Math.floor(rand() * 20)]!
      if (back.message.role !== "assistant" || (back.message["toolCalls"] as Array<unknown>).length === 0) leaf = back.id
    }
    push({ role: "user", id: `m-${entries.length}`, content: text(body()) })
    if (entries.length >= options.entries) break
    const n = rand() < 0.6 ? 1 + Math.floor(rand() * 2) : 0
    const toolCalls = Array.from({ length: n }, () => ({
      id: `call-${++calls}`,
      name: rand() < 0.5 ? "read" : "bash",
      arguments: { path: `src/file-${calls}.ts`, command: text(40), limit: 200 }
    }))
    push({ role: "assistant", id: `m-${entries.length}`, content: text(body() / 2), toolCalls })
    for (const call of toolCalls) {
      if (entries.length >= options.entries) break
      push({
        role: "tool",
        id: `m-${entries.length}`,
        toolCallId: call.id,
        toolName: call.name,
        content: text(body()),
        isError: rand() < 0.1
      })
    }
    if (entries.length < options.entries && n > 0) {
      push({ role: "assistant", id: `m-${entries.length}`, content: text(body() / 2), toolCalls: [] })
    }
  }
  return {
    header: { type: "session", version: 1, id: uuid(rand), timestamp: new Date(BASE_TIME).toISOString() },
    entries: entries.slice(0, options.entries)
  }
}

/** The canonical generation (`docs/format.md`, "Canonical bytes"): `JSON.stringify` of each record plus `\n`. */
export const ourFile = (c: Conversation): Buffer =>
  Buffer.from([c.header, ...c.entries].map((r) => JSON.stringify(r) + "\n").join(""), "utf8")

/** The same message in Pi's Message shape (pi-ai `UserMessage` / `AssistantMessage` / `ToolResultMessage`). */
export const piMessage = (m: Message, timestamp: number): Record<string, unknown> => {
  switch (m.role) {
    case "user":
      return { role: "user", content: [{ type: "text", text: m["content"] }], timestamp }
    case "assistant": {
      const calls = m["toolCalls"] as ReadonlyArray<{ id: string; name: string; arguments: unknown }>
      return {
        role: "assistant",
        content: [
          { type: "text", text: m["content"] },
          ...calls.map((c) => ({ type: "toolCall", id: c.id, name: c.name, arguments: c.arguments }))
        ],
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage: {
          input: 1200,
          output: 300,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 1500,
          cost: { input: 0.0036, output: 0.0045, cacheRead: 0, cacheWrite: 0, total: 0.0081 }
        },
        stopReason: calls.length > 0 ? "toolUse" : "stop",
        timestamp
      }
    }
    case "tool":
      return {
        role: "toolResult",
        toolCallId: m["toolCallId"],
        toolName: m["toolName"],
        content: [{ type: "text", text: m["content"] }],
        isError: m["isError"],
        timestamp
      }
  }
}

/** Pi's session file (format version 3) of the same conversation: same IDs, parents and timestamps. */
export const piFile = (c: Conversation, cwd = "/work/project"): Buffer => {
  const header = { type: "session", version: 3, id: c.header.id, timestamp: c.header.timestamp, cwd }
  const lines = [JSON.stringify(header)]
  for (const e of c.entries) {
    lines.push(JSON.stringify({
      type: "message",
      id: e.id,
      parentId: e.parentId,
      timestamp: e.timestamp,
      message: piMessage(e.message, Date.parse(e.timestamp))
    }))
  }
  return Buffer.from(lines.join("\n") + "\n", "utf8")
}

/** The first entries of `c` whose canonical file reaches `bytes` (at least one entry). */
export const prefixOfSize = (c: Conversation, bytes: number): Conversation => {
  let size = Buffer.byteLength(JSON.stringify(c.header)) + 1
  let n = 0
  while (n < c.entries.length && size < bytes) size += Buffer.byteLength(JSON.stringify(c.entries[n++])) + 1
  return { header: c.header, entries: c.entries.slice(0, Math.max(1, n)) }
}

/**
 * `count` sessions of mixed sizes, log-uniform from `minBytes` to `maxBytes` (most small, some
 * large, as agent sessions are): prefixes of one conversation, each under its own session ID.
 */
export const mixedSessions = (count: number, minBytes = 2 * 1024, maxBytes = 1024 * 1024): Array<Conversation> => {
  const full = conversation({ entries: 1_200 })
  // Entries needed for each size, from the cumulative sizes of the canonical lines.
  const cumulative: Array<number> = []
  let size = Buffer.byteLength(JSON.stringify(full.header)) + 1
  for (const e of full.entries) cumulative.push(size += Buffer.byteLength(JSON.stringify(e)) + 1)
  let seed = 7
  const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296)
  return Array.from({ length: count }, (_, i) => {
    const target = Math.exp(Math.log(minBytes) + rand() * (Math.log(maxBytes) - Math.log(minBytes)))
    const n = Math.max(1, cumulative.findIndex((c) => c >= target) + 1 || full.entries.length)
    return {
      header: { ...full.header, id: `00000000-0000-4000-a000-${String(i).padStart(12, "0")}` },
      entries: full.entries.slice(0, n)
    }
  })
}

/** A user message of about `bytes` bytes of content, for append benchmarks. */
export const userMessage = (i: number, bytes = 800): Message => ({
  role: "user",
  id: `bench-${i}`,
  content: ("append benchmark message " + i + " ").repeat(Math.ceil(bytes / 30)).slice(0, bytes)
})

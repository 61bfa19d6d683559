/**
 * Sessions of real size for `npm run bench:size`: the agent session of
 * `dataV2.ts` grown to a given size or entry count, with lines of ~1 KB on
 * average; the same conversation in Pi's session format; and a session of
 * screenshots (tool results holding a PNG-sized file part each).
 */
import { Buffer } from "node:buffer"
import { randomBytes } from "node:crypto"
import { conversation } from "./data.js"
import { agentSession, type ConversationV2, type EntryV2, fileV2 } from "./dataV2.js"

/**
 * The average of the version-1 lines the conversation is generated with: with the reasoning,
 * signatures and meta the version-2 session adds, its lines average ~1 KB.
 */
export const LINE_BYTES = 480

const lineSize = (record: unknown): number => Buffer.byteLength(JSON.stringify(record), "utf8") + 1

/** The agent session of a generated conversation of `messages` messages. */
const sessionOf = (messages: number): ConversationV2 => agentSession(conversation({ entries: messages, lineBytes: LINE_BYTES }))

/** The first `entries` entries of an agent session (a prefix keeps every parent, tool call and label target before its use). */
export const sessionOfEntries = (entries: number): ConversationV2 => {
  // The agent session adds about one entry per 400 messages: a few more messages than entries suffice.
  const c = sessionOf(entries + Math.ceil(entries / 200) + 4)
  if (c.entries.length < entries) throw new Error(`generated ${c.entries.length} entries, wanted ${entries}`)
  return { header: c.header, entries: c.entries.slice(0, entries) }
}

/** The longest prefix of an agent session whose file holds at most `bytes` bytes. */
export const sessionOfSize = (bytes: number): ConversationV2 => {
  // Estimated from a sample, with room; then cut at the size.
  const sample = fileV2(sessionOf(500)).length / 500
  const c = sessionOf(Math.ceil((bytes / sample) * 1.1) + 10)
  let size = lineSize(c.header)
  let n = 0
  while (n < c.entries.length && size + lineSize(c.entries[n]) <= bytes) size += lineSize(c.entries[n++])
  if (n === c.entries.length) throw new Error(`the generated session holds only ${size} bytes, wanted ${bytes}`)
  return { header: c.header, entries: c.entries.slice(0, n) }
}

/** What an append takes for an entry: its body (`kind` first, then that kind's keys), the envelope left out. */
export const bodyOf = (e: EntryV2): { readonly kind: string; readonly [key: string]: unknown } => {
  const { id: _id, parentId: _parentId, timestamp: _timestamp, type: _type, version: _version, ...body } = e
  return body as { readonly kind: string; readonly [key: string]: unknown }
}

interface Part {
  readonly type: string
  readonly [key: string]: unknown
}

/** A version-2 message as Pi writes it (pi-ai's `UserMessage`, `AssistantMessage` with thinking, `ToolResultMessage`). */
export const piMessageV2 = (m: { readonly role: string; readonly [key: string]: unknown }, timestamp: number): Record<string, unknown> => {
  const parts = m["content"] as ReadonlyArray<Part>
  const piPart = (p: Part): Record<string, unknown> => {
    switch (p.type) {
      case "text":
        return { type: "text", text: p["text"] }
      case "reasoning":
        return {
          type: "thinking",
          thinking: p["text"],
          thinkingSignature: (p["options"] as { anthropic?: { signature?: string } } | undefined)?.anthropic?.signature
        }
      case "tool-call":
        return { type: "toolCall", id: p["id"], name: p["name"], arguments: p["arguments"] }
      case "file": {
        const data = p["data"] as { readonly base64?: string }
        return { type: "image", data: data.base64 ?? "", mimeType: p["mediaType"] }
      }
      default:
        throw new Error(`no Pi form for a ${p.type} part`)
    }
  }
  switch (m.role) {
    case "user":
      return { role: "user", content: parts.map(piPart), timestamp }
    case "assistant": {
      const meta = m["meta"] as { usage?: { inputTokens: number; outputTokens: number; cachedInputTokens?: number } } | undefined
      const usage = meta?.usage
      const input = usage?.inputTokens ?? 0
      const output = usage?.outputTokens ?? 0
      return {
        role: "assistant",
        content: parts.map(piPart),
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage: {
          input,
          output,
          cacheRead: usage?.cachedInputTokens ?? 0,
          cacheWrite: 0,
          totalTokens: input + output,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 }
        },
        stopReason: parts.some((p) => p.type === "tool-call") ? "toolUse" : "stop",
        timestamp
      }
    }
    case "tool":
      return {
        role: "toolResult",
        toolCallId: m["toolCallId"],
        toolName: m["toolName"],
        content: parts.map(piPart),
        isError: m["isError"],
        timestamp
      }
    default:
      throw new Error(`no Pi form for a ${m.role} message`)
  }
}

/** Pi's record (format version 3) of a version-2 entry: same ID, parent and timestamp. */
export const piRecordV2 = (e: EntryV2): Record<string, unknown> => {
  const base = { id: e.id, parentId: e.parentId, timestamp: e.timestamp }
  switch (e.kind) {
    case "message":
      return { type: "message", ...base, message: piMessageV2(e["message"] as { role: string }, Date.parse(e.timestamp)) }
    case "model":
      return { type: "model_change", ...base, provider: e["provider"], modelId: e["model"] }
    case "title":
      return { type: "session_info", ...base, name: e["title"] }
    case "label":
      return { type: "label", ...base, targetId: e["targetId"], label: e["label"] }
    default:
      throw new Error(`no Pi form for a ${e.kind} entry`)
  }
}

/** Pi's session file of the same conversation. */
export const piFileV2 = (c: ConversationV2, cwd = "/work/project"): Buffer => {
  const header = { type: "session", version: 3, id: c.header.id, timestamp: c.header.timestamp, cwd }
  return Buffer.from([header, ...c.entries.map(piRecordV2)].map((r) => JSON.stringify(r) + "\n").join(""), "utf8")
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])

/** `bytes` bytes that start like a PNG and go on at random (so no two are alike and nothing compresses them). */
export const screenshotBytes = (bytes: number): Buffer => Buffer.concat([PNG_SIGNATURE, randomBytes(Math.max(0, bytes - PNG_SIGNATURE.length))])

/** The bodies of one step of a browsing agent: the user's ask, the assistant's call, the tool's result (with a screenshot or not), the answer. */
export const screenshotStep = (i: number, image: Buffer | undefined): ReadonlyArray<Record<string, unknown>> => {
  const call = `shot-${i}`
  return [
    { kind: "message", message: { role: "user", id: `u-${i}`, content: [{ type: "text", text: `Open page ${i} and tell me what is on it.` }] } },
    {
      kind: "message",
      message: {
        role: "assistant",
        id: `a-${i}`,
        content: [
          { type: "text", text: `Taking a screenshot of page ${i}.` },
          { type: "tool-call", id: call, name: "screenshot", arguments: { url: `https://example.com/page/${i}`, fullPage: true } }
        ]
      }
    },
    {
      kind: "message",
      message: {
        role: "tool",
        id: `t-${i}`,
        toolCallId: call,
        toolName: "screenshot",
        isError: false,
        content: [
          { type: "text", text: `Screenshot of https://example.com/page/${i} (1280×2400).` },
          ...(image === undefined ? [] : [{ type: "file", mediaType: "image/png", name: `page-${i}.png`, data: { base64: image.toString("base64") } }])
        ]
      }
    },
    {
      kind: "message",
      message: {
        role: "assistant",
        id: `b-${i}`,
        content: [{ type: "text", text: `Page ${i} shows a header, a search form and a list of twenty results with thumbnails.` }]
      }
    }
  ]
}

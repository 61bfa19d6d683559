/**
 * Version-2 sessions for the view tests, built record by record: every header
 * and entry is decoded with the version-2 Schemas (`RecordV2`), excess keys
 * refused, so the views are shown only records the format allows. The
 * ancestor rules the Schemas cannot see (tool links, a compaction's kept entry,
 * a label's target) are kept by the sessions written here.
 */
import type * as V1 from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import * as RecordV2 from "@session-tree/core/RecordV2"
import * as Schema from "effect/Schema"
import { HOSTILE } from "./sessions.js"

export interface Session2 {
  readonly header: V2.SessionHeader
  readonly entries: ReadonlyArray<V2.SessionEntry>
}

const strict = { onExcessProperty: "error", exact: true } as const
const decodeEntry = Schema.decodeUnknownSync(RecordV2.SessionEntry, strict)
const decodeHeader = Schema.decodeUnknownSync(RecordV2.SessionHeader, strict)

/** 2026-03-02T09:00:00.000Z */
const START = Date.UTC(2026, 2, 2, 9, 0, 0)

export interface Builder {
  /** Appends `body` as a child of the leaf (or of `parent`), which becomes the leaf; returns the new entry's ID. */
  readonly add: (body: V2.Body, parent?: string | null) => string
  /** Moves the leaf to `id`. */
  readonly moveTo: (id: string) => void
}

/**
 * Runs `script` and returns the records it built, each one decoded by the
 * Schemas. Timestamps advance by seven seconds per record; entry IDs come from
 * `entryId` (default `entry-001`, `entry-002`, …).
 */
export const build2 = (
  id: string,
  script: (builder: Builder) => void,
  options?: { readonly entryId?: (n: number) => string; readonly forkedFrom?: V2.ForkedFrom }
): Session2 => {
  let time = START
  const at = () => new Date(time += 7_000).toISOString()
  const header = decodeHeader({ type: "session", version: 2, id, timestamp: new Date(START).toISOString(), ...(options?.forkedFrom === undefined ? {} : { forkedFrom: options.forkedFrom }) })
  const entries: Array<V2.SessionEntry> = []
  let leaf: string | null = null
  const entryId = options?.entryId ?? ((n: number) => `entry-${String(n).padStart(3, "0")}`)
  script({
    add: (body, parent) => {
      const entry = decodeEntry({ type: "entry", version: 2, id: entryId(entries.length + 1), parentId: parent === undefined ? leaf : parent, timestamp: at(), ...body })
      entries.push(entry)
      leaf = entry.id
      return entry.id
    },
    moveTo: (to) => {
      leaf = to
    }
  })
  return { header, entries }
}

/** A one-pixel PNG, canonical base64. */
export const PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
export const BLOB = `sha256:${"ab".repeat(32)}`

/**
 * An agent's session with every kind of entry and part: a system prompt; a user
 * message with text, an inline image, a link and a blob; an assistant turn with
 * reasoning (signed, and redacted), text, a tool call, a provider-executed call
 * and its result, and `meta`; the tool's answer with text, a file and a `result`;
 * a model change, a compaction, a label on the user message, a title, a custom
 * entry, and a branch from the compaction.
 *
 * `t(k)` gives the k-th caller text (the hostile session passes hostile ones);
 * the image's media type and data and the link's URL stay fixed, so a hostile
 * session and its harmless twin show the same elements.
 */
export const agent = (t: (k: number) => string = (k) => `text ${k}`, id = "agent-session", forkedFrom?: V2.ForkedFrom): Session2 =>
  build2(id, (s) => {
    s.add({ kind: "message", message: { role: "system", id: `${t(0)}#sys`, content: `You are careful. ${t(1)}`, options: { [t(2)]: t(3) } } })
    const user = s.add({
      kind: "message",
      message: {
        role: "user",
        id: `${t(4)}#user`,
        content: [
          { type: "text", text: `What is in this picture? ${t(5)}` },
          { type: "file", mediaType: "image/png", name: `pixel ${t(6)}.png`, data: { base64: PIXEL } },
          { type: "file", mediaType: `text/html${t(7)}`, name: `page ${t(8)}`, data: { url: "https://example.com/a?b=1&c=(2)" } },
          { type: "file", mediaType: `application/pdf${t(9)}`, name: `report ${t(10)}.pdf`, data: { blob: BLOB, size: 123_456 } },
          { type: "file", mediaType: `image/svg+xml${t(11)}`, data: { base64: "PHN2Zz48L3N2Zz4=" } },
          { type: "file", mediaType: "image/png", name: `unsafe link ${t(12)}`, data: { url: `javascript:alert(1)${t(13)}` } }
        ]
      }
    })
    s.add({
      kind: "message",
      message: {
        role: "assistant",
        id: `${t(14)}#assistant`,
        content: [
          { type: "reasoning", text: `Thinking about the picture. ${t(15)}`, options: { signature: `sig ${t(16)}` } },
          { type: "reasoning", text: "", options: { redacted: `opaque ${t(17)}` } },
          { type: "text", text: `Let me look closer. ${t(18)}` },
          { type: "tool-call", id: `${t(19)}#call-1`, name: `zoom ${t(20)}`, arguments: { [t(21)]: t(22), factor: 4 } },
          { type: "tool-call", id: `${t(23)}#search`, name: `web_search ${t(24)}`, arguments: { query: t(25) }, providerExecuted: true },
          { type: "tool-result", toolCallId: `${t(23)}#search`, toolName: `web_search ${t(24)}`, isError: false, result: { hits: [t(26)] } }
        ],
        meta: {
          provider: `anthropic ${t(27)}`,
          model: `claude-x ${t(28)}`,
          responseId: `resp ${t(29)}`,
          usage: { inputTokens: 1200, outputTokens: 345, reasoningTokens: 67, cachedInputTokens: 800, cacheWriteTokens: 9 },
          stopReason: `tool_use ${t(30)}`,
          error: `overloaded ${t(31)}`
        }
      }
    })
    s.add({
      kind: "message",
      message: {
        role: "tool",
        id: `${t(32)}#tool`,
        toolCallId: `${t(19)}#call-1`,
        toolName: `zoom ${t(20)}`,
        isError: true,
        content: [{ type: "text", text: `zoomed ${t(33)}` }, { type: "file", mediaType: "image/png", name: `zoomed ${t(34)}.png`, data: { base64: PIXEL } }],
        result: { pixels: 16, note: t(35) }
      }
    })
    s.add({ kind: "model", provider: `openai ${t(36)}`, model: `gpt-y ${t(37)}`, thinking: `high ${t(38)}` })
    const compaction = s.add({ kind: "compaction", summary: `The user asked about a picture. ${t(39)}`, firstKeptEntryId: user, tokensBefore: 4321 })
    s.add({ kind: "label", targetId: user, label: `important ${t(40)}` })
    s.add({ kind: "title", title: `Picture questions ${t(41)}` })
    s.add({ kind: "custom", customType: `my-extension ${t(42)}`, data: { [t(43)]: [t(44), 1, null] } })
    s.add({ kind: "message", message: { role: "assistant", id: `${t(45)}#answer`, content: [{ type: "text", text: `It is one pixel. ${t(46)}` }] } })
    // A branch from the compaction: another answer, the newest entry, so the active path.
    s.moveTo(compaction)
    s.add({ kind: "message", message: { role: "user", id: `${t(47)}#again`, content: [{ type: "text", text: `And now? ${t(48)}` }] } })
  }, { entryId: (n) => `${t(49 + n)}#e${n}`, ...(forkedFrom === undefined ? {} : { forkedFrom }) })

/** The agent session with hostile caller text everywhere (see `HOSTILE`). */
export const hostileAgent = (): Session2 =>
  agent((k) => HOSTILE[k % HOSTILE.length]!, `session ${HOSTILE.join(" ")}`, { session: `source ${HOSTILE[3]}`, entry: `entry ${HOSTILE[12]}` })

/** Its harmless twin: every character of the same texts but line breaks as `a`. */
export const harmlessAgent = (): Session2 => {
  const plain = (text: string) => text.replace(/[^\n]/g, "a")
  return agent((k) => plain(HOSTILE[k % HOSTILE.length]!), plain(`session ${HOSTILE.join(" ")}`), {
    session: plain(`source ${HOSTILE[3]}`),
    entry: plain(`entry ${HOSTILE[12]}`)
  })
}

/**
 * A version-1 session in its version-2 form, as an upgrade stores it: a user's
 * or a tool's text as one text part, an assistant's text (when not empty) then
 * a `tool-call` part per call. The entries keep their IDs, parents and times.
 */
export const upgrade = (session: { readonly header: V1.SessionHeader; readonly entries: ReadonlyArray<V1.SessionEntry> }): Session2 => {
  const message = (m: V1.Message): V2.Message => {
    switch (m.role) {
      case "user":
        return { role: "user", id: m.id, content: [{ type: "text", text: m.content }] }
      case "tool":
        return { role: "tool", id: m.id, toolCallId: m.toolCallId, toolName: m.toolName, isError: m.isError, content: [{ type: "text", text: m.content }] }
      case "assistant":
        return {
          role: "assistant",
          id: m.id,
          content: [
            ...(m.content === "" ? [] : [{ type: "text" as const, text: m.content }]),
            ...m.toolCalls.map((call) => ({ type: "tool-call" as const, id: call.id, name: call.name, arguments: call.arguments }))
          ]
        }
    }
  }
  return {
    header: decodeHeader({ ...session.header, version: 2 }),
    entries: session.entries.map((entry) =>
      decodeEntry({ type: "entry", version: 2, id: entry.id, parentId: entry.parentId, timestamp: entry.timestamp, kind: "message", message: message(entry.message) })
    )
  }
}

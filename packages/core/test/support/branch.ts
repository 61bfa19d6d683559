/**
 * Version-2 branches for the context tests: entries built from short
 * descriptions, each one a child of the one before, checked by the Schemas so
 * that a test never works on entries the store would refuse.
 */
import * as Schema from "effect/Schema"
import * as RecordV2 from "../../src/RecordV2.js"

export type Body = RecordV2.Body

const decodeEntry = Schema.decodeUnknownSync(RecordV2.SessionEntry, { onExcessProperty: "error", exact: true })

/** The entries of one branch, root first, with IDs `e1`, `e2`, … unless a body names its message's ID. */
export const branch = (bodies: ReadonlyArray<Body>): Array<RecordV2.SessionEntry> => {
  const entries: Array<RecordV2.SessionEntry> = []
  for (const [i, body] of bodies.entries()) {
    const id = body.kind === "message" ? body.message.id : `e${i + 1}`
    const entry = {
      type: "entry",
      version: 2,
      id,
      parentId: entries.at(-1)?.id ?? null,
      timestamp: "2026-01-02T03:04:05.006Z",
      ...body
    }
    entries.push(decodeEntry(entry))
  }
  return entries
}

export const system = (id: string, content = `system ${id}`): Body => ({
  kind: "message",
  message: { role: "system", id, content }
})

export const user = (id: string, text = `user ${id}`): Body => ({
  kind: "message",
  message: { role: "user", id, content: [{ type: "text", text }] }
})

export const assistant = (
  id: string,
  calls: ReadonlyArray<string> = [],
  meta?: RecordV2.Meta,
  text = `assistant ${id}`
): Body => ({
  kind: "message",
  message: {
    role: "assistant",
    id,
    content: [
      { type: "text", text },
      ...calls.map((call) => ({ type: "tool-call" as const, id: call, name: "read", arguments: { path: call } }))
    ],
    ...(meta === undefined ? {} : { meta })
  }
})

export const tool = (id: string, call: string, text = `result ${call}`): Body => ({
  kind: "message",
  message: { role: "tool", id, toolCallId: call, toolName: "read", isError: false, content: [{ type: "text", text }] }
})

export const compaction = (summary: string, firstKeptEntryId: string | null): Body => ({
  kind: "compaction",
  summary,
  firstKeptEntryId
})

export const label = (targetId: string, text: string): Body => ({ kind: "label", targetId, label: text })

export const ids = (messages: ReadonlyArray<RecordV2.Message>): Array<string> => messages.map((m) => m.id)

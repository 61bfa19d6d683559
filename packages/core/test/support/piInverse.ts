/**
 * The version-2 session `PiSession.fromPiV2` gives, mapped back to Pi's own
 * shape by the rules of `docs/import.md`, read from the converted entries only.
 * A test that deep-compares this with what Pi's SessionManager reads from the
 * original file fails as soon as the conversion drops or alters any field.
 * Also: the rules between version-2 entries that the Schemas cannot see (tool
 * links, compactions, labels), checked independently of the store's loader.
 */
import type * as RecordV2 from "../../src/RecordV2.js"
import { COMPACTION_FIELDS, SESSION_ENTRY, STRING_CONTENT, WHOLE_PREFIX } from "../../src/PiSession.js"

type Obj = Record<string, unknown>
const piOf = (value: { readonly options?: RecordV2.Opaque | undefined }): Obj => ({ ...(value.options?.pi as Obj | undefined) })

const partToPi = (part: RecordV2.AssistantPart): Obj => {
  const pi = piOf(part)
  switch (part.type) {
    case "text":
      return { type: "text", text: part.text, ...pi }
    case "file":
      if (!("base64" in part.data)) throw new Error("a file part without inline data")
      return { type: "image", data: part.data.base64, mimeType: part.mediaType, ...pi }
    case "reasoning":
      return pi.redacted === true ? { type: "thinking", ...pi } : { type: "thinking", thinking: part.text, ...pi }
    case "tool-call":
      return { type: "toolCall", id: part.id, name: part.name, arguments: part.arguments, ...pi }
    case "tool-result":
      throw new Error("Pi has no provider-executed results")
  }
}

/** Content back to Pi: one string when options say Pi wrote one. */
const contentToPi = (parts: ReadonlyArray<RecordV2.AssistantPart>, pi: Obj): unknown => {
  if (pi.content === STRING_CONTENT) {
    delete pi.content
    const [only] = parts
    if (parts.length !== 1 || only?.type !== "text") throw new Error("string content is not one text part")
    return only.text
  }
  return parts.map(partToPi)
}

const messageToPi = (message: RecordV2.Message): Obj => {
  const pi = piOf(message)
  switch (message.role) {
    case "user":
      return { role: "user", content: contentToPi(message.content, pi), ...pi }
    case "assistant": {
      const { meta } = message
      const out: Obj = { role: "assistant", content: contentToPi(message.content, pi) }
      if (meta?.provider !== undefined) out.provider = meta.provider
      if (meta?.model !== undefined) out.model = meta.model
      if (meta?.responseId !== undefined) out.responseId = meta.responseId
      if (meta?.stopReason !== undefined) out.stopReason = meta.stopReason
      if (meta?.error !== undefined) out.errorMessage = meta.error
      const usageRest = pi.usage as Obj | undefined
      delete pi.usage
      if (meta?.usage !== undefined) {
        const u = meta.usage
        const usage: Obj = { input: u.inputTokens, output: u.outputTokens }
        if (u.cachedInputTokens !== undefined) usage.cacheRead = u.cachedInputTokens
        if (u.cacheWriteTokens !== undefined) usage.cacheWrite = u.cacheWriteTokens
        if (u.reasoningTokens !== undefined) throw new Error("Pi has no reasoning-token count")
        out.usage = { ...usage, ...usageRest }
      } else if (usageRest !== undefined) out.usage = usageRest
      return { ...out, ...pi }
    }
    case "tool": {
      const out: Obj = {
        role: "toolResult",
        toolCallId: message.toolCallId,
        toolName: message.toolName,
        isError: message.isError,
        content: contentToPi(message.content, pi)
      }
      if ("result" in message) out.details = message.result
      return { ...out, ...pi }
    }
    case "system":
      throw new Error("Pi has no system messages")
  }
}

/** Pi's header and entries, as `JSON.parse` reads them from Pi's file, rebuilt from a converted session. */
export const toPi = (
  header: RecordV2.SessionHeader,
  entries: ReadonlyArray<RecordV2.SessionEntry>
): { readonly header: Obj; readonly entries: Array<Obj> } => {
  const byId = new Map(entries.map((e) => [e.id, e]))
  let piHeader: Obj | undefined
  // The entry whose ID Pi's children name in place of an entry added by the conversion.
  const piParent = (id: string | null): string | null => {
    // Pi's roots hang from the entry of its header's fields.
    if (id === null || id === SESSION_ENTRY) return null
    const entry = byId.get(id)!
    return entry.kind === "custom" && entry.customType === COMPACTION_FIELDS ? entry.parentId : id
  }
  const out: Array<Obj> = []
  const indexOf = new Map<string, number>()
  for (const entry of entries) {
    const envelope = { id: entry.id, parentId: piParent(entry.parentId), timestamp: entry.timestamp }
    switch (entry.kind) {
      case "custom":
        if (entry.customType === SESSION_ENTRY) {
          piHeader = { type: "session", version: 3, id: header.id, timestamp: header.timestamp, ...(entry.data as Obj) }
          continue
        }
        if (entry.customType === COMPACTION_FIELDS) {
          Object.assign(out[indexOf.get(entry.parentId!)!]!, entry.data)
          continue
        }
        if (entry.customType.startsWith(WHOLE_PREFIX)) {
          out.push({ type: entry.customType.slice(WHOLE_PREFIX.length), ...envelope, ...(entry.data as Obj) })
        } else out.push({ type: "custom", ...envelope, customType: entry.customType, data: entry.data })
        break
      case "message": {
        const message = messageToPi(entry.message)
        if (message.type === "custom_message") {
          const { role: _, ...rest } = message
          out.push({ ...rest, ...envelope })
        } else out.push({ type: "message", ...envelope, message })
        break
      }
      case "model":
        out.push(entry.thinking === undefined
          ? { type: "model_change", ...envelope, provider: entry.provider, modelId: entry.model }
          : { type: "thinking_level_change", ...envelope, thinkingLevel: entry.thinking })
        break
      case "compaction": {
        const c: Obj = { type: "compaction", ...envelope, summary: entry.summary, firstKeptEntryId: entry.firstKeptEntryId }
        if (entry.tokensBefore !== undefined) c.tokensBefore = entry.tokensBefore
        out.push(c)
        break
      }
      case "label":
        out.push(entry.label === null
          ? { type: "label", ...envelope, targetId: entry.targetId }
          : { type: "label", ...envelope, targetId: entry.targetId, label: entry.label })
        break
      case "title":
        out.push({ type: "session_info", ...envelope, name: entry.title })
        break
    }
    indexOf.set(entry.id, out.length - 1)
  }
  if (piHeader === undefined) throw new Error(`no ${SESSION_ENTRY} entry`)
  return { header: piHeader, entries: out }
}

/** Pi's objects as its file holds them: `undefined` fields are not written. */
export const asWritten = <A>(value: A): A => JSON.parse(JSON.stringify(value)) as A

/**
 * The rules between entries (tool links on each branch, a compaction's kept entry a strict
 * ancestor, a label's target an earlier entry): the first one broken, or undefined.
 */
export const brokenRule = (entries: ReadonlyArray<RecordV2.SessionEntry>): string | undefined => {
  const byId = new Map<string, RecordV2.SessionEntry>()
  const index = new Map<string, number>()
  const ancestors = (entry: RecordV2.SessionEntry): Array<RecordV2.SessionEntry> => {
    const path: Array<RecordV2.SessionEntry> = []
    for (let at = entry.parentId; at !== null; at = byId.get(at)!.parentId) path.push(byId.get(at)!)
    return path
  }
  for (const [i, entry] of entries.entries()) {
    if (byId.has(entry.id)) return `${entry.id}: a duplicate ID`
    if (entry.parentId !== null && !byId.has(entry.parentId)) return `${entry.id}: parent is not an earlier entry`
    const path = ancestors(entry)
    if (entry.kind === "compaction" && entry.firstKeptEntryId !== null && !path.some((a) => a.id === entry.firstKeptEntryId)) {
      return `${entry.id}: firstKeptEntryId is not a strict ancestor`
    }
    if (entry.kind === "label" && !index.has(entry.targetId)) return `${entry.id}: the label's target is not an earlier entry`
    if (entry.kind === "message") {
      const calls = new Map<string, string>()
      const answered = new Set<string>()
      for (const a of path) {
        if (a.kind !== "message") continue
        if (a.message.role === "tool") answered.add(a.message.toolCallId)
        if (a.message.role !== "assistant") continue
        for (const part of a.message.content) if (part.type === "tool-call" && part.providerExecuted !== true) calls.set(part.id, part.name)
      }
      const message = entry.message
      if (message.role === "tool") {
        if (calls.get(message.toolCallId) !== message.toolName) return `${entry.id}: answers no call of its branch`
        if (answered.has(message.toolCallId)) return `${entry.id}: a call answered twice`
      }
      if (message.role === "assistant") {
        const own = new Set<string>()
        for (const part of message.content) {
          if (part.type !== "tool-call") continue
          if (own.has(part.id) || calls.has(part.id)) return `${entry.id}: tool-call ID ${part.id} repeated on the branch`
          own.add(part.id)
        }
      }
    }
    byId.set(entry.id, entry)
    index.set(entry.id, i)
  }
  return undefined
}

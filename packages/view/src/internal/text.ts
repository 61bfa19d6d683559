/**
 * The text views' layout (`Text`): one line per entry, by kind and role, and
 * the tree drawn depth-first with its forks.
 */
import type { Entry, Header, Message } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import type { SessionError } from "@session-tree/core/SessionError"
import { isUnreadable, type Listed } from "@session-tree/core/Sessions"
import * as Effect from "effect/Effect"
import type { Options, TreeNode } from "../Text.js"
import { childrenOf, json, printable, quote, resolve, settled, truncate, visible } from "./session.js"
import { blobPrefix, labelsOf, textOf, titleOf } from "./v2.js"

const CONTENT_CHARS = 60
const ARGUMENT_CHARS = 40

/** One line, at most CONTENT_CHARS characters (code points), JSON-quoted so newlines, quotes and controls stay visible. */
const short = (text: string): string => quote(truncate(text, CONTENT_CHARS))

const compactJson = (value: unknown): string => truncate(json(value), ARGUMENT_CHARS)

export const describeMessage = (message: Message): string => {
  switch (message.role) {
    case "user":
      return `user       ${short(message.content)}`
    case "assistant": {
      const calls = message.toolCalls.map((call) => `${printable(call.name)}(${compactJson(call.arguments)}) [${printable(call.id)}]`)
      return `assistant  ${short(message.content)}${calls.length === 0 ? "" : `  calls ${calls.join(", ")}`}`
    }
    case "tool":
      return `tool       ${printable(message.toolName)} [${printable(message.toolCallId)}]${message.isError ? " error" : ""} → ${short(message.content)}`
  }
}

/** A column of kind or role names, as wide as the longest (`compaction`) and a space. */
const column = (name: string): string => name.padEnd(11)

const calls = (parts: ReadonlyArray<V2.AssistantPart>): string => {
  const made = parts.flatMap((part) =>
    part.type === "tool-call"
      ? [`${printable(part.name)}(${compactJson(part.arguments)}) [${printable(part.id)}]${part.providerExecuted === true ? " by the provider" : ""}`]
      : []
  )
  return made.length === 0 ? "" : `  calls ${made.join(", ")}`
}

/** What a message holds besides its text and calls: reasoning and files. */
const extras = (parts: ReadonlyArray<V2.AssistantPart>): string => {
  let out = ""
  const reasoning = parts.filter((part) => part.type === "reasoning")
  if (reasoning.length > 0) {
    const chars = reasoning.reduce((n, part) => n + part.text.length, 0)
    out += chars === 0 ? "  reasoning (redacted)" : `  reasoning ${chars} chars`
  }
  for (const part of parts) {
    if (part.type !== "file") continue
    out += `  file ${printable(part.mediaType)}${part.name === undefined ? "" : ` ${quote(part.name)}`}`
    // A blob is named by its size and the start of its hash, enough to tell two apart on one line.
    if ("blob" in part.data) out += ` blob ${part.data.size.toLocaleString("en-US")} bytes ${printable(blobPrefix(part.data.blob))}`
  }
  return out
}

/** The results of provider-executed calls, which the assistant message itself holds. */
const results = (parts: ReadonlyArray<V2.AssistantPart>): string => {
  let out = ""
  for (const part of parts) {
    if (part.type === "tool-result") out += `  result ${printable(part.toolName)} [${printable(part.toolCallId)}]${part.isError ? " error" : ""}`
  }
  return out
}

/** Role and a one-line summary of a version-2 message: its text, then what else it holds. */
const describeMessageV2 = (m: V2.Message): string => {
  switch (m.role) {
    case "system":
      return `${column("system")}${short(m.content)}`
    case "user":
      return `${column("user")}${short(textOf(m))}${extras(m.content)}`
    case "assistant": {
      const model = m.meta?.model === undefined ? "" : `  model ${printable(m.meta.model)}`
      const error = m.meta?.error === undefined ? "" : `  error ${short(m.meta.error)}`
      return `${column("assistant")}${short(textOf(m))}${extras(m.content)}${calls(m.content)}${results(m.content)}${model}${error}`
    }
    case "tool":
      // A result held as data (`result`) with no text is shown as its JSON, so the line says what came back.
      return `${column("tool")}${printable(m.toolName)} [${printable(m.toolCallId)}]${m.isError ? " error" : ""} → ${
        m.result !== undefined && textOf(m) === "" ? compactJson(m.result) : short(textOf(m))
      }${extras(m.content)}`
  }
}

export const describeEntry = (entry: V2.SessionEntry): string => {
  switch (entry.kind) {
    case "message":
      return describeMessageV2(entry.message)
    case "compaction":
      return `${column("compaction")}${short(entry.summary)}  keeps ${entry.firstKeptEntryId === null ? "nothing before it" : `from ${printable(entry.firstKeptEntryId)}`}`
    case "label":
      return `${column("label")}${printable(entry.targetId)} ${entry.label === null ? "unlabelled" : `→ ${quote(entry.label)}`}`
    case "title":
      return `${column("title")}${quote(entry.title)}`
    case "model":
      return `${column("model")}${printable(entry.provider)}/${printable(entry.model)}${entry.thinking === undefined ? "" : ` thinking ${printable(entry.thinking)}`}`
    case "custom":
      return `${column("custom")}${printable(entry.customType)} ${compactJson(entry.data)}`
  }
}

/** The line of an entry after its ID: a version-1 message as before; a version-2 entry by kind, then its label. */
const describe = (entry: Entry, labels: ReadonlyMap<string, string>): string => {
  if (entry.version === 1) return describeMessage(entry.message)
  const label = labels.get(entry.id)
  return `${describeEntry(entry)}${label === undefined ? "" : `  [label ${quote(label)}]`}`
}

export const renderLog = (
  entries: ReadonlyArray<Entry>,
  options?: Options
): Effect.Effect<ReadonlyArray<string>, SessionError> =>
  Effect.map(resolve(entries, options?.leaf), ({ path }) => {
    const labels = labelsOf(entries)
    return path.map((entry) => `${printable(entry.id)}  ${describe(entry, labels)}`)
  })

export const logJson = (entries: ReadonlyArray<Entry>, options?: Options) =>
  Effect.map(resolve(entries, options?.leaf), ({ leaf, path }) => ({ leaf, entries: path }))

const ACTIVE = "●"
const INACTIVE = "○"

export const renderTree = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
): Effect.Effect<ReadonlyArray<string>, SessionError> =>
  Effect.suspend(() => renderTreeOf(header, settled(entries), options))

const renderTreeOf = (header: Header, entries: ReadonlyArray<Entry>, options?: Options) =>
  Effect.map(resolve(entries, options?.leaf), ({ leaf, path }) => {
    const active = new Set(path.map((entry) => entry.id))
    const labels = labelsOf(entries)
    const lines = [`session ${printable(header.id)}  ${header.timestamp}  ${entries.length} entries`]
    const title = header.version === 2 ? titleOf(entries) : undefined
    if (title !== undefined) lines.push(`title ${quote(title)}`)
    if (entries.length === 0) return [...lines, "(no entries)"]
    interface Frame {
      readonly entry: Entry
      readonly first: string
      readonly rest: string
    }
    const stack: Array<Frame> = []
    // Iterative, so a 4,096-entry chain cannot overflow the call stack.
    const pushChildren = (children: ReadonlyArray<Entry>, prefix: string) => {
      if (children.length === 1) {
        stack.push({ entry: children[0]!, first: prefix, rest: prefix })
        return
      }
      for (let i = children.length - 1; i >= 0; i--) {
        const last = i === children.length - 1
        stack.push({
          entry: children[i]!,
          first: `${prefix}${last ? "└── " : "├── "}`,
          rest: `${prefix}${last ? "    " : "│   "}`
        })
      }
    }
    pushChildren(childrenOf(entries, null), "")
    while (stack.length > 0) {
      const { entry, first, rest } = stack.pop()!
      const mark = active.has(entry.id) ? ACTIVE : INACTIVE
      const here = entry.id === leaf ? "  ← leaf" : ""
      lines.push(`${first}${mark} ${printable(entry.id)}  ${describe(entry, labels)}${here}`)
      pushChildren(childrenOf(entries, entry.id), rest)
    }
    return lines
  })

export const treeJson = (header: Header, entries: ReadonlyArray<Entry>, options?: Options) =>
  Effect.suspend(() => treeJsonOf(header, settled(entries), options))

const treeJsonOf = (header: Header, entries: ReadonlyArray<Entry>, options?: Options) =>
  Effect.map(resolve(entries, options?.leaf), ({ leaf, path }) => {
    const active = new Set(path.map((entry) => entry.id))
    const labels = labelsOf(entries)
    const nodes = entries.map((entry): TreeNode => {
      const children = childrenOf(entries, entry.id).map((child) => child.id)
      return entry.version === 1
        ? { id: entry.id, parentId: entry.parentId, role: entry.message.role, active: active.has(entry.id), children }
        : {
          id: entry.id,
          parentId: entry.parentId,
          kind: entry.kind,
          role: entry.kind === "message" ? entry.message.role : null,
          label: labels.get(entry.id) ?? null,
          active: active.has(entry.id),
          children
        }
    })
    const ids = { session: header.id, leaf, active: path.map((entry) => entry.id) }
    return header.version === 1 ? { ...ids, nodes } : { ...ids, title: titleOf(entries) ?? null, nodes }
  })

export const formatError = (error: SessionError): string =>
  `${error.code} ${visible(error.reason)}${error.line === undefined ? "" : ` (line ${error.line})`}`

export const listLine = (listed: Listed, changed?: string): string =>
  isUnreadable(listed)
    ? `${listed.error.code} ${printable(listed.location)}  ${visible(listed.error.message)}`
    : `${changed ?? (listed.updated > listed.created ? listed.updated : listed.created)}  ${String(listed.entries).padStart(4)} entries  ` +
      `${printable(listed.id)}  ${quote(listed.title)}  ${printable(listed.location)}` +
      (listed.parent === undefined ? "" : `  subagent of ${printable(listed.parent)}`) +
      (listed.subagents === undefined ? "" : `  ${listed.subagents.length} subagent${listed.subagents.length === 1 ? "" : "s"}`)

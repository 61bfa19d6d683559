/**
 * The Markdown transcript's layout (`Markdown.render`): a header block, then one
 * section per entry of the path, every value from the session in code.
 */
import type { Entry, Header, Message, SessionEntry, SessionHeader, ToolCall } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import type { Options } from "../Markdown.js"
import { countsOf, escapeTerminal, isNewest, longestRun, plural, printable, resolve, summaryOf, updatedOf } from "./session.js"
import { blobPrefix, blobsOf, inlineImage, isWebUrl, labelsOf, linkOf, optionKeys, readBlobs, sizeOf, titleOf } from "./v2.js"

export const render = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
): Effect.Effect<string, SessionError> =>
  Effect.flatMap(resolve(entries, options?.leaf), (shown) => {
    const read = options?.blobs
    const checked = read === undefined ? Effect.void : Effect.asVoid(readBlobs(blobsOf(shown.path, false), read))
    const detail = detailOf(shown.path, options?.verbose === true)
    return Effect.as(
      checked,
      header.version === 1
        ? transcript(detail, header, entries as ReadonlyArray<SessionEntry>, shown.leaf, shown.isDefault, shown.path as ReadonlyArray<SessionEntry>)
        : transcriptV2(detail, header, entries as ReadonlyArray<V2.SessionEntry>, shown.leaf, shown.isDefault, shown.path as ReadonlyArray<V2.SessionEntry>)
    )
  })

/** A single-line value as a code span (the public `Markdown.inlineCode`). */
export const inlineCode = (value: string): string => {
  if (value === "") return "*(empty)*"
  const shown = printable(value)
  const fence = "`".repeat(longestRun(shown, "`") + 1)
  const pad = shown.startsWith("`") || shown.endsWith("`") || (shown.startsWith(" ") && shown.endsWith(" ")) ? " " : ""
  return `${fence}${pad}${shown}${pad}${fence}`
}

/** Text in a fenced code block, verbatim (the public `Markdown.fencedBlock`). */
export const fencedBlock = (text: string, info = ""): string => {
  const fence = "`".repeat(Math.max(3, longestRun(text, "`") + 1))
  // A final CR is a line ending of its own; an LF right after it would merge with it into one.
  return `${fence}${info}\n${text}${text.endsWith("\r") ? "\n\n" : "\n"}${fence}`
}

/**
 * How much a transcript shows. For a reader (the default) it names entries by their sections
 * and leaves out what only a program needs: IDs, provider options, model meta, a tool's JSON
 * result beside the text it gave. `verbose` shows all of them.
 */
interface Detail {
  readonly verbose: boolean
  /** Each entry of the path by ID: its section's number. */
  readonly sections: ReadonlyMap<string, number>
}

const detailOf = (path: ReadonlyArray<{ readonly id: string }>, verbose: boolean): Detail => ({
  verbose,
  sections: new Map(path.map((entry, i) => [entry.id, i + 1]))
})

/** An entry as the text names it: by its section on this path (by its ID with verbose, or when it is not on the path). */
const entryRef = (detail: Detail, id: string): string => {
  const section = detail.sections.get(id)
  return detail.verbose || section === undefined ? `entry ${inlineCode(id)}` : `section ${section}`
}

/** ` · \`ID\`` after a heading, with verbose only. */
const idSuffix = (detail: Detail, id: string): string => (detail.verbose ? ` · ${inlineCode(id)}` : "")

/** The line under a section's heading: its time, and with verbose its message ID and parent. */
const stamp = (detail: Detail, entry: { readonly timestamp: string; readonly parentId: string | null }, messageId: string | undefined): string =>
  detail.verbose
    ? `${inlineCode(entry.timestamp)} · ` + (messageId === undefined ? "" : `message ${inlineCode(messageId)} · `) +
      (entry.parentId === null ? "root" : `parent ${inlineCode(entry.parentId)}`)
    : inlineCode(entry.timestamp)

/** Which leaf the path ends at: the newest entry, or one chosen; by ID with verbose. */
const leafLine = (detail: Detail, entries: ReadonlyArray<Entry>, leaf: string | null, isDefault: boolean): string => {
  if (leaf === null) return "- Leaf: none (the empty path)"
  const which = isNewest(entries, leaf, isDefault) ? "the newest entry" : "chosen"
  return `- Leaf: ${detail.verbose ? inlineCode(leaf) : entryRef(detail, leaf)} (${which})`
}

/** What a tool result answers: the call by name and the section that made it (by IDs with verbose). */
const answersLine = (
  detail: Detail,
  callId: string,
  made: { readonly entry: { readonly id: string }; readonly call: { readonly name: string } } | undefined,
  isError: boolean
): string =>
  (detail.verbose
    ? `Answers call ${inlineCode(callId)}` +
      (made === undefined ? " (not made on this path)" : ` (${inlineCode(made.call.name)}, entry ${inlineCode(made.entry.id)})`)
    : made === undefined
    ? `Answers call ${inlineCode(callId)} (not made on this path)`
    : `Answers the ${inlineCode(made.call.name)} call of ${entryRef(detail, made.entry.id)}`) +
  ` · ${isError ? "**error**" : "ok"}`

const ROLE: Record<Message["role"], string> = { user: "User", assistant: "Assistant", tool: "Tool result" }

const transcript = (
  detail: Detail,
  header: SessionHeader,
  entries: ReadonlyArray<SessionEntry>,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<SessionEntry>
): string => {
  const counts = countsOf(entries)
  const out: Array<string> = []
  out.push(`# Session ${inlineCode(header.id)}`)
  out.push(
    [
      `- Created: ${inlineCode(header.timestamp)}`,
      `- Updated: ${inlineCode(updatedOf(header, summaryOf(header, entries)))}`,
      `- Entries: ${counts.entries.toLocaleString("en-US")} in the session, ${path.length.toLocaleString("en-US")} on this path`,
      `- Branches: ${plural(counts.leaves, "leaf", "leaves")}; tool calls: ${counts.toolCalls.toLocaleString("en-US")}`,
      leafLine(detail, entries, leaf, isDefault)
    ].join("\n")
  )
  if (path.length === 0) out.push("*No messages on this path.*")

  // The calls made on this path so far, by ID: a tool result answers one made by an ancestor.
  const calls = new Map<string, { readonly entry: SessionEntry; readonly call: ToolCall }>()
  // Which later entry of the path answers each call.
  const answers = new Map<string, SessionEntry>()
  for (const entry of path) {
    if (entry.message.role === "tool" && !answers.has(entry.message.toolCallId)) answers.set(entry.message.toolCallId, entry)
  }

  path.forEach((entry, i) => {
    const message = entry.message
    const title = message.role === "tool" ? `${ROLE.tool} ${inlineCode(message.toolName)}` : ROLE[message.role]
    out.push(`## ${i + 1}. ${title}${idSuffix(detail, entry.id)}`)
    out.push(stamp(detail, entry, message.id))
    if (message.role === "tool") out.push(answersLine(detail, message.toolCallId, calls.get(message.toolCallId), message.isError))
    out.push(message.content === "" ? "*(no text)*" : fencedBlock(escapeTerminal(message.content), "text"))
    if (message.role === "assistant") {
      message.toolCalls.forEach((call, k) => {
        calls.set(call.id, { entry, call })
        const answer = answers.get(call.id)
        out.push(`### Tool call ${k + 1}: ${inlineCode(call.name)}${idSuffix(detail, call.id)}`)
        out.push(answered(detail, answer))
        out.push(fencedBlock(escapeTerminal(JSON.stringify(call.arguments, null, 2)), "json"))
      })
    }
  })
  return `${out.join("\n\n")}\n`
}

// ---------------------------------------------------------------------------------------------
// Version 2

/** Where a call is answered on the path. */
const answered = (detail: Detail, answer: { readonly id: string } | undefined): string =>
  answer === undefined ? "Not answered on this path." : detail.verbose ? `Answered by entry ${inlineCode(answer.id)}.` : `Answered in ${entryRef(detail, answer.id)}.`

const ROLE_V2: Record<V2.Message["role"], string> = { system: "System", user: "User", assistant: "Assistant", tool: "Tool result" }

const count = (n: number): string => n.toLocaleString("en-US")

/** `` `a`, `b` `` for a list of untrusted values. */
const codes = (values: ReadonlyArray<string>): string => values.map(inlineCode).join(", ")

/** The keys of a provider's options, when there are any and verbose asks for them; their values stay in the records. */
const optionsLine = (detail: Detail, value: { readonly options?: V2.Opaque }, what: string): Array<string> => {
  const keys = detail.verbose ? optionKeys(value) : []
  return keys.length === 0 ? [] : [`${what}: ${codes(keys)}`]
}

/** A link destination in angle brackets; the URL holds only URL characters, of which `&` alone means something there. */
const destination = (url: string): string => `<${url.replace(/&/g, "\\&")}>`

const file = (detail: Detail, part: V2.FilePart): Array<string> => {
  const size = sizeOf(part.data)
  const facts = [
    `File${part.name === undefined ? "" : ` ${inlineCode(part.name)}`}`,
    inlineCode(part.mediaType),
    ...(size === undefined ? [] : [plural(size, "byte")]),
    ...("blob" in part.data && detail.verbose ? [`blob ${inlineCode(`${blobPrefix(part.data.blob)}…`)}`] : [])
  ]
  const out = [facts.join(" · ")]
  const image = inlineImage(part)
  if (image !== undefined) out.push(`![image](${image})`)
  else if ("url" in part.data) {
    out.push(isWebUrl(part.data.url) ? `Link: [${inlineCode(part.data.url)}](${destination(part.data.url)})` : `URL (not a web link): ${inlineCode(part.data.url)}`)
  } else if ("base64" in part.data) out.push("*(inline data, not shown)*")
  return [...out, ...optionsLine(detail, part, "File options")]
}

const reasoning = (detail: Detail, part: V2.ReasoningPart): Array<string> => {
  const options = optionsLine(detail, part, "Reasoning options")
  if (part.text === "") return [`*Reasoning, redacted.*`, ...options]
  return [
    `<details>\n<summary>Reasoning (${plural(part.text.length, "character")})</summary>`,
    fencedBlock(escapeTerminal(part.text), "text"),
    "</details>",
    ...options
  ]
}

const metaLine = (meta: V2.Meta): string => {
  const facts: Array<string> = []
  if (meta.model !== undefined) facts.push(`Model ${inlineCode(meta.model)}`)
  if (meta.provider !== undefined) facts.push(`provider ${inlineCode(meta.provider)}`)
  if (meta.responseId !== undefined) facts.push(`response ${inlineCode(meta.responseId)}`)
  if (meta.usage !== undefined) {
    const u = meta.usage
    const tokens = [`${count(u.inputTokens)} input`, `${count(u.outputTokens)} output`]
    if (u.reasoningTokens !== undefined) tokens.push(`${count(u.reasoningTokens)} reasoning`)
    if (u.cachedInputTokens !== undefined) tokens.push(`${count(u.cachedInputTokens)} cached input`)
    if (u.cacheWriteTokens !== undefined) tokens.push(`${count(u.cacheWriteTokens)} cache write`)
    facts.push(`usage: ${tokens.join(", ")} tokens`)
  }
  if (meta.stopReason !== undefined) facts.push(`stop reason ${inlineCode(meta.stopReason)}`)
  if (meta.error !== undefined) facts.push(`**error** ${inlineCode(meta.error)}`)
  const line = facts.join(" · ")
  return line.charAt(0).toUpperCase() + line.slice(1)
}

const json = (value: unknown, indent?: number): string => fencedBlock(escapeTerminal(JSON.stringify(value, null, indent)), "json")

const heading = (entry: V2.SessionEntry): string => {
  switch (entry.kind) {
    case "message":
      return entry.message.role === "tool" ? `${ROLE_V2.tool} ${inlineCode(entry.message.toolName)}` : ROLE_V2[entry.message.role]
    case "compaction":
      return "Compaction"
    case "label":
      return "Label"
    case "title":
      return "Title"
    case "model":
      return "Model change"
    case "custom":
      return `Custom ${inlineCode(entry.customType)}`
  }
}

/** What the sections of a version-2 transcript share while the path is walked. */
interface Walk {
  readonly detail: Detail
  readonly labels: ReadonlyMap<string, string>
  /** The calls made on this path so far (not provider-executed), by ID: a tool message answers one made by an ancestor. */
  readonly calls: Map<string, { readonly entry: V2.SessionEntry; readonly call: V2.ToolCallPart }>
  /** Which later entry of the path answers each call. */
  readonly answers: ReadonlyMap<string, V2.SessionEntry>
}

const transcriptV2 = (
  detail: Detail,
  header: V2.SessionHeader,
  entries: ReadonlyArray<V2.SessionEntry>,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<V2.SessionEntry>
): string => {
  const out: Array<string> = headerV2(detail, header, entries, leaf, isDefault, path)
  if (path.length === 0) out.push("*No entries on this path.*")
  const answers = new Map<string, V2.SessionEntry>()
  for (const entry of path) {
    if (entry.kind === "message" && entry.message.role === "tool" && !answers.has(entry.message.toolCallId)) answers.set(entry.message.toolCallId, entry)
  }
  const walk: Walk = { detail, labels: labelsOf(entries), calls: new Map(), answers }
  path.forEach((entry, i) => sectionV2(walk, out, entry, i))
  return `${out.join("\n\n")}\n`
}

/** The title (the session's, else its ID) and the facts under it. */
const headerV2 = (
  detail: Detail,
  header: V2.SessionHeader,
  entries: ReadonlyArray<V2.SessionEntry>,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<V2.SessionEntry>
): Array<string> => {
  const counts = countsOf(entries)
  const title = titleOf(entries)
  return [
    title === undefined ? `# Session ${inlineCode(header.id)}` : `# ${inlineCode(title)}`,
    [
      ...(title === undefined || !detail.verbose ? [] : [`- Session: ${inlineCode(header.id)}`]),
      ...(header.forkedFrom === undefined
        ? []
        : [detail.verbose ? `- Forked from: session ${inlineCode(header.forkedFrom.session)}, entry ${inlineCode(header.forkedFrom.entry)}` : "- Forked from another session"]),
      `- Created: ${inlineCode(header.timestamp)}`,
      `- Updated: ${inlineCode(updatedOf(header, summaryOf(header, entries)))}`,
      `- Entries: ${count(counts.entries)} in the session, ${count(path.length)} on this path`,
      `- Branches: ${plural(counts.leaves, "leaf", "leaves")}; tool calls: ${count(counts.toolCalls)}`,
      leafLine(detail, entries, leaf, isDefault)
    ].join("\n")
  ]
}

/** The section of the `i`-th entry of the path: its heading, IDs and label, then what it holds. */
const sectionV2 = (walk: Walk, out: Array<string>, entry: V2.SessionEntry, i: number): void => {
  const detail = walk.detail
  out.push(`## ${i + 1}. ${heading(entry)}${idSuffix(detail, entry.id)}`)
  out.push(stamp(detail, entry, entry.kind === "message" ? entry.message.id : undefined))
  const label = walk.labels.get(entry.id)
  if (label !== undefined) out.push(`Label: ${inlineCode(label)}`)
  switch (entry.kind) {
    case "message":
      messageV2(walk, out, entry, entry.message)
      break
    case "compaction":
      out.push(
        (entry.firstKeptEntryId === null
          ? "Keeps nothing before it"
          : detail.verbose
          ? `Keeps the entries from ${inlineCode(entry.firstKeptEntryId)} on`
          : `Keeps the entries from ${entryRef(detail, entry.firstKeptEntryId)} on`) +
          (entry.tokensBefore === undefined ? "; summary:" : ` · ${plural(entry.tokensBefore, "token")} before; summary:`)
      )
      out.push(entry.summary === "" ? "*(empty summary)*" : fencedBlock(escapeTerminal(entry.summary), "text"))
      break
    case "label":
      out.push(
        entry.label === null
          ? `Removes the label of ${entryRef(detail, entry.targetId)}.`
          : `Labels ${entryRef(detail, entry.targetId)} as ${inlineCode(entry.label)}.`
      )
      break
    case "title":
      out.push(`Titles the session ${inlineCode(entry.title)}.`)
      break
    case "model":
      out.push(
        `Switches to model ${inlineCode(entry.model)} of ${inlineCode(entry.provider)}` +
          (entry.thinking === undefined ? "." : `, thinking ${inlineCode(entry.thinking)}.`)
      )
      break
    case "custom": {
      const link = linkOf(entry)
      const call = link?.toolCallId === undefined ? "" : `, started by tool call ${inlineCode(link.toolCallId)}`
      if (link !== undefined) out.push(`${link.to === "subagent" ? "A subagent's session" : "A subagent of session"} ${inlineCode(link.session)}${call}.`)
      out.push("Extension data, never sent to a model:", json(entry.data))
      break
    }
  }
}

/** A message of the path: its meta, the call it answers, its options, then its system prompt or parts. */
const messageV2 = (walk: Walk, out: Array<string>, entry: V2.SessionEntry, message: V2.Message): void => {
  const detail = walk.detail
  if (message.role === "assistant" && message.meta !== undefined) {
    // A reader needs to know that the answer failed; the model, usage and the rest are for verbose.
    if (detail.verbose) out.push(metaLine(message.meta))
    else if (message.meta.error !== undefined) out.push(`**Error** ${inlineCode(message.meta.error)}`)
  }
  if (message.role === "tool") out.push(answersLine(detail, message.toolCallId, walk.calls.get(message.toolCallId), message.isError))
  out.push(...optionsLine(detail, message, "Message options"))
  if (message.role === "system") {
    out.push(message.content === "" ? "*(no text)*" : fencedBlock(escapeTerminal(message.content), "text"))
    return
  }
  if (message.content.length === 0) out.push("*(no content)*")
  const parts: ReadonlyArray<V2.AssistantPart> = message.content
  let k = 0
  for (const part of parts) {
    if (part.type === "tool-call") out.push(...callLines(walk, entry, parts, part, ++k))
    else out.push(...partLines(detail, part))
  }
  // A tool's result is shown once: the content the model was shown, or the JSON value when that
  // is all there is; verbose shows the JSON value beside the content.
  if (message.role === "tool" && message.result !== undefined && (detail.verbose || message.content.length === 0)) {
    out.push("Result:", json(message.result, 2))
  }
}

/** The `k`-th tool call of a message whose parts are `parts`, made on the path from here on unless the provider ran it. */
const callLines = (walk: Walk, entry: V2.SessionEntry, parts: ReadonlyArray<V2.AssistantPart>, part: V2.ToolCallPart, k: number): Array<string> => {
  const executed = part.providerExecuted === true
  if (!executed) walk.calls.set(part.id, { entry, call: part })
  const detail = walk.detail
  const out = [`### Tool call ${k}: ${inlineCode(part.name)}${idSuffix(detail, part.id)}`]
  if (executed) {
    const answered = parts.some((p) => p.type === "tool-result" && p.toolCallId === part.id)
    out.push(`Run by the provider; ${answered ? "its result is in this message." : "no result in this message."}`)
  } else {
    out.push(answered(detail, walk.answers.get(part.id)))
  }
  out.push(json(part.arguments, 2), ...optionsLine(detail, part, "Call options"))
  return out
}

/** A part other than a tool call. */
const partLines = (detail: Detail, part: Exclude<V2.AssistantPart, V2.ToolCallPart>): Array<string> => {
  switch (part.type) {
    case "text":
      return [part.text === "" ? "*(empty text)*" : fencedBlock(escapeTerminal(part.text), "text"), ...optionsLine(detail, part, "Text options")]
    case "reasoning":
      return reasoning(detail, part)
    case "file":
      return file(detail, part)
    case "tool-result":
      return [
        `### Provider result: ${inlineCode(part.toolName)}${idSuffix(detail, part.toolCallId)}`,
        `Answers the call ${detail.verbose ? `${inlineCode(part.toolCallId)} ` : ""}above · ${part.isError ? "**error**" : "ok"}`,
        json(part.result, 2),
        ...optionsLine(detail, part, "Result options")
      ]
  }
}

/**
 * A session's root-to-leaf path as a Markdown transcript (`export --format
 * markdown`), in either version of the format.
 *
 * Every value that comes from the session (message text, IDs, tool names,
 * arguments, timestamps, labels, titles, media types, file names) is untrusted
 * and is shown verbatim only inside code: texts and JSON in fenced blocks whose
 * fence is longer than any backtick run in them, single-line values in code
 * spans built the same way. So no content can close a block, start a heading,
 * add raw HTML or a link: the structure of the document is the renderer's
 * alone. Its only HTML is its own `<details>` around reasoning (collapsed by
 * default); its only links and images are http and https URLs of plain URL
 * characters and `data:` URLs of base64 raster images, checked before use. Terminal control
 * characters (all but tab, line feed and carriage return) are shown as their
 * `\uXXXX` escapes, as the text views show them, since a transcript is often
 * printed to a terminal.
 */
import type { Entry, Header, Message, SessionEntry, SessionHeader, ToolCall } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import { countsOf, escapeTerminal, isNewest, type LeafOption, longestRun, plural, printable, resolve, summaryOf, updatedOf } from "./internal/session.js"
import { blobPrefix, type BlobReader, blobsOf, inlineImage, isWebUrl, labelsOf, optionKeys, readBlobs, sizeOf, titleOf } from "./internal/v2.js"

export type { BlobReader }

/** The leaf of the path shown; default the newest entry, `null` the empty path. */
export interface Options extends LeafOption {
  /**
   * Reads the session's blobs (`SessionStore.blob`, `Loaded.blob`): each blob on the path is
   * then read and checked before the transcript names it, so a missing or corrupt blob fails the
   * render instead of appearing in it.
   */
  readonly blobs?: BlobReader | undefined
}

/**
 * Renders the root-to-`leaf` path of a session as Markdown: a header block
 * (session ID, created and updated times, entry counts, which leaf), then one
 * section per message, user / assistant / tool result told apart, with each
 * assistant's tool calls (name, ID, JSON arguments) and, for each tool result,
 * the call it answers and whether it is an error.
 *
 * A version-2 session is titled by its title entry when it has one, and shows
 * every entry of the path by its kind: a message's system prompt or parts in
 * order (text, reasoning collapsed, files, tool calls, provider-executed
 * results), its model, usage, stop reason and error; a compaction's summary and
 * what it keeps; a label, a title, a model change, a custom entry (its type and
 * data). A labelled entry shows its label (the newest label entry for it).
 *
 * A file held in a blob is one line naming it (media type, size, the start of
 * its hash): a transcript carries no blob's bytes. With `options.blobs`, each
 * blob on the path is read first; one the reader cannot give fails the render
 * with its error (SESSION_BLOB_MISSING, SESSION_BLOB_CORRUPT).
 *
 * `options.leaf` defaults to the newest entry (the last of `entries`, where a
 * loaded tree starts); `null` renders the header over an empty path. An ID that
 * is not an entry of `entries` fails with SESSION_UNKNOWN_ENTRY.
 *
 * `entries` are in commit order, as a store holds them.
 */
export const render = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
): Effect.Effect<string, SessionError> =>
  Effect.flatMap(resolve(entries, options?.leaf), (shown) => {
    const read = options?.blobs
    const checked = read === undefined ? Effect.void : Effect.asVoid(readBlobs(blobsOf(shown.path, false), read))
    return Effect.as(
      checked,
      header.version === 1
        ? transcript(header, entries as ReadonlyArray<SessionEntry>, shown.leaf, shown.isDefault, shown.path as ReadonlyArray<SessionEntry>)
        : transcriptV2(header, entries as ReadonlyArray<V2.SessionEntry>, shown.leaf, shown.isDefault, shown.path as ReadonlyArray<V2.SessionEntry>)
    )
  })

/**
 * A single-line value as a code span. A value holding a line break or another
 * control character is shown JSON-quoted, so the line stays one line and the
 * reader sees the escapes; the span's backtick fence is longer than any run in
 * the value, padded with spaces where CommonMark strips one.
 */
export const inlineCode = (value: string): string => {
  if (value === "") return "*(empty)*"
  const shown = printable(value)
  const fence = "`".repeat(longestRun(shown, "`") + 1)
  const pad = shown.startsWith("`") || shown.endsWith("`") || (shown.startsWith(" ") && shown.endsWith(" ")) ? " " : ""
  return `${fence}${pad}${shown}${pad}${fence}`
}

/**
 * Text in a fenced code block, verbatim. The fence is backticks, at least three
 * and one more than the longest backtick run of the text, so no line of the
 * text can close it. The fence goes on a line of its own after the text, so a
 * final line break of the content stays visible as an empty last line.
 */
export const fencedBlock = (text: string, info = ""): string => {
  const fence = "`".repeat(Math.max(3, longestRun(text, "`") + 1))
  // A final CR is a line ending of its own; an LF right after it would merge with it into one.
  return `${fence}${info}\n${text}${text.endsWith("\r") ? "\n\n" : "\n"}${fence}`
}

const ROLE: Record<Message["role"], string> = { user: "User", assistant: "Assistant", tool: "Tool result" }

const transcript = (
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
      `- Leaf: ${leaf === null ? "none (the empty path)" : `${inlineCode(leaf)} (${isNewest(entries, leaf, isDefault) ? "the newest entry" : "chosen"})`}`
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
    out.push(`## ${i + 1}. ${title} · ${inlineCode(entry.id)}`)
    out.push(
      `${inlineCode(entry.timestamp)} · message ${inlineCode(message.id)} · ` +
        (entry.parentId === null ? "root" : `parent ${inlineCode(entry.parentId)}`)
    )
    if (message.role === "tool") {
      const made = calls.get(message.toolCallId)
      out.push(
        `Answers call ${inlineCode(message.toolCallId)}` +
          (made === undefined ? " (not made on this path)" : ` (${inlineCode(made.call.name)}, entry ${inlineCode(made.entry.id)})`) +
          ` · ${message.isError ? "**error**" : "ok"}`
      )
    }
    out.push(message.content === "" ? "*(no text)*" : fencedBlock(escapeTerminal(message.content), "text"))
    if (message.role === "assistant") {
      message.toolCalls.forEach((call, k) => {
        calls.set(call.id, { entry, call })
        const answer = answers.get(call.id)
        out.push(`### Tool call ${k + 1}: ${inlineCode(call.name)} · ${inlineCode(call.id)}`)
        out.push(answer === undefined ? "Not answered on this path." : `Answered by entry ${inlineCode(answer.id)}.`)
        out.push(fencedBlock(escapeTerminal(JSON.stringify(call.arguments, null, 2)), "json"))
      })
    }
  })
  return `${out.join("\n\n")}\n`
}

// ---------------------------------------------------------------------------------------------
// Version 2

const ROLE_V2: Record<V2.Message["role"], string> = { system: "System", user: "User", assistant: "Assistant", tool: "Tool result" }

const count = (n: number): string => n.toLocaleString("en-US")

/** `` `a`, `b` `` for a list of untrusted values. */
const codes = (values: ReadonlyArray<string>): string => values.map(inlineCode).join(", ")

/** The keys of a provider's options, when there are any; their values stay in the records. */
const optionsLine = (value: { readonly options?: V2.Opaque }, what: string): Array<string> => {
  const keys = optionKeys(value)
  return keys.length === 0 ? [] : [`${what}: ${codes(keys)}`]
}

/** A link destination in angle brackets; the URL holds only URL characters, of which `&` alone means something there. */
const destination = (url: string): string => `<${url.replace(/&/g, "\\&")}>`

const file = (part: V2.FilePart): Array<string> => {
  const size = sizeOf(part.data)
  const facts = [
    `File${part.name === undefined ? "" : ` ${inlineCode(part.name)}`}`,
    inlineCode(part.mediaType),
    ...(size === undefined ? [] : [plural(size, "byte")]),
    ...("blob" in part.data ? [`blob ${inlineCode(`${blobPrefix(part.data.blob)}…`)}`] : [])
  ]
  const out = [facts.join(" · ")]
  const image = inlineImage(part)
  if (image !== undefined) out.push(`![image](${image})`)
  else if ("url" in part.data) {
    out.push(isWebUrl(part.data.url) ? `Link: [${inlineCode(part.data.url)}](${destination(part.data.url)})` : `URL (not a web link): ${inlineCode(part.data.url)}`)
  } else if ("base64" in part.data) out.push("*(inline data, not shown)*")
  return [...out, ...optionsLine(part, "File options")]
}

const reasoning = (part: V2.ReasoningPart): Array<string> => {
  const options = optionsLine(part, "Reasoning options")
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

const transcriptV2 = (
  header: V2.SessionHeader,
  entries: ReadonlyArray<V2.SessionEntry>,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<V2.SessionEntry>
): string => {
  const counts = countsOf(entries)
  const labels = labelsOf(entries)
  const title = titleOf(entries)
  const out: Array<string> = []
  out.push(title === undefined ? `# Session ${inlineCode(header.id)}` : `# ${inlineCode(title)}`)
  out.push(
    [
      ...(title === undefined ? [] : [`- Session: ${inlineCode(header.id)}`]),
      ...(header.forkedFrom === undefined ? [] : [`- Forked from: session ${inlineCode(header.forkedFrom.session)}, entry ${inlineCode(header.forkedFrom.entry)}`]),
      `- Created: ${inlineCode(header.timestamp)}`,
      `- Updated: ${inlineCode(updatedOf(header, summaryOf(header, entries)))}`,
      `- Entries: ${count(counts.entries)} in the session, ${count(path.length)} on this path`,
      `- Branches: ${plural(counts.leaves, "leaf", "leaves")}; tool calls: ${count(counts.toolCalls)}`,
      `- Leaf: ${leaf === null ? "none (the empty path)" : `${inlineCode(leaf)} (${isNewest(entries, leaf, isDefault) ? "the newest entry" : "chosen"})`}`
    ].join("\n")
  )
  if (path.length === 0) out.push("*No entries on this path.*")

  // The calls made on this path so far (not provider-executed), by ID: a tool message answers one made by an ancestor.
  const calls = new Map<string, { readonly entry: V2.SessionEntry; readonly call: V2.ToolCallPart }>()
  // Which later entry of the path answers each call.
  const answers = new Map<string, V2.SessionEntry>()
  for (const entry of path) {
    if (entry.kind === "message" && entry.message.role === "tool" && !answers.has(entry.message.toolCallId)) answers.set(entry.message.toolCallId, entry)
  }

  path.forEach((entry, i) => {
    out.push(`## ${i + 1}. ${heading(entry)} · ${inlineCode(entry.id)}`)
    out.push(
      `${inlineCode(entry.timestamp)} · ` + (entry.kind === "message" ? `message ${inlineCode(entry.message.id)} · ` : "") +
        (entry.parentId === null ? "root" : `parent ${inlineCode(entry.parentId)}`)
    )
    const label = labels.get(entry.id)
    if (label !== undefined) out.push(`Label: ${inlineCode(label)}`)
    switch (entry.kind) {
      case "message": {
        const message = entry.message
        if (message.role === "assistant" && message.meta !== undefined) out.push(metaLine(message.meta))
        if (message.role === "tool") {
          const made = calls.get(message.toolCallId)
          out.push(
            `Answers call ${inlineCode(message.toolCallId)}` +
              (made === undefined ? " (not made on this path)" : ` (${inlineCode(made.call.name)}, entry ${inlineCode(made.entry.id)})`) +
              ` · ${message.isError ? "**error**" : "ok"}`
          )
        }
        out.push(...optionsLine(message, "Message options"))
        if (message.role === "system") {
          out.push(message.content === "" ? "*(no text)*" : fencedBlock(escapeTerminal(message.content), "text"))
          break
        }
        if (message.content.length === 0) out.push("*(no content)*")
        let k = 0
        for (const part of message.content) {
          switch (part.type) {
            case "text":
              out.push(part.text === "" ? "*(empty text)*" : fencedBlock(escapeTerminal(part.text), "text"), ...optionsLine(part, "Text options"))
              break
            case "reasoning":
              out.push(...reasoning(part))
              break
            case "file":
              out.push(...file(part))
              break
            case "tool-call": {
              k++
              const executed = part.providerExecuted === true
              if (!executed) calls.set(part.id, { entry, call: part })
              out.push(`### Tool call ${k}: ${inlineCode(part.name)} · ${inlineCode(part.id)}`)
              if (executed) {
                const answered = message.content.some((p) => p.type === "tool-result" && p.toolCallId === part.id)
                out.push(`Run by the provider; ${answered ? "its result is in this message." : "no result in this message."}`)
              } else {
                const answer = answers.get(part.id)
                out.push(answer === undefined ? "Not answered on this path." : `Answered by entry ${inlineCode(answer.id)}.`)
              }
              out.push(json(part.arguments, 2), ...optionsLine(part, "Call options"))
              break
            }
            case "tool-result":
              out.push(`### Provider result: ${inlineCode(part.toolName)} · ${inlineCode(part.toolCallId)}`)
              out.push(`Answers the call ${inlineCode(part.toolCallId)} above · ${part.isError ? "**error**" : "ok"}`)
              out.push(json(part.result, 2), ...optionsLine(part, "Result options"))
              break
          }
        }
        if (message.role === "tool" && message.result !== undefined) out.push("Result:", json(message.result, 2))
        break
      }
      case "compaction":
        out.push(
          (entry.firstKeptEntryId === null ? "Keeps nothing before it" : `Keeps the entries from ${inlineCode(entry.firstKeptEntryId)} on`) +
            (entry.tokensBefore === undefined ? "; summary:" : ` · ${plural(entry.tokensBefore, "token")} before; summary:`)
        )
        out.push(entry.summary === "" ? "*(empty summary)*" : fencedBlock(escapeTerminal(entry.summary), "text"))
        break
      case "label":
        out.push(entry.label === null ? `Removes the label of entry ${inlineCode(entry.targetId)}.` : `Labels entry ${inlineCode(entry.targetId)} as ${inlineCode(entry.label)}.`)
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
      case "custom":
        out.push("Extension data, never sent to a model:", json(entry.data))
        break
    }
  })
  return `${out.join("\n\n")}\n`
}

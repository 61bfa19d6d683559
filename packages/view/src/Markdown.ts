/**
 * A session's root-to-leaf path as a Markdown transcript (`export --format
 * markdown`).
 *
 * Every value that comes from the session (message text, IDs, tool names,
 * arguments, timestamps) is untrusted and is shown verbatim only inside code:
 * message text and arguments in fenced blocks whose fence is longer than any
 * backtick run in them, single-line values in code spans built the same way.
 * So no content can close a block, start a heading, add raw HTML or a link: the
 * structure of the document is the renderer's alone. Terminal control
 * characters (all but tab, line feed and carriage return) are shown as their
 * `\uXXXX` escapes, as the text views show them, since a transcript is often
 * printed to a terminal.
 */
import type { Message, SessionEntry, SessionHeader, ToolCall } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import { countsOf, escapeTerminal, isNewest, type LeafOption, longestRun, plural, printable, resolve, summaryOf, updatedOf } from "./internal/session.js"

/** The leaf of the path shown; default the newest entry, `null` the empty path. */
export type Options = LeafOption

/**
 * Renders the root-to-`leaf` path of a session as Markdown: a header block
 * (session ID, created and updated times, entry counts, which leaf), then one
 * section per message, user / assistant / tool result told apart, with each
 * assistant's tool calls (name, ID, JSON arguments) and, for each tool result,
 * the call it answers and whether it is an error.
 *
 * `options.leaf` defaults to the newest entry (the last of `entries`, where a
 * loaded tree starts); `null` renders the header over an empty path. An ID that
 * is not an entry of `entries` fails with SESSION_UNKNOWN_ENTRY.
 *
 * `entries` are in commit order, as a store holds them.
 */
export const render = (
  header: SessionHeader,
  entries: ReadonlyArray<SessionEntry>,
  options?: Options
): Effect.Effect<string, SessionError> =>
  Effect.map(resolve(entries, options?.leaf), (shown) => transcript(header, entries, shown.leaf, shown.isDefault, shown.path))

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

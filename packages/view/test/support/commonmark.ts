/**
 * Markdown read back with CommonMark's rules for what the transcripts use:
 * fenced code blocks and code spans. The tests check a transcript's structure
 * with these, so content that could close a fence or a span shows up.
 */
import { expect } from "vitest"

export type Block = { readonly kind: "fence"; readonly fence: string; readonly info: string; readonly text: string } | { readonly kind: "line"; readonly text: string }

/**
 * The top-level blocks of `md` by CommonMark's rules for fenced code: a fence
 * opens on a line of three or more backticks (an info string without
 * backticks) or tildes, indented at most three spaces, and closes on a line of
 * the same character at least as long, with nothing after it but spaces. Lines
 * end at LF, CR or CRLF. Every other line is returned as it is.
 */
export const blocks = (md: string): Array<Block> => {
  const lines = md.split(/\r\n|\r|\n/)
  const out: Array<Block> = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})(.*)$/.exec(lines[i]!)
    if (open === null || (open[1]![0] === "`" && open[2]!.includes("`"))) {
      out.push({ kind: "line", text: lines[i]! })
      continue
    }
    const fence = open[1]!
    const body: Array<string> = []
    let closed = false
    for (i++; i < lines.length; i++) {
      const close = /^ {0,3}(`+|~+)[ \t]*$/.exec(lines[i]!)
      if (close !== null && close[1]![0] === fence[0] && close[1]!.length >= fence.length) {
        closed = true
        break
      }
      body.push(lines[i]!)
    }
    expect(closed, "every fence is closed by the transcript itself").toBe(true)
    out.push({ kind: "fence", fence, info: open[2]!.trim(), text: body.join("\n") })
  }
  return out
}

interface Span {
  readonly start: number
  readonly end: number
  readonly content: string
}

/** The code spans of one line, by CommonMark's rule (equal backtick strings; one space stripped from each end when both are spaces). */
const spansOf = (line: string): Array<Span> => {
  const spans: Array<Span> = []
  let i = 0
  while (i < line.length) {
    if (line[i] !== "`") {
      i++
      continue
    }
    let n = 0
    while (line[i + n] === "`") n++
    const opener = "`".repeat(n)
    let j = i + n
    let found = -1
    while (j < line.length) {
      if (line[j] !== "`") {
        j++
        continue
      }
      let m = 0
      while (line[j + m] === "`") m++
      if (m === n) {
        found = j
        break
      }
      j += m
    }
    if (found < 0) {
      i += opener.length
      continue
    }
    let content = line.slice(i + n, found)
    if (content.length >= 2 && content.startsWith(" ") && content.endsWith(" ") && /[^ ]/.test(content)) content = content.slice(1, -1)
    spans.push({ start: i, end: found + n, content })
    i = found + n
  }
  return spans
}

/** The contents of the code spans of one line. */
export const codeSpans = (line: string): Array<string> => spansOf(line).map((span) => span.content)

/** The line with each code span replaced by `` `…` ``: what of it is not code. */
export const withoutSpans = (line: string): string => {
  let out = ""
  let at = 0
  for (const span of spansOf(line)) {
    out += `${line.slice(at, span.start)}\`…\``
    at = span.end
  }
  return out + line.slice(at)
}

/** A code span's value: the text itself, or a JSON-quoted string for values with control characters. */
export const spanValue = (span: string): string => (span.startsWith("\"") && span.endsWith("\"") && span.length > 1 ? JSON.parse(span) as string : span)

export const normalize = (text: string) => text.replace(/\r\n|\r/g, "\n")

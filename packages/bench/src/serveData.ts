/**
 * Sessions for the serving benchmarks: version-2 agent sessions (user turns,
 * assistant turns with text, reasoning and a tool call, tool results), written
 * as canonical lines straight to files or rows, fast enough to make a gigabyte
 * at bench time. A few words are planted at known rates, so a search has a
 * known number of hits: `zanzibar` in one entry in 20,000 (a rare word), the
 * phrase "quarterly ledger" in one in 2,000, and the common words of the text
 * everywhere.
 */
import { prng } from "./data.js"

const WORDS = (
  "the build failed in the parser test because the fixture file was renamed so read it again and check " +
  "which line holds the error then run the tests with the watch flag and look at the stack trace before " +
  "changing src/parse.ts or test/parse.test.ts since the session tree keeps every branch of the conversation"
).split(" ")

export const RARE = "zanzibar"
export const PHRASE = ["quarterly", "ledger"] as const
export const COMMON = "build"

const T0 = Date.UTC(2026, 0, 1)

export interface Made {
  readonly lines: Array<string>
  /** Entries holding the rare word, the phrase. */
  readonly rare: number
  readonly phrase: number
}

/** One session of `entries` entries (about `lineBytes` bytes each), session number `n`. */
export const agentSession = (n: number, entries: number, lineBytes = 400): Made => {
  const random = prng(n + 1)
  const words = (count: number) => {
    let out = ""
    for (let i = 0; i < count; i++) out += (i === 0 ? "" : " ") + WORDS[Math.floor(random() * WORDS.length)]
    return out
  }
  const id = `s${String(n).padStart(6, "0")}`
  const lines = [JSON.stringify({ type: "session", version: 2, id, timestamp: new Date(T0 + n * 60_000).toISOString() })]
  let rare = 0
  let phrase = 0
  let parent: string | null = null
  const textWords = Math.max(4, Math.round(lineBytes / 7))
  for (let i = 0; i < entries; i++) {
    const entryId = `${id}-e${i}`
    const timestamp = new Date(T0 + n * 60_000 + i * 1_000).toISOString()
    let text = words(textWords)
    // The global entry number decides the planted words, so their count is known for any corpus.
    const global = n * 1_000_003 + i
    if (global % 20_000 === 7) {
      text += ` ${RARE}`
      rare++
    }
    if (global % 2_000 === 3) {
      text += ` the ${PHRASE[0]} ${PHRASE[1]} is off`
      phrase++
    }
    const turn = i % 3
    const message = turn === 0
      ? { role: "user", id: `m${i}`, content: [{ type: "text", text }] }
      : turn === 1
      ? {
        role: "assistant",
        id: `m${i}`,
        content: [
          { type: "reasoning", text: words(8) },
          { type: "text", text },
          { type: "tool-call", id: `c${i}`, name: "read_file", arguments: { path: "src/parse.ts", line: i } }
        ],
        meta: { model: "claude-sonnet-4", usage: { inputTokens: 1_000 + i, outputTokens: 50 } }
      }
      : { role: "tool", id: `m${i}`, toolCallId: `c${i - 1}`, toolName: "read_file", isError: false, content: [{ type: "text", text }] }
    lines.push(JSON.stringify({ type: "entry", version: 2, id: entryId, parentId: parent, timestamp, kind: "message", message }))
    parent = entryId
  }
  return { lines, rare, phrase }
}

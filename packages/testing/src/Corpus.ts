/**
 * A small corpus of sessions with known words, usage and shapes, as canonical
 * lines, for the search, usage and server tests of every backend: the same
 * sessions on files, in memory and in PostgreSQL must give the same answers.
 *
 * - `incident` (version 2): a user question, two assistant replies on two branches
 *   (two models, with usage; the first with a cost, as Pi records it), a tool call
 *   and its result.
 * - `pooling` (version 1): a user, an assistant with a tool call, a tool result.
 * - `notes` (version 2): a system prompt, a user message, a compaction, a title, a label, a model change.
 * - `unicode` (version 2): letters beyond ASCII, and a line that escapes a letter (`\u00e9`), as a
 *   session written by another program may.
 */

export interface CorpusSession {
  /** A name for the session's location (a file `NAME.jsonl`, a database ID). */
  readonly name: string
  readonly id: string
  readonly lines: ReadonlyArray<string>
}

const T = (minute: number): string => new Date(Date.UTC(2026, 0, 2, 10, minute, 0, 0)).toISOString()
const D = (day: number, minute = 0): string => new Date(Date.UTC(2026, 0, day, 9, minute, 0, 0)).toISOString()

const header = (id: string, version: 1 | 2, timestamp: string) => JSON.stringify({ type: "session", version, id, timestamp })

const v2 = (id: string, parentId: string | null, timestamp: string, body: Record<string, unknown>) =>
  JSON.stringify({ type: "entry", version: 2, id, parentId, timestamp, ...body })

const v1 = (id: string, parentId: string | null, timestamp: string, message: Record<string, unknown>) =>
  JSON.stringify({ type: "entry", version: 1, id, parentId, timestamp, message })

export const incident: CorpusSession = {
  name: "incident",
  id: "s-incident",
  lines: [
    header("s-incident", 2, T(0)),
    v2("i1", null, T(1), { kind: "message", message: { role: "user", id: "m1", content: [{ type: "text", text: "Why does the API say Connection refused after the deploy?" }] } }),
    v2("i2", "i1", T(2), {
      kind: "message",
      message: {
        role: "assistant",
        id: "m2",
        content: [
          { type: "reasoning", text: "The database port is probably closed." },
          { type: "text", text: "Let me read the server configuration first." },
          { type: "tool-call", id: "call-1", name: "read_file", arguments: { path: "src/server.ts", lines: { from: 1, to: 40 } } }
        ],
        meta: { provider: "anthropic", model: "claude-sonnet-4", usage: { inputTokens: 1200, outputTokens: 80, cachedInputTokens: 1000, cacheWriteTokens: 200 } },
        options: { pi: { usage: { cost: { input: 0.0036, output: 0.0012, cacheRead: 0.0003, cacheWrite: 0.00075, total: 0.00585 } } } }
      }
    }),
    v2("i3", "i2", T(3), {
      kind: "message",
      message: {
        role: "tool",
        id: "m3",
        toolCallId: "call-1",
        toolName: "read_file",
        isError: true,
        content: [{ type: "text", text: "ECONNREFUSED 127.0.0.1:5432 while connecting to Postgres" }],
        result: { code: "ECONNREFUSED", port: 5432 }
      }
    }),
    v2("i4", "i1", T(4), {
      kind: "message",
      message: {
        role: "assistant",
        id: "m4",
        content: [{ type: "text", text: "A refused connection after a deploy usually means the service did not start." }],
        meta: { provider: "openai", model: "gpt-5", usage: { inputTokens: 900, outputTokens: 40, reasoningTokens: 12 } }
      }
    })
  ]
}

export const pooling: CorpusSession = {
  name: "pooling",
  id: "s-pooling",
  lines: [
    header("s-pooling", 1, T(10)),
    v1("p1", null, T(11), { role: "user", id: "n1", content: "How big should the connection pool be?" }),
    v1("p2", "p1", T(12), {
      role: "assistant",
      id: "n2",
      content: "Measure first: run the load test.",
      toolCalls: [{ id: "call-9", name: "run_tests", arguments: { suite: "load", workers: 8 } }]
    }),
    v1("p3", "p2", T(13), { role: "tool", id: "n3", toolCallId: "call-9", toolName: "run_tests", content: "42 passed, pool saturated at 20 connections", isError: false })
  ]
}

export const notes: CorpusSession = {
  name: "notes",
  id: "s-notes",
  lines: [
    header("s-notes", 2, D(3)),
    v2("n1", null, D(3, 1), { kind: "message", message: { role: "system", id: "sys", content: "You are a careful release engineer." } }),
    v2("n2", "n1", D(3, 2), { kind: "message", message: { role: "user", id: "u1", content: [{ type: "text", text: "Summarize the deploy checklist." }] } }),
    v2("n3", "n2", D(4, 0), { kind: "compaction", summary: "Earlier: the refused connections were fixed by restarting Postgres.", firstKeptEntryId: "n2" }),
    v2("n4", "n3", D(4, 1), { kind: "title", title: "Deploy checklist notes" }),
    v2("n5", "n4", D(4, 2), { kind: "label", targetId: "n2", label: "checklist" }),
    v2("n6", "n5", D(4, 3), { kind: "model", provider: "anthropic", model: "claude-opus-4" }),
    v2("n7", "n6", D(5, 0), {
      kind: "message",
      message: {
        role: "assistant",
        id: "a1",
        content: [{ type: "text", text: "1. Migrate. 2. Restart the workers. 3. Watch the connection errors." }],
        meta: { model: "claude-opus-4", usage: { inputTokens: 300, outputTokens: 60 } }
      }
    })
  ]
}

/** The escaped line: `caf\u00e9` in the file, `café` once decoded. */
const escaped = v2("u2", "u1", T(31), { kind: "message", message: { role: "assistant", id: "w2", content: [{ type: "text", text: "Un CAFÉ noir, et la cafÉ du coin." }] } })
  .replace("la cafÉ", "la caf\\u00e9")

export const unicode: CorpusSession = {
  name: "unicode",
  id: "s-unicode",
  lines: [
    header("s-unicode", 2, T(30)),
    v2("u1", null, T(30), { kind: "message", message: { role: "user", id: "w1", content: [{ type: "text", text: "Ärger mit dem Straßen-Café; ÆØÅ et ÇA VA" }] } }),
    escaped
  ]
}

export const corpus: ReadonlyArray<CorpusSession> = [incident, pooling, notes, unicode]

/** A session's file: its lines, each ended by a line feed. */
export const fileText = (session: CorpusSession): string => session.lines.map((line) => `${line}\n`).join("")

/**
 * Queries over the corpus that every backend's test puts to it, beside the memory backend's answer
 * (the options of `Sessions.search`, as plain data: this package depends on no library package).
 */
export const QUERIES: ReadonlyArray<{ readonly query: string; readonly [option: string]: unknown }> = [
  { query: "refused" },
  { query: "connection" },
  { query: "CONNECTION", limit: 2, offset: 1 },
  { query: `"service did not start"` },
  { query: "run_tests" },
  { query: "src server ts" },
  { query: "ärger" },
  { query: "café" },
  { query: "straße ÇA" },
  { query: "deploy", roles: ["title", "user"] },
  { query: "connection", models: ["claude-opus-4"] },
  { query: "refused", since: "2026-01-03" },
  { query: "connection", sessions: ["s-pooling"] },
  { query: "nothing-here" }
]

/**
 * A linear version-2 session of `n` short messages, user and assistant by turns, as canonical
 * lines: entry `e<i>` holds message `m<i>` (the server's Chromium test finds a card by it). The
 * session of 100,000 entries that test opens, and that the live and load benchmarks use.
 */
export const linearLines = (id: string, n: number): Array<string> => {
  const lines = [JSON.stringify({ type: "session", version: 2, id, timestamp: "2026-02-01T00:00:00.000Z" })]
  for (let i = 0; i < n; i++) {
    const role = i % 2 === 0 ? "user" : "assistant"
    const text = `Step ${i}: ${role === "user" ? "please read the next part of the log and tell me what failed" : "the build failed in the parser test; the fix is in src/parse.ts"}`
    lines.push(JSON.stringify({
      type: "entry",
      version: 2,
      id: `e${i}`,
      parentId: i === 0 ? null : `e${i - 1}`,
      timestamp: new Date(Date.UTC(2026, 1, 1) + i * 1000).toISOString(),
      kind: "message",
      message: { role, id: `m${i}`, content: [{ type: "text", text }] }
    }))
  }
  return lines
}

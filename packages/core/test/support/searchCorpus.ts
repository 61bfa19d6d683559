/**
 * Random corpora and queries for the search's differential tests: texts of words, their case
 * variants and near misses (beyond ASCII, joined to other letters, marks, surrogates), entries of
 * every kind with text, lines that no longer decode, and queries with filters and pages.
 */
import * as FastCheck from "effect/FastCheck"
import type { SearchOptions } from "../../src/Search.js"

/** Words, their case variants and near misses: beyond ASCII, joined to other letters, marks, surrogates. */
export const FRAGMENTS = [
  "build", "Build", "BUILD", "bUiLd", "builds", "rebuild", "build_x", "buildé", "build\u0301", "\u0301build", "𝐀build", "build𝐀",
  "\ud800build", "build\udc00", "🙂build", "key", "KEY", "\u212Aey", "ſtraße", "straße", "STRASSE", "Straße", "İstanbul",
  "istanbul", "ISTANBUL", "ärger", "ÄRGER", "Ärger", "parser", "Parser", "test", "read_file", "read file", "Read-File", "0",
  "x", "X", "k", "the", "1e21", "ıx"
]
export const SEPARATORS = [" ", "  ", "\n", "_", "-", ".", "", ": ", "\t", "\u00a0", "é", "/", "\"", "\\"]
export const QUERY_WORDS = ["build", "BUILD", "key", "k", "straße", "ärger", "istanbul", "parser", "test", "read", "file", "0", "x", "21", "path"]

export const text = FastCheck.array(FastCheck.tuple(FastCheck.constantFrom(...FRAGMENTS), FastCheck.constantFrom(...SEPARATORS)), { maxLength: 8 })
  .map((parts) => parts.map(([w, s]) => w + s).join(""))
export const key = FastCheck.oneof(FastCheck.constantFrom("path", "build", "Key", "line", "a.b", "x"), text)
export const json: FastCheck.Arbitrary<unknown> = FastCheck.letrec<{ value: unknown }>((tie) => ({
  value: FastCheck.oneof(
    { depthSize: "small", withCrossShrink: true },
    text,
    FastCheck.integer({ min: -3, max: 30 }),
    FastCheck.constantFrom(true, false, null, 1e21, 0.5),
    FastCheck.array(tie("value"), { maxLength: 3 }),
    FastCheck.dictionary(key, tie("value"), { maxKeys: 3 })
  )
})).value
export const args = FastCheck.dictionary(key, json, { maxKeys: 3 })

export const TIMES = ["2026-01-02T10:00:00.000Z", "2026-01-02T10:00:01.000Z", "2026-01-03T09:00:00.000Z"]
export const MODELS = ["claude-build-4", "gpt-5"]

export type Body = Record<string, unknown>
export const body: FastCheck.Arbitrary<Body> = FastCheck.oneof(
  text.map((t): Body => ({ kind: "message", message: { role: "user", id: "build-u", content: [{ type: "text", text: t }] } })),
  FastCheck.tuple(text, text, FastCheck.constantFrom("read_file", "build", "Parser"), args, FastCheck.constantFrom(...MODELS)).map(([r, t, name, a, model]): Body => ({
    kind: "message",
    message: {
      role: "assistant",
      id: "build-a",
      content: [{ type: "reasoning", text: r }, { type: "text", text: t }, { type: "tool-call", id: "build-c", name, arguments: a }],
      meta: { model }
    }
  })),
  FastCheck.tuple(text, json).map(([t, result]): Body => ({
    kind: "message",
    message: { role: "tool", id: "build-t", toolCallId: "build-c", toolName: "read_file", isError: false, content: [{ type: "text", text: t }], result }
  })),
  text.map((t): Body => ({ kind: "message", message: { role: "system", id: "build-s", content: t } })),
  text.map((t): Body => ({ kind: "title", title: t })),
  text.map((t): Body => ({ kind: "compaction", summary: t, firstKeptEntryId: null })),
  FastCheck.constant<Body>({ kind: "label", targetId: "build-0", label: "build" }),
  FastCheck.constant<Body>({ kind: "model", provider: "anthropic", model: "build" })
)

/** A line that no longer decodes, though it may still hold the words. */
export const spoil = (line: string, how: number): string =>
  how === 0 ? line.replace(`"kind":`, `"extra":1,"kind":`) : how === 1 ? line.slice(0, -3) : how === 2 ? line.replace(/"timestamp":"[^"]*"/, `"timestamp":"yesterday"`) : `${line} build`

/** `arbitrary`'s value once in `every` times, else null. */
export const sometimes = <A>(arbitrary: FastCheck.Arbitrary<A>, every: number): FastCheck.Arbitrary<A | null> =>
  FastCheck.oneof({ arbitrary: FastCheck.constant(null), weight: every - 1 }, { arbitrary, weight: 1 })

export const session = FastCheck.record({
  id: FastCheck.constantFrom("s-a", "s-b", "s-build"),
  headerSpoiled: sometimes(FastCheck.constant(true), 8).map((b) => b === true),
  entries: FastCheck.array(
    FastCheck.record({ time: FastCheck.constantFrom(...TIMES), body, spoiled: sometimes(FastCheck.integer({ min: 0, max: 3 }), 6) }),
    { minLength: 1, maxLength: 10 }
  )
})

export const queryWord = FastCheck.oneof({ arbitrary: FastCheck.constant("build"), weight: 3 }, { arbitrary: FastCheck.constantFrom(...QUERY_WORDS), weight: 2 })
export const queryText = FastCheck.array(
  FastCheck.oneof(
    { arbitrary: queryWord, weight: 4 },
    { arbitrary: FastCheck.array(queryWord, { minLength: 2, maxLength: 3 }).map((ws) => `"${ws.join(" ")}"`), weight: 1 },
    { arbitrary: FastCheck.constantFrom("read_file", "a.b", "Read-File", "BUILD X"), weight: 1 }
  ),
  { minLength: 1, maxLength: 2 }
).map((qs) => qs.join(" "))

export const options: FastCheck.Arbitrary<SearchOptions> = FastCheck.record({
  query: queryText,
  offset: FastCheck.integer({ min: 0, max: 3 }),
  limit: FastCheck.integer({ min: 0, max: 4 }),
  roles: sometimes(FastCheck.subarray(["user", "assistant", "tool", "system", "title", "compaction"], { minLength: 1 }), 4),
  models: sometimes(FastCheck.subarray(MODELS, { minLength: 1 }), 5),
  since: sometimes(FastCheck.constantFrom("2026-01-03", TIMES[1]!), 5)
}, { requiredKeys: ["query"] }).map((o) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null)) as unknown as SearchOptions
)


/** A session the arbitrary `session` made. */
export type Session = typeof session extends FastCheck.Arbitrary<infer S> ? S : never

/** The lines of a session (version 2): its header (spoiled when asked), then its entries, some spoiled. */
export const sessionLines = (s: Session): Array<string> => {
  const header = JSON.stringify({ type: "session", version: 2, id: s.id, timestamp: TIMES[0] })
  const lines = [s.headerSpoiled ? header.slice(0, -1) : header]
  s.entries.forEach((e, i) => {
    const line = JSON.stringify({ type: "entry", version: 2, id: `build-${i}`, parentId: i === 0 ? null : `build-${i - 1}`, timestamp: e.time, ...e.body })
    lines.push(e.spoiled === null ? line : spoil(line, e.spoiled))
  })
  return lines
}

/**
 * Search and usage give the same answers on every backend (`docs/serve.md`): the
 * corpus of `@session-tree/testing/Corpus` is put into each backend behind the
 * library's back, then searched and summed; every answer is written out here,
 * so a backend that narrows too much (an index that leaves out a line the
 * matcher would take) or reads differently fails here. Each case searches only
 * the sessions it put (other cases share the backend).
 */
import { expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Ids from "@session-tree/core/Ids"
import type { SearchOptions, SearchResult } from "@session-tree/core/Search"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as Corpus from "@session-tree/testing/Corpus"
import { type Backend, Kit } from "./Kit.js"

type Needs = SessionJournal | SessionCatalog | Kit | Ids.Ids | Scope.Scope

/** What a search must answer on the corpus: each hit as `session-name/entry`, in rank order, and the total. */
const searches: ReadonlyArray<{ readonly options: Omit<SearchOptions, "sessions">; readonly hits: ReadonlyArray<string>; readonly total?: number }> = [
  { options: { query: "refused" }, hits: ["notes/n3", "incident/i4", "incident/i1"] },
  { options: { query: "connection" }, hits: ["notes/n7", "pooling/p1", "incident/i4", "incident/i1"] },
  { options: { query: "connection", offset: 1, limit: 2 }, hits: ["pooling/p1", "incident/i4"], total: 4 },
  { options: { query: `"service did not start"` }, hits: ["incident/i4"] },
  { options: { query: `"did service"` }, hits: [] },
  { options: { query: "ECONNREFUSED 5432" }, hits: ["incident/i3"] },
  { options: { query: "read_file src" }, hits: ["incident/i2"] },
  { options: { query: "run_tests" }, hits: ["pooling/p3", "pooling/p2"] },
  { options: { query: "probably closed" }, hits: ["incident/i2"] },
  { options: { query: "ärger straßen" }, hits: ["unicode/u1"] },
  { options: { query: "straße" }, hits: [] },
  { options: { query: "CAFÉ" }, hits: ["unicode/u2", "unicode/u1"] },
  { options: { query: "deploy", roles: ["title", "user"] }, hits: ["notes/n4", "notes/n2", "incident/i1"] },
  { options: { query: "connection", models: ["claude-opus-4"] }, hits: ["notes/n7"] },
  { options: { query: "refused", since: "2026-01-03" }, hits: ["notes/n3"] },
  { options: { query: "refused", until: "2026-01-02T10:03:00.000Z" }, hits: ["incident/i1"] },
  { options: { query: "connect" }, hits: [] }
]

/** The corpus put into the backend: each session at a fresh location, its header's ID the location where the backend asks. */
const putCorpus = Effect.gen(function*() {
  const kit = yield* Kit
  const journal = yield* SessionJournal
  const names = new Map<string, string>()
  for (const session of Corpus.corpus) {
    const location = kit.location(session.name)
    const id = journal.locations === "sessionId" ? location : session.id
    const lines = session.lines.map((line, i) => (i === 0 ? line.replace(`"id":"${session.id}"`, `"id":${JSON.stringify(id)}`) : line))
    yield* kit.put(location, lines)
    names.set(location, session.name)
  }
  return names
})

/** Each hit as `session-name/entry`, by the location it was put at. */
const named = (names: ReadonlyMap<string, string>, result: SearchResult) => result.hits.map((hit) => `${names.get(hit.location) ?? hit.location}/${hit.entry}`)

export const conformanceSearch = (backend: Backend): { readonly cases: number; readonly passed: number } => {
  const registered = { cases: 0, passed: 0 }
  it.layer(backend.layer, { timeout: "120 seconds" })(`search and usage: ${backend.name}`, (it) => {
    const test = (name: string, body: () => Effect.Effect<void, unknown, Needs>) => {
      registered.cases++
      it.scoped(name, () => Effect.tap(Effect.provide(body(), Layer.fresh(Ids.layerDeterministic)), () => Effect.sync(() => registered.passed++)))
    }

    test("every query of the corpus finds the hits written here, in this order", () =>
      Effect.gen(function*() {
        const names = yield* putCorpus
        const sessions = yield* Sessions.make
        const directory = (yield* Kit).directory
        for (const c of searches) {
          const result = yield* sessions.search({ ...c.options, directory, sessions: [...names.keys()] })
          expect([c.options.query, named(names, result)]).toEqual([c.options.query, c.hits])
          expect(result.total).toBe(c.total ?? c.hits.length)
          expect(result.unreadable).toEqual([])
        }
        // Hits carry the entry's facts and its marked excerpts.
        const [hit] = (yield* sessions.search({ query: "service did not", directory, sessions: [...names.keys()] })).hits
        expect(hit).toMatchObject({ entry: "i4", parentId: "i1", role: "assistant", model: "gpt-5", timestamp: "2026-01-02T10:04:00.000Z" })
        expect(hit!.snippets[0]!.marks.map(([s, e]) => hit!.snippets[0]!.text.slice(s, e))).toEqual(["service", "did", "not"])
      }))

    test("a session whose matching line does not decode is listed with the line's error; the others still found", () =>
      Effect.gen(function*() {
        const names = yield* putCorpus
        const kit = yield* Kit
        const location = [...names].find(([, name]) => name === "incident")![0]
        const lines = [...(yield* kit.raw(location))!]
        lines[4] = lines[4]!.replace(`"kind":"message"`, `"kind":"message","extra":1`)
        yield* kit.put(location, lines)
        const sessions = yield* Sessions.make
        const directory = kit.directory
        const result = yield* sessions.search({ query: "service", directory, sessions: [...names.keys()] })
        expect(result.hits).toEqual([])
        expect(result.unreadable.map((u) => [names.get(u.location), u.error.code])).toEqual([["incident", "SESSION_INVALID_RECORD"]])
        const other = yield* sessions.search({ query: "postgres", directory, sessions: [...names.keys()] })
        expect(named(names, other)).toEqual(["notes/n3", "incident/i3"])
        expect(other.unreadable).toEqual([])
      }))

    test("usage sums the same by model, day and session", () =>
      Effect.gen(function*() {
        const names = yield* putCorpus
        const sessions = yield* Sessions.make
        const directory = (yield* Kit).directory
        const only = [...names.keys()]
        const byModel = yield* sessions.stats({ directory, sessions: only, by: "model" })
        expect(byModel.rows.map((r) => [r.key, r.messages, r.inputTokens, r.outputTokens, r.cachedInputTokens, r.costed])).toEqual([
          ["claude-sonnet-4", 1, 1200, 80, 1000, 1],
          ["gpt-5", 1, 900, 40, 0, 0],
          ["claude-opus-4", 1, 300, 60, 0, 0]
        ])
        expect(byModel.total).toMatchObject({ sessions: 2, messages: 3, inputTokens: 2400, cost: 0.00585 })
        const byDay = yield* sessions.stats({ directory, sessions: only, by: "day" })
        expect(byDay.rows.map((r) => [r.key, r.inputTokens])).toEqual([["2026-01-02", 2100], ["2026-01-05", 300]])
        const bySession = yield* sessions.stats({ directory, sessions: only, by: "session" })
        // Most tokens first; sessions without usage after, by location (the corpus's names come in this order on every backend).
        expect(bySession.rows.map((r) => [names.get(r.key), r.entries, r.branches, r.inputTokens])).toEqual([
          ["incident", 4, 2, 2100],
          ["notes", 7, 1, 300],
          ["pooling", 3, 1, 0],
          ["unicode", 2, 1, 0]
        ])
      }))
  })
  return registered
}

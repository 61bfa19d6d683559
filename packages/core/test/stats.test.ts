/**
 * Usage summed from `meta.usage` (and the cost Pi records): per session, day and
 * model, every branch counted, date bounds, sessions that do not load listed
 * with their error, and each session read once per version.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ids from "../src/Ids.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import { SessionCatalog } from "../src/SessionCatalog.js"
import { SessionJournal } from "../src/SessionJournal.js"
import * as Sessions from "../src/Sessions.js"
import * as Stats from "../src/Stats.js"

const corpusStorage = (): MemoryJournal.Storage => new Map(Corpus.corpus.map((s) => [s.name, s.lines]))

describe("Sessions.stats", () => {
  it.effect("sums every message's usage, by day, model and session, with the cost where the usage carries it", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const total = yield* sessions.stats()
      expect(total.rows).toEqual([])
      expect(total.total).toEqual({
        sessions: 2,
        messages: 3,
        inputTokens: 1200 + 900 + 300,
        outputTokens: 80 + 40 + 60,
        reasoningTokens: 12,
        cachedInputTokens: 1000,
        cacheWriteTokens: 200,
        cost: 0.00585,
        costed: 1
      })
      const byModel = yield* sessions.stats({ by: "model" })
      expect(byModel.rows.map((r) => [r.key, r.sessions, r.inputTokens, r.outputTokens, r.costed])).toEqual([
        ["claude-sonnet-4", 1, 1200, 80, 1],
        ["gpt-5", 1, 900, 40, 0],
        ["claude-opus-4", 1, 300, 60, 0]
      ])
      const byDay = yield* sessions.stats({ by: "day" })
      expect(byDay.rows.map((r) => [r.key, r.messages, r.inputTokens])).toEqual([["2026-01-02", 2, 2100], ["2026-01-05", 1, 300]])
      const bySession = yield* sessions.stats({ by: "session" })
      // Every session has its row, usage or not; the session's shape beside.
      expect(bySession.rows.map((r) => [r.key, r.session, r.entries, r.branches, r.models, r.inputTokens])).toEqual([
        ["incident", "s-incident", 4, 2, ["claude-sonnet-4", "gpt-5"], 2100],
        ["notes", "s-notes", 7, 1, ["claude-opus-4"], 300],
        ["pooling", "s-pooling", 3, 1, [], 0],
        ["unicode", "s-unicode", 2, 1, [], 0]
      ])
      const bounded = yield* sessions.stats({ by: "model", since: "2026-01-03", until: "2026-01-05" })
      expect(bounded.rows.map((r) => r.key)).toEqual(["claude-opus-4"])
      expect(bounded.total.sessions).toBe(1)
      const only = yield* sessions.stats({ sessions: ["incident"] })
      expect(only.total.messages).toBe(2)
      for (const bad of [{ by: "week" }, { since: "2026-1-3" }, { until: "2026-01-02T00:00:00.000Z" }]) {
        expect((yield* Effect.flip(sessions.stats(bad as Stats.StatsOptions))).code).toBe("SESSION_INVALID_OPTIONS")
      }
    }).pipe(Effect.provide(Sessions.layer.pipe(Layer.provide(Layer.merge(MemoryJournal.layerStorage(corpusStorage()), Ids.layerDeterministic))))))

  it.effect("lists a session that does not load with its error, and reads a session again only once it changed", () =>
    Effect.gen(function*() {
      const storage = corpusStorage()
      const reads: Array<string> = []
      const journal = MemoryJournal.make(storage)
      const catalog = MemoryJournal.makeCatalog(storage)
      const sessions = yield* Sessions.make.pipe(
        Effect.provideService(SessionCatalog, { ...catalog, readMany: (locations) => Effect.suspend(() => (reads.push(...locations), catalog.readMany(locations))) }),
        Effect.provideService(SessionJournal, journal),
        Effect.provide(Ids.layerDeterministic)
      )
      storage.set("broken", [Corpus.notes.lines[0]!, "{"])
      const first = yield* sessions.stats()
      expect(first.unreadable).toEqual([{ location: "broken", error: { code: "SESSION_INVALID_JSON", message: expect.stringContaining("(line 2)") } }])
      expect(first.total.messages).toBe(3)
      expect(reads.sort()).toEqual(["broken", "incident", "notes", "pooling", "unicode"])
      reads.length = 0
      yield* sessions.stats({ by: "day" })
      expect(reads).toEqual([])
      storage.set("pooling", [...Corpus.pooling.lines, Corpus.pooling.lines[3]!.replace(`"p3"`, `"p4"`).replace(`"n3"`, `"n4"`)])
      yield* sessions.stats()
      expect(reads).toEqual(["pooling"])
    }))
})


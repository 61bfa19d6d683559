/**
 * Many processes on one database (SPEC B5, C2): eight OS processes, each with
 * connections of its own, append at once to ONE session and then to many.
 * Every acknowledged entry must be stored exactly once, the entries of each
 * session numbered 1..head without a gap, every loser of a race typed
 * (SESSION_REPLACED or SESSION_BUSY), and every loser able to reload and retry
 * until all its entries are in.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import { afterAll, beforeAll, expect, it } from "vitest"
import { type Child, prepareChild, spawnChild } from "./support/children.js"
import { layer, TestDatabase } from "./support/database.js"
import { messageOf } from "@session-tree/core/Record"

const PROCESSES = 8

const runtime = ManagedRuntime.make(layer("processes"))
afterAll(() => runtime.dispose())
let url = ""
beforeAll(async () => {
  url = (await runtime.runPromise(TestDatabase)).url
})

interface Ack {
  readonly entry: string
  readonly message: string
  readonly session: string
}

/** Starts `PROCESSES` racing appenders on `sessions`, all released at once; their acknowledgements and losses. */
const race = async (label: string, count: number, sessions: ReadonlyArray<string>) => {
  const appender = await prepareChild("appender.ts")
  const children: Array<Child> = Array.from(
    { length: PROCESSES },
    (_, i) => spawnChild(appender, [url, `${label}${i}`, "race", String(count), ...sessions])
  )
  await Promise.all(children.map((c) => c.waitFor("loaded")))
  for (const c of children) c.send("go")
  const exits = await Promise.all(children.map((c) => c.exited))
  const failures = children.flatMap((c) => c.lines.filter((l) => l.startsWith("error")).map((l) => `${l} ${c.stderr().slice(0, 300)}`))
  expect(failures).toEqual([])
  expect(exits.map((e) => e.code)).toEqual(children.map(() => 0))
  const acks: Array<Ack> = []
  const losses = new Map<string, number>()
  for (const c of children) {
    expect(c.lines.at(-1)).toBe("done")
    for (const line of c.lines) {
      const [kind, ...rest] = line.split(" ")
      if (kind === "ack") acks.push({ entry: rest[0]!, message: rest[1]!, session: rest[2]! })
      if (kind === "lost") losses.set(rest[0]!, (losses.get(rest[0]!) ?? 0) + 1)
    }
  }
  return { acks, losses }
}

/** Checks one session against the acknowledgements for it: each stored once, numbered 1..head, nothing else. */
const check = (session: string, acks: ReadonlyArray<Ack>) =>
  runtime.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const loaded = yield* SessionStore.read(session)
    const seqs = yield* sql<{ seq: number }>`SELECT seq FROM session_tree_entries WHERE session_id = ${session} ORDER BY seq`
    const [row] = yield* sql<{ head: number }>`SELECT head FROM session_tree_sessions WHERE id = ${session}`
    const mine = acks.filter((a) => a.session === session)
    const stored = new Map(loaded.entries.map((e) => [e.id, messageOf(e)!.id]))
    return {
      lost: mine.filter((a) => stored.get(a.entry) !== a.message).length,
      entries: loaded.entries.length,
      acknowledged: mine.length,
      distinctMessages: new Set(loaded.entries.map((e) => messageOf(e)!.id)).size,
      contiguous: seqs.every((s, i) => s.seq === i + 1) && seqs.length === row!.head
    }
  }))

const createSessions = (ids: ReadonlyArray<string>) =>
  runtime.runPromise(Effect.forEach(ids, (id) => Effect.scoped(SessionStore.create(id)), { discard: true }))

it(`${PROCESSES} processes appending to ONE session lose no acknowledged entry; the losers reload and retry`, async () => {
  const session = "one-shared"
  await createSessions([session])
  const perProcess = 25
  const started = Date.now()
  const { acks, losses } = await race("one", perProcess, [session])
  const result = await check(session, acks)
  const figures = { processes: PROCESSES, perProcess, ...result, losses: Object.fromEntries(losses), ms: Date.now() - started }
  console.log(`[pg:race one session] ${JSON.stringify(figures)}`)
  expect(result).toEqual({
    lost: 0,
    entries: PROCESSES * perProcess,
    acknowledged: PROCESSES * perProcess,
    distinctMessages: PROCESSES * perProcess,
    contiguous: true
  })
  expect([...losses.keys()].every((code) => code === "SESSION_REPLACED" || code === "SESSION_BUSY")).toBe(true)
  // Eight writers on one session: some of them must have lost a race, and retried.
  expect([...losses.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0)
})

it(`${PROCESSES} processes appending to MANY sessions lose no acknowledged entry in any of them`, async () => {
  const sessions = Array.from({ length: 12 }, (_, i) => `many-${i}`)
  await createSessions(sessions)
  const perProcess = 36
  const started = Date.now()
  const { acks, losses } = await race("many", perProcess, sessions)
  const results = await Promise.all(sessions.map((s) => check(s, acks)))
  const total = results.reduce(
    (t, r) => ({
      lost: t.lost + r.lost,
      entries: t.entries + r.entries,
      acknowledged: t.acknowledged + r.acknowledged,
      gapsOrDuplicates: t.gapsOrDuplicates + (r.contiguous && r.distinctMessages === r.entries ? 0 : 1)
    }),
    { lost: 0, entries: 0, acknowledged: 0, gapsOrDuplicates: 0 }
  )
  const figures = { processes: PROCESSES, sessions: sessions.length, perProcess, ...total, losses: Object.fromEntries(losses), ms: Date.now() - started }
  console.log(`[pg:race many sessions] ${JSON.stringify(figures)}`)
  expect(total).toEqual({
    lost: 0,
    entries: PROCESSES * perProcess,
    acknowledged: PROCESSES * perProcess,
    gapsOrDuplicates: 0
  })
  expect([...losses.keys()].every((code) => code === "SESSION_REPLACED" || code === "SESSION_BUSY")).toBe(true)
})



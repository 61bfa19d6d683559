/**
 * SIGKILL of writer processes at random moments, the fast subset (see
 * support/kills.ts; the long run is packages/pg/reliability/kills.test.ts).
 */
import * as ManagedRuntime from "effect/ManagedRuntime"
import { afterAll, expect, it } from "vitest"
import { layer, TestDatabase } from "./support/database.js"
import { runKills } from "./support/kills.js"

const KILLS = 8
const runtime = ManagedRuntime.make(layer("kills"))
afterAll(() => runtime.dispose())

it(`${KILLS} SIGKILLs of appending processes lose no acknowledged entry and leave no partial batch`, async () => {
  const { url } = await runtime.runPromise(TestDatabase)
  const started = Date.now()
  const { problems, stats } = await runKills(KILLS, url, runtime, "fast")
  console.log(`[pg:kills] fast ${JSON.stringify({ ...stats, ms: Date.now() - started })}`)
  expect(problems).toEqual([])
  expect(stats.kills).toBe(KILLS)
  expect(stats.acknowledgedLost).toBe(0)
  expect(stats.partialBatches).toBe(0)
  // The run did exercise appends: most kills came after several acknowledged entries.
  expect(stats.acknowledged).toBeGreaterThan(KILLS)
})

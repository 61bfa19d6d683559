/**
 * SIGKILL of writer processes at random moments, the long run (RELIABILITY=long,
 * `npm run test:reliability`): the same driver as packages/pg/test/kills.test.ts
 * with 1,000 kills. Inside `npm test` this file is skipped; the fast subset runs
 * in the pg project.
 */
import * as ManagedRuntime from "effect/ManagedRuntime"
import { afterAll, expect, it } from "vitest"
import { layer, TestDatabase } from "../test/support/database.js"
import { runKills } from "../test/support/kills.js"

const LONG = process.env["RELIABILITY"] === "long"
const KILLS = 1_000
const runtime = ManagedRuntime.make(layer("kills_long"))
afterAll(() => runtime.dispose())

it.skipIf(!LONG)(`${KILLS} SIGKILLs of appending processes lose no acknowledged entry and leave no partial batch`, async () => {
  const { url } = await runtime.runPromise(TestDatabase)
  const started = Date.now()
  const { problems, stats } = await runKills(KILLS, url, runtime, "long")
  console.log(`[reliability:pg-kills] long ${JSON.stringify({ ...stats, ms: Date.now() - started })}`)
  expect(problems).toEqual([])
  expect(stats.kills).toBe(KILLS)
  expect(stats.acknowledgedLost).toBe(0)
  expect(stats.partialBatches).toBe(0)
  expect(stats.acknowledged).toBeGreaterThan(KILLS)
  // Some kills landed inside a commit: the batch is stored though its process never heard back.
  expect(stats.unacknowledgedCommitted).toBeGreaterThan(0)
})

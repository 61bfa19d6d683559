/**
 * Only the version-2 load benchmark
 * (`npx tsx --conditions=@session-tree/source packages/bench/src/load-v2.ts`):
 * a ~4 MB version-2 session against the version-1 session of the same
 * conversation, each against its floor (goal: the version-2 ratio at most 1.25×
 * the version-1 ratio). Options: `--rounds N`, `--warmup N`, `--bytes N`.
 */
import { arg } from "./args.js"
import { loadAverage, machine, table } from "./harness.js"
import { benchLoadV2 } from "./suites/load-v2.js"

console.log(machine() + "\n")
const { relative, rows, storeSkipped } = await benchLoadV2({ rounds: arg("rounds", 25), warmup: arg("warmup", 5), bytes: arg("bytes", 4_000_000) })
console.log(table("Version 2 load (each against the floor of its own file)", rows))
if (storeSkipped !== undefined) console.log(`No SessionStore.read rows: ${storeSkipped}.\n`)
for (const r of relative) {
  const verdict = r.relative <= 1.25 ? "meets" : "misses"
  console.log(
    `${r.what}, ${r.group}: (v2 / its floor) / (v1 / its floor) = ${r.relative.toFixed(2)}× (${verdict} the goal of ≤ 1.25×), ` +
      `${r.perRound.toFixed(2)}× round by round; v2 / v1 = ${r.v2OverV1.toFixed(2)}×`
  )
}
console.log(`load average at end: ${loadAverage()}`)

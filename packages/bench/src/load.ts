/**
 * `npm run bench:load`: only the load benchmark, with the ratio to the floor
 * (goal: at most 1.5×); then the load of a version-2 session of 100,000 entries
 * (the server's cold open), against the floor and the core alone against
 * `JSON.parse` of the same lines. Options: `--rounds N`, `--warmup N`,
 * `--large-rounds N` (0 leaves the large session out; default 11).
 */
import { benchLoad } from "./suites/load.js"
import { benchLoadLarge } from "./suites/load-large.js"
import { loadAverage, machine, table } from "./harness.js"
import { arg } from "./args.js"

console.log(machine() + "\n")
const rows = await benchLoad({ rounds: arg("rounds", 25), warmup: arg("warmup", 5) })
console.log(table("Load (SessionStore.read vs floor vs Pi)", rows))
for (const row of rows.filter((r) => r.variant.startsWith("ours"))) {
  const verdict = row.ratio! <= 1.5 ? "meets" : "misses"
  console.log(`${row.group}: ours / floor = ${row.ratio!.toFixed(2)}× (${verdict} the goal of ≤ 1.5×)`)
}
console.log(`load average: ${loadAverage()}`)
const largeRounds = arg("large-rounds", 11)
if (largeRounds > 0) {
  const large = await benchLoadLarge({ rounds: largeRounds, warmup: 2 })
  console.log("\n" + table("Load of a version-2 session of 100,000 entries (the server's cold open)", large.rows))
  for (const row of large.rows.filter((r) => r.variant !== r.ratioTo)) {
    console.log(`${row.group}: ${row.variant} / ${row.ratioTo} = ${row.ratio!.toFixed(2)}×`)
  }
}
console.log(`load average at end: ${loadAverage()}`)

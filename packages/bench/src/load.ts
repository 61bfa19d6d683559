/**
 * `npm run bench:load`: only the load benchmark, with the ratio to the floor
 * (goal: at most 1.5×). Options: `--rounds N`, `--warmup N`.
 */
import { benchLoad } from "./suites/load.js"
import { loadAverage, machine, table } from "./harness.js"
import { arg } from "./args.js"

console.log(machine() + "\n")
const rows = await benchLoad({ rounds: arg("rounds", 25), warmup: arg("warmup", 5) })
console.log(table("Load (SessionStore.read vs floor vs Pi)", rows))
for (const row of rows.filter((r) => r.variant.startsWith("ours"))) {
  const verdict = row.ratio! <= 1.5 ? "meets" : "misses"
  console.log(`${row.group}: ours / floor = ${row.ratio!.toFixed(2)}× (${verdict} the goal of ≤ 1.5×)`)
}
console.log(`load average at end: ${loadAverage()}`)

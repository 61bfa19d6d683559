/**
 * `npm run bench:serve`: the benchmarks of serving, searching and following
 * sessions, each a table of medians, p90s and ratios to a baseline measured in
 * the same run (BENCHMARKS.md, "Serve").
 *
 *   --only search-files,search-pg,list,live   a subset
 *   --rounds N        rounds of each search table (default 5; the database's 4×)
 *   --gib X           gibibytes of session files for search-files (default 1)
 *   --entries N       entries in the database for search-pg (default 1,000,000)
 *   --sessions N      session files for list (default 100,000)
 *   --list-rounds N   rounds of list (default 20)
 *   --appends N       appends measured per backend for live (default 100)
 *   --live-entries N  entries of live's large session (default 100,000; 0: none)
 *   --large-appends N appends measured per backend on that session (default 10)
 */
import { arg, list } from "./args.js"
import { loadAverage, machine, now, table, tempDir } from "./harness.js"
import { benchListServe } from "./suites/list-serve.js"
import { benchLive } from "./suites/live.js"
import { benchSearchFiles } from "./suites/search-files.js"
import { benchSearchPg } from "./suites/search-pg.js"

const only = list("only")
const wanted = (name: string) => only === undefined || only.includes(name)
const roundsN = arg("rounds", 5)

console.log(machine())
console.log("")
const began = now()
const summary: Array<string> = []

if (wanted("search-files")) {
  const tmp = tempDir()
  try {
    const { note, rows } = await benchSearchFiles({ rounds: roundsN, bytes: arg("gib", 1) * 1024 ** 3 }, tmp.dir)
    console.log(table(`S1. Search session files (${note}; ratio to grep -c -F over the same files)`, rows) + "\n")
    for (const r of rows.filter((r) => r.variant.startsWith("ours, "))) {
      const goal = r.variant.startsWith("ours, indexed") ? 1 : 2
      summary.push(
        `search over files, ${r.group}, ${r.variant.slice(6, r.variant.indexOf(":"))}: ours / grep -c -F = ${r.ratio!.toFixed(2)}× (goal ${goal === 1 ? "with" : "without"} an index ≤ ${goal}×: ${r.ratio! <= goal ? "met" : "missed"})`
      )
    }
  } finally {
    tmp.remove()
  }
}
if (wanted("search-pg")) {
  const { note, p50, p95, rows } = await benchSearchPg({ rounds: roundsN * 4, entries: arg("entries", 1_000_000) })
  console.log(table(`S2. Search in PostgreSQL (${note}; ratio to the index lookup's SQL)`, rows) + "\n")
  summary.push(`search in PostgreSQL (a rare word, a phrase): p50 ${p50.toFixed(1)} ms, p95 ${p95.toFixed(1)} ms (goal p50 ≤ 50 ms: ${p50 <= 50 ? "met" : "missed"}); ${note}`)
}
if (wanted("list")) {
  const tmp = tempDir()
  try {
    const { cold, note, rows, started } = await benchListServe({ rounds: arg("list-rounds", 20), sessions: arg("sessions", 100_000) }, tmp.dir)
    console.log(table(`S3. The list of sessions (${note}; ratio to the library's repeated listing of the page)`, rows) + "\n")
    const first = rows.find((r) => r.variant.startsWith("server: GET / "))!
    summary.push(`list of ${note}: the server's first page ${first.median.toFixed(0)} ms (goal ≤ 100 ms: ${first.median <= 100 ? "met" : "missed"}), ${first.ratio!.toFixed(2)}× the library's listing; server start (first scan) ${started.toFixed(0)} ms, its first page cold ${cold.toFixed(0)} ms`)
  } finally {
    tmp.remove()
  }
}
if (wanted("live")) {
  const tmp = tempDir()
  try {
    const { p95, rows } = await benchLive({ appends: arg("appends", 100), entries: arg("live-entries", 100_000), largeAppends: arg("large-appends", 10) }, tmp.dir)
    console.log(table("S4. Live: from a durable append to an open page (ratio to the append itself)", rows) + "\n")
    for (const [name, ms] of p95) summary.push(`live, ${name}: p95 ${ms.toFixed(0)} ms (goal ≤ 1 s: ${ms <= 1000 ? "met" : "missed"})`)
  } finally {
    tmp.remove()
  }
}
console.log("### Summary\n")
for (const line of summary) console.log(`- ${line}`)
console.log(`\nTotal ${((now() - began) / 1000).toFixed(0)} s; load average at the end: ${loadAverage()}`)

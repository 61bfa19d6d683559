/**
 * `npm run bench`: every benchmark, each a table of medians, p90s and ratios to
 * a baseline measured in the same run on the same data.
 *
 *   --only load,load-v2,append,fill,concurrent,kernel-copy,list,db-list,startup,agent-step,sync   a subset
 *   --rounds N        rounds of the load, version-2 load, append and kernel-copy tables (default 25)
 *   --append-warmup N rounds of the append table run before measuring (default 40: the
 *                     first appends of a process run in V8's interpreter; the table shows them too)
 *   --fill-rounds N   fills per variant (default 1: a fill of ours takes a minute)
 *   --concurrent-rounds N                               (default 5)
 *   --list-rounds N   listings per variant (default 5; 10 for the database)
 *   --sessions N      sessions listed (default 2,000)
 *   --startup-rounds N  processes per variant (default 15)
 *   --agent-rounds N  agent steps per variant (default 25)
 *   --sync-rounds N   second syncs per variant (default 15)
 */
import { arg, list } from "./args.js"
import { loadAverage, machine, now, type Row, table, tempDir } from "./harness.js"
import { piVersion } from "./pi.js"
import { benchAgentStep } from "./suites/agent-step.js"
import { benchAppend } from "./suites/append.js"
import { benchConcurrent } from "./suites/concurrent.js"
import { benchFill } from "./suites/fill.js"
import { benchKernelCopy } from "./suites/kernel-copy.js"
import { benchDbList } from "./suites/db-list.js"
import { benchList } from "./suites/list.js"
import { benchLoad } from "./suites/load.js"
import { benchLoadV2 } from "./suites/load-v2.js"
import { benchStartup } from "./suites/startup.js"
import { benchSync } from "./suites/sync.js"

const only = list("only")
const wanted = (name: string) => only === undefined || only.includes(name)
const roundsN = arg("rounds", 25)
const warmup = arg("warmup", 3)

console.log(machine())
console.log(`Pi: @mariozechner/pi-coding-agent ${piVersion()}\n`)
const began = now()
const summary: Array<string> = []
const show = (title: string, rows: ReadonlyArray<Row>, unit?: string) => console.log(table(title, rows, unit) + "\n")

if (wanted("load")) {
  const rows = await benchLoad({ rounds: roundsN, warmup })
  show("1. Load a ~4 MB / 4,000-entry session (ratio to the floor: read + isUtf8 + split + JSON.parse)", rows)
  for (const r of rows.filter((r) => r.variant.startsWith("ours"))) {
    summary.push(`${r.group}: ours / floor = ${r.ratio!.toFixed(2)}× (goal ≤ 1.5×: ${r.ratio! <= 1.5 ? "met" : "missed"})`)
  }
}
if (wanted("load-v2")) {
  const { relative, rows, storeSkipped } = await benchLoadV2({ rounds: roundsN, warmup })
  show("1b. Version 2 load: a ~4 MB agent session and the version-1 session of the same conversation, each against its floor", rows)
  if (storeSkipped !== undefined) console.log(`No SessionStore.read rows: ${storeSkipped}.\n`)
  for (const r of relative) {
    summary.push(
      `version-2 load (${r.what}), ${r.group}: (v2 / its floor) / (v1 / its floor) = ${r.relative.toFixed(2)}× ` +
        `(goal ≤ 1.25×: ${r.relative <= 1.25 ? "met" : "missed"}), ${r.perRound.toFixed(2)}× round by round; v2 / v1 = ${r.v2OverV1.toFixed(2)}×`
    )
  }
}
if (wanted("append")) {
  const rows = await benchAppend({ rounds: roundsN, warmup: arg("append-warmup", 40) })
  show("2. One durable append (ratio to the same protocol in bare node:fs)", rows)
  for (const r of rows.filter((r) => r.variant.startsWith("ours"))) {
    const pool = r.variant.includes("ThreadPool")
    const warm = r.variant.endsWith("warm-up rounds")
    const goal = r.group.includes("1.0 MB") && !warm && !pool ? ` (goal ≤ 1.15×: ${r.ratio! <= 1.15 ? "met" : "missed"})` : ""
    summary.push(`${r.group}${warm ? ", warm-up rounds" : ""}: ours${pool ? " on Fs.layerThreadPool" : ""} / protocol floor = ${r.ratio!.toFixed(2)}×${goal}`)
  }
}
if (wanted("fill")) {
  const rows = await benchFill({ rounds: arg("fill-rounds", 1) })
  show("3. Fill a session from 0 to 4,096 entries (total time)", rows)
  const ours = rows.find((r) => r.variant.startsWith("ours"))!
  const piRow = rows.find((r) => r.variant.startsWith("Pi"))!
  summary.push(`${ours.group}: ours ${(ours.median / 1000).toFixed(1)} s = ${ours.ratio!.toFixed(2)}× the protocol floor, ${(ours.median / piRow.median).toFixed(0)}× Pi (which does not fsync)`)
}
if (wanted("concurrent")) {
  const tmp = tempDir()
  try {
    const rows = await benchConcurrent({ rounds: arg("concurrent-rounds", 5), warmup: 1 }, tmp.dir)
    show("4. Concurrent appenders at ~1 MB (appends per second; ratio to one commit per append)", rows, "/s")
    const eight = rows.find((r) => r.variant.includes(" 8 writers"))
    if (eight !== undefined) summary.push(`group commit at 8 writers: ${eight.ratio!.toFixed(2)}× the sequential throughput (goal ≥ 5×: ${eight.ratio! >= 5 ? "met" : "missed"})`)
  } finally {
    tmp.remove()
  }
}
if (wanted("kernel-copy")) {
  const tmp = tempDir()
  try {
    const rows = await benchKernelCopy({ rounds: roundsN, warmup }, tmp.dir)
    show("5. Commit with and without the kernel copy (ratio to the commit that writes everything)", rows)
    for (const r of rows.filter((r) => r.variant === "commit with kernel copy")) summary.push(`${r.group}: kernel copy / full write = ${r.ratio!.toFixed(2)}×`)
  } finally {
    tmp.remove()
  }
}
if (wanted("list")) {
  const tmp = tempDir()
  try {
    const { note, rows } = await benchList({ rounds: arg("list-rounds", 5), sessions: arg("sessions", 2_000) }, tmp.dir)
    show(`6. List a directory of sessions (${note}; ratio to Pi's SessionManager.list)`, rows)
    const ratio = (variant: string) => rows.find((r) => r.variant === variant)!.ratio!
    const cold = ratio("ours: Sessions.list, cold")
    const repeated = 1 / ratio("ours: Sessions.list, repeated")
    const changed = 1 / ratio("ours: Sessions.list, after one session changed")
    summary.push(`list, cold: ours / Pi = ${cold.toFixed(2)}× (goal ≤ 1×: ${cold <= 1 ? "met" : "missed"})`)
    summary.push(`list, repeated: ${repeated.toFixed(0)}× faster than Pi (goal ≥ 20×: ${repeated >= 20 ? "met" : "missed"})`)
    summary.push(`list after one session changed: ${changed.toFixed(0)}× faster than Pi (goal ≥ 10×: ${changed >= 10 ? "met" : "missed"})`)
  } finally {
    tmp.remove()
  }
}
if (wanted("db-list")) {
  const { note, rows } = await benchDbList({ rounds: arg("list-rounds", 5) * 2, sessions: arg("sessions", 2_000) })
  show(`7. List the sessions of a PostgreSQL database, pages of 100 (${note}; ratio to the SQL that fetches the page's lines)`, rows)
  for (const r of rows.filter((r) => r.variant.startsWith("ours"))) {
    const bound = r.variant.includes("nothing kept") ? `, ${r.ratio!.toFixed(2)}× the SQL that only fetches the page's lines` : ""
    summary.push(`${r.variant.slice("ours: Sessions.list, ".length)} in PostgreSQL: ${r.median.toFixed(1)} ms (goal ≤ 50 ms: ${r.median <= 50 ? "met" : "missed"}${bound})`)
  }
}
if (wanted("startup")) {
  const tmp = tempDir()
  try {
    const rows = await benchStartup({ rounds: arg("startup-rounds", 15), warmup: 2 }, tmp.dir)
    show("8. Start the command (whole processes; ratio to node -e 0)", rows)
    for (const verify of rows.filter((r) => r.variant === "session-tree verify small.jsonl")) {
      const base = rows.find((r) => r.group === verify.group && r.variant === "node -e 0")!
      summary.push(
        `session-tree verify start-up, ${verify.group.split(", ").at(-1)}: ${verify.median.toFixed(0)} ms = ${verify.ratio!.toFixed(2)}× node -e 0 ` +
          `(${base.median.toFixed(0)} ms; goal ≤ 2.5×: ${verify.ratio! <= 2.5 ? "met" : "missed"}; ${verify.note})`
      )
    }
  } finally {
    tmp.remove()
  }
}
if (wanted("agent-step")) {
  const tmp = tempDir()
  try {
    const rows = await benchAgentStep({ rounds: arg("agent-rounds", 25), warmup: 5 }, tmp.dir)
    show("9. One agent step on a 10,000-entry session, sent and streamed (ratio to the same step with no persistence)", rows)
    for (const r of rows.filter((r) => r.variant.startsWith("ours"))) summary.push(`${r.group}, ${r.variant}: ${r.ratio!.toFixed(2)}× the step with no persistence`)
  } finally {
    tmp.remove()
  }
}
if (wanted("sync")) {
  const tmp = tempDir()
  try {
    const { note, rows } = await benchSync({ rounds: arg("sync-rounds", 15), warmup: 2 }, tmp.dir)
    show(`10. A second sync over unchanged transcripts (${note}; ratio to a bare stat walk of the same files)`, rows)
    const ours = rows.find((r) => r.variant.startsWith("ours"))!
    summary.push(`${ours.group}, second sync: ${ours.median.toFixed(1)} ms = ${ours.ratio!.toFixed(2)}× a bare stat walk (goal ≤ 2×: ${ours.ratio! <= 2 ? "met" : "missed"})`)
  } finally {
    tmp.remove()
  }
}
console.log("### Summary\n")
for (const line of summary) console.log(`- ${line}`)
console.log(`\nTotal ${((now() - began) / 1000).toFixed(0)} s; load average at the end: ${loadAverage()}`)

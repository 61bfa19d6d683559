/**
 * `npm run bench:size`: sessions of real size, each case against a baseline
 * measured in the same run. The fill, by far the longest, runs last.
 *
 *   --only append,fill,load,pg,images   a subset
 *   --quick                 everything scaled down (a check that the suite runs, not figures)
 *   --rounds N, --warmup N  rounds of the append, PostgreSQL and image tables (default 30, 10)
 *   --small N, --large N    the append's sessions in bytes (default 65,536 and 67,108,864)
 *   --fill-entries N        entries of the fill (default 100,000); --fill-rounds N (default 1)
 *   --load-bytes N          the loaded session in bytes (default 100,000,000);
 *   --load-rounds N         its rounds (default 5, after 1 warm-up); --children N processes per loader (default 1)
 *   --pg-bytes N            the PostgreSQL session in bytes (default 16,000,000); --pg-fsync on|off (default off)
 *   --screenshots N, --image-bytes N   (default 200 and 500,000)
 */
import { arg, list } from "./args.js"
import { loadAverage, machine, now, type Row, table } from "./harness.js"
import { piVersion } from "./pi.js"
import { benchSizeAppend, label } from "./suites/size-append.js"
import { benchSizeFill } from "./suites/size-fill.js"
import { benchSizeImages } from "./suites/size-images.js"
import { benchSizeLoad, memoryTable } from "./suites/size-load.js"
import { benchSizePg } from "./suites/size-pg.js"

const only = list("only")
const wanted = (name: string) => only === undefined || only.includes(name)
const quick = process.argv.includes("--quick")
const scaled = (name: string, full: number, small: number) => arg(name, quick ? small : full)
const roundsN = scaled("rounds", 30, 5)
const warmup = scaled("warmup", 10, 2)
const fsyncIndex = process.argv.indexOf("--pg-fsync")
const pgFsync = fsyncIndex !== -1 && process.argv[fsyncIndex + 1] === "on" ? "on" : "off"

console.log(machine())
console.log(`Pi: @mariozechner/pi-coding-agent ${piVersion()}${quick ? "\n--quick: everything scaled down" : ""}\n`)
const began = now()
const summary: Array<string> = []
const show = (title: string, rows: ReadonlyArray<Row>, unit?: string) => console.log(table(title, rows, unit) + "\n")
const goal = (value: number, bound: number, at: "most" | "least") =>
  `goal ${at === "most" ? "≤" : "≥"} ${bound}×: ${(at === "most" ? value <= bound : value >= bound) ? "met" : "missed"}`

if (wanted("append")) {
  const small = arg("small", 64 * 1024)
  const large = scaled("large", 64 * 1024 * 1024, 2 * 1024 * 1024)
  const result = await benchSizeAppend({ rounds: roundsN, warmup, small, large })
  show(`1. Append one ~1 KB entry to a version-2 file of ${label(small)} and of ${label(large)} (ratio to write + fdatasync)`, result.rows)
  if (result.skipped !== undefined) {
    console.log(`No rows of ours: ${result.skipped}.\n`)
    summary.push(`append at ${label(large)}: not measured (${result.skipped})`)
  } else {
    summary.push(`append at ${label(large)} / at ${label(small)} = ${result.growth!.toFixed(2)}× (${goal(result.growth!, 1.3, "most")})`)
    summary.push(`append at ${label(large)} / write + fdatasync = ${result.overFloor!.toFixed(2)}× (${goal(result.overFloor!, 3, "most")})`)
  }
}
if (wanted("load")) {
  const bytes = scaled("load-bytes", 100_000_000, 3_000_000)
  const result = await benchSizeLoad({ rounds: scaled("load-rounds", 5, 3), warmup: 1, bytes, children: arg("children", 1) })
  show(`3. Load a ${(result.fileBytes / 1e6).toFixed(0)} MB version-2 file (ratio to the floor)`, result.rows)
  console.log(`### 3b. The same loads, each in a process of its own: time and memory\n\n${memoryTable(result.memory)}`)
  if (result.skipped !== undefined) {
    console.log(`No rows of ours: ${result.skipped}.\n`)
    summary.push(`load of ${(result.fileBytes / 1e6).toFixed(0)} MB: not measured (${result.skipped})`)
  } else {
    for (const r of result.rows.filter((r) => r.variant.startsWith("ours"))) {
      summary.push(`${r.variant.slice("ours: ".length)} of ${(result.fileBytes / 1e6).toFixed(0)} MB / floor = ${r.ratio!.toFixed(2)}× (${goal(r.ratio!, 1.5, "most")})`)
    }
  }
  const piRow = result.rows.find((r) => r.variant.startsWith("Pi"))!
  summary.push(`Pi's SessionManager.open of the same conversation (${(result.piBytes / 1e6).toFixed(0)} MB): ${piRow.ratio!.toFixed(2)}× the floor of our file`)
}
if (wanted("pg")) {
  const result = await benchSizePg({
    rounds: roundsN,
    warmup,
    bytes: scaled("pg-bytes", 16_000_000, 1_000_000),
    concurrentRounds: scaled("concurrent-rounds", 5, 2),
    fsync: pgFsync
  })
  show(`4. PostgreSQL (${result.note}): load and durable append (ratio to a bare pg client)`, result.rows)
  show(`4b. PostgreSQL: group commit (appends per second; ratio to one append in flight)`, result.groupRows, "/s")
  summary.push(`PostgreSQL load / bare pg = ${result.load.toFixed(2)}× (${goal(result.load, 1.5, "most")})`)
  summary.push(`PostgreSQL append / bare pg = ${result.append.toFixed(2)}× (${goal(result.append, 1.3, "most")})`)
  summary.push(`PostgreSQL group commit at 8 writers = ${result.groupCommit.toFixed(2)}× sequential (${goal(result.groupCommit, 5, "least")})`)
}
if (wanted("images")) {
  const screenshots = scaled("screenshots", 200, 10)
  const imageBytes = scaled("image-bytes", 500_000, 100_000)
  const result = await benchSizeImages({ rounds: roundsN, warmup, screenshots, imageBytes })
  if (result.refused !== undefined) {
    console.log(`### 5. Images\n\nNot measured: ${result.refused}.\n`)
    summary.push(`images: not measured (${result.refused})`)
  } else {
    show(`5. A session of ${screenshots} screenshots against the same session without images (load time)`, result.rows!)
    const ratio = result.rows![1]!.ratio!
    summary.push(
      `images: lines ${(result.lineBytes! / 1e6).toFixed(2)} MB in all (goal < 1 MB: ${result.lineBytes! < 1e6 ? "met" : "missed"}; ` +
        `${(result.plainBytes! / 1e6).toFixed(2)} MB without images; ${result.blobs} blobs, ${(result.blobBytes! / 1e6).toFixed(0)} MB); ` +
        `load ${ratio.toFixed(2)}× the session without images (${goal(ratio, 1.2, "most")})`
    )
  }
}
if (wanted("fill")) {
  const entries = scaled("fill-entries", 100_000, 500)
  const { rows } = await benchSizeFill({ rounds: arg("fill-rounds", 1), entries })
  show(`2. Fill a version-2 file from 0 to ${entries} entries (total time; ratio to the same protocol in bare node:fs)`, rows)
  const ours = rows.find((r) => r.variant.startsWith("ours"))!
  const piRow = rows.find((r) => r.variant.startsWith("Pi"))!
  summary.push(
    `fill 0 → ${entries}: ours ${(ours.median / 1000).toFixed(1)} s (${(ours.median / entries).toFixed(2)} ms an append) = ${ours.ratio!.toFixed(2)}× the protocol floor, ` +
      `${(ours.median / piRow.median).toFixed(1)}× Pi (${(piRow.median / 1000).toFixed(1)} s, no fsync)`
  )
}
console.log("### Summary\n")
for (const line of summary) console.log(`- ${line}`)
console.log(`\nTotal ${((now() - began) / 1000).toFixed(0)} s; load average at the end: ${loadAverage()}`)

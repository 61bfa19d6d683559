/**
 * Measuring without a quiet machine: every variant of a case runs once per
 * round, in an order that rotates from round to round, with a GC before each
 * sample. Load from other processes then hits all variants alike, and the
 * ratios of medians stay meaningful even when the absolute times do not.
 *
 * The GC before each sample is a full one, so no sample pays for garbage left
 * by another (a load allocates tens of MB). It also drops the hidden classes no
 * live object uses, and with them the optimized code that depends on them, so
 * code that allocates short-lived objects starts each sample partly
 * unoptimized, which a running process rarely sees; `--gc minor` empties only
 * the young generation, to compare.
 *
 * Before the GC the event loop turns once, as it does between two appends of a
 * running program: work a variant leaves for the next turn (ours closes
 * replaced generations in the background) then runs outside the samples.
 */
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

setFlagsFromString("--expose-gc")
const gcNow = runInNewContext("gc") as (options: { readonly type: "minor" | "major" }) => void
const gcIndex = process.argv.indexOf("--gc")
/** The kind of GC before each sample: `major` (default) or `minor` (`--gc minor`). */
export const gcKind: "minor" | "major" = gcIndex !== -1 && process.argv[gcIndex + 1] === "minor" ? "minor" : "major"
const gc = () => gcNow({ type: gcKind })

export interface Variant {
  readonly name: string
  /** Runs once per round; returns the milliseconds to record, or nothing to time the whole call. */
  readonly run: () => Promise<number | void> | number | void
}

export interface Samples {
  readonly name: string
  readonly ms: ReadonlyArray<number>
  /** The warm-up rounds, kept apart: the first calls of a process run in V8's interpreter. */
  readonly warmup: ReadonlyArray<number>
}

export const now = (): number => performance.now()

export const rounds = async (
  variants: ReadonlyArray<Variant>,
  options: { readonly rounds: number; readonly warmup: number }
): Promise<Array<Samples>> => {
  const samples = variants.map(() => [] as Array<number>)
  const warmup = variants.map(() => [] as Array<number>)
  for (let r = 0; r < options.warmup + options.rounds; r++) {
    for (let k = 0; k < variants.length; k++) {
      const i = (r + k) % variants.length
      await new Promise((resolve) => setImmediate(resolve))
      gc()
      const start = now()
      const reported = await variants[i]!.run()
      const elapsed = typeof reported === "number" ? reported : now() - start
      ;(r >= options.warmup ? samples : warmup)[i]!.push(elapsed)
    }
  }
  return variants.map((v, i) => ({ name: v.name, ms: samples[i]!, warmup: warmup[i]! }))
}

export const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  if (xs.length === 0) return Number.NaN
  const s = xs.slice().sort((a, b) => a - b)
  const pos = (s.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return s[lo]! + (s[hi]! - s[lo]!) * (pos - lo)
}
export const median = (xs: ReadonlyArray<number>): number => quantile(xs, 0.5)
export const p90 = (xs: ReadonlyArray<number>): number => quantile(xs, 0.9)

export interface Row {
  readonly group: string
  readonly variant: string
  readonly median: number
  readonly p90: number
  readonly n: number
  /** This row's median over the baseline's median (or a throughput ratio, see `unit`). */
  readonly ratio?: number
  readonly ratioTo?: string
  readonly note?: string
}

/** Rows of one group: median and p90 of each variant and its ratio to `baseline`. */
export const summarize = (
  group: string,
  samples: ReadonlyArray<Samples>,
  baseline: string,
  notes: Readonly<Record<string, string>> = {}
): Array<Row> => {
  const base = samples.find((s) => s.name === baseline)
  if (base === undefined) throw new Error(`no baseline ${baseline}`)
  const baseMedian = median(base.ms)
  return samples.map((s) => ({
    group,
    variant: s.name,
    median: median(s.ms),
    p90: p90(s.ms),
    n: s.ms.length,
    ratio: median(s.ms) / baseMedian,
    ratioTo: baseline,
    ...(notes[s.name] !== undefined ? { note: notes[s.name]! } : {})
  }))
}

const fmt = (x: number, unit: string): string =>
  Number.isNaN(x) ? "-" : x >= 100 ? x.toFixed(0) + unit : x >= 10 ? x.toFixed(1) + unit : x.toFixed(2) + unit

/** A plain-text table (also valid Markdown). */
export const table = (title: string, rows: ReadonlyArray<Row>, unit = "ms"): string => {
  const header = ["case", "variant", `median`, `p90`, "n", "ratio", "note"]
  const body = rows.map((r) => [
    r.group,
    r.variant,
    fmt(r.median, " " + unit),
    fmt(r.p90, " " + unit),
    String(r.n),
    r.ratio === undefined ? "" : `${r.ratio.toFixed(2)}× ${r.ratioTo ?? ""}`.trimEnd(),
    r.note ?? ""
  ])
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>) => "| " + cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ") + " |"
  return [
    `### ${title}`,
    "",
    line(header),
    "| " + widths.map((w) => "-".repeat(w)).join(" | ") + " |",
    ...body.map(line),
    ""
  ].join("\n")
}

/** A fresh directory under the OS temp dir, removed by `remove`. */
export const tempDir = (prefix = "session-tree-bench-"): { readonly dir: string; readonly remove: () => void } => {
  const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), prefix))
  return { dir, remove: () => NFS.rmSync(dir, { recursive: true, force: true }) }
}

/** What the numbers were measured on. */
export const machine = (): string => {
  const cpu = (() => {
    try {
      const m = /^model name\s*:\s*(.+)$/m.exec(NFS.readFileSync("/proc/cpuinfo", "utf8"))
      return m?.[1] ?? OS.cpus()[0]?.model ?? "unknown"
    } catch {
      return OS.cpus()[0]?.model ?? "unknown"
    }
  })()
  const fsType = (() => {
    try {
      const type = NFS.statfsSync(OS.tmpdir()).type
      const names: Record<number, string> = { 0xef53: "ext2/ext3/ext4", 0x58465342: "xfs", 0x9123683e: "btrfs", 0x01021994: "tmpfs", 0x794c7630: "overlayfs", 0x2fc12fc1: "zfs" }
      return names[type] ?? `0x${type.toString(16)}`
    } catch {
      return "unknown"
    }
  })()
  const load = OS.loadavg().map((l) => l.toFixed(1)).join(" ")
  return [
    `node ${process.version}, ${OS.platform()} ${OS.release()}`,
    `cpu: ${cpu} × ${OS.availableParallelism()} (nproc)`,
    `temp dir: ${OS.tmpdir()} on ${fsType}`,
    `load average at start: ${load}`,
    `GC before each sample: ${gcKind}`
  ].join("\n")
}

export const loadAverage = (): string => OS.loadavg()[0]!.toFixed(1)

/**
 * Loader fuzzing (SPEC A "Mechanism", B3, B4): valid session files and mutations
 * of them go through `Codec.decodeSession` in-process, and every answer is held
 * against an independent reference decoder (support/oracle.ts). Any throw is a
 * crash; any failure that is not a SessionError with a B4 code is untyped; an
 * accepted file that the reference rejects is a corrupt file accepted; an input
 * that takes longer than HANG_MS counts as a hang (the slowest input is reported).
 */
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { expect, it } from "vitest"
import { count, LONG, report } from "./support/config.js"
import { type Finding, judge } from "./support/judge.js"
import { bytesOf, corpus, lineOfBytes, mutations, rngFrom, type Rng } from "./support/mutations.js"

const TOTAL = Number(process.env["RELIABILITY_FUZZ_INPUTS"] ?? count(5_000, 1_000_000))
/** An input slower than this is a hang (the largest inputs, 4 MB, take tens of milliseconds). */
const HANG_MS = 2_000
const seed = Number(process.env["RELIABILITY_SEED"] ?? Date.now() % 1_000_000_007)

/** Lets the test runner's own messages through: the checks are synchronous work. */
const yieldNow = () => new Promise<void>((resolve) => setImmediate(resolve))

const weighted = (rng: Rng) => {
  const total = mutations.reduce((n, m) => n + m[1], 0)
  let r = rng() * total
  for (const m of mutations) {
    r -= m[1]
    if (r < 0) return m
  }
  return mutations[mutations.length - 1]!
}

it(`fuzzes the loader with ${TOTAL} inputs: no crash, no hang, no untyped error, no corrupt file accepted`, async () => {
  const rng = rngFrom(seed)
  const stats = {
    seed,
    inputs: 0,
    accepted: 0,
    rejected: 0,
    crashes: 0,
    untyped: 0,
    acceptedCorrupt: 0,
    rejectedValid: 0,
    resultDiffers: 0,
    codeDiffers: 0,
    notFrozen: 0,
    /** Inputs a mutation gave a version-2 header: the reference models version 1 only (see support/oracle.ts). */
    versionTwo: 0,
    hangs: 0,
    maxMs: 0,
    maxMsInput: "",
    byMutation: {} as Record<string, number>,
    byCode: {} as Record<string, number>
  }
  const findings: Array<Finding> = []
  let slowest: Uint8Array = new Uint8Array(0)
  const prototypeNames = Object.getOwnPropertyNames(Object.prototype).length

  const check = (label: string, bytes: Uint8Array) => {
    const verdict = judge(bytes)
    stats.inputs++
    stats.byCode[verdict.outcome] = (stats.byCode[verdict.outcome] ?? 0) + 1
    if (verdict.outcome === "accepted") stats.accepted++
    else stats.rejected++
    if (verdict.ms > stats.maxMs) {
      stats.maxMs = Math.round(verdict.ms * 100) / 100
      stats.maxMsInput = `${label} (${bytes.length} bytes)`
      slowest = bytes
    }
    if (verdict.ms > HANG_MS) {
      stats.hangs++
      findings.push({ kind: "hang", label, detail: `${verdict.ms} ms`, base64: Buffer.from(bytes).toString("base64") })
    }
    if (verdict.kind === "version-2") stats.versionTwo++
    else if (verdict.kind !== "ok") {
      const key = ({ crash: "crashes", untyped: "untyped", "accepted-corrupt": "acceptedCorrupt", "rejected-valid": "rejectedValid", "result-differs": "resultDiffers", "code-differs": "codeDiffers", "not-frozen": "notFrozen" } as const)[verdict.kind as "crash"]
      stats[key]++
      if (findings.filter((f) => f.kind === verdict.kind).length < 25) {
        findings.push({ kind: verdict.kind, label, detail: verdict.detail, base64: Buffer.from(bytes).toString("base64") })
      }
    }
    if (Object.getOwnPropertyNames(Object.prototype).length !== prototypeNames || ({} as Record<string, unknown>)["polluted"] !== undefined) {
      throw new Error(`input ${label} changed Object.prototype`)
    }
  }

  const base = corpus(rng, 40)
  // Every truncation of the fixed corpus (crash-cut files are the loader's everyday input).
  for (const input of base.slice(0, LONG ? 8 : 2)) {
    for (let k = 0; k <= input.bytes.length; k++) {
      if (k % 2_000 === 0) await yieldNow()
      check(`${input.label}/truncate@${k}`, input.bytes.subarray(0, k))
    }
  }
  for (const input of base) check(input.label, input.bytes)
  // The caps, exactly at and one past each.
  const header = JSON.stringify({ type: "session", version: 1, id: "caps", timestamp: "2026-01-02T03:04:05.006Z" })
  const entry = (i: number) => JSON.stringify({ type: "entry", version: 1, id: `e${i}`, parentId: i === 0 ? null : `e${i - 1}`, timestamp: "2026-01-02T03:04:05.006Z", message: { role: "user", id: `m${i}`, content: "" } })
  for (const n of [4_096, 4_097]) check(`entries=${n}`, bytesOf([header, ...Array.from({ length: n }, (_, i) => entry(i))].join("\n") + "\n"))
  for (const size of [4_194_304, 4_194_305]) {
    const lines = [header]
    let used = header.length + 1
    for (let i = 0; used < size; i++) {
      const want = Math.min(65_536, size - used - 1)
      const line = want < 200 ? " ".repeat(Math.max(0, want)) : lineOfBytes(want, `big${i}`, i === 0 ? null : `big${i - 1}`)
      lines.push(line)
      used += Buffer.byteLength(line) + 1
    }
    check(`file=${size}`, bytesOf(lines.join("\n") + "\n"))
  }
  for (const n of [65_536, 65_537]) check(`line=${n}`, bytesOf(header + "\n" + lineOfBytes(n, "big", null) + "\n"))

  // Random mutations, one to three stacked, of corpus files.
  while (stats.inputs < TOTAL) {
    if (stats.inputs % 2_000 === 0) await yieldNow()
    const from = base[Math.floor(rng() * base.length)]!
    let bytes = from.bytes
    const names: Array<string> = []
    for (let depth = 1 + (rng() < 0.3 ? Math.floor(rng() * 3) : 0); depth > 0; depth--) {
      const [name, , mutate] = weighted(rng)
      bytes = mutate(rng, bytes)
      names.push(name)
    }
    const label = `${from.label}/${names.join("+")}`
    stats.byMutation[names[0]!] = (stats.byMutation[names[0]!] ?? 0) + 1
    check(label, bytes)
  }

  // The slowest input once more: a pause of the machine (GC, other processes) does not repeat.
  const again = judge(slowest).ms
  report("fuzz", { ...stats, slowestAgainMs: Math.round(again * 100) / 100 })
  if (findings.length > 0) {
    const out = Path.join(OS.tmpdir(), `session-tree-fuzz-findings-${seed}.json`)
    NFS.writeFileSync(out, JSON.stringify(findings, null, 2))
    console.log(`[reliability:fuzz] ${findings.length} findings written to ${out}`)
    for (const f of findings.slice(0, 10)) console.log(`  ${f.kind} ${f.label}: ${f.detail}`)
  }
  expect(stats.crashes).toBe(0)
  expect(stats.untyped).toBe(0)
  expect(stats.hangs).toBe(0)
  expect(stats.acceptedCorrupt).toBe(0)
  expect(stats.rejectedValid).toBe(0)
  expect(stats.resultDiffers).toBe(0)
  expect(stats.notFrozen).toBe(0)
  // Which code a file with several problems gets is the library's choice (SPEC pins no order):
  // differences from the reference are reported above, not failed on.
  // The mix reached both sides: many files accepted, many rejected.
  expect(stats.accepted).toBeGreaterThan(TOTAL / 50)
  expect(stats.rejected).toBeGreaterThan(TOTAL / 50)
})

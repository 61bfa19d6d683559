/**
 * Crash-state enumeration (durability, `docs/format.md`): the filesystem steps of `create` and of
 * `append` (version 1's generations, version 2's appends in place) are recorded on a real directory, replayed into a model of a POSIX
 * filesystem that may lose whatever was not fsynced (support/posix-model.ts), and
 * every state a crash after every prefix may leave is materialised, recovered and
 * read. It must be a generation the trace installed — the previous one or the
 * next — and never one older than an append that had resolved.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { encodeLine } from "@session-tree/core/Codec"
import * as Fs from "../src/Fs.js"
import { KERNEL_COPY_MIN_BYTES } from "../src/FileJournal.js"
import type { SessionEntry, SessionHeader } from "@session-tree/core/Record"
import * as SessionStore from "@session-tree/core/SessionStore"
import { diskTempDir, LONG, removeDir, report } from "./support/config.js"
import { checkTrace, type TraceReport } from "./support/crash-check.js"
import { Model } from "./support/posix-model.js"
import { type Env, run, user } from "./support/run.js"
import { type Recorder, recorder, type TraceEvent } from "./support/trace.js"

const BASE = "s.jsonl"
const mode = LONG ? "every" : "sampled"
const totals = { traces: 0, steps: 0, prefixes: 0, states: 0, distinct: 0 }
const dirs: Array<string> = []

afterAll(() => {
  for (const dir of dirs) removeDir(dir)
  report("crash-states", totals)
})

const fsyncPath = (path: string) => {
  const fd = NFS.openSync(path, "r")
  NFS.fsyncSync(fd)
  NFS.closeSync(fd)
}

interface Recorded {
  readonly dir: string
  readonly path: string
  readonly initial: Model
  readonly events: ReadonlyArray<TraceEvent>
  readonly from: number
}

/**
 * Runs `program` on a fresh directory (prepared by `prepare`, then fsynced), recording
 * every step; `start()` marks where the steps under test begin (the setup before it is
 * replayed into the model, so its pending directory steps are part of every crash state).
 */
const record = async (
  name: string,
  program: (path: string, rec: Recorder, start: () => void) => Effect.Effect<void, unknown, Env>,
  options: { prepare?: (path: string) => void; around?: Parameters<typeof Fs.intercept>[1] } = {}
): Promise<Recorded> => {
  const dir = diskTempDir(`trace-${name}`)
  dirs.push(dir)
  const path = Path.join(dir, BASE)
  if (options.prepare) {
    options.prepare(path)
    fsyncPath(path)
    fsyncPath(dir)
  }
  const initial = Model.fromDirectory(dir)
  const rec = recorder(Fs.node)
  let from = 0
  rec.recording = true
  await run(program(path, rec, () => void (from = rec.events.length)), options.around ? Fs.intercept(rec.fs, options.around) : rec.fs)
  rec.recording = false
  return { dir, path, initial, events: rec.events, from }
}

const check = async (name: string, recorded: Recorded, opts: { appendAfter?: boolean | number } = {}): Promise<TraceReport> => {
  const result = await checkTrace({
    name,
    dir: recorded.dir,
    base: BASE,
    initial: recorded.initial,
    events: recorded.events,
    from: recorded.from,
    mode,
    // Every state in the long run; every 4th in the fast one.
    appendAfter: opts.appendAfter ?? (LONG ? true : 4)
  })
  totals.traces++
  totals.steps += result.steps
  totals.prefixes += result.prefixes
  totals.states += result.states
  totals.distinct += result.distinct
  report(`crash-states:${name}`, {
    steps: result.steps,
    prefixes: result.prefixes,
    states: result.states,
    distinct: result.distinct,
    outcomes: result.outcomes,
    firstVisible: result.firstVisible,
    durableFrom: result.durableFrom
  })
  return result
}

const ops = (recorded: Recorded) => recorded.events.slice(recorded.from).map((e) => e.op)

describe("crash states of create and append", () => {
  it("create: the path holds nothing or the whole header, and the header once create resolved", async () => {
    const recorded = await record("create", (path, rec, start) =>
      Effect.gen(function*() {
        start()
        yield* SessionStore.create(path)
        rec.mark("create resolved")
      }))
    // The trace has the steps the protocol promises: exclusive temp, write, fsync, link, directory fsync.
    expect(ops(recorded)).toEqual(expect.arrayContaining(["open", "write", "fsync", "link"]))
    const result = await check("create", recorded)
    expect(result.violations).toEqual([])
    expect(Object.keys(result.outcomes).sort()).toEqual(["G0", "G1"])
  })

  it("first append: the previous or the next generation, the next once the append resolved", async () => {
    const recorded = await record("first-append", (path, rec, start) =>
      Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        rec.mark("create resolved")
        start()
        yield* store.append(null, user("m1", "first"))
        rec.mark("append resolved")
      }))
    expect(ops(recorded)).toEqual(expect.arrayContaining(["open", "link", "write", "fsync", "rename", "unlink"]))
    const result = await check("first-append", recorded)
    expect(result.violations).toEqual([])
    expect(Object.keys(result.outcomes).length).toBe(2)
  })

  it("a later append", async () => {
    const recorded = await record("later-append", (path, rec, start) =>
      Effect.gen(function*() {
        const store = yield* SessionStore.create(path)
        let parent: string | null = null
        for (let i = 1; i <= 3; i++) {
          parent = (yield* store.append(parent, user(`m${i}`, `entry ${i} ✓ "quoted"`))).id
          rec.mark(`append ${i} resolved`)
        }
        start()
        yield* store.append(parent, user("m4", "the fourth"))
        rec.mark("append 4 resolved")
      }))
    const result = await check("later-append", recorded)
    expect(result.violations).toEqual([])
  })

  it("the first append after a recovered tail (the canonical generation replaces the tail)", async () => {
    const header: SessionHeader = { type: "session", version: 1, id: "tail-session", timestamp: "2026-01-02T03:04:05.006Z" }
    const entry: SessionEntry = {
      type: "entry",
      version: 1,
      id: "kept-1",
      parentId: null,
      timestamp: "2026-01-02T03:04:05.007Z",
      message: user("k1", "kept")
    }
    const recorded = await record(
      "after-tail",
      (path, rec, start) =>
        Effect.gen(function*() {
          const store = yield* SessionStore.load(path)
          expect(store.tail).toBe("incomplete")
          start()
          yield* store.append("kept-1", user("m2", "after the tail"))
          rec.mark("append resolved")
        }),
      { prepare: (path) => NFS.writeFileSync(path, encodeLine(header) + encodeLine(entry) + `{"type":"entry","id":"cut`) }
    )
    const result = await check("after-tail", recorded)
    expect(result.violations).toEqual([])
    // The final file is canonical: the abandoned tail is gone.
    expect(NFS.readFileSync(recorded.path, "utf8").endsWith("\n")).toBe(true)
    expect(NFS.readFileSync(recorded.path, "utf8")).not.toContain(`"cut`)
  })

  it("a group commit: appends queued behind a commit share the next generation", async () => {
    let commits = 0
    const recorded = await record("group-commit", (path, rec, start) =>
      Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        const root = yield* store.append(null, user("m0", "root"))
        rec.mark("root resolved")
        start()
        yield* Effect.all(
          [1, 2, 3, 4, 5].map((i) => store.append(root.id, user(`g${i}`, `grouped ${i}`)).pipe(Effect.tap(() => Effect.sync(() => rec.mark(`g${i} resolved`))))),
          { concurrency: "unbounded" }
        )
        commits = rec.events.filter((e) => e.op === "rename" && e.target === path).length - 1
        expect(store.entries.length).toBe(6)
      }))
    // Five appends, fewer commits: at least one generation carried several new entries.
    expect(commits).toBeGreaterThanOrEqual(1)
    expect(commits).toBeLessThan(5)
    const result = await check("group-commit", recorded)
    report("crash-states:group-commit", { appends: 5, commits })
    expect(result.violations).toEqual([])
  })

  it("an append whose install fails and is rolled back: the previous generation once the failure is reported", async () => {
    let armed = false
    let renamed = false
    let fired = false
    let path = ""
    const around: Parameters<typeof Fs.intercept>[1] = (step, effect) => {
      if (!armed || fired) return effect
      if (step.op === "rename" && step.target === path) return Effect.tap(effect, () => Effect.sync(() => void (renamed = true)))
      if (renamed && step.op === "lstat" && step.path === path) {
        // The check of the installed generation fails: the commit must roll back.
        fired = true
        return Effect.fail(new Fs.FsError({ op: "lstat", path, errno: "EIO" }))
      }
      return effect
    }
    const recorded = await record(
      "rollback",
      (p, rec, start) =>
        Effect.gen(function*() {
          path = p
          const store = yield* SessionStore.create(p, { version: 1 })
          const root = yield* store.append(null, user("m0", "root"))
          rec.mark("root resolved")
          const before = NFS.readFileSync(p)
          start()
          armed = true
          const failed = yield* Effect.either(store.append(root.id, user("m1", "rolled back")))
          rec.mark("append failed; the previous generation is reported intact")
          expect(failed._tag === "Left" && failed.left.code).toBe("SESSION_IO")
          expect(store.entries.map((e) => e.id)).toEqual([root.id])
          expect(NFS.readFileSync(p).equals(before)).toBe(true)
        }),
      { around }
    )
    expect(fired).toBe(true)
    const result = await check("rollback", recorded)
    expect(result.violations).toEqual([])
  })

  it("a commit through the kernel copy (a canonical generation of 256 KiB or more)", async () => {
    const header: SessionHeader = { type: "session", version: 1, id: "big", timestamp: "2026-01-02T03:04:05.006Z" }
    let text = encodeLine(header)
    let parent: string | null = null
    for (let i = 1; text.length < KERNEL_COPY_MIN_BYTES; i++) {
      const e: SessionEntry = { type: "entry", version: 1, id: `big-${i}`, parentId: parent, timestamp: "2026-01-02T03:04:05.007Z", message: user(`b${i}`, "x".repeat(4000)) }
      text += encodeLine(e)
      parent = e.id
    }
    const last = parent
    const recorded = await record(
      "kernel-copy",
      (path, rec, start) =>
        Effect.gen(function*() {
          const store = yield* SessionStore.load(path)
          start()
          yield* store.append(last, user("m-new", "through the kernel copy"))
          rec.mark("append resolved")
        }),
      { prepare: (path) => NFS.writeFileSync(path, text) }
    )
    expect(ops(recorded)).toContain("copyFile")
    const result = await check("kernel-copy", recorded)
    expect(result.violations).toEqual([])
  })
})

describe("crash states of the version-2 append (in place, behind an intent)", () => {
  const isIntentCreate = (e: TraceEvent) => e.op === "symlink" && e.path.endsWith(".marker")

  it("first append: the previous or the next state, the next once the append resolved; no generation is rewritten", async () => {
    const recorded = await record("v2-first-append", (path, rec, start) =>
      Effect.gen(function*() {
        const store = yield* SessionStore.create(path)
        rec.mark("create resolved")
        start()
        yield* store.append(null, user("m1", "first"))
        rec.mark("append resolved")
      }))
    const steps = recorded.events.slice(recorded.from)
    expect(steps.filter(isIntentCreate).length).toBe(1)
    expect(steps.some((e) => e.op === "rename")).toBe(false)
    expect(steps.map((e) => e.op)).toEqual(expect.arrayContaining(["symlink", "write", "fdatasync", "fsync", "unlink"]))
    const result = await check("v2-first-append", recorded)
    expect(result.violations).toEqual([])
    expect(Object.keys(result.outcomes).length).toBe(2)
  })

  it("a batch of several entries (a chain): all of it or none of it", async () => {
    const recorded = await record("v2-chain", (path, rec, start) =>
      Effect.gen(function*() {
        const store = yield* SessionStore.create(path)
        const root = yield* store.append(null, user("m0", "root"))
        rec.mark("root resolved")
        start()
        const bodies = [1, 2, 3, 4].map((i) => ({ kind: "message" as const, message: { role: "user" as const, id: `c${i}`, content: [{ type: "text" as const, text: `chained ${i} ${"x".repeat(300)}` }] } }))
        yield* store.appendChain(root.id, bodies)
        rec.mark("chain resolved")
      }))
    const result = await check("v2-chain", recorded)
    expect(result.violations).toEqual([])
    // Only the state before the chain and the state with all four entries are ever seen.
    expect(Object.keys(result.outcomes).length).toBe(2)
  })

  it("a group commit: appends queued behind a commit share the next batch", async () => {
    let commits = 0
    const recorded = await record("v2-group-commit", (path, rec, start) =>
      Effect.gen(function*() {
        const store = yield* SessionStore.create(path)
        const root = yield* store.append(null, user("m0", "root"))
        rec.mark("root resolved")
        start()
        yield* Effect.all(
          [1, 2, 3, 4, 5].map((i) => store.append(root.id, user(`g${i}`, `grouped ${i}`)).pipe(Effect.tap(() => Effect.sync(() => rec.mark(`g${i} resolved`))))),
          { concurrency: "unbounded" }
        )
        commits = rec.events.slice(rec.events.findIndex((e) => e.op === "settled" && e.label === "root resolved")).filter(isIntentCreate).length
        expect(store.entries.length).toBe(6)
      }))
    expect(commits).toBeGreaterThanOrEqual(1)
    expect(commits).toBeLessThan(5)
    const result = await check("v2-group-commit", recorded)
    report("crash-states:v2-group-commit", { appends: 5, commits })
    expect(result.violations).toEqual([])
  })

  it("an append whose data sync fails is cut back: the previous state once the failure is reported", async () => {
    let armed = false
    let fired = false
    const around: Parameters<typeof Fs.intercept>[1] = (step, effect) => {
      if (!armed || fired) return effect
      if (step.op === "fdatasync" && Path.basename(step.path) === BASE) {
        // The batch reached the file, its sync fails: the append must truncate it away.
        fired = true
        return Effect.fail(new Fs.FsError({ op: "fdatasync", path: step.path, errno: "EIO" }))
      }
      return effect
    }
    const recorded = await record(
      "v2-rollback",
      (p, rec, start) =>
        Effect.gen(function*() {
          const store = yield* SessionStore.create(p)
          const root = yield* store.append(null, user("m0", "root"))
          rec.mark("root resolved")
          const before = NFS.readFileSync(p)
          start()
          armed = true
          const failed = yield* Effect.either(store.append(root.id, user("m1", "rolled back")))
          rec.mark("append failed; the previous state is reported intact")
          expect(failed._tag === "Left" && failed.left.code).toBe("SESSION_IO")
          expect(store.entries.map((e) => e.id)).toEqual([root.id])
          expect(NFS.readFileSync(p).equals(before)).toBe(true)
          armed = false
          yield* store.append(root.id, user("m2", "after the rollback"))
          rec.mark("next append resolved")
        }),
      { around }
    )
    expect(fired).toBe(true)
    expect(recorded.events.some((e) => e.op === "ftruncate")).toBe(true)
    const result = await check("v2-rollback", recorded)
    expect(result.violations).toEqual([])
  })

  it("the first append after a recovered tail rewrites the canonical generation once, then appends in place", async () => {
    const recorded = await record(
      "v2-after-tail",
      (path, rec, start) =>
        Effect.gen(function*() {
          yield* Effect.scoped(Effect.gen(function*() {
            const store = yield* SessionStore.create(path)
            yield* store.append(null, user("k1", "kept"))
          }))
          NFS.appendFileSync(path, `{"type":"entry","id":"cut`)
          fsyncPath(path)
          rec.mark("setup resolved")
          const store = yield* SessionStore.load(path)
          expect(store.tail).toBe("incomplete")
          start()
          const first = yield* store.append(store.entries[0]!.id, user("m2", "after the tail"))
          rec.mark("append resolved")
          yield* store.append(first.id, user("m3", "in place"))
          rec.mark("second append resolved")
        })
    )
    const steps = recorded.events.slice(recorded.from)
    expect(steps.filter((e) => e.op === "rename").length).toBe(1)
    expect(steps.filter(isIntentCreate).length).toBe(1)
    const result = await check("v2-after-tail", recorded)
    expect(result.violations).toEqual([])
    expect(NFS.readFileSync(recorded.path, "utf8")).not.toContain(`"cut`)
  })
})

describe("the crash model has teeth", () => {
  // Hand-written traces of broken protocols: the same checker must reject them.
  const brokenTrace = async (name: string, steps: (dir: string, path: string, next: Uint8Array) => Array<TraceEvent>) => {
    const dir = diskTempDir(`broken-${name}`)
    dirs.push(dir)
    const path = Path.join(dir, BASE)
    const header: SessionHeader = { type: "session", version: 1, id: "s", timestamp: "2026-01-02T03:04:05.006Z" }
    NFS.writeFileSync(path, encodeLine(header))
    const next = Buffer.from(
      encodeLine(header) +
        encodeLine({ type: "entry", version: 1, id: "e1", parentId: null, timestamp: "2026-01-02T03:04:05.007Z", message: user("m1", "new") })
    )
    const result = await checkTrace({
      name,
      dir,
      base: BASE,
      initial: Model.fromDirectory(dir),
      events: steps(dir, path, next),
      mode: "sampled",
      appendAfter: false
    })
    return result
  }
  const O_NEW = NFS.constants.O_WRONLY | NFS.constants.O_CREAT | NFS.constants.O_EXCL

  it("catches an install that renames a temp file it never fsynced", async () => {
    const result = await brokenTrace("no-file-fsync", (dir, path, next) => [
      { op: "open", path: `${path}.tmp-00000000-1-1-1`, flags: O_NEW, fd: 900 },
      { op: "write", path: `${path}.tmp-00000000-1-1-1`, fd: 900, position: 0, bytes: next },
      { op: "rename", path: `${path}.tmp-00000000-1-1-1`, target: path },
      { op: "open", path: dir, flags: NFS.constants.O_RDONLY, fd: 901 },
      { op: "fsync", path: dir, fd: 901 },
      { op: "settled", label: "append resolved" }
    ])
    expect(result.violations.some((v) => v.includes("no generation of the trace"))).toBe(true)
  })

  it("catches an append that resolves before the directory is fsynced", async () => {
    const result = await brokenTrace("no-dir-fsync", (_dir, path, next) => [
      { op: "open", path: `${path}.tmp-00000000-1-1-1`, flags: O_NEW, fd: 900 },
      { op: "write", path: `${path}.tmp-00000000-1-1-1`, fd: 900, position: 0, bytes: next },
      { op: "fsync", path: `${path}.tmp-00000000-1-1-1`, fd: 900 },
      { op: "rename", path: `${path}.tmp-00000000-1-1-1`, target: path },
      { op: "settled", label: "append resolved" }
    ])
    expect(result.violations.some((v) => v.includes("allowed here: G1"))).toBe(true)
  })

  it("accepts the same install done right (fsync file, rename, fsync directory)", async () => {
    const result = await brokenTrace("right", (dir, path, next) => [
      { op: "open", path: `${path}.tmp-00000000-1-1-1`, flags: O_NEW, fd: 900 },
      { op: "write", path: `${path}.tmp-00000000-1-1-1`, fd: 900, position: 0, bytes: next },
      { op: "fsync", path: `${path}.tmp-00000000-1-1-1`, fd: 900 },
      { op: "rename", path: `${path}.tmp-00000000-1-1-1`, target: path },
      { op: "open", path: dir, flags: NFS.constants.O_RDONLY, fd: 901 },
      { op: "fsync", path: dir, fd: 901 },
      { op: "settled", label: "append resolved" }
    ])
    expect(result.violations).toEqual([])
    expect(result.states).toBeGreaterThan(10)
  })
})

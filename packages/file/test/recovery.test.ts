/**
 * `recover` (SPEC B5, B6): what it does with a marker and leftovers, when it
 * refuses, and that `load` never writes while they are there.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { spawn } from "node:child_process"
import { track } from "@session-tree/testing/Tracked"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import * as Ids from "@session-tree/core/Ids"
import * as Recovery from "../src/Recovery.js"
import * as SessionStore from "@session-tree/core/SessionStore"
import { canonical, hashDir, layerReal, listing, tempDir, user } from "./fixtures/helpers.js"

const NAME = "s.jsonl"
const MARKER = `${NAME}.marker`

// Owner names are computed here from /proc independently of the library: boot, pid, start time.
const BOOT = NFS.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim().replace(/-/g, "").slice(0, 8)
const startTimeOf = (pid: number) => {
  const stat = NFS.readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!
}
const leftoverName = (kind: string, owner: string, seq = 1) => `${NAME}.${kind}-${owner}-${seq}`
const otherBoot = BOOT === "00000000" ? "11111111" : "00000000"

/** A session with two acknowledged entries; returns its directory, path and bytes. */
const session = Effect.gen(function*() {
  const dir = yield* tempDir
  const path = Path.join(dir, NAME)
  yield* Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path, { id: "s1" })
    const a = yield* store.append(null, user("m1", "one"))
    yield* store.append(a.id, user("m2", "two"))
  }))
  return { dir, path, bytes: NFS.readFileSync(path) }
})

const idsAt = (path: string) => Effect.map(SessionStore.read(path), (l) => l.entries.map((e) => e.id))

describe("recover", () => {
  it.scoped("with nothing beside the file does nothing", () =>
    Effect.gen(function*() {
      const { dir, path } = yield* session
      const hash = hashDir(dir)
      expect(yield* Recovery.recover(path)).toEqual({ path, marker: "none", batch: "none", removed: [] })
      expect(hashDir(dir)).toBe(hash)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("removes a marker that was never installed (the path is the marker's file); load meanwhile never writes", () =>
    Effect.gen(function*() {
      const { bytes, dir, path } = yield* session
      NFS.linkSync(path, Path.join(dir, MARKER))
      const dead = leftoverName("tmp", `${otherBoot}-1-1`)
      NFS.writeFileSync(Path.join(dir, dead), "half a generation")
      const hash = hashDir(dir)
      // load and read work beside a marker and change nothing.
      const store = yield* SessionStore.load(path)
      expect(store.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002"])
      yield* SessionStore.read(path)
      expect(hashDir(dir)).toBe(hash)
      // The marker blocks appends until recovery.
      const before = store.entries
      const busy = yield* Effect.either(store.append(null, user("m3", "three")))
      expect(Either.isLeft(busy) && busy.left.code).toBe("SESSION_BUSY")
      expect(store.entries).toBe(before)
      expect(hashDir(dir)).toBe(hash)
      expect(yield* Recovery.recover(path)).toEqual({ path, marker: "removed", batch: "none", removed: [dead] })
      expect(listing(dir)).toEqual([NAME])
      expect(NFS.readFileSync(path)).toEqual(bytes)
      // The same store still holds the generation at the path, so it appends now.
      const added = yield* store.append("entry-002", user("m3", "three"))
      expect(yield* idsAt(path)).toEqual(["entry-001", "entry-002", added.id])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("keeps a newer generation that extends the marker's", () =>
    Effect.gen(function*() {
      const { dir, path } = yield* session
      // A writer crashed after its rename: the marker holds the old generation, the path the new one.
      NFS.linkSync(path, Path.join(dir, MARKER))
      const old = yield* SessionStore.read(path)
      const extra = { ...old.entries[1]!, id: "entry-new", parentId: "entry-002" }
      const newer = canonical(old.header, [...old.entries, extra])
      const tmp = leftoverName("tmp", `${otherBoot}-7-7`)
      NFS.writeFileSync(Path.join(dir, tmp), newer)
      NFS.linkSync(Path.join(dir, tmp), Path.join(dir, leftoverName("next", `${otherBoot}-7-7`)))
      NFS.renameSync(Path.join(dir, leftoverName("next", `${otherBoot}-7-7`)), path)
      const report = yield* Recovery.recover(path)
      expect(report).toEqual({ path, marker: "removed", batch: "none", removed: [tmp] })
      expect(NFS.readFileSync(path)).toEqual(newer)
      expect(listing(dir)).toEqual([NAME])
      const store = yield* SessionStore.load(path)
      expect(store.entries.map((e) => e.id)).toEqual(["entry-001", "entry-002", "entry-new"])
      yield* store.append("entry-new", user("m4", "four"))
    }).pipe(Effect.provide(layerReal)))

  it.scoped("judges the marker and the newer file in the directory it resolved once", () =>
    Effect.gen(function*() {
      const { dir, path } = yield* session
      NFS.linkSync(path, Path.join(dir, MARKER))
      const old = yield* SessionStore.read(path)
      NFS.writeFileSync(path + ".new", canonical(old.header, [...old.entries, { ...old.entries[1]!, id: "entry-new", parentId: "entry-002" }]))
      NFS.renameSync(path + ".new", path)
      const ops: Array<string> = []
      const recorded = Fs.layerIntercepted((step, run) => Effect.zipRight(Effect.sync(() => ops.push(step.op)), run))
      expect((yield* Effect.provide(Recovery.recover(path), recorded)).marker).toBe("removed")
      expect(ops.filter((op) => op === "realpath")).toEqual(["realpath"])
      // Both candidates were read whole, the marker and the newer file.
      expect(ops.filter((op) => op === "read").length).toBe(2)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("restores the marker when the path is missing, or when only the marker loads", () =>
    Effect.gen(function*() {
      const { bytes, dir, path } = yield* session
      NFS.linkSync(path, Path.join(dir, MARKER))
      NFS.unlinkSync(path)
      expect((yield* Recovery.recover(path)).marker).toBe("restored")
      expect(NFS.readFileSync(path)).toEqual(bytes)
      expect(listing(dir)).toEqual([NAME])

      NFS.linkSync(path, Path.join(dir, MARKER))
      NFS.writeFileSync(Path.join(dir, "garbage"), "not a session\n")
      NFS.renameSync(Path.join(dir, "garbage"), path)
      expect((yield* Recovery.recover(path)).marker).toBe("restored")
      expect(NFS.readFileSync(path)).toEqual(bytes)
      expect(listing(dir)).toEqual([NAME])
      const store = yield* SessionStore.load(path)
      yield* store.append("entry-002", user("m3", "three"))
    }).pipe(Effect.provide(layerReal)))

  it.scoped("refuses, touching nothing, when the file is not a successor of the marker", () =>
    Effect.gen(function*() {
      const { dir, path } = yield* session
      NFS.linkSync(path, Path.join(dir, MARKER))
      const other = Path.join(dir, "other.jsonl")
      yield* Effect.scoped(SessionStore.create(other, { id: "another-session" }))
      NFS.renameSync(other, path)
      const hash = hashDir(dir)
      const result = yield* Effect.either(Recovery.recover(path))
      expect(Either.isLeft(result) && result.left.code).toBe("SESSION_REPLACED")
      expect(hashDir(dir)).toBe(hash)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("refuses while a leftover names a running writer, and proceeds once it is gone", () =>
    Effect.gen(function*() {
      const { bytes, dir, path } = yield* session
      const child = track(spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" }), ["node", "-e", "setInterval"])
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      yield* Effect.promise(() => new Promise<void>((resolve) => child.once("spawn", () => resolve())))
      const pid = child.pid!
      const marker = Path.join(dir, MARKER)
      // The same pid with another start time (a reused pid), or on another boot, is gone while the child runs.
      const reused = leftoverName("next", `${BOOT}-${pid}-1`)
      const rebooted = leftoverName("rollback", `${otherBoot}-${pid}-${startTimeOf(pid)}`)
      NFS.linkSync(path, marker)
      NFS.writeFileSync(Path.join(dir, reused), "")
      NFS.writeFileSync(Path.join(dir, rebooted), "")
      const first = yield* Recovery.recover(path)
      expect(first.marker).toBe("removed")
      expect([...first.removed].sort()).toEqual([reused, rebooted].sort())
      // A leftover with the child's own start time names a running writer.
      const live = leftoverName("tmp", `${BOOT}-${pid}-${startTimeOf(pid)}`)
      NFS.linkSync(path, marker)
      NFS.writeFileSync(Path.join(dir, live), "")
      const hash = hashDir(dir)
      const busy = yield* Effect.either(Recovery.recover(path))
      expect(Either.isLeft(busy) && busy.left.code).toBe("SESSION_BUSY")
      expect(hashDir(dir)).toBe(hash)
      // load still works and writes nothing.
      yield* Effect.scoped(SessionStore.load(path))
      expect(hashDir(dir)).toBe(hash)
      child.kill("SIGKILL")
      yield* Effect.promise(() => new Promise<void>((resolve) => child.once("exit", () => resolve())))
      expect(yield* Recovery.recover(path)).toEqual({ path, marker: "removed", batch: "none", removed: [live] })
      expect(listing(dir)).toEqual([NAME])
      expect(NFS.readFileSync(path)).toEqual(bytes)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("an append blocked by a marker says whether a writer is committing, or that recover resolves it", () =>
    Effect.gen(function*() {
      const { bytes, dir, path } = yield* session
      const store = yield* SessionStore.load(path)
      const marker = Path.join(dir, MARKER)
      NFS.linkSync(path, marker)
      const crashed = yield* Effect.either(store.append(null, user("m3", "three")))
      expect(Either.isLeft(crashed) && [crashed.left.code, crashed.left.reason]).toEqual([
        "SESSION_BUSY",
        `a recovery marker (${marker}) left by an interrupted commit blocks appends; no writer is running, ` +
        `so run \`session-tree recover ${path}\` (Recovery.recover) to resolve it`
      ])
      const child = track(spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" }), ["node", "-e", "setInterval"])
      yield* Effect.addFinalizer(() => Effect.sync(() => child.kill("SIGKILL")))
      yield* Effect.promise(() => new Promise<void>((resolve) => child.once("spawn", () => resolve())))
      const pid = child.pid!
      NFS.writeFileSync(Path.join(dir, leftoverName("tmp", `${BOOT}-${pid}-${startTimeOf(pid)}`)), "")
      const inFlight = yield* Effect.either(store.append(null, user("m3", "three")))
      expect(Either.isLeft(inFlight) && [inFlight.left.code, inFlight.left.reason]).toEqual([
        "SESSION_BUSY",
        `another writer (pid ${pid}) is committing to this session right now; reload and retry`
      ])
      expect(NFS.readFileSync(path)).toEqual(bytes)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("treats leftovers of this very process as gone (its commits are behind the path lock)", () =>
    Effect.gen(function*() {
      const { dir, path } = yield* session
      const own = leftoverName("tmp", `${BOOT}-${process.pid}-${startTimeOf(process.pid)}`, 999)
      NFS.writeFileSync(Path.join(dir, own), "")
      expect(yield* Recovery.recover(path)).toEqual({ path, marker: "none", batch: "none", removed: [own] })
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("refuses when the marker is replaced while it looks (another recover and a new writer got in between)", () =>
    Effect.gen(function*() {
      const { dir, path } = yield* session
      const marker = Path.join(dir, MARKER)
      NFS.linkSync(path, marker)
      let swapped = false
      // Between the first look at the marker and the action, the marker becomes a link of another file.
      const fsLayer = FileJournal.layerIntercepted((step, run) =>
        Effect.zipRight(
          Effect.sync(() => {
            if (!swapped && step.op === "readdir") {
              swapped = true
              NFS.unlinkSync(marker)
              NFS.writeFileSync(Path.join(dir, "x"), "x")
              NFS.linkSync(Path.join(dir, "x"), marker)
              NFS.unlinkSync(Path.join(dir, "x"))
            }
          }),
          run
        )
      )
      const result = yield* Effect.either(Recovery.recover(path).pipe(Effect.provide(fsLayer)))
      expect(swapped).toBe(true)
      expect(Either.isLeft(result) && result.left.code).toBe("SESSION_BUSY")
      expect(listing(dir)).toEqual([NAME, MARKER])
      expect(NFS.readFileSync(marker, "utf8")).toBe("x")
    }).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic))))
})

/**
 * Deleting a session file: whole or not at all, never through a link, its blob directory with
 * it; a store that still holds the file fails its next append and never brings it back; a fault
 * or a crash at any filesystem step leaves the session whole or gone once `recover` has run.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as Ids from "@session-tree/core/Ids"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import * as Promised from "../src/Promise.js"
import * as Recovery from "../src/Recovery.js"
import { describeStep, ERRNO_KINDS, listing, tempDir, user } from "./fixtures/helpers.js"

/** The real filesystem, with the catalog that deletes. */
const layerReal = Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)

const NAME = "s.jsonl"
const BLOBS = `${NAME}.blobs`

const codeOf = <A>(result: Either.Either<A, SessionError>) => (Either.isLeft(result) ? result.left.code : "ok")

const userV2 = (id: string, text: string) => ({ role: "user", id, content: [{ type: "text", text }] }) as const

/** A session of `version` with three entries, and a blob directory holding one file. */
const session = (dir: string, version: 1 | 2) =>
  Effect.gen(function*() {
    const path = Path.join(dir, NAME)
    const ids = yield* Effect.scoped(Effect.gen(function*() {
      const store = yield* SessionStore.create(path, { id: "s1", version })
      let parent: string | null = null
      for (let i = 0; i < 3; i++) {
        parent = (yield* store.append(parent, version === 1 ? user(`m${i}`, `n${i}`) : userV2(`m${i}`, `n${i}`))).id
      }
      return store.entries.map((e) => e.id)
    }))
    NFS.mkdirSync(Path.join(dir, BLOBS))
    NFS.writeFileSync(Path.join(dir, BLOBS, "a".repeat(64)), "blob")
    return { path, ids, bytes: NFS.readFileSync(path) }
  })

const deleteWith = (path: string) => Effect.flatMap(Sessions.make, (sessions) => sessions.delete(path))

describe("delete", () => {
  it.scoped("removes the file and its blob directory, leaves nothing behind; a second delete is SESSION_NOT_FOUND", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { path } = yield* session(dir, 2)
      const other = Path.join(dir, "other.jsonl")
      yield* Effect.scoped(SessionStore.create(other, { id: "o" }))
      const otherBytes = NFS.readFileSync(other)
      expect(yield* deleteWith(path)).toBe(path)
      expect(listing(dir)).toEqual(["other.jsonl"])
      expect(NFS.readFileSync(other)).toEqual(otherBytes)
      expect(codeOf(yield* Effect.either(deleteWith(path)))).toBe("SESSION_NOT_FOUND")
      expect(codeOf(yield* Effect.either(SessionStore.read(path)))).toBe("SESSION_NOT_FOUND")
    }).pipe(Effect.provide(layerReal)))

  it.scoped("deletes a session that does not load: it never parses the file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      NFS.writeFileSync(path, "not a session\n")
      expect(codeOf(yield* Effect.either(SessionStore.read(path)))).toBe("SESSION_INVALID_JSON")
      yield* deleteWith(path)
      expect(listing(dir)).toEqual([])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("never follows a symlink: not at the session's path, not at its blob directory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const elsewhere = yield* tempDir
      const { bytes, path } = yield* session(elsewhere, 1)
      const link = Path.join(dir, NAME)
      NFS.symlinkSync(path, link)
      expect(codeOf(yield* Effect.either(deleteWith(link)))).toBe("SESSION_NOT_REGULAR_FILE")
      expect(NFS.readFileSync(path)).toEqual(bytes)
      expect(listing(dir)).toEqual([NAME])
      // A session whose blob directory is a link to another directory: the link goes, the directory stays.
      NFS.unlinkSync(link)
      NFS.copyFileSync(path, link)
      NFS.symlinkSync(Path.join(elsewhere, BLOBS), Path.join(dir, BLOBS))
      yield* deleteWith(link)
      expect(listing(dir)).toEqual([])
      expect(listing(Path.join(elsewhere, BLOBS))).toEqual(["a".repeat(64)])
      // A directory at the path is not a session either.
      NFS.mkdirSync(link)
      expect(codeOf(yield* Effect.either(deleteWith(link)))).toBe("SESSION_NOT_REGULAR_FILE")
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("a marker beside the file (a commit in flight or to recover) is SESSION_BUSY, and nothing changes", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { bytes, path } = yield* session(dir, 1)
      NFS.linkSync(path, `${path}.marker`)
      const result = yield* Effect.either(deleteWith(path))
      expect(codeOf(result)).toBe("SESSION_BUSY")
      expect(Either.isLeft(result) && result.left.reason).toContain("session-tree recover")
      expect(listing(dir)).toEqual([NAME, BLOBS, `${NAME}.marker`])
      expect(NFS.readFileSync(path)).toEqual(bytes)
    }).pipe(Effect.provide(layerReal)))

  for (const version of [1, 2] as const) {
    it.scoped(`a version-${version} store in this process that holds the file: its next append is SESSION_REPLACED and never recreates it`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const { path } = yield* session(dir, version)
        const store = yield* SessionStore.load(path)
        yield* deleteWith(path)
        const leaf = store.entries.at(-1)!.id
        const result = yield* Effect.either(store.append(leaf, version === 1 ? user("late", "late") : userV2("late", "late")))
        expect(codeOf(result)).toBe("SESSION_REPLACED")
        expect(listing(dir)).toEqual([])
      }).pipe(Effect.provide(layerReal)))
  }
})

/** A filesystem that records steps, and fails one chosen step, or every step from one on (the process is dead from there). */
const faulty = () => {
  let steps: Array<Fs.Step> = []
  let recording = false
  let fail: { readonly at: number; readonly errno: string; readonly crash: boolean } | undefined
  const around: Fs.Around = (step, run) =>
    Effect.suspend(() => {
      if (!recording) return run
      const index = steps.length
      steps.push(step)
      if (fail === undefined || index < fail.at || (!fail.crash && index > fail.at)) return run
      return Effect.fail(new Fs.FsError({ op: step.op, path: step.path, errno: fail.errno }))
    })
  return {
    layer: Layer.merge(FileJournal.layerIntercepted(around), Ids.layerDeterministic),
    start: (f?: { readonly at: number; readonly errno: string; readonly crash: boolean }) => {
      steps = []
      recording = true
      fail = f
    },
    stop: () => {
      recording = false
      return steps
    }
  }
}

describe("delete: a fault or a crash at every filesystem step", () => {
  for (const version of [1, 2] as const) {
    it.scoped(`version ${version}: after recover the session is whole (every entry, nothing beside it) or gone (nothing at all)`, () =>
      Effect.gen(function*() {
        const fs = faulty()
        const clean = yield* Effect.provide(
          Effect.gen(function*() {
            const dir = yield* tempDir
            const { path } = yield* session(dir, version)
            fs.start()
            yield* deleteWith(path)
            return fs.stop()
          }),
          fs.layer
        )
        // Every step of a delete that ran without a fault, from resolving the path to the last fsync.
        const names = clean.map((step) => describeStep(step).replace(/-[0-9a-f]{8}-\d+-\d+-\d+/g, ""))
        expect(names).toEqual(expect.arrayContaining([
          "link s.jsonl -> s.jsonl.marker",
          "rename s.jsonl -> s.jsonl.deleted",
          "unlink s.jsonl.marker"
        ]))
        const outcomes = new Map<string, number>()
        for (let at = 0; at < clean.length; at++) {
          for (const errno of ERRNO_KINDS) {
            for (const crash of [false, true]) {
              const dir = yield* tempDir
              const { bytes, ids, path } = yield* Effect.provide(session(dir, version), layerReal)
              const result = yield* Effect.provide(
                Effect.gen(function*() {
                  fs.start({ at, errno, crash })
                  return yield* Effect.either(deleteWith(path))
                }).pipe(Effect.ensuring(Effect.sync(() => fs.stop()))),
                fs.layer
              )
              const what = `${crash ? "crash" : errno} at step ${at} (${names[at]}): ${codeOf(result)}`
              yield* Effect.provide(Recovery.recover(path), layerReal).pipe(
                Effect.mapError((e) => new Error(`${what}; recover failed: ${e.message}`))
              )
              const left = listing(dir)
              if (left.includes(NAME)) {
                // Whole: the same bytes, every entry, its blobs, and nothing else.
                expect(left, what).toEqual([NAME, BLOBS])
                expect(NFS.readFileSync(path).equals(bytes), what).toBe(true)
                const loaded = yield* Effect.provide(SessionStore.read(path), layerReal)
                expect(loaded.entries.map((e) => e.id), what).toEqual(ids)
                // A delete that reported success has really deleted it.
                expect(Either.isRight(result), what).toBe(false)
              } else {
                expect(left, what).toEqual([])
              }
              const key = `${left.includes(NAME) ? "whole" : "gone"}/${codeOf(result)}`
              outcomes.set(key, (outcomes.get(key) ?? 0) + 1)
            }
          }
        }
        // Both outcomes are reached: faults before the commit point keep the session, after it delete it.
        expect([...outcomes.keys()].some((k) => k.startsWith("whole/"))).toBe(true)
        expect([...outcomes.keys()].some((k) => k.startsWith("gone/"))).toBe(true)
        // A fault that leaves the session whole is reported; only once it is gone does a delete succeed.
        expect(outcomes.has("whole/ok")).toBe(false)
      }), { timeout: 120_000 })
  }
})

// Owner names computed here from /proc, independently of the library: boot, pid, start time.
const BOOT = NFS.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim().replace(/-/g, "").slice(0, 8)
const startTimeOf = (pid: number) => {
  const stat = NFS.readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]!
}
const LIVE = `${BOOT}-${process.ppid}-${startTimeOf(process.ppid)}`
const GONE = `${BOOT === "00000000" ? "11111111" : "00000000"}-${process.pid}-1`

describe("recover after an interrupted delete", () => {
  it.scoped("marker kept, file at its tombstone: a live deleter blocks recover; once gone, the session is put back whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { bytes, ids, path } = yield* session(dir, 1)
      NFS.linkSync(path, `${path}.marker`)
      NFS.renameSync(path, `${path}.deleted-${LIVE}-1`)
      NFS.writeFileSync(`${path}.tmp-${LIVE}-1`, "")
      const refused = yield* Effect.either(Recovery.recover(path))
      expect(codeOf(refused)).toBe("SESSION_BUSY")
      expect(NFS.existsSync(path)).toBe(false)
      NFS.renameSync(`${path}.deleted-${LIVE}-1`, `${path}.deleted-${GONE}-1`)
      NFS.renameSync(`${path}.tmp-${LIVE}-1`, `${path}.tmp-${GONE}-1`)
      const report = yield* Recovery.recover(path)
      expect(report.marker).toBe("restored")
      expect([...report.removed].sort()).toEqual([`${NAME}.deleted-${GONE}-1`, `${NAME}.tmp-${GONE}-1`])
      expect(listing(dir)).toEqual([NAME, BLOBS])
      expect(NFS.readFileSync(path)).toEqual(bytes)
      expect((yield* SessionStore.read(path)).entries.map((e) => e.id)).toEqual(ids)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("past the commit point: the tombstone and the blob directories go; a session at the path keeps its own", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { path } = yield* session(dir, 2)
      NFS.renameSync(path, `${path}.deleted-${GONE}-7`)
      NFS.mkdirSync(`${path}.deleted-${GONE}-7.blobs`)
      NFS.writeFileSync(Path.join(`${path}.deleted-${GONE}-7.blobs`, "c".repeat(64)), "moved aside")
      const report = yield* Recovery.recover(path)
      expect([...report.removed].sort()).toEqual([BLOBS, `${NAME}.deleted-${GONE}-7`, `${NAME}.deleted-${GONE}-7.blobs`])
      expect(listing(dir)).toEqual([])
      // A blob directory beside a session file is that session's: recover leaves it.
      yield* session(dir, 2)
      expect((yield* Recovery.recover(path)).removed).toEqual([])
      expect(listing(dir)).toEqual([NAME, BLOBS])
      // A moved-aside blob directory of a deleter that may still run is left to it.
      NFS.mkdirSync(`${path}.deleted-${LIVE}-2.blobs`)
      expect(codeOf(yield* Effect.either(Recovery.recover(path)))).toBe("ok")
      expect(listing(dir)).toEqual([NAME, BLOBS, `${NAME}.deleted-${LIVE}-2.blobs`])
    }).pipe(Effect.provide(layerReal)))
})

describe("a delete whose undo fails", () => {
  it.scoped("SESSION_ROLLBACK_FAILED naming recover, only the marker left (no name of a running process), and recover puts the session back whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const { bytes, ids, path } = yield* session(dir, 1)
      let moved = false
      // The directory fsync after the file moved fails, and so does putting it back.
      const around: Fs.Around = (step, run) =>
        Effect.suspend(() => {
          if (step.op === "rename" && step.target !== undefined && /\.deleted-/.test(step.target)) moved = true
          const fails = (moved && step.op === "fsync") || (step.op === "rename" && /\.rollback-/.test(step.path))
          return fails ? Effect.fail(new Fs.FsError({ op: step.op, path: step.path, errno: "EIO" })) : run
        })
      const result = yield* Effect.either(
        Effect.provide(deleteWith(path), Layer.merge(FileJournal.layerIntercepted(around), Ids.layerDeterministic))
      )
      expect(codeOf(result)).toBe("SESSION_ROLLBACK_FAILED")
      expect(Either.isLeft(result) && result.left.reason).toContain(`session-tree recover ${path}`)
      expect(listing(dir)).toEqual([BLOBS, `${NAME}.marker`])
      expect((yield* Recovery.recover(path)).marker).toBe("restored")
      expect(listing(dir)).toEqual([NAME, BLOBS])
      expect(NFS.readFileSync(path)).toEqual(bytes)
      expect((yield* SessionStore.read(path)).entries.map((e) => e.id)).toEqual(ids)
    }).pipe(Effect.provide(layerReal)))
})

describe("the Promise facade", () => {
  it("Sessions.delete removes a session file and resolves with its path; twice rejects with SESSION_NOT_FOUND", async () => {
    const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-delete-"))
    try {
      const path = Path.join(dir, NAME)
      const store = await Promised.SessionStore.create(path)
      await store.close()
      const sessions = new Promised.Sessions()
      expect(await sessions.delete(path)).toBe(NFS.realpathSync(dir) + Path.sep + NAME)
      expect(listing(dir)).toEqual([])
      await expect(sessions.delete(path)).rejects.toMatchObject({ code: "SESSION_NOT_FOUND" })
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

/**
 * What changes in a directory of session files, as it changes: a session
 * created, appended to (in place, version 2) and deleted, each reported with the
 * catalog's new version within a second; names that are not sessions' ignored;
 * the first batch a resync; the watcher released with the stream.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import type { Change } from "@session-tree/core/SessionChanges"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Sessions from "@session-tree/core/Sessions"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileCatalog from "../src/FileCatalog.js"
import * as FileChanges from "../src/FileChanges.js"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"

const live = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))

/** Waits (up to `ms`) for a change that `wanted` accepts; fails the test otherwise. */
const next = (queue: Queue.Queue<Change>, wanted: (change: Change) => boolean, ms = 2_000) =>
  Effect.gen(function*() {
    const started = Date.now()
    for (;;) {
      const change = yield* Queue.take(queue).pipe(Effect.timeout(Math.max(1, ms - (Date.now() - started))))
      if (wanted(change)) return { change, ms: Date.now() - started }
    }
  })

describe("FileChanges", () => {
  it.scopedLive("reports a create, an append and a delete with the catalog's version, each within a second", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(
        Effect.sync(() => NFS.realpathSync(NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-changes-")))),
        (d) => Effect.sync(() => NFS.rmSync(d, { recursive: true, force: true }))
      )
      const changes = FileChanges.make(Fs.node, { gather: "10 millis" })
      const queue = yield* Queue.unbounded<Change>()
      const fiber = yield* Stream.runForEach(changes.watch(dir), (batch) => Queue.offerAll(queue, batch)).pipe(Effect.fork)
      expect((yield* next(queue, () => true)).change).toEqual({ _tag: "Resync" })

      const path = Path.join(dir, "a.jsonl")
      const catalog = FileCatalog.make(Fs.node)
      const versionNow = Effect.map(catalog.scan(dir), (entries) => entries.find((e) => e.location === path)?.version)
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path)
        const created = yield* next(queue, (c) => c._tag === "Changed" && c.entry.location === path)
        expect(created.ms).toBeLessThan(1_000)
        yield* store.append(null, { role: "user", id: "m1", content: "hello" })
        const createdVersion = created.change._tag === "Changed" ? created.change.entry.version : ""
        const appended = yield* next(queue, (c) => c._tag === "Changed" && c.entry.location === path && c.entry.version !== createdVersion)
        expect(appended.ms).toBeLessThan(1_000)
      })).pipe(Effect.provide(live))
      // The last change reported carries the version the catalog sees now.
      yield* Effect.sleep("100 millis")
      const reported = [...Chunk.toReadonlyArray(yield* Queue.takeAll(queue))]
      const now = yield* versionNow
      const last = [...reported].reverse().find((c) => c._tag === "Changed")
      if (last !== undefined && last._tag === "Changed") expect(last.entry.version).toBe(now)
      // A name that is not a session's changes nothing.
      NFS.writeFileSync(Path.join(dir, "notes.txt"), "x")
      yield* Effect.sleep("150 millis")
      expect(Chunk.toReadonlyArray(yield* Queue.takeAll(queue))).toEqual([])
      yield* Effect.flatMap(Sessions.Sessions, (s) => s.delete(path)).pipe(Effect.provide(live))
      const removed = yield* next(queue, (c) => c._tag === "Removed")
      expect(removed.change).toEqual({ _tag: "Removed", location: path })
      expect(removed.ms).toBeLessThan(1_000)
      yield* Fiber.interrupt(fiber)
    }))

  it.live("fails for a directory that is not there", () =>
    Effect.gen(function*() {
      const error = yield* Effect.flip(Stream.runDrain(FileChanges.make(Fs.node).watch(Path.join(OS.tmpdir(), "session-tree-no-such-dir"))))
      expect(error.code).toBe("SESSION_NOT_FOUND")
    }))
})

/**
 * The version-2 append on files (`docs/files.md`, "The append intent"): a commit
 * writes its batch after the committed end, whatever the session's size; readers and `recover`
 * settle a file beside an append intent by one rule (the whole batch or none of it, and a load
 * never writes); the caps are the version's, read from the header before the file is read whole.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { CAPS_V2, encodeLine, MAX_FILE_BYTES } from "@session-tree/core/Codec"
import type { Entry, Header } from "@session-tree/core/Record"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import { sha256 } from "@session-tree/core/SessionJournal"
import * as Marker from "../src/internal/marker.js"
import * as Recovery from "../src/Recovery.js"
import { hashDir, layerReal, listing, tempDir, user } from "./fixtures/helpers.js"

const NAME = "s.jsonl"

/** The steps of `effect` on the real filesystem, recorded. */
const recording = () => {
  const steps: Array<Fs.Step> = []
  const layer = FileJournal.layerIntercepted((step, run) => Effect.zipRight(Effect.sync(() => steps.push(step)), run))
  return { steps, layer }
}

/** A version-2 session file of `count` chained user entries of `size` characters each, written directly. */
const writeSession = (path: string, count: number, size: number): { header: Header; last: string } => {
  const header = { type: "session", version: 2, id: "big", timestamp: "2026-01-02T03:04:05.006Z" } as Header
  const parts: Array<string> = [encodeLine(header)]
  let parent: string | null = null
  for (let i = 1; i <= count; i++) {
    const entry = {
      type: "entry",
      version: 2,
      id: `e${i}`,
      parentId: parent,
      timestamp: "2026-01-02T03:04:05.007Z",
      kind: "message",
      message: { role: "user", id: `m${i}`, content: [{ type: "text", text: "x".repeat(size) }] }
    } as unknown as Entry
    parts.push(encodeLine(entry))
    parent = `e${i}`
  }
  NFS.writeFileSync(path, parts.join(""))
  return { header, last: parent ?? "" }
}

const batchBytesOf = (path: string, from: number): Buffer => NFS.readFileSync(path).subarray(from)

describe("the version-2 append on files", () => {
  it.scoped("writes only its batch after the committed end, however large the session (no generation is rewritten)", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const written: Array<number> = []
      for (const count of [4, 2_000]) {
        const path = Path.join(dir, `s${count}.jsonl`)
        const { last } = writeSession(path, count, 1000)
        const { layer, steps } = recording()
        const sizeBefore = NFS.statSync(path).size
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.load(path)
          // The first commit after a load checks that the file is canonical; measure the second.
          yield* store.append(last, user("warm", "y".repeat(1000)))
          steps.length = 0
          const entry = yield* store.append(store.entries.at(-1)!.id, user("m", "z".repeat(1000)))
          const line = Buffer.byteLength(encodeLine(entry))
          const writes = steps.filter((s) => s.op === "write" && Path.basename(s.path) === Path.basename(path))
          expect(writes.reduce((sum, s) => sum + (s.length ?? 0), 0)).toBe(line)
          expect(steps.some((s) => s.op === "rename" || s.op === "copyFile")).toBe(false)
          written.push(steps.length)
        })).pipe(Effect.provide(layer))
        expect(NFS.statSync(path).size).toBeGreaterThan(sizeBefore)
        expect(listing(dir).filter((n) => n.startsWith(Path.basename(path)))).toEqual([Path.basename(path)])
      }
      // The same steps for 4 entries as for 2,000.
      expect(written[0]).toBe(written[1])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("holds sessions above version 1's 4 MiB cap: load, append, reload", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const { last } = writeSession(path, 5_000, 1_000)
      expect(NFS.statSync(path).size).toBeGreaterThan(MAX_FILE_BYTES)
      const added = yield* Effect.scoped(Effect.flatMap(SessionStore.load(path), (store) => store.append(last, user("after", "more"))))
      const reread = yield* SessionStore.read(path)
      expect(reread.entries.length).toBe(5_001)
      expect(reread.entries.at(-1)!.id).toBe(added.id)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("refuses a version-2 file over 268,435,456 bytes before any read, and a version-1 file over 4 MiB from its head", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const header = encodeLine({ type: "session", version: 2, id: "huge", timestamp: "2026-01-02T03:04:05.006Z" } as Header)
      NFS.writeFileSync(path, header)
      // Sparse: the size is what the cap looks at, before anything is read.
      NFS.truncateSync(path, CAPS_V2.sessionBytes + 1)
      const { layer, steps } = recording()
      const refused = yield* Effect.either(SessionStore.read(path).pipe(Effect.provide(layer)))
      expect(Either.isLeft(refused) && refused.left.code).toBe("SESSION_FILE_TOO_LARGE")
      expect(steps.filter((s) => s.op === "read")).toEqual([])
      // Above version 1's cap, a version-2 file is read (and refused here for its 4 MiB line of zeros, not for its size).
      NFS.truncateSync(path, MAX_FILE_BYTES + 1)
      const above = yield* Effect.either(SessionStore.read(path))
      expect(Either.isLeft(above) && above.left.code).toBe("SESSION_LINE_TOO_LONG")

      const v1 = encodeLine({ type: "session", version: 1, id: "old", timestamp: "2026-01-02T03:04:05.006Z" } as Header)
      NFS.writeFileSync(path, v1)
      NFS.truncateSync(path, MAX_FILE_BYTES + 1)
      const second = recording()
      const old = yield* Effect.either(SessionStore.read(path).pipe(Effect.provide(second.layer)))
      expect(Either.isLeft(old) && old.left.code).toBe("SESSION_FILE_TOO_LARGE")
      const asked = second.steps.filter((s) => s.op === "read").reduce((sum, s) => sum + (s.length ?? 0), 0)
      expect(asked).toBeLessThan(MAX_FILE_BYTES)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("beside an append intent a load shows the whole batch or none of it and writes nothing; recover settles the file by the same rule", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const marker = `${path}.marker`
      const store = yield* SessionStore.create(path)
      const root = yield* store.append(null, user("m0", "root"))
      const from = NFS.statSync(path).size
      const full = yield* store.append(root.id, user("m1", "the batch"))
      const batch = batchBytesOf(path, from)
      const ids = (yield* SessionStore.read(path)).entries.map((e) => e.id)
      expect(ids).toEqual([root.id, full.id])
      const intent = Marker.encodeIntent({ from, to: from + batch.length, sha256: sha256(batch) })
      // A crashed writer's intent: its owner is this process, which `recover` counts as gone.
      const cases: Array<{ readonly name: string; readonly bytes: number; readonly zeros?: boolean; readonly shows: ReadonlyArray<string>; readonly batch: string }> = [
        { name: "nothing of the batch", bytes: 0, shows: [root.id], batch: "removed" },
        { name: "half of it", bytes: Math.floor(batch.length / 2), shows: [root.id], batch: "removed" },
        { name: "all but its newline", bytes: batch.length - 1, shows: [root.id], batch: "removed" },
        { name: "its size, but zeros", bytes: batch.length, zeros: true, shows: [root.id], batch: "removed" },
        { name: "all of it", bytes: batch.length, shows: [root.id, full.id], batch: "kept" }
      ]
      for (const c of cases) {
        const bytes = Buffer.concat([NFS.readFileSync(path).subarray(0, from), c.zeros ? Buffer.alloc(c.bytes) : batch.subarray(0, c.bytes)])
        NFS.writeFileSync(path, bytes)
        // Each case starts with no intent: recover removed the one before.
        expect(listing(dir)).toEqual([NAME])
        NFS.symlinkSync(intent, marker)
        const hash = hashDir(dir)
        const seen = yield* SessionStore.read(path)
        expect(seen.entries.map((e) => e.id), c.name).toEqual(c.shows)
        const held = yield* Effect.scoped(Effect.map(SessionStore.load(path), (s) => s.entries.map((e) => e.id)))
        expect(held, c.name).toEqual(c.shows)
        expect(hashDir(dir), c.name).toBe(hash)
        const report = yield* Recovery.recover(path)
        expect(report, c.name).toEqual({ path, marker: "removed", batch: c.batch, removed: [] })
        expect(listing(dir), c.name).toEqual([NAME])
        expect((yield* SessionStore.read(path)).entries.map((e) => e.id), c.name).toEqual(c.shows)
        // Whatever recover kept is where the next append starts.
        expect(NFS.statSync(path).size, c.name).toBe(c.batch === "kept" ? from + batch.length : from)
        NFS.writeFileSync(path, Buffer.concat([NFS.readFileSync(path).subarray(0, from), batch]))
      }
    }).pipe(Effect.provide(layerReal)))

  it.scoped("an intent that cannot describe the file (a file shorter than its committed end) is refused, and recover leaves both", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const store = yield* SessionStore.create(path)
      yield* store.append(null, user("m0", "root"))
      const size = NFS.statSync(path).size
      NFS.symlinkSync(Marker.encodeIntent({ from: size + 10, to: size + 20, sha256: "0".repeat(64) }), `${path}.marker`)
      const read = yield* Effect.either(SessionStore.read(path))
      expect(Either.isLeft(read) && read.left.code).toBe("SESSION_REPLACED")
      const recovered = yield* Effect.either(Recovery.recover(path))
      expect(Either.isLeft(recovered) && recovered.left.code).toBe("SESSION_REPLACED")
      expect(listing(dir)).toEqual([NAME, `${NAME}.marker`])
      expect(NFS.statSync(path).size).toBe(size)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("a loaded file whose lines are laid out otherwise (a CRLF, no final newline) is written whole once, canonically", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const { last } = writeSession(path, 2, 10)
      const canonical = NFS.readFileSync(path, "latin1")
      // As many bytes as the canonical lines with a newline each: one CR more, the final newline less.
      const [header, ...entries] = canonical.slice(0, -1).split("\n")
      NFS.writeFileSync(path, `${header}\r\n${entries.join("\n")}`)
      expect(NFS.statSync(path).size).toBe(canonical.length)
      const store = yield* SessionStore.load(path)
      const next = yield* store.append(last, user("m3", "after"))
      expect(NFS.readFileSync(path, "latin1")).toBe(canonical + encodeLine(next))
      expect((yield* SessionStore.read(path)).entries.map((e) => e.id)).toEqual(["e1", "e2", next.id])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("an intent blocks the next append with SESSION_BUSY until recover, and a store that held the file reloads after", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const store = yield* SessionStore.create(path)
      const root = yield* store.append(null, user("m0", "root"))
      const size = NFS.statSync(path).size
      NFS.symlinkSync(Marker.encodeIntent({ from: size, to: size + 10, sha256: "0".repeat(64) }), `${path}.marker`)
      const before = store.entries
      const busy = yield* Effect.either(store.append(root.id, user("m1", "blocked")))
      expect(Either.isLeft(busy) && busy.left.code).toBe("SESSION_BUSY")
      expect(Either.isLeft(busy) && busy.left.message).toContain("recover")
      expect(store.entries).toBe(before)
      expect(NFS.statSync(path).size).toBe(size)
      expect((yield* Recovery.recover(path)).batch).toBe("removed")
      // Nothing of the batch was there, so the file is as the store left it: it appends again.
      const next = yield* store.append(root.id, user("m2", "after recover"))
      expect((yield* SessionStore.read(path)).entries.map((e) => e.id)).toEqual([root.id, next.id])
    }).pipe(Effect.provide(layerReal)))
})

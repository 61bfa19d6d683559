/**
 * `FileJournal.readAfter` (`internal/readAfter.ts`): a version-2 file read again from where a read
 * of it ended reads only the bytes after that end (and the few it compares), when the path is still
 * the file read then with the bytes it compares unchanged; whole otherwise, as it is now.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import * as Journal from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Crypto from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import { tempDir } from "./fixtures/helpers.js"

/** The real filesystem, counting the bytes the session file's reads return. */
const counting = () => {
  const read = { bytes: 0 }
  const fs = Fs.intercept(Fs.node, (step, run) =>
    step.op === "read" && step.path?.endsWith(".jsonl") === true
      ? Effect.tap(run, (n) => Effect.sync(() => (read.bytes += n as number)))
      : run)
  return { read, journal: FileJournal.make(fs), layer: Layer.merge(FileJournal.layerWithFs(fs), Ids.layerRandom) }
}

const text = (i: number) => `message ${i}: ${"words of the conversation ".repeat(4)}`

/** A version-2 (or `version`) session of `n` user messages in a chain at `path`. */
const made = (path: string, n: number, version: 1 | 2 = 2) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path, { version })
    let parent: string | null = null
    for (let i = 0; i < n; i++) {
      parent = (yield* store.append(parent, version === 2 ? { role: "user", id: `m${i}`, content: [{ type: "text", text: text(i) }] } : { role: "user", id: `m${i}`, content: text(i) })).id
    }
  }))

/** Appends `messages` (version 2) after the newest entry of the session at `path`. */
const append = (path: string, messages: ReadonlyArray<unknown>) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.load(path)
    let parent = store.entries.at(-1)!.id
    for (const message of messages) parent = (yield* store.append(parent, message as never)).id
  }))

const user = (id: string, t: string) => ({ role: "user", id, content: [{ type: "text", text: t }] })

describe("FileJournal.readAfter", () => {
  it.scoped("reads only the bytes after the read before, and gives the lines a whole read gives after it", () =>
    Effect.gen(function*() {
      const { read, journal, layer } = counting()
      const path = Path.join(yield* tempDir, "s.jsonl")
      yield* Effect.provide(made(path, 2000), layer)
      const size = NFS.statSync(path).size
      expect(size).toBeGreaterThan(200_000)
      const first = yield* journal.read(path)
      expect(read.bytes).toBe(size)
      yield* Effect.provide(append(path, [user("a1", "one more"), user("a2", "and another")]), layer)
      const appended = NFS.statSync(path).size - size
      read.bytes = 0
      const after = yield* Journal.readAfter(journal, path, first)
      // The new bytes, and the 4 KiB before the old end and at the start that are compared.
      expect(read.bytes).toBe(appended + 2 * 4096)
      const whole = yield* journal.read(path)
      expect(after._tag).toBe("After")
      expect(first.lines.concat(after.stored.lines)).toEqual(whole.lines)
      expect(after.stored.sizes).toEqual(whole.sizes.slice(first.lines.length))
      expect(after.stored.size).toBe(whole.size)
      // Nothing new: nothing but what is compared.
      read.bytes = 0
      const none = yield* Journal.readAfter(journal, path, after.stored)
      expect([none._tag, none.stored.lines, read.bytes]).toEqual(["After", [], 2 * 4096])
    }))

  it.scoped("gives the blobs the appended lines refer to", () =>
    Effect.gen(function*() {
      const { journal, layer } = counting()
      const path = Path.join(yield* tempDir, "s.jsonl")
      yield* Effect.provide(made(path, 3), layer)
      const first = yield* journal.read(path)
      const bytes = new Uint8Array(Crypto.randomBytes(70_000))
      const hash = Crypto.createHash("sha256").update(bytes).digest("hex")
      yield* Effect.provide(append(path, [{ role: "user", id: "img", content: [{ type: "file", mediaType: "image/png", data: bytes }] }]), layer)
      const after = yield* Journal.readAfter(journal, path, first)
      expect(after._tag).toBe("After")
      expect(after.stored.lines).toHaveLength(1)
      expect(after.stored.blobs).toEqual(new Map([[hash, 70_000]]))
    }))

  it.scoped("reads whole a file that is another one now, is shorter, or whose compared bytes changed", () =>
    Effect.gen(function*() {
      const { read, journal, layer } = counting()
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      yield* Effect.provide(made(path, 200), layer)
      const first = yield* journal.read(path)
      const original = NFS.readFileSync(path)
      const wholeNow = (before: Journal.Stored) =>
        Effect.gen(function*() {
          read.bytes = 0
          const again = yield* Journal.readAfter(journal, path, before)
          expect(again._tag).toBe("Whole")
          // The whole file, after (at most) the bytes compared and those after the old end.
          const now = NFS.statSync(path).size
          expect(read.bytes).toBeGreaterThanOrEqual(now)
          expect(read.bytes).toBeLessThanOrEqual(now + 2 * 4096 + Math.max(0, now - before.size))
          expect(again.stored.lines).toEqual((yield* journal.read(path)).lines)
          return again.stored
        })
      // The same bytes, then an append, in another file renamed over the path.
      NFS.copyFileSync(path, `${path}.copy`)
      NFS.renameSync(`${path}.copy`, path)
      yield* Effect.provide(append(path, [user("a1", "after the copy")]), layer)
      const copied = yield* wholeNow(first)
      // In place: a line near the end changed (the same size), the file cut short, the first line changed.
      NFS.writeFileSync(path, NFS.readFileSync(path, "latin1").replace("message 199:", "message 19x:"), "latin1")
      const changedEnd = yield* wholeNow(copied)
      NFS.writeFileSync(path, original.subarray(0, original.length - 1000))
      const shorter = yield* Effect.either(Journal.readAfter(journal, path, changedEnd))
      expect(shorter._tag === "Right" && shorter.right._tag).toBe("Whole")
      NFS.writeFileSync(path, original)
      const restored = yield* journal.read(path)
      NFS.writeFileSync(path, Buffer.concat([Buffer.from(original.toString("latin1").replace("message 1:", "message x:"), "latin1"), Buffer.from(`\n`)]))
      yield* wholeNow(restored)
    }))

  it.scoped("reads a version-1 session whole: its commits replace the file", () =>
    Effect.gen(function*() {
      const { journal, layer } = counting()
      const path = Path.join(yield* tempDir, "v1.jsonl")
      yield* Effect.provide(made(path, 3, 1), layer)
      const first = yield* journal.read(path)
      expect(first.mark).toBeUndefined()
      const again = yield* Journal.readAfter(journal, path, first)
      expect(again._tag).toBe("Whole")
    }))
})

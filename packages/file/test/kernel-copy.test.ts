/**
 * The kernel copy (KERNEL_COPY_MIN_BYTES): a commit on a canonical
 * file at or above the threshold copies the current generation with `copyFile`
 * and writes only the new lines. Whatever path a commit takes, the file must end
 * up byte for byte the canonical generation (SPEC B1) of what is accepted. The
 * directory is on the OS temp dir, not tmpfs, so the copy runs on the
 * filesystem the store is used on.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import { KERNEL_COPY_MIN_BYTES } from "../src/FileJournal.js"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import { bytesDiffer, tempDirAt } from "./fixtures/helpers.js"

const NAME = "s.jsonl"
const T0 = Date.parse("2026-01-02T03:04:05.006Z")

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }

// Records written out by hand in the key order of SPEC B1, so the expected bytes do not come from the encoder.
const headerRecord = { type: "session", version: 1, id: "session-x", timestamp: new Date(T0).toISOString() }
const entryRecord = (id: string, parentId: string | null, timestamp: number, message: Json) => ({
  type: "entry",
  version: 1,
  id,
  parentId,
  timestamp: new Date(timestamp).toISOString(),
  message
})
const line = (record: Json) => JSON.stringify(record) + "\n"

/** Canonical lines of a session just over `bytes`: root user entries `f-0001`…, each ~2 KB with some non-ASCII text. */
const fillerLines = (bytes: number): Array<string> => {
  const lines = [line(headerRecord)]
  let size = Buffer.byteLength(lines[0]!)
  for (let i = 1; size <= bytes; i++) {
    const id = `f-${String(i).padStart(4, "0")}`
    const l = line(entryRecord(id, i === 1 ? null : `f-${String(i - 1).padStart(4, "0")}`, T0, {
      role: "user",
      id: `m-${id}`,
      content: `line ${i} "quoted" \\ naïve → ✓ `.repeat(60)
    }))
    lines.push(l)
    size += Buffer.byteLength(l)
  }
  return lines
}

/** The messages appended by every test: a user turn, a tool call, its result, an answer, and a branch. */
const appended = (leaf: string): ReadonlyArray<{ readonly parent: (ids: ReadonlyArray<string>) => string; readonly message: Json }> => [
  { parent: () => leaf, message: { role: "user", id: "u1", content: "read the file, please — ünïcödé" } },
  {
    parent: (ids) => ids[0]!,
    message: { role: "assistant", id: "a1", content: "", toolCalls: [{ id: "c1", name: "read", arguments: { path: "a.ts", n: [1, { deep: true }] } }] }
  },
  { parent: (ids) => ids[1]!, message: { role: "tool", id: "t1", toolCallId: "c1", toolName: "read", content: "x\ny", isError: false } },
  { parent: (ids) => ids[2]!, message: { role: "assistant", id: "a2", content: "done", toolCalls: [] } },
  { parent: (ids) => ids[0]!, message: { role: "user", id: "u2", content: "a branch from the first turn" } },
  { parent: (ids) => ids[4]!, message: { role: "user", id: "u3", content: "x".repeat(5_000) } }
]

/** Records the op of every filesystem step while the real filesystem does the work. */
const recording = () => {
  const ops: Array<string> = []
  const layer = Layer.merge(
    FileJournal.layerIntercepted((step, run) => Effect.zipRight(Effect.sync(() => ops.push(step.op)), run)),
    Ids.layerDeterministic
  )
  return { ops, layer }
}

/**
 * Loads the file at `path`, appends the messages one commit at a time (the clock moves 1 ms per append),
 * and returns the expected lines: the given ones plus the canonical line of each appended entry.
 */
const appendAll = (path: string, lines: ReadonlyArray<string>, leaf: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.load(path)
    const ids: Array<string> = []
    const expected = lines.slice()
    for (const [i, step] of appended(leaf).entries()) {
      yield* TestClock.setTime(T0 + i + 1)
      const parent = step.parent(ids)
      const entry = yield* store.append(parent, step.message)
      ids.push(entry.id)
      expected.push(line(entryRecord(`entry-${String(i + 1).padStart(3, "0")}`, parent, T0 + i + 1, step.message)))
    }
    return { store, expected }
  })

/** For each commit (one rename onto the path each), whether it copied the current generation. */
const copiedPerCommit = (ops: ReadonlyArray<string>): Array<boolean> => {
  const copied: Array<boolean> = []
  let copies = 0
  for (const op of ops) {
    if (op === "copyFile") copies++
    if (op === "rename") {
      copied.push(copies > 0)
      copies = 0
    }
  }
  return copied
}

const bytesOf = (lines: ReadonlyArray<string>) => Buffer.from(lines.join(""), "utf8")

const real = Effect.sync(() => OS.tmpdir())

describe("kernel copy", () => {
  it.scoped("appends copied in the kernel leave exactly the canonical generation, and it reloads to the same entries", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.flatMap(real, tempDirAt)
      const path = Path.join(dir, NAME)
      const lines = fillerLines(KERNEL_COPY_MIN_BYTES + 10_000)
      NFS.writeFileSync(path, lines.join(""))
      const rec = recording()
      const { expected, store } = yield* Effect.provide(appendAll(path, lines, "f-0001"), rec.layer)
      // Every commit took the kernel path.
      expect(copiedPerCommit(rec.ops)).toEqual(appended("").map(() => true))
      expect(bytesDiffer(NFS.readFileSync(path), bytesOf(expected))).toBeUndefined()
      const reloaded = yield* Effect.provide(SessionStore.read(path), FileJournal.layerWithFs())
      expect(reloaded.entries).toEqual(store.entries)
      expect(NFS.readdirSync(dir)).toEqual([NAME])
    }))

  it.scoped("a loaded file that is not canonical (CRLF) is written whole once, then copied, ending canonical", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.flatMap(real, tempDirAt)
      const path = Path.join(dir, NAME)
      const lines = fillerLines(KERNEL_COPY_MIN_BYTES + 10_000)
      NFS.writeFileSync(path, lines.map((l) => l.replace(/\n$/, "\r\n")).join(""))
      const rec = recording()
      const { expected } = yield* Effect.provide(appendAll(path, lines, "f-0001"), rec.layer)
      // The first commit must not copy the CRLF bytes; the later ones copy canonical bytes.
      expect(copiedPerCommit(rec.ops)).toEqual(appended("").map((_, i) => i > 0))
      expect(bytesDiffer(NFS.readFileSync(path), bytesOf(expected))).toBeUndefined()
    }))

  it.scoped("an incomplete tail is never copied: the first append rewrites without it", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.flatMap(real, tempDirAt)
      const path = Path.join(dir, NAME)
      const lines = fillerLines(KERNEL_COPY_MIN_BYTES + 10_000)
      NFS.writeFileSync(path, lines.join("") + `{"type":"entry","id":"cut`)
      const rec = recording()
      const { expected } = yield* Effect.provide(appendAll(path, lines, "f-0001"), rec.layer)
      expect(copiedPerCommit(rec.ops)).toEqual(appended("").map((_, i) => i > 0))
      expect(bytesDiffer(NFS.readFileSync(path), bytesOf(expected))).toBeUndefined()
    }))

  it.scoped("a file that grows past the threshold switches to the copy at the first commit whose generation reaches it", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.flatMap(real, tempDirAt)
      const path = Path.join(dir, NAME)
      // Between 1.8 and 4 KB under the threshold: the small appends stay below it, the last (5 KB) one crosses it.
      const lines = fillerLines(KERNEL_COPY_MIN_BYTES - 4_000)
      NFS.writeFileSync(path, lines.join(""))
      const rec = recording()
      const { expected } = yield* Effect.provide(appendAll(path, lines, "f-0001"), rec.layer)
      expect(bytesDiffer(NFS.readFileSync(path), bytesOf(expected))).toBeUndefined()
      // The size of each new generation decides: at or above the threshold it is a copy plus the new line.
      const sizes = expected.slice(lines.length).map((_, i) => Buffer.byteLength(expected.slice(0, lines.length + i + 1).join("")))
      const copied = copiedPerCommit(rec.ops)
      expect(copied).toEqual(sizes.map((size) => size >= KERNEL_COPY_MIN_BYTES))
      expect(copied.includes(true) && copied.includes(false)).toBe(true)
    }))
})

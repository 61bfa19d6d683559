/**
 * The caps of a version-2 session on append, at their real size (`docs/format.md`, "Lines, caps
 * and the tail"): a session holds at most 1,048,576 entries and 268,435,456 bytes of lines. A
 * store that has loaded a session at a cap refuses the append that would pass it, with the cap's
 * code, and leaves the file and its own entries as they were; an append that reaches the byte cap
 * exactly is accepted. Files of 180–256 MB: the long run only (`npm run test:reliability`); in
 * `npm test` these tests are reported as skipped.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { CAPS_V2, encodeLine } from "@session-tree/core/Codec"
import type { Entry, Header } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import { layerReal, user } from "../test/fixtures/helpers.js"
import { diskTempDir, LONG, removeDir, report } from "./support/config.js"

const HEADER = { type: "session", version: 2, id: "caps", timestamp: "2026-01-02T03:04:05.006Z" } as Header

const entryLine = (i: number, text: string): string =>
  encodeLine({
    type: "entry",
    version: 2,
    id: `e${i}`,
    parentId: i === 1 ? null : `e${i - 1}`,
    timestamp: "2026-01-02T03:04:05.007Z",
    kind: "message",
    message: { role: "user", id: `m${i}`, content: [{ type: "text", text }] }
  } as unknown as Entry)

/** Writes the header and the lines `lineOf(1..count)` to `path` in chunks; the file's size. */
const writeSession = (path: string, count: number, lineOf: (i: number) => string): number => {
  const fd = NFS.openSync(path, "wx")
  try {
    let chunk: Array<string> = [encodeLine(HEADER)]
    let chunkLength = 0
    for (let i = 1; i <= count; i++) {
      const line = lineOf(i)
      chunk.push(line)
      chunkLength += line.length
      if (chunkLength > 8_000_000 || i === count) {
        NFS.writeSync(fd, chunk.join(""))
        chunk = []
        chunkLength = 0
      }
    }
    NFS.fsyncSync(fd)
  } finally {
    NFS.closeSync(fd)
  }
  return NFS.statSync(path).size
}

const digest = (path: string): string => createHash("sha256").update(NFS.readFileSync(path)).digest("hex")

/** `effect` in a scratch directory on disk, removed afterwards. */
const inDir = <A, E, R>(f: (dir: string) => Effect.Effect<A, E, R>) =>
  Effect.acquireUseRelease(Effect.sync(() => diskTempDir("caps-v2")), f, (dir) => Effect.sync(() => removeDir(dir)))

describe.skipIf(!LONG)("the version-2 caps on append, at full size", () => {
  it.effect("a session of 1,048,576 entries loads, and its next append is SESSION_TOO_MANY_ENTRIES with nothing written", () =>
    inDir((dir) =>
      Effect.gen(function*() {
        const path = Path.join(dir, "entries.jsonl")
        const size = writeSession(path, CAPS_V2.entries, (i) => entryLine(i, "x"))
        const before = digest(path)
        const error = yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.load(path)
          expect(store.entries.length).toBe(CAPS_V2.entries)
          const refused = yield* Effect.flip(store.append(`e${CAPS_V2.entries}`, user("over", "one too many")))
          expect(store.entries.length).toBe(CAPS_V2.entries)
          return refused as SessionError
        }))
        expect(error.code).toBe("SESSION_TOO_MANY_ENTRIES")
        expect(digest(path)).toBe(before)
        expect(NFS.readdirSync(dir)).toEqual(["entries.jsonl"])
        report("caps-v2", { entries: CAPS_V2.entries, bytes: size, refused: error.code })
      })
    ).pipe(Effect.provide(layerReal)), 1_200_000)

  it.effect("a session just under 268,435,456 bytes takes the append that reaches the cap exactly and refuses one byte more", () =>
    inDir((dir) =>
      Effect.gen(function*() {
        const path = Path.join(dir, "bytes.jsonl")
        // Lines of about 1 MB, then one that leaves 4,000 bytes under the cap.
        const big = "x".repeat(1_000_000)
        const target = CAPS_V2.sessionBytes - 4_000
        const n = Math.floor((target - encodeLine(HEADER).length) / entryLine(1, big).length)
        const lines: Array<string> = []
        for (let i = 1; i <= n; i++) lines.push(entryLine(i, big))
        const used = encodeLine(HEADER).length + lines.reduce((k, l) => k + l.length, 0)
        lines.push(entryLine(n + 1, "x".repeat(target - used - entryLine(n + 1, "").length)))
        const size = writeSession(path, lines.length, (i) => lines[i - 1]!)
        expect(size).toBe(CAPS_V2.sessionBytes - 4_000)
        const outcome = yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.load(path)
          // What one appended line costs besides its text, from an append of 100 characters under
          // a parent with an ID of the store's own (as the appends below have).
          const first = yield* store.append(`e${n + 1}`, user("a0", "y"))
          const probed = NFS.statSync(path).size
          yield* store.append(first.id, user("a1", "y".repeat(100)))
          const afterFirst = NFS.statSync(path).size
          const cost = afterFirst - probed - 100
          const room = CAPS_V2.sessionBytes - afterFirst
          const before = digest(path)
          const over = yield* Effect.flip(store.append(first.id, user("a2", "y".repeat(room - cost + 1))))
          expect(digest(path)).toBe(before)
          const count = store.entries.length
          const exact = yield* store.append(first.id, user("a3", "y".repeat(room - cost)))
          const atCap = NFS.statSync(path).size
          const after = yield* Effect.flip(store.append(exact.id, user("a4", "")))
          expect(store.entries.length).toBe(count + 1)
          return { over: (over as SessionError).code, atCap, after: (after as SessionError).code }
        }))
        expect(outcome.over).toBe("SESSION_FILE_TOO_LARGE")
        expect(outcome.atCap).toBe(CAPS_V2.sessionBytes)
        expect(outcome.after).toBe("SESSION_FILE_TOO_LARGE")
        expect(NFS.statSync(path).size).toBe(CAPS_V2.sessionBytes)
        // The session at the cap loads again whole.
        const reloaded = yield* Effect.scoped(Effect.map(SessionStore.load(path), (s) => s.entries.length))
        expect(reloaded).toBe(n + 1 + 3)
        report("caps-v2", { bytes: outcome.atCap, over: outcome.over })
      })
    ).pipe(Effect.provide(layerReal)), 1_200_000)
})

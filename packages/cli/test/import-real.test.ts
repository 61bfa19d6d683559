/**
 * Every real transcript of the shared collection (read in place; skipped, saying so, without it),
 * imported through the Effect API on session files and on PostgreSQL: the two stores hold the same
 * records (file data over 65,536 bytes a blob on both), every `signature` and `encrypted_content`
 * of the source is in the stored bytes exactly, and the stored session, exported and imported
 * again, is the same bytes.
 */
import * as Ids from "@session-tree/core/Ids"
import * as Import from "@session-tree/core/Import"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as PgJournal from "@session-tree/pg/PgJournal"
import * as Transcripts from "@session-tree/testing/Transcripts"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import * as SelfContained from "../src/selfContained.js"
import { removeTempDirs, runCli, tempDir } from "./support.js"

let scope: Scope.CloseableScope
let db: string

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("importreal"), scope))
  expect((await runCli("migrate", "--db", db)).code).toBe(0)
}, 120_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

const onFiles = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
const onDb = () => Layer.provideMerge(Sessions.layer, Layer.merge(PgJournal.layerUrl(db), Ids.layerRandom))

const SOURCES = (["claude", "codex", "pi"] as const).flatMap((kind) => Transcripts.files(kind).map((name) => ({ kind, name })))

/** Every value of the keys `names` anywhere in `value`. */
const valuesOf = (value: unknown, names: ReadonlySet<string>, out: Array<string> = []): Array<string> => {
  if (Array.isArray(value)) for (const v of value) valuesOf(v, names, out)
  else if (typeof value === "object" && value !== null) {
    for (const [k, v] of Object.entries(value)) {
      if (names.has(k) && typeof v === "string") out.push(v)
      else valuesOf(v, names, out)
    }
  }
  return out
}

describe.skipIf(SOURCES.length === 0)("the real transcripts, imported on files and in PostgreSQL", { timeout: 180_000 }, () => {
  it.each(SOURCES)("$kind/$name", async ({ kind, name }) => {
    const bytes = NFS.readFileSync(Path.join(Transcripts.dir(kind), name))
    const imported = Import.convert(bytes, { skipDamaged: true })
    if (Either.isLeft(imported)) {
      // The legacy Pi format: refused at its header.
      expect([kind, imported.left.code, imported.left.line]).toEqual(["pi", "SESSION_UNSUPPORTED_VERSION", 1])
      return
    }
    expect(imported.right.format).toBe(kind)
    const dir = tempDir()
    const stored = await Effect.runPromise(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const out: Array<{ readonly jsonl: string; readonly self: string }> = []
      for (const [i, session] of imported.right.sessions.entries()) {
        const location = Path.join(dir, `${i}.jsonl`)
        yield* sessions.import(session, location)
        const loaded = yield* sessions.read(location)
        out.push({ jsonl: yield* sessions.exportJsonl(location), self: yield* SelfContained.inlineBlobs(loaded.header, loaded.entries, loaded.blob) })
      }
      return out
    }).pipe(Effect.provide(onFiles)))
    const inDb = await Effect.runPromise(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const out: Array<string> = []
      for (const session of imported.right.sessions) {
        // A rerun of the suite finds the session of the last run: the store's records, compared all the same.
        yield* Effect.catchIf(sessions.import(session), (e) => e.code === "SESSION_EXISTS", () => Effect.void)
        out.push(yield* sessions.exportJsonl(session.header.id))
      }
      return out
    }).pipe(Effect.provide(onDb())))
    expect(inDb).toEqual(stored.map((s) => s.jsonl))
    // Every signature and encrypted payload of the source, byte for byte, in what is stored.
    const source = new TextDecoder().decode(bytes).split("\n").flatMap((l) => {
      try {
        return [JSON.parse(l) as unknown]
      } catch {
        return []
      }
    })
    const secrets = valuesOf(source, new Set(["signature", "encrypted_content", "thinkingSignature"]))
    const all = stored.map((s) => s.jsonl).join("")
    for (const secret of secrets) expect(all.includes(JSON.stringify(secret).slice(1, -1))).toBe(true)
    // Exported self-contained and imported again: the same bytes.
    const again = await Effect.runPromise(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const out: Array<string> = []
      for (const [i, { self }] of stored.entries()) {
        const unpacked = SelfContained.unpack(self)
        const lines = unpacked?.lines ?? self.split("\n").filter((l) => l !== "")
        const [header, ...entries] = lines.map((l) => JSON.parse(l))
        const location = Path.join(dir, `${i}.again.jsonl`)
        yield* sessions.import({ header, entries }, location, { blobs: unpacked?.blobs })
        out.push(yield* sessions.exportJsonl(location))
      }
      return out
    }).pipe(Effect.provide(onFiles)))
    expect(again).toEqual(stored.map((s) => s.jsonl))
  })
})
if (SOURCES.length === 0) it.skip(`the real transcripts: ${Transcripts.dir()} is missing`, () => {})

/**
 * Session paths through symlinked directories (SPEC C3): the directories above
 * a session file may be reached through symlinks (macOS `/tmp` and `/var`, a
 * linked home or project folder); the directory is resolved once, when a store
 * is created or loaded, then pinned by (device, inode), and the in-process lock
 * is keyed by that directory. The file itself is never followed.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import * as Recovery from "../src/Recovery.js"
import { makeTempDir, user } from "./fixtures/helpers.js"

const live = Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)

const linkedDir = Effect.acquireRelease(
  Effect.sync(() => {
    const root = makeTempDir()
    NFS.mkdirSync(Path.join(root, "real"))
    NFS.symlinkSync(Path.join(root, "real"), Path.join(root, "link"))
    return root
  }),
  (root) => Effect.sync(() => NFS.rmSync(root, { recursive: true, force: true }))
)

describe("a session in a symlinked directory", () => {
  it.scoped("is created, loaded, appended to and recovered through the link, at the real directory", () =>
    Effect.gen(function*() {
      const root = yield* linkedDir
      const viaLink = Path.join(root, "link", "a.jsonl")
      const real = Path.join(NFS.realpathSync(Path.join(root, "real")), "a.jsonl")
      const store = yield* SessionStore.create(viaLink)
      expect(store.location).toBe(real)
      const first = yield* store.append(null, user("m1", "through the link"))
      const again = yield* SessionStore.load(viaLink)
      expect(again.entries).toEqual([first])
      expect((yield* SessionStore.read(viaLink)).location).toBe(real)
      yield* again.append(first.id, user("m2", "again"))
      expect(yield* Recovery.recover(viaLink)).toEqual({ path: real, marker: "none", batch: "none", removed: [] })
      expect(NFS.readdirSync(Path.join(root, "real"))).toEqual(["a.jsonl"])
    }).pipe(Effect.provide(live)))

  it.scoped("is listed through the link at the location its store has", () =>
    Effect.gen(function*() {
      const root = yield* linkedDir
      const store = yield* SessionStore.create(Path.join(root, "link", "a.jsonl"))
      const scanned = yield* (yield* SessionCatalog).scan(Path.join(root, "link"))
      expect(scanned.map((e) => e.location)).toEqual([store.location])
      const [read] = yield* (yield* SessionCatalog).readMany(scanned.map((e) => e.location))
      expect(read !== undefined && Either.isRight(read) && read.right.location).toBe(store.location)
    }).pipe(Effect.provide(live)))

  it.scoped("shares one lock with the same file reached by its real path: the stale store loses, typed", () =>
    Effect.gen(function*() {
      const root = yield* linkedDir
      const viaLink = yield* SessionStore.create(Path.join(root, "link", "s.jsonl"))
      const viaReal = yield* SessionStore.load(Path.join(root, "real", "s.jsonl"))
      yield* viaReal.append(null, user("m1", "real"))
      const lost = yield* Effect.either(viaLink.append(null, user("m2", "link")))
      expect(Either.isLeft(lost) && lost.left.code).toBe("SESSION_REPLACED")
      expect(viaLink.entries).toEqual([])
      expect((yield* SessionStore.read(Path.join(root, "link", "s.jsonl"))).entries).toEqual(viaReal.entries)
    }).pipe(Effect.provide(live)))

  it.scoped("stays in the directory it was loaded from when the link is pointed elsewhere", () =>
    Effect.gen(function*() {
      const root = yield* linkedDir
      NFS.mkdirSync(Path.join(root, "other"))
      const viaLink = Path.join(root, "link", "s.jsonl")
      const store = yield* SessionStore.create(viaLink)
      NFS.copyFileSync(Path.join(root, "real", "s.jsonl"), Path.join(root, "other", "s.jsonl"))
      const decoy = NFS.readFileSync(Path.join(root, "other", "s.jsonl"))
      NFS.unlinkSync(Path.join(root, "link"))
      NFS.symlinkSync(Path.join(root, "other"), Path.join(root, "link"))
      const entry = yield* store.append(null, user("m1", "pinned"))
      expect((yield* SessionStore.read(Path.join(root, "real", "s.jsonl"))).entries).toEqual([entry])
      expect(NFS.readFileSync(Path.join(root, "other", "s.jsonl")).equals(decoy)).toBe(true)
    }).pipe(Effect.provide(live)))

  it.scoped("is still refused when the file itself is a symlink, and when a parent is not a directory", () =>
    Effect.gen(function*() {
      const root = yield* linkedDir
      const store = yield* SessionStore.create(Path.join(root, "link", "target.jsonl"))
      yield* store.append(null, user("m1", "x"))
      NFS.symlinkSync("target.jsonl", Path.join(root, "real", "alias.jsonl"))
      NFS.writeFileSync(Path.join(root, "plain"), "x")
      for (const path of [Path.join(root, "link", "alias.jsonl"), Path.join(root, "plain", "s.jsonl")]) {
        const loaded = yield* Effect.either(SessionStore.read(path))
        expect(Either.isLeft(loaded) && loaded.left.code).toBe("SESSION_NOT_REGULAR_FILE")
        const created = yield* Effect.either(SessionStore.create(path))
        expect(Either.isLeft(created) && created.left.code).toBe(path.endsWith("alias.jsonl") ? "SESSION_EXISTS" : "SESSION_NOT_REGULAR_FILE")
      }
    }).pipe(Effect.provide(live)))
})

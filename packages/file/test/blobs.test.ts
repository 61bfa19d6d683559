/**
 * Blobs of session files: `NAME.blobs/<sha256>` beside the session, each made durable (written,
 * fsynced, renamed into place, its directory fsynced) before the commit that first refers to it;
 * a failure at any step of an append never leaves an entry whose blob is missing; a load checks
 * presence and size, a read the hash; neither follows a symlink; a fork hard-links the blobs of
 * its path (copies them across filesystems), so that removing either session leaves the other whole.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Crypto from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as Ids from "@session-tree/core/Ids"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import { hashDir, layerReal, makeInjector, tempDir, tempDirAt } from "./fixtures/helpers.js"

const hex = (bytes: Uint8Array) => Crypto.createHash("sha256").update(bytes).digest("hex")
const bytesOf = (size: number) => new Uint8Array(Crypto.randomBytes(size))
const image = (data: unknown, id = "m1") => ({
  role: "user",
  id,
  content: [{ type: "text", text: "look" }, { type: "file", mediaType: "image/png", data }]
})
const codeOf = <A>(r: Either.Either<A, SessionError>) => (Either.isLeft(r) ? r.left.code : "ok")

/** A session at `path` holding one text entry, then one entry with `bytes` as a blob. */
const sessionWithBlob = (path: string, bytes: Uint8Array) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path)
    const first = yield* store.append(null, { role: "user", id: "m0", content: [{ type: "text", text: "hi" }] })
    return yield* store.append(first.id, image(bytes))
  }))

describe("blobs on files", () => {
  it.scoped("an append writes NAME.blobs/<sha256> with the bytes, 0600; the line holds the reference; read back byte-exact", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      const bytes = bytesOf(100_000)
      const entry = yield* sessionWithBlob(path, bytes)
      const file = Path.join(dir, "s.jsonl.blobs", hex(bytes))
      expect(NFS.readdirSync(Path.join(dir, "s.jsonl.blobs"))).toEqual([hex(bytes)])
      expect(hex(NFS.readFileSync(file))).toBe(hex(bytes))
      expect(NFS.statSync(file).mode & 0o777).toBe(0o600)
      expect(NFS.readFileSync(path, "utf8").split("\n")[2]).toBe(JSON.stringify(entry))
      const loaded = yield* SessionStore.read(path)
      expect(yield* loaded.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
      const store = yield* SessionStore.load(path)
      expect(yield* store.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("the blob is renamed into place and its directory fsynced before the commit touches the session", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      const steps: Array<Fs.Step> = []
      let recording = false
      const layer = Layer.merge(
        FileJournal.layerIntercepted((step, run) => Effect.suspend(() => (recording && steps.push(step), run))),
        Ids.layerDeterministic
      )
      const bytes = bytesOf(70_000)
      const blobDir = `${path}.blobs`
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path)
        recording = true
        yield* store.append(null, image(bytes))
      })).pipe(Effect.provide(layer))
      const renamed = steps.findIndex((s) => s.op === "rename" && s.target === Path.join(blobDir, hex(bytes)))
      const synced = steps.findIndex((s, i) => i > renamed && s.op === "fsync" && s.path === blobDir)
      const session = steps.findIndex((s) => s.path === path || s.target === path || s.path.startsWith(`${path}.marker`) || s.target?.startsWith(`${path}.marker`) === true)
      expect(renamed).toBeGreaterThanOrEqual(0)
      expect(synced).toBeGreaterThan(renamed)
      expect(session).toBeGreaterThan(synced)
      // The directory was new: the session's directory is synced too before the commit.
      expect(steps.findIndex((s, i) => i > synced && s.op === "fsync" && s.path === dir)).toBeLessThan(session)
    }))

  it.scoped("a failure at any step of an append never leaves an entry whose blob is missing or short", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const injector = makeInjector()
      const layer = Layer.merge(injector.layer, Ids.layerRandom)
      const bytes = bytesOf(70_000)
      // Count the steps of one such append first.
      const probe = Path.join(dir, "probe.jsonl")
      const total = yield* Effect.scoped(Effect.flatMap(SessionStore.create(probe), (store) =>
        Effect.gen(function*() {
          injector.start()
          yield* store.append(null, image(bytes))
          return injector.stop().length
        }))).pipe(Effect.provide(layer))
      expect(total).toBeGreaterThan(8)
      let committed = 0
      for (let at = 0; at < total; at++) {
        const path = Path.join(dir, `s${at}.jsonl`)
        yield* Effect.scoped(Effect.flatMap(SessionStore.create(path), (store) =>
          Effect.gen(function*() {
            injector.start(new Map([[at, "EIO"]]))
            yield* Effect.either(store.append(null, image(bytes)))
            injector.stop()
          }))).pipe(Effect.provide(layer))
        // Whatever the outcome, the session as it now stands loads, and every blob it refers to reads back whole.
        const loaded = yield* Effect.either(SessionStore.read(path).pipe(Effect.provide(layer)))
        if (Either.isLeft(loaded)) {
          expect(loaded.left.code, `failure at step ${at}`).not.toBe("SESSION_BLOB_MISSING")
          continue
        }
        if (loaded.right.entries.length === 1) {
          committed++
          expect(yield* loaded.right.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
        }
      }
      // Some failures come after the commit (the append then reports what it could not finish).
      expect(committed).toBeLessThan(total)
    }))

  it.scoped("a missing or short blob refuses the whole session; changed bytes load and are SESSION_BLOB_CORRUPT on read", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      const bytes = bytesOf(90_000)
      yield* sessionWithBlob(path, bytes)
      const file = Path.join(`${path}.blobs`, hex(bytes))
      NFS.writeFileSync(file, bytes.subarray(1))
      const short = yield* Effect.either(SessionStore.read(path))
      expect(Either.isLeft(short) && [short.left.code, short.left.line]).toEqual(["SESSION_BLOB_MISSING", 3])
      const changed = bytes.slice()
      changed[10]! ^= 1
      NFS.writeFileSync(file, changed)
      const loaded = yield* SessionStore.read(path)
      expect(codeOf(yield* Effect.either(loaded.blob(`sha256:${hex(bytes)}`)))).toBe("SESSION_BLOB_CORRUPT")
      NFS.unlinkSync(file)
      expect(codeOf(yield* Effect.either(Effect.scoped(SessionStore.load(path))))).toBe("SESSION_BLOB_MISSING")
      // An append that brings the bytes again puts the blob back.
      NFS.writeFileSync(path, NFS.readFileSync(path, "utf8").split("\n").slice(0, 2).join("\n") + "\n")
      yield* Effect.scoped(Effect.flatMap(SessionStore.load(path), (store) => store.append(null, image(bytes, "m2"))))
      expect(hex(NFS.readFileSync(file))).toBe(hex(bytes))
    }).pipe(Effect.provide(layerReal)))

  it.scoped("symlinks are never followed: a linked blob directory or blob file is missing, and an append into a linked directory is refused", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "s.jsonl")
      const bytes = bytesOf(80_000)
      yield* sessionWithBlob(path, bytes)
      const blobDir = `${path}.blobs`
      const elsewhere = Path.join(dir, "elsewhere")
      NFS.renameSync(blobDir, elsewhere)
      NFS.symlinkSync(elsewhere, blobDir)
      expect(codeOf(yield* Effect.either(SessionStore.read(path)))).toBe("SESSION_BLOB_MISSING")
      // An append of new bytes must not write through the link either.
      const other = Path.join(dir, "t.jsonl")
      yield* Effect.scoped(SessionStore.create(other))
      NFS.symlinkSync(elsewhere, `${other}.blobs`)
      const before = NFS.readFileSync(other)
      const refused = yield* Effect.either(Effect.scoped(Effect.flatMap(SessionStore.load(other), (store) => store.append(null, image(bytesOf(70_000))))))
      expect(codeOf(refused)).toBe("SESSION_NOT_REGULAR_FILE")
      expect(NFS.readFileSync(other)).toEqual(before)
      expect(NFS.readdirSync(elsewhere)).toEqual([hex(bytes)])
      // A real directory whose blob file is a link: missing too.
      NFS.unlinkSync(blobDir)
      NFS.mkdirSync(blobDir)
      NFS.symlinkSync(Path.join(elsewhere, hex(bytes)), Path.join(blobDir, hex(bytes)))
      expect(codeOf(yield* Effect.either(SessionStore.read(path)))).toBe("SESSION_BLOB_MISSING")
    }).pipe(Effect.provide(layerReal)))

  it.scoped("a fork hard-links the blobs of its path; removing the source and its blobs leaves the fork whole", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const sessions = yield* Sessions.Sessions
      const kept = bytesOf(90_000)
      const other = bytesOf(90_001)
      const source = Path.join(dir, "a.jsonl")
      const target = Path.join(dir, "b.jsonl")
      const first = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* sessions.create(source)
        const first = yield* store.append(null, image(kept))
        yield* store.append(null, image(other, "m2"))
        return first
      }))
      yield* sessions.fork(source, first.id, target)
      expect(NFS.readdirSync(`${target}.blobs`)).toEqual([hex(kept)])
      const a = NFS.statSync(Path.join(`${source}.blobs`, hex(kept)))
      const b = NFS.statSync(Path.join(`${target}.blobs`, hex(kept)))
      expect([b.ino, b.nlink]).toEqual([a.ino, 2])
      NFS.rmSync(source)
      NFS.rmSync(`${source}.blobs`, { recursive: true })
      const forked = yield* sessions.read(target)
      expect(yield* forked.blob(`sha256:${hex(kept)}`)).toEqual(kept)
    }).pipe(Effect.provide(Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)))))

  it.scoped("a fork onto a path that is taken is SESSION_EXISTS and leaves the session there, its blobs included, as they were", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const sessions = yield* Sessions.Sessions
      const source = Path.join(dir, "a.jsonl")
      const target = Path.join(dir, "b.jsonl")
      const first = yield* Effect.scoped(Effect.flatMap(sessions.create(source), (store) => store.append(null, image(bytesOf(90_000)))))
      yield* Effect.scoped(Effect.flatMap(sessions.create(target), (store) => store.append(null, image(bytesOf(80_000)))))
      const before = hashDir(`${target}.blobs`) + hashDir(dir)
      const refused = yield* Effect.either(sessions.fork(source, first.id, target))
      expect(codeOf(refused)).toBe("SESSION_EXISTS")
      expect(hashDir(`${target}.blobs`) + hashDir(dir)).toBe(before)
    }).pipe(Effect.provide(Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)))))

  it.scoped("a fork to another filesystem copies the blobs, durably", () =>
    Effect.gen(function*() {
      const here = yield* tempDir
      const there = yield* tempDirAt(OS.tmpdir())
      if (NFS.statSync(here).dev === NFS.statSync(there).dev) return
      const sessions = yield* Sessions.Sessions
      const bytes = bytesOf(70_000)
      const source = Path.join(here, "a.jsonl")
      const first = yield* Effect.scoped(Effect.flatMap(sessions.create(source), (store) => store.append(null, image(bytes))))
      const target = Path.join(there, "b.jsonl")
      yield* sessions.fork(source, first.id, target)
      NFS.rmSync(`${source}.blobs`, { recursive: true })
      expect(NFS.statSync(Path.join(`${target}.blobs`, hex(bytes))).nlink).toBe(1)
      const forked = yield* sessions.read(target)
      expect(yield* forked.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
    }).pipe(Effect.provide(Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)))))
})

describe("Fs.lstatAll", () => {
  it.scoped("tells the kind and size of each name, never following a link, on both filesystem services", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      NFS.writeFileSync(Path.join(dir, "file"), Buffer.alloc(1234))
      NFS.mkdirSync(Path.join(dir, "dir"))
      NFS.symlinkSync("file", Path.join(dir, "link"))
      const names = ["file", "dir", "link", "missing"]
      for (const fs of [Fs.node, Fs.threadPool]) {
        const entries = yield* fs.lstatAll(dir, names)
        expect(entries).toEqual([{ kind: "file", size: 1234 }, { kind: "directory", size: NFS.lstatSync(Path.join(dir, "dir")).size }, {
          kind: "symlink",
          size: 4
        }, undefined])
        const failed = yield* Effect.flip(fs.lstatAll(Path.join(dir, "file"), ["x"]))
        expect(failed.errno).toBe("ENOTDIR")
      }
    }))
})

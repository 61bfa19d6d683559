/**
 * How a read checks the blobs of a session file: each blob its lines refer to is lstat'ed by name
 * (a regular file of its size, in the directory lstat saw), without listing the directory; a
 * reference the bytes do not show as such (spelled with `\u` escapes of its own characters) falls
 * back to the whole directory. A held session still knows every blob in its directory, those no
 * entry refers to included.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Crypto from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Ids from "@session-tree/core/Ids"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import { referencedIn } from "../src/internal/blobs.js"
import { layerReal, tempDir } from "./fixtures/helpers.js"

const hex = (bytes: Uint8Array) => Crypto.createHash("sha256").update(bytes).digest("hex")
const bytesOf = (size: number) => new Uint8Array(Crypto.randomBytes(size))
const image = (data: unknown, id: string) => ({
  role: "user",
  id,
  content: [{ type: "text", text: "look" }, { type: "file", mediaType: "image/png", data }]
})

/** A session at `path` whose entries refer to `images`, one entry each, after a text holding an ANSI escape. */
const sessionWith = (path: string, images: ReadonlyArray<Uint8Array>) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path)
    let parent = (yield* store.append(null, { role: "user", id: "m0", content: [{ type: "text", text: "\u001b[31mred\u001b[0m" }] })).id
    for (let i = 0; i < images.length; i++) parent = (yield* store.append(parent, image(images[i], `m${i + 1}`))).id
  })).pipe(Effect.provide(layerReal))

/** A session `s.jsonl` in a fresh directory whose entries refer to blobs of these sizes, one each. */
const imagesSession = (sizes: ReadonlyArray<number>) =>
  Effect.gen(function*() {
    const dir = yield* tempDir
    const path = Path.join(dir, "s.jsonl")
    const images = sizes.map(bytesOf)
    yield* sessionWith(path, images)
    return { dir, path, images }
  })

/** The real filesystem, recording each step and each name `lstatAll` is asked about. */
const recording = () => {
  const ops: Array<Fs.Op> = []
  const looked: Array<string> = []
  const seen = Fs.intercept(Fs.node, (step, run) => Effect.suspend(() => (ops.push(step.op), run)))
  const fs: Fs.FsService = { ...seen, lstatAll: (dir, names) => (looked.push(...names), seen.lstatAll(dir, names)) }
  const layer = Layer.merge(FileJournal.layerWithFs(fs), Ids.layerDeterministic)
  return { ops, looked, layer }
}

const readWith = (path: string, layer: Layer.Layer<SessionJournal>) =>
  Effect.either(SessionStore.read(path).pipe(Effect.provide(layer)))

describe("a read's check of the blobs", () => {
  it.scoped("lstats exactly the blobs the lines refer to, lists nothing, and leaves other names alone", () =>
    Effect.gen(function*() {
      const { dir, images, path } = yield* imagesSession([70_000, 80_000])
      // A blob no entry refers to, a temp name and a stray file: none is looked at.
      const orphan = bytesOf(66_000)
      NFS.writeFileSync(Path.join(`${path}.blobs`, hex(orphan)), orphan)
      NFS.writeFileSync(Path.join(`${path}.blobs`, `${hex(orphan)}.tmp-1-2`), "x")
      NFS.writeFileSync(Path.join(`${path}.blobs`, "notes"), "x")
      const { layer, looked, ops } = recording()
      const loaded = yield* readWith(path, layer)
      expect(Either.isRight(loaded) && loaded.right.entries.length).toBe(3)
      expect([...looked].sort()).toEqual(images.map(hex).sort())
      expect(ops).not.toContain("readdir")
      // Without a blob directory, and with no reference, a read takes no step for blobs at all.
      const plain = Path.join(dir, "plain.jsonl")
      yield* sessionWith(plain, [])
      const quiet = recording()
      expect(Either.isRight(yield* readWith(plain, quiet.layer))).toBe(true)
      expect(quiet.ops.filter((op) => op === "lstatAll" || op === "readdir")).toEqual([])
    }))

  it.scoped("a missing, short, linked or non-file blob is still SESSION_BLOB_MISSING at its line", () =>
    Effect.gen(function*() {
      const { dir, images, path } = yield* imagesSession([70_000, 80_000])
      const file = Path.join(`${path}.blobs`, hex(images[1]!))
      const refused = () =>
        Effect.map(readWith(path, layerReal), (r) => (Either.isLeft(r) ? [r.left.code, r.left.reason, r.left.line] : "loaded"))
      const missing = ["SESSION_BLOB_MISSING", `blob "sha256:${hex(images[1]!)}" is not in the session's store`, 4]
      NFS.writeFileSync(file, images[1]!.subarray(1))
      expect(yield* refused()).toEqual([
        "SESSION_BLOB_MISSING",
        `blob "sha256:${hex(images[1]!)}" holds 79999 bytes, not the 80000 its reference gives`,
        4
      ])
      NFS.unlinkSync(file)
      expect(yield* refused()).toEqual(missing)
      NFS.mkdirSync(file)
      expect(yield* refused()).toEqual(missing)
      NFS.rmdirSync(file)
      const elsewhere = Path.join(dir, "elsewhere")
      NFS.writeFileSync(elsewhere, images[1]!)
      NFS.symlinkSync(elsewhere, file)
      expect(yield* refused()).toEqual(missing)
      NFS.unlinkSync(file)
      NFS.writeFileSync(file, images[1]!)
      expect(yield* refused()).toBe("loaded")
      // The directory itself as a link: every blob in it is missing.
      NFS.renameSync(`${path}.blobs`, Path.join(dir, "moved"))
      NFS.symlinkSync(Path.join(dir, "moved"), `${path}.blobs`)
      expect(yield* refused()).toEqual(["SESSION_BLOB_MISSING", `blob "sha256:${hex(images[0]!)}" is not in the session's store`, 3])
    }))

  it.scoped("a reference spelled with escapes of its own characters is checked through the whole directory", () =>
    Effect.gen(function*() {
      const { images, path } = yield* imagesSession([70_000])
      const bytes = images[0]!
      const text = NFS.readFileSync(path, "utf8")
      // The same value, JSON-escaped: `s` and the first digit of the hash.
      const escaped = `"\\u0073ha256:\\u00${hex(bytes).charCodeAt(0).toString(16)}${hex(bytes).slice(1)}"`
      NFS.writeFileSync(path, text.replace(`"sha256:${hex(bytes)}"`, escaped))
      expect(NFS.readFileSync(path, "utf8")).not.toContain(`sha256:${hex(bytes)}`)
      const { layer, ops } = recording()
      const loaded = yield* readWith(path, layer)
      expect(Either.isRight(loaded) && loaded.right.entries.length).toBe(2)
      expect(ops).toContain("readdir")
      NFS.unlinkSync(Path.join(`${path}.blobs`, hex(bytes)))
      const refused = yield* readWith(path, layerReal)
      expect(Either.isLeft(refused) && [refused.left.code, refused.left.line]).toEqual(["SESSION_BLOB_MISSING", 3])
    }))

  it.scoped("a held session still knows a blob no entry refers to: an append may refer to it as is", () =>
    Effect.gen(function*() {
      const { path } = yield* imagesSession([70_000])
      const orphan = bytesOf(66_000)
      NFS.writeFileSync(Path.join(`${path}.blobs`, hex(orphan)), orphan)
      const ref = { blob: `sha256:${hex(orphan)}`, size: orphan.length }
      const appended = yield* Effect.scoped(Effect.flatMap(SessionStore.load(path), (store) => store.append(null, image(ref, "m9"))))
      expect(appended.id).toBeDefined()
      const loaded = yield* SessionStore.read(path)
      expect(yield* loaded.blob(ref.blob)).toEqual(orphan)
    }).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))))
})

describe("referencedIn", () => {
  const a = "a".repeat(64)
  const b = "0123456789abcdef".repeat(4)
  const bytes = (text: string) => Buffer.from(text, "utf8")

  it("finds each sha256: followed by 64 lowercase hexadecimal digits, once", () => {
    expect(referencedIn(bytes(`{"blob":"sha256:${a}","size":1}\n{"blob":"sha256:${b}"}\n{"text":"sha256:${a}"}\n`))).toEqual([a, b])
    expect(referencedIn(bytes(`sha256:${a}`))).toEqual([a])
    expect(referencedIn(bytes(`ha256:${a} xsha256:${"A".repeat(64)} sha256:${a.slice(1)}"`))).toEqual([])
    expect(referencedIn(bytes(`sha256:../../${a}`))).toEqual([])
    expect(referencedIn(bytes(""))).toEqual([])
  })

  it("cannot tell when a \\u escape could spell a character of a reference; other escapes do not matter", () => {
    for (const escape of ["\\u0073", "\\u0068", "\\u003a", "\\u003A", "\\u0030", "\\u0066", "\\u0061"]) {
      expect(referencedIn(bytes(`{"text":"x${escape}"} sha256:${a}`)), escape).toBeUndefined()
    }
    for (const escape of ["\\u001b", "\\u0000", "\\ud83d", "\\u0053", "\\u0046", "\\n", "\\u00"]) {
      expect(referencedIn(bytes(`{"text":"x${escape}"} sha256:${a}`)), escape).toEqual([a])
    }
  })
})

describe("Fs.lstatAll paths", () => {
  it.scoped("a directory given with a trailing slash or relatively names the same files, on both services", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      NFS.writeFileSync(Path.join(dir, "file"), Buffer.alloc(12))
      const relative = Path.relative(process.cwd(), dir)
      for (const fs of [Fs.node, Fs.threadPool]) {
        for (const d of [dir, `${dir}/`, relative, `${relative}/`, `${dir}/.`]) {
          expect(yield* fs.lstatAll(d, ["file", "missing"])).toEqual([{ kind: "file", size: 12 }, undefined])
        }
      }
    }))
})

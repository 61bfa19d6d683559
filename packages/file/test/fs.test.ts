/**
 * The two real filesystems behind `Fs` answer alike: the synchronous one (`node`) learns that a
 * name is missing without an exception, and must still fail exactly as the thread-pool one does.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Fs from "../src/Fs.js"
import { tempDir } from "./fixtures/helpers.js"

const services = [["node", Fs.node], ["threadPool", Fs.threadPool]] as const

describe("Fs.lstat", () => {
  for (const [name, fs] of services) {
    it.scoped(`${name}: a file, a link not followed, a missing name (ENOENT) and a name under a file (ENOTDIR)`, () =>
      Effect.gen(function*() {
        const dir = yield* tempDir
        const file = Path.join(dir, "a")
        NFS.writeFileSync(file, "12345")
        const stat = yield* fs.lstat(file)
        expect([stat.kind, stat.size]).toEqual(["file", 5])

        // A link to nothing: lstat sees the link itself, where stat would find nothing.
        const link = Path.join(dir, "link")
        NFS.symlinkSync(Path.join(dir, "nowhere"), link)
        expect((yield* fs.lstat(link)).kind).toBe("symlink")

        const missing = Path.join(dir, "missing")
        const gone = yield* Effect.either(fs.lstat(missing))
        expect(Either.isLeft(gone) && gone.left).toBeInstanceOf(Fs.FsError)
        const error = Either.isLeft(gone) ? gone.left : undefined
        expect([error?.op, error?.path, error?.errno, error?.message]).toEqual(["lstat", missing, "ENOENT", `lstat ${missing}: ENOENT`])

        const under = yield* Effect.either(fs.lstat(Path.join(file, "x")))
        expect(Either.isLeft(under) && under.left.errno).toBe("ENOTDIR")
      }))
  }
})

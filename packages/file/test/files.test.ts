/**
 * `Files`: the files an import reads and an export writes, with the care given
 * to session files (a read is whole or refused, a write appears whole or not at
 * all), and nothing on disk changed by a refusal.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Files from "../src/Files.js"
import * as Fs from "../src/Fs.js"
import { tempDir } from "./fixtures/helpers.js"

const codeOf = <A>(result: Either.Either<A, { readonly code: string }>) => (Either.isLeft(result) ? result.left.code : "ok")

describe("Files.readBytes", () => {
  it.scoped("refuses a file that holds more than fstat said, instead of returning a prefix", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "in.jsonl")
      NFS.writeFileSync(path, "0123456789abcdef")
      // The file as fstat saw it before four more bytes landed: what a writer appending meanwhile looks like.
      const shrunk = Fs.layerIntercepted((step, run) =>
        step.op === "fstat" ? Effect.map(run, (s) => ({ ...(s as Fs.Stat), size: 12 }) as never) : run
      )
      const result = yield* Effect.either(Files.readBytes(path, 1024).pipe(Effect.provide(shrunk)))
      expect(codeOf(result)).toBe("SESSION_REPLACED")
      expect(NFS.readFileSync(path, "utf8")).toBe("0123456789abcdef")
    }))

  it.scoped("reads a file whole in one read when it holds what fstat said", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, "in.jsonl")
      NFS.writeFileSync(path, "0123456789abcdef")
      const ops: Array<string> = []
      const recorded = Fs.layerIntercepted((step, run) => Effect.zipRight(Effect.sync(() => ops.push(step.op)), run))
      const bytes = yield* Files.readBytes(path, 1024).pipe(Effect.provide(recorded))
      expect(Buffer.from(bytes).toString("utf8")).toBe("0123456789abcdef")
      expect(ops).toEqual(["lstat", "open", "fstat", "read", "close"])
    }))

  it.scoped("refuses a file over the cap, a symlink and a missing path, typed", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      NFS.writeFileSync(Path.join(dir, "big"), "x".repeat(11))
      NFS.symlinkSync("big", Path.join(dir, "alias"))
      const read = (name: string) => Effect.either(Files.readBytes(Path.join(dir, name), 10).pipe(Effect.provide(Fs.layer)))
      expect(codeOf(yield* read("big"))).toBe("SESSION_FILE_TOO_LARGE")
      expect(codeOf(yield* read("alias"))).toBe("SESSION_NOT_REGULAR_FILE")
      expect(codeOf(yield* read("missing"))).toBe("SESSION_NOT_FOUND")
    }))
})

describe("Files.writeFile", () => {
  const write = (path: string, text: string) => Effect.either(Files.writeFile(path, text).pipe(Effect.provide(Fs.layer)))

  it.scoped("writes through a symlinked directory (SPEC C3), into the real one, leaving only the file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      NFS.mkdirSync(Path.join(dir, "real"))
      NFS.symlinkSync(Path.join(dir, "real"), Path.join(dir, "link"))
      expect(codeOf(yield* write(Path.join(dir, "link", "out.html"), "first"))).toBe("ok")
      expect(codeOf(yield* write(Path.join(dir, "link", "out.html"), "second"))).toBe("ok")
      expect(NFS.readFileSync(Path.join(dir, "real", "out.html"), "utf8")).toBe("second")
      expect(NFS.readdirSync(Path.join(dir, "real"))).toEqual(["out.html"])
      expect(NFS.lstatSync(Path.join(dir, "link")).isSymbolicLink()).toBe(true)
    }))

  it.scoped("refuses a symlink at the path, a missing directory and a parent that is a file, changing nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      NFS.writeFileSync(Path.join(dir, "target"), "kept")
      NFS.symlinkSync("target", Path.join(dir, "alias"))
      expect(codeOf(yield* write(Path.join(dir, "alias"), "x"))).toBe("SESSION_NOT_REGULAR_FILE")
      expect(codeOf(yield* write(Path.join(dir, "missing", "out"), "x"))).toBe("SESSION_NOT_FOUND")
      expect(codeOf(yield* write(Path.join(dir, "target", "out"), "x"))).toBe("SESSION_NOT_REGULAR_FILE")
      expect(NFS.readdirSync(dir).sort()).toEqual(["alias", "target"])
      expect(NFS.readFileSync(Path.join(dir, "target"), "utf8")).toBe("kept")
      expect(NFS.readlinkSync(Path.join(dir, "alias"))).toBe("target")
    }))
})

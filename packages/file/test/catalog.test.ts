/**
 * The file catalog (SPEC C5 `list`): its scan lists the `*.jsonl` names directly
 * in a directory; a name gone between the listing and its lstat is left out, any
 * other failed step is a typed SESSION_IO naming the file. `readMany` reads each
 * file as the journal does.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as FileCatalog from "../src/FileCatalog.js"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import { tempDir } from "./fixtures/helpers.js"

/** The catalog on the real filesystem, with the lstat of `name` failing with `errno`. */
const failingLstat = (name: string, errno: string) =>
  FileCatalog.make(Fs.intercept(Fs.node, (step, run) =>
    step.op === "lstat" && Path.basename(step.path) === name
      ? Effect.fail(new Fs.FsError({ op: step.op, path: step.path, errno }))
      : run
  ))

describe("the file catalog", () => {
  it.scoped("lists the *.jsonl names in order, at the real directory, and nothing else", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (const name of ["b.jsonl", "a.jsonl", ".jsonl", "notes.txt"]) NFS.writeFileSync(Path.join(dir, name), "")
      NFS.mkdirSync(Path.join(dir, "sub.jsonl"))
      const scanned = yield* FileCatalog.make(Fs.node).scan(dir)
      const real = NFS.realpathSync(dir)
      expect(scanned.map((e) => e.location)).toEqual(["a.jsonl", "b.jsonl", "sub.jsonl"].map((n) => Path.join(real, n)))
      expect(scanned.map((e) => e.version.split(":")[0])).toEqual(["file", "file", "directory"])
    }))

  it.scoped("leaves out a name gone before its lstat, and fails typed when an lstat fails otherwise", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      for (const name of ["a.jsonl", "b.jsonl"]) NFS.writeFileSync(Path.join(dir, name), "")
      const gone = yield* failingLstat("a.jsonl", "ENOENT").scan(dir)
      expect(gone.map((e) => Path.basename(e.location))).toEqual(["b.jsonl"])
      const failed = yield* Effect.either(failingLstat("b.jsonl", "EIO").scan(dir))
      expect(Either.isLeft(failed) && [failed.left.code, failed.left.path]).toEqual(["SESSION_IO", Path.join(NFS.realpathSync(dir), "b.jsonl")])
    }))

  it.scoped("refuses a directory that is missing or not a directory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      NFS.writeFileSync(Path.join(dir, "file"), "")
      const codeOf = (directory: string) =>
        Effect.map(Effect.either(FileCatalog.make(Fs.node).scan(directory)), (r) => (Either.isLeft(r) ? r.left.code : "ok"))
      expect(yield* codeOf(Path.join(dir, "missing"))).toBe("SESSION_NOT_FOUND")
      expect(yield* codeOf(Path.join(dir, "file"))).toBe("SESSION_NOT_REGULAR_FILE")
      expect(yield* codeOf(Path.join(dir, "file", "below"))).toBe("SESSION_NOT_REGULAR_FILE")
    }))

  it.scoped("reads many files of one directory resolving it once, each as the journal reads it", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const ok = `${JSON.stringify({ type: "session", version: 1, id: "s", timestamp: "2026-01-02T03:04:05.006Z" })}\n`
      for (const name of ["a.jsonl", "b.jsonl"]) NFS.writeFileSync(Path.join(dir, name), ok)
      NFS.mkdirSync(Path.join(dir, "bad.jsonl"))
      const ops: Array<string> = []
      const fs = Fs.intercept(Fs.node, (step, run) => Effect.zipRight(Effect.sync(() => ops.push(step.op)), run))
      const catalog = FileCatalog.make(fs)
      const locations = ["a.jsonl", "bad.jsonl", "b.jsonl", "missing.jsonl"].map((n) => Path.join(dir, n))
      const many = yield* catalog.readMany(locations)
      expect(ops.filter((op) => op === "realpath")).toEqual(["realpath"])
      const one = yield* Effect.forEach(locations, (l) => Effect.either(FileJournal.make(Fs.node).read(l)))
      expect(many).toEqual(one)
      expect(many.map((r) => (Either.isLeft(r) ? r.left.code : "ok"))).toEqual(["ok", "SESSION_NOT_REGULAR_FILE", "ok", "SESSION_NOT_FOUND"])
    }))
})

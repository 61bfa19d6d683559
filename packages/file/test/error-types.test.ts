/**
 * The error channels the file backend's own operations name, checked by the type checker (`tsc`
 * checks this file; a `@ts-expect-error` that finds no error fails the compile), and a run of each
 * failure that shows the class it names.
 */
import { describe, expect, expectTypeOf, it } from "@effect/vitest"
import type { ConflictError, InputError, IoError, LockedError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as Files from "../src/Files.js"
import * as Fs from "../src/Fs.js"
import * as Recovery from "../src/Recovery.js"

type ErrorOf<F extends (...args: never) => Effect.Effect<unknown, unknown, unknown>> = Effect.Effect.Error<ReturnType<F>>

describe("Recovery.recover", () => {
  it("names RecoverError, never CorruptError: it judges names and bytes, not records", () => {
    expectTypeOf<ErrorOf<typeof Recovery.recover>>().toEqualTypeOf<Recovery.RecoverError>()
    expectTypeOf<Recovery.RecoverError>().toEqualTypeOf<InputError | ConflictError | IoError | LockedError>()
    // @ts-expect-error: recover cannot fail with a CorruptError, so there is none to catch
    const _wrong = (path: string) => Recovery.recover(path).pipe(Effect.catchTag("CorruptError", () => Effect.void))
  })

  it.effect("fails a path with no session as InputError", () =>
    Effect.gen(function*() {
      const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "st-error-types-"))
      const failed = yield* Effect.flip(Recovery.recover(Path.join(dir, "missing", "s.jsonl")))
      expect(failed._tag).toBe("InputError")
      NFS.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Fs.layer)))
})

describe("Files.writeFile", () => {
  it("names InputError, ConflictError and IoError: it commits no session, so nothing to lock", () => {
    expectTypeOf<ErrorOf<typeof Files.writeFile>>().toEqualTypeOf<InputError | ConflictError | IoError>()
  })

  it.effect("refuses a directory at the path as InputError", () =>
    Effect.gen(function*() {
      const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "st-error-types-"))
      const failed = yield* Effect.flip(Files.writeFile(dir, "text"))
      expect(failed._tag).toBe("InputError")
      expect(failed.code).toBe("SESSION_NOT_REGULAR_FILE")
      NFS.rmSync(dir, { recursive: true })
    }).pipe(Effect.provide(Fs.layer)))
})

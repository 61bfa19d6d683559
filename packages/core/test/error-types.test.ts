/**
 * The error channels the signatures name, checked by the type checker (`tsc` checks this file;
 * `expectTypeOf` fails the compile, and a `@ts-expect-error` that finds no error does too), with
 * the runtime classes behind them: a caller can `Effect.catchTag` one class and the channel then
 * no longer holds it.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, expectTypeOf, it } from "vitest"
import { decodeLines } from "../src/Codec.js"
import { decodeEntry } from "../src/Record.js"
import type { ScanError } from "../src/SessionCatalog.js"
import {
  ConflictError,
  CorruptError,
  InputError,
  IoError,
  LockedError,
  sessionError
} from "../src/SessionError.js"
import type { ReadError, SessionJournalService, Writer } from "../src/SessionJournal.js"
import type { SessionsService } from "../src/Sessions.js"
import type * as SessionStore from "../src/SessionStore.js"
import type { SessionTree } from "../src/SessionTree.js"

type ErrorOf<F extends (...args: never) => Effect.Effect<unknown, unknown, unknown>> = Effect.Effect.Error<ReturnType<F>>

describe("sessionError", () => {
  it("is typed and made as the class of its code", () => {
    const busy = sessionError("SESSION_BUSY", "another writer is committing")
    expectTypeOf(busy).toEqualTypeOf<ConflictError>()
    expect(busy).toBeInstanceOf(ConflictError)
    const missing = sessionError("SESSION_NOT_FOUND", "nothing here")
    expectTypeOf(missing).toEqualTypeOf<InputError>()
    expect(missing).toBeInstanceOf(InputError)
    const failed = sessionError("SESSION_IO", "the disk failed")
    expectTypeOf(failed).toEqualTypeOf<IoError>()
    expect(failed).toBeInstanceOf(IoError)
    const locked = sessionError("SESSION_ROLLBACK_FAILED", "unproven")
    expectTypeOf(locked).toEqualTypeOf<LockedError>()
    expect(locked).toBeInstanceOf(LockedError)
    const corrupt = sessionError("SESSION_INVALID_JSON", "not JSON")
    expectTypeOf(corrupt).toEqualTypeOf<CorruptError>()
    expect(corrupt).toBeInstanceOf(CorruptError)
    // A code known only at run time gives the union of the classes it may be.
    const either = sessionError("SESSION_EXISTS" as "SESSION_EXISTS" | "SESSION_IO", "taken")
    expectTypeOf(either).toEqualTypeOf<ConflictError | IoError>()
  })
})

describe("an append", () => {
  it("after catchTag(\"ConflictError\") no longer holds ConflictError, and keeps every other class", () => {
    const retried = (store: SessionStore.SessionStore) =>
      store.append(null, { role: "user", id: "m", content: [{ type: "text", text: "hi" }] }).pipe(
        Effect.catchTag("ConflictError", () => Effect.succeed(undefined))
      )
    expectTypeOf<Extract<ErrorOf<typeof retried>, ConflictError>>().toEqualTypeOf<never>()
    expectTypeOf<ErrorOf<typeof retried>>().toEqualTypeOf<InputError | IoError | LockedError>()
    expectTypeOf<ErrorOf<SessionStore.SessionStore["append"]>>().toEqualTypeOf<InputError | ConflictError | IoError | LockedError>()
  })

  it("never fails with CorruptError: what the caller gives is refused as InputError, whatever its code", () => {
    // @ts-expect-error: an append cannot fail with a CorruptError, so there is none to catch
    const _wrong = (store: SessionStore.SessionStore) => store.appendEntry(null, {}).pipe(Effect.catchTag("CorruptError", () => Effect.void))
    expectTypeOf<ErrorOf<SessionStore.SessionStore["appendChain"]>>().toEqualTypeOf<InputError | ConflictError | IoError | LockedError>()
  })

  it("through a tree, the same", () => {
    const retried = (tree: SessionTree) => tree.setTitle("t").pipe(Effect.catchTag("ConflictError", () => Effect.void))
    expectTypeOf<Extract<ErrorOf<typeof retried>, ConflictError>>().toEqualTypeOf<never>()
    expectTypeOf<ErrorOf<typeof retried>>().toEqualTypeOf<InputError | IoError | LockedError>()
  })
})

describe("a backend writer's append", () => {
  it("never fails with CorruptError: the store checked the batch, and its blobs are bytes", () => {
    expectTypeOf<ErrorOf<Writer["append"]>>().toEqualTypeOf<InputError | ConflictError | IoError | LockedError>()
    // @ts-expect-error: an append through a writer cannot fail with a CorruptError, so there is none to catch
    const _wrong = (writer: Writer) => writer.append({ lines: [], sizes: [], ids: [] }).pipe(Effect.catchTag("CorruptError", () => Effect.void))
    // A create can: a fork takes blobs from a session that may no longer hold them.
    expectTypeOf<Extract<Effect.Effect.Error<ReturnType<SessionJournalService["create"]>>, CorruptError>>().toEqualTypeOf<CorruptError>()
  })
})

describe("a delete", () => {
  it("never fails with CorruptError: a session that does not load is deleted all the same", () => {
    expectTypeOf<ErrorOf<SessionsService["delete"]>>().toEqualTypeOf<InputError | ConflictError | IoError | LockedError>()
    // @ts-expect-error: a delete cannot fail with a CorruptError, so there is none to catch
    const _wrong = (sessions: SessionsService) => sessions.delete("s").pipe(Effect.catchTag("CorruptError", () => Effect.void))
  })
})

describe("SessionTree.moveTo", () => {
  it("names only InputError", () => {
    expectTypeOf<ErrorOf<SessionTree["moveTo"]>>().toEqualTypeOf<InputError>()
    const caught = (tree: SessionTree) => tree.moveTo(null).pipe(Effect.catchTag("InputError", () => Effect.void))
    expectTypeOf<ErrorOf<typeof caught>>().toEqualTypeOf<never>()
    // @ts-expect-error: moveTo cannot fail with a ConflictError, so there is none to catch
    const _wrong = (tree: SessionTree) => tree.moveTo(null).pipe(Effect.catchTag("ConflictError", () => Effect.void))
  })
})

describe("reads", () => {
  it("never fail with LockedError: nothing is committed, so no rollback can be unproven", () => {
    expectTypeOf<ReadError>().toEqualTypeOf<InputError | CorruptError | ConflictError | IoError>()
    expectTypeOf<Effect.Effect.Error<ReturnType<typeof SessionStore.read>>>().toEqualTypeOf<ReadError>()
    expectTypeOf<Effect.Effect.Error<ReturnType<typeof SessionStore.load>>>().toEqualTypeOf<ReadError>()
    expectTypeOf<ErrorOf<SessionJournalService["read"]>>().toEqualTypeOf<ReadError>()
    expectTypeOf<ErrorOf<SessionsService["read"]>>().toEqualTypeOf<ReadError>()
    expectTypeOf<ErrorOf<SessionsService["exportJsonl"]>>().toEqualTypeOf<ReadError>()
    // @ts-expect-error: a read has no LockedError to catch
    const _wrong = (sessions: SessionsService) => sessions.read("x").pipe(Effect.catchTag("LockedError", () => Effect.void))
  })

  it("a listing fails only for its scope or options, or a failed step", () => {
    expectTypeOf<ErrorOf<SessionsService["list"]>>().toEqualTypeOf<ScanError>()
    expectTypeOf<ScanError>().toEqualTypeOf<InputError | IoError>()
  })
})

describe("synchronous decoders", () => {
  it("answer with an Either whose Left is a CorruptError", () => {
    const decoded = decodeLines({ lines: [], sizes: [], tail: "none" })
    expectTypeOf(decoded).toMatchTypeOf<Either.Either<unknown, CorruptError>>()
    expect(Either.isLeft(decoded) && decoded.left).toBeInstanceOf(CorruptError)
    expect(Either.isLeft(decoded) && decoded.left.code).toBe("SESSION_INVALID_HEADER")
    const entry = decodeEntry({ type: "entry", version: 1 }, 2)
    expectTypeOf(entry).toMatchTypeOf<Either.Either<unknown, CorruptError>>()
    expect(Either.isLeft(entry) && [entry.left.code, entry.left.line]).toEqual(["SESSION_INVALID_RECORD", 2])
  })
})

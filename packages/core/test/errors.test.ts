/**
 * Errors by who must act: each failure reaches the caller as the class of the
 * party that must act (caller input, corrupt data, conflict, I/O, locked), with
 * its stable code, so that `Effect.catchTag` picks exactly the failures a caller
 * can handle. The same code judges stored data on a read and the caller's input
 * on an append.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import type * as Ids from "../src/Ids.js"
import type { Message } from "../src/Record.js"
import {
  asInput,
  catchCode,
  classOf,
  type ConflictError,
  CorruptError,
  InputError,
  isSessionError,
  SessionError,
  sessionError,
  SessionErrorCode
} from "../src/SessionError.js"
import type { SessionJournal } from "../src/SessionJournal.js"
import * as SessionStore from "../src/SessionStore.js"
import * as SessionTree from "../src/SessionTree.js"
import { makeProbed } from "./support/journal.js"

const HEADER = `{"type":"session","version":1,"id":"s","timestamp":"2026-01-02T03:04:05.006Z"}`
const entry = (id: string, parentId: string | null, message: Message) =>
  JSON.stringify({ type: "entry", version: 1, id, parentId, timestamp: "2026-01-02T03:04:05.006Z", message })
const user = (id: string): Message => ({ role: "user", id, content: "hi" })
const answer: Message = { role: "tool", id: "t", toolCallId: "call-1", toolName: "read", content: "x", isError: false }

/** The tag and code an effect fails with, or "ok". */
const outcome = <A>(effect: Effect.Effect<A, SessionError, Scope.Scope>) =>
  Effect.scoped(Effect.match(effect, { onFailure: (e) => `${e._tag} ${e.code}`, onSuccess: () => "ok" }))

describe("the error classes", () => {
  it("every code has a class, and the factory builds an error of that class with the code's message", () => {
    const counts: Record<string, number> = {}
    for (const code of SessionErrorCode.literals) {
      const error = sessionError(code, "why", { line: 3, path: "/p" })
      expect(isSessionError(error)).toBe(true)
      expect(error._tag).toBe(classOf(code))
      expect(error).toBeInstanceOf(Error)
      expect(error.message).toBe(`${code}: why (line 3)`)
      expect(error.path).toBe("/p")
      counts[error._tag] = (counts[error._tag] ?? 0) + 1
    }
    // Each of the five parties has at least one code of its own.
    expect(Object.keys(counts).sort()).toEqual(["ConflictError", "CorruptError", "InputError", "IoError", "LockedError"])
    expect(classOf("SESSION_REPLACED")).toBe("ConflictError")
    expect(classOf("SESSION_BUSY")).toBe("ConflictError")
    expect(classOf("SESSION_IO")).toBe("IoError")
    expect(classOf("SESSION_ROLLBACK_FAILED")).toBe("LockedError")
    expect(classOf("SESSION_INVALID_JSON")).toBe("CorruptError")
    expect(classOf("SESSION_UNKNOWN_ENTRY")).toBe("InputError")
  })

  it("asInput keeps code, reason, line and cause, and only the class changes", () => {
    const cause = new Error("inner")
    const corrupt = sessionError("SESSION_TOOL_LINK", "no call", { line: 2, cause })
    const input = asInput(corrupt)
    expect(corrupt).toBeInstanceOf(CorruptError)
    expect(input).toBeInstanceOf(InputError)
    expect([input.code, input.reason, input.line, input.cause]).toEqual(["SESSION_TOOL_LINK", "no call", 2, cause])
    expect(asInput(input)).toBe(input)
  })

  it("is not mistaken for something else, and round-trips through its Schema", () => {
    expect(isSessionError(new Error("SESSION_IO: x"))).toBe(false)
    expect(isSessionError({ _tag: "IoError", code: "SESSION_IO" })).toBe(false)
    const error = sessionError("SESSION_BUSY", "another writer")
    const encoded = Schema.encodeSync(SessionError)(error)
    const decoded = Schema.decodeUnknownSync(SessionError)(encoded)
    expect(decoded._tag).toBe("ConflictError")
    expect(decoded.code).toBe("SESSION_BUSY")
    expect(isSessionError(decoded)).toBe(true)
  })
})

describe("who must act, through the store", () => {
  it.effect("one code, two parties: a broken tool link is corrupt data on a load and the caller's input on an append", () =>
    Effect.gen(function*() {
      const { layer, storage } = makeProbed()
      storage.set("bad", [HEADER, entry("e1", null, user("m1")), entry("e2", "e1", answer)])
      storage.set("good", [HEADER, entry("e1", null, user("m1"))])
      const run = <A>(effect: Effect.Effect<A, SessionError, Scope.Scope | SessionJournal | Ids.Ids>) =>
        outcome(Effect.provide(effect, layer))
      expect(yield* run(SessionStore.load("bad"))).toBe("CorruptError SESSION_TOOL_LINK")
      expect(yield* run(Effect.flatMap(SessionStore.load("good"), (store) => store.append("e1", answer))))
        .toBe("InputError SESSION_TOOL_LINK")
      expect(yield* run(Effect.flatMap(SessionStore.load("good"), (store) => store.append("e1", { role: "user" } as never))))
        .toBe("InputError SESSION_INVALID_MESSAGE")
      expect(yield* run(Effect.flatMap(SessionStore.load("good"), (store) => store.append("nope", user("m2")))))
        .toBe("InputError SESSION_UNKNOWN_PARENT")
      expect(yield* run(SessionStore.create("good"))).toBe("ConflictError SESSION_EXISTS")
      expect(yield* run(SessionStore.load("absent"))).toBe("InputError SESSION_NOT_FOUND")
    }))

  it.effect("catchTag picks exactly the failures of one party", () =>
    Effect.gen(function*() {
      const { layer, storage } = makeProbed()
      storage.set("good", [HEADER, entry("e1", null, user("m1"))])
      const handled = yield* Effect.scoped(
        Effect.gen(function*() {
          const store = yield* SessionStore.load("good")
          const tree = yield* SessionTree.make(store)
          // moveTo fails with InputError only: its signature says so, and catchTag removes it from the channel.
          const moved: Effect.Effect<string> = tree.moveTo("nope").pipe(
            Effect.as("moved"),
            Effect.catchTag("InputError", (e) => Effect.succeed(`caller: ${e.code}`))
          )
          const input = yield* moved
          const conflict = yield* store.append("e1", answer).pipe(
            Effect.as("appended"),
            Effect.catchTag("ConflictError", () => Effect.succeed("conflict")),
            Effect.catchTag("InputError", (e) => Effect.succeed(`caller: ${e.code}`))
          )
          return [input, conflict]
        }).pipe(Effect.provide(layer))
      )
      expect(handled).toEqual(["caller: SESSION_UNKNOWN_ENTRY", "caller: SESSION_TOOL_LINK"])
    }))

  it.effect("a writer that lost a race is a ConflictError, a closed store an IoError, an unproven rollback a LockedError", () =>
    Effect.gen(function*() {
      const { layer, probe, storage } = makeProbed()
      storage.set("s", [HEADER, entry("e1", null, user("m1"))])
      const results = yield* Effect.gen(function*() {
        const first = yield* SessionStore.load("s")
        const second = yield* SessionStore.load("s")
        yield* first.append("e1", user("m2"))
        const raced = yield* outcome(second.append("e1", user("m3")))
        probe.failNext(sessionError("SESSION_ROLLBACK_FAILED", "unproven"))
        const locked = yield* outcome(first.append("e1", user("m4")))
        const stillLocked = yield* outcome(first.append("e1", user("m5")))
        const scope = yield* Scope.make()
        const third = yield* Scope.extend(SessionStore.load("s"), scope)
        yield* Scope.close(scope, Exit.void)
        const closed = yield* outcome(third.append("e1", user("m6")))
        return [raced, locked, stillLocked, closed]
      }).pipe(Effect.scoped, Effect.provide(layer))
      expect(results).toEqual([
        "ConflictError SESSION_REPLACED",
        "LockedError SESSION_ROLLBACK_FAILED",
        "LockedError SESSION_ROLLBACK_FAILED",
        "IoError SESSION_IO"
      ])
    }))

  it.effect("catchCode recovers the codes it names, whatever their class, and passes every other failure through", () =>
    Effect.gen(function*() {
      const fail = (code: "SESSION_BUSY" | "SESSION_REPLACED") =>
        Effect.fail(sessionError(code, code === "SESSION_BUSY" ? "a commit in flight" : "changed")) as Effect.Effect<string, ConflictError | InputError>
      const busyOnly = (effect: Effect.Effect<string, ConflictError | InputError>) =>
        effect.pipe(catchCode("SESSION_BUSY", (e) => Effect.succeed(`caught ${e.code} (${e._tag})`)))
      expect(yield* busyOnly(fail("SESSION_BUSY"))).toBe("caught SESSION_BUSY (ConflictError)")
      // Same class, another code: not caught.
      const replaced = yield* Effect.flip(busyOnly(fail("SESSION_REPLACED")))
      expect([replaced._tag, replaced.code]).toEqual(["ConflictError", "SESSION_REPLACED"])
      // Several codes at once; a code raised as another class (an append's input) is caught by its code too.
      const input = Effect.fail(asInput(sessionError("SESSION_INVALID_MESSAGE", "bad"))) as Effect.Effect<string, ConflictError | InputError>
      const either = (effect: Effect.Effect<string, ConflictError | InputError>) =>
        catchCode(effect, ["SESSION_REPLACED", "SESSION_INVALID_MESSAGE"], (e) => Effect.succeed(`${e.code} ${e._tag}`))
      expect(yield* either(fail("SESSION_REPLACED"))).toBe("SESSION_REPLACED ConflictError")
      expect(yield* either(input)).toBe("SESSION_INVALID_MESSAGE InputError")
      expect((yield* Effect.flip(either(fail("SESSION_BUSY")))).code).toBe("SESSION_BUSY")
      // A failure that is not the library's passes through as it is; success is untouched.
      const foreign = Effect.fail("not ours") as Effect.Effect<string, string | ConflictError>
      expect(yield* Effect.flip(foreign.pipe(catchCode("SESSION_BUSY", () => Effect.succeed("no"))))).toBe("not ours")
      const fine = Effect.succeed("fine") as Effect.Effect<string, ConflictError>
      expect(yield* fine.pipe(catchCode("SESSION_BUSY", () => Effect.succeed("no")))).toBe("fine")
    }))
})

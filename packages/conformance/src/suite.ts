/**
 * The conformance suite: the same cases against every backend, in the
 * style of Effect's `PersistedQueue.test.ts`. Each case runs the store and the
 * tree through the backend's `SessionJournal` only; what is stored is put and
 * read back through the backend's `Kit`, so a rule holds on every backend or
 * the case fails there.
 */
import { expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { MAX_ENTRIES, MAX_FILE_BYTES, MAX_LINE_BYTES } from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import { type Entry, type Message, messageOf, textOf } from "@session-tree/core/Record"
import { type SessionError, type SessionErrorCode, sessionError } from "@session-tree/core/SessionError"
import { SessionJournal, type SessionJournalService, type Writer } from "@session-tree/core/SessionJournal"
import { SessionCatalog, type SessionCatalogService } from "@session-tree/core/SessionCatalog"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import type * as Scope from "effect/Scope"
import { type Backend, Kit } from "./Kit.js"

/** The cases of this suite are version 1 (the course format); version 2 has its own suite. */
const V1 = { version: 1 } as const

const T = "1970-01-01T00:00:00.000Z"
const user = (id: string, content: string): Message => ({ role: "user", id, content })
const assistant = (id: string, calls: ReadonlyArray<readonly [string, string]> = []): Message => ({
  role: "assistant",
  id,
  content: "",
  toolCalls: calls.map(([callId, name]) => ({ id: callId, name, arguments: { q: callId } }))
})
const tool = (id: string, callId: string, name: string): Message => ({
  role: "tool",
  id,
  toolCallId: callId,
  toolName: name,
  content: "done",
  isError: false
})

// Lines written out by hand in the canonical key order (`docs/format.md`, "Records"), so no case trusts the encoder it checks.
const headerLine = (id = "s") => `{"type":"session","version":1,"id":"${id}","timestamp":"${T}"}`
const entryLine = (id: string, parentId: string | null, message: string) =>
  `{"type":"entry","version":1,"id":"${id}","parentId":${parentId === null ? "null" : `"${parentId}"`},"timestamp":"${T}","message":${message}}`
const userMessage = (id: string, content = "hi") => `{"role":"user","id":"${id}","content":"${content}"}`
const callMessage = (id: string, callId: string, name: string) =>
  `{"role":"assistant","id":"${id}","content":"","toolCalls":[{"id":"${callId}","name":"${name}","arguments":{}}]}`
const resultMessage = (id: string, callId: string, name: string) =>
  `{"role":"tool","id":"${id}","toolCallId":"${callId}","toolName":"${name}","content":"ok","isError":false}`

const codeOf = <A>(result: Either.Either<A, SessionError>): SessionErrorCode | "ok" =>
  Either.isLeft(result) ? result.left.code : "ok"

/** Stored lines of a chain of `n` user entries `e1`…`en`, each `content` long. */
const chain = (n: number, content = "x"): Array<string> => {
  const lines = [headerLine()]
  for (let i = 1; i <= n; i++) lines.push(entryLine(`e${i}`, i === 1 ? null : `e${i - 1}`, userMessage(`m${i}`, content)))
  return lines
}

/** Sessions the loader must refuse, with the code and line it names: every load-path code a backend can hold. */
const refused: ReadonlyArray<{ readonly name: string; readonly lines: () => ReadonlyArray<string>; readonly code: SessionErrorCode; readonly line: number | undefined }> = [
  { name: "a line that is not JSON", lines: () => [headerLine(), "not-json"], code: "SESSION_INVALID_JSON", line: 2 },
  { name: "a JSON array, not an object", lines: () => [headerLine(), "[1,2]"], code: "SESSION_INVALID_JSON", line: 2 },
  { name: "two objects on one line", lines: () => [headerLine(), `${entryLine("e1", null, userMessage("m1"))}{}`], code: "SESSION_INVALID_JSON", line: 2 },
  { name: "an empty line in the middle", lines: () => [headerLine(), "", entryLine("e1", null, userMessage("m1"))], code: "SESSION_INVALID_JSON", line: 2 },
  {
    name: "a duplicate key",
    lines: () => [headerLine(), entryLine("e1", null, `{"role":"user","id":"m1","id":"m2","content":""}`)],
    code: "SESSION_INVALID_JSON",
    line: 2
  },
  {
    name: "a __proto__ key",
    lines: () => [headerLine(), entryLine("e1", null, `{"role":"assistant","id":"m1","content":"","toolCalls":[{"id":"c","name":"n","arguments":{"__proto__":{"x":1}}}]}`)],
    code: "SESSION_INVALID_JSON",
    line: 2
  },
  { name: "no header", lines: () => [], code: "SESSION_INVALID_HEADER", line: 1 },
  { name: "an entry where the header belongs", lines: () => [entryLine("e1", null, userMessage("m1"))], code: "SESSION_INVALID_HEADER", line: 1 },
  { name: "a second header", lines: () => [headerLine(), headerLine()], code: "SESSION_INVALID_HEADER", line: 2 },
  { name: "a header with an extra field", lines: () => [headerLine().replace("}", `,"x":1}`)], code: "SESSION_INVALID_HEADER", line: 1 },
  { name: "a header of version 3", lines: () => [headerLine().replace(`"version":1`, `"version":3`)], code: "SESSION_UNSUPPORTED_VERSION", line: 1 },
  {
    name: "a header of version 2 over an entry of version 1",
    lines: () => [headerLine().replace(`"version":1`, `"version":2`), entryLine("e1", null, userMessage("m1"))],
    code: "SESSION_UNSUPPORTED_VERSION",
    line: 2
  },
  {
    name: "an entry of version 2",
    lines: () => [headerLine(), entryLine("e1", null, userMessage("m1")).replace(`"version":1`, `"version":2`)],
    code: "SESSION_UNSUPPORTED_VERSION",
    line: 2
  },
  {
    name: "an entry with an extra field",
    lines: () => [headerLine(), entryLine("e1", null, userMessage("m1")).replace(`"type":"entry",`, `"type":"entry","extra":true,`)],
    code: "SESSION_INVALID_RECORD",
    line: 2
  },
  {
    name: "an entry without a timestamp",
    lines: () => [headerLine(), entryLine("e1", null, userMessage("m1")).replace(`"timestamp":"${T}",`, "")],
    code: "SESSION_INVALID_RECORD",
    line: 2
  },
  {
    name: "a timestamp toISOString never writes",
    lines: () => [headerLine(), entryLine("e1", null, userMessage("m1")).replace(T, "1970-01-01T00:00:00Z")],
    code: "SESSION_INVALID_RECORD",
    line: 2
  },
  {
    name: "a duplicate entry ID",
    lines: () => [headerLine(), entryLine("e1", null, userMessage("m1")), entryLine("e1", null, userMessage("m2"))],
    code: "SESSION_DUPLICATE_ID",
    line: 3
  },
  { name: "a parent that does not exist", lines: () => [headerLine(), entryLine("e1", "nope", userMessage("m1"))], code: "SESSION_UNKNOWN_PARENT", line: 2 },
  {
    name: "a parent that comes later",
    lines: () => [headerLine(), entryLine("e1", "e2", userMessage("m1")), entryLine("e2", null, userMessage("m2"))],
    code: "SESSION_UNKNOWN_PARENT",
    line: 2
  },
  { name: "a message of an unknown role", lines: () => [headerLine(), entryLine("e1", null, `{"role":"system","id":"m1","content":""}`)], code: "SESSION_INVALID_MESSAGE", line: 2 },
  { name: "a message with an extra field", lines: () => [headerLine(), entryLine("e1", null, `{"role":"user","id":"m1","content":"","x":1}`)], code: "SESSION_INVALID_MESSAGE", line: 2 },
  {
    name: "a number JSON cannot write back",
    lines: () => [headerLine(), entryLine("e1", null, `{"role":"assistant","id":"m1","content":"","toolCalls":[{"id":"c","name":"n","arguments":{"big":1e400}}]}`)],
    code: "SESSION_INVALID_MESSAGE",
    line: 2
  },
  {
    name: "a tool result whose call no ancestor makes",
    lines: () => [headerLine(), entryLine("e1", null, callMessage("m1", "c1", "read")), entryLine("e2", null, resultMessage("m2", "c1", "read"))],
    code: "SESSION_TOOL_LINK",
    line: 3
  },
  {
    name: "a call answered twice on one branch",
    lines: () => [
      headerLine(),
      entryLine("e1", null, callMessage("m1", "c1", "read")),
      entryLine("e2", "e1", resultMessage("m2", "c1", "read")),
      entryLine("e3", "e2", resultMessage("m3", "c1", "read"))
    ],
    code: "SESSION_TOOL_LINK",
    line: 4
  },
  {
    name: "a line of 65,537 bytes",
    lines: () => [headerLine(), entryLine("e1", null, userMessage("m1", "")).replace(`"content":""`, `"content":"${"x".repeat(65_537)}"`)],
    code: "SESSION_LINE_TOO_LONG",
    line: 2
  },
  { name: "a session of more than 4 MiB", lines: () => chain(70, "y".repeat(60_000)), code: "SESSION_FILE_TOO_LARGE", line: undefined },
  { name: "4,097 entries", lines: () => chain(MAX_ENTRIES + 1), code: "SESSION_TOO_MANY_ENTRIES", line: MAX_ENTRIES + 2 }
]

/** Sessions written by something else that the loader must accept as they are. */
const accepted: ReadonlyArray<{ readonly name: string; readonly lines: () => ReadonlyArray<string>; readonly entries: number }> = [
  { name: "the header only", lines: () => [headerLine()], entries: 0 },
  { name: "keys in another order", lines: () => [`{"version":1,"type":"session","timestamp":"${T}","id":"s"}`, `{"message":${userMessage("m1")},"parentId":null,"id":"e1","timestamp":"${T}","version":1,"type":"entry"}`], entries: 1 },
  { name: "whitespace and escapes a rewrite spells differently", lines: () => [headerLine(), ` { "type" : "entry","version":1,"id":"e\\u0031","parentId":null,"timestamp":"${T}","message":{"role":"user","id":"m1","content":"caf\\u00e9 1.0"}} `], entries: 1 },
  { name: "a line of exactly 65,536 bytes", lines: () => { const l = entryLine("e1", null, userMessage("m1", "")); return [headerLine(), l.replace(`"content":""`, `"content":"${"x".repeat(65_536 - l.length)}"`)] }, entries: 1 },
  { name: "4,096 entries", lines: () => chain(MAX_ENTRIES), entries: MAX_ENTRIES },
  { name: "several roots and branches", lines: () => [headerLine(), entryLine("e1", null, userMessage("m1")), entryLine("e2", null, userMessage("m2")), entryLine("e3", "e1", userMessage("m3"))], entries: 3 }
]

/** Wraps a journal so that every batch a writer commits is counted. */
const counting = (journal: SessionJournalService, batches: { count: number }): SessionJournalService => {
  const wrap = (writer: Writer): Writer => ({
    append: (batch) => Effect.zipRight(Effect.sync(() => batch.lines.length > 0 && batches.count++), writer.append(batch))
  })
  return {
    ...journal,
    create: (location, session) => Effect.map(journal.create(location, session), (c) => ({ ...c, writer: wrap(c.writer) })),
    hold: (location) => Effect.map(journal.hold(location), (o) => ({ ...o, writer: wrap(o.writer) }))
  }
}

const fresh = Layer.fresh(Ids.layerDeterministic)

/** The header ID of a session at `location`: the location itself on a backend that names sessions by ID, else "s". */
const idAt = (journal: SessionJournalService, location: string) => (journal.locations === "sessionId" ? location : "s")
/** `lines` with the header's ID "s" replaced by the one a session at `location` must carry. */
const own = (journal: SessionJournalService, location: string, lines: ReadonlyArray<string>): ReadonlyArray<string> =>
  lines.map((line, i) => (i === 0 ? line.replace(`"id":"s"`, `"id":${JSON.stringify(idAt(journal, location))}`) : line))

/** Registers every case against `backend`; `cases` holds how many once collected, `passed` how many ran to their end. */
export const conformance = (backend: Backend): { readonly cases: number; readonly passed: number } => {
  const registered = { cases: 0, passed: 0 }
  it.layer(backend.layer, { timeout: "120 seconds" })(`SessionJournal conformance: ${backend.name}`, (it) => {
    const test = (name: string, body: () => Effect.Effect<void, unknown, SessionJournal | SessionCatalog | Kit | Ids.Ids | Scope.Scope>) => {
      registered.cases++
      it.scoped(name, () => Effect.tap(Effect.provide(body(), fresh), () => Effect.sync(() => registered.passed++)))
    }

    test("create writes one header, and refuses a location that is taken, changing nothing", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const location = kit.location("create")
        const id = journal.locations === "sessionId" ? location : "chat-1"
        const store = yield* SessionStore.create(location, { id, version: 1 })
        expect(store.header).toEqual({ type: "session", version: 1, id, timestamp: T })
        expect(Object.isFrozen(store.header)).toBe(true)
        expect(yield* kit.raw(location)).toEqual([headerLine(id)])
        expect(codeOf(yield* Effect.either(SessionStore.create(location, { id: journal.locations === "sessionId" ? location : "chat-2", version: 1 })))).toBe("SESSION_EXISTS")
        expect(yield* kit.raw(location)).toEqual([headerLine(id)])
      }))

    test("a location with nothing stored is SESSION_NOT_FOUND for read and load; open creates it", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("missing")
        expect(codeOf(yield* Effect.either(SessionStore.read(location)))).toBe("SESSION_NOT_FOUND")
        expect(codeOf(yield* Effect.either(SessionStore.load(location)))).toBe("SESSION_NOT_FOUND")
        expect(yield* kit.raw(location)).toBeUndefined()
        const opened = yield* SessionStore.open(location, { version: 1 })
        expect(opened.entries).toEqual([])
        expect(yield* kit.raw(location)).toHaveLength(1)
      }))

    test("appends store the canonical line of each entry, in commit order, and reload to equal, frozen entries", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("append")
        const journal = yield* SessionJournal
        const store = yield* SessionStore.create(location, { id: idAt(journal, location), version: 1 })
        const root = yield* store.append(null, user("m1", "root ✓"))
        const call = yield* store.append(root.id, assistant("m2", [["c1", "read"]]))
        const result = yield* store.append(call.id, tool("m3", "c1", "read"))
        expect(store.entries).toEqual([root, call, result])
        expect(store.entries[2]).toBe(result)
        expect(store.get(call.id)).toBe(call)
        expect(Object.isFrozen(store.entries) && Object.isFrozen(messageOf(result))).toBe(true)
        expect(yield* kit.raw(location)).toEqual([
          headerLine(idAt(journal, location)),
          entryLine("entry-001", null, userMessage("m1", "root ✓")),
          entryLine("entry-002", "entry-001", `{"role":"assistant","id":"m2","content":"","toolCalls":[{"id":"c1","name":"read","arguments":{"q":"c1"}}]}`),
          entryLine("entry-003", "entry-002", `{"role":"tool","id":"m3","toolCallId":"c1","toolName":"read","content":"done","isError":false}`)
        ])
        const loaded = yield* SessionStore.read(location)
        expect(loaded.entries).toEqual(store.entries)
        expect(loaded.tail).toBe("none")
        const again = yield* SessionStore.load(location)
        expect(again.entries).toEqual(store.entries)
      }))

    test("an append the history refuses stores nothing, and leaves memory and the next ID as they were", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("refused")
        const store = yield* SessionStore.create(location, V1)
        const root = yield* store.append(null, assistant("m1", [["c1", "read"]]))
        const before = yield* kit.raw(location)
        const entries = store.entries
        const attempts: ReadonlyArray<readonly [string | null, unknown, SessionErrorCode]> = [
          ["nope", user("m2", "x"), "SESSION_UNKNOWN_PARENT"],
          [null, tool("m2", "c1", "read"), "SESSION_TOOL_LINK"],
          [root.id, tool("m2", "c1", "write"), "SESSION_TOOL_LINK"],
          [root.id, assistant("m2", [["c1", "read"]]), "SESSION_TOOL_LINK"],
          [root.id, { role: "user", id: "m2" }, "SESSION_INVALID_MESSAGE"],
          [root.id, { role: "user", id: "m2", content: "x", extra: 1 }, "SESSION_INVALID_MESSAGE"],
          [root.id, user("m2", "x".repeat(MAX_LINE_BYTES)), "SESSION_LINE_TOO_LONG"]
        ]
        for (const [parent, message, code] of attempts) {
          expect([code, codeOf(yield* Effect.either(store.append(parent, message)))]).toEqual([code, code])
        }
        expect(yield* kit.raw(location)).toEqual(before)
        expect(store.entries).toBe(entries)
        const next = yield* store.append(root.id, tool("m2", "c1", "read"))
        expect(next.id).toBe("entry-002")
      }))

    test("appends started together share one commit, each resolving with its durable entry", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const batches = { count: 0 }
        const location = kit.location("group")
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.create(location, V1)
          const root = yield* store.append(null, user("root", "root"))
          batches.count = 0
          const results = yield* Effect.all(
            Array.from({ length: 50 }, (_, i) => store.append(root.id, user(`m${i}`, `message ${i}`))),
            { concurrency: "unbounded" }
          )
          expect(batches.count).toBe(1)
          expect(store.entries.slice(1)).toEqual(results)
        }).pipe(Effect.provideService(SessionJournal, counting(journal, batches)))
        expect((yield* SessionStore.read(location)).entries).toHaveLength(51)
      }))

    test("a batch is checked in order against the history it grows, so later appends may depend on earlier ones", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const store = yield* SessionStore.create(kit.location("ordered"), V1)
        const root = yield* store.append(null, user("root", "root"))
        const [call, answer, twice] = yield* Effect.all([
          store.append(root.id, assistant("m1", [["c1", "read"]])),
          Effect.suspend(() => store.append("entry-002", tool("m2", "c1", "read"))),
          Effect.either(Effect.suspend(() => store.append("entry-003", tool("m3", "c1", "read"))))
        ], { concurrency: "unbounded" })
        expect([call.id, answer.id, codeOf(twice)]).toEqual(["entry-002", "entry-003", "SESSION_TOOL_LINK"])
        expect((yield* SessionStore.read(store.location)).entries.map((e) => e.id)).toEqual(["entry-001", "entry-002", "entry-003"])
      }))

    test("many fibers appending to one store lose nothing", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const store = yield* SessionStore.create(kit.location("concurrent"), V1)
        const root = yield* store.append(null, user("root", "root"))
        yield* Effect.all(
          Array.from({ length: 8 }, (_, w) =>
            Effect.forEach(Array.from({ length: 10 }, (_, i) => i), (i) => store.append(root.id, user(`w${w}-${i}`, "x")), { discard: true })),
          { concurrency: "unbounded", discard: true }
        )
        const loaded = yield* SessionStore.read(store.location)
        expect(loaded.entries).toHaveLength(81)
        expect(new Set(loaded.entries.map((e) => messageOf(e)!.id)).size).toBe(81)
      }))

    test("the writer that lost a race fails typed, keeps its memory, and appends again after a reload", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("race")
        const first = yield* SessionStore.create(location, V1)
        const root = yield* first.append(null, user("m1", "root"))
        const second = yield* SessionStore.load(location)
        const won = yield* second.append(root.id, user("m2", "won"))
        const entries = first.entries
        const lost = yield* Effect.either(first.append(root.id, user("m3", "lost")))
        expect(["SESSION_REPLACED", "SESSION_BUSY"]).toContain(codeOf(lost))
        expect(first.entries).toBe(entries)
        expect((yield* SessionStore.read(location)).entries).toEqual([root, won])
        const again = yield* SessionStore.load(location)
        const retried = yield* again.append(root.id, user("m3", "retried"))
        expect((yield* SessionStore.read(location)).entries).toEqual([root, won, retried])
      }))

    test("memory changes only once the commit has succeeded", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const reached = yield* Deferred.make<void>()
        const gate = yield* Deferred.make<void>()
        const hold = Effect.zipRight(Deferred.succeed(reached, undefined), Deferred.await(gate))
        const held: SessionJournalService = {
          ...journal,
          create: (location, session) =>
            Effect.map(journal.create(location, session), (c) => ({
              ...c,
              writer: { append: (batch) => Effect.zipRight(batch.lines.length > 0 ? hold : Effect.void, c.writer.append(batch)) }
            }))
        }
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.create(kit.location("inflight"), V1)
          const pending = yield* Effect.fork(store.append(null, user("m1", "pending")))
          yield* Deferred.await(reached)
          expect(store.entries).toEqual([])
          expect(store.get("entry-001")).toBeUndefined()
          yield* Deferred.succeed(gate, undefined)
          const entry = yield* Fiber.join(pending)
          expect(store.entries).toEqual([entry])
        }).pipe(Effect.provideService(SessionJournal, held))
      }))

    test("the store hands its writer one batch at a time, flushes included", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const seen = { inFlight: 0, most: 0, calls: 0 }
        // Every batch takes a few milliseconds of real time, so any overlap would show.
        const slow = (writer: Writer): Writer => ({
          append: (batch) =>
            Effect.suspend(() => {
              seen.calls++
              seen.most = Math.max(seen.most, ++seen.inFlight)
              return Effect.ensuring(
                Effect.zipRight(Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5))), writer.append(batch)),
                Effect.sync(() => seen.inFlight--)
              )
            })
        })
        const slowJournal: SessionJournalService = {
          ...journal,
          create: (location, session) => Effect.map(journal.create(location, session), (c) => ({ ...c, writer: slow(c.writer) })),
          hold: (location) => Effect.map(journal.hold(location), (o) => ({ ...o, writer: slow(o.writer) }))
        }
        const location = kit.location("one-at-a-time")
        yield* Effect.gen(function*() {
          const store = yield* SessionStore.create(location, V1)
          const root = yield* store.append(null, user("m0", "root"))
          yield* Effect.all(
            [store.append(root.id, user("m1", "a")), store.flush, store.append(root.id, user("m2", "b")), store.flush, store.flush],
            { concurrency: "unbounded" }
          )
        }).pipe(Effect.provideService(SessionJournal, slowJournal))
        expect(seen.calls).toBeGreaterThanOrEqual(3)
        expect(seen.most).toBe(1)
        expect((yield* SessionStore.read(location)).entries.map((e) => messageOf(e)!.id)).toEqual(["m0", "m1", "m2"])
      }))

    test("an append whose session would pass 4 MiB, or a 4,097th entry, stores nothing", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const full = kit.location("full")
        yield* kit.put(full, own(journal, full, chain(MAX_ENTRIES)))
        const store = yield* SessionStore.load(full)
        expect(codeOf(yield* Effect.either(store.append("e1", user("n", "one more"))))).toBe("SESSION_TOO_MANY_ENTRIES")
        expect(yield* kit.raw(full)).toEqual(own(journal, full, chain(MAX_ENTRIES)))

        const large = kit.location("large")
        const lines = own(journal, large, chain(69, "y".repeat(60_000)))
        const size = lines.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)
        yield* kit.put(large, lines)
        const big = yield* SessionStore.load(large)
        const room = MAX_FILE_BYTES - size
        // The canonical line of an entry with `n` bytes of content, parent e69, and its newline.
        const lineFor = (n: number) => Buffer.byteLength(entryLine("entry-001", "e69", userMessage("m", "z".repeat(n)))) + 1
        const fits = room - lineFor(0)
        expect(codeOf(yield* Effect.either(big.append("e69", user("m", "z".repeat(fits + 1)))))).toBe("SESSION_FILE_TOO_LARGE")
        expect(yield* kit.raw(large)).toEqual(lines)
        yield* big.append("e69", user("m", "z".repeat(fits)))
        expect((yield* kit.raw(large))!.reduce((sum, line) => sum + Buffer.byteLength(line) + 1, 0)).toBe(MAX_FILE_BYTES)
      }))

    for (const c of refused) {
      test(`load refuses ${c.name}: ${c.code}, and changes nothing stored`, () =>
        Effect.gen(function*() {
          const kit = yield* Kit
          const location = kit.location("refused")
          const lines = c.lines()
          yield* kit.put(location, lines)
          const outcomes = [
            Either.map(yield* Effect.either(SessionStore.read(location)), () => "loaded"),
            Either.map(yield* Effect.either(SessionStore.load(location)), () => "loaded")
          ]
          for (const loaded of outcomes) {
            expect(Either.isLeft(loaded) ? [loaded.left.code, loaded.left.line] : "loaded").toEqual([c.code, c.line])
          }
          expect(yield* kit.raw(location)).toEqual(lines)
        }))
    }

    for (const c of accepted) {
      test(`load accepts ${c.name}, and the next append stores the canonical lines`, () =>
        Effect.gen(function*() {
          const kit = yield* Kit
          const location = kit.location("accepted")
          const lines = own(yield* SessionJournal, location, c.lines())
          yield* kit.put(location, lines)
          const loaded = yield* SessionStore.read(location)
          expect(loaded.entries).toHaveLength(c.entries)
          expect(yield* kit.raw(location)).toEqual(lines)
          if (c.entries >= MAX_ENTRIES) return
          const store = yield* SessionStore.load(location)
          const entry = yield* store.append(null, user("new", "new"))
          const canonical = [loaded.header, ...loaded.entries, entry].map((record) => JSON.stringify(record))
          const stored = yield* kit.raw(location)
          // An append-only backend keeps the lines it holds as they are; a file is rewritten whole.
          expect([canonical, [...lines, canonical.at(-1)]]).toContainEqual(stored)
          expect((yield* SessionStore.read(location)).entries).toEqual([...loaded.entries, entry])
        }))
    }

    test("flush on a session that holds its canonical lines stores nothing new", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const store = yield* SessionStore.create(kit.location("flush"), V1)
        yield* store.append(null, user("m1", "one"))
        const before = yield* kit.raw(store.location)
        yield* store.flush
        expect(yield* kit.raw(store.location)).toEqual(before)
      }))

    test("a store whose scope has closed refuses to append or flush with SESSION_IO, storing nothing", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("closed")
        const store = yield* Effect.scoped(SessionStore.create(location, V1))
        const before = yield* kit.raw(location)
        expect(codeOf(yield* Effect.either(store.append(null, user("late", "late"))))).toBe("SESSION_IO")
        expect(codeOf(yield* Effect.either(store.flush))).toBe("SESSION_IO")
        expect(yield* kit.raw(location)).toEqual(before)
      }))

    test("the tree: the leaf after a load, branches by moveTo, frozen projections, every branch kept", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const location = kit.location("tree")
        const store = yield* SessionStore.create(location, V1)
        const tree = yield* SessionTree.make(store)
        expect(tree.activeLeafId).toBeNull()
        const root = yield* tree.append(user("m1", "root"))
        const oldLeaf = yield* tree.append(user("m2", "old branch"))
        const stored = yield* kit.raw(location)
        yield* tree.moveTo(root.id)
        expect(yield* kit.raw(location)).toEqual(stored)
        const newLeaf = yield* tree.append(user("m3", "new branch"))
        expect(newLeaf.parentId).toBe(root.id)
        expect(tree.activeMessages.map((m) => m.role === "user" && m.content)).toEqual(["root", "new branch"])
        expect(Object.isFrozen(tree.activeEntries)).toBe(true)
        expect(tree.children(root.id)).toEqual([oldLeaf, newLeaf])
        expect(tree.leaves).toEqual([oldLeaf, newLeaf])
        expect(codeOf(yield* Effect.either(tree.moveTo("nope")))).toBe("SESSION_UNKNOWN_ENTRY")
        yield* tree.moveTo(null)
        const second = yield* tree.append(user("m4", "second root"))
        expect(second.parentId).toBeNull()
        const reloaded = yield* SessionTree.make(yield* SessionStore.load(location))
        expect(reloaded.activeLeafId).toBe(second.id)
        expect(reloaded.entries).toEqual([root, oldLeaf, newLeaf, second])
        expect(reloaded.pathTo(newLeaf.id)).toEqual([root, newLeaf])
      }))

    test("content with quotes, backslashes, NUL, line separators and astral characters is stored and read back exactly", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        // On a backend that names sessions by ID, this is the session's ID too.
        const store = yield* SessionStore.create(kit.location(`it's "quoted" \\ ; DROP TABLE x; --`), V1)
        const texts = ["'\"\\", "a\u0000b", "\u2028\u2029", "😀 naïve", "$1 $$ %s ${x}", "x".repeat(60_000)]
        const entries: Array<Entry> = []
        for (const text of texts) entries.push(yield* store.append(null, user(text.slice(0, 10), text)))
        const loaded = yield* SessionStore.read(store.location)
        expect([loaded.location, loaded.header]).toEqual([store.location, store.header])
        expect(loaded.entries).toEqual(entries)
        expect(loaded.entries.map((e) => textOf(messageOf(e)!))).toEqual(texts)
      }))

    /** The listing restricted to `locations` (a database lists other tests' sessions too), in listing order. */
    const listed = (service: Sessions.SessionsService, locations: ReadonlyArray<string>, directory: string | undefined) =>
      Effect.map(service.list({ directory }), (listing) => listing.sessions.filter((s) => locations.includes(s.location)))

    test("list: every session with its fields, newest change first, a corrupt one listed with its error", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const service = yield* Sessions.make
        const [a, b, c, bad] = ["a", "b", "c", "bad"].map((n) => kit.location(`list-${n}`))
        const first = yield* SessionStore.create(a!, V1)
        yield* first.append(null, { role: "assistant", id: "m0", content: "no user yet", toolCalls: [] })
        const title = "é".repeat(79) + "😀" + "tail that is cut"
        yield* first.append(null, user("m1", title))
        yield* Effect.scoped(SessionStore.create(b!, V1))
        yield* kit.put(bad!, [headerLine(), "not-json"])
        const third = yield* SessionStore.create(c!, V1)
        const leaf = yield* third.append(null, user("m2", "hello"))
        const sessions = yield* listed(service, [a!, b!, c!, bad!], kit.directory)
        expect(sessions.map((s) => s.location).sort()).toEqual([a, b, c, bad].sort())
        const byLocation = new Map(sessions.map((s) => [s.location, s]))
        expect(byLocation.get(a!)).toEqual({
          id: first.header.id,
          location: a,
          entries: 2,
          leaf: first.entries[1]!.id,
          created: first.header.timestamp,
          updated: expect.any(String),
          title: "é".repeat(79) + "😀"
        })
        // `updated` is the last commit as the backend keeps it: not before the creation nor the newest entry, not after the listing.
        for (const s of sessions) {
          if (Sessions.isUnreadable(s)) continue
          expect(Date.parse(s.updated)).toBeGreaterThanOrEqual(Date.parse(s.created))
          expect(Date.parse(s.updated)).toBeLessThanOrEqual(Date.now())
        }
        expect(Date.parse((byLocation.get(a!) as Sessions.Summary).updated)).toBeGreaterThanOrEqual(Date.parse(first.entries[1]!.timestamp))
        expect(byLocation.get(b!)).toMatchObject({ entries: 0, leaf: null, title: "" })
        expect(byLocation.get(c!)).toMatchObject({ entries: 1, leaf: leaf.id, title: "hello" })
        expect(byLocation.get(bad!)).toEqual({ location: bad, error: { code: "SESSION_INVALID_JSON", message: expect.stringContaining("(line 2)") } })
        // The session changed last comes first.
        expect(sessions.findIndex((s) => s.location === c)).toBeLessThan(sessions.findIndex((s) => s.location === a))
      }))

    test("list: a session changed between two listings is read again; an unchanged one is not", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const catalog = yield* SessionCatalog
        // Which sessions a listing asks the backend for: read in full, or taken from kept listings.
        const asked = new Set<string>()
        const counting: SessionCatalogService = {
          ...catalog,
          readMany: (locations) => Effect.zipRight(Effect.sync(() => locations.forEach((l) => asked.add(l))), catalog.readMany(locations)),
          listings: catalog.listings && {
            ...catalog.listings,
            recall: (entries) =>
              Effect.zipRight(Effect.sync(() => entries.forEach((e) => asked.add(e.location))), catalog.listings!.recall(entries))
          }
        }
        const service = yield* Effect.provideService(Sessions.make, SessionCatalog, counting)
        const location = kit.location("relist")
        const other = kit.location("relist-other")
        const store = yield* SessionStore.create(location, V1)
        yield* Effect.scoped(SessionStore.create(other, V1))
        expect(yield* listed(service, [location], kit.directory)).toMatchObject([{ entries: 0 }])
        expect(asked.has(location) && asked.has(other)).toBe(true)
        asked.clear()
        const entry = yield* store.append(null, user("m1", "now"))
        expect(yield* listed(service, [location], kit.directory)).toMatchObject([{ entries: 1, leaf: entry.id, title: "now" }])
        expect([...asked].filter((l) => l === location || l === other)).toEqual([location])
        // Corrupted behind the library's back: the listing shows it at once.
        const journal = yield* SessionJournal
        yield* kit.put(location, [headerLine(idAt(journal, location)), entryLine("e1", "nope", userMessage("m1"))])
        expect(yield* listed(service, [location], kit.directory)).toMatchObject([{ location, error: { code: "SESSION_UNKNOWN_PARENT" } }])
        yield* kit.put(location, [headerLine(idAt(journal, location)), entryLine("e1", null, userMessage("m1"))])
        expect(yield* listed(service, [location], kit.directory)).toMatchObject([{ entries: 1, leaf: "e1" }])
        expect(yield* listed(service, [other], kit.directory)).toMatchObject([{ entries: 0 }])
        expect(asked.has(other)).toBe(false)
      }))

    test("list: a session that could not be read for a passing reason (SESSION_IO) is shown so, and read again at the next listing", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const catalog = yield* SessionCatalog
        const location = kit.location("passing")
        const store = yield* SessionStore.create(location, V1)
        yield* store.append(null, user("m1", "still here"))
        // The backend's own catalog, whose first read of this session fails as a lost connection would
        // (without its kept listings, which would spare the read).
        let failures = 1
        const flaky: SessionCatalogService = {
          ...catalog,
          listings: undefined,
          readMany: (locations) =>
            Effect.map(catalog.readMany(locations), (read) =>
              read.map((r, i) => locations[i] === location && failures-- > 0 ? Either.left(sessionError("SESSION_IO", "the connection was lost")) : r))
        }
        const service = yield* Effect.provideService(Sessions.make, SessionCatalog, flaky)
        expect(yield* listed(service, [location], kit.directory)).toMatchObject([{ location, error: { code: "SESSION_IO" } }])
        expect(yield* listed(service, [location], kit.directory)).toMatchObject([{ location, entries: 1, title: "still here" }])
      }))

    test("list pages: offset and limit over one order, the total of all; latest is the first", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const service = yield* Sessions.make
        for (let i = 0; i < 5; i++) yield* Effect.scoped(SessionStore.create(kit.location(`page-${i}`), V1))
        const all = yield* service.list({ directory: kit.directory })
        expect(all.total).toBe(all.sessions.length)
        const pages = [
          yield* service.list({ directory: kit.directory, offset: 0, limit: 2 }),
          yield* service.list({ directory: kit.directory, offset: 2, limit: 2 }),
          yield* service.list({ directory: kit.directory, offset: 4 })
        ]
        expect(pages.flatMap((p) => p.sessions)).toEqual(all.sessions)
        expect(pages.map((p) => p.total)).toEqual([all.total, all.total, all.total])
        expect(yield* service.latest(kit.directory)).toEqual(all.sessions[0])
        expect(codeOf(yield* Effect.either(service.list({ directory: kit.directory, limit: -1 })))).toBe("SESSION_INVALID_OPTIONS")
      }))

    test("fork at a root, a middle entry and a leaf: exactly that path under a new header; the source unchanged", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const service = yield* Sessions.make
        const source = kit.location("fork-source")
        const tree = yield* SessionTree.make(yield* SessionStore.create(source, V1))
        const root = yield* tree.append(user("m1", "root"))
        const call = yield* tree.append(assistant("m2", [["c1", "read"]]))
        const result = yield* tree.append(tool("m3", "c1", "read"))
        yield* tree.moveTo(root.id)
        const branch = yield* tree.append(user("m4", "other branch"))
        const stored = yield* kit.raw(source)
        for (const [leaf, path] of [[root, [root]], [call, [root, call]], [result, [root, call, result]], [branch, [root, branch]]] as const) {
          const target = kit.location("fork-target")
          const forked = yield* service.fork(source, leaf.id, target)
          const loaded = yield* SessionStore.read(target)
          expect(loaded.entries).toEqual(path)
          expect(forked).toMatchObject({ location: loaded.location, entries: path.length, leaf: leaf.id, id: loaded.header.id })
          expect(loaded.header.id).not.toBe(tree.store.header.id)
          // Updated when it was made, not at its copied entries' older times; listed the same way.
          expect(Date.parse(forked.updated)).toBeGreaterThanOrEqual(Date.parse(forked.created))
          const listed = (yield* service.list({ directory: kit.directory })).sessions.find((s) => s.location === loaded.location)
          expect(listed !== undefined && !Sessions.isUnreadable(listed) && Date.parse(listed.updated) >= Date.parse(listed.created)).toBe(true)
        }
        const named = kit.location("fork-named")
        const chosen = yield* Effect.either(service.fork(source, call.id, named, { id: "chosen-id" }))
        // A backend that names sessions by ID refuses another ID than the location's; the others take it.
        if ((yield* SessionJournal).locations === "chosen") {
          expect(Either.isRight(chosen)).toBe(true)
          expect((yield* SessionStore.read(named)).header.id).toBe("chosen-id")
        } else expect(codeOf(chosen)).toBe("SESSION_INVALID_HEADER")
        expect(yield* kit.raw(source)).toEqual(stored)
        const taken = kit.location("fork-taken")
        yield* Effect.scoped(SessionStore.create(taken, V1))
        const takenBefore = yield* kit.raw(taken)
        expect(codeOf(yield* Effect.either(service.fork(source, call.id, taken)))).toBe("SESSION_EXISTS")
        expect(yield* kit.raw(taken)).toEqual(takenBefore)
        const nowhere = kit.location("fork-nowhere")
        expect(codeOf(yield* Effect.either(service.fork(source, "nope", nowhere)))).toBe("SESSION_UNKNOWN_ENTRY")
        expect(yield* kit.raw(nowhere)).toBeUndefined()
      }))

    test("delete: the whole session goes (list, load, read), others and a fork of it stay, a holder's append is SESSION_REPLACED, twice is SESSION_NOT_FOUND", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const service = yield* Sessions.make
        const source = kit.location("delete")
        const tree = yield* SessionTree.make(yield* SessionStore.create(source, { id: idAt(journal, source), version: 1 }))
        const root = yield* tree.append(user("m1", "root"))
        const leaf = yield* tree.append(user("m2", "leaf"))
        const forked = kit.location("delete-fork")
        yield* service.fork(source, leaf.id, forked)
        const bystander = kit.location("delete-bystander")
        yield* Effect.scoped(SessionStore.create(bystander, V1))
        const before = { forked: yield* kit.raw(forked), bystander: yield* kit.raw(bystander) }
        const held = yield* SessionStore.load(source)
        const listedBefore = yield* service.list({ directory: kit.directory })
        const location = (yield* SessionStore.read(source)).location
        expect(listedBefore.sessions.map((s) => s.location)).toContain(location)

        expect(yield* service.delete(source)).toBe(location)
        expect(yield* kit.raw(source)).toBeUndefined()
        const listed = yield* service.list({ directory: kit.directory })
        expect(listed.sessions.map((s) => s.location)).not.toContain(location)
        expect(listed.total).toBe(listedBefore.total - 1)
        expect(codeOf(yield* Effect.either(SessionStore.load(source)))).toBe("SESSION_NOT_FOUND")
        expect(codeOf(yield* Effect.either(SessionStore.read(source)))).toBe("SESSION_NOT_FOUND")
        expect(codeOf(yield* Effect.either(service.delete(source)))).toBe("SESSION_NOT_FOUND")
        expect(codeOf(yield* Effect.either(service.delete(kit.location("delete-never"))))).toBe("SESSION_NOT_FOUND")
        // A store that held it appends nothing and brings nothing back.
        expect(codeOf(yield* Effect.either(held.append(leaf.id, user("m3", "late"))))).toBe("SESSION_REPLACED")
        expect(yield* kit.raw(source)).toBeUndefined()
        // The fork and a bystander are untouched; the fork still loads whole.
        expect(yield* kit.raw(forked)).toEqual(before.forked)
        expect(yield* kit.raw(bystander)).toEqual(before.bystander)
        expect((yield* SessionStore.read(forked)).entries.map((e) => e.id)).toEqual([root.id, leaf.id])
        // A session that does not load is deleted all the same: delete never parses it.
        const broken = kit.location("delete-broken")
        yield* kit.put(broken, [headerLine(idAt(journal, broken)), "{not json"])
        expect(codeOf(yield* Effect.either(SessionStore.read(broken)))).toBe("SESSION_INVALID_JSON")
        yield* service.delete(broken)
        expect(yield* kit.raw(broken)).toBeUndefined()
        // The location can hold a new session afterwards.
        const reborn = yield* SessionStore.create(source, { id: idAt(journal, source), version: 1 })
        expect(reborn.entries).toEqual([])
      }))

    test("export gives the canonical generation; import stores it again, keeping the header; refused records store nothing", () =>
      Effect.gen(function*() {
        const kit = yield* Kit
        const journal = yield* SessionJournal
        const service = yield* Sessions.make
        // A backend that names sessions by ID holds a session under its header's ID.
        const idAt = (location: string) => (journal.locations === "sessionId" ? location : "s")
        const source = kit.location("export")
        yield* kit.put(source, [
          `{"version":1,"type":"session","timestamp":"${T}","id":${JSON.stringify(idAt(source))}}`,
          ` ${entryLine("e1", null, userMessage("m1", "caf\\u00e9"))}`
        ])
        const jsonl = yield* service.exportJsonl(source)
        expect(jsonl).toBe(`${headerLine(idAt(source))}\n${entryLine("e1", null, userMessage("m1", "café"))}\n`)
        const loaded = yield* SessionStore.read(source)

        const target = kit.location("import")
        const header = { ...loaded.header, id: idAt(target) }
        const records = { header, entries: loaded.entries }
        const to = journal.locations === "chosen" ? target : undefined
        const imported = yield* service.import(records, to)
        expect(imported).toMatchObject({ id: header.id, entries: 1, leaf: "e1" })
        expect(yield* service.exportJsonl(imported.location)).toBe(Sessions.toJsonl(records))
        expect(Sessions.toJsonl(records)).toBe(jsonl.replace(headerLine(idAt(source)), headerLine(header.id)))
        const before = yield* kit.raw(imported.location)
        expect(codeOf(yield* Effect.either(service.import(records, imported.location)))).toBe("SESSION_EXISTS")
        expect(yield* kit.raw(imported.location)).toEqual(before)

        const broken = kit.location("import-broken")
        const orphan = yield* Effect.either(service.import({
          header: { ...loaded.header, id: idAt(broken) },
          entries: [{ ...loaded.entries[0]!, parentId: "nope" }]
        }, journal.locations === "chosen" ? broken : undefined))
        expect(codeOf(orphan)).toBe("SESSION_UNKNOWN_PARENT")
        expect(yield* kit.raw(broken)).toBeUndefined()
      }))
  })
  return registered
}

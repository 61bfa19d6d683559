/**
 * Blobs in the core, on the memory journal: file data over 65,536 bytes (as base64 or as bytes)
 * becomes a blob of the session named by its SHA-256, handed to the backend with the batch that
 * first refers to it; a reference given as is must name a blob the session holds; a load refuses
 * the whole session when a referenced blob is missing or of another size; a read checks the hash;
 * a fork takes the blobs of its path along. The core's own SHA-256 is held to the platform's.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as Crypto from "node:crypto"
import { MAX_BLOB_BYTES, MAX_INLINE_FILE_BYTES } from "../src/Codec.js"
import * as Ids from "../src/Ids.js"
import { sha256Hex } from "../src/internal/sha256.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import type { Entry } from "../src/Record.js"
import type { FileData, Message } from "../src/RecordV2.js"
import { SessionCatalog } from "../src/SessionCatalog.js"
import type { SessionError } from "../src/SessionError.js"
import { type NewBlob, SessionJournal, type SessionJournalService, sha256, type Writer } from "../src/SessionJournal.js"
import * as Sessions from "../src/Sessions.js"
import * as SessionStore from "../src/SessionStore.js"
import * as SessionTree from "../src/SessionTree.js"

const hex = (bytes: Uint8Array) => Crypto.createHash("sha256").update(bytes).digest("hex")
/** Bytes that differ from one call to the next, so no test meets another's blob by chance. */
const bytesOf = (size: number) => new Uint8Array(Crypto.randomBytes(size))
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const image = (data: unknown, id = "m1") => ({
  role: "user",
  id,
  content: [{ type: "text", text: "look" }, { type: "file", mediaType: "image/png", data }]
})
const dataOf = (entry: Entry): FileData => {
  const message = (entry as { readonly message: Message }).message
  if (message.role === "system") throw new Error("no parts")
  const part = message.content.find((p) => p.type === "file")!
  return (part as { readonly data: FileData }).data
}

/** A memory journal over fresh maps whose writers record the blobs of every batch. */
const recorded = () => {
  const storage: MemoryJournal.Storage = new Map()
  const blobs: MemoryJournal.BlobStorage = new Map()
  const batches: Array<ReadonlyArray<NewBlob>> = []
  const journal = MemoryJournal.make(storage, blobs)
  const recording = (writer: Writer): Writer => ({
    append: (batch) => {
      if (batch.lines.length > 0) batches.push(batch.blobs ?? [])
      return writer.append(batch)
    }
  })
  const wrapped: SessionJournalService = {
    ...journal,
    create: (location, session) => {
      batches.push(session.blobs ?? [])
      return Effect.map(journal.create(location, session), (created) => ({ ...created, writer: recording(created.writer) }))
    },
    hold: (location) => Effect.map(journal.hold(location), (opened) => ({ ...opened, writer: recording(opened.writer) }))
  }
  // One ID factory for every run over these maps, so that a later run's entries never repeat an ID.
  const layer = Layer.merge(Layer.succeed(SessionJournal, wrapped), Layer.succeed(Ids.Ids, Ids.makeDeterministic()))
  return { storage, blobs, batches, layer }
}

const run = <A, E>(effect: Effect.Effect<A, E, SessionJournal | Ids.Ids | Scope.Scope>, layer: Layer.Layer<SessionJournal | Ids.Ids>) =>
  Effect.runPromise(Effect.scoped(Effect.provide(effect, layer)) as Effect.Effect<A, E>)

describe("the core's SHA-256", () => {
  it("equals the platform's on every length around the block and padding edges, and on a megabyte", () => {
    for (const n of [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 65_537, 1 << 20]) {
      const bytes = bytesOf(n)
      expect(sha256Hex(bytes), `${n} bytes`).toBe(hex(bytes))
    }
    expect(sha256Hex(new TextEncoder().encode("abc"))).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
  })

  it("is the platform's where the runtime has one: the SHA-256 every backend names blobs with", () => {
    const bytes = bytesOf(1000)
    expect(sha256(bytes)).toBe(hex(bytes))
    // Node offers `process.getBuiltinModule`: the exported function is not the plain TypeScript one.
    expect(sha256).not.toBe(sha256Hex)
  })
})

describe("blobs on append", () => {
  it("base64 over 65,536 bytes becomes a blob: the entry holds its reference, the backend its bytes, read back byte-exact", async () => {
    const { batches, blobs, layer, storage } = recorded()
    const bytes = bytesOf(MAX_INLINE_FILE_BYTES + 1)
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const entry = yield* store.append(null, image({ base64: b64(bytes) }))
      expect(dataOf(entry)).toEqual({ blob: `sha256:${hex(bytes)}`, size: bytes.length })
      expect(storage.get("s")![1]).not.toContain(b64(bytes).slice(0, 100))
      expect(batches.at(-1)!.map((b) => [b.hash, b.size])).toEqual([[hex(bytes), bytes.length]])
      expect(blobs.get("s")!.get(hex(bytes))).toEqual(bytes)
      expect(yield* store.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
      // And after a load, from the backend alone.
      const loaded = yield* SessionStore.read("s")
      expect(loaded.entries[0]).toEqual(entry)
      expect(yield* loaded.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
    }), layer)
  })

  it("bytes become a blob above 65,536 and inline canonical base64 up to it; later changes to the caller's bytes reach neither", async () => {
    const { layer } = recorded()
    const small = bytesOf(MAX_INLINE_FILE_BYTES)
    const large = bytesOf(MAX_INLINE_FILE_BYTES + 7)
    const largeCopy = large.slice()
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const a = yield* store.append(null, image(Buffer.from(small), "a"))
      const appending = store.append(a.id, image(large, "b"))
      large.fill(0)
      const b = yield* appending
      expect(dataOf(a)).toEqual({ base64: b64(small) })
      expect(dataOf(b)).toEqual({ blob: `sha256:${hex(largeCopy)}`, size: largeCopy.length })
      expect(yield* store.blob(`sha256:${hex(largeCopy)}`)).toEqual(largeCopy)
    }), layer)
  })

  it("the tree's appends take bytes as the store's do: append, appendEntry, each a blob read back from the store", async () => {
    const { layer } = recorded()
    const one = bytesOf(70_001)
    const two = bytesOf(70_002)
    await run(Effect.gen(function*() {
      const tree = yield* SessionTree.make(yield* SessionStore.create("s"))
      const a = yield* tree.append(image(one, "a"))
      const b = yield* tree.appendEntry({ kind: "message", message: image({ base64: b64(two) }, "b") })
      expect([dataOf(a), dataOf(b)]).toEqual([{ blob: `sha256:${hex(one)}`, size: one.length }, { blob: `sha256:${hex(two)}`, size: two.length }])
      expect(yield* tree.store.blob(`sha256:${hex(one)}`)).toEqual(one)
      expect(yield* tree.store.blob(`sha256:${hex(two)}`)).toEqual(two)
    }), layer)
  })

  it("base64 of exactly 65,536 bytes stays inline, and the message the caller passed is never changed", async () => {
    const { batches, layer } = recorded()
    const bytes = bytesOf(MAX_INLINE_FILE_BYTES)
    const bigger = bytesOf(MAX_INLINE_FILE_BYTES + 1)
    const given = image({ base64: b64(bigger) })
    const before = JSON.stringify(given)
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const entry = yield* store.append(null, image({ base64: b64(bytes) }))
      expect(dataOf(entry)).toEqual({ base64: b64(bytes) })
      expect(batches.at(-1)).toEqual([])
      yield* store.append(entry.id, given)
      expect(JSON.stringify(given)).toBe(before)
    }), layer)
  })

  it("a blob the session holds is handed to the backend once: the same bytes again, or its reference, add none", async () => {
    const { batches, layer } = recorded()
    const bytes = bytesOf(100_000)
    const ref = { blob: `sha256:${hex(bytes)}`, size: bytes.length }
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const first = yield* store.append(null, image(bytes, "a"))
      const second = yield* store.append(first.id, image({ base64: b64(bytes) }, "b"))
      const third = yield* store.append(second.id, image(ref, "c"))
      for (const entry of [first, second, third]) expect(dataOf(entry)).toEqual(ref)
      expect(batches.slice(1).map((blobs) => blobs.length)).toEqual([1, 0, 0])
    }), layer)
    // A store that loads the session knows its blobs too.
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.load("s")
      yield* store.append(store.entries.at(-1)!.id, image(bytes, "d"))
      expect(batches.at(-1)).toEqual([])
    }), layer)
  })

  it("a reference to a blob the session does not hold, or with another size, is SESSION_BLOB_MISSING and stores nothing", async () => {
    const { layer, storage } = recorded()
    const bytes = bytesOf(70_000)
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const other = yield* Effect.either(store.append(null, image({ blob: `sha256:${hex(bytesOf(10))}`, size: 10 })))
      expect(Either.isLeft(other) && other.left.code).toBe("SESSION_BLOB_MISSING")
      const entry = yield* store.append(null, image(bytes))
      const short = yield* Effect.either(store.append(entry.id, image({ blob: `sha256:${hex(bytes)}`, size: bytes.length - 1 })))
      expect(Either.isLeft(short) && short.left.code).toBe("SESSION_BLOB_MISSING")
      expect(storage.get("s")).toHaveLength(2)
    }), layer)
  })

  it("a chain may refer to a blob an earlier body of it brings; a refused chain stores neither its lines nor its blobs", async () => {
    const { batches, blobs, layer } = recorded()
    const bytes = bytesOf(80_000)
    const ref = { blob: `sha256:${hex(bytes)}`, size: bytes.length }
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const tree = yield* SessionTree.make(store)
      const refused = yield* Effect.either(tree.appendChain([
        { kind: "message", message: image(bytes, "a") },
        { kind: "message", message: { role: "tool", id: "t", toolCallId: "nope", toolName: "x", isError: false, content: [] } }
      ]))
      expect(Either.isLeft(refused) && refused.left.code).toBe("SESSION_TOOL_LINK")
      expect(blobs.get("s")).toBeUndefined()
      const chain = yield* tree.appendChain([
        { kind: "message", message: image(bytes, "a") },
        { kind: "message", message: image(ref, "b") }
      ])
      expect(chain.map(dataOf)).toEqual([ref, ref])
      expect(batches.at(-1)!.map((b) => b.hash)).toEqual([hex(bytes)])
      expect(yield* tree.store.blob(ref.blob)).toEqual(bytes)
    }), layer)
  })

  it("a blob over 67,108,864 bytes is SESSION_FILE_TOO_LARGE; a version-1 session takes no bytes; a bad reference to read is the caller's", async () => {
    const { layer } = recorded()
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const big = yield* Effect.either(store.append(null, image(new Uint8Array(MAX_BLOB_BYTES + 1))))
      expect(Either.isLeft(big) && big.left.code).toBe("SESSION_FILE_TOO_LARGE")
      const v1 = yield* SessionStore.create("v1", { version: 1 })
      const bytes = yield* Effect.either(v1.append(null, { role: "user", id: "m", content: new Uint8Array(70_000) }))
      expect(Either.isLeft(bytes) && bytes.left.code).toBe("SESSION_INVALID_MESSAGE")
      const bad = yield* Effect.either(store.blob("sha256:ABC"))
      expect(Either.isLeft(bad) && bad.left.code).toBe("SESSION_INVALID_OPTIONS")
      const absent = yield* Effect.either(store.blob(`sha256:${"0".repeat(64)}`))
      expect(Either.isLeft(absent) && absent.left.code).toBe("SESSION_BLOB_MISSING")
    }), layer)
  })

  it("file data behind a getter or a Proxy is refused as before, without running it", async () => {
    const { layer } = recorded()
    let ran = 0
    const getter = image(undefined)
    Object.defineProperty(getter.content[1]!, "data", { enumerable: true, get: () => (ran++, bytesOf(70_000)) })
    const proxied = image(new Proxy(bytesOf(70_000), { get: (t, k) => (ran++, Reflect.get(t, k)) }))
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      for (const message of [getter, proxied]) {
        const refused = yield* Effect.either(store.append(null, message))
        expect(Either.isLeft(refused) && refused.left.code).toBe("SESSION_INVALID_MESSAGE")
      }
    }), layer)
    expect(ran).toBe(0)
  })

  it("blob bytes do not count toward the session's size", async () => {
    const { layer } = recorded()
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      yield* store.append(null, image(bytesOf(1_000_000)))
      const loaded = yield* SessionStore.read("s")
      expect(loaded.size).toBeLessThan(1_000)
    }), layer)
  })
})

describe("blobs on load and read", () => {
  const session = async () => {
    const made = recorded()
    const bytes = bytesOf(90_000)
    await run(Effect.gen(function*() {
      const store = yield* SessionStore.create("s")
      const first = yield* store.append(null, { role: "user", id: "m0", content: [{ type: "text", text: "hi" }] })
      yield* store.append(first.id, image(bytes))
    }), made.layer)
    return { ...made, bytes, hash: hex(bytes) }
  }

  it("a referenced blob that is missing refuses the whole session with SESSION_BLOB_MISSING at its line", async () => {
    const { blobs, hash, layer } = await session()
    blobs.get("s")!.delete(hash)
    const loads: ReadonlyArray<Effect.Effect<unknown, SessionError, SessionJournal | Ids.Ids | Scope.Scope>> = [SessionStore.read("s"), SessionStore.load("s")]
    for (const load of loads) {
      const refused = await run(Effect.either(load), layer)
      expect(Either.isLeft(refused) && [refused.left.code, refused.left.line]).toEqual(["SESSION_BLOB_MISSING", 3])
    }
  })

  it("a short blob is missing; a blob of the right size whose bytes changed loads, and reading it is SESSION_BLOB_CORRUPT", async () => {
    const { blobs, bytes, hash, layer } = await session()
    blobs.get("s")!.set(hash, bytes.slice(1))
    const short = await run(Effect.either(SessionStore.read("s")), layer)
    expect(Either.isLeft(short) && short.left.code).toBe("SESSION_BLOB_MISSING")
    const changed = bytes.slice()
    changed[0]! ^= 1
    blobs.get("s")!.set(hash, changed)
    const read = await run(Effect.either(Effect.flatMap(SessionStore.read("s"), (loaded) => loaded.blob(`sha256:${hash}`))), layer)
    expect(Either.isLeft(read) && read.left.code).toBe("SESSION_BLOB_CORRUPT")
  })

  it("a listing shows a session whose blob is missing as unreadable with SESSION_BLOB_MISSING", async () => {
    const { blobs, hash, storage } = await session()
    blobs.get("s")!.delete(hash)
    const listing = await Effect.runPromise(
      Effect.provide(Effect.flatMap(Sessions.Sessions, (sessions) => sessions.list()), Sessions.layer.pipe(
        Layer.provideMerge(MemoryJournal.layerStorage(storage, blobs)),
        Layer.provideMerge(Ids.layerDeterministic)
      ))
    )
    expect(listing.sessions.map((s) => ("error" in s ? s.error.code : "ok"))).toEqual(["SESSION_BLOB_MISSING"])
  })
})

describe("blobs on import", () => {
  it("an import stores the blobs its entries refer to from the bytes given; missing bytes and wrong bytes are refused, storing nothing", async () => {
    const storage: MemoryJournal.Storage = new Map()
    const blobs: MemoryJournal.BlobStorage = new Map()
    const layer = Sessions.layer.pipe(Layer.provideMerge(MemoryJournal.layerStorage(storage, blobs)), Layer.provideMerge(Ids.layerDeterministic))
    const one = bytesOf(70_000)
    const two = bytesOf(70_001)
    const unused = bytesOf(70_002)
    await Effect.runPromise(Effect.scoped(Effect.provide(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const store = yield* sessions.create("a")
      const first = yield* store.append(null, image(one))
      yield* store.append(first.id, image(two, "m2"))
      const records = yield* sessions.read("a")
      const refused = yield* Effect.either(sessions.import(records, "b", { blobs: new Map([[`sha256:${hex(one)}`, one]]) }))
      expect(Either.isLeft(refused) && refused.left.code).toBe("SESSION_BLOB_MISSING")
      const wrong = yield* Effect.either(sessions.import(records, "b", { blobs: new Map([[`sha256:${hex(one)}`, one], [hex(two), one]]) }))
      expect(Either.isLeft(wrong) && wrong.left.code).toBe("SESSION_BLOB_CORRUPT")
      expect(storage.has("b") || blobs.has("b")).toBe(false)
      const given = new Map([[`sha256:${hex(one)}`, one], [hex(two), two], [hex(unused), unused]])
      yield* sessions.import(records, "b", { blobs: given })
      expect([...blobs.get("b")!.keys()].sort()).toEqual([hex(one), hex(two)].sort())
      const imported = yield* sessions.read("b")
      expect(imported.entries).toEqual(records.entries)
      expect(yield* imported.blob(`sha256:${hex(two)}`)).toEqual(two)
    }), layer)))
  })
})

describe("blobs on fork", () => {
  it("a fork holds the blobs of its path: each session reads them after the other is gone", async () => {
    const storage: MemoryJournal.Storage = new Map()
    const blobs: MemoryJournal.BlobStorage = new Map()
    const layer = Sessions.layer.pipe(
      Layer.provideMerge(MemoryJournal.layerStorage(storage, blobs)),
      Layer.provideMerge(Ids.layerDeterministic)
    )
    const kept = bytesOf(70_000)
    const other = bytesOf(75_000)
    await Effect.runPromise(Effect.scoped(Effect.provide(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const store = yield* sessions.create("a")
      const first = yield* store.append(null, image(kept, "k"))
      yield* store.append(null, image(other, "o"))
      yield* sessions.fork("a", first.id, "b")
      expect([...blobs.get("b")!.keys()]).toEqual([hex(kept)])
      storage.delete("a")
      blobs.delete("a")
      const forked = yield* sessions.read("b")
      expect(yield* forked.blob(`sha256:${hex(kept)}`)).toEqual(kept)
    }), layer)))
  })

  it("a deleted session's blobs go with it: a session created again at its location holds none", async () => {
    const storage: MemoryJournal.Storage = new Map()
    const blobs: MemoryJournal.BlobStorage = new Map()
    const layer = Sessions.layer.pipe(Layer.provideMerge(MemoryJournal.layerStorage(storage, blobs)), Layer.provideMerge(Ids.layerRandom))
    const bytes = bytesOf(70_000)
    const again = await Effect.runPromise(Effect.scoped(Effect.provide(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      yield* Effect.scoped(Effect.flatMap(sessions.create("a"), (store) => store.append(null, image(bytes))))
      yield* sessions.delete("a")
      expect(blobs.has("a")).toBe(false)
      const store = yield* sessions.create("a")
      return yield* Effect.either(store.append(null, image({ blob: `sha256:${hex(bytes)}`, size: bytes.length })))
    }), layer)))
    expect(Either.isLeft(again) && again.left.code).toBe("SESSION_BLOB_MISSING")
  })

  it("a fork whose source lost a blob meanwhile is refused and creates nothing", async () => {
    const storage: MemoryJournal.Storage = new Map()
    const blobs: MemoryJournal.BlobStorage = new Map()
    const journal = MemoryJournal.make(storage, blobs)
    // The blob goes between the fork's read of the source and its create.
    const racing: SessionJournalService = {
      ...journal,
      create: (location, session) => Effect.suspend(() => {
        if (location === "b") blobs.get("a")!.clear()
        return journal.create(location, session)
      })
    }
    const layer = Sessions.layer.pipe(
      Layer.provideMerge(Layer.merge(Layer.succeed(SessionJournal, racing), Layer.succeed(SessionCatalog, MemoryJournal.makeCatalog(storage, blobs)))),
      Layer.provideMerge(Ids.layerDeterministic)
    )
    const refused = await Effect.runPromise(Effect.scoped(Effect.provide(Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const store = yield* sessions.create("a")
      const first = yield* store.append(null, image(bytesOf(70_000)))
      return yield* Effect.either(sessions.fork("a", first.id, "b"))
    }), layer)))
    expect(Either.isLeft(refused) && refused.left.code).toBe("SESSION_BLOB_MISSING")
    expect(storage.has("b")).toBe(false)
  })
})

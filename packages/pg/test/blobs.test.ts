/**
 * Blobs in PostgreSQL on a real server: a blob's row is inserted in the transaction of the append
 * that first refers to it (and of `create`, for a fork), never by an append that loses its race;
 * a load checks every referenced blob's presence and size in the same statement that reads the
 * lines; reading one checks its hash; a fork copies the rows of its path, so either session can
 * be deleted (a deleted session's blobs go with it).
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Crypto from "node:crypto"
import { layer } from "./support/database.js"

const hex = (bytes: Uint8Array) => Crypto.createHash("sha256").update(bytes).digest("hex")
const bytesOf = (size: number) => new Uint8Array(Crypto.randomBytes(size))
const image = (data: unknown, id = "m1") => ({
  role: "user",
  id,
  content: [{ type: "text", text: "look" }, { type: "file", mediaType: "image/png", data }]
})

interface BlobRow {
  readonly session_id: string
  readonly hash: string
  readonly size: number
  readonly bytes: Uint8Array
}

const blobRows = (session: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<BlobRow>`SELECT session_id, hash, size, bytes FROM session_tree_blobs WHERE session_id = ${session} ORDER BY hash`)

const codeOf = <A, E extends { readonly code: string }>(r: Either.Either<A, E>) => (Either.isLeft(r) ? r.left.code : "ok")

describe("PgJournal blobs", () => {
  it.layer(Layer.provideMerge(Sessions.layer, layer("blobs")), { timeout: "120 seconds" })("on a fresh database", (it) => {
    it.scoped("an append stores its blob as a row in its own transaction; the line holds the reference; read back byte-exact", () =>
      Effect.gen(function*() {
        const bytes = bytesOf(100_000)
        const store = yield* SessionStore.create("b1")
        const entry = yield* store.append(null, image(bytes))
        expect(JSON.stringify(entry)).toContain(`{"blob":"sha256:${hex(bytes)}","size":100000}`)
        const rows = yield* blobRows("b1")
        expect(rows.map((r) => [r.hash, r.size, hex(r.bytes)])).toEqual([[hex(bytes), bytes.length, hex(bytes)]])
        expect(yield* store.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
        const loaded = yield* SessionStore.read("b1")
        expect(yield* loaded.blob(`sha256:${hex(bytes)}`)).toEqual(bytes)
        // The same bytes again add no row.
        yield* store.append(entry.id, image(bytes, "m2"))
        expect(yield* blobRows("b1")).toHaveLength(1)
      }))

    it.scoped("an append that loses its race stores neither its lines nor its blobs", () =>
      Effect.gen(function*() {
        yield* Effect.scoped(SessionStore.create("b2"))
        const first = yield* SessionStore.load("b2")
        const second = yield* SessionStore.load("b2")
        yield* first.append(null, image(bytesOf(70_000)))
        const lost = yield* Effect.either(second.append(null, image(bytesOf(70_001), "m2")))
        expect(codeOf(lost)).toBe("SESSION_REPLACED")
        expect((yield* blobRows("b2")).map((r) => r.size)).toEqual([70_000])
      }))

    it.scoped("a load refuses the whole session when a referenced blob's row is gone or shorter; changed bytes are SESSION_BLOB_CORRUPT on read", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const bytes = bytesOf(80_000)
        const hash = hex(bytes)
        yield* Effect.scoped(Effect.flatMap(SessionStore.create("b3"), (store) => store.append(null, image(bytes))))
        yield* sql`UPDATE session_tree_blobs SET bytes = substring(bytes from 2) WHERE session_id = 'b3'`
        const short = yield* Effect.either(SessionStore.read("b3"))
        expect(Either.isLeft(short) && [short.left.code, short.left.line]).toEqual(["SESSION_BLOB_MISSING", 2])
        const changed = bytes.slice()
        changed[0]! ^= 0xff
        yield* sql`UPDATE session_tree_blobs SET bytes = ${changed} WHERE session_id = 'b3'`
        const loaded = yield* SessionStore.read("b3")
        expect(codeOf(yield* Effect.either(loaded.blob(`sha256:${hash}`)))).toBe("SESSION_BLOB_CORRUPT")
        yield* sql`DELETE FROM session_tree_blobs WHERE session_id = 'b3'`
        expect(codeOf(yield* Effect.either(Effect.scoped(SessionStore.load("b3"))))).toBe("SESSION_BLOB_MISSING")
        expect(codeOf(yield* Effect.either(loaded.blob(`sha256:${hash}`)))).toBe("SESSION_BLOB_MISSING")
      }))

    it.scoped("a fork copies the rows of its path: deleting either session leaves the other whole, and a deleted session's rows go with it", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const sessions = yield* Sessions.Sessions
        const kept = bytesOf(90_000)
        const other = bytesOf(90_001)
        const store = yield* sessions.create("b4")
        const first = yield* store.append(null, image(kept))
        yield* store.append(null, image(other, "m2"))
        yield* sessions.fork("b4", first.id, "b4-fork")
        expect((yield* blobRows("b4-fork")).map((r) => r.hash)).toEqual([hex(kept)])
        yield* sql`DELETE FROM session_tree_sessions WHERE id = 'b4'`
        expect(yield* blobRows("b4")).toEqual([])
        const forked = yield* sessions.read("b4-fork")
        expect(yield* forked.blob(`sha256:${hex(kept)}`)).toEqual(kept)
      }))

    it.scoped("a blob row changed or deleted behind the library's back draws a new incarnation: a kept listing is not used, a writer is replaced", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const sessions = yield* Sessions.Sessions
        const bytes = bytesOf(72_000)
        const incarnation = Effect.map(
          sql<{ readonly i: string }>`SELECT incarnation::text AS i FROM session_tree_sessions WHERE id = 'b6'`,
          (rows) => rows[0]!.i
        )
        yield* Effect.scoped(Effect.flatMap(sessions.create("b6"), (store) => store.append(null, image(bytes))))
        const listedOf = Effect.map(sessions.list(), (listing) => listing.sessions.find((l) => l.location === "b6"))
        expect(yield* listedOf).toMatchObject({ entries: 1 })
        const writer = yield* SessionStore.load("b6")
        const before = yield* incarnation
        yield* sql`UPDATE session_tree_blobs SET bytes = substring(bytes from 2) WHERE session_id = 'b6'`
        const after = yield* incarnation
        expect(after).not.toBe(before)
        expect(yield* listedOf).toMatchObject({ error: { code: "SESSION_BLOB_MISSING" } })
        expect(codeOf(yield* Effect.either(writer.append(null, image(bytesOf(70_000), "m2"))))).toBe("SESSION_REPLACED")
        yield* sql`DELETE FROM session_tree_blobs WHERE session_id = 'b6'`
        expect(yield* incarnation).not.toBe(after)
      }))

    it.scoped("a create whose blob to copy is not in its source with its size is refused whole: no session row and no blob row", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const journal = yield* SessionJournal
        const bytes = bytesOf(75_000)
        yield* Effect.scoped(Effect.flatMap(SessionStore.create("b5"), (store) => store.append(null, image(bytes))))
        const header = `{"type":"session","version":2,"id":"b5-copy","timestamp":"1970-01-01T00:00:00.000Z"}`
        const create = (size: number) =>
          Effect.either(Effect.scoped(journal.create("b5-copy", {
            lines: [header],
            sizes: [header.length],
            ids: [],
            blobs: [{ hash: hex(bytes), size, from: "b5" }]
          })))
        expect(codeOf(yield* create(bytes.length - 1))).toBe("SESSION_BLOB_MISSING")
        const [row] = yield* sql<{ readonly n: number }>`SELECT count(*)::int4 AS n FROM session_tree_sessions WHERE id = 'b5-copy'`
        expect(row!.n).toBe(0)
        expect(yield* blobRows("b5-copy")).toEqual([])
        expect(codeOf(yield* create(bytes.length))).toBe("ok")
        expect((yield* blobRows("b5-copy")).map((r) => hex(r.bytes))).toEqual([hex(bytes)])
      }))
  })
})

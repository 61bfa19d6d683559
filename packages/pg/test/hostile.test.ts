/**
 * Hostile input (SPEC C2: "Session IDs and all content travel as parameters,
 * never spliced into SQL"): session IDs and content made of quotes, backslashes,
 * SQL, placeholders, escaped NULs, line separators and astral characters, and
 * lines of up to 65,536 bytes, are stored byte for byte and read back exactly,
 * and the tables are all still there afterwards. A session ID may be 1,024 UTF-8
 * bytes long; a longer one is refused typed before it reaches an index.
 */
import * as Either from "effect/Either"
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import { Ids } from "@session-tree/core/Ids"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import { layer, user } from "./support/database.js"
import { messageOf, textOf } from "@session-tree/core/Record"

const ids = [
  `it's "quoted" \\ ; DROP TABLE session_tree_sessions; --`,
  "$1 $$ $tag$ %s ${x} ? :name",
  "back\\\\slash\\",
  "'); DELETE FROM session_tree_entries; --",
  "名前 😀 naïve",
  "new\nline\ttab\r",
  "{\"a\":[1,2]}",
  "x".repeat(1_024)
]

const contents = [
  `'"\\`,
  "a\u0000b\u0000",
  "\u2028\u2029",
  "😀 naïve 名前",
  "$1 $$ %s ${x} \\x00 \\u0000",
  "'; DROP TABLE session_tree_entries; --",
  "\\".repeat(20_000),
  `"`.repeat(20_000)
]

let longIds = 0

/**
 * A session ID of exactly `bytes` UTF-8 bytes drawn at random from characters of 1 to 4 bytes
 * (seeded, so a failure replays): nothing in it repeats, so no compression shortens it.
 */
const randomId = (bytes: number, seed: number): string => {
  let state = seed
  const next = (below: number) => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    return Math.floor((state / 2 ** 32) * below)
  }
  // Code points of each UTF-8 width, without U+0000, the surrogates or anything a text column refuses.
  const ranges: ReadonlyArray<readonly [number, number]> = [[0x21, 0x7e], [0xa1, 0x7ff], [0x800, 0xd7ff], [0x10000, 0x10ffff]]
  let id = ""
  for (let used = 0; used < bytes;) {
    const width = 1 + next(Math.min(4, bytes - used))
    const [low, high] = ranges[width - 1]!
    id += String.fromCodePoint(low + next(high - low + 1))
    used += width
  }
  return id
}

describe("hostile input", () => {
  it.layer(layer("hostile"), { timeout: "60 seconds" })("on a fresh database", (it) => {
    it.scoped("session IDs of quotes, SQL, placeholders and 1,024 bytes are stored and found exactly", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        for (const id of ids) {
          const store = yield* SessionStore.create(id, { version: 1 })
          expect(store.header.id).toBe(id)
          const entry = yield* store.append(null, user("m", id))
          const [row] = yield* sql<{ header: string; same: boolean }>`
            SELECT header, id = ${id} AS same FROM session_tree_sessions WHERE id = ${id}`
          expect(row).toEqual({ header: JSON.stringify(store.header), same: true })
          const loaded = yield* SessionStore.read(id)
          expect([loaded.location, loaded.header, loaded.entries]).toEqual([id, store.header, [entry]])
        }
        const scanned = yield* catalog.scan(undefined)
        expect(scanned.map((s) => s.location).sort()).toEqual([...ids].sort())
        const read = yield* catalog.readMany(ids)
        expect(read.map((r) => (Either.isRight(r) ? r.right.location : r.left.code))).toEqual(ids)
        const [tables] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM pg_tables WHERE tablename LIKE 'session_tree_%'`
        expect(tables!.n).toBe(7)
      }))

    it.scoped("a random session ID of 1,024 UTF-8 bytes is stored and found; one of 1,025 or 4,096 bytes, or 30,000 characters, is refused typed and writes nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* SessionCatalog
        const atLimit = randomId(1_024, 1)
        expect(Buffer.byteLength(atLimit)).toBe(1_024)
        const store = yield* SessionStore.create(atLimit, { version: 1 })
        const entry = yield* store.append(null, user("m", "at the limit"))
        const loaded = yield* SessionStore.read(atLimit)
        expect([loaded.location, loaded.header.id, loaded.entries]).toEqual([atLimit, atLimit, [entry]])
        expect((yield* catalog.scan(undefined)).some((e) => e.location === atLimit)).toBe(true)
        const [kept] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM session_tree_listings WHERE session_id = ${atLimit}`
        expect(kept!.n).toBe(1)

        const over = [randomId(1_025, 2), randomId(4_096, 3), "x".repeat(30_000)]
        expect(over.slice(0, 2).map((id) => Buffer.byteLength(id))).toEqual([1_025, 4_096])
        // What the bound keeps away: a random ID of a few KB does not fit a btree index row.
        const direct = yield* Effect.either(sql`
          INSERT INTO session_tree_sessions (id, header, head, incarnation) VALUES (${over[1]!}, '{}', 0, gen_random_uuid())`)
        expect(direct._tag === "Left" && (direct.left.cause as { code?: string }).code).toBe("54000")
        const [before] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM session_tree_sessions`
        for (const id of over) {
          const created = yield* Effect.flip(SessionStore.create(id, { version: 1 }))
          expect([created.code, created.reason]).toEqual([
            "SESSION_INVALID_HEADER",
            "a session ID in the database must be non-empty text of at most 1024 UTF-8 bytes, without U+0000 or a lone surrogate"
          ])
          expect((yield* Effect.flip(SessionStore.read(id))).code).toBe("SESSION_NOT_FOUND")
          expect((yield* Effect.flip(SessionStore.load(id))).code).toBe("SESSION_NOT_FOUND")
        }
        const many = yield* catalog.readMany([atLimit, ...over])
        expect(many.map((r) => (Either.isRight(r) ? "found" : r.left.code))).toEqual(["found", ...over.map(() => "SESSION_NOT_FOUND")])
        const [after] = yield* sql<{ n: number }>`SELECT count(*)::int4 AS n FROM session_tree_sessions`
        expect(after).toEqual(before)
      }))

    it.scoped("content of quotes, backslashes, escaped NULs and separators is stored as its canonical line, byte for byte", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const store = yield* SessionStore.create("content", { version: 1 })
        for (const [i, content] of contents.entries()) {
          const entry = yield* store.append(null, user(`m${i}`, content))
          const line = JSON.stringify(entry)
          const [row] = yield* sql<{ same: boolean; bytes: number; text: string }>`
            SELECT line = ${line} AS same, octet_length(line) AS bytes, line AS text
              FROM session_tree_entries WHERE session_id = 'content' AND entry_id = ${entry.id}`
          expect(row).toEqual({ same: true, bytes: Buffer.byteLength(line), text: line })
        }
        const loaded = yield* SessionStore.read("content")
        expect(loaded.entries.map((e) => textOf(messageOf(e)!))).toEqual(contents)
        expect(loaded.entries).toEqual(store.entries)
      }))

    it.scoped("lines of exactly 65,536 bytes, in any script, are stored and read back whole; one byte more is refused and stores nothing", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const journal = yield* SessionJournal
        const store = yield* SessionStore.create("long", { version: 1 })
        const empty = JSON.stringify({ type: "entry", version: 1, id: "L-1", parentId: null, timestamp: "1970-01-01T00:00:00.000Z", message: user("mm", "") })
        const room = 65_536 - Buffer.byteLength(empty)
        // Characters of 1, 2, 3 and 4 bytes in UTF-8; each content fills its line to exactly 65,536 bytes.
        for (const [unit, bytes] of [["a", 1], ["é", 2], ["名", 3], ["😀", 4]] as const) {
          const content = unit.repeat(Math.floor(room / bytes)) + "a".repeat(room % bytes)
          const entry = yield* store.append(null, user("mm", content))
          const line = JSON.stringify(entry)
          const [row] = yield* sql<{ bytes: number; same: boolean }>`
            SELECT octet_length(line) AS bytes, line = ${line} AS same FROM session_tree_entries WHERE entry_id = ${entry.id}`
          expect(row).toEqual({ bytes: 65_536, same: true })
        }
        const stored = yield* journal.read("long")
        expect(stored.sizes.slice(1)).toEqual([65_536, 65_536, 65_536, 65_536])
        expect((yield* SessionStore.read("long")).entries).toEqual(store.entries)
        const rows = yield* sql`SELECT seq, line FROM session_tree_entries WHERE session_id = 'long' ORDER BY seq`
        const refused = yield* Effect.either(store.append(null, user("mm", "a".repeat(room + 1))))
        expect(refused._tag === "Left" && refused.left.code).toBe("SESSION_LINE_TOO_LONG")
        expect(yield* sql`SELECT seq, line FROM session_tree_entries WHERE session_id = 'long' ORDER BY seq`).toEqual(rows)
      }).pipe(
        // Entry IDs of one length (L-1 … L-5), so that each line's size is known before it is built.
        Effect.provideService(Ids, { sessionId: Effect.succeed("unused"), entryId: Effect.sync(() => `L-${++longIds}`) })
      ))
  })
})

/**
 * `PgJournal.readAfter`: a session read again after a read of it gets only the entry rows after
 * that read's head (by sequence), while the session row keeps the incarnation it had; any row
 * changed behind the library's back draws a new incarnation (the migration's triggers), and the
 * session is then read whole, as it is now.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Journal from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import { layer, user } from "./support/database.js"

let made = 0
/** A session of `n` user entries in a chain, made through the store. */
const makeSession = (n: number) =>
  Effect.scoped(Effect.gen(function*() {
    const id = `after-${++made}`
    const store = yield* SessionStore.create(id, { version: 1 })
    let parent: string | null = null
    for (let i = 0; i < n; i++) parent = (yield* store.append(parent, user(`m${i}`, `message ${i}`))).id
    return id
  }))

const appendTo = (id: string, texts: ReadonlyArray<string>) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.load(id)
    let parent = store.entries.at(-1)!.id
    for (const t of texts) parent = (yield* store.append(parent, user(`m-${t}`, t))).id
  }))

describe("PgJournal.readAfter", () => {
  it.layer(layer("read-after"), { timeout: "60 seconds" })("reads by sequence", (it) => {
    it.scoped("only the rows after the head read before, with their IDs, and none when nothing was appended", () =>
      Effect.gen(function*() {
        const journal = yield* Journal.SessionJournal
        const id = yield* makeSession(50)
        const first = yield* journal.read(id)
        const none = yield* Journal.readAfter(journal, id, first)
        expect([none._tag, none.stored.lines, none.stored.size]).toEqual(["After", [], first.size])
        yield* appendTo(id, ["one", "two"])
        const after = yield* Journal.readAfter(journal, id, first)
        const whole = yield* journal.read(id)
        expect(after._tag).toBe("After")
        expect(after.stored.lines).toEqual(whole.lines.slice(51))
        expect(after.stored.ids).toEqual(whole.ids!.slice(50))
        expect(after.stored.size).toBe(whole.size)
        yield* appendTo(id, ["three"])
        const next = yield* Journal.readAfter(journal, id, after.stored)
        expect([next._tag, next.stored.lines]).toEqual(["After", (yield* journal.read(id)).lines.slice(53)])
      }))

    it.scoped("the whole session once a row changed behind the library, or the session was made again", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const journal = yield* Journal.SessionJournal
        const id = yield* makeSession(5)
        const first = yield* journal.read(id)
        // An earlier entry's line changed in place (a new incarnation), then an append.
        yield* sql`UPDATE session_tree_entries SET line = replace(line, 'message 1', 'message X') WHERE session_id = ${id} AND seq = 2`
        yield* appendTo(id, ["six"])
        const changed = yield* Journal.readAfter(journal, id, first)
        expect(changed._tag).toBe("Whole")
        expect(changed.stored.lines).toEqual((yield* journal.read(id)).lines)
        expect(changed.stored.lines[2]).toContain("message X")
        // Deleted and made again under the same ID, with more entries than before.
        yield* sql`DELETE FROM session_tree_sessions WHERE id = ${id}`
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(id, { version: 1 })
          let parent: string | null = null
          for (let i = 0; i < 9; i++) parent = (yield* store.append(parent, user(`n${i}`, `new ${i}`))).id
        }))
        const again = yield* Journal.readAfter(journal, id, changed.stored)
        expect(again._tag).toBe("Whole")
        expect(again.stored.lines).toEqual((yield* journal.read(id)).lines)
      }))
  })
})

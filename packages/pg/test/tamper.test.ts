/**
 * Rows changed behind the library's back (SPEC C2: "the database is not trusted
 * more than a file"): each case makes a session through the store, changes its
 * rows with plain SQL, and then `read` and `load` must both refuse it with the
 * code and line of SPEC B4, and leave every row as it was. The line-level cases
 * (JSON, records, messages, caps) also run through the conformance suite's kit;
 * these are the ones only a database can hold: entry rows out of order or
 * missing, a head that does not count the rows, an entry_id column that is not
 * the line's ID, a changed header row.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import type { Message } from "@session-tree/core/Record"
import type { SessionErrorCode } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { layer, user } from "./support/database.js"

const call: Message = {
  role: "assistant",
  id: "m2",
  content: "",
  toolCalls: [{ id: "c1", name: "read", arguments: { path: "a" } }]
}
const result: Message = { role: "tool", id: "m3", toolCallId: "c1", toolName: "read", content: "ok", isError: false }

/** What a case may use: the session's ID and its entries' IDs (line 2 holds entry 1). */
interface Made {
  readonly id: string
  readonly entries: ReadonlyArray<string>
}

type Sql = SqlClient.SqlClient

const editLine = (sql: Sql, id: string, seq: number, edit: (line: string) => string) =>
  Effect.gen(function*() {
    const [row] = yield* sql<{ line: string }>`SELECT line FROM session_tree_entries WHERE session_id = ${id} AND seq = ${seq}`
    const edited = edit(row!.line)
    expect(edited).not.toBe(row!.line)
    yield* sql`UPDATE session_tree_entries SET line = ${edited} WHERE session_id = ${id} AND seq = ${seq}`
  })

const editHeader = (sql: Sql, id: string, edit: (line: string) => string) =>
  Effect.gen(function*() {
    const [row] = yield* sql<{ header: string }>`SELECT header FROM session_tree_sessions WHERE id = ${id}`
    yield* sql`UPDATE session_tree_sessions SET header = ${edit(row!.header)} WHERE id = ${id}`
  })

const entryLine = (id: string, seq: number, parentId: string) =>
  `{"type":"entry","version":1,"id":"${id}","parentId":"${parentId}","timestamp":"1970-01-01T00:00:00.000Z","message":{"role":"user","id":"x${seq}","content":"${"y".repeat(60_000)}"}}`

const cases: ReadonlyArray<{
  readonly name: string
  readonly tamper: (sql: Sql, made: Made) => Effect.Effect<unknown, unknown>
  /** The code of SPEC B4. */
  readonly code: SessionErrorCode
  readonly line: number | undefined
}> = [
  {
    name: "an entry_id column that is not the ID its line holds",
    tamper: (sql, { id }) => sql`UPDATE session_tree_entries SET entry_id = 'other' WHERE session_id = ${id} AND seq = 2`,
    code: "SESSION_INVALID_RECORD",
    line: 3
  },
  {
    name: "a gap in seq (entry 2 renumbered 10)",
    tamper: (sql, { id }) => sql`UPDATE session_tree_entries SET seq = 10 WHERE session_id = ${id} AND seq = 2`,
    code: "SESSION_INVALID_RECORD",
    line: 3
  },
  {
    name: "a row removed from the end",
    tamper: (sql, { id }) => sql`DELETE FROM session_tree_entries WHERE session_id = ${id} AND seq = 4`,
    code: "SESSION_INVALID_RECORD",
    line: 5
  },
  {
    name: "a head that counts more entries than there are rows",
    tamper: (sql, { id }) => sql`UPDATE session_tree_sessions SET head = 5 WHERE id = ${id}`,
    code: "SESSION_INVALID_RECORD",
    line: 6
  },
  {
    name: "a head that counts fewer entries than there are rows",
    tamper: (sql, { id }) => sql`UPDATE session_tree_sessions SET head = 3 WHERE id = ${id}`,
    code: "SESSION_INVALID_RECORD",
    line: 5
  },
  {
    name: "a row added after the head",
    tamper: (sql, { id, entries }) =>
      sql`INSERT INTO session_tree_entries (session_id, seq, entry_id, line) VALUES (${id}, 5, 'extra', ${entryLine("extra", 5, entries[3]!)})`,
    code: "SESSION_INVALID_RECORD",
    line: 6
  },
  {
    name: "a header row naming another session",
    tamper: (sql, { id }) => editHeader(sql, id, (h) => h.replace(`"id":${JSON.stringify(id)}`, `"id":"someone-else"`)),
    code: "SESSION_INVALID_HEADER",
    line: 1
  },
  {
    name: "a header row with an extra field",
    tamper: (sql, { id }) => editHeader(sql, id, (h) => h.replace("}", `,"extra":1}`)),
    code: "SESSION_INVALID_HEADER",
    line: 1
  },
  {
    name: "a header row of version 3",
    tamper: (sql, { id }) => editHeader(sql, id, (h) => h.replace(`"version":1`, `"version":3`)),
    code: "SESSION_UNSUPPORTED_VERSION",
    line: 1
  },
  {
    name: "a header row that is not JSON",
    tamper: (sql, { id }) => sql`UPDATE session_tree_sessions SET header = 'not-json' WHERE id = ${id}`,
    code: "SESSION_INVALID_JSON",
    line: 1
  },
  {
    name: "a header row without a header",
    tamper: (sql, { id }) => sql`UPDATE session_tree_sessions SET header = NULL WHERE id = ${id}`,
    code: "SESSION_INVALID_HEADER",
    line: 1
  },
  {
    name: "an entry line that is a second header",
    tamper: (sql, { id }) =>
      Effect.flatMap(
        sql<{ header: string }>`SELECT header FROM session_tree_sessions WHERE id = ${id}`,
        ([row]) => sql`UPDATE session_tree_entries SET line = ${row!.header} WHERE session_id = ${id} AND seq = 4`
      ),
    code: "SESSION_INVALID_HEADER",
    line: 5
  },
  {
    // UNIQUE (session_id, entry_id) keeps the row's entry_id column at its own ID, so the line breaks
    // two rules: it repeats an ID (SESSION_DUPLICATE_ID), and it is not the entry its row is stored
    // as (SESSION_INVALID_RECORD). The core checks the history before the stored IDs, so it names the first.
    name: "two rows whose lines hold one entry ID",
    tamper: (sql, { id, entries }) => editLine(sql, id, 4, (l) => l.replace(`"id":"${entries[3]}"`, `"id":"${entries[0]}"`)),
    code: "SESSION_DUPLICATE_ID",
    line: 5
  },
  {
    name: "a line whose parent does not exist",
    tamper: (sql, { id, entries }) => editLine(sql, id, 4, (l) => l.replace(`"parentId":"${entries[2]}"`, `"parentId":"nope"`)),
    code: "SESSION_UNKNOWN_PARENT",
    line: 5
  },
  {
    name: "a line whose parent comes later",
    tamper: (sql, { id, entries }) => editLine(sql, id, 2, (l) => l.replace(`"parentId":"${entries[0]}"`, `"parentId":"${entries[3]}"`)),
    code: "SESSION_UNKNOWN_PARENT",
    line: 3
  },
  {
    name: "a tool result whose call is not among its ancestors",
    tamper: (sql, { id }) => editLine(sql, id, 3, (l) => l.replace(`"toolCallId":"c1"`, `"toolCallId":"c9"`)),
    code: "SESSION_TOOL_LINK",
    line: 4
  },
  {
    name: "a tool result for another tool than the call's",
    tamper: (sql, { id }) => editLine(sql, id, 3, (l) => l.replace(`"toolName":"read"`, `"toolName":"write"`)),
    code: "SESSION_TOOL_LINK",
    line: 4
  },
  {
    name: "a line that is not JSON",
    tamper: (sql, { id }) => sql`UPDATE session_tree_entries SET line = 'not-json' WHERE session_id = ${id} AND seq = 2`,
    code: "SESSION_INVALID_JSON",
    line: 3
  },
  {
    name: "a line with trailing garbage",
    tamper: (sql, { id }) => editLine(sql, id, 1, (l) => `${l} x`),
    code: "SESSION_INVALID_JSON",
    line: 2
  },
  {
    name: "a line without a timestamp",
    tamper: (sql, { id }) => editLine(sql, id, 1, (l) => l.replace(/"timestamp":"[^"]*",/, "")),
    code: "SESSION_INVALID_RECORD",
    line: 2
  },
  {
    name: "a line of version 2",
    tamper: (sql, { id }) => editLine(sql, id, 1, (l) => l.replace(`"version":1`, `"version":2`)),
    code: "SESSION_UNSUPPORTED_VERSION",
    line: 2
  },
  {
    name: "a message of an unknown role",
    tamper: (sql, { id }) => editLine(sql, id, 4, (l) => l.replace(`"role":"user"`, `"role":"system"`)),
    code: "SESSION_INVALID_MESSAGE",
    line: 5
  },
  {
    name: "a line of 65,537 bytes",
    tamper: (sql, { id }) =>
      editLine(sql, id, 4, (l) => l.replace(`"content":"last"`, `"content":"${"x".repeat(65_537 - l.length + 4)}"`)),
    code: "SESSION_LINE_TOO_LONG",
    line: 5
  },
  {
    name: "rows of more than 4 MiB in all",
    tamper: (sql, { id, entries }) =>
      Effect.gen(function*() {
        const lines = Array.from({ length: 70 }, (_, i) => entryLine(`big${i}`, i + 5, i === 0 ? entries[3]! : `big${i - 1}`))
        yield* sql`
          INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
          SELECT ${id}, 4 + e.ord::int4, 'big' || (e.ord - 1), e.line FROM unnest(${lines}::text[]) WITH ORDINALITY AS e(line, ord)`
        yield* sql`UPDATE session_tree_sessions SET head = 74 WHERE id = ${id}`
      }),
    code: "SESSION_FILE_TOO_LARGE",
    line: undefined
  },
  {
    name: "4,097 entry rows",
    tamper: (sql, { id }) =>
      Effect.gen(function*() {
        yield* sql`
          INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
          SELECT ${id}, g, 'n' || g, '{"type":"entry","version":1,"id":"n' || g || '","parentId":null,"timestamp":"1970-01-01T00:00:00.000Z","message":{"role":"user","id":"u","content":""}}'
            FROM generate_series(5, 4097) AS g`
        yield* sql`UPDATE session_tree_sessions SET head = 4097 WHERE id = ${id}`
      }),
    code: "SESSION_TOO_MANY_ENTRIES",
    line: 4098
  }
]

/** Every row of session `id`, to compare before and after a load. */
const rowsOf = (sql: Sql, id: string) =>
  Effect.all([
    sql`SELECT id, header, head, incarnation::text, changed_at FROM session_tree_sessions WHERE id = ${id}`,
    sql`SELECT seq, entry_id, line, xmin::text FROM session_tree_entries WHERE session_id = ${id} ORDER BY seq`
  ])

let made = 0
/** A session of four entries (a user root, a tool call, its result, a user leaf) made through the store. */
const makeSession = Effect.gen(function*() {
  const id = `tamper-${++made}`
  const entries = yield* Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(id, { version: 1 })
    const e1 = yield* store.append(null, user("m1", "root"))
    const e2 = yield* store.append(e1.id, call)
    const e3 = yield* store.append(e2.id, result)
    const e4 = yield* store.append(e3.id, user("m4", "last"))
    return [e1.id, e2.id, e3.id, e4.id]
  }))
  return { id, entries }
})

describe("rows changed behind the library's back", () => {
  it.layer(layer("tamper"), { timeout: "60 seconds" })("are refused on load", (it) => {
    for (const c of cases) {
      it.scoped(`${c.name}: ${c.code}${c.line === undefined ? "" : ` (line ${c.line})`}, and every row stays`, () =>
        Effect.gen(function*() {
          const sql = yield* SqlClient.SqlClient
          const session = yield* makeSession
          yield* c.tamper(sql, session)
          const before = yield* rowsOf(sql, session.id)
          const outcomes = [
            Either.map(yield* Effect.either(SessionStore.read(session.id)), () => "loaded"),
            Either.map(yield* Effect.either(Effect.scoped(SessionStore.load(session.id))), () => "loaded")
          ]
          for (const outcome of outcomes) {
            const found = Either.isLeft(outcome) ? [outcome.left.code, outcome.left.line] : [outcome.right, undefined]
            expect(found).toEqual([c.code, c.line])
          }
          expect(yield* rowsOf(sql, session.id)).toEqual(before)
        }))
    }

    it.scoped("the untouched session of the same making loads, so every case above failed for its change alone", () =>
      Effect.gen(function*() {
        const session = yield* makeSession
        const loaded = yield* SessionStore.read(session.id)
        expect(loaded.entries.map((e) => e.id)).toEqual(session.entries)
      }))

    it.scoped("entry rows rewritten as they were lie out of seq order in the table; the session loads in seq order", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const session = yield* makeSession
        // An updated row is a new tuple after the others: a scan of the table meets entry 1 last.
        yield* sql`UPDATE session_tree_entries SET line = line WHERE session_id = ${session.id} AND seq IN (1, 2)`
        // The read runs in this transaction, whose plans scan the table: the rows come in the table's order.
        const loaded = yield* sql.withTransaction(Effect.gen(function*() {
          yield* sql`SELECT set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'off', true)`
          const scanned = yield* sql<{ seq: number }>`SELECT seq FROM session_tree_entries WHERE session_id = ${session.id}`
          expect(scanned.map((r) => r.seq)).toEqual([3, 4, 1, 2])
          return yield* SessionStore.read(session.id)
        }))
        expect(loaded.entries.map((e) => e.id)).toEqual(session.entries)
      }))

    it.scoped("invalid UTF-8 cannot be stored at all: the database refuses it (22021) and the session still loads", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const session = yield* makeSession
        const before = yield* rowsOf(sql, session.id)
        const refused = yield* Effect.either(
          sql`UPDATE session_tree_entries SET line = convert_from('\\x7b22c3'::bytea, 'UTF8') WHERE session_id = ${session.id} AND seq = 1`
        )
        const state = Either.isLeft(refused) ? (refused.left.cause as { code?: string }).code : "stored"
        console.log(`invalid UTF-8 in a line: the database answers ${state}; SESSION_INVALID_UTF8 can only come from a file`)
        expect(state).toBe("22021")
        expect(yield* rowsOf(sql, session.id)).toEqual(before)
        expect((yield* SessionStore.read(session.id)).entries).toHaveLength(4)
      }))

    it.scoped("an entry stored twice under one seq (the primary key dropped first): SESSION_INVALID_RECORD naming the second", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const session = yield* makeSession
        // Runs last in this file's database: nothing else here relies on the key afterwards.
        yield* sql`ALTER TABLE session_tree_entries DROP CONSTRAINT session_tree_entries_pkey`
        yield* sql`
          INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
          SELECT session_id, seq, 'copy', line FROM session_tree_entries WHERE session_id = ${session.id} AND seq = 2`
        yield* sql`UPDATE session_tree_sessions SET head = 5 WHERE id = ${session.id}`
        const outcome = yield* Effect.either(SessionStore.read(session.id))
        expect(Either.isLeft(outcome) && [outcome.left.code, outcome.left.line, outcome.left.reason]).toEqual([
          "SESSION_INVALID_RECORD",
          4,
          "entry 2 is stored twice"
        ])
      }))
  })
})

/**
 * The append sent as one statement (a batch without blobs): it is its own transaction, so the
 * settings of a durable commit must come from the statement itself, and how its failure is
 * reported depends on what the server's error proves. A test-only schema (`st_probe`) holds
 * triggers on the journal's entry table that record what the statement's transaction saw, or
 * raise a chosen SQLSTATE as the server would.
 */
import { describe, expect, it } from "@effect/vitest"
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Ids from "@session-tree/core/Ids"
import type { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Migrations from "../src/Migrations.js"
import * as PgJournal from "../src/PgJournal.js"
import { counterIds, freshDatabase, user } from "./support/database.js"

/**
 * A fresh, migrated database whose own defaults are `synchronous_commit = off` and no lock
 * timeout, whatever the server's, and the journal over it with a lock timeout of 1,234 ms. One
 * connection, so a setting read outside a statement is read on the connection the statement ran on.
 */
const layer = Layer.unwrapScoped(
  Effect.gen(function*() {
    const url = yield* freshDatabase("statement")
    yield* Effect.scoped(Effect.provide(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql.unsafe(`DO $$ BEGIN
          EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database());
          EXECUTE format('ALTER DATABASE %I SET lock_timeout = 0', current_database());
        END $$`)),
      PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
    ))
    yield* Migrations.migrateUrl(url)
    return Layer.merge(
      PgJournal.layerClient({ url: Redacted.make(url), maxConnections: 1 }, { lockTimeout: "1234 millis" }),
      Layer.sync(Ids.Ids, () => counterIds("s"))
    )
  })
)

/** Everything stored for session `id`, to compare before and after. */
const snapshot = (id: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* Effect.all([
      sql`SELECT id, header, head, incarnation::text, changed_at FROM session_tree_sessions WHERE id = ${id}`,
      sql`SELECT seq, entry_id, line, xmin::text FROM session_tree_entries WHERE session_id = ${id} ORDER BY seq`
    ])
  })

const failure = <A>(outcome: Either.Either<A, SessionError>) =>
  Either.isLeft(outcome) ? { code: outcome.left.code, reason: outcome.left.reason } : { code: "ok", reason: "" }

const NOTHING = "appending to the session failed: nothing was committed: "
const UNKNOWN = "appending to the session failed: the connection failed while COMMIT was in flight, so whether it committed is unknown"

describe("the one-statement append", () => {
  it.layer(layer, { timeout: "60 seconds" })("on a database whose default is synchronous_commit = off", (it) => {
    it.scoped("commits with synchronous_commit on and the journal's lock_timeout, set for its transaction alone", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE SCHEMA IF NOT EXISTS st_probe`
        yield* sql`CREATE TABLE st_probe.seen (seq int4, sync text, lock text)`
        yield* sql.unsafe(`CREATE FUNCTION st_probe.record() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            INSERT INTO st_probe.seen VALUES (NEW.seq, current_setting('synchronous_commit'), current_setting('lock_timeout'));
            RETURN NULL;
          END $$`)
        yield* sql`CREATE TRIGGER st_probe_record AFTER INSERT ON session_tree_entries FOR EACH ROW EXECUTE FUNCTION st_probe.record()`
        yield* Effect.addFinalizer(() => Effect.orDie(sql`DROP TRIGGER st_probe_record ON session_tree_entries`))
        const defaults = sql<{ sync: string; lock: string }>`
          SELECT current_setting('synchronous_commit') AS sync, current_setting('lock_timeout') AS lock`
        // What a statement of this connection runs with unless it sets otherwise: the test stands on it.
        expect(yield* defaults).toEqual([{ sync: "off", lock: "0" }])

        const store = yield* SessionStore.create("durable")
        const root = yield* store.append(null, user("m1", "root"))
        // Appends started together: batches of several lines.
        yield* Effect.all([1, 2, 3].map((n) => store.append(root.id, user(`m${n + 1}`, `child ${n}`))), { concurrency: "unbounded" })
        const seen = yield* sql<{ seq: number; sync: string; lock: string }>`SELECT seq, sync, lock FROM st_probe.seen ORDER BY seq`
        expect(seen).toEqual([1, 2, 3, 4].map((seq) => ({ seq, sync: "on", lock: "1234ms" })))
        // The settings were local to those transactions: the connection's own are as before.
        expect(yield* defaults).toEqual([{ sync: "off", lock: "0" }])
      }))

    it.scoped("a refusal the server reports proves that nothing was committed; other failures leave the outcome unknown", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`CREATE SCHEMA IF NOT EXISTS st_probe`
        yield* sql`CREATE TABLE st_probe.refusal (code text)`
        yield* sql`INSERT INTO st_probe.refusal VALUES (NULL)`
        // The server raises the chosen SQLSTATE while it runs the statement, so the statement is
        // rolled back whatever the code: only what the store concludes from the code differs.
        yield* sql.unsafe(`CREATE FUNCTION st_probe.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
          DECLARE c text;
          BEGIN
            SELECT code INTO c FROM st_probe.refusal;
            IF c IS NOT NULL THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = c; END IF;
            RETURN NEW;
          END $$`)
        yield* sql`CREATE TRIGGER st_probe_refuse BEFORE INSERT ON session_tree_entries FOR EACH ROW EXECUTE FUNCTION st_probe.refuse()`
        yield* Effect.addFinalizer(() => Effect.orDie(sql`DROP TRIGGER st_probe_refuse ON session_tree_entries`))

        const store = yield* SessionStore.create("refused")
        const root = yield* store.append(null, user("m1", "root"))
        const cases: ReadonlyArray<readonly [string, { readonly code: string; readonly reason: string }]> = [
          // Classes 22, 23, 25, 40, 42, 54, 55: the server refused the statement.
          ["22023", { code: "SESSION_IO", reason: NOTHING }],
          ["23514", { code: "SESSION_IO", reason: NOTHING }],
          ["25006", { code: "SESSION_IO", reason: NOTHING }],
          ["40001", { code: "SESSION_IO", reason: NOTHING }],
          ["40P01", { code: "SESSION_IO", reason: NOTHING }],
          ["42501", { code: "SESSION_IO", reason: NOTHING }],
          ["54000", { code: "SESSION_IO", reason: NOTHING }],
          ["55006", { code: "SESSION_IO", reason: NOTHING }],
          // A duplicate row refused: rows this store did not see; a lock wait that timed out: busy.
          ["23505", { code: "SESSION_REPLACED", reason: "the session holds rows this store did not see; reload it" }],
          ["55P03", {
            code: "SESSION_BUSY",
            reason: "appending to the session failed: another writer's commit holds the session (lock wait timed out)"
          }],
          // A shutdown, a lost connection, exhausted resources, a system or internal error: unknown.
          ["57P01", { code: "SESSION_IO", reason: UNKNOWN }],
          ["08006", { code: "SESSION_IO", reason: UNKNOWN }],
          ["53100", { code: "SESSION_IO", reason: UNKNOWN }],
          ["58030", { code: "SESSION_IO", reason: UNKNOWN }],
          ["XX000", { code: "SESSION_IO", reason: UNKNOWN }]
        ]
        const before = yield* snapshot("refused")
        const entries = store.entries
        for (const [state, expected] of cases) {
          yield* sql`UPDATE st_probe.refusal SET code = ${state}`
          const outcome = failure(yield* Effect.either(store.append(root.id, user("m2", `refused with ${state}`))))
          expect({ state, code: outcome.code, reason: outcome.reason.slice(0, expected.reason.length) }).toEqual({ state, ...expected })
          if (expected.reason === NOTHING) expect(outcome.reason).toContain(`(SQLSTATE ${state})`)
          expect(store.entries).toBe(entries)
          yield* sql`UPDATE st_probe.refusal SET code = NULL`
          expect(yield* snapshot("refused")).toEqual(before)
        }
        // Every refusal rolled back, so the same store appends where it left off.
        const next = yield* store.append(root.id, user("m2", "accepted"))
        expect(store.entries).toEqual([root, next])
      }))

    it.scoped("a constraint of the table that the row breaks (23514) is SESSION_IO, nothing committed, and the store appends on", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        yield* sql`ALTER TABLE session_tree_entries ADD CONSTRAINT st_probe_no_secret CHECK (line NOT LIKE '%secret%')`
        yield* Effect.addFinalizer(() => Effect.orDie(sql`ALTER TABLE session_tree_entries DROP CONSTRAINT st_probe_no_secret`))
        const store = yield* SessionStore.create("checked")
        const root = yield* store.append(null, user("m1", "root"))
        const before = yield* snapshot("checked")
        const outcome = yield* Effect.either(store.append(root.id, user("m2", "a secret")))
        expect(failure(outcome)).toEqual({ code: "SESSION_IO", reason: expect.stringMatching(/^appending to the session failed: nothing was committed: .*st_probe_no_secret.*\(SQLSTATE 23514\)$/) })
        expect(yield* snapshot("checked")).toEqual(before)
        expect(store.entries).toEqual([root])
        const next = yield* store.append(root.id, user("m2", "nothing to hide"))
        expect(store.entries).toEqual([root, next])
      }))
  })
})

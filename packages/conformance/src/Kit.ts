/**
 * What the conformance suite needs of a backend besides its `SessionJournal`:
 * fresh locations, and a way to put lines into the backend and read them back
 * behind the library's back, as a crash, an old version or a person editing
 * the data would. Every backend is held to the same rules for what it holds.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Migrations from "@session-tree/pg/Migrations"
import * as PgCatalog from "@session-tree/pg/PgCatalog"
import * as PgJournal from "@session-tree/pg/PgJournal"
import * as PgSearch from "@session-tree/pg/PgSearch"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"

export interface KitService {
  /** The directory `Sessions.list` takes to list this kit's sessions (for files; undefined for the others). */
  readonly directory: string | undefined
  /** A location no test has used, as the journal takes it (`name` only makes it readable). */
  readonly location: (name: string) => string
  /** Stores exactly `lines` (the header's first, none with a terminator) at `location`, replacing what is there. */
  readonly put: (location: string, lines: ReadonlyArray<string>) => Effect.Effect<void>
  /** The lines stored at `location` now, or undefined when nothing is. */
  readonly raw: (location: string) => Effect.Effect<ReadonlyArray<string> | undefined>
  /** Stores `bytes` as the blob `hash` (64 hexadecimal digits) of the session at `location`, replacing what is there. */
  readonly putBlob: (location: string, hash: string, bytes: Uint8Array) => Effect.Effect<void>
  /** Removes the blob `hash` of the session at `location`. */
  readonly removeBlob: (location: string, hash: string) => Effect.Effect<void>
  /** The hashes of the blobs the session at `location` holds, sorted. */
  readonly blobs: (location: string) => Effect.Effect<ReadonlyArray<string>>
  /** Removes the session at `location` and everything stored with it, as a person or a retention job would. */
  readonly remove: (location: string) => Effect.Effect<void>
}

export class Kit extends Context.Tag("@session-tree/conformance/Kit")<Kit, KitService>() {}

export interface Backend {
  readonly name: string
  readonly layer: Layer.Layer<SessionJournal | SessionCatalog | Kit, unknown>
}

let sequence = 0
const unique = (name: string) => `${name}-${++sequence}`

/** The memory journal over a map the kit reads and writes. */
export const memory: Backend = {
  name: "memory",
  layer: Layer.suspend(() => {
    const storage: MemoryJournal.Storage = new Map()
    const blobs: MemoryJournal.BlobStorage = new Map()
    const kit: KitService = {
      directory: undefined,
      location: unique,
      put: (location, lines) => Effect.sync(() => void storage.set(location, lines.slice())),
      raw: (location) => Effect.sync(() => storage.get(location)),
      putBlob: (location, hash, bytes) =>
        Effect.sync(() => {
          const held = blobs.get(location) ?? new Map<string, Uint8Array>()
          held.set(hash, bytes.slice())
          blobs.set(location, held)
        }),
      removeBlob: (location, hash) => Effect.sync(() => void blobs.get(location)?.delete(hash)),
      blobs: (location) => Effect.sync(() => [...(blobs.get(location)?.keys() ?? [])].sort()),
      remove: (location) =>
        Effect.sync(() => {
          storage.delete(location)
          blobs.delete(location)
        })
    }
    return Layer.merge(MemoryJournal.layerStorage(storage, blobs), Layer.succeed(Kit, kit))
  })
}

/** The file journal on the real filesystem, in a directory of its own removed when the layer is released. */
export const file: Backend = {
  name: "file",
  layer: Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-conformance-"))),
        (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
      ),
      (dir) => {
        const kit: KitService = {
          directory: dir,
          location: (name) => Path.join(dir, `${unique(name)}.jsonl`),
          put: (location, lines) => Effect.sync(() => NFS.writeFileSync(location, lines.map((line) => `${line}\n`).join(""))),
          raw: (location) =>
            Effect.sync(() => {
              if (!NFS.existsSync(location)) return undefined
              const text = NFS.readFileSync(location, "utf8")
              if (text === "") return []
              return text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n")
            }),
          putBlob: (location, hash, bytes) =>
            Effect.sync(() => {
              NFS.mkdirSync(`${location}.blobs`, { recursive: true })
              NFS.writeFileSync(Path.join(`${location}.blobs`, hash), bytes)
            }),
          removeBlob: (location, hash) => Effect.sync(() => NFS.rmSync(Path.join(`${location}.blobs`, hash), { force: true })),
          blobs: (location) =>
            Effect.sync(() => (NFS.existsSync(`${location}.blobs`) ? NFS.readdirSync(`${location}.blobs`).sort() : [])),
          remove: (location) =>
            Effect.sync(() => {
              NFS.rmSync(location, { force: true })
              NFS.rmSync(`${location}.blobs`, { recursive: true, force: true })
            })
        }
        return Layer.merge(FileJournal.layerWithFs(), Layer.succeed(Kit, kit))
      }
    )
  )
}

/** The entry ID a row of `line` is stored under: the line's own "id" where it has one not used yet, else one of ours. */
const entryIdsOf = (entries: ReadonlyArray<string>): Array<string> => {
  const used = new Set<string>()
  return entries.map((line, i) => {
    let id: unknown
    try {
      id = (JSON.parse(line) as { id?: unknown }).id
    } catch {
      // Not JSON: the row still needs an ID of its own.
    }
    let chosen = typeof id === "string" && !used.has(id) ? id : `row-${i + 1}`
    while (used.has(chosen)) chosen = `${chosen}'`
    used.add(chosen)
    return chosen
  })
}

/**
 * The PostgreSQL journal in a database of its own on the server at `adminUrl` (a URL whose
 * user may create databases), migrated first and dropped when the layer is released. The kit
 * writes and reads the rows with plain SQL: the header line in the session row, each other
 * line as an entry row numbered from 1.
 */
export const postgres = (adminUrl: string): Backend => ({
  name: "postgres",
  layer: Layer.unwrapScoped(
    Effect.gen(function*() {
      const name = `st_conformance_${process.pid}_${Math.random().toString(36).slice(2, 10)}`
      const admin = PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 })
      const asAdmin = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
        Effect.scoped(Effect.provide(Effect.flatMap(SqlClient.SqlClient, f), admin))
      const url = new URL(adminUrl)
      url.pathname = `/${name}`
      yield* Effect.acquireRelease(
        asAdmin((sql) => sql`CREATE DATABASE ${sql(name)}`),
        () => Effect.ignore(asAdmin((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`))
      )
      yield* Migrations.migrateUrl(url.toString())
      const client = PgClient.layer({ url: Redacted.make(url.toString()), maxConnections: 8 })
      const kit = Layer.effect(
        Kit,
        Effect.map(SqlClient.SqlClient, (sql): KitService => ({
          // A database holds one set of sessions.
          directory: undefined,
          location: unique,
          put: (location, lines) =>
            sql.withTransaction(Effect.gen(function*() {
              const entries = lines.slice(1)
              yield* sql`DELETE FROM session_tree_sessions WHERE id = ${location}`
              yield* sql`
                INSERT INTO session_tree_sessions (id, header, head, incarnation)
                VALUES (${location}, ${lines[0] ?? null}, ${entries.length}::int4, gen_random_uuid())`
              yield* sql`
                INSERT INTO session_tree_entries (session_id, seq, entry_id, line)
                SELECT ${location}, e.ord::int4, e.entry_id, e.line
                  FROM unnest(${entryIdsOf(entries)}::text[], ${entries}::text[]) WITH ORDINALITY AS e(entry_id, line, ord)`
            })).pipe(Effect.orDie),
          raw: (location) =>
            Effect.gen(function*() {
              const [session] = yield* sql<{ readonly header: string | null }>`
                SELECT header FROM session_tree_sessions WHERE id = ${location}`
              if (session === undefined) return undefined
              const entries = yield* sql<{ readonly line: string }>`
                SELECT line FROM session_tree_entries WHERE session_id = ${location} ORDER BY seq`
              return [...(session.header === null ? [] : [session.header]), ...entries.map((row) => row.line)]
            }).pipe(Effect.orDie),
          putBlob: (location, hash, bytes) =>
            sql`
              INSERT INTO session_tree_blobs (session_id, hash, size, bytes) VALUES (${location}, ${hash}, ${bytes.length}, ${bytes})
              ON CONFLICT (session_id, hash) DO UPDATE SET size = EXCLUDED.size, bytes = EXCLUDED.bytes`.pipe(Effect.asVoid, Effect.orDie),
          removeBlob: (location, hash) =>
            sql`DELETE FROM session_tree_blobs WHERE session_id = ${location} AND hash = ${hash}`.pipe(Effect.asVoid, Effect.orDie),
          blobs: (location) =>
            sql<{ readonly hash: string }>`SELECT hash FROM session_tree_blobs WHERE session_id = ${location} ORDER BY hash`.pipe(
              Effect.map((rows) => rows.map((row) => row.hash)),
              Effect.orDie
            ),
          remove: (location) => sql`DELETE FROM session_tree_sessions WHERE id = ${location}`.pipe(Effect.asVoid, Effect.orDie)
        }))
      )
      return Layer.mergeAll(PgJournal.layer, PgCatalog.layer, PgSearch.layer, kit).pipe(Layer.provide(client))
    })
  )
})

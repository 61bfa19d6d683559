/**
 * S4. Live latency: from an append resolving (durable) to an open page hearing
 * of it (the server-sent event of `/events?s=…`), and to the page having what it
 * lays in (the answer of `/s/…/since`), on files (`fs.watch`) and PostgreSQL
 * (`LISTEN`/`NOTIFY`), with the append itself (one durable commit) as the
 * baseline of each, same run. The appends are made by this process through the
 * library; the server learns of them only as any other process's (the kernel's
 * notification, the database's), since it reads no state of the store.
 *
 * Then the same on a session that already holds `entries` entries (100,000 by
 * default), its page open (laid out) before the first append: what a change to
 * a large session costs the server (it reads the appended lines, extends its
 * layout and sends the page what changed). The page asks `/since` after every
 * change, as its script does, holding the tree's rows of its version.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Ids from "@session-tree/core/Ids"
import type { SearchIndex } from "@session-tree/core/Search"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionChanges } from "@session-tree/core/SessionChanges"
import type { SessionError } from "@session-tree/core/SessionError"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Migrations from "@session-tree/pg/Migrations"
import * as PgJournal from "@session-tree/pg/PgJournal"
import * as Server from "@session-tree/server/Server"
import { bootServer } from "@session-tree/testing/Postgres"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Redacted from "effect/Redacted"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { linearSession } from "../dataV2.js"
import { now, quantile, rounds, type Row, summarize } from "../harness.js"

export interface LiveOptions {
  /** Appends measured per backend (default 100). */
  readonly appends: number
  /** Entries of the large session (0: no large session). */
  readonly entries: number
  /** Appends measured per backend on the large session. */
  readonly largeAppends: number
}

/** A linear version-2 session of `n` entries, user and assistant by turns. */
const largeRecords = (id: string, n: number): Sessions.Records => linearSession(id, n) as unknown as Sessions.Records

/** A reader of `/events?s=…` that resolves the next `change` event. */
const listen = async (url: string) => {
  const response = await fetch(url)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let buffered = ""
  let waiting: (() => void) | undefined
  let heard = 0
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffered += decoder.decode(value, { stream: true })
      let end = buffered.indexOf("\n\n")
      while (end >= 0) {
        if (buffered.slice(0, end).startsWith("event: change")) {
          heard++
          waiting?.()
        }
        buffered = buffered.slice(end + 2)
        end = buffered.indexOf("\n\n")
      }
    }
  })()
  return {
    /** Resolves once `n` changes were heard in all. */
    until: (n: number) => new Promise<void>((resolve) => (heard >= n ? resolve() : (waiting = () => heard >= n && resolve()))),
    heard: () => heard,
    close: () => reader.cancel()
  }
}

type Backend = SessionJournal | SessionCatalog | SearchIndex | SessionChanges | Ids.Ids

const measure = async (
  name: string,
  backend: Layer.Layer<Backend, SessionError>,
  options: Server.Options,
  location: string,
  appends: number,
  large?: Sessions.Records
) => {
  const runtime = ManagedRuntime.make(backend)
  const scope = Effect.runSync(Scope.make())
  try {
    // The large session is stored before the server starts; then this process holds it open to append.
    if (large !== undefined) {
      await runtime.runPromise(Effect.flatMap(Sessions.Sessions, (s) => s.import(large, options.backend === "files" ? location : undefined)).pipe(Effect.provide(Sessions.layer)))
    }
    const running = await runtime.runPromise(Server.serve(options).pipe(Scope.extend(scope)))
    const store = await runtime.runPromise((large === undefined ? SessionStore.create(location) : SessionStore.load(location)).pipe(Scope.extend(scope)))
    const key = options.backend === "files" ? Path.basename(location) : location
    // The page exists once the server has heard of the session.
    for (let k = 0; k < 200 && (await fetch(`${running.url}s/${encodeURIComponent(key)}`)).status !== 200; k++) await new Promise((r) => setTimeout(r, 25))
    const events = await listen(`${running.url}events?s=${encodeURIComponent(key)}`)
    let parent: string | null = store.entries.at(-1)?.id ?? null
    let n = store.entries.length
    const append = async () => {
      const entry = await runtime.runPromise(store.append(parent, { role: "user", id: `m${++n}`, content: large === undefined ? `message ${n}` : [{ type: "text", text: `message ${n}` }] }))
      parent = entry.id
    }
    // The page, as its script keeps it: its version and the version of the tree's rows it holds, so
    // that `/since` sends it what changed since (the rows as changes, when it holds the rows before).
    let page = { version: "", rows: "", n: 0 }
    const since = async () => {
      const answer = await fetch(`${running.url}s/${encodeURIComponent(key)}/since?v=${encodeURIComponent(page.version)}&r=${encodeURIComponent(page.rows)}&n=${page.n}&leaf=${page.n - 1}`)
      const body = (await answer.json()) as { version: string; n?: number }
      if (body.n !== n) throw new Error(`the page had ${body.n} entries, not ${n}`)
      page = { version: body.version, rows: body.version, n }
    }
    // Every append's change reaches the page, as a page asks on each event; only the last step's is timed.
    const heardThenSince = async (before: number) => {
      await events.until(before + 1)
      await since()
    }
    const samples = await rounds([
      {
        name: `${name}: the append (one durable commit)`,
        run: async () => {
          const before = events.heard()
          const t = now()
          await append()
          const ms = now() - t
          await heardThenSince(before)
          return ms
        }
      },
      {
        name: `${name}: append → the page hears of it`,
        run: async () => {
          const before = events.heard()
          await append()
          const t = now()
          await events.until(before + 1)
          const ms = now() - t
          await since()
          return ms
        }
      },
      {
        name: `${name}: append → the page has the new entry (/since answered)`,
        run: async () => {
          const before = events.heard()
          await append()
          const t = now()
          await heardThenSince(before)
          return now() - t
        }
      }
    ], { rounds: appends, warmup: large === undefined ? 3 : 1 })
    await events.close()
    return samples
  } finally {
    await runtime.runPromise(Scope.close(scope, Exit.void))
    await runtime.dispose()
  }
}

export const benchLive = async (options: LiveOptions, dir: string): Promise<{ readonly rows: Array<Row>; readonly p95: ReadonlyArray<readonly [string, number]> }> => {
  const rows: Array<Row> = []
  const p95: Array<readonly [string, number]> = []
  const add = (name: string, samples: Awaited<ReturnType<typeof measure>>) => {
    rows.push(...summarize(name, samples, samples[0]!.name))
    for (const s of samples.slice(1)) p95.push([s.name, quantile(s.ms, 0.95)])
  }
  const files = Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)
  add("files", await measure("files", files, { backend: "files", directory: dir, port: 0 }, Path.join(dir, "live.jsonl"), options.appends))
  const large = options.entries > 0 ? largeRecords("live-large", options.entries) : undefined
  const largeName = (backend: string) => `${backend}, a session of ${options.entries.toLocaleString("en-US")} entries`
  if (large !== undefined) {
    const where = Path.join(dir, "large")
    NFS.mkdirSync(where)
    add(largeName("files"), await measure(largeName("files"), files, { backend: "files", directory: where, port: 0 }, Path.join(where, "live-large.jsonl"), options.largeAppends, large))
  }
  const external = process.env["SESSION_TREE_TEST_DB"]
  const server = external !== undefined && external !== "" ? undefined : await bootServer("bench-live")
  const adminUrl = server?.url() ?? external!
  const name = `st_bench_live_${process.pid}`
  const admin = ManagedRuntime.make(PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 }))
  try {
    await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`CREATE DATABASE ${sql(name)}`))
    const url = new URL(adminUrl)
    url.pathname = `/${name}`
    await Effect.runPromise(Migrations.migrateUrl(url.toString()))
    const database = Layer.merge(PgJournal.layerUrl(url.toString()), Ids.layerRandom)
    add("PostgreSQL", await measure("PostgreSQL", database, { backend: "database", port: 0 }, "live", options.appends))
    if (large !== undefined) add(largeName("PostgreSQL"), await measure(largeName("PostgreSQL"), database, { backend: "database", port: 0 }, "live-large", options.largeAppends, large))
  } finally {
    await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`)).catch(() => {})
    await admin.dispose()
    server?.dispose()
  }
  return { rows, p95 }
}

/**
 * S4. Live latency: from an append resolving (durable) to an open page hearing
 * of it (the server-sent event of `/events?s=…`), and to the page having what it
 * lays in (the answer of `/s/…/since`), on files (`fs.watch`) and PostgreSQL
 * (`LISTEN`/`NOTIFY`), with the append itself (one durable commit) as the
 * baseline of each, same run. The appends are made by this process through the
 * library; the server learns of them only as any other process's (the kernel's
 * notification, the database's), since it reads no state of the store.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import * as Ids from "@session-tree/core/Ids"
import type { SearchIndex } from "@session-tree/core/Search"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionChanges } from "@session-tree/core/SessionChanges"
import type { SessionError } from "@session-tree/core/SessionError"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
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
import * as Path from "node:path"
import { now, quantile, rounds, type Row, summarize } from "../harness.js"

export interface LiveOptions {
  /** Appends measured per backend (default 100). */
  readonly appends: number
}

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

const measure = async (name: string, backend: Layer.Layer<Backend, SessionError>, options: Server.Options, location: string, appends: number) => {
  const runtime = ManagedRuntime.make(backend)
  const scope = Effect.runSync(Scope.make())
  try {
    const running = await runtime.runPromise(Server.serve(options).pipe(Scope.extend(scope)))
    const store = await runtime.runPromise(SessionStore.create(location).pipe(Scope.extend(scope)))
    const key = options.backend === "files" ? Path.basename(location) : location
    // The page exists once the server has heard of the session.
    for (let k = 0; k < 200 && (await fetch(`${running.url}s/${encodeURIComponent(key)}`)).status !== 200; k++) await new Promise((r) => setTimeout(r, 25))
    const events = await listen(`${running.url}events?s=${encodeURIComponent(key)}`)
    let parent: string | null = null
    let n = 0
    const append = async () => {
      const entry = await runtime.runPromise(store.append(parent, { role: "user", id: `m${++n}`, content: `message ${n}` }))
      parent = entry.id
    }
    const samples = await rounds([
      { name: `${name}: the append (one durable commit)`, run: append },
      {
        name: `${name}: append → the page hears of it`,
        run: async () => {
          const before = events.heard()
          await append()
          const t = now()
          await events.until(before + 1)
          return now() - t
        }
      },
      {
        name: `${name}: append → the page has the new entry (/since answered)`,
        run: async () => {
          const before = events.heard()
          await append()
          const t = now()
          await events.until(before + 1)
          const since = await fetch(`${running.url}s/${encodeURIComponent(key)}/since?v=x&n=${n - 1}&leaf=${n - 2}`)
          const body = (await since.json()) as { n?: number }
          if (body.n !== n) throw new Error(`the page had ${body.n} entries, not ${n}`)
          return now() - t
        }
      }
    ], { rounds: appends, warmup: 3 })
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
  add("files", await measure("files", Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom), { backend: "files", directory: dir, port: 0 }, Path.join(dir, "live.jsonl"), options.appends))
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
    add("PostgreSQL", await measure("PostgreSQL", Layer.merge(PgJournal.layerUrl(url.toString()), Ids.layerRandom), { backend: "database", port: 0 }, "live", options.appends))
  } finally {
    await admin.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`)).catch(() => {})
    await admin.dispose()
    server?.dispose()
  }
  return { rows, p95 }
}

/**
 * A fresh database per test file on the run's server (see global-setup.ts),
 * migrated, and dropped again when its scope closes.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { Ids, type IdsService } from "@session-tree/core/Ids"
import type { Message } from "@session-tree/core/Record"
import { isSessionError } from "@session-tree/core/SessionError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { inject } from "vitest"
import * as Migrations from "../../src/Migrations.js"
import * as PgJournal from "../../src/PgJournal.js"

/** The URL of `database` on the server that `adminUrl` names. */
export const urlOf = (adminUrl: string, database: string): string => {
  const url = new URL(adminUrl)
  url.pathname = `/${encodeURIComponent(database)}`
  return url.toString()
}

let made = 0

/** A new, empty database on the run's server, dropped (with its connections) when the scope closes; its URL. */
export const freshDatabase = (label: string, adminUrl: string = inject("pgUrl")): Effect.Effect<string, unknown, Scope.Scope> => {
  // A name of our own making (lower-case letters, digits, underscores), passed as an identifier.
  const name = `st_${label.replace(/[^a-z0-9]/gi, "_").toLowerCase()}_${process.pid}_${++made}_${Math.random().toString(36).slice(2, 8)}`
  const admin = PgClient.layer({ url: Redacted.make(adminUrl), maxConnections: 1 })
  const run = <A, E>(f: (sql: SqlClient.SqlClient) => Effect.Effect<A, E>) =>
    Effect.scoped(Effect.provide(Effect.flatMap(SqlClient.SqlClient, f), admin))
  return Effect.acquireRelease(
    Effect.as(run((sql) => sql`CREATE DATABASE ${sql(name)}`), urlOf(adminUrl, name)),
    () => Effect.ignore(run((sql) => sql`DROP DATABASE IF EXISTS ${sql(name)} WITH (FORCE)`))
  )
}

export class TestDatabase extends Context.Tag("@session-tree/pg/test/TestDatabase")<TestDatabase, { readonly url: string }>() {}

/**
 * A fresh, migrated database and the PostgreSQL journal and catalog over it
 * (with the `SqlClient` they run on), plus deterministic IDs.
 */
export const layer = (
  label: string,
  options?: { readonly journal?: PgJournal.Options; readonly client?: Partial<PgClient.PgClientConfig> }
): Layer.Layer<PgJournal.Services | TestDatabase | Ids, unknown> =>
  Layer.unwrapScoped(
    Effect.gen(function*() {
      const url = yield* freshDatabase(label)
      yield* Migrations.migrateUrl(url)
      return Layer.mergeAll(
        PgJournal.layerClient({ url: Redacted.make(url), maxConnections: 8, ...options?.client }, options?.journal),
        Layer.succeed(TestDatabase, { url }),
        Layer.sync(Ids, () => counterIds("t"))
      )
    })
  )

/** IDs unique within one process and prefix: `PREFIX-1`, `PREFIX-2`, … */
export const counterIds = (prefix: string): IdsService => {
  let n = 0
  return {
    sessionId: Effect.sync(() => `${prefix}-session-${++n}`),
    entryId: Effect.sync(() => `${prefix}-${++n}`)
  }
}

export const user = (id: string, content: string): Message => ({ role: "user", id, content })

export const codeOf = (u: unknown): string => (isSessionError(u) ? u.code : `UNTYPED(${String(u)})`)

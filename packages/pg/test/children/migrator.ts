/**
 * Migrates databases on request, over a connection of its own per database.
 * Usage: migrator.ts; then one line per database on stdin:
 * - "migrate URL": `Migrations.migrateUrl`. Prints "ok APPLIED" (the versions
 *   this process applied, as JSON) or "error CODE message".
 * - "unlocked URL": the control experiment, the same DDL as
 *   `CREATE TABLE IF NOT EXISTS` in one transaction but without the advisory
 *   lock. Prints "ok" or "error SQLSTATE".
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as PgClient from "@effect/sql-pg/PgClient"
import { isSessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { migrations, VERSION_TABLE } from "../../src/internal/schema.js"
import * as Migrations from "../../src/Migrations.js"

const unlocked = (url: string) =>
  Effect.scoped(Effect.provide(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.withTransaction(Effect.forEach(
        [VERSION_TABLE, ...migrations.flatMap((m) => m.statements.map((s) => s.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS")))],
        (statement) => sql.unsafe(statement),
        { discard: true }
      ))),
    PgClient.layer({ url: Redacted.make(url), maxConnections: 1 })
  )).pipe(
    Effect.as("ok"),
    Effect.catchAll((e) => Effect.succeed(`error ${(e.cause as { code?: string } | undefined)?.code ?? "?"}`)),
    Effect.catchAllDefect((d) => Effect.succeed(`error ${(d as { cause?: { code?: string } }).cause?.code ?? "UNTYPED"}`))
  )

const out = (line: string) => process.stdout.write(line + "\n")
let buffered = ""
process.stdin.setEncoding("utf8")
process.stdin.on("data", (chunk: string) => {
  buffered += chunk
  let nl = buffered.indexOf("\n")
  while (nl >= 0) {
    const line = buffered.slice(0, nl)
    buffered = buffered.slice(nl + 1)
    const [command, url] = line.split(" ") as [string, string]
    if (command === "unlocked") void Effect.runPromise(unlocked(url)).then(out)
    else void Effect.runPromise(
      Migrations.migrateUrl(url).pipe(
        Effect.map((migrated) => `ok ${JSON.stringify(migrated.applied)}`),
        Effect.catchAll((e) => Effect.succeed(`error ${e.code} ${e.message.replace(/\n/g, " ")}`)),
        Effect.catchAllDefect((d) => Effect.succeed(`error ${isSessionError(d) ? d.code : "UNTYPED"} ${String(d).replace(/\n/g, " ")}`))
      )
    ).then(out)
    nl = buffered.indexOf("\n")
  }
})
process.stdin.on("end", () => process.exit(0))
out("loaded")

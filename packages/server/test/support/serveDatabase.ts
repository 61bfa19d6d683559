/**
 * A server for the tests over a fresh, migrated database of the run's PostgreSQL
 * server (`inject("pgUrl")`), with the corpus stored through the library.
 */
import * as Codec from "@session-tree/core/Codec"
import * as Sessions from "@session-tree/core/Sessions"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Database from "../../../pg/test/support/database.js"
import * as Server from "../../src/Server.js"
import type { Served } from "./serve.js"

/** The corpus stored in the database of `layer` through the library, under each session's ID. */
const importCorpus = Effect.gen(function*() {
  const sessions = yield* Sessions.Sessions
  for (const session of Corpus.corpus) {
    const decoded = Codec.decodeLines({ lines: session.lines, sizes: session.lines.map(Codec.utf8Length), tail: "none" })
    if (decoded._tag === "Left") return yield* decoded.left
    yield* sessions.import({ header: decoded.right.header, entries: decoded.right.history.entries })
  }
})

/** Starts a server over a fresh, migrated database (with the corpus in it unless `empty`, then `records`). */
export const serveDatabase = async (
  label: string,
  options: Partial<Server.Options> & { readonly empty?: boolean; readonly records?: ReadonlyArray<Sessions.Records> } = {}
): Promise<Served> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const context = await Effect.runPromise(Layer.buildWithScope(Layer.provideMerge(Sessions.layer, Database.layer(label)), scope))
    if (options.empty !== true) await Effect.runPromise(Effect.provide(importCorpus, context))
    const add = (records: ReadonlyArray<Sessions.Records>) =>
      Effect.runPromise(Effect.provide(Effect.flatMap(Sessions.Sessions, (s) => Effect.forEach(records, (r) => s.import(r), { discard: true })), context))
    if ((options.records ?? []).length > 0) await add(options.records!)
    const url = Effect.runSync(Effect.map(Database.TestDatabase, (db) => db.url).pipe(Effect.provide(context)))
    const running = await Effect.runPromise(Server.serve({ backend: "database", ...options }).pipe(Scope.extend(scope), Effect.provide(context)))
    const ids = new Map(Corpus.corpus.map((s) => [s.name, s.id]))
    return { ...running, backend: "database", where: url, keyOf: (name) => ids.get(name) ?? name, add, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  }
}

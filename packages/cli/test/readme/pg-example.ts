import { Ids, Sessions, SessionStore, SessionTree } from "@session-tree/core"
import { Migrations, PgJournal } from "@session-tree/pg"
import { Effect, Layer } from "effect"

// postgres://user:password@host:5432/database; every node of the platform uses the same one.
const url = process.env.SESSION_TREE_DB!

const program = Effect.gen(function*() {
  // Creates or upgrades the schema; safe when several nodes start at once.
  yield* Migrations.migrate
  // In a database a session's location is its ID. Version-1 messages (one string each) are
  // stored in their version-2 form.
  const tree = yield* SessionTree.make(yield* SessionStore.create("chat-1"))
  const root = yield* tree.append({ role: "user", id: "m1", content: "What is in /project?" })
  yield* tree.append({ role: "assistant", id: "m2", content: "Let me look.", toolCalls: [] })

  // Another node loads the session, appends, and the first node's stale store loses, typed.
  const other = yield* SessionStore.load("chat-1")
  yield* other.append(root.id, { role: "user", id: "m3", content: "Which files are large?" })
  const lost = yield* Effect.flip(tree.append({ role: "user", id: "m4", content: "too late" }))
  console.log(lost.code) // SESSION_REPLACED

  const sessions = yield* Sessions.Sessions
  const forked = yield* sessions.fork("chat-1", root.id, "chat-2")
  const listing = yield* sessions.list()
  console.log(listing.sessions.map((s) => `${s.location} ${Sessions.isUnreadable(s) ? s.error.code : s.entries}`)) // [ 'chat-2 1', 'chat-1 3' ]
  console.log(forked.title) // What is in /project?
})

// The PostgreSQL journal and catalog over one connection pool, the sessions over them, random IDs.
const Live = Sessions.layer.pipe(Layer.provideMerge(Layer.merge(PgJournal.layerUrl(url), Ids.layerRandom)))

await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Live)))

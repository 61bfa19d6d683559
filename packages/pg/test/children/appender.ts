/**
 * Appends to sessions in a PostgreSQL database over connections of its own.
 * Usage: appender.ts URL TAG MODE ARGS…
 *
 * Everything is loaded before it prints "loaded"; it starts on "go" from stdin.
 * Every batch the store hands the backend is printed as "batch ID,ID,…" before
 * the backend sees it, and every entry as "ack ENTRY MESSAGE SESSION" only once
 * its append has resolved, so the parent knows both what may have been
 * committed and what was promised. A typed loss of a race prints "lost CODE";
 * anything else prints "error CODE message" and exits 3.
 *
 * - `loop SESSION`: opens SESSION (creating it when missing) and appends 1, 2
 *   or 3 entries at a time (single and group commits) until it is killed.
 * - `race COUNT SESSION…`: appends COUNT entries, the i-th to the i-th session
 *   round robin, each to that session's newest entry; after SESSION_REPLACED or
 *   SESSION_BUSY it reloads the session and tries the same message again.
 *   Prints "done" at the end.
 */
import { Ids } from "@session-tree/core/Ids"
import type { Message } from "@session-tree/core/Record"
import { isSessionError, type SessionError } from "@session-tree/core/SessionError"
import { SessionJournal, type SessionJournalService, type Writer } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as PgJournal from "../../src/PgJournal.js"

const [url, tag, mode, ...args] = process.argv.slice(2) as [string, string, string, ...Array<string>]
const out = (line: string) => process.stdout.write(line + "\n")
const codeOf = (u: unknown): string => (isSessionError(u) ? u.code : "UNTYPED")

const user = (id: string): Message => ({ role: "user", id, content: `content of ${id}` })

/** The journal in context, printing each batch before the backend gets it. */
const announcing = (journal: SessionJournalService): SessionJournalService => {
  const wrap = (writer: Writer): Writer => ({
    append: (batch) =>
      Effect.suspend(() => {
        if (batch.ids.length > 0) out(`batch ${batch.ids.join(",")}`)
        return writer.append(batch)
      })
  })
  return {
    ...journal,
    create: (location, session) => Effect.map(journal.create(location, session), (c) => ({ ...c, writer: wrap(c.writer) })),
    hold: (location) => Effect.map(journal.hold(location), (o) => ({ ...o, writer: wrap(o.writer) }))
  }
}

type Env = SessionJournal | Ids | Scope.Scope

const lostRace = (e: SessionError) => e.code === "SESSION_REPLACED" || e.code === "SESSION_BUSY"

const loop = (session: string): Effect.Effect<never, SessionError, Env> =>
  Effect.gen(function*() {
    let store = yield* SessionStore.open(session)
    out(`ready ${store.entries.length}`)
    for (let n = 0, round = 0; ; round++) {
      const k = 1 + (round % 3)
      const leaf = store.entries[store.entries.length - 1]?.id ?? null
      const appends = Array.from({ length: k }, (_, i) => {
        const messageId = `${tag}-m${n + i}`
        return store.append(leaf, user(messageId)).pipe(
          Effect.tap((entry) => Effect.sync(() => out(`ack ${entry.id} ${messageId} ${session}`)))
        )
      })
      n += k
      const done = yield* Effect.either(Effect.all(appends, { concurrency: "unbounded" }))
      if (done._tag === "Left") {
        // A commit of a writer killed before us can land after we loaded: a typed loss, then a reload.
        if (!lostRace(done.left)) return yield* done.left
        out(`lost ${done.left.code}`)
        store = yield* SessionStore.load(session)
      }
    }
  })

const race = (count: number, sessions: ReadonlyArray<string>): Effect.Effect<void, SessionError, Env> =>
  Effect.gen(function*() {
    const stores = new Map<string, SessionStore.SessionStore>()
    for (const session of sessions) stores.set(session, yield* SessionStore.load(session))
    out("ready")
    for (let i = 0; i < count; i++) {
      const session = sessions[i % sessions.length]!
      const messageId = `${tag}-m${i}`
      for (;;) {
        const store = stores.get(session)!
        const leaf = store.entries[store.entries.length - 1]?.id ?? null
        const appended = yield* Effect.either(store.append(leaf, user(messageId)))
        if (appended._tag === "Right") {
          out(`ack ${appended.right.id} ${messageId} ${session}`)
          break
        }
        if (!lostRace(appended.left)) return yield* appended.left
        out(`lost ${appended.left.code}`)
        stores.set(session, yield* SessionStore.load(session))
      }
    }
    out("done")
  })

const program: Effect.Effect<unknown, SessionError, Env> = mode === "loop"
  ? loop(args[0]!)
  : race(Number(args[0]), args.slice(1))

let n = 0
const ids = Layer.succeed(Ids, {
  sessionId: Effect.sync(() => `${tag}-session`),
  entryId: Effect.sync(() => `${tag}-${++n}`)
})
const pg = PgJournal.layerClient({ url: Redacted.make(url), maxConnections: 2, applicationName: `session-tree-${tag}` })
// The announcing journal replaces the plain one; the catalog and client stay as they are.
const journal = Layer.effect(SessionJournal, Effect.map(SessionJournal, announcing)).pipe(Layer.provide(pg))

out("loaded")
process.stdin.once("data", () => {
  const fail = (code: string, message: string) =>
    Effect.sync(() => {
      out(`error ${code} ${message.replace(/\n/g, " ")}`)
      return 3
    })
  const main = Effect.scoped(program).pipe(
    Effect.provide(Layer.mergeAll(journal, ids)),
    Effect.as(0),
    Effect.catchAll((e) => fail(codeOf(e), e.message)),
    Effect.catchAllDefect((d) => fail("UNTYPED", String(d)))
  )
  void Effect.runPromise(main).then((code) => process.exit(code))
})

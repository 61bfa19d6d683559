/**
 * Another process appending to a session while a page shows it: each line on
 * stdin (`user TEXT`) is one user message appended under the newest entry of the
 * session (a file path, or with a database URL as the second argument, an ID),
 * then `appended ENTRY-ID` is printed once the append is durable. `ready` is
 * printed first, once the backend is reached.
 *
 *   node appender.mjs LOCATION [DATABASE-URL]
 */
import * as Ids from "@session-tree/core/Ids"
import type { SessionError } from "@session-tree/core/SessionError"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as PgJournal from "@session-tree/pg/PgJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Readline from "node:readline"

const [location, url] = process.argv.slice(2)
const journal: Layer.Layer<SessionJournal, SessionError> = url === undefined ? FileJournal.layerWithFs() : PgJournal.layerUrl(url)
const runtime = ManagedRuntime.make(Layer.merge(journal, Ids.layerRandom))

const append = (content: string) =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.load(location!)
    const newest = store.entries.at(-1)?.id ?? null
    return yield* store.append(newest, { role: "user", id: `m-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`, content })
  }))

const main = async () => {
  await runtime.runPromise(Effect.void)
  console.log("ready")
  for await (const line of Readline.createInterface({ input: process.stdin })) {
    if (!line.startsWith("user ")) continue
    const entry = await runtime.runPromise(append(line.slice(5)))
    console.log(`appended ${entry.id}`)
  }
  await runtime.dispose()
}

main().then(() => process.exit(0), (error: unknown) => {
  console.error(String(error))
  process.exit(1)
})

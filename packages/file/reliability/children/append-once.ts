/**
 * Loads a session and appends one entry. Usage: append-once.ts PATH
 * Prints "ok ID" or "error CODE message". Used to run as an unprivileged user.
 */
import * as Effect from "effect/Effect"
import * as SessionStore from "@session-tree/core/SessionStore"
import { codeOf, prefixedIds, run, user } from "../support/run.js"

const [path] = process.argv.slice(2) as [string]
const program = Effect.gen(function*() {
  const store = yield* SessionStore.load(path)
  const last = store.entries[store.entries.length - 1]?.id ?? null
  const entry = yield* store.append(last, user("once", "appended once"))
  return entry.id
})
run(Effect.either(program), undefined, prefixedIds(`once-${process.pid}`)).then(
  (r) => {
    process.stdout.write(r._tag === "Right" ? `ok ${r.right}\n` : `error ${r.left.code} ${r.left.message}\n`)
    process.exit(0)
  },
  (e: unknown) => {
    process.stdout.write(`error ${codeOf(e)} ${String(e)}\n`)
    process.exit(0)
  }
)

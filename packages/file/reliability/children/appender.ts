/**
 * Appends to one session file until it is killed. Usage: appender.ts PATH TAG
 *
 * Everything is imported before it prints "loaded" and reads "go" on stdin, so
 * the parent can spawn it ahead of time. It opens the file (creating it when missing), prints
 * "ready N", then appends 1, 2 or 3 entries at a time (single and group commits)
 * and prints "ack ID" only after that append resolved. Any failure prints
 * "error CODE message" and exits 3: with one writer and a recovered file, none is expected.
 */
import * as Effect from "effect/Effect"
import * as SessionStore from "@session-tree/core/SessionStore"
import { codeOf, run, prefixedIds, user } from "../support/run.js"
import { contentFor } from "../support/content.js"

const [path, tag] = process.argv.slice(2) as [string, string]
const out = (line: string) => process.stdout.write(line + "\n")
const fail = (code: string, message: string): never => {
  out(`error ${code} ${message.replace(/\n/g, " ")}`)
  process.exit(3)
}

out("loaded")
process.stdin.once("data", () => {
  const program = Effect.gen(function*() {
    const store = yield* SessionStore.open(path)
    out(`ready ${store.entries.length}`)
    let leaf = store.entries[store.entries.length - 1]?.id ?? null
    for (let n = 0, round = 0; ; round++) {
      const k = 1 + (round % 3)
      const batch = Array.from({ length: k }, (_, i) => {
        const messageId = `${tag}-m${n + i}`
        return store.append(leaf, user(messageId, contentFor(messageId))).pipe(
          Effect.tap((entry) => Effect.sync(() => out(`ack ${entry.id}`)))
        )
      })
      const entries = yield* Effect.all(batch, { concurrency: "unbounded" })
      leaf = entries[entries.length - 1]!.id
      n += k
    }
  })
  const main = program.pipe(
    Effect.catchAll((e) => Effect.sync(() => fail(codeOf(e), e.message))),
    Effect.catchAllDefect((d) => Effect.sync(() => fail("UNTYPED", String(d))))
  )
  void run(main, undefined, prefixedIds(tag))
})

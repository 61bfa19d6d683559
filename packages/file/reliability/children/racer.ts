/**
 * One of several processes appending to the same file. Usage: racer.ts PATH TAG COUNT
 *
 * Prints "loaded", waits for "go", then appends COUNT entries (message IDs
 * TAG-m0 … TAG-m{COUNT-1}), each to the newest entry it knows. It prints "ack ID"
 * after an append resolved. When an append or a load loses a race it must fail
 * with SESSION_BUSY or SESSION_REPLACED and leave the store's memory unchanged;
 * it prints "retry CODE", reloads after a short random pause and appends the same
 * message again. Anything else prints "error CODE message" and exits 3.
 */
import * as Effect from "effect/Effect"
import * as SessionStore from "@session-tree/core/SessionStore"
import { contentFor } from "../support/content.js"
import { codeOf, prefixedIds, run, user } from "../support/run.js"

const [path, tag, countText] = process.argv.slice(2) as [string, string, string]
const total = Number(countText)
const out = (line: string) => process.stdout.write(line + "\n")
const fail = (code: string, message: string): never => {
  out(`error ${code} ${message.replace(/\n/g, " ")}`)
  process.exit(3)
}
const lostRace = (code: string) => code === "SESSION_BUSY" || code === "SESSION_REPLACED"

out("loaded")
process.stdin.once("data", () => {
  const program = Effect.gen(function*() {
    let done = 0
    let lost = 0
    while (done < total) {
      const session = yield* Effect.either(Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.load(path)
        while (done < total) {
          const before = store.entries
          const leaf = before[before.length - 1]?.id ?? null
          const messageId = `${tag}-m${done}`
          const appended = yield* Effect.either(store.append(leaf, user(messageId, contentFor(messageId))))
          if (appended._tag === "Left") {
            // A failed append changes nothing in memory: the very same frozen array is still there.
            if (store.entries !== before) fail("MEMORY_CHANGED", `${appended.left.code} changed the store's entries`)
            return yield* Effect.fail(appended.left)
          }
          out(`ack ${appended.right.id}`)
          done++
          lost = 0
        }
      })))
      if (session._tag === "Left") {
        const code = codeOf(session.left)
        if (!lostRace(code)) fail(code, session.left.message)
        out(`retry ${code}`)
        lost++
        yield* Effect.sleep(Math.floor(Math.random() * 2 ** Math.min(lost, 6)))
      }
    }
    out("done")
  })
  const main = program.pipe(Effect.catchAllDefect((d) => Effect.sync(() => fail("UNTYPED", String(d)))))
  // stdin stays open, so the process ends explicitly (stdout to a pipe is written synchronously).
  void run(main, undefined, prefixedIds(tag)).then(() => process.exit(0))
})

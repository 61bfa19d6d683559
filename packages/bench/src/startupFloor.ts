/**
 * The floor of `session-tree verify`'s start-up: the library alone reading a session
 * (`SessionStore.read` on files, as `verify` reads it), with no argument parser, no other command
 * and no output but one line. The start-up benchmark bundles it the way the command is bundled
 * (`packages/cli/scripts/build.mjs --entry`) and starts it through the command's own loader, so
 * the difference between the two is what the command adds to the library.
 *
 * Usage: node bin/session-tree.cjs SESSION (from the directory the benchmark makes).
 */
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

const Live = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))

Effect.runPromise(SessionStore.read(process.argv[2] ?? "").pipe(Effect.provide(Live))).then(
  (loaded) => console.log(`ok ${loaded.entries.length} entries`),
  (error: unknown) => {
    console.error(String(error))
    process.exitCode = 1
  }
)

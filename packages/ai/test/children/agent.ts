/**
 * An agent in a process of its own, on a session file: `node agent.ts <file> <scenario>`.
 * - `tools`: a turn with reasoning (with a signature) and a tool call, then an answer.
 * - `hang`: a turn whose first step calls a tool and whose second model call never
 *   returns; prints `calling PID` first (its own process ID), so that the parent can kill
 *   it mid-step and check that the process that works is gone.
 * - `resume`: a turn answered at once; prints the prompt the model was given.
 * Prints `done <entry count>` when the turn is committed.
 */
import { Ids, SessionStore, SessionTree } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Agent } from "../../src/index.js"
import { type Answer, callTool, finish, handlers, scripted, shape, SIGNATURE, text, tools } from "../support/scripted.js"

const [file, scenario] = process.argv.slice(2) as [string, string]

const step1: Answer = [
  { type: "reasoning", text: "I should look at the directory.", metadata: SIGNATURE },
  callTool("call-1", "list_dir", { path: "/project" }),
  finish(20, 8)
]
const answers: { readonly [scenario: string]: ReadonlyArray<Answer> } = {
  tools: [step1, text("It holds README.md and src/.")],
  hang: [
    [callTool("call-2", "list_dir", { path: "/project" }), finish(40, 4)],
    Effect.zipRight(Effect.sync(() => console.log(`calling ${process.pid}`)), Effect.never)
  ],
  resume: [text("Still here.")]
}
const script = scripted(answers[scenario]!)

const session = SessionTree.layer.pipe(
  Layer.provideMerge(SessionStore.layerOpen(file)),
  Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
)

const program = Effect.gen(function*() {
  const tree = yield* SessionTree.SessionTree
  const agent = yield* Agent.make({ system: "Be brief.", toolkit: tools })
  yield* agent.send(scenario === "tools" ? "What is in /project?" : scenario === "hang" ? "Look again." : "Still there?")
  if (scenario === "resume") console.log(JSON.stringify(shape(script.prompts[0]!)))
  console.log(`done ${tree.entries.length}`)
})

Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(session, script.layer, handlers({ "/project": ["README.md", "src/"] })))))
  .catch((error) => {
    console.error(error)
    process.exit(1)
  })

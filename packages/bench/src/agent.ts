/**
 * The agent's costs (`@session-tree/ai`), as ratios measured in one run:
 *
 * 1. One agent step (build the context, call a scripted model, commit its
 *    answer) on a 1,000-entry session, against the same step with no
 *    persistence (the prompt made from an array of messages, the answer pushed
 *    onto it). The step is `regenerate` of the newest answer, so the branch
 *    stays 1,000 entries long from round to round.
 * 2. `Conversation.build` of a 100,000-entry branch, against one pass over the
 *    entries that collects their messages.
 *
 *   npx tsx --conditions=@session-tree/source packages/bench/src/agent.ts [--rounds N] [--build-rounds N]
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import { Agent, Codec } from "@session-tree/ai"
import * as Conversation from "@session-tree/core/Conversation"
import * as Ids from "@session-tree/core/Ids"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import type * as RecordV2 from "@session-tree/core/RecordV2"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Path from "node:path"
import { arg } from "./args.js"
import { loadAverage, machine, rounds, summarize, table, tempDir } from "./harness.js"

const ENTRIES = 1_000
const BRANCH = 100_000
const TEXT = "The quick brown fox jumps over the lazy dog. ".repeat(5)

const answer: ReadonlyArray<Response.PartEncoded> = [
  { type: "text", text: TEXT },
  { type: "finish", reason: "stop", usage: { inputTokens: 1_000, outputTokens: 60, totalTokens: 1_060 } }
]

const modelLayer = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () => Effect.succeed([...answer]),
    streamText: () => Effect.dieMessage("not scripted")
  })
)

const message = (i: number): RecordV2.Message =>
  i % 2 === 0
    ? { role: "user", id: `m${i}`, content: [{ type: "text", text: `${i}: ${TEXT}` }] }
    : { role: "assistant", id: `m${i}`, content: [{ type: "text", text: `${i}: ${TEXT}` }] }

/** A session of `ENTRIES` alternating user and assistant messages, and an agent over it, open until `close`. */
const openAgent = async (journal: Layer.Layer<any>, location: string) => {
  const scope = Effect.runSync(Scope.make())
  const layer = SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerCreate(location)),
    Layer.provide(Layer.merge(journal, Ids.layerRandom)),
    Layer.merge(modelLayer)
  )
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const { agent, tree } = await Effect.runPromise(Effect.gen(function*() {
    const tree = yield* SessionTree.SessionTree
    for (let i = 0; i < ENTRIES; i += 100) {
      yield* tree.appendChain(Array.from({ length: 100 }, (_, k) => ({ kind: "message", message: message(i + k) })))
    }
    return { agent: yield* Agent.make(), tree }
  }).pipe(Effect.provide(context)))
  const last = tree.activeLeafId!
  return {
    step: () => Effect.runPromise(Effect.asVoid(agent.regenerate(last))),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

const stepRows = async (count: number) => {
  const temp = tempDir()
  const file = await openAgent(FileJournal.layerWithFs(), Path.join(temp.dir, "agent.jsonl"))
  const memory = await openAgent(MemoryJournal.layer, "agent")
  const messages = Array.from({ length: ENTRIES }, (_, i) => message(i))
  const bare = await Effect.runPromise(Effect.provide(LanguageModel.LanguageModel, modelLayer))
  let n = 0
  const noPersistence = () =>
    Effect.runPromise(Effect.gen(function*() {
      const prompt = yield* Codec.toPrompt(messages)
      const response = yield* bare.generateText({ prompt })
      const reply = yield* Codec.fromResponse(response, { id: `r${++n}` })
      messages.push(reply)
      messages.pop()
    }))
  try {
    const samples = await rounds([
      { name: "ours, file session (durable)", run: file.step },
      { name: "ours, memory session", run: memory.step },
      { name: "no persistence (prompt from an array)", run: noPersistence }
    ], { rounds: count, warmup: 10 })
    return summarize(`one agent step, ${ENTRIES.toLocaleString("en")}-entry session`, samples, "no persistence (prompt from an array)")
  } finally {
    await file.close()
    await memory.close()
    temp.remove()
  }
}

const buildRows = async (count: number) => {
  const entries: Array<RecordV2.SessionEntry> = []
  const timestamp = "2026-01-02T03:04:05.006Z"
  for (let i = 0; i < BRANCH; i++) {
    const m: RecordV2.Message = i % 4 === 1
      ? { role: "assistant", id: `m${i}`, content: [{ type: "tool-call", id: `c${i}`, name: "read", arguments: { i } }] }
      : i % 4 === 2
      ? { role: "tool", id: `m${i}`, toolCallId: `c${i - 1}`, toolName: "read", isError: false, content: [{ type: "text", text: TEXT }] }
      : message(i)
    entries.push({ type: "entry", version: 2, id: `e${i}`, parentId: i === 0 ? null : `e${i - 1}`, timestamp, kind: "message", message: m })
  }
  let sink = 0
  const samples = await rounds([
    { name: "Conversation.build", run: () => void (sink += Conversation.build(entries).length) },
    { name: "Conversation.build, budget 50,000 tokens", run: () => void (sink += Conversation.build(entries, { budget: 50_000 }).length) },
    {
      name: "one pass collecting the messages",
      run: () => {
        const out: Array<RecordV2.Message> = []
        for (const entry of entries) if (entry.kind === "message") out.push(entry.message)
        sink += out.length
      }
    }
  ], { rounds: count, warmup: 3 })
  if (sink === 0) throw new Error("nothing built")
  return summarize(`context of a ${BRANCH.toLocaleString("en")}-entry branch`, samples, "one pass collecting the messages")
}

console.log(machine())
console.log(`load average before: ${loadAverage()}\n`)
console.log(table("The agent step (ratio to the same step with no persistence)", await stepRows(arg("rounds", 50))))
console.log(table("Conversation.build (ratio to one pass over the entries)", await buildRows(arg("build-rounds", 15))))
console.log(`load average after: ${loadAverage()}`)

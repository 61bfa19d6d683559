/**
 * 9. One agent step on a 10,000-entry session (`@session-tree/ai`), against
 * the same step with no persistence, as ratios measured in one run; once with
 * `generateText` (`Agent.send`) and once streamed (`Agent.sendStream`, the
 * response's parts drained as they arrive).
 *
 * A step of ours: from the newest answer of a 10,000-entry branch (`moveTo`, so
 * that the branch stays the same length from round to round), commit the
 * user's message, build the context (`Conversation.build`), make the prompt
 * (`Codec.toPrompt`), call a `LanguageModel` that answers at once, read the
 * answer (`Codec.fromResponse`) and commit it. The step with no persistence:
 * the prompt made by `Codec.toPrompt` from an array of the same messages and
 * the question, the same model, the answer read by `Codec.fromResponse` and
 * pushed onto the array (and taken off again). On a session file (durable: each
 * commit is fsynced) and in memory.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import { Agent, Codec } from "@session-tree/ai"
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
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import { rounds, type Row, summarize } from "../harness.js"

export interface AgentStepOptions {
  readonly rounds: number
  readonly warmup: number
  /** Entries of the session's branch; 10,000 by default. */
  readonly entries?: number
}

const TEXT = "The quick brown fox jumps over the lazy dog. ".repeat(5)
const QUESTION = "And then?"
const usage = { inputTokens: 1_000, outputTokens: 60, totalTokens: 1_060 }

const answer: ReadonlyArray<Response.PartEncoded> = [
  { type: "response-metadata", id: "msg_1", modelId: "scripted", timestamp: "2026-01-02T03:04:05.006Z" },
  { type: "text", text: TEXT },
  { type: "finish", reason: "stop", usage }
]

/** The same answer streamed: its text in twenty deltas. */
const streamed: ReadonlyArray<Response.StreamPartEncoded> = [
  { type: "response-metadata", id: "msg_1", modelId: "scripted", timestamp: "2026-01-02T03:04:05.006Z" },
  { type: "text-start", id: "0" },
  ...Array.from({ length: 20 }, (_, i): Response.StreamPartEncoded => ({
    type: "text-delta",
    id: "0",
    delta: TEXT.slice((i * TEXT.length) / 20, ((i + 1) * TEXT.length) / 20)
  })),
  { type: "text-end", id: "0" },
  { type: "finish", reason: "stop", usage }
]

const modelLayer = Layer.effect(
  LanguageModel.LanguageModel,
  LanguageModel.make({
    generateText: () => Effect.succeed([...answer]),
    streamText: () => Stream.fromIterable(streamed)
  })
)

const message = (i: number): RecordV2.Message =>
  i % 2 === 0
    ? { role: "user", id: `m${i}`, content: [{ type: "text", text: `${i}: ${TEXT}` }] }
    : { role: "assistant", id: `m${i}`, content: [{ type: "text", text: `${i}: ${TEXT}` }] }

/** A session of `entries` alternating user and assistant messages, and an agent over it, open until `close`. */
const openAgent = async (journal: Layer.Layer<any>, location: string, entries: number) => {
  const scope = Effect.runSync(Scope.make())
  const layer = SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerCreate(location)),
    Layer.provide(Layer.merge(journal, Ids.layerRandom)),
    Layer.merge(modelLayer)
  )
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope))
  const { agent, tree } = await Effect.runPromise(Effect.gen(function*() {
    const tree = yield* SessionTree.SessionTree
    for (let i = 0; i < entries; i += 500) {
      yield* tree.appendChain(Array.from({ length: Math.min(500, entries - i) }, (_, k) => ({ kind: "message", message: message(i + k) })))
    }
    return { agent: yield* Agent.make(), tree }
  }).pipe(Effect.provide(context)))
  const base = tree.activeLeafId
  return {
    send: () => Effect.runPromise(Effect.zipRight(tree.moveTo(base), Effect.asVoid(agent.send(QUESTION)))),
    sendStream: () => Effect.runPromise(Effect.zipRight(tree.moveTo(base), Stream.runDrain(agent.sendStream(QUESTION)))),
    close: () => Effect.runPromise(Scope.close(scope, Exit.void))
  }
}

export const benchAgentStep = async (options: AgentStepOptions, dir: string): Promise<Array<Row>> => {
  const entries = options.entries ?? 10_000
  const file = await openAgent(FileJournal.layerWithFs(), Path.join(dir, "agent-step.jsonl"), entries)
  const memory = await openAgent(MemoryJournal.layer, "agent-step", entries)
  const messages = Array.from({ length: entries }, (_, i) => message(i))
  const model = await Effect.runPromise(Effect.provide(LanguageModel.LanguageModel, modelLayer))
  let n = 0
  const question = (): RecordV2.UserMessage => ({ role: "user", id: `q${n}`, content: [{ type: "text", text: QUESTION }] })
  /** The step without persistence: `ask` gives the response's parts for a prompt. */
  const bare = (ask: (prompt: Parameters<typeof model.generateText>[0]["prompt"]) => Effect.Effect<ReadonlyArray<Response.AnyPart>, unknown>) => () =>
    Effect.runPromise(Effect.gen(function*() {
      n++
      messages.push(question())
      const content = yield* ask(yield* Codec.toPrompt(messages))
      messages.push(yield* Codec.fromResponse({ content }, { id: `r${n}` }))
      messages.length = entries
    }))
  const plain = bare((prompt) => Effect.map(model.generateText({ prompt }), (response) => response.content as ReadonlyArray<Response.AnyPart>))
  const streaming = bare((prompt) => Effect.map(Stream.runCollect(model.streamText({ prompt })), (parts) => [...parts] as ReadonlyArray<Response.AnyPart>))
  const size = `${entries.toLocaleString("en")}-entry session`
  try {
    const sent = await rounds([
      { name: "ours, file session (durable)", run: file.send },
      { name: "ours, memory session", run: memory.send },
      { name: "no persistence (prompt from an array)", run: plain }
    ], options)
    const streamedSamples = await rounds([
      { name: "ours, file session (durable), streamed", run: file.sendStream },
      { name: "ours, memory session, streamed", run: memory.sendStream },
      { name: "no persistence, streamed", run: streaming }
    ], options)
    return [
      ...summarize(`one agent step, ${size}`, sent, "no persistence (prompt from an array)"),
      ...summarize(`one streamed agent step, ${size}`, streamedSamples, "no persistence, streamed")
    ]
  } finally {
    await file.close()
    await memory.close()
  }
}

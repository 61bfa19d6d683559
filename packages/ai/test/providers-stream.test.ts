/**
 * `sendStream` through the real client packages: a step is committed once its
 * response is complete and its tools have run, and a step cut short stores
 * nothing of itself, wherever the cut falls. For Anthropic's and OpenAI's
 * streams (reasoning, text and a tool call): the caller stops after each part
 * in turn (`Stream.take`), the caller's fiber is interrupted while it holds
 * each part, and the provider's connection drops after each event; each time
 * the session holds the user's message and nothing of the step, and `resume`
 * then answers it. A whole stream stores what a JSON response of the same
 * content stores.
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { describe, expect, it } from "@effect/vitest"
import type { RecordV2 } from "@session-tree/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Path from "node:path"
import type { Agent } from "../src/index.js"
import { anthropic, fakeProvider, json, openai, type Reply, sse, type SseEvent } from "./support/provider.js"
import { tools } from "./support/scripted.js"
import { readEntries, roles, tempDir, withAgent } from "./support/session.js"
import * as W from "./support/wire.js"

interface Case {
  readonly name: string
  readonly model: (url: string) => Layer.Layer<LanguageModel.LanguageModel>
  readonly events: ReadonlyArray<SseEvent>
  readonly body: unknown
  readonly answer: Reply
  readonly answerBody: unknown
}

const cases: ReadonlyArray<Case> = [
  {
    name: "Anthropic",
    model: anthropic,
    events: W.anthropicEvents([
      { type: "thinking", thinking: "I should list it.", signature: "EqQBCkYIBxgCKkBzaWduYXR1cmU=" },
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_1", name: "list_dir", input: { path: "/project" } }
    ]),
    body: W.anthropicMessage([
      { type: "thinking", thinking: "I should list it.", signature: "EqQBCkYIBxgCKkBzaWduYXR1cmU=" },
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_1", name: "list_dir", input: { path: "/project" } }
    ]),
    answer: sse(W.anthropicEvents([{ type: "text", text: "README.md and src/." }])),
    answerBody: W.anthropicMessage([{ type: "text", text: "README.md and src/." }])
  },
  {
    name: "OpenAI",
    model: openai,
    events: W.openaiEvents([
      { type: "reasoning", id: "rs_1", summary: ["I should list it."], encrypted_content: "gAAAAABencrypted" },
      { type: "message", id: "msg_1", text: "Let me look." },
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "list_dir", arguments: "{\"path\":\"/project\"}" }
    ]),
    body: W.openaiResponse([
      { type: "reasoning", id: "rs_1", summary: ["I should list it."], encrypted_content: "gAAAAABencrypted" },
      { type: "message", id: "msg_1", text: "Let me look." },
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "list_dir", arguments: "{\"path\":\"/project\"}" }
    ]),
    answer: sse(W.openaiEvents([{ type: "message", id: "msg_2", text: "README.md and src/." }])),
    answerBody: W.openaiResponse([{ type: "message", id: "msg_2", text: "README.md and src/." }])
  }
]

/** A message without what differs from run to run (its ID, the response's timestamp-free meta stays). */
const content = (message: RecordV2.Message) => {
  const { id: _id, ...rest } = message
  return rest
}

for (const c of cases) {
  describe(`${c.name}: a streamed step cut short stores nothing of itself`, () => {
    it.live("a whole stream commits its step and the answer, as a JSON response of the same content does", () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const dir = yield* tempDir
        provider.reply(sse(c.events), c.answer)
        const streamed = Path.join(dir, "streamed.jsonl")
        const parts = yield* withAgent(streamed, c.model(provider.url), { toolkit: tools }, (agent) => Stream.runCollect(agent.sendStream("List /project.")))
        expect([...parts].filter((part) => part.type === "committed").map((part) => roles((part as Agent.Committed).entries))).toEqual([
          ["user"],
          ["assistant", "tool"],
          ["assistant"]
        ])
        provider.reply(json(c.body), json(c.answerBody))
        const plain = Path.join(dir, "plain.jsonl")
        yield* withAgent(plain, c.model(provider.url), { toolkit: tools }, (agent) => agent.send("List /project."))
        const messages = (entries: ReadonlyArray<RecordV2.SessionEntry>) =>
          entries.map((entry) => content((entry as RecordV2.MessageEntry).message))
        expect(messages(yield* readEntries(streamed))).toEqual(messages(yield* readEntries(plain)))
      }).pipe(Effect.scoped))

    it.live("the caller stops after each part in turn: the user's message is stored, nothing of the step; resume answers", () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const dir = yield* tempDir
        // Every part of the step as a whole run gives it: the model's parts and the tool's result.
        provider.reply(sse(c.events), c.answer)
        const whole = yield* withAgent(Path.join(dir, "whole.jsonl"), c.model(provider.url), { toolkit: tools }, (agent) =>
          Stream.runCollect(agent.sendStream("List /project.")))
        const all = [...whole]
        const stepParts = all.indexOf(all.find((part, i) => i > 0 && part.type === "committed")!) - 1
        expect(stepParts).toBeGreaterThan(10)
        expect(all[stepParts]!.type).toBe("tool-result")
        for (let k = 1; k <= stepParts; k++) {
          const file = Path.join(dir, `take-${k}.jsonl`)
          provider.reply(sse(c.events))
          const taken = yield* withAgent(file, c.model(provider.url), { toolkit: tools }, (agent) =>
            Stream.runCollect(Stream.take(agent.sendStream("List /project."), 1 + k)))
          expect([...taken].map((part) => part.type)).toEqual(all.slice(0, 1 + k).map((part) => part.type))
          expect(roles(yield* readEntries(file)), `after part ${k} (${all[k]!.type})`).toEqual(["user"])
        }
        // The last of them, answered by resume in a new agent.
        provider.reply(json(c.body), json(c.answerBody))
        const file = Path.join(dir, `take-${stepParts}.jsonl`)
        const resumed = yield* withAgent(file, c.model(provider.url), { toolkit: tools }, (agent) => agent.resume())
        expect(roles(resumed)).toEqual(["assistant", "tool", "assistant"])
      }).pipe(Effect.scoped), 120_000)

    it.live("the caller's fiber is interrupted while it holds each part: nothing of the step is stored", () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const dir = yield* tempDir
        let k = 0
        for (;;) {
          k++
          const file = Path.join(dir, `interrupt-${k}.jsonl`)
          provider.reply(sse(c.events))
          const held = yield* Deferred.make<Agent.StreamPart>()
          const finished = yield* withAgent(file, c.model(provider.url), { toolkit: tools }, (agent) =>
            Effect.gen(function*() {
              let seen = 0
              const fiber = yield* Effect.fork(Stream.runForEach(agent.sendStream("List /project."), (part) =>
                ++seen === 1 + k ? Effect.zipRight(Deferred.succeed(held, part), Effect.never) : Effect.void))
              const outcome = yield* Effect.raceFirst(Effect.as(Deferred.await(held), "held" as const), Effect.as(Fiber.join(fiber), "done" as const))
              yield* Fiber.interrupt(fiber)
              return outcome === "done"
            }))
          if (finished) break
          const part = yield* Deferred.await(held)
          if (part.type === "committed") break
          expect(roles(yield* readEntries(file)), `while holding part ${k} (${part.type})`).toEqual(["user"])
        }
        expect(k).toBeGreaterThan(10)
      }).pipe(Effect.scoped), 120_000)

    it.live("the connection drops after each event: a ModelError, the user's message stored and nothing of the step", () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const dir = yield* tempDir
        for (let cut = 0; cut < c.events.length; cut++) {
          const file = Path.join(dir, `cut-${cut}.jsonl`)
          provider.reply(sse(c.events, cut))
          const error = yield* withAgent(file, c.model(provider.url), { toolkit: tools }, (agent) =>
            Effect.flip(Stream.runDrain(agent.sendStream("List /project."))))
          expect(error._tag, `cut after ${cut} events`).toBe("ModelError")
          expect(roles(yield* readEntries(file)), `cut after ${cut} events`).toEqual(["user"])
        }
      }).pipe(Effect.scoped), 120_000)
  })
}

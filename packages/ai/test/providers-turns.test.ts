/**
 * Turns through the real client packages against a provider on this machine:
 * a failed turn run again (`Effect.retry`, `Stream.retry`, the `retry`
 * policy, `resume`) never commits the user's message twice; tool calls of the
 * model's making that cannot run (wrong parameters, an unknown tool) go back
 * to the model as error results, bounded by `maxSteps`, while a failing
 * handler is a `ToolError`; a budgeted context always opens on a user message
 * and keeps every tool result with its call; compaction requests carry the
 * system prompt and the tools (or no tool blocks) and their usage is stored;
 * the agent is a service with a layer; its turns, steps, model calls and tool
 * calls are spans.
 */
import { describe, expect, it } from "@effect/vitest"
import { Conversation, type RecordV2 } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import * as Path from "node:path"
import { Agent } from "../src/index.js"
import { anthropic, fakeProvider, json, openai, sse } from "./support/provider.js"
import { tools } from "./support/scripted.js"
import { fileSession, Handlers, messageOf, readEntries, roles, tempDir, withAgent } from "./support/session.js"
import * as W from "./support/wire.js"

const text = (value: string): ReadonlyArray<W.Block> => [{ type: "text", text: value }]
const call = (id: string, input: unknown, name = "list_dir"): W.Block => ({ type: "tool_use", id, name, input })
const thinking = (signature: string): W.Block => ({ type: "thinking", thinking: "I should look.", signature })
const overloaded = json(W.anthropicError("overloaded_error", "Overloaded"), 529)
const serverError = json(W.anthropicError("api_error", "Internal server error"), 500)

/** How many user messages with this text a request body holds. */
const asked = (body: any, question: string) =>
  body.messages.filter((m: any) => m.role === "user" && m.content.some((c: any) => c.type === "text" && c.text === question)).length

describe("turns that can be retried", () => {
  it.live("Effect.retry(agent.send(q)) after two failures leaves one user message, and the model saw it once per request", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(serverError, overloaded, json(W.anthropicMessage(text("Hello."))))
      const entries = yield* withAgent(file, anthropic(provider.url), { system: "Be brief." }, (agent) =>
        Effect.retry(agent.send("Hi?"), { times: 2 }))
      expect(roles(entries)).toEqual(["system", "user", "assistant"])
      expect(roles(yield* readEntries(file))).toEqual(["system", "user", "assistant"])
      expect(provider.requests).toHaveLength(3)
      for (const body of provider.bodies()) expect(asked(body, "Hi?")).toBe(1)
    }).pipe(Effect.scoped))

  it.live("a retried send continues from its committed steps: one user message, each step once", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(json(W.anthropicMessage([thinking("c2ln"), call("toolu_1", { path: "/project" })])), overloaded, json(W.anthropicMessage(text("Two entries."))))
      const entries = yield* withAgent(file, anthropic(provider.url), { toolkit: tools }, (agent) => Effect.retry(agent.send("What is in /project?"), { times: 1 }))
      expect(roles(entries)).toEqual(["user", "assistant", "tool", "assistant"])
      expect(roles(yield* readEntries(file))).toEqual(["user", "assistant", "tool", "assistant"])
      const third = provider.bodies()[2]
      expect(asked(third, "What is in /project?")).toBe(1)
      expect(third.messages.map((m: any) => m.role)).toEqual(["user", "assistant", "user"])
    }).pipe(Effect.scoped))

  it.live("the retry policy runs a failed model call again inside the step; a failure that cannot pass is not retried", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(overloaded, json(W.anthropicMessage(text("Hello."))))
      const options = { retry: Schedule.recurs(3) }
      const entries = yield* withAgent(file, anthropic(provider.url), options, (agent) => agent.send("Hi?"))
      expect(roles(entries)).toEqual(["user", "assistant"])
      expect(provider.requests).toHaveLength(2)
      provider.reply(json(W.anthropicError("invalid_request_error", "messages: roles must alternate"), 400), json(W.anthropicMessage(text("Never sent."))))
      const error = yield* withAgent(file, anthropic(provider.url), options, (agent) => Effect.flip(agent.send("Again?")))
      expect(error).toMatchObject({ _tag: "ModelError", provider: "anthropic", status: 400, retryable: false, reason: "HTTP 400 (invalid_request_error)" })
      expect(provider.requests).toHaveLength(3)
    }).pipe(Effect.scoped))

  it.live("Stream.retry(agent.sendStream(q)) after a dropped stream continues without a second user message", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      const events = W.anthropicEvents(text("Hello there."))
      provider.reply(sse(events, 5), sse(events))
      const parts = yield* withAgent(file, anthropic(provider.url), {}, (agent) =>
        Stream.runCollect(Stream.retry(agent.sendStream("Hi?"), Schedule.recurs(1))))
      expect(roles(yield* readEntries(file))).toEqual(["user", "assistant"])
      expect([...parts].filter((part) => part.type === "committed")).toHaveLength(2)
      for (const body of provider.bodies()) expect(asked(body, "Hi?")).toBe(1)
    }).pipe(Effect.scoped))

  it.live("resume answers a committed user message after a failed turn; with nothing to answer it refuses", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(serverError, json(W.anthropicMessage(text("Here."))))
      const failed = yield* withAgent(file, anthropic(provider.url), {}, (agent) => Effect.flip(agent.send("Still there?")))
      expect(failed).toMatchObject({ _tag: "ModelError", status: 500, retryable: true })
      expect(roles(yield* readEntries(file))).toEqual(["user"])
      // A new process: the turn's user message is committed; resume has the model answer it.
      const resumed = yield* withAgent(file, anthropic(provider.url), {}, (agent) => agent.resume())
      expect(roles(resumed)).toEqual(["assistant"])
      expect(asked(provider.bodies()[1], "Still there?")).toBe(1)
      const refused = yield* withAgent(file, anthropic(provider.url), {}, (agent) => Effect.flip(agent.resume()))
      expect(refused).toMatchObject({ code: "SESSION_INVALID_MESSAGE" })
      expect(provider.requests).toHaveLength(2)
    }).pipe(Effect.scoped))
})

describe("tool calls the model got wrong go back to it", () => {
  it.live("wrong parameters and an unknown tool are error results the model reads on its next step", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      let handled = 0
      const counting = tools.toLayer({ list_dir: ({ path }) => Effect.sync(() => (handled++, path === "/project" ? ["README.md"] : [])) })
      provider.reply(
        json(W.anthropicMessage([call("toolu_bad", { path: 42 }), call("toolu_unknown", { all: true }, "delete_everything")])),
        json(W.anthropicMessage([call("toolu_good", { path: "/project" })])),
        json(W.anthropicMessage(text("README.md.")))
      )
      const entries = yield* Effect.gen(function*() {
        const agent = yield* Agent.make({ toolkit: tools })
        return yield* agent.send("List /project.")
      }).pipe(Effect.provide(Layer.mergeAll(fileSession(file), anthropic(provider.url), counting)), Effect.scoped)
      expect(roles(entries)).toEqual(["user", "assistant", "tool", "tool", "assistant", "tool", "assistant"])
      expect(handled).toBe(1)
      const [bad, unknown] = [messageOf(entries[2]!), messageOf(entries[3]!)] as Array<RecordV2.ToolMessage>
      expect(bad).toMatchObject({ toolCallId: "toolu_bad", toolName: "list_dir", isError: true })
      expect(bad!.result).toEqual(expect.stringContaining("are not valid"))
      expect(unknown).toMatchObject({ toolCallId: "toolu_unknown", toolName: "delete_everything", isError: true })
      expect(unknown!.result).toBe("There is no tool named \"delete_everything\". The tools are: list_dir.")
      // The stored call keeps the arguments as the model sent them.
      expect(messageOf(entries[1]!).content[0]).toMatchObject({ type: "tool-call", id: "toolu_bad", arguments: { path: 42 } })
      const results = provider.bodies()[1].messages[2].content
      expect(results.map((r: any) => [r.type, r.tool_use_id, r.is_error])).toEqual([
        ["tool_result", "toolu_bad", true],
        ["tool_result", "toolu_unknown", true]
      ])
      expect(JSON.parse(results[1].content)).toBe(unknown!.result)
    }).pipe(Effect.scoped))

  it.live("OpenAI: a call of an unknown function, JSON and streamed; a streamed call with wrong parameters", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      const fn = (call_id: string, name: string, args: string): W.Item => ({ type: "function_call", id: `fc_${call_id}`, call_id, name, arguments: args })
      const done: ReadonlyArray<W.Item> = [{ type: "message", id: "msg_done", text: "Done." }]
      provider.reply(json(W.openaiResponse([fn("c1", "rm_rf", "{}")])), json(W.openaiResponse(done)))
      const first = yield* withAgent(file, openai(provider.url), { toolkit: tools }, (agent) => agent.send("Clean up."))
      expect(roles(first)).toEqual(["user", "assistant", "tool", "assistant"])
      expect(messageOf(first[2]!)).toMatchObject({ toolName: "rm_rf", isError: true })
      expect(provider.bodies()[1].input.at(-1)).toEqual({
        type: "function_call_output",
        call_id: "c1",
        output: JSON.stringify("There is no tool named \"rm_rf\". The tools are: list_dir.")
      })
      provider.reply(sse(W.openaiEvents([fn("c2", "list_dir", "{\"path\":[1]}")])), sse(W.openaiEvents(done)))
      const parts = yield* withAgent(file, openai(provider.url), { toolkit: tools }, (agent) => Stream.runCollect(agent.sendStream("List.")))
      const results = [...parts].filter((part) => part.type === "tool-result")
      expect(results).toHaveLength(1)
      expect(results[0]).toMatchObject({ id: "c2", isFailure: true })
      expect(roles(yield* readEntries(file))).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant", "tool", "assistant"])
      // Streamed, a call of an unknown tool cannot be told from the rest of the stream: the step fails, nothing stored.
      provider.reply(sse(W.openaiEvents([fn("c3", "rm_rf", "{}")])))
      const error = yield* withAgent(file, openai(provider.url), { toolkit: tools }, (agent) => Effect.flip(Stream.runDrain(agent.sendStream("Again."))))
      expect(error).toMatchObject({ _tag: "ModelError", provider: "openai", reason: "the provider's response could not be read" })
      expect(roles(yield* readEntries(file))).toHaveLength(9)
    }).pipe(Effect.scoped))

  it.live("a model that keeps getting its calls wrong stops at maxSteps with every step committed", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(...[1, 2, 3].map((n) => json(W.anthropicMessage([call(`toolu_${n}`, { path: n })]))))
      const error = yield* withAgent(file, anthropic(provider.url), { toolkit: tools, maxSteps: 3 }, (agent) => Effect.flip(agent.send("List.")))
      expect(error).toMatchObject({ _tag: "StepLimitError", maxSteps: 3 })
      expect(roles(yield* readEntries(file))).toEqual(["user", "assistant", "tool", "assistant", "tool", "assistant", "tool"])
      expect(provider.requests).toHaveLength(3)
    }).pipe(Effect.scoped))

  it.live("a failing handler of the caller's own is a ToolError, nothing of the step committed", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(json(W.anthropicMessage([call("toolu_1", { path: "/missing" })])))
      const error = yield* withAgent(file, anthropic(provider.url), { toolkit: tools }, (agent) => Effect.flip(agent.send("List /missing.")))
      expect(error).toMatchObject({ _tag: "ToolError", toolName: "list_dir", toolCallId: "toolu_1" })
      expect(error.message).toBe("tool list_dir (call toolu_1) failed: the handler failed: no such directory: /missing")
      expect((error as Agent.ToolError).failure).toBe("no such directory: /missing")
      expect(JSON.stringify(error)).not.toContain("failure")
      expect(roles(yield* readEntries(file))).toEqual(["user"])
    }).pipe(Effect.scoped))
})

describe("context a provider accepts", () => {
  it.live("at every budget the request opens on a user question and every tool result follows its call", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      // Three turns, each a step of thinking and a tool call, then an answer.
      for (const n of [1, 2, 3]) {
        provider.reply(
          json(W.anthropicMessage([thinking(`sig-${n}`), call(`toolu_${n}`, { path: "/project" })], { input_tokens: 100 * n, output_tokens: 40 })),
          json(W.anthropicMessage(text(`Answer ${n}.`), { input_tokens: 100 * n + 50, output_tokens: 10 }))
        )
        yield* withAgent(file, anthropic(provider.url), { system: "Be brief.", toolkit: tools }, (agent) => agent.send(`Question ${n}?`))
      }
      const entries = yield* readEntries(file)
      const whole = Conversation.estimate(Conversation.build(entries)) + 10
      const budgets = Array.from({ length: 41 }, (_, i) => Math.round((whole * i) / 40))
      for (const budget of budgets) {
        provider.reply(json(W.anthropicMessage(text("Fine."))))
        // Each on a branch of its own from the end of the three turns.
        yield* withAgent(file, anthropic(provider.url), { system: "Be brief.", toolkit: tools, budget }, (agent, tree) =>
          Effect.zipRight(tree.moveTo(entries.at(-1)!.id), agent.send("Next?")))
        const body = provider.bodies().at(-1)
        const first = body.messages[0]
        expect(first.role, `budget ${budget}`).toBe("user")
        expect(first.content.every((c: any) => c.type === "text"), `budget ${budget}`).toBe(true)
        body.messages.forEach((m: any, i: number) => {
          const answers = m.content.filter((c: any) => c.type === "tool_result").map((c: any) => c.tool_use_id)
          if (answers.length === 0) return
          const calls = body.messages[i - 1].content.filter((c: any) => c.type === "tool_use").map((c: any) => c.id)
          expect(calls, `budget ${budget}`).toEqual(answers)
        })
        expect(body.messages.at(-1).content.at(-1).text).toBe("Next?")
      }
      // The smallest budgets keep only the newest question; the largest keep everything.
      expect(provider.bodies().at(-41)!.messages).toHaveLength(1)
      expect(provider.bodies().at(-1)!.messages).toHaveLength(13)
    }).pipe(Effect.scoped), 120_000)
})

describe("compaction", () => {
  it.live("the request carries the system prompt and the tools; the entry stores the call's usage", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(
        json(W.anthropicMessage([thinking("c2ln"), call("toolu_1", { path: "/project" })])),
        json(W.anthropicMessage(text("README.md and src/."))),
        json(W.anthropicMessage(text("They listed /project: README.md and src/."), { input_tokens: 321, output_tokens: 17 }))
      )
      const [compaction] = yield* withAgent(file, anthropic(provider.url), { system: "Be brief.", toolkit: tools }, (agent) =>
        Effect.zipRight(agent.send("What is in /project?"), agent.compact()))
      expect(compaction).toMatchObject({
        kind: "compaction",
        summary: "They listed /project: README.md and src/.",
        firstKeptEntryId: null,
        usage: { inputTokens: 321, outputTokens: 17, cachedInputTokens: 0 }
      })
      const request = provider.bodies()[2]
      expect(request.system).toEqual([{ type: "text", text: "Be brief." }])
      expect(request.tools.map((t: any) => t.name)).toEqual(["list_dir"])
      expect(request.messages[1].content.map((c: any) => c.type)).toEqual(["thinking", "tool_use"])
      expect(request.messages.at(-1).content[0].text).toBe(Agent.SUMMARY_INSTRUCTION)
      // Stored, and read back by a fresh load.
      expect((yield* readEntries(file)).at(-1)).toEqual(compaction)
    }).pipe(Effect.scoped))

  it.live("without a toolkit, the session's tool calls and results go to the summariser as text", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(
        json(W.anthropicMessage([call("toolu_1", { path: "/project" })])),
        json(W.anthropicMessage(text("README.md and src/."))),
        json(W.anthropicMessage(text("A summary.")))
      )
      yield* withAgent(file, anthropic(provider.url), { toolkit: tools }, (agent) => agent.send("What is in /project?"))
      yield* withAgent(file, anthropic(provider.url), {}, (agent) => agent.compact())
      const raw = provider.requests[2]!.body
      expect(raw).not.toContain("tool_use")
      expect(raw).not.toContain("tool_result")
      const request = provider.bodies()[2]
      expect(request.tools).toBeUndefined()
      expect(request.messages[1].content).toEqual([{ type: "text", text: "[called list_dir with {\"path\":\"/project\"}]" }])
      expect(request.messages[2].content).toEqual([{ type: "text", text: "[list_dir returned: [\"README.md\",\"src/\"]]" }])
    }).pipe(Effect.scoped))
})

describe("the agent as a service", () => {
  it.live("Agent.layer provides the Agent tag; turns, steps, model calls and tool calls are spans", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(json(W.anthropicMessage([call("toolu_1", { path: "/project" })])), json(W.anthropicMessage(text("Two."))))
      const spans: Array<Tracer.Span> = []
      const native = yield* Effect.tracer
      const recording = Tracer.make({
        span: (...args) => {
          const span = native.span(...args)
          spans.push(span)
          return span
        },
        context: (f, fiber) => native.context(f, fiber)
      })
      const entries = yield* Effect.flatMap(Agent.Agent, (agent) => agent.send("What is in /project?")).pipe(
        Effect.provide(Agent.layer({ toolkit: tools, provider: "anthropic" }).pipe(
          Layer.provideMerge(Layer.mergeAll(fileSession(file), anthropic(provider.url), Handlers))
        )),
        Effect.withTracer(recording),
        Effect.scoped
      )
      expect(roles(entries)).toEqual(["user", "assistant", "tool", "assistant"])
      const byId = new Map(spans.map((span) => [span.spanId, span]))
      const parentOf = (span: Tracer.Span) => Option.getOrUndefined(Option.map(span.parent, (p) => byId.get(p.spanId)?.name))
      const named = (name: string) => spans.filter((span) => span.name === name)
      expect(named("Agent.turn")).toHaveLength(1)
      expect(named("Agent.step").map(parentOf)).toEqual(["Agent.turn", "Agent.turn"])
      expect(named("Agent.modelCall").map(parentOf)).toEqual(["Agent.step", "Agent.step"])
      expect(named("Agent.modelCall")[0]!.attributes.get("gen_ai.system")).toBe("anthropic")
      expect(named("Agent.toolCall").map(parentOf)).toEqual(["Agent.step"])
      expect(named("Agent.toolCall")[0]!.attributes.get("tool.name")).toBe("list_dir")
      // @effect/ai's own span of the provider call sits inside ours.
      expect(named("LanguageModel.generateText").map(parentOf)).toEqual(["Agent.modelCall", "Agent.modelCall"])
    }).pipe(Effect.scoped))
})

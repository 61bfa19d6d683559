/**
 * What goes back out to the providers, through the real client packages
 * (`@effect/ai-anthropic`, `@effect/ai-openai`) talking HTTP to a provider on
 * this machine: a turn's thinking (with its signature), redacted thinking,
 * OpenAI's encrypted reasoning, tool calls and results are in the next
 * request byte for byte, on the same run and after a reload in a new agent
 * over the same session file; streamed (`sendStream`) as well as not; the
 * stored parts hold the provider-true options and `meta.provider`. Per-message
 * and per-part options reach the wire (Anthropic's `cache_control`). An
 * OpenAI reasoning item that arrives without its encrypted content is logged
 * as a warning.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Record, RecordV2 } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as Path from "node:path"
import * as Stream from "effect/Stream"
import type { Agent } from "../src/index.js"
import { anthropic, fakeProvider, json, KEY, openai, sse } from "./support/provider.js"
import { tools } from "./support/scripted.js"
import { messageOf, readEntries, roles, tempDir, withAgent } from "./support/session.js"
import * as W from "./support/wire.js"

const THINKING: W.Block = {
  type: "thinking",
  thinking: "The user wants the directory listed; list_dir will do.",
  signature: "EqQBCkYIBxgCKkCa7Y3+Zt9v2k1dGq0nQZpYb3F0aGVyX3NpZ25hdHVyZV9ieXRlcw=="
}
const REDACTED: W.Block = { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzGAHa2e6Y8EaDLpZcG9jZXNzZWQgYnkgc2FmZXR5" }
const CALL: W.Block = { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "list_dir", input: { path: "/project" } }
const firstStep: ReadonlyArray<W.Block> = [THINKING, REDACTED, { type: "text", text: "Let me look." }, CALL]
const answer: ReadonlyArray<W.Block> = [{ type: "text", text: "It holds README.md and src/." }]
const again: ReadonlyArray<W.Block> = [{ type: "text", text: "Yes, those two." }]

/** The blocks of the assistant turn as the Messages API must receive them back. */
const sentBack = [
  { type: "thinking", thinking: THINKING.type === "thinking" ? THINKING.thinking : "", signature: THINKING.type === "thinking" ? THINKING.signature : "" },
  { type: "redacted_thinking", data: REDACTED.type === "redacted_thinking" ? REDACTED.data : "" },
  { type: "text", text: "Let me look." },
  { type: "tool_use", id: "toolu_01A09q90qw90lq917835lq9", name: "list_dir", input: { path: "/project" } }
]

const REASONING: W.Item = {
  type: "reasoning",
  id: "rs_68af4031bd9c8193a9e1b7a4c1f5d2e805438e46b5f69a3b",
  summary: ["**Listing the directory**\n\nI will call list_dir.", "Then I answer."],
  encrypted_content: "gAAAAABor0AxL2mV9pZ5cR7kQ0b3Jf8xN1dY4sT6uW2eA9hK5lM3nP7qR0tV8yX1zB4cD6fG9iJ2kL5mO8pQ1rS4uV7wX0yZ3aC6eF9hI2kN5oQ8rT1uW4xZ7"
}
const MESSAGE: W.Item = { type: "message", id: "msg_68af4032a1b881939f3c5e7d9b0a2c4e05438e46b5f69a3b", text: "Let me look." }
const FUNCTION: W.Item = {
  type: "function_call",
  id: "fc_68af4033c5d48193b2e4f6a8c0d1e3f505438e46b5f69a3b",
  call_id: "call_Qm9vYmFyQmF6",
  name: "list_dir",
  arguments: "{\"path\":\"/project\"}"
}
const openaiFirst: ReadonlyArray<W.Item> = [REASONING, MESSAGE, FUNCTION]
const openaiAnswer: ReadonlyArray<W.Item> = [{ type: "message", id: "msg_answer", text: "It holds README.md and src/." }]

/** The input items OpenAI must receive back for the first step. */
const openaiSentBack = [
  {
    id: "rs_68af4031bd9c8193a9e1b7a4c1f5d2e805438e46b5f69a3b",
    type: "reasoning",
    summary: [
      { type: "summary_text", text: "**Listing the directory**\n\nI will call list_dir." },
      { type: "summary_text", text: "Then I answer." }
    ],
    encrypted_content: REASONING.type === "reasoning" ? REASONING.encrypted_content : ""
  },
  { role: "assistant", content: [{ type: "output_text", text: "Let me look." }], id: "msg_68af4032a1b881939f3c5e7d9b0a2c4e05438e46b5f69a3b" },
  {
    id: "fc_68af4033c5d48193b2e4f6a8c0d1e3f505438e46b5f69a3b",
    type: "function_call",
    call_id: "call_Qm9vYmFyQmF6",
    name: "list_dir",
    arguments: "{\"path\":\"/project\"}"
  },
  { type: "function_call_output", call_id: "call_Qm9vYmFyQmF6", output: "[\"README.md\",\"src/\"]" }
]

const drain = (stream: Stream.Stream<Agent.StreamPart, Agent.AgentError>) => Effect.map(Stream.runCollect(stream), (chunk) => [...chunk])

describe("Anthropic (Messages API) through @effect/ai-anthropic", () => {
  for (const mode of ["json", "stream"] as const) {
    it.live(`${mode}: thinking with its signature and redacted thinking go back byte for byte, also after a reload`, () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const file = Path.join(yield* tempDir, "s.jsonl")
        const reply = (blocks: ReadonlyArray<W.Block>) => (mode === "json" ? json(W.anthropicMessage(blocks)) : sse(W.anthropicEvents(blocks)))
        provider.reply(reply(firstStep), reply(answer))
        const model = anthropic(provider.url)
        const first = yield* withAgent(file, model, { system: "Be brief.", toolkit: tools }, (agent) =>
          mode === "json"
            ? agent.send("What is in /project?")
            : Effect.gen(function*() {
              const parts = yield* drain(agent.sendStream("What is in /project?"))
              // The response's parts arrived as they streamed, each commit told after its step.
              const types = parts.map((part) => part.type)
              expect(types.filter((t) => t === "committed")).toHaveLength(3)
              expect(types).toContain("reasoning-delta")
              expect(types).toContain("text-delta")
              expect(types.indexOf("tool-result")).toBeLessThan(types.indexOf("committed", types.indexOf("tool-call")))
              return parts.flatMap((part) => (part.type === "committed" ? part.entries : []))
            }))
        expect(roles(first)).toEqual(["system", "user", "assistant", "tool", "assistant"])
        const stored = messageOf(first[2]!) as RecordV2.AssistantMessage
        expect(stored.content.slice(0, 2)).toEqual([
          { type: "reasoning", text: sentBack[0]!.thinking, options: { anthropic: { type: "thinking", signature: sentBack[0]!.signature } } },
          { type: "reasoning", text: "", options: { anthropic: { type: "redacted_thinking", redactedData: sentBack[1]!.data } } }
        ])
        expect(stored.meta).toMatchObject({ provider: "anthropic", model: "claude-sonnet-4-5-20250929", stopReason: "tool-calls" })

        // The second request sent the first step back: every block, the signature and the payload byte for byte.
        const second = provider.bodies()[1]
        expect(second.stream === true).toBe(mode === "stream")
        expect(second.system).toEqual([{ type: "text", text: "Be brief." }])
        expect(second.messages[1]).toEqual({ role: "assistant", content: sentBack })
        expect(second.messages[2].content[0]).toMatchObject({ type: "tool_result", tool_use_id: CALL.type === "tool_use" ? CALL.id : "", is_error: false })
        for (const block of sentBack.slice(0, 2)) expect(provider.requests[1]!.body).toContain(JSON.stringify(block))

        // A new agent over the same file (a new process would load it the same way) sends them again.
        provider.reply(reply(again))
        yield* withAgent(file, model, { system: "Be brief.", toolkit: tools }, (agent) =>
          mode === "json" ? Effect.asVoid(agent.send("Sure?")) : Effect.asVoid(drain(agent.sendStream("Sure?"))))
        const third = provider.bodies()[2]
        expect(third.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"])
        expect(third.messages[1]).toEqual({ role: "assistant", content: sentBack })
        for (const block of sentBack.slice(0, 2)) expect(provider.requests[2]!.body).toContain(JSON.stringify(block))
        expect(roles(yield* readEntries(file))).toEqual(["system", "user", "assistant", "tool", "assistant", "user", "assistant"])
        // Each request carried the key in its header, and only there.
        for (const request of provider.requests) {
          expect(request.headers["x-api-key"]).toBe(KEY)
          expect(request.body).not.toContain(KEY)
        }
      }).pipe(Effect.scoped))
  }

  it.live("system and message options reach the wire: cache_control on the system prompt, a user part and a user message", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(json(W.anthropicMessage(answer)))
      const ephemeral = { anthropic: { cacheControl: { type: "ephemeral" as const } } }
      yield* withAgent(file, anthropic(provider.url), { system: { content: "A long, stable system prompt.", options: ephemeral } }, (agent) =>
        agent.send([
          { type: "text", text: "A long document.", options: ephemeral },
          { type: "text", text: "My question." }
        ], { options: { anthropic: { cacheControl: { type: "ephemeral", ttl: "1h" } } } }))
      const body = provider.bodies()[0]
      expect(body.system).toEqual([{ type: "text", text: "A long, stable system prompt.", cache_control: { type: "ephemeral" } }])
      expect(body.messages[0].content).toEqual([
        { type: "text", text: "A long document.", cache_control: { type: "ephemeral" } },
        // The message's own breakpoint goes on its last part, as @effect/ai-anthropic places it.
        { type: "text", text: "My question.", cache_control: { type: "ephemeral", ttl: "1h" } }
      ])
      const stored = yield* readEntries(file)
      expect((stored[0] as RecordV2.MessageEntry).message.options).toEqual(ephemeral)
      expect((stored[1] as RecordV2.MessageEntry).message.options).toEqual({ anthropic: { cacheControl: { type: "ephemeral", ttl: "1h" } } })
    }).pipe(Effect.scoped))
})

describe("OpenAI (Responses API, store: false) through @effect/ai-openai", () => {
  for (const mode of ["json", "stream"] as const) {
    it.live(`${mode}: the reasoning item with its encrypted content goes back byte for byte, also after a reload`, () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const file = Path.join(yield* tempDir, "s.jsonl")
        const reply = (items: ReadonlyArray<W.Item>) => (mode === "json" ? json(W.openaiResponse(items)) : sse(W.openaiEvents(items)))
        provider.reply(reply(openaiFirst), reply(openaiAnswer))
        const model = openai(provider.url)
        const run = (agent: Agent.Service, text: string): Effect.Effect<ReadonlyArray<Record.Entry>, Agent.AgentError> =>
          mode === "json"
            ? agent.send(text)
            : Effect.map(drain(agent.sendStream(text)), (parts) => parts.flatMap((part) => (part.type === "committed" ? part.entries : [])))
        const first = yield* withAgent(file, model, { system: "Be brief.", toolkit: tools }, (agent) => run(agent, "What is in /project?"))
        expect(roles(first)).toEqual(["system", "user", "assistant", "tool", "assistant"])
        const stored = messageOf(first[2]!) as RecordV2.AssistantMessage
        const encrypted = REASONING.type === "reasoning" ? REASONING.encrypted_content : ""
        expect(stored.content.filter((part) => part.type === "reasoning").map((part) => part.options)).toEqual([
          { openai: { itemId: REASONING.id, encryptedContent: encrypted } },
          { openai: { itemId: REASONING.id, encryptedContent: encrypted } }
        ])
        expect(stored.meta).toMatchObject({ provider: "openai", model: "gpt-5-2025-08-07" })

        const [request, second] = provider.bodies()
        expect(request.store).toBe(false)
        expect(request.include).toEqual(["reasoning.encrypted_content"])
        expect(request.reasoning).toEqual({ effort: "low", summary: "auto" })
        expect(second.input.slice(2)).toEqual(openaiSentBack)
        expect(provider.requests[1]!.body).toContain(JSON.stringify(encrypted))

        provider.reply(reply([{ type: "message", id: "msg_again", text: "Yes." }]))
        yield* withAgent(file, model, { system: "Be brief.", toolkit: tools }, (agent) => run(agent, "Sure?"))
        const third = provider.bodies()[2]
        expect(third.input.slice(2, 6)).toEqual(openaiSentBack)
        expect(provider.requests[2]!.body).toContain(JSON.stringify(encrypted))
        for (const r of provider.requests) expect(r.headers["authorization"]).toBe(`Bearer ${KEY}`)
      }).pipe(Effect.scoped))
  }

  it.live("a reasoning item without a summary loses its encrypted content in the client: a warning says so, naming the item", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      const bare: W.Item = { type: "reasoning", id: "rs_bare", summary: [], encrypted_content: "gAAAAABbareEncrypted" }
      provider.reply(json(W.openaiResponse([bare, { type: "message", id: "msg_1", text: "Hi." }])))
      const logs: Array<string> = []
      const logger = Logger.make(({ logLevel, message }) => logs.push(`${logLevel.label} ${JSON.stringify(message)}`))
      const [, , answered] = yield* withAgent(file, openai(provider.url), { system: "Be brief." }, (agent) => agent.send("Hi")).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      expect(messageOf(answered!).content[0]).toEqual({ type: "reasoning", text: "", options: { openai: { itemId: "rs_bare" } } })
      const warnings = logs.filter((line) => line.startsWith("WARN"))
      expect(warnings).toHaveLength(1)
      expect(warnings[0]).toContain("rs_bare")
      expect(warnings[0]).toContain("reasoning.encrypted_content")
      expect(warnings[0]).not.toContain(KEY)

      // Streamed, the same item keeps its encrypted content: it arrives with the item's end.
      provider.reply(sse(W.openaiEvents([bare, { type: "message", id: "msg_2", text: "Hi again." }])))
      const parts = yield* withAgent(file, openai(provider.url), { system: "Be brief." }, (agent) => drain(agent.sendStream("Again")))
      const committed = parts.flatMap((part) => (part.type === "committed" ? part.entries : []))
      expect(messageOf(committed.at(-1)!).content[0]).toEqual({
        type: "reasoning",
        text: "",
        options: { openai: { itemId: "rs_bare", encryptedContent: "gAAAAABbareEncrypted" } }
      })
    }).pipe(Effect.scoped))
})

/**
 * The repair on read (docs/ai.md): reasoning options written before they held
 * the provider-true form are sent in it, and only those. Claude Code's legacy
 * `{anthropic:{signature}}` and `{anthropic:{redactedData}}`; Pi's
 * `thinkingSignature` on a message of Anthropic's Messages API (redacted
 * too) or of OpenAI's Responses API (the reasoning item as JSON). Already
 * provider-true options, other providers' signatures and parts without a
 * payload go as they are. The stored options come back from `fromPrompt`
 * unchanged. Checked on the `Prompt` and on what the real clients' request
 * encoders put on the wire.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import { describe, expect, it } from "@effect/vitest"
import type { RecordV2 } from "@session-tree/core"
import * as Effect from "effect/Effect"
import { Codec } from "../src/index.js"
import { anthropic, fakeProvider, json, openai } from "./support/provider.js"
import * as W from "./support/wire.js"

const assistant = (
  content: ReadonlyArray<RecordV2.AssistantPart>,
  extra: { meta?: RecordV2.Meta; options?: RecordV2.Opaque } = {}
): RecordV2.AssistantMessage => ({ role: "assistant", id: "a1", content, ...extra })
const question: RecordV2.UserMessage = { role: "user", id: "u1", content: [{ type: "text", text: "Why?" }] }
const next: RecordV2.UserMessage = { role: "user", id: "u2", content: [{ type: "text", text: "Go on." }] }

/** What the prompt shows providers of each part of the assistant message. */
const shown = (prompt: Prompt.Prompt) =>
  (prompt.content[1] as Prompt.AssistantMessage).content.map((part) => {
    const { [Codec.NAMESPACE]: _bag, ...providers } = part.options
    return providers
  })

const piAnthropic = { meta: { provider: "anthropic", model: "claude-sonnet-4-5" }, options: { pi: { api: "anthropic-messages" } } }
const item = JSON.stringify({ type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "s" }], encrypted_content: "gAAAAABenc" })

const cases: ReadonlyArray<{
  readonly name: string
  readonly message: RecordV2.AssistantMessage
  readonly shown: ReadonlyArray<object>
}> = [
  {
    name: "Claude Code's legacy signature and redacted data gain their type; other keys stay",
    message: assistant([
      { type: "reasoning", text: "t", options: { anthropic: { signature: "sig" } } },
      { type: "reasoning", text: "", options: { anthropic: { redactedData: "data", cache_control: { type: "ephemeral" } } } }
    ]),
    shown: [
      { anthropic: { type: "thinking", signature: "sig" } },
      { anthropic: { type: "redacted_thinking", redactedData: "data", cache_control: { type: "ephemeral" } } }
    ]
  },
  {
    name: "Pi's Anthropic signature and redacted payload, by the message's API",
    message: assistant([
      { type: "reasoning", text: "t", options: { pi: { thinkingSignature: "sig" } } },
      { type: "reasoning", text: "", options: { pi: { thinking: "[Reasoning redacted]", thinkingSignature: "data", redacted: true } } }
    ], piAnthropic),
    shown: [
      { pi: { thinkingSignature: "sig" }, anthropic: { type: "thinking", signature: "sig" } },
      { pi: { thinking: "[Reasoning redacted]", thinkingSignature: "data", redacted: true }, anthropic: { type: "redacted_thinking", redactedData: "data" } }
    ]
  },
  {
    name: "Pi's Anthropic signature on a message that names only its provider",
    message: assistant([{ type: "reasoning", text: "t", options: { pi: { thinkingSignature: "sig" } } }], { meta: { provider: "anthropic" } }),
    shown: [{ pi: { thinkingSignature: "sig" }, anthropic: { type: "thinking", signature: "sig" } }]
  },
  {
    name: "Pi's OpenAI Responses reasoning item, with and without its encrypted content",
    message: assistant([
      { type: "reasoning", text: "s", options: { pi: { thinkingSignature: item } } },
      { type: "reasoning", text: "s", options: { pi: { thinkingSignature: JSON.stringify({ type: "reasoning", id: "rs_2", summary: [] }) } } }
    ], { meta: { provider: "openai" }, options: { pi: { api: "openai-responses" } } }),
    shown: [
      { pi: { thinkingSignature: item }, openai: { itemId: "rs_1", encryptedContent: "gAAAAABenc" } },
      { pi: { thinkingSignature: JSON.stringify({ type: "reasoning", id: "rs_2", summary: [] }) }, openai: { itemId: "rs_2" } }
    ]
  },
  {
    name: "nothing to repair: provider-true forms, another API's signature, no payload, a text part",
    message: assistant([
      { type: "reasoning", text: "t", options: { anthropic: { type: "thinking", signature: "sig" } } },
      { type: "reasoning", text: "t", options: { openai: { itemId: "rs_1", encryptedContent: "e" } } },
      { type: "reasoning", text: "t", options: { pi: { thinkingSignature: "reasoning_content" } } },
      { type: "reasoning", text: "t", options: { anthropic: { cacheControl: { type: "ephemeral" } } } },
      { type: "reasoning", text: "t" },
      { type: "text", text: "x", options: { anthropic: { signature: "not reasoning" } } }
    ], { meta: { provider: "openrouter" }, options: { pi: { api: "openai-completions" } } }),
    shown: [
      { anthropic: { type: "thinking", signature: "sig" } },
      { openai: { itemId: "rs_1", encryptedContent: "e" } },
      { pi: { thinkingSignature: "reasoning_content" } },
      { anthropic: { cacheControl: { type: "ephemeral" } } },
      {},
      { anthropic: { signature: "not reasoning" } }
    ]
  },
  {
    name: "an Anthropic API's signature that parses as an OpenAI item is neither",
    message: assistant([{ type: "reasoning", text: "t", options: { pi: { thinkingSignature: item } } }], piAnthropic),
    shown: [{ pi: { thinkingSignature: item } }]
  }
]

describe("Codec.toPrompt repairs legacy reasoning options", () => {
  for (const c of cases) {
    it.effect(c.name, () =>
      Effect.gen(function*() {
        const messages = [question, c.message]
        const prompt = yield* Codec.toPrompt(messages)
        expect(shown(prompt)).toEqual(c.shown)
        // The stored form is what comes back.
        expect(yield* Codec.fromPrompt(prompt)).toEqual(messages)
      }))
  }
})

describe("the repaired forms on the wire, through the clients' own request encoders", () => {
  it.live("Anthropic: thinking with its signature and redacted thinking with its data, from Claude's and Pi's legacy forms", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "ok" }])), json(W.anthropicMessage([{ type: "text", text: "ok" }])))
      const send = (message: RecordV2.AssistantMessage) =>
        Effect.flatMap(Codec.toPrompt([question, message, next]), (prompt) =>
          Effect.flatMap(LanguageModel.LanguageModel, (model) => model.generateText({ prompt }))).pipe(Effect.provide(anthropic(provider.url)))
      yield* send(cases[0]!.message)
      yield* send(cases[1]!.message)
      const [claude, pi] = provider.bodies()
      expect(claude.messages[1].content).toEqual([
        { type: "thinking", thinking: "t", signature: "sig" },
        { type: "redacted_thinking", data: "data" }
      ])
      expect(pi.messages[1].content).toEqual([
        { type: "thinking", thinking: "t", signature: "sig" },
        { type: "redacted_thinking", data: "data" }
      ])
    }).pipe(Effect.scoped))

  it.live("OpenAI: Pi's reasoning item as a reasoning input item with its encrypted content", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      provider.reply(json(W.openaiResponse([{ type: "message", id: "msg_1", text: "ok" }])))
      const prompt = yield* Codec.toPrompt([question, cases[3]!.message, next])
      yield* Effect.flatMap(LanguageModel.LanguageModel, (model) => model.generateText({ prompt })).pipe(Effect.provide(openai(provider.url)))
      expect(provider.bodies()[0].input.slice(1, 3)).toEqual([
        { id: "rs_1", type: "reasoning", summary: [{ type: "summary_text", text: "s" }], encrypted_content: "gAAAAABenc" },
        { id: "rs_2", type: "reasoning", summary: [{ type: "summary_text", text: "s" }] }
      ])
    }).pipe(Effect.scoped))

  it.live("OpenAI: a Codex reasoning item stored without its ID goes back as one item per encrypted content, under an ID derived from it", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      provider.reply(json(W.openaiResponse([{ type: "message", id: "msg_1", text: "ok" }])), json(W.openaiResponse([{ type: "message", id: "msg_2", text: "ok" }])))
      const codex = assistant([
        { type: "reasoning", text: "first", options: { openai: { encryptedContent: "gAAAAABone" } } },
        { type: "reasoning", text: "second", options: { openai: { encryptedContent: "gAAAAABone" } } },
        { type: "reasoning", text: "", options: { openai: { encryptedContent: "gAAAAABtwo" }, codex: { summary: [] } } }
      ])
      const send = Effect.flatMap(Codec.toPrompt([question, codex, next]), (prompt) =>
        Effect.flatMap(LanguageModel.LanguageModel, (model) => model.generateText({ prompt }))).pipe(Effect.provide(openai(provider.url)))
      yield* send
      yield* send
      const [first, again] = provider.bodies()
      const items = first.input.filter((item: any) => item.type === "reasoning")
      expect(items.map((item: any) => [item.summary, item.encrypted_content])).toEqual([
        [[{ type: "summary_text", text: "first" }, { type: "summary_text", text: "second" }], "gAAAAABone"],
        [[], "gAAAAABtwo"]
      ])
      for (const item of items) expect(item.id).toMatch(/^rs_[0-9a-f]{16}$/)
      expect(items[0].id).not.toEqual(items[1].id)
      // The same item gets the same ID in every request.
      expect(again.input).toEqual(first.input)
      // What is stored is not changed.
      expect(yield* Codec.fromPrompt(yield* Codec.toPrompt([question, codex]))).toEqual([question, codex])
    }).pipe(Effect.scoped))
})

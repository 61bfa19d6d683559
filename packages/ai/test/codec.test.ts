/**
 * The codec on hand-made values: the three losses of `@effect/ai`'s own
 * persistence path, each shown happening there and absent here (several text
 * parts, a file's bytes through JSON, response metadata such as a reasoning
 * signature reaching the next prompt of a scripted `LanguageModel`); options
 * under provider keys; blobs read through the caller's reader or refused with
 * `SESSION_BLOB_MISSING`; URLs; tool messages; a prompt not built here; and an
 * assistant message from every kind of response part.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Response from "@effect/ai/Response"
import { describe, expect, it } from "@effect/vitest"
import type { RecordV2 } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { Codec } from "../src/index.js"

const SIGNATURE = { anthropic: { type: "thinking" as const, signature: "EqQBCkYIBxgCKkB0c2lnbmF0dXJl" } }

/** The messages as the store keeps them: through JSON and back. */
const stored = <A>(value: A): A => JSON.parse(JSON.stringify(value)) as A

const userParts: RecordV2.UserMessage = {
  role: "user",
  id: "u1",
  content: [
    { type: "text", text: "Compare these.", options: { anthropic: { cacheControl: { type: "ephemeral" } } } },
    { type: "text", text: "First the old one." },
    { type: "file", mediaType: "image/png", name: "old.png", data: { base64: "iVBORw0KGgo=" } }
  ]
}

describe("the three losses of @effect/ai's own path, absent here", () => {
  it.effect("several text parts stay several, each with its options", () =>
    Effect.gen(function*() {
      const prompt = yield* Codec.toPrompt(stored([userParts]))
      const sent = prompt.content[0] as Prompt.UserMessage
      expect(sent.content.map((p) => p.type === "text" ? p.text : p.type)).toEqual(["Compare these.", "First the old one.", "file"])
      expect(sent.content[0]!.options).toEqual({ anthropic: { cacheControl: { type: "ephemeral" } } })
      expect(yield* Codec.fromPrompt(prompt)).toEqual([userParts])
      // @effect/ai's encoding of the same prompt keeps the first text part's text alone.
      const encoded = Schema.encodeSync(Prompt.Prompt)(Prompt.fromMessages([
        Prompt.makeMessage("user", { content: sent.content.filter((p) => p.type === "text") })
      ]))
      expect(encoded.content[0]!.content).toBe("Compare these.")
    }))

  it.effect("a file's bytes survive the stored JSON and reach the prompt as the same bytes", () =>
    Effect.gen(function*() {
      const bytes = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
      const prompt = yield* Codec.toPrompt(stored([userParts]))
      const file = (prompt.content[0] as Prompt.UserMessage).content[2] as Prompt.FilePart
      expect(file.data).toEqual(bytes)
      expect(file.fileName).toBe("old.png")
      // @effect/ai's JSON form of the same part cannot be read back.
      const json = Schema.encodeSync(Prompt.FromJson)(Prompt.fromMessages([
        Prompt.makeMessage("user", { content: [Prompt.makePart("file", { mediaType: "image/png", data: bytes })] })
      ]))
      expect(() => Schema.decodeSync(Prompt.FromJson)(json)).toThrow()
    }))

  it.effect("a reasoning signature in a response's metadata is sent back with the next prompt", () =>
    Effect.gen(function*() {
      const prompts: Array<Prompt.Prompt> = []
      const answers: Array<Array<Response.PartEncoded>> = [
        [
          { type: "reasoning", text: "The user wants a comparison.", metadata: SIGNATURE },
          { type: "reasoning", text: "", metadata: { anthropic: { type: "redacted_thinking", redactedData: "c2VjcmV0" } } },
          { type: "text", text: "The new one is larger." },
          { type: "finish", reason: "stop", usage: { inputTokens: 12, outputTokens: 7, totalTokens: 19 } }
        ],
        [{ type: "text", text: "Yes." }, { type: "finish", reason: "stop", usage: { inputTokens: 30, outputTokens: 1, totalTokens: 31 } }]
      ]
      const model = yield* LanguageModel.make({
        generateText: (options) =>
          Effect.sync(() => {
            prompts.push(options.prompt)
            return answers[prompts.length - 1]!
          }),
        streamText: () => {
          throw new Error("not scripted")
        }
      })
      const first = yield* model.generateText({ prompt: yield* Codec.toPrompt([userParts]) })
      const answer = stored(yield* Codec.fromResponse(first, { id: "a1" }))
      expect(answer.content[0]).toEqual({ type: "reasoning", text: "The user wants a comparison.", options: SIGNATURE })
      const next: RecordV2.UserMessage = { role: "user", id: "u2", content: [{ type: "text", text: "Sure?" }] }
      yield* model.generateText({ prompt: yield* Codec.toPrompt(stored([userParts, answer, next])) })
      const sent = prompts[1]!.content[1] as Prompt.AssistantMessage
      expect(sent.content.map((p) => [p.type, p.options.anthropic])).toEqual([
        ["reasoning", SIGNATURE.anthropic],
        ["reasoning", { type: "redacted_thinking", redactedData: "c2VjcmV0" }],
        ["text", undefined]
      ])
      // @effect/ai's own way from a response to the next prompt drops the signature.
      const theirs = Prompt.fromResponseParts(first.content)
      expect((theirs.content[0] as Prompt.AssistantMessage).content[0]!.options).toEqual({})
    }))
})

describe("Codec.toPrompt", () => {
  it.effect("keeps options that are not provider objects whole, and shows providers the ones that are", () =>
    Effect.gen(function*() {
      const message: RecordV2.SystemMessage = {
        role: "system",
        id: "s",
        content: "Be brief.",
        options: { openai: { store: false }, priority: 3, [Codec.NAMESPACE]: { mine: true } }
      }
      const prompt = yield* Codec.toPrompt([message])
      expect(prompt.content[0]!.options.openai).toEqual({ store: false })
      expect(yield* Codec.fromPrompt(prompt)).toEqual([message])
      const empty: RecordV2.SystemMessage = { role: "system", id: "s", content: "", options: {} }
      expect(yield* Codec.fromPrompt(yield* Codec.toPrompt([empty]))).toEqual([empty])
    }))

  it.effect("reads a blob through the caller's reader, and without one fails naming the blob", () =>
    Effect.gen(function*() {
      const blob = `sha256:${"ab".repeat(32)}`
      const message: RecordV2.UserMessage = {
        role: "user",
        id: "u",
        content: [{ type: "file", mediaType: "application/pdf", data: { blob, size: 3 } }]
      }
      const error = yield* Effect.flip(Codec.toPrompt([message]))
      expect(error._tag).toBe("BlobMissingError")
      expect(error).toMatchObject({ code: "SESSION_BLOB_MISSING", blob, size: 3 })
      expect(error.message).toContain(blob)
      const read: Array<string> = []
      const prompt = yield* Codec.toPrompt([message], {
        blobs: (ref) => Effect.sync(() => (read.push(ref.blob), Uint8Array.from([1, 2, 3])))
      })
      expect(read).toEqual([blob])
      expect(((prompt.content[0] as Prompt.UserMessage).content[0] as Prompt.FilePart).data).toEqual(Uint8Array.from([1, 2, 3]))
      expect(yield* Codec.fromPrompt(prompt)).toEqual([message])
    }))

  it.effect("sends a URL as a URL and refuses one that does not parse", () =>
    Effect.gen(function*() {
      const file = (url: string): RecordV2.UserMessage => ({
        role: "user",
        id: "u",
        content: [{ type: "file", mediaType: "image/png", data: { url } }]
      })
      const prompt = yield* Codec.toPrompt([file("HTTPS://Example.COM/a.png")])
      const data = ((prompt.content[0] as Prompt.UserMessage).content[0] as Prompt.FilePart).data
      expect(data).toBeInstanceOf(URL)
      expect(String(data)).toBe("https://example.com/a.png")
      expect(yield* Codec.fromPrompt(prompt)).toEqual([file("HTTPS://Example.COM/a.png")])
      const error = yield* Effect.flip(Codec.toPrompt([file("a.png")]))
      expect(error).toMatchObject({ _tag: "InputError", code: "SESSION_INVALID_MESSAGE" })
    }))

  it.effect("sends a tool message's result, else its one text, else its parts", () =>
    Effect.gen(function*() {
      const tool = (content: RecordV2.ToolMessage["content"], result?: unknown): RecordV2.ToolMessage => ({
        role: "tool",
        id: "t",
        toolCallId: "c1",
        toolName: "read",
        isError: false,
        content,
        ...(result === undefined ? {} : { result })
      })
      const sentResult = (message: RecordV2.ToolMessage) =>
        Effect.map(Codec.toPrompt([message]), (prompt) => (prompt.content[0] as Prompt.ToolMessage).content[0]!)
      const cases = [
        tool([{ type: "text", text: "ok" }], { lines: 3 }),
        tool([{ type: "text", text: "ok" }]),
        tool([{ type: "text", text: "a" }, { type: "text", text: "b" }]),
        tool([])
      ]
      const sent = yield* Effect.forEach(cases, sentResult)
      expect(sent.map((p) => p.result)).toEqual([{ lines: 3 }, "ok", cases[2]!.content, []])
      expect(sent.every((p) => p.id === "c1" && p.name === "read" && !p.isFailure && !p.providerExecuted)).toBe(true)
      for (const message of cases) expect(yield* Codec.fromPrompt(yield* Codec.toPrompt([message]))).toEqual([message])
    }))
})

describe("Codec.fromPrompt", () => {
  it.effect("needs an ID for a message of a prompt built elsewhere", () =>
    Effect.gen(function*() {
      const prompt = Prompt.make("Hello")
      const error = yield* Effect.flip(Codec.fromPrompt(prompt))
      expect(error).toMatchObject({ code: "SESSION_INVALID_MESSAGE" })
      let n = 0
      expect(yield* Codec.fromPrompt(prompt, { newId: () => `m${++n}` })).toEqual([
        { role: "user", id: "m1", content: [{ type: "text", text: "Hello" }] }
      ])
    }))
})

describe("Codec.fromPrompt, a prompt built elsewhere", () => {
  it.effect("gives a tool message for each result of a tool message, with its result", () =>
    Effect.gen(function*() {
      const prompt = Prompt.fromMessages([
        Prompt.makeMessage("tool", {
          content: [
            Prompt.makePart("tool-result", { id: "c1", name: "read", isFailure: false, result: "a", providerExecuted: false }),
            Prompt.makePart("tool-result", { id: "c2", name: "list", isFailure: true, result: { code: 2 }, providerExecuted: false })
          ]
        })
      ])
      let n = 0
      expect(yield* Codec.fromPrompt(prompt, { newId: () => `t${++n}` })).toEqual([
        { role: "tool", id: "t1", toolCallId: "c1", toolName: "read", isError: false, content: [], result: "a" },
        { role: "tool", id: "t2", toolCallId: "c2", toolName: "list", isError: true, content: [], result: { code: 2 } }
      ])
    }))

  it.effect("refuses what Message IR v2 cannot hold", () =>
    Effect.gen(function*() {
      const prompt = Prompt.fromMessages([
        Prompt.makeMessage("assistant", {
          content: [Prompt.makePart("tool-call", { id: "c1", name: "read", params: "not an object", providerExecuted: false })]
        })
      ])
      const error = yield* Effect.flip(Codec.fromPrompt(prompt, { newId: () => "a1" }))
      expect(error).toMatchObject({ _tag: "InputError", code: "SESSION_INVALID_MESSAGE" })
    }))
})

describe("Codec.fromResponse", () => {
  const response = {
    content: [
      Response.makePart("response-metadata", { id: Option.some("resp_1"), modelId: Option.some("claude"), timestamp: Option.none() }),
      Response.makePart("reasoning", { text: "Think.", metadata: SIGNATURE }),
      Response.makePart("text", { text: "Two things." }),
      Response.makePart("text", { text: "First:" }),
      Response.makePart("file", { mediaType: "image/png", data: Uint8Array.from([1, 2, 3]) }),
      Response.makePart("tool-call", { id: "c1", name: "Search", providerName: "web_search", params: { q: "x" }, providerExecuted: true }),
      Response.makePart("tool-result", {
        id: "c1",
        name: "Search",
        providerName: "web_search",
        isFailure: false,
        result: { hits: 1 },
        encodedResult: { hits: 1 },
        providerExecuted: true
      }),
      Response.makePart("tool-call", { id: "c2", name: "read", params: { path: "/a" }, providerExecuted: false, metadata: { openai: { itemId: "fc_1" } } }),
      Response.makePart("tool-result", {
        id: "c2",
        name: "read",
        isFailure: true,
        result: "denied",
        encodedResult: "denied",
        providerExecuted: false
      }),
      Response.makePart("finish", {
        reason: "tool-calls",
        usage: new Response.Usage({ inputTokens: 100, outputTokens: 20, totalTokens: 120, reasoningTokens: 5, cachedInputTokens: 50 })
      })
    ]
  } satisfies Codec.ResponseLike

  it.effect("gives every content part in order, with its metadata as options, and meta in its key order", () =>
    Effect.gen(function*() {
      const message = yield* Codec.fromResponse(response, { id: "a1", provider: "anthropic" })
      expect(message).toEqual({
        role: "assistant",
        id: "a1",
        content: [
          { type: "reasoning", text: "Think.", options: SIGNATURE },
          { type: "text", text: "Two things." },
          { type: "text", text: "First:" },
          { type: "file", mediaType: "image/png", data: { base64: "AQID" } },
          {
            type: "tool-call",
            id: "c1",
            name: "Search",
            arguments: { q: "x" },
            providerExecuted: true,
            options: { [Codec.NAMESPACE]: { providerName: "web_search" } }
          },
          {
            type: "tool-result",
            toolCallId: "c1",
            toolName: "Search",
            isError: false,
            result: { hits: 1 },
            options: { [Codec.NAMESPACE]: { providerName: "web_search" } }
          },
          { type: "tool-call", id: "c2", name: "read", arguments: { path: "/a" }, options: { openai: { itemId: "fc_1" } } }
        ],
        meta: {
          provider: "anthropic",
          model: "claude",
          responseId: "resp_1",
          usage: { inputTokens: 100, outputTokens: 20, reasoningTokens: 5, cachedInputTokens: 50 },
          stopReason: "tool-calls"
        }
      })
      expect(Object.keys(message.meta!)).toEqual(["provider", "model", "responseId", "usage", "stopReason"])
      expect(yield* Codec.toolMessages(response, { newId: () => "t1" })).toEqual([
        { role: "tool", id: "t1", toolCallId: "c2", toolName: "read", isError: true, content: [], result: "denied" }
      ])
    }))

  it.effect("leaves usage out when a count is unknown, and keeps an error", () =>
    Effect.gen(function*() {
      const message = yield* Codec.fromResponse({
        content: [
          Response.makePart("error", { error: new Error("overloaded") }),
          Response.makePart("finish", {
            reason: "error",
            usage: new Response.Usage({ inputTokens: 10, outputTokens: undefined, totalTokens: undefined })
          })
        ]
      }, { id: "a1" })
      expect(message).toEqual({ role: "assistant", id: "a1", content: [], meta: { stopReason: "error", error: "overloaded" } })
    }))
})

/**
 * The codec's round trip on generated Message IR v2: every role, every part
 * kind, several text parts, options of every shape (objects under provider
 * keys, values that are not objects, empty options, the codec's own key),
 * file data inline, at URLs spelled in ways a `URL` rewrites, and in blobs,
 * tool messages with and without `result`. Each message is checked by the
 * Schema first; after a JSON round trip of the messages, `toPrompt` then
 * `fromPrompt` gives them back equal and with the same JSON, key order
 * included.
 */
import * as Prompt from "@effect/ai/Prompt"
import { describe, expect, it } from "@effect/vitest"
import { RecordV2 } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as FastCheck from "effect/FastCheck"
import * as Schema from "effect/Schema"
import { Codec } from "../src/index.js"

const decodeMessage = Schema.decodeUnknownSync(RecordV2.Message, { onExcessProperty: "error", exact: true })

const optional = <K extends string, A>(key: K, arbitrary: FastCheck.Arbitrary<A>) =>
  FastCheck.option(arbitrary, { nil: undefined }).map((value) => value === undefined ? {} : { [key]: value })

const json = FastCheck.jsonValue({ maxDepth: 2 }).map((value) => JSON.parse(JSON.stringify(value)) as unknown)
const key = FastCheck.oneof(FastCheck.string({ maxLength: 8 }), FastCheck.constantFrom("anthropic", "openai", Codec.NAMESPACE))
const object = FastCheck.dictionary(key.filter((k) => k !== "__proto__"), json, { maxKeys: 3 })
const opaque = FastCheck.dictionary(
  key.filter((k) => k !== "__proto__"),
  FastCheck.oneof(object, object, json),
  { maxKeys: 3 }
)
const options = optional("options", opaque)

const id = FastCheck.string({ minLength: 1, maxLength: 6 })
const name = FastCheck.string({ minLength: 1, maxLength: 6 })

const text = FastCheck.tuple(FastCheck.string({ maxLength: 12 }), options).map(([text, options]) => ({ type: "text", text, ...options }))
const reasoning = FastCheck.tuple(FastCheck.string({ maxLength: 12 }), options).map(([text, options]) => ({
  type: "reasoning",
  text,
  ...options
}))

const url = FastCheck.oneof(
  FastCheck.webUrl({ withQueryParameters: true, withFragments: true }),
  // Spellings a URL rewrites: an upper-case scheme and host, a space, no path.
  FastCheck.constantFrom("HTTPS://Example.COM", "https://example.com/a b", "data:image/png;base64,AAAA", "file:///tmp/x")
)
const blobName = FastCheck.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) =>
  `sha256:${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`
)
const data = FastCheck.oneof(
  FastCheck.uint8Array({ maxLength: 12 }).map((bytes) => ({ base64: Encoding.encodeBase64(bytes) })),
  url.map((url) => ({ url })),
  FastCheck.tuple(blobName, FastCheck.nat({ max: 16 })).map(([blob, size]) => ({ blob, size }))
)
const file = FastCheck.tuple(FastCheck.constantFrom("image/png", "application/pdf"), optional("name", FastCheck.string({ maxLength: 6 })), data, options)
  .map(([mediaType, name, data, options]) => ({ type: "file", mediaType, ...name, data, ...options }))

const toolCall = FastCheck.tuple(id, name, object, FastCheck.boolean(), options).map(([id, name, args, provider, options]) => ({
  type: "tool-call",
  id,
  name,
  arguments: args,
  ...(provider ? { providerExecuted: true } : {}),
  ...options
}))
const toolResult = FastCheck.tuple(id, name, FastCheck.boolean(), json, options).map(([toolCallId, toolName, isError, result, options]) => ({
  type: "tool-result",
  toolCallId,
  toolName,
  isError,
  result,
  ...options
}))

const count = FastCheck.nat({ max: 10_000 })
const usage = FastCheck.tuple(count, count, optional("reasoningTokens", count), optional("cachedInputTokens", count), optional("cacheWriteTokens", count))
  .map(([inputTokens, outputTokens, ...rest]) => Object.assign({ inputTokens, outputTokens }, ...rest))
const meta = FastCheck.tuple(
  optional("provider", FastCheck.string({ maxLength: 6 })),
  optional("model", FastCheck.string({ maxLength: 6 })),
  optional("responseId", FastCheck.string({ maxLength: 6 })),
  optional("usage", usage),
  optional("stopReason", FastCheck.constantFrom("stop", "tool-calls")),
  optional("error", FastCheck.string({ maxLength: 6 }))
).map((keys) => Object.assign({}, ...keys)).filter((meta) => Object.keys(meta).length > 0)

const message = FastCheck.oneof(
  FastCheck.tuple(id, FastCheck.string({ maxLength: 12 }), options).map(([id, content, options]) => ({ role: "system", id, content, ...options })),
  FastCheck.tuple(id, FastCheck.array(FastCheck.oneof(text, text, file), { minLength: 1, maxLength: 4 }), options).map((
    [id, content, options]
  ) => ({ role: "user", id, content, ...options })),
  FastCheck.tuple(
    id,
    FastCheck.array(FastCheck.oneof(text, reasoning, file, toolCall, toolResult), { maxLength: 5 }),
    optional("meta", meta),
    options
  ).map(([id, content, meta, options]) => ({ role: "assistant", id, content, ...meta, ...options })),
  FastCheck.tuple(id, id, name, FastCheck.boolean(), FastCheck.array(FastCheck.oneof(text, text, file), { maxLength: 3 }), optional("result", json), options)
    .map(([id, toolCallId, toolName, isError, content, result, options]) => ({
      role: "tool",
      id,
      toolCallId,
      toolName,
      isError,
      content,
      ...result,
      ...options
    }))
).map(decodeMessage)

/** A blob's bytes, as many as its size says, different for every name. */
const blobBytes = (blob: { readonly blob: string; readonly size: number }) =>
  Effect.succeed(Uint8Array.from({ length: blob.size }, (_, i) => (blob.blob.charCodeAt(7 + (i % 64)) + i) & 0xff))

describe("Codec round trip", () => {
  it.effect("fromPrompt(toPrompt(messages)) gives the messages back, key for key", () =>
    Effect.gen(function*() {
      const samples = FastCheck.sample(FastCheck.array(message, { maxLength: 6 }), { numRuns: 400, seed: 22 })
      for (const messages of samples) {
        const stored = JSON.parse(JSON.stringify(messages)) as ReadonlyArray<RecordV2.Message>
        const prompt = yield* Codec.toPrompt(stored, { blobs: blobBytes })
        expect(prompt.content).toHaveLength(messages.length)
        const back = yield* Codec.fromPrompt(prompt)
        expect(back).toEqual(messages)
        expect(JSON.stringify(back)).toBe(JSON.stringify(messages))
      }
    }))

  it.effect("sends every part in order, with each provider's options under its own key", () =>
    Effect.gen(function*() {
      const samples = FastCheck.sample(message, { numRuns: 300, seed: 7 })
      for (const m of samples) {
        const prompt = yield* Codec.toPrompt([m], { blobs: blobBytes })
        const sent = prompt.content[0]!
        expect(sent.role).toBe(m.role)
        if (m.role === "user" || m.role === "assistant") {
          expect(sent.content).toHaveLength(m.content.length)
          const types = (sent.content as ReadonlyArray<Prompt.Part>).map((p) => p.type)
          expect(types).toEqual(m.content.map((p) => p.type))
          for (const [i, part] of m.content.entries()) {
            const theirs = (sent.content as ReadonlyArray<Prompt.Part>)[i]!.options
            for (const [k, v] of Object.entries(part.options ?? {})) {
              if (k !== Codec.NAMESPACE && typeof v === "object" && v !== null && !Array.isArray(v)) expect(theirs[k]).toBe(v)
            }
            if (part.type === "text" || part.type === "reasoning") {
              expect((sent.content as ReadonlyArray<Prompt.TextPart>)[i]!.text).toBe(part.text)
            }
          }
        }
      }
    }))
})

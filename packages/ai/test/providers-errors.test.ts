/**
 * No secret in any error the agent surfaces. Through the real client packages
 * with a distinctive key, each failure a provider can cause (an error status
 * with its body, a body that is not what the API returns, HTML, a refused
 * connection, an error event inside a stream, a stream that drops, a prompt
 * the client cannot encode) and a failing tool handler whose own error holds
 * the key: the error's message, its JSON, `String()`, `util.inspect` and
 * `Cause.pretty` (with causes rendered), and every log line of the run, hold
 * neither the key, nor a header's name, nor the prompt. The same failures as
 * `@effect/ai` reports them do hold the key, so the check can fail.
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import { describe, expect, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Stream from "effect/Stream"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"
import { inspect } from "node:util"
import { Agent } from "../src/index.js"
import { anthropic, fakeProvider, json, KEY, openai, type Reply, sse } from "./support/provider.js"
import { tools } from "./support/scripted.js"
import { fileSession, tempDir } from "./support/session.js"
import * as W from "./support/wire.js"

const PROMPT = "PROMPT-MARKER-7c1f: what is in /project?"

/** Every way an error is shown: what a log, a report or a crash would print of it. */
const renderings = (error: unknown, exit: Exit.Exit<unknown, unknown>): Array<string> => [
  (error as Error).message,
  JSON.stringify(error),
  String(error),
  inspect(error, { depth: 20 }),
  Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "",
  Exit.isFailure(exit) ? Cause.pretty(exit.cause, { renderErrorCause: true }) : "",
  Cause.pretty(Cause.fail(error), { renderErrorCause: true })
]

const expectNoSecret = (texts: ReadonlyArray<string>, what: string) => {
  for (const text of texts) {
    expect(text, what).not.toContain(KEY)
    expect(text, what).not.toContain(KEY.slice(-12))
    expect(text, what).not.toContain("PROMPT-MARKER")
    expect(text.toLowerCase(), what).not.toMatch(/x-api-key|authorization|bearer/)
  }
}

/** A port nothing listens on (a server opened and closed on it). */
const closedPort = Effect.async<number>((resume) => {
  const server = Http.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

interface Scenario {
  readonly name: string
  readonly model: (url: string) => Layer.Layer<LanguageModel.LanguageModel>
  readonly replies: ReadonlyArray<Reply>
  readonly stream?: boolean
  readonly refused?: boolean
  readonly content?: Parameters<Agent.Service["send"]>[0]
  readonly expected: object
}

const html: Reply = { kind: "raw", status: 200, contentType: "text/html", body: "<html><body>Bad gateway</body></html>" }

const scenarios: ReadonlyArray<Scenario> = [
  {
    name: "Anthropic: 401 with its error body",
    model: anthropic,
    replies: [json(W.anthropicError("authentication_error", "invalid x-api-key"), 401)],
    expected: { provider: "anthropic", status: 401, reason: "HTTP 401 (authentication_error)", retryable: false }
  },
  {
    name: "OpenAI: 401 echoing the key's end",
    model: openai,
    replies: [json(W.openaiError("invalid_request_error", "invalid_api_key", `Incorrect API key provided: sk-test-****${KEY.slice(-4)}.`), 401)],
    expected: { provider: "openai", status: 401, reason: "HTTP 401 (invalid_request_error)", retryable: false }
  },
  {
    name: "Anthropic: 500",
    model: anthropic,
    replies: [json(W.anthropicError("api_error", "Internal server error"), 500)],
    expected: { provider: "anthropic", status: 500, retryable: true }
  },
  {
    name: "Anthropic: a body that is not a message",
    model: anthropic,
    replies: [json({ id: "msg_1", type: "message", content: "not blocks" })],
    expected: { provider: "anthropic", reason: "the provider's response could not be read", retryable: false }
  },
  {
    name: "OpenAI: a body that is not a response",
    model: openai,
    replies: [json({ object: "response", output: 7 })],
    expected: { provider: "openai", reason: "the provider's response could not be read" }
  },
  {
    name: "Anthropic: HTML from a proxy",
    model: anthropic,
    replies: [html],
    expected: { provider: "anthropic", status: 200, retryable: true }
  },
  {
    name: "OpenAI: HTML from a proxy",
    model: openai,
    replies: [html],
    expected: { provider: "openai", status: 200 }
  },
  {
    name: "Anthropic: an error event inside the stream",
    model: anthropic,
    stream: true,
    replies: [sse([
      ...W.anthropicEvents([{ type: "text", text: "Hel" }]).slice(0, 3),
      { event: "error", data: W.anthropicError("overloaded_error", "Overloaded") }
    ])],
    // Nothing names the provider: no option, no answer of it yet, and the failure is reported by @effect/ai.
    expected: { reason: "the provider reported an error in the stream (overloaded_error)", retryable: true }
  },
  {
    name: "OpenAI: the stream drops",
    model: openai,
    stream: true,
    replies: [sse(W.openaiEvents([{ type: "message", id: "msg_1", text: "Hello." }]), 4)],
    expected: { provider: "openai", status: 200, reason: "HTTP 200: the response could not be read (cut off, or not in the API's format)", retryable: true }
  },
  {
    name: "Anthropic: a file the client cannot encode",
    model: anthropic,
    replies: [],
    content: [{ type: "text", text: PROMPT }, { type: "file", mediaType: "audio/wav", data: { base64: "UklGRg==" } }],
    expected: { provider: "anthropic", reason: "the prompt cannot be sent to this provider: Detected unsupported media type for file: 'audio/wav'" }
  },
  {
    name: "Anthropic: the connection is refused",
    model: anthropic,
    replies: [],
    refused: true,
    expected: { provider: "anthropic", reason: "the request did not reach the provider (transport)", retryable: true }
  }
]

describe("no secret in the errors the agent surfaces", () => {
  for (const scenario of scenarios) {
    it.live(scenario.name, () =>
      Effect.gen(function*() {
        const provider = yield* fakeProvider
        const file = Path.join(yield* tempDir, "s.jsonl")
        provider.reply(...scenario.replies)
        const url = scenario.refused === true ? `http://127.0.0.1:${yield* closedPort}` : provider.url
        const logs: Array<string> = []
        const logger = Logger.make(({ cause, message }) => logs.push(`${JSON.stringify(message)} ${Cause.pretty(cause)}`))
        const exit = yield* Effect.gen(function*() {
          const agent = yield* Agent.make({ system: "Be brief.", toolkit: tools })
          const content = scenario.content ?? PROMPT
          return yield* scenario.stream === true ? Stream.runDrain(agent.sendStream(content)) : agent.send(content)
        }).pipe(
          Effect.provide(Layer.mergeAll(fileSession(file), scenario.model(url), tools.toLayer({ list_dir: () => Effect.succeed([]) }))),
          Effect.tapErrorCause((cause) => Effect.logError("the turn failed", cause)),
          Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
          Effect.scoped,
          Effect.exit
        )
        expect(Exit.isFailure(exit)).toBe(true)
        const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
        expect(error).toMatchObject({ _tag: "ModelError", ...scenario.expected })
        expect(Object.keys(error as object).sort()).toEqual(
          ["_tag", "provider", "reason", "retryable", "status"].filter((key) => key in (error as object)).sort()
        )
        expect(logs.length).toBeGreaterThan(0)
        expectNoSecret([...renderings(error, exit), ...logs], scenario.name)
        if (scenario.refused !== true && scenario.content === undefined) {
          // The request did carry the key and the prompt: they were there to leak.
          expect(provider.requests[0]!.body).toContain("PROMPT-MARKER")
        }
      }).pipe(Effect.scoped))
  }

  it.live("@effect/ai's own errors of the same failures hold the key (what the agent does not copy)", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      provider.reply(html, json(W.anthropicError("authentication_error", "invalid x-api-key"), 401))
      for (const _ of [1, 2]) {
        const raw = yield* Effect.flip(
          Effect.flatMap(LanguageModel.LanguageModel, (model) => model.generateText({ prompt: PROMPT })).pipe(Effect.provide(anthropic(provider.url)))
        )
        expect(JSON.stringify(raw) + inspect(raw, { depth: 20 })).toContain(KEY)
      }
    }).pipe(Effect.scoped))

  it.live("a handler failing with an error that holds the key: the ToolError does not show it, its failure keeps it", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const file = Path.join(yield* tempDir, "s.jsonl")
      provider.reply(json(W.anthropicMessage([{ type: "tool_use", id: "toolu_1", name: "list_dir", input: { path: "/project" } }])))
      class UpstreamError extends Error {
        override readonly name = "UpstreamError"
        readonly headers = { authorization: `Bearer ${KEY}` }
      }
      const failing = tools.toLayer({ list_dir: () => Effect.fail(new UpstreamError(`GET https://internal/list?key=${KEY} failed`) as never) })
      const exit = yield* Effect.gen(function*() {
        const agent = yield* Agent.make({ toolkit: tools })
        return yield* agent.send(PROMPT)
      }).pipe(Effect.provide(Layer.mergeAll(fileSession(file), anthropic(provider.url), failing)), Effect.scoped, Effect.exit)
      const error = Exit.isFailure(exit) ? Cause.squash(exit.cause) as Agent.ToolError : undefined
      expect(error).toMatchObject({ _tag: "ToolError", toolName: "list_dir", toolCallId: "toolu_1", reason: "the handler failed with UpstreamError" })
      expectNoSecret(renderings(error, exit), "ToolError")
      expect(error!.failure).toBeInstanceOf(UpstreamError)
    }).pipe(Effect.scoped))
})

/**
 * A provider on this machine: a `node:http` server the real client packages
 * (`@effect/ai-anthropic`, `@effect/ai-openai`, over `NodeHttpClient`) talk
 * HTTP to. It records each request (method, path, headers, the body as sent)
 * and answers with the replies a test queued, in order: JSON, server-sent
 * events (optionally cut after some events, as a dropped connection), raw
 * bytes, or no answer at all. No client and no `LanguageModel` is mocked.
 */
import * as AnthropicClient from "@effect/ai-anthropic/AnthropicClient"
import * as AnthropicLanguageModel from "@effect/ai-anthropic/AnthropicLanguageModel"
import * as OpenAiClient from "@effect/ai-openai/OpenAiClient"
import * as OpenAiLanguageModel from "@effect/ai-openai/OpenAiLanguageModel"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"

export interface Recorded {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  /** The body exactly as the client sent it. */
  readonly body: string
}

export interface SseEvent {
  readonly event?: string
  readonly data: unknown
}

export type Reply =
  | { readonly kind: "json"; readonly status: number; readonly body: unknown }
  | { readonly kind: "raw"; readonly status: number; readonly contentType: string; readonly body: string }
  /** Events; with `cut`, only the first `cut` are sent before the connection is closed. */
  | { readonly kind: "sse"; readonly events: ReadonlyArray<SseEvent>; readonly cut?: number }
  /** No answer: the request waits until the client gives up or the server closes. */
  | { readonly kind: "hang" }

export const json = (body: unknown, status = 200): Reply => ({ kind: "json", status, body })
export const sse = (events: ReadonlyArray<SseEvent>, cut?: number): Reply =>
  cut === undefined ? { kind: "sse", events } : { kind: "sse", events, cut }

export interface FakeProvider {
  /** The server's base URL (`http://127.0.0.1:port`). */
  readonly url: string
  /** Every request, in arrival order. */
  readonly requests: Array<Recorded>
  /** The bodies of the requests, parsed. */
  readonly bodies: () => Array<any>
  /** Queues replies for the next requests. */
  readonly reply: (...replies: ReadonlyArray<Reply>) => void
}

const sseText = (events: ReadonlyArray<SseEvent>): Array<string> =>
  events.map(({ data, event }) => `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`)

/** A server on 127.0.0.1, closed (every connection with it) when the scope closes. */
export const fakeProvider: Effect.Effect<FakeProvider, never, Scope.Scope> = Effect.acquireRelease(
  Effect.async<{ readonly server: Http.Server; readonly provider: FakeProvider }>((resume) => {
    const requests: Array<Recorded> = []
    const queue: Array<Reply> = []
    const server = Http.createServer((request, response) => {
      const chunks: Array<Buffer> = []
      request.on("data", (chunk: Buffer) => chunks.push(chunk))
      request.on("end", () => {
        requests.push({
          method: request.method ?? "",
          path: request.url ?? "",
          headers: request.headers,
          body: Buffer.concat(chunks).toString("utf8")
        })
        const reply = queue.shift() ?? json({ type: "error", error: { type: "api_error", message: "no reply was queued" } }, 500)
        switch (reply.kind) {
          case "json":
            response.writeHead(reply.status, { "content-type": "application/json" })
            response.end(JSON.stringify(reply.body))
            return
          case "raw":
            response.writeHead(reply.status, { "content-type": reply.contentType })
            response.end(reply.body)
            return
          case "sse": {
            response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
            const texts = sseText(reply.events)
            if (reply.cut === undefined) {
              response.end(texts.join(""))
            } else {
              // What a dropped connection leaves: the events sent so far, then the socket closes.
              response.write(texts.slice(0, reply.cut).join(""), () => response.socket?.destroy())
            }
            return
          }
          case "hang":
            return
        }
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo
      resume(Effect.succeed({
        server,
        provider: {
          url: `http://127.0.0.1:${port}`,
          requests,
          bodies: () => requests.map((r) => JSON.parse(r.body)),
          reply: (...replies) => void queue.push(...replies)
        }
      }))
    })
  }),
  ({ server }) =>
    Effect.async<void>((resume) => {
      server.closeAllConnections()
      server.close(() => resume(Effect.void))
    })
).pipe(Effect.map(({ provider }) => provider))

/** A key no test ever sends anywhere but here; the tests look for it in every error. */
export const KEY = "sk-test-9f2c7e41d0b84a6f8e3d5c1b2a790fedcba"

/** `@effect/ai-anthropic`'s model over the fake provider, thinking enabled, as an application configures it. */
export const anthropic = (url: string, key: string = KEY): Layer.Layer<LanguageModel.LanguageModel> =>
  AnthropicLanguageModel.layer({
    model: "claude-sonnet-4-5",
    config: { max_tokens: 2048, thinking: { type: "enabled", budget_tokens: 1024 } }
  }).pipe(
    Layer.provide(AnthropicClient.layer({ apiKey: Redacted.make(key), apiUrl: url })),
    Layer.provide(NodeHttpClient.layerUndici)
  )

/**
 * `@effect/ai-openai`'s model over the fake provider, with what reasoning needs when nothing is
 * stored server-side: `store: false`, the encrypted reasoning included, and a reasoning summary.
 */
export const openai = (url: string, key: string = KEY): Layer.Layer<LanguageModel.LanguageModel> =>
  OpenAiLanguageModel.layer({
    model: "gpt-5",
    config: { store: false, include: ["reasoning.encrypted_content"], reasoning: { effort: "low", summary: "auto" } }
  }).pipe(
    Layer.provide(OpenAiClient.layer({ apiKey: Redacted.make(key), apiUrl: `${url}/v1` })),
    Layer.provide(NodeHttpClient.layerUndici)
  )

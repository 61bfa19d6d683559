/**
 * Provider responses in their wire format, written here from the providers'
 * API references: Anthropic's Messages API (a JSON message, and the same
 * message as server-sent events) and OpenAI's Responses API (a JSON response,
 * and the same response as server-sent events). Each builder takes the
 * response's content once, so that the JSON and the streamed form of a test
 * say the same thing.
 */
import type { SseEvent } from "./provider.js"

// -----------------------------------------------------------------------------
// Anthropic Messages API
// -----------------------------------------------------------------------------

export type Block =
  | { readonly type: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly type: "redacted_thinking"; readonly data: string }
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }

export interface MessageOptions {
  readonly id?: string
  readonly stop_reason?: "end_turn" | "tool_use" | "max_tokens"
  readonly input_tokens?: number
  readonly output_tokens?: number
}

const MODEL = "claude-sonnet-4-5-20250929"

const usageOf = (options: MessageOptions, output: number) => ({
  input_tokens: options.input_tokens ?? 120,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  output_tokens: output,
  service_tier: "standard"
})

const stopOf = (blocks: ReadonlyArray<Block>, options: MessageOptions) =>
  options.stop_reason ?? (blocks.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn")

/** A `POST /v1/messages` response body. */
export const anthropicMessage = (blocks: ReadonlyArray<Block>, options: MessageOptions = {}) => ({
  id: options.id ?? "msg_01XFDUDYJgAACzvnptvVoYEL",
  type: "message",
  role: "assistant",
  model: MODEL,
  content: blocks,
  stop_reason: stopOf(blocks, options),
  stop_sequence: null,
  usage: usageOf(options, options.output_tokens ?? 48)
})

/** The same message as the events of a streamed response (`"stream": true`). */
export const anthropicEvents = (blocks: ReadonlyArray<Block>, options: MessageOptions = {}): Array<SseEvent> => {
  const events: Array<SseEvent> = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id: options.id ?? "msg_01XFDUDYJgAACzvnptvVoYEL",
          type: "message",
          role: "assistant",
          model: MODEL,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: usageOf(options, 1)
        }
      }
    },
    { event: "ping", data: { type: "ping" } }
  ]
  const delta = (index: number, d: object): SseEvent => ({ event: "content_block_delta", data: { type: "content_block_delta", index, delta: d } })
  blocks.forEach((block, index) => {
    const start = (content_block: object): SseEvent => ({ event: "content_block_start", data: { type: "content_block_start", index, content_block } })
    switch (block.type) {
      case "thinking": {
        events.push(start({ type: "thinking", thinking: "", signature: "" }))
        const half = Math.ceil(block.thinking.length / 2)
        events.push(delta(index, { type: "thinking_delta", thinking: block.thinking.slice(0, half) }))
        events.push(delta(index, { type: "thinking_delta", thinking: block.thinking.slice(half) }))
        events.push(delta(index, { type: "signature_delta", signature: block.signature }))
        break
      }
      case "redacted_thinking":
        events.push(start({ type: "redacted_thinking", data: block.data }))
        break
      case "text": {
        events.push(start({ type: "text", text: "" }))
        const half = Math.ceil(block.text.length / 2)
        events.push(delta(index, { type: "text_delta", text: block.text.slice(0, half) }))
        events.push(delta(index, { type: "text_delta", text: block.text.slice(half) }))
        break
      }
      case "tool_use": {
        events.push(start({ type: "tool_use", id: block.id, name: block.name, input: {} }))
        const input = JSON.stringify(block.input)
        const half = Math.ceil(input.length / 2)
        events.push(delta(index, { type: "input_json_delta", partial_json: input.slice(0, half) }))
        events.push(delta(index, { type: "input_json_delta", partial_json: input.slice(half) }))
        break
      }
    }
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } })
  })
  events.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: stopOf(blocks, options), stop_sequence: null },
      usage: { output_tokens: options.output_tokens ?? 48 }
    }
  })
  events.push({ event: "message_stop", data: { type: "message_stop" } })
  return events
}

/** An error body of the Messages API. */
export const anthropicError = (type: string, message: string) => ({ type: "error", error: { type, message } })

// -----------------------------------------------------------------------------
// OpenAI Responses API
// -----------------------------------------------------------------------------

export type Item =
  | { readonly type: "reasoning"; readonly id: string; readonly summary: ReadonlyArray<string>; readonly encrypted_content?: string }
  | { readonly type: "message"; readonly id: string; readonly text: string }
  | { readonly type: "function_call"; readonly id: string; readonly call_id: string; readonly name: string; readonly arguments: string }

export interface ResponseOptions {
  readonly id?: string
  readonly input_tokens?: number
  readonly output_tokens?: number
}

const OPENAI_MODEL = "gpt-5-2025-08-07"
const CREATED = 1_760_000_000

const itemOf = (item: Item) => {
  switch (item.type) {
    case "reasoning":
      return {
        id: item.id,
        type: "reasoning",
        summary: item.summary.map((text) => ({ type: "summary_text", text })),
        ...(item.encrypted_content === undefined ? {} : { encrypted_content: item.encrypted_content })
      }
    case "message":
      return {
        id: item.id,
        type: "message",
        status: "completed",
        role: "assistant",
        content: [{ type: "output_text", text: item.text, annotations: [], logprobs: [] }]
      }
    case "function_call":
      return { id: item.id, type: "function_call", status: "completed", call_id: item.call_id, name: item.name, arguments: item.arguments }
  }
}

const responseOf = (items: ReadonlyArray<Item>, options: ResponseOptions, status: "in_progress" | "completed") => ({
  id: options.id ?? "resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b",
  object: "response",
  created_at: CREATED,
  status,
  background: false,
  error: null,
  incomplete_details: null,
  instructions: null,
  max_output_tokens: null,
  model: OPENAI_MODEL,
  output: status === "completed" ? items.map(itemOf) : [],
  parallel_tool_calls: true,
  previous_response_id: null,
  reasoning: { effort: "low", summary: "detailed" },
  service_tier: "default",
  store: false,
  temperature: 1,
  text: { format: { type: "text" }, verbosity: "medium" },
  tool_choice: "auto",
  tools: [],
  top_p: 1,
  truncation: "disabled",
  usage: status === "completed"
    ? {
      input_tokens: options.input_tokens ?? 140,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: options.output_tokens ?? 60,
      output_tokens_details: { reasoning_tokens: 32 },
      total_tokens: (options.input_tokens ?? 140) + (options.output_tokens ?? 60)
    }
    : null,
  user: null,
  metadata: {}
})

/** A `POST /v1/responses` response body. */
export const openaiResponse = (items: ReadonlyArray<Item>, options: ResponseOptions = {}) => responseOf(items, options, "completed")

/** The same response as the events of a streamed response (`"stream": true`). */
export const openaiEvents = (items: ReadonlyArray<Item>, options: ResponseOptions = {}): Array<SseEvent> => {
  let sequence_number = 0
  const events: Array<SseEvent> = []
  const push = (type: string, fields: object) => events.push({ event: type, data: { type, sequence_number: sequence_number++, ...fields } })
  push("response.created", { response: responseOf(items, options, "in_progress") })
  push("response.in_progress", { response: responseOf(items, options, "in_progress") })
  items.forEach((item, output_index) => {
    const done = itemOf(item)
    switch (item.type) {
      case "reasoning": {
        push("response.output_item.added", { output_index, item: { id: item.id, type: "reasoning", summary: [] } })
        item.summary.forEach((text, summary_index) => {
          const part = { type: "summary_text", text: "" }
          push("response.reasoning_summary_part.added", { item_id: item.id, output_index, summary_index, part })
          const half = Math.ceil(text.length / 2)
          for (const delta of [text.slice(0, half), text.slice(half)]) {
            push("response.reasoning_summary_text.delta", { item_id: item.id, output_index, summary_index, delta, obfuscation: "x" })
          }
          push("response.reasoning_summary_text.done", { item_id: item.id, output_index, summary_index, text })
          push("response.reasoning_summary_part.done", { item_id: item.id, output_index, summary_index, part: { type: "summary_text", text } })
        })
        break
      }
      case "message": {
        push("response.output_item.added", { output_index, item: { id: item.id, type: "message", status: "in_progress", role: "assistant", content: [] } })
        push("response.content_part.added", { item_id: item.id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [], logprobs: [] } })
        const half = Math.ceil(item.text.length / 2)
        for (const delta of [item.text.slice(0, half), item.text.slice(half)]) {
          push("response.output_text.delta", { item_id: item.id, output_index, content_index: 0, delta, logprobs: [], obfuscation: "x" })
        }
        push("response.output_text.done", { item_id: item.id, output_index, content_index: 0, text: item.text, logprobs: [] })
        push("response.content_part.done", {
          item_id: item.id,
          output_index,
          content_index: 0,
          part: { type: "output_text", text: item.text, annotations: [], logprobs: [] }
        })
        break
      }
      case "function_call": {
        push("response.output_item.added", {
          output_index,
          item: { id: item.id, type: "function_call", status: "in_progress", call_id: item.call_id, name: item.name, arguments: "" }
        })
        const half = Math.ceil(item.arguments.length / 2)
        for (const delta of [item.arguments.slice(0, half), item.arguments.slice(half)]) {
          push("response.function_call_arguments.delta", { item_id: item.id, output_index, delta, obfuscation: "x" })
        }
        push("response.function_call_arguments.done", { item_id: item.id, output_index, arguments: item.arguments })
        break
      }
    }
    push("response.output_item.done", { output_index, item: done })
  })
  push("response.completed", { response: responseOf(items, options, "completed") })
  return events
}

/** An error body of the OpenAI API. */
export const openaiError = (type: string, code: string | null, message: string) => ({ error: { message, type, param: null, code } })

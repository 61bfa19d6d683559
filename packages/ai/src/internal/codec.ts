import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import { type InputError, inputError, RecordV2 } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as Schema from "effect/Schema"
import type { BlobResolver, FromPromptOptions, FromResponseOptions, ToPromptOptions } from "../Codec.js"
import { BlobMissingError, NAMESPACE } from "./codecErrors.js"

type Message = RecordV2.Message
type Opaque = RecordV2.Opaque
type Bag = { [key: string]: unknown }

/** Sets a key as an own property whatever its name, `__proto__` included (which assignment would not set). */
const put = (target: { [key: string]: unknown }, key: string, value: unknown): void => {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

const isPlainObject = (u: unknown): u is { readonly [key: string]: unknown } =>
  typeof u === "object" && u !== null && !Array.isArray(u) && !(u instanceof Uint8Array) && !(u instanceof URL)

/**
 * Our options as a provider's: every plain-object value under its own key, where adapters look for
 * it; when that alone would not give the options back (a value that is not an object, our own key,
 * empty options), the whole object is also kept in the bag.
 */
const toProviderOptions = (
  options: Opaque | undefined,
  bag: Bag,
  repaired?: { readonly [provider: string]: { readonly [key: string]: unknown } }
): Prompt.ProviderOptions => {
  const out: { [key: string]: { [key: string]: unknown } | undefined } = {}
  if (options !== undefined) {
    let direct = Object.keys(options).length > 0 && repaired === undefined
    for (const [key, value] of Object.entries(options)) {
      if (key !== NAMESPACE && isPlainObject(value)) put(out, key, value)
      else direct = false
    }
    // What a provider is shown in place of a legacy form; the stored options travel whole in the bag.
    if (repaired !== undefined) for (const [key, value] of Object.entries(repaired)) put(out, key, value)
    if (!direct) bag = { ...bag, options }
  }
  if (Object.keys(bag).length > 0) out[NAMESPACE] = bag
  return out
}

// -----------------------------------------------------------------------------
// Reasoning in the form its provider's client sends back
// -----------------------------------------------------------------------------

/** The message-level facts that say which provider wrote a reasoning part. */
interface Origin {
  readonly provider: string | undefined
  readonly api: string | undefined
}

const originOf = (message: RecordV2.AssistantMessage): Origin => {
  const pi = message.options?.["pi"]
  const api = isPlainObject(pi) && typeof pi["api"] === "string" ? pi["api"] : undefined
  return { provider: message.meta?.provider, api }
}

/** Pi's thinkingSignature for OpenAI's Responses API: the reasoning item itself, as JSON. */
const reasoningItem = (signature: string): { readonly id: string; readonly encrypted?: string } | undefined => {
  if (!signature.startsWith("{")) return undefined
  try {
    const item: unknown = JSON.parse(signature)
    if (!isPlainObject(item) || item["type"] !== "reasoning" || typeof item["id"] !== "string") return undefined
    const encrypted = item["encrypted_content"]
    return typeof encrypted === "string" ? { id: item["id"], encrypted } : { id: item["id"] }
  } catch {
    return undefined
  }
}

/**
 * An ID for a reasoning item whose source did not record one (Codex rollouts keep the item's
 * `encrypted_content` but not its `id`): `@effect/ai-openai` sends a reasoning item only with an
 * `itemId`. Derived from the encrypted content (64 bits of FNV-1a), so the summaries of one item share
 * it and the same item gets the same ID in every request.
 */
const syntheticItemId = (encrypted: string): string => {
  // Two 32-bit FNV-1a passes with different offsets: 64 bits without BigInt arithmetic per character.
  let a = 0x811c9dc5
  let b = 0x050c5d1f
  for (let i = 0; i < encrypted.length; i++) {
    const c = encrypted.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x01000193)
  }
  return `rs_${(a >>> 0).toString(16).padStart(8, "0")}${(b >>> 0).toString(16).padStart(8, "0")}`
}

/**
 * The provider-true form of a reasoning part's options written before it was the rule (the repair
 * rules of docs/ai.md), or undefined when they need none: `@effect/ai-anthropic` sends a reasoning
 * part back only with `anthropic.type` (`thinking` with its `signature`, `redacted_thinking` with
 * its `redactedData`), `@effect/ai-openai` only with `openai.itemId` (and `encryptedContent`).
 */
export const repairReasoning = (
  options: Opaque | undefined,
  origin: Origin
): { readonly [provider: string]: { readonly [key: string]: unknown } } | undefined => {
  if (options === undefined) return undefined
  const anthropic = options["anthropic"]
  if (isPlainObject(anthropic)) {
    if (anthropic["type"] !== undefined) return undefined
    if (typeof anthropic["redactedData"] === "string") return { anthropic: { type: "redacted_thinking", ...anthropic } }
    if (typeof anthropic["signature"] === "string") return { anthropic: { type: "thinking", ...anthropic } }
    return undefined
  }
  const openai = options["openai"]
  if (anthropic === undefined && isPlainObject(openai) && typeof openai["encryptedContent"] === "string" && typeof openai["itemId"] !== "string") {
    return { openai: { ...openai, itemId: syntheticItemId(openai["encryptedContent"]) } }
  }
  const pi = options["pi"]
  if (anthropic !== undefined || openai !== undefined || !isPlainObject(pi)) return undefined
  const signature = pi["thinkingSignature"]
  if (typeof signature !== "string") return undefined
  const item = reasoningItem(signature)
  if (item !== undefined && (origin.api === undefined || origin.api.includes("responses"))) {
    return { openai: item.encrypted === undefined ? { itemId: item.id } : { itemId: item.id, encryptedContent: item.encrypted } }
  }
  const isAnthropic = origin.api === undefined ? origin.provider === "anthropic" : origin.api === "anthropic-messages"
  if (!isAnthropic || item !== undefined) return undefined
  return pi["redacted"] === true
    ? { anthropic: { type: "redacted_thinking", redactedData: signature } }
    : { anthropic: { type: "thinking", signature } }
}

const bagOf = (options: Prompt.ProviderOptions): Bag => {
  const bag = options[NAMESPACE]
  return isPlainObject(bag) ? bag : {}
}

const fromProviderOptions = (options: Prompt.ProviderOptions): Opaque | undefined => {
  const bag = bagOf(options)
  if (isPlainObject(bag.options)) return bag.options
  const out: { [key: string]: unknown } = {}
  let any = false
  for (const [key, value] of Object.entries(options)) {
    if (key === NAMESPACE || value === undefined) continue
    put(out, key, value)
    any = true
  }
  return any ? out : undefined
}

/** `options` set only when there are some, so that an absent key stays absent. */
const withOptions = <A extends object>(value: A, options: Opaque | undefined): A =>
  options === undefined ? value : { ...value, options }

const invalid = (reason: string): InputError => inputError("SESSION_INVALID_MESSAGE", reason)

// -----------------------------------------------------------------------------
// Message IR v2 → Prompt
// -----------------------------------------------------------------------------

const noBlobs: BlobResolver<BlobMissingError, never> = (blob) =>
  Effect.fail(new BlobMissingError({ blob: blob.blob, size: blob.size, reason: `blob ${blob.blob} cannot be read: no blob reader was given` }))

export const storeBlobs = <E>(store: {
  readonly blob: (ref: string) => Effect.Effect<Uint8Array, E>
}): BlobResolver<E, never> =>
(blob) => store.blob(blob.blob)

/** The bytes of the blobs the messages refer to, read before the prompt is built, by reference. */
type Read = ReadonlyMap<string, Uint8Array>

const filePart = (part: RecordV2.FilePart, read: Read): Either.Either<Prompt.FilePart, InputError> => {
  const make = (data: Prompt.FilePart["data"], bag: Bag): Prompt.FilePart =>
    Prompt.makePart("file", {
      mediaType: part.mediaType,
      ...(part.name === undefined ? {} : { fileName: part.name }),
      data,
      options: toProviderOptions(part.options, bag)
    })
  const data = part.data
  if ("base64" in data) {
    return Either.match(Encoding.decodeBase64(data.base64), {
      onLeft: () => Either.left(invalid("a file's base64 data cannot be decoded")),
      onRight: (bytes) => Either.right(make(bytes, {}))
    })
  }
  if ("url" in data) {
    if (!URL.canParse(data.url)) return Either.left(invalid(`a file's url is not an absolute URL: ${JSON.stringify(data.url)}`))
    const url = new URL(data.url)
    return Either.right(make(url, url.href === data.url ? {} : { url: data.url }))
  }
  return Either.right(make(read.get(data.blob)!, { blob: data.blob, size: data.size }))
}

const textLike = (part: RecordV2.TextPart | RecordV2.ReasoningPart, origin?: Origin): Prompt.TextPart | Prompt.ReasoningPart =>
  Prompt.makePart(part.type, {
    text: part.text,
    options: toProviderOptions(part.options, {}, part.type === "reasoning" && origin !== undefined ? repairReasoning(part.options, origin) : undefined)
  })

const assistantPart = (
  part: RecordV2.AssistantPart,
  read: Read,
  origin: Origin
): Either.Either<Prompt.AssistantMessagePart, InputError> => {
  switch (part.type) {
    case "text":
    case "reasoning":
      return Either.right(textLike(part, origin))
    case "file":
      return filePart(part, read)
    case "tool-call":
      return Either.right(Prompt.makePart("tool-call", {
        id: part.id,
        name: part.name,
        params: part.arguments,
        providerExecuted: part.providerExecuted === true,
        options: toProviderOptions(part.options, {})
      }))
    case "tool-result":
      return Either.right(Prompt.makePart("tool-result", {
        id: part.toolCallId,
        name: part.toolName,
        isFailure: part.isError,
        result: part.result,
        providerExecuted: true,
        options: toProviderOptions(part.options, {})
      }))
  }
}

/** Each part converted, in order; the first that cannot be is the error. */
const partsOf = <P, A>(parts: ReadonlyArray<P>, convert: (part: P) => Either.Either<A, InputError>): Either.Either<Array<A>, InputError> => {
  const out: Array<A> = []
  for (const part of parts) {
    const converted = convert(part)
    if (Either.isLeft(converted)) return Either.left(converted.left)
    out.push(converted.right)
  }
  return Either.right(out)
}

/** The result a tool message sends: its `result`, else its one plain text, else its parts as JSON. */
const toolResult = (message: RecordV2.ToolMessage): { readonly result: unknown; readonly bag: Bag } => {
  if (message.result !== undefined) {
    return { result: message.result, bag: message.content.length === 0 ? {} : { content: message.content } }
  }
  const only = message.content.length === 1 ? message.content[0]! : undefined
  if (only?.type === "text" && only.options === undefined) return { result: only.text, bag: { result: false } }
  return { result: message.content, bag: { result: false } }
}

const toPromptMessage = (message: Message, read: Read): Either.Either<Prompt.Message, InputError> => {
  const id = { id: message.id }
  switch (message.role) {
    case "system":
      return Either.right(Prompt.makeMessage("system", {
        content: message.content,
        options: toProviderOptions(message.options, id)
      }))
    case "user":
      return Either.map(
        partsOf(message.content, (part): Either.Either<Prompt.UserMessagePart, InputError> =>
          part.type === "text" ? Either.right(textLike(part) as Prompt.TextPart) : filePart(part, read)),
        (content) => Prompt.makeMessage("user", { content, options: toProviderOptions(message.options, id) })
      )
    case "assistant": {
      const origin = originOf(message)
      return Either.map(
        partsOf(message.content, (part) => assistantPart(part, read, origin)),
        (content) =>
          Prompt.makeMessage("assistant", {
            content,
            options: toProviderOptions(message.options, message.meta === undefined ? id : { ...id, meta: message.meta })
          })
      )
    }
    case "tool": {
      const { bag, result } = toolResult(message)
      return Either.right(Prompt.makeMessage("tool", {
        content: [Prompt.makePart("tool-result", {
          id: message.toolCallId,
          name: message.toolName,
          isFailure: message.isError,
          result,
          providerExecuted: false,
          options: Object.keys(bag).length === 0 ? {} : { [NAMESPACE]: bag }
        })],
        options: toProviderOptions(message.options, id)
      }))
    }
  }
}

/** The blobs the messages' files refer to, each once, in the order they first appear. */
const blobRefs = (messages: ReadonlyArray<Message>): Array<{ readonly blob: string; readonly size: number }> => {
  const seen = new Map<string, { readonly blob: string; readonly size: number }>()
  for (const message of messages) {
    if (message.role === "system") continue
    for (const part of message.content) {
      if (part.type === "file" && "blob" in part.data && !seen.has(part.data.blob)) seen.set(part.data.blob, part.data)
    }
  }
  return [...seen.values()]
}

export const toPrompt = <E = never, R = never>(
  messages: ReadonlyArray<Message>,
  options?: ToPromptOptions<E, R>
): Effect.Effect<Prompt.Prompt, E | InputError | BlobMissingError, R> => {
  const blobs: BlobResolver<E | BlobMissingError, R> = options?.blobs ?? noBlobs
  // The blobs are read first (the only effects); the conversion itself is one synchronous pass.
  return Effect.suspend(() => {
    const refs = blobRefs(messages)
    const build = (read: Read) => {
      const converted = partsOf(messages, (message) => toPromptMessage(message, read))
      return Either.isLeft(converted) ? Effect.fail(converted.left) : Effect.succeed(Prompt.fromMessages(converted.right))
    }
    return refs.length === 0
      ? build(new Map())
      : Effect.flatMap(Effect.forEach(refs, (ref) => Effect.map(blobs(ref), (bytes) => [ref.blob, bytes] as const)), (pairs) => build(new Map(pairs)))
  })
}

// -----------------------------------------------------------------------------
// Prompt → Message IR v2
// -----------------------------------------------------------------------------

const decodeMessage = Schema.decodeUnknownEither(RecordV2.Message, { onExcessProperty: "error", exact: true })

const fileFromPrompt = (part: Prompt.FilePart): Either.Either<RecordV2.FilePart, InputError> => {
  const bag = bagOf(part.options)
  let data: RecordV2.FileData
  if (typeof bag.blob === "string" && typeof bag.size === "number") data = { blob: bag.blob, size: bag.size }
  else if (part.data instanceof URL) data = { url: typeof bag.url === "string" ? bag.url : part.data.href }
  else if (part.data instanceof Uint8Array) data = { base64: Encoding.encodeBase64(part.data) }
  else if (URL.canParse(part.data) && !/^[A-Za-z0-9+/]*={0,2}$/.test(part.data)) data = { url: part.data }
  else data = { base64: part.data }
  return Either.right(withOptions({
    type: "file",
    mediaType: part.mediaType,
    ...(part.fileName === undefined ? {} : { name: part.fileName }),
    data
  }, fromProviderOptions(part.options)))
}

const partFromPrompt = (part: Prompt.Part): Either.Either<RecordV2.AssistantPart, InputError> => {
  const options = fromProviderOptions(part.options)
  switch (part.type) {
    case "text":
    case "reasoning":
      return Either.right(withOptions({ type: part.type, text: part.text }, options))
    case "file":
      return fileFromPrompt(part)
    case "tool-call":
      return Either.right(withOptions({
        type: "tool-call",
        id: part.id,
        name: part.name,
        arguments: part.params as RecordV2.ToolCallPart["arguments"],
        ...(part.providerExecuted ? { providerExecuted: true as const } : {})
      }, options))
    case "tool-result":
      return Either.right(withOptions({
        type: "tool-result",
        toolCallId: part.id,
        toolName: part.name,
        isError: part.isFailure,
        result: part.result
      }, options))
  }
}

const toolFromPrompt = (part: Prompt.ToolResultPart, id: string, options: Opaque | undefined): unknown => {
  const bag = bagOf(part.options)
  const head = { role: "tool", id, toolCallId: part.id, toolName: part.name, isError: part.isFailure }
  if (bag.result === false) {
    const content = typeof part.result === "string" ? [{ type: "text", text: part.result }] : part.result
    return withOptions({ ...head, content }, options)
  }
  return withOptions({ ...head, content: Array.isArray(bag.content) ? bag.content : [], result: part.result }, options)
}

export const fromPrompt = (
  prompt: Prompt.Prompt,
  options?: FromPromptOptions
): Effect.Effect<ReadonlyArray<Message>, InputError> =>
  Effect.suspend(() => {
    const out: Array<Message> = []
    const idOf = (bag: Bag, position: number): Either.Either<string, InputError> => {
      if (typeof bag.id === "string") return Either.right(bag.id)
      if (options?.newId !== undefined) return Either.right(options.newId())
      return Either.left(invalid(`prompt message ${position + 1} has no message ID (a prompt not built by toPrompt needs newId)`))
    }
    const push = (candidate: unknown, position: number): InputError | undefined => {
      const decoded = decodeMessage(candidate)
      if (Either.isLeft(decoded)) return invalid(`prompt message ${position + 1} is not a valid message: ${decoded.left.message}`)
      out.push(decoded.right)
      return undefined
    }
    for (const [position, message] of prompt.content.entries()) {
      const bag = bagOf(message.options)
      const messageOptions = fromProviderOptions(message.options)
      if (message.role === "tool") {
        for (const [i, part] of message.content.entries()) {
          const id = i === 0 ? idOf(bag, position) : idOf({}, position)
          if (Either.isLeft(id)) return Effect.fail(id.left)
          const error = push(toolFromPrompt(part, id.right, messageOptions), position)
          if (error !== undefined) return Effect.fail(error)
        }
        continue
      }
      const id = idOf(bag, position)
      if (Either.isLeft(id)) return Effect.fail(id.left)
      let candidate: unknown
      if (message.role === "system") {
        candidate = withOptions({ role: "system", id: id.right, content: message.content }, messageOptions)
      } else {
        const parts: Array<RecordV2.AssistantPart> = []
        for (const part of message.content) {
          const converted = partFromPrompt(part)
          if (Either.isLeft(converted)) return Effect.fail(converted.left)
          parts.push(converted.right)
        }
        candidate = message.role === "assistant"
          ? withOptions({
            role: "assistant",
            id: id.right,
            content: parts,
            ...(isPlainObject(bag.meta) ? { meta: bag.meta } : {})
          }, messageOptions)
          : withOptions({ role: "user", id: id.right, content: parts }, messageOptions)
      }
      const error = push(candidate, position)
      if (error !== undefined) return Effect.fail(error)
    }
    return Effect.succeed(out)
  })

// -----------------------------------------------------------------------------
// Response → Message IR v2
// -----------------------------------------------------------------------------

const metadataOptions = (metadata: Response.ProviderMetadata): Opaque | undefined => {
  const out: { [key: string]: unknown } = {}
  let any = false
  for (const [key, value] of Object.entries(metadata)) {
    if (value === undefined) continue
    put(out, key, value)
    any = true
  }
  return any ? out : undefined
}

/** A part's metadata as options, with the provider's own name of a tool when it differs from the toolkit's. */
const partOptions = (part: Response.AnyPart | Assembled): Opaque | undefined => {
  const options = metadataOptions(part.metadata)
  if ((part.type !== "tool-call" && part.type !== "tool-result") || part.providerName === undefined || part.providerName === part.name) {
    return options
  }
  const out: { [key: string]: unknown } = { ...options }
  put(out, NAMESPACE, { providerName: part.providerName })
  return out
}

/** An error part's error as text: an `Error`'s message, a string as it is, anything else as JSON. */
const describeError = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : String(JSON.stringify(error))

const isCount = (n: number | undefined): n is number => n !== undefined && Number.isSafeInteger(n) && n >= 0

/** A finish part's usage as Message IR v2's, when both of its required counts are known. */
export const usageOf = (part: Response.FinishPart): RecordV2.Usage | undefined => {
  const { cachedInputTokens, inputTokens, outputTokens, reasoningTokens } = part.usage
  if (!isCount(inputTokens) || !isCount(outputTokens)) return undefined
  return {
    inputTokens,
    outputTokens,
    ...(isCount(reasoningTokens) ? { reasoningTokens } : {}),
    ...(isCount(cachedInputTokens) ? { cachedInputTokens } : {})
  }
}

/** A text or reasoning part put together from a streamed response's start, delta and end parts. */
interface Assembled {
  readonly type: "text" | "reasoning"
  text: string
  readonly metadata: { [provider: string]: { [key: string]: unknown } }
}

/** Merges a streamed part's metadata into what its part has gathered: later values win, an absent one never erases. */
const gather = (into: Assembled["metadata"], metadata: Response.ProviderMetadata | undefined): void => {
  for (const [provider, value] of Object.entries(metadata ?? {})) {
    if (!isPlainObject(value)) continue
    if (into[provider] === undefined) put(into, provider, {})
    const target = into[provider]!
    for (const [key, v] of Object.entries(value)) if (v !== undefined) put(target, key, v)
  }
}

/**
 * A response's parts with each streamed text or reasoning (its start, deltas and end) as one part
 * at the place it started, its metadata gathered from all of them: a reasoning signature arrives in
 * a delta, an encrypted reasoning item in the end part. The parameters' deltas of a tool call are
 * dropped: the stream gives the whole call as a part of its own.
 */
export const assemble = (parts: ReadonlyArray<Response.AnyPart>): Array<Response.AnyPart | Assembled> => {
  const out: Array<Response.AnyPart | Assembled> = []
  const open = new Map<string, Assembled>()
  const slot = (type: Assembled["type"], id: string): Assembled => {
    const key = `${type}:${id}`
    let found = open.get(key)
    if (found === undefined) {
      found = { type, text: "", metadata: {} }
      open.set(key, found)
      out.push(found)
    }
    return found
  }
  for (const part of parts) {
    switch (part.type) {
      case "text-start":
      case "reasoning-start":
        gather(slot(part.type === "text-start" ? "text" : "reasoning", part.id).metadata, part.metadata)
        break
      case "text-delta":
      case "reasoning-delta": {
        const found = slot(part.type === "text-delta" ? "text" : "reasoning", part.id)
        found.text += part.delta
        gather(found.metadata, part.metadata)
        break
      }
      case "text-end":
      case "reasoning-end": {
        const type = part.type === "text-end" ? "text" : "reasoning"
        gather(slot(type, part.id).metadata, part.metadata)
        open.delete(`${type}:${part.id}`)
        break
      }
      case "tool-params-start":
      case "tool-params-delta":
      case "tool-params-end":
        break
      default:
        out.push(part)
    }
  }
  return out
}

/** An OpenAI reasoning item that cannot be sent back when nothing stores it server-side (`store: false`). */
const withoutEncryptedContent = (parts: ReadonlyArray<Response.AnyPart | Assembled>): ReadonlyArray<string> => {
  const ids = new Set<string>()
  for (const part of parts) {
    if (part.type !== "reasoning") continue
    const openai = part.metadata["openai"]
    if (isPlainObject(openai) && typeof openai["itemId"] === "string" && typeof openai["encryptedContent"] !== "string") {
      ids.add(openai["itemId"])
    }
  }
  return [...ids]
}

export const fromResponse = (
  response: { readonly content: ReadonlyArray<Response.AnyPart> },
  options: FromResponseOptions
): Effect.Effect<RecordV2.AssistantMessage, InputError> =>
  Effect.suspend(() => {
    const content: Array<RecordV2.AssistantPart> = []
    const meta: { -readonly [K in keyof RecordV2.Meta]: RecordV2.Meta[K] } = {}
    if (options.provider !== undefined) meta.provider = options.provider
    let responseId: string | undefined
    let error: string | undefined
    const parts = assemble(response.content)
    const missing = withoutEncryptedContent(parts)
    const warned = missing.length === 0 ? Effect.void : Effect.logWarning(
      `OpenAI reasoning item ${missing.join(", ")} arrived without its encrypted content: with store: false it cannot be ` +
        `sent back. Ask for include: ["reasoning.encrypted_content"] and a reasoning summary (reasoning: { summary: "auto" }); ` +
        `@effect/ai-openai drops the encrypted content of an item whose summary is empty.`
    )
    for (const part of parts) {
      const options = partOptions(part)
      switch (part.type) {
        case "text":
        case "reasoning":
          content.push(withOptions({ type: part.type, text: part.text }, options))
          break
        case "file":
          content.push(withOptions({
            type: "file",
            mediaType: part.mediaType,
            data: { base64: Encoding.encodeBase64(part.data) }
          }, options))
          break
        case "tool-call":
          content.push(withOptions({
            type: "tool-call",
            id: part.id,
            name: part.name,
            arguments: part.params as RecordV2.ToolCallPart["arguments"],
            ...(part.providerExecuted ? { providerExecuted: true as const } : {})
          }, options))
          break
        case "tool-result":
          if (part.providerExecuted) {
            content.push(withOptions({
              type: "tool-result",
              toolCallId: part.id,
              toolName: part.name,
              isError: part.isFailure,
              result: part.encodedResult
            }, options))
          }
          break
        case "response-metadata":
          if (part.modelId._tag === "Some") meta.model = part.modelId.value
          if (part.id._tag === "Some") responseId = part.id.value
          break
        case "finish": {
          meta.stopReason = part.reason
          const usage = usageOf(part)
          if (usage !== undefined) meta.usage = usage
          break
        }
        case "error":
          error = describeError(part.error)
          break
      }
    }
    // In the order of Meta's keys, whatever order the parts came in.
    const ordered: { -readonly [K in keyof RecordV2.Meta]: RecordV2.Meta[K] } = {}
    if (meta.provider !== undefined) ordered.provider = meta.provider
    if (meta.model !== undefined) ordered.model = meta.model
    if (responseId !== undefined) ordered.responseId = responseId
    if (meta.usage !== undefined) ordered.usage = meta.usage
    if (meta.stopReason !== undefined) ordered.stopReason = meta.stopReason
    if (error !== undefined) ordered.error = error
    const candidate = {
      role: "assistant",
      id: options.id,
      content,
      ...(Object.keys(ordered).length > 0 ? { meta: ordered } : {})
    }
    return Either.match(decodeMessage(candidate), {
      onLeft: (e) => Effect.fail(invalid(`the response is not a valid assistant message: ${e.message}`)),
      onRight: (message) => Effect.as(warned, message as RecordV2.AssistantMessage)
    })
  })

export const toolMessages = (
  response: { readonly content: ReadonlyArray<Response.AnyPart> },
  options: { readonly newId: () => string }
): Effect.Effect<ReadonlyArray<RecordV2.ToolMessage>, InputError> =>
  Effect.suspend(() => {
    const out: Array<RecordV2.ToolMessage> = []
    for (const part of response.content) {
      if (part.type !== "tool-result" || part.providerExecuted) continue
      const candidate = withOptions({
        role: "tool",
        id: options.newId(),
        toolCallId: part.id,
        toolName: part.name,
        isError: part.isFailure,
        content: [],
        result: part.encodedResult
      }, partOptions(part))
      const decoded = decodeMessage(candidate)
      if (Either.isLeft(decoded)) return Effect.fail(invalid(`a tool result is not a valid message: ${decoded.left.message}`))
      out.push(decoded.right as RecordV2.ToolMessage)
    }
    return Effect.succeed(out)
  })

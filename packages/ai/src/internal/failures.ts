import * as AiError from "@effect/ai/AiError"
import { ModelError, ToolError } from "../Agent.js"

/**
 * The failures the agent surfaces, made from what `@effect/ai` and the provider clients fail with
 * by keeping only what cannot hold a secret: the provider, the HTTP status, a short reason of our
 * own words. `@effect/ai`'s errors carry the request (its headers, which may hold the API key
 * unredacted), the prompt and the response body, and none of that is copied.
 */

/** The provider a client's module belongs to, by the module's name. */
const providerOfModule = (module: string): string | undefined =>
  module.startsWith("Anthropic") ? "anthropic" : module.startsWith("OpenAi") ? "openai" : undefined

/** At most `n` characters of a description written by a client's code (never a body or a header). */
const short = (text: string, n = 200): string => (text.length <= n ? text : `${text.slice(0, n - 1)}…`)

/** A name a provider gives a kind of error (`overloaded_error`, `rate_limit_exceeded`): identifier characters only. */
const IDENTIFIER = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/

/**
 * The provider's name for the error, read from a JSON error body (`{"error":{"type":…}}`, OpenAI's
 * `code` too); nothing else of the body is kept, since providers echo parts of the request there.
 */
const errorType = (body: string | undefined): string | undefined => {
  if (body === undefined) return undefined
  try {
    const parsed: unknown = JSON.parse(body)
    const error = typeof parsed === "object" && parsed !== null ? (parsed as { error?: unknown }).error : undefined
    if (typeof error !== "object" || error === null) return undefined
    for (const key of ["type", "code"]) {
      const value = (error as { [key: string]: unknown })[key]
      if (typeof value === "string" && IDENTIFIER.test(value)) return value
    }
  } catch {
    // Not JSON: nothing of it is kept.
  }
  return undefined
}

/** Statuses worth a second try: timeouts, conflicts, rate limits and the server's own failures. */
const retryableStatus = (status: number): boolean => status === 408 || status === 409 || status === 429 || status >= 500

/**
 * A model call's failure as a `ModelError` holding no header, body, prompt or key. Its provider is
 * the one named, else the client module's that failed, else `fallback` (what the session last used).
 */
export const modelError = (error: unknown, provider: string | undefined, fallback?: string | undefined): ModelError => {
  if (!AiError.isAiError(error)) {
    const named = provider ?? fallback
    return new ModelError({ ...(named === undefined ? {} : { provider: named }), reason: "the model call failed", retryable: false })
  }
  const named = provider ?? providerOfModule(error.module) ?? fallback
  const base = named === undefined ? {} : { provider: named }
  switch (error._tag) {
    case "HttpResponseError": {
      const status = error.response.status
      const type = errorType(error.body)
      const reason = error.reason === "StatusCode"
        ? `HTTP ${status}${type === undefined ? "" : ` (${type})`}`
        : error.reason === "EmptyBody"
        ? `HTTP ${status} with an empty body`
        : `HTTP ${status}: the response could not be read (cut off, or not in the API's format)`
      // A body that could not be read is most often one cut off on its way: worth a second try.
      return new ModelError({ ...base, status, reason, retryable: error.reason === "Decode" || retryableStatus(status) })
    }
    case "HttpRequestError":
      return new ModelError({
        ...base,
        reason: error.reason === "Transport" ? "the request did not reach the provider (transport)" : `the request could not be made (${error.reason})`,
        retryable: error.reason === "Transport"
      })
    case "MalformedOutput":
      return new ModelError({ ...base, reason: "the provider's response could not be read", retryable: false })
    case "MalformedInput":
      return new ModelError({
        ...base,
        reason: `the prompt cannot be sent to this provider${error.description === undefined ? "" : `: ${short(error.description)}`}`,
        retryable: false
      })
    case "UnknownError":
      return new ModelError({ ...base, reason: error.description === undefined ? "the model call failed" : short(error.description), retryable: false })
  }
}

/** A failure's kind, in a word: a tagged error's tag, an Error's name, else the value's type. */
const kindOf = (failure: unknown): string => {
  if (typeof failure === "object" && failure !== null) {
    const tag = (failure as { _tag?: unknown })._tag
    if (typeof tag === "string" && IDENTIFIER.test(tag)) return tag
    if (failure instanceof Error && IDENTIFIER.test(failure.name)) return failure.name
    return "object"
  }
  return typeof failure
}

/**
 * A handler's failure as a `ToolError`: the tool, the call and the failure's kind. The handler's
 * own value (the caller's, which may hold what the caller's own requests held) is kept as the
 * error's `failure`, which is never serialized or printed.
 */
export const toolError = (toolName: string, toolCallId: string, failure: unknown): ToolError => {
  const reason = AiError.isAiError(failure)
    ? failure._tag === "MalformedInput"
      ? "the handler's result does not match the tool's success or failure schema"
      : `the handler failed with ${failure._tag}`
    : typeof failure === "string"
    ? `the handler failed: ${short(failure)}`
    : `the handler failed with ${kindOf(failure)}`
  const error = new ToolError({ toolName, toolCallId, reason })
  Object.defineProperty(error, "failure", { value: failure, enumerable: false, writable: false, configurable: false })
  return error
}

import * as AiError from "@effect/ai/AiError"
import * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { ToolError } from "../Agent.js"
import { toolError } from "./failures.js"

/**
 * How the agent has the model call tools and runs the calls.
 *
 * `@effect/ai` decodes a response against the toolkit: a call whose parameters do not decode, or
 * of a tool the toolkit does not hold, fails the whole model call, and the model never learns
 * what it did wrong. The model is given instead a copy of each tool that describes the same
 * parameters (the same JSON Schema goes to the provider) but accepts whatever arrives, and the
 * agent checks each call itself: a call of the model's making that cannot run goes back to it as
 * an error result, which it can correct on its next step.
 */

type AnyToolkit = Toolkit.WithHandler<Record<string, Tool.Any>>

const lenientParameters = (tool: Tool.Any): Schema.Schema.Any =>
  Schema.Unknown.annotations({ jsonSchema: Tool.getJsonSchema(tool as never) as object })

/** The toolkit as the model is given it: the same tools, described the same, accepting any parameters. */
export const lenient = (toolkit: AnyToolkit): AnyToolkit => {
  const tools: Record<string, Tool.Any> = {}
  for (const [name, tool] of Object.entries(toolkit.tools)) {
    if (Tool.isProviderDefined(tool)) {
      tools[name] = tool
      continue
    }
    tools[name] = Object.assign(Object.create(Object.getPrototypeOf(tool) as object) as object, tool, {
      parametersSchema: lenientParameters(tool)
    }) as Tool.Any
  }
  return { tools, handle: toolkit.handle } as AnyToolkit
}

/**
 * The parts of a response `@effect/ai` refused to decode because a call names a tool the toolkit
 * does not hold: its decoding error holds the parts as the provider gave them. None when the
 * failure is of another kind.
 */
export const recover = (error: unknown): ReadonlyArray<Response.AnyPart> | undefined => {
  if (!AiError.isAiError(error) || error._tag !== "MalformedOutput" || error.module !== "LanguageModel") return undefined
  const cause = error.cause
  if (!ParseResult.isParseError(cause)) return undefined
  const raw = (cause.issue as { readonly actual?: unknown }).actual
  if (!Array.isArray(raw)) return undefined
  const out: Array<Response.AnyPart> = []
  for (const part of raw as ReadonlyArray<unknown>) {
    if (typeof part !== "object" || part === null) return undefined
    const p = part as { readonly [key: string]: unknown }
    const metadata = typeof p["metadata"] === "object" && p["metadata"] !== null ? p["metadata"] as Response.ProviderMetadata : {}
    if (p["type"] === "tool-call" && typeof p["id"] === "string" && typeof p["name"] === "string") {
      out.push(Response.makePart("tool-call", {
        id: p["id"],
        name: p["name"],
        params: p["params"],
        ...(typeof p["providerName"] === "string" ? { providerName: p["providerName"] } : {}),
        providerExecuted: p["providerExecuted"] === true,
        metadata
      }))
      continue
    }
    if (p["type"] === "tool-result" && typeof p["id"] === "string" && typeof p["name"] === "string" && typeof p["isFailure"] === "boolean") {
      out.push(Response.makePart("tool-result", {
        id: p["id"],
        name: p["name"],
        isFailure: p["isFailure"],
        result: p["result"],
        encodedResult: p["result"],
        ...(typeof p["providerName"] === "string" ? { providerName: p["providerName"] } : {}),
        providerExecuted: p["providerExecuted"] === true,
        metadata
      } as never))
      continue
    }
    const decoded = decodeOther(part)
    if (Either.isLeft(decoded)) return undefined
    out.push(decoded.right as Response.AnyPart)
  }
  return out
}

const decodeOther = Schema.decodeUnknownEither(Response.Part(Toolkit.empty))

/** What the model is told of a call that cannot run. */
const errorResult = (call: Response.ToolCallPart<string, unknown>, message: string): Response.AnyPart =>
  Response.makePart("tool-result", {
    id: call.id,
    name: call.name,
    isFailure: true,
    result: message,
    encodedResult: message,
    providerExecuted: false
  } as never)

const explain = (error: ParseResult.ParseError): string => {
  const text = ParseResult.TreeFormatter.formatErrorSync(error)
  return text.length <= 2_000 ? text : `${text.slice(0, 1_999)}…`
}

/**
 * Runs one call: a tool-result part, an error result for a call the model got wrong, or a
 * `ToolError` when the caller's handler fails (or returns what the tool's schemas refuse).
 */
export const run = (
  toolkit: AnyToolkit | undefined,
  call: Response.ToolCallPart<string, unknown>,
  context: Context.Context<never>
): Effect.Effect<Response.AnyPart, ToolError> => {
  const tool = toolkit?.tools[call.name]
  if (toolkit === undefined || tool === undefined) {
    const names = toolkit === undefined ? [] : Object.keys(toolkit.tools)
    return Effect.succeed(errorResult(
      call,
      `There is no tool named ${JSON.stringify(call.name)}. ${names.length === 0 ? "No tools are available." : `The tools are: ${names.join(", ")}.`}`
    ))
  }
  const checked = Schema.decodeUnknownEither(tool.parametersSchema as Schema.Schema<unknown, unknown, never>)(call.params)
  if (Either.isLeft(checked)) {
    return Effect.succeed(errorResult(call, `The parameters of this call of ${call.name} are not valid:\n${explain(checked.left)}`))
  }
  return toolkit.handle(call.name, call.params as never).pipe(
    Effect.map(({ encodedResult, isFailure, result }) =>
      Response.makePart("tool-result", {
        id: call.id,
        name: call.name,
        result,
        encodedResult,
        isFailure,
        providerExecuted: false
      } as never) as Response.AnyPart
    ),
    Effect.mapError((failure) => toolError(call.name, call.id, failure)),
    Effect.provide(context),
    Effect.withSpan("Agent.toolCall", { attributes: { "tool.name": call.name, "tool.call_id": call.id }, captureStackTrace: false })
  )
}

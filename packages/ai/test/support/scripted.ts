/**
 * A `LanguageModel` that plays a script: each call of `generateText` takes the
 * next answer (response parts, or an effect giving them or failing) and records
 * the prompt it was given. Also a small toolkit with a tool that lists a
 * directory and one that can be made to fail.
 */
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"

export type Answer =
  | ReadonlyArray<Response.PartEncoded>
  | Effect.Effect<ReadonlyArray<Response.PartEncoded>, AiError.AiError>

export interface Scripted {
  readonly prompts: Array<Prompt.Prompt>
  readonly layer: Layer.Layer<LanguageModel.LanguageModel>
}

export const scripted = (answers: ReadonlyArray<Answer>): Scripted => {
  const prompts: Array<Prompt.Prompt> = []
  const layer = Layer.effect(
    LanguageModel.LanguageModel,
    LanguageModel.make({
      generateText: (options) =>
        Effect.suspend(() => {
          prompts.push(options.prompt)
          const answer = answers[prompts.length - 1]
          if (answer === undefined) return Effect.dieMessage(`the script has no answer ${prompts.length}`)
          return Effect.isEffect(answer) ? answer : Effect.succeed(answer)
        }).pipe(Effect.map((parts) => [...parts])),
      streamText: () => Effect.dieMessage("not scripted") as never
    })
  )
  return { prompts, layer }
}

/** A thinking block's metadata as `@effect/ai-anthropic` gives it, and as its prompt needs it back. */
export const SIGNATURE = { anthropic: { type: "thinking" as const, signature: "EqQBCkYIBxgCKkB0c2lnbmF0dXJl" } }

export const finish = (inputTokens = 10, outputTokens = 5): Response.PartEncoded => ({
  type: "finish",
  reason: "stop",
  usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }
})

export const text = (value: string): ReadonlyArray<Response.PartEncoded> => [{ type: "text", text: value }, finish()]

export const callTool = (id: string, name: string, params: object): Response.PartEncoded => ({
  type: "tool-call",
  id,
  name,
  params
})

export const modelFailure = Effect.fail(
  new AiError.UnknownError({ module: "Scripted", method: "generateText", description: "the provider is down" })
)

export const ListDir = Tool.make("list_dir", {
  description: "Lists a directory",
  parameters: { path: Schema.String },
  success: Schema.Array(Schema.String),
  failure: Schema.String
})

export const tools = Toolkit.make(ListDir)

/** `list_dir` answers from `files`; a path missing from it fails the tool. */
export const handlers = (files: { readonly [path: string]: ReadonlyArray<string> }) =>
  tools.toLayer({
    list_dir: ({ path }) => files[path] === undefined ? Effect.fail(`no such directory: ${path}`) : Effect.succeed(files[path]!)
  })

/** What a prompt shows of each message: its role and its parts' types, texts and options. */
export const shape = (prompt: Prompt.Prompt) =>
  prompt.content.map((message) => ({
    role: message.role,
    parts: typeof message.content === "string"
      ? [{ type: "text", text: message.content }]
      : message.content.map((part) => ({
        type: part.type,
        ...("text" in part ? { text: part.text } : {}),
        ...(part.type === "reasoning" && part.options.anthropic !== undefined ? { anthropic: part.options.anthropic } : {})
      }))
  }))

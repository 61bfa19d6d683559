import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import { Conversation, Ids, inputError, type Record, type RecordV2, type SessionError, SessionTree } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Agent, AgentError, CompactOptions, Options } from "../Agent.js"
import { ModelError, StepLimitError, ToolError } from "../Agent.js"
import * as Codec from "./codec.js"

export const SUMMARY_INSTRUCTION =
  "Summarise the conversation above for your own later use: the user's goals, the facts learned, the decisions made and what remains to do. Answer with the summary alone."

const DEFAULT_MAX_STEPS = 10

type Entry = Record.Entry
type UserContent = string | ReadonlyArray<RecordV2.UserPart>

const reasonOf = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error) ?? String(error)

const asModelError = (error: unknown): ModelError => new ModelError({ reason: reasonOf(error), cause: error })

const userMessage = (id: string, content: UserContent): RecordV2.UserMessage => ({
  role: "user",
  id,
  content: typeof content === "string" ? [{ type: "text", text: content }] : content
})

const messageBody = (message: RecordV2.Message) => ({ kind: "message" as const, message })

const messageOf = (entry: Entry | undefined): RecordV2.Message | undefined =>
  entry !== undefined && "kind" in entry && entry.kind === "message" ? entry.message : undefined

export const make = <Tools extends globalThis.Record<string, Tool.Any> = {}>(
  options?: Options<Tools>
): Effect.Effect<
  Agent,
  never,
  SessionTree.SessionTree | LanguageModel.LanguageModel | Tool.HandlersFor<Tools> | Tool.Requirements<Tools[keyof Tools]>
> =>
  Effect.gen(function*() {
    const tree = yield* SessionTree.SessionTree
    const model = yield* LanguageModel.LanguageModel
    const ids = Option.getOrElse(yield* Effect.serviceOption(Ids.Ids), () => Ids.random)
    const toolkit: Toolkit.WithHandler<Tools> | undefined = options?.toolkit === undefined ? undefined : yield* options.toolkit
    // The handlers' own services, captured here so that the agent's operations need none.
    const context = yield* Effect.context<Tool.Requirements<Tools[keyof Tools]>>()
    const maxSteps = options?.maxSteps ?? DEFAULT_MAX_STEPS
    const budget = options?.budget
    const system = options?.system
    // One operation at a time: a turn reads the leaf, then commits under it.
    const permit = yield* Effect.makeSemaphore(1)

    const branch = () => tree.activeEntries as ReadonlyArray<RecordV2.SessionEntry>
    // File data stored as a blob reaches the model as its bytes, read (and hash-checked) from the session's own store.
    const blobs = Codec.storeBlobs(tree.store)

    /** The model's response to the branch's context, tool calls not yet run. */
    const callModel = Effect.gen(function*() {
      const prompt = yield* Codec.toPrompt(Conversation.build(branch(), { budget }), { blobs })
      const response = toolkit === undefined
        ? yield* model.generateText({ prompt })
        : yield* model.generateText({ prompt, toolkit, disableToolCallResolution: true })
      return response.content as ReadonlyArray<Response.AnyPart>
    }).pipe(Effect.catchIf(AiError.isAiError, (error) => Effect.fail(asModelError(error))))

    /** Runs the calls the toolkit answers, in order, as the tool-result parts `generateText` would give. */
    const runTools = (content: ReadonlyArray<Response.AnyPart>) =>
      Effect.forEach(
        content.filter((part): part is Response.ToolCallPart<string, any> =>
          part.type === "tool-call" && part.providerExecuted !== true
        ),
        (call) => {
          if (toolkit === undefined || !(call.name in toolkit.tools)) {
            return Effect.fail(
              new ToolError({ toolName: call.name, toolCallId: call.id, reason: "no such tool in the toolkit", cause: null })
            )
          }
          return toolkit.handle(call.name as keyof Tools, call.params as any).pipe(
            Effect.mapError((error) => new ToolError({ toolName: call.name, toolCallId: call.id, reason: reasonOf(error), cause: error })),
            Effect.map(({ encodedResult, isFailure, result }) =>
              Response.makePart("tool-result", {
                id: call.id,
                name: call.name,
                result,
                encodedResult,
                isFailure,
                providerExecuted: false
              }) as Response.AnyPart
            ),
            Effect.provide(context)
          )
        }
      )

    /** IDs for `count` messages, taken before a synchronous codec call needs them. */
    const takeIds = (count: number) => Effect.replicateEffect(ids.entryId, count)

    /** One step: the model's answer and its tool results, committed in one chain. */
    const step = Effect.gen(function*() {
      const content = yield* callModel
      const results = yield* runTools(content)
      const [id] = yield* takeIds(1)
      const assistant = yield* Codec.fromResponse({ content }, { id: id! })
      const pool = yield* takeIds(results.length)
      const tools = yield* Codec.toolMessages({ content: results }, { newId: () => pool.shift()! })
      const entries = yield* tree.appendChain([assistant, ...tools].map(messageBody))
      return { entries, done: results.length === 0 }
    })

    /** Steps until the model stops calling tools or the limit is reached. */
    const turn = (committed: Array<Entry>): Effect.Effect<ReadonlyArray<Entry>, AgentError> =>
      Effect.gen(function*() {
        for (let n = 0; n < maxSteps; n++) {
          const { done, entries } = yield* step
          committed.push(...entries)
          if (done) return committed
        }
        return yield* new StepLimitError({ maxSteps, entryIds: committed.map((entry) => entry.id) })
      })

    /** The user's message, after the system message when the branch has none: one commit. */
    const commitUser = (content: UserContent) =>
      Effect.gen(function*() {
        const messages: Array<RecordV2.Message> = []
        if (system !== undefined && !branch().some((entry) => messageOf(entry)?.role === "system")) {
          const [id] = yield* takeIds(1)
          messages.push({ role: "system", id: id!, content: system })
        }
        const [id] = yield* takeIds(1)
        messages.push(userMessage(id!, content))
        return [...(yield* tree.appendChain(messages.map(messageBody)))]
      })

    const find = (entryId: string, role: RecordV2.Message["role"]): Effect.Effect<Entry, SessionError> => {
      const entry = tree.pathTo(entryId).at(-1)
      if (entry === undefined) {
        return Effect.fail(inputError("SESSION_UNKNOWN_ENTRY", `${JSON.stringify(entryId)} is not an entry of this session`))
      }
      return messageOf(entry)?.role === role
        ? Effect.succeed(entry)
        : Effect.fail(inputError("SESSION_INVALID_MESSAGE", `${entryId} is not a ${role} message`))
    }

    const serialized = <A>(effect: Effect.Effect<A, AgentError>) => permit.withPermits(1)(effect)

    const agent: Agent = {
      send: (content) => serialized(Effect.flatMap(commitUser(content), turn)),
      regenerate: (entryId) =>
        serialized(Effect.gen(function*() {
          const entry = yield* find(entryId, "assistant")
          // The turn starts at the newest user message before the answer; without one, at its parent.
          const path = tree.pathTo(entry.id)
          let start = entry.parentId
          for (let i = path.length - 1; i >= 0; i--) {
            if (messageOf(path[i])?.role === "user") {
              start = path[i]!.id
              break
            }
          }
          yield* tree.moveTo(start)
          return yield* turn([])
        })),
      edit: (entryId, content) =>
        serialized(Effect.gen(function*() {
          const entry = yield* find(entryId, "user")
          yield* tree.moveTo(entry.parentId)
          return yield* Effect.flatMap(commitUser(content), turn)
        })),
      compact: (compactOptions?: CompactOptions) =>
        serialized(Effect.gen(function*() {
          const entries = branch()
          const point = Conversation.compactionPoint(entries, compactOptions?.keep ?? 0)
          if (Option.isNone(point)) return []
          const [id] = yield* takeIds(1)
          const request: RecordV2.UserMessage = userMessage(id!, compactOptions?.instruction ?? SUMMARY_INSTRUCTION)
          const prompt = yield* Codec.toPrompt([...point.value.summarised, request], { blobs })
          const response = yield* model.generateText({ prompt }).pipe(Effect.mapError(asModelError))
          const entry = yield* tree.compact({
            summary: response.text,
            firstKeptEntryId: point.value.firstKeptEntryId,
            tokensBefore: Conversation.estimate(Conversation.build(entries))
          })
          return [entry]
        }))
    }
    return agent
  })

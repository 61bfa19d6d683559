import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Model from "@effect/ai/Model"
import type * as Prompt from "@effect/ai/Prompt"
import * as Response from "@effect/ai/Response"
import type * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import {
  Conversation,
  Ids,
  type InputError,
  inputError,
  type Record,
  type RecordV2,
  type SessionError,
  SessionTree
} from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import type { AgentError, CompactOptions, Committed, Options, Requirements, SendOptions, Service, StreamPart, SystemPrompt } from "../Agent.js"
import { ModelError, StepLimitError } from "../Agent.js"
import * as Codec from "./codec.js"
import { modelError } from "./failures.js"
import * as Tools from "./tools.js"

export const SUMMARY_INSTRUCTION =
  "Summarise the conversation above for your own later use: the user's goals, the facts learned, the decisions made and what remains to do. Answer with the summary alone."

const DEFAULT_MAX_STEPS = 10

type Entry = Record.Entry
type Part = Response.AnyPart
type UserContent = string | ReadonlyArray<RecordV2.UserPart>
type AnyToolkit = Toolkit.WithHandler<globalThis.Record<string, Tool.Any>>

const userMessage = (id: string, content: UserContent, options?: RecordV2.Opaque): RecordV2.UserMessage => ({
  role: "user",
  id,
  content: typeof content === "string" ? [{ type: "text", text: content }] : content,
  ...(options === undefined ? {} : { options })
})

const messageBody = (message: RecordV2.Message) => ({ kind: "message" as const, message })

const messageOf = (entry: Entry | undefined): RecordV2.Message | undefined =>
  entry !== undefined && "kind" in entry && entry.kind === "message" ? entry.message : undefined

const isCall = (part: Part): part is Response.ToolCallPart<string, unknown> => part.type === "tool-call" && part.providerExecuted !== true

/** The provider a response's parts name in their metadata, when they name exactly one. */
const providerOfParts = (content: ReadonlyArray<Part>): string | undefined => {
  const named = new Set<string>()
  for (const part of content) {
    for (const [key, value] of Object.entries(part.metadata ?? {})) if (value !== undefined) named.add(key)
  }
  return named.size === 1 ? [...named][0] : undefined
}

/** An error a provider reported inside a stream, by the name it gives the error. */
const streamFailure = (part: Response.ErrorPart, provider: string | undefined): ModelError => {
  const error = part.error as { readonly type?: unknown; readonly code?: unknown; readonly error?: unknown } | undefined
  const inner = typeof error?.error === "object" && error.error !== null ? error.error as { readonly type?: unknown } : undefined
  const name = [inner?.type, error?.code, error?.type].find((v): v is string => typeof v === "string" && /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/.test(v))
  return new ModelError({
    ...(provider === undefined ? {} : { provider }),
    reason: `the provider reported an error in the stream${name === undefined ? "" : ` (${name})`}`,
    retryable: name !== undefined && /overloaded|rate_limit|server_error|api_error/.test(name)
  })
}

/** Tool calls and results as text, for a request that carries no tools. */
const withoutToolBlocks = (messages: ReadonlyArray<RecordV2.Message>): ReadonlyArray<RecordV2.Message> =>
  messages.map((message): RecordV2.Message => {
    if (message.role === "assistant") {
      return {
        ...message,
        content: message.content.map((part): RecordV2.AssistantPart =>
          part.type === "tool-call"
            ? { type: "text", text: `[called ${part.name} with ${JSON.stringify(part.arguments)}]` }
            : part.type === "tool-result"
            ? { type: "text", text: `[${part.toolName} returned${part.isError ? " an error" : ""}: ${JSON.stringify(part.result)}]` }
            : part
        )
      }
    }
    if (message.role === "tool") {
      const texts = message.content.flatMap((part) => (part.type === "text" ? [part.text] : []))
      const shown = message.result !== undefined ? JSON.stringify(message.result) : texts.join("\n")
      return {
        role: "user",
        id: message.id,
        content: [
          { type: "text", text: `[${message.toolName} returned${message.isError ? " an error" : ""}: ${shown}]` },
          ...message.content.filter((part) => part.type === "file")
        ]
      }
    }
    return message
  })

/** What one call of `send` has committed, kept so that running the same effect again continues its turn. */
interface Attempt {
  readonly user: Entry
  readonly committed: Array<Entry>
}

export const make = <Tools extends globalThis.Record<string, Tool.Any> = {}>(
  options?: Options<Tools>
): Effect.Effect<Service, never, Requirements<Tools>> =>
  Effect.gen(function*() {
    const tree = yield* SessionTree.SessionTree
    const model = yield* LanguageModel.LanguageModel
    const ids = Option.getOrElse(yield* Effect.serviceOption(Ids.Ids), () => Ids.random)
    const toolkit: AnyToolkit | undefined = options?.toolkit === undefined
      ? undefined
      : (yield* options.toolkit) as unknown as AnyToolkit
    // The handlers' own services, captured here so that the agent's operations need none.
    const context = yield* Effect.context<never>()
    const maxSteps = options?.maxSteps ?? DEFAULT_MAX_STEPS
    const budget = options?.budget
    const system: SystemPrompt | undefined = typeof options?.system === "string" ? { content: options.system } : options?.system
    const named = options?.provider ?? Option.getOrUndefined(yield* Effect.serviceOption(Model.ProviderName))
    const retry = options?.retry
    // The model sees each tool's parameters as they are described, but a call that does not match them reaches
    // the agent, which answers it with an error result (internal/tools.ts).
    const forModel = toolkit === undefined ? undefined : Tools.lenient(toolkit)
    // One operation at a time: a turn reads the leaf, then commits under it.
    const permit = yield* Effect.makeSemaphore(1)

    const branch = () => tree.activeEntries as ReadonlyArray<RecordV2.SessionEntry>
    // File data stored as a blob reaches the model as its bytes, read (and hash-checked) from the session's own store.
    const blobs = Codec.storeBlobs(tree.store)
    const spanAttributes = named === undefined ? {} : { "gen_ai.system": named }
    /** The provider of the branch's newest answer, for a failure that names none. */
    const lastProvider = () => Option.getOrUndefined(Conversation.model(branch()))?.provider
    const failure = (error: unknown) => modelError(error, named, lastProvider())
    /** The provider a step's answer and failures are told with. */
    const providerFor = (content: ReadonlyArray<Part>) => named ?? providerOfParts(content) ?? lastProvider()

    /** The branch's context as a prompt. */
    const prompt = Effect.suspend(() => Codec.toPrompt(Conversation.build(branch(), { budget }), { blobs }))

    /** The model's response to `prompt`, tool calls not yet run. */
    const generate = (request: Prompt.Prompt): Effect.Effect<ReadonlyArray<Part>, ModelError> => {
      const raw: Effect.Effect<{ readonly content: ReadonlyArray<unknown> }, unknown> = forModel === undefined
        ? model.generateText({ prompt: request })
        : model.generateText({ prompt: request, toolkit: forModel, disableToolCallResolution: true })
      const call: Effect.Effect<ReadonlyArray<Part>, ModelError> = raw.pipe(
          Effect.map((response) => response.content as ReadonlyArray<Part>),
          Effect.catchAll((error) => {
            // A call of a tool the toolkit does not hold: the response as it came, so that the model is told.
            const recovered = Tools.recover(error)
            return recovered === undefined ? Effect.fail(failure(error)) : Effect.succeed(recovered)
          })
        )
      return (retry === undefined ? call : Effect.retry(call, { schedule: retry, while: (error) => error.retryable })).pipe(
        Effect.withSpan("Agent.modelCall", { attributes: spanAttributes, captureStackTrace: false })
      )
    }

    /** The model's response to `request` as it streams; run again on a retryable failure only before its first part. */
    const streamed = (request: Prompt.Prompt): Stream.Stream<Part, ModelError> =>
      Stream.suspend(() => {
        let arrived = false
        const call = (forModel === undefined
          ? model.streamText({ prompt: request })
          : model.streamText({ prompt: request, toolkit: forModel, disableToolCallResolution: true })).pipe(
            Stream.mapError(failure),
            Stream.tap(() => Effect.sync(() => (arrived = true)))
          ) as Stream.Stream<Part, ModelError>
        const retried = retry === undefined
          ? call
          : Stream.retry(call, Schedule.whileInput(retry, (error: ModelError) => error.retryable && !arrived))
        return retried.pipe(Stream.withSpan("Agent.modelCall", { attributes: spanAttributes, captureStackTrace: false }))
      })

    /** IDs for `count` messages, taken before a synchronous codec call needs them. */
    const takeIds = (count: number) => Effect.replicateEffect(ids.entryId, count)

    /** Runs the calls of a response, in order: the tool-result parts the step commits. */
    const runTools = (content: ReadonlyArray<Part>, emit?: (part: Part) => void) =>
      Effect.forEach(content.filter(isCall), (call) =>
        Effect.tap(Tools.run(toolkit, call, context), (result) => Effect.sync(() => emit?.(result))))

    /** Commits a step: the model's answer and its tool results, in one chain, whatever interrupts it. */
    const commit = (content: ReadonlyArray<Part>, results: ReadonlyArray<Part>) =>
      Effect.gen(function*() {
        const [id] = yield* takeIds(1)
        const assistant = yield* Codec.fromResponse({ content }, { id: id!, provider: providerFor(content) })
        const pool = yield* takeIds(results.length)
        const tools = yield* Codec.toolMessages({ content: results }, { newId: () => pool.shift()! })
        const entries = yield* Effect.uninterruptible(tree.appendChain([assistant, ...tools].map(messageBody)))
        return { entries, done: results.length === 0 }
      })

    /** One step: the model's answer and its tool results, committed in one chain. */
    const step = Effect.gen(function*() {
      const content = yield* generate(yield* prompt)
      const results = yield* runTools(content)
      return yield* commit(content, results)
    }).pipe(Effect.withSpan("Agent.step", { captureStackTrace: false }))

    /** Steps until the model stops calling tools or the limit is reached. */
    const turn = (committed: Array<Entry>): Effect.Effect<ReadonlyArray<Entry>, AgentError> =>
      Effect.gen(function*() {
        for (let n = 0; n < maxSteps; n++) {
          const { done, entries } = yield* step
          committed.push(...entries)
          if (done) return committed
        }
        return yield* new StepLimitError({ maxSteps, entryIds: committed.map((entry) => entry.id) })
      }).pipe(Effect.withSpan("Agent.turn", { captureStackTrace: false }))

    const committedPart = (entries: ReadonlyArray<Entry>): Committed => ({ type: "committed", entries })

    /**
     * One streamed step, then what `next` gives after it. The stream pulls the model's parts as the
     * caller takes them, so that the step's tools run and its commit happens only once the caller has
     * taken the whole response: a caller that stops earlier leaves nothing of the step stored.
     */
    const streamedStep = (committed: Array<Entry>, next: (done: boolean) => Stream.Stream<StreamPart, AgentError>) =>
      Stream.unwrap(Effect.map(prompt, (request) => {
        const content: Array<Part> = []
        const settle = Effect.gen(function*() {
          const failed = content.find((part): part is Response.ErrorPart => part.type === "error")
          const provider = providerFor(content)
          if (failed !== undefined) return yield* streamFailure(failed, provider)
          if (!content.some((part) => part.type === "finish")) {
            return yield* new ModelError({
              ...(provider === undefined ? {} : { provider }),
              reason: "the response ended before it was complete",
              retryable: true
            })
          }
          return yield* runTools(content)
        })
        const after = Stream.unwrap(Effect.map(settle, (results) =>
          Stream.concat(
            Stream.fromIterable<StreamPart>(results),
            Stream.unwrap(Effect.map(commit(content, results), ({ done, entries }) => {
              committed.push(...entries)
              return Stream.concat(Stream.make<Array<StreamPart>>(committedPart(entries)), next(done))
            }))
          )))
        return Stream.concat(
          streamed(request).pipe(Stream.tap((part) => Effect.sync(() => content.push(part)))) as Stream.Stream<StreamPart, AgentError>,
          after
        )
      })).pipe(Stream.withSpan("Agent.step", { captureStackTrace: false }))

    const streamedTurn = (committed: Array<Entry>, n = 0): Stream.Stream<StreamPart, AgentError> =>
      n >= maxSteps
        ? Stream.fail(new StepLimitError({ maxSteps, entryIds: committed.map((entry) => entry.id) }))
        : streamedStep(committed, (done) => (done ? Stream.empty : streamedTurn(committed, n + 1)))

    /** The user's message, after the system message when the branch has none: one commit. */
    const commitUser = (content: UserContent, sendOptions?: SendOptions) =>
      Effect.gen(function*() {
        const messages: Array<RecordV2.Message> = []
        if (system !== undefined && !branch().some((entry) => messageOf(entry)?.role === "system")) {
          const [id] = yield* takeIds(1)
          messages.push({
            role: "system",
            id: id!,
            content: system.content,
            ...(system.options === undefined ? {} : { options: system.options })
          })
        }
        const [id] = yield* takeIds(1)
        messages.push(userMessage(id!, content, sendOptions?.options))
        return [...(yield* tree.appendChain(messages.map(messageBody)))]
      })

    /**
     * Where a run of the same `send` stands: its user message still on the active branch with no
     * later user message, and the model still owing an answer ("continue"), or the answer already
     * committed ("done"); anything else (the branch moved away) commits the message anew.
     */
    const standing = (attempt: Attempt): "continue" | "done" | "anew" => {
      const path = branch()
      const at = path.findIndex((entry) => entry.id === attempt.user.id)
      if (at === -1) return "anew"
      let last: RecordV2.Message | undefined
      for (let i = at + 1; i < path.length; i++) {
        const message = messageOf(path[i])
        if (message === undefined) continue
        if (message.role === "user") return "anew"
        last = message
      }
      return last?.role === "assistant" && !last.content.some((part) => part.type === "tool-call" && part.providerExecuted !== true)
        ? "done"
        : "continue"
    }

    const serialized = <A, E>(effect: Effect.Effect<A, E>) => permit.withPermits(1)(effect)

    const find = (entryId: string, role: RecordV2.Message["role"]): Effect.Effect<Entry, SessionError> => {
      const entry = tree.pathTo(entryId).at(-1)
      if (entry === undefined) {
        return Effect.fail(inputError("SESSION_UNKNOWN_ENTRY", `${JSON.stringify(entryId)} is not an entry of this session`))
      }
      return messageOf(entry)?.role === role
        ? Effect.succeed(entry)
        : Effect.fail(inputError("SESSION_INVALID_MESSAGE", `${entryId} is not a ${role} message`))
    }

    /** The summary's request: the branch's system messages, what it summarises, the instruction. */
    const summaryPrompt = (entries: ReadonlyArray<RecordV2.SessionEntry>, summarised: ReadonlyArray<RecordV2.Message>, instruction: string) =>
      Effect.gen(function*() {
        const built = Conversation.build(entries)
        const systems: Array<RecordV2.Message> = []
        for (const message of built) {
          if (message.role !== "system") break
          systems.push(message)
        }
        const [id] = yield* takeIds(1)
        // A provider refuses tool blocks in a request that defines no tools: without a toolkit they go as text.
        const messages = [...systems, ...(toolkit === undefined ? withoutToolBlocks(summarised) : summarised), userMessage(id!, instruction)]
        return yield* Codec.toPrompt(messages, { blobs })
      })

    const agent: Service = {
      send: (content, sendOptions) => {
        let attempt: Attempt | undefined
        return Effect.suspend(() =>
          serialized(Effect.gen(function*() {
            const standingNow = attempt === undefined ? "anew" : standing(attempt)
            if (attempt !== undefined && standingNow === "done") return attempt.committed
            if (attempt !== undefined && standingNow === "continue") return yield* turn(attempt.committed)
            const committed = yield* commitUser(content, sendOptions)
            attempt = { user: committed.at(-1)!, committed }
            return yield* turn(committed)
          }))
        )
      },
      sendStream: (content, sendOptions) => {
        let attempt: Attempt | undefined
        return Stream.unwrapScoped(Effect.gen(function*() {
          yield* Effect.acquireRelease(permit.take(1), () => permit.release(1))
          const standingNow = attempt === undefined ? "anew" : standing(attempt)
          if (attempt !== undefined && standingNow === "done") return Stream.empty
          if (attempt !== undefined && standingNow === "continue") return streamedTurn(attempt.committed)
          const committed = yield* commitUser(content, sendOptions)
          attempt = { user: committed.at(-1)!, committed }
          return Stream.concat(Stream.make<Array<StreamPart>>(committedPart([...committed])), streamedTurn(committed))
        }))
      },
      resume: () =>
        serialized(Effect.gen(function*() {
          const last = [...branch()].reverse().map(messageOf).find((message) => message !== undefined)
          if (last === undefined || (last.role !== "user" && last.role !== "tool")) {
            return yield* Effect.fail<InputError>(inputError(
              "SESSION_INVALID_MESSAGE",
              "nothing to answer: the active branch does not end with a user or tool message"
            ))
          }
          return yield* turn([])
        })),
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
      edit: (entryId, content, sendOptions) =>
        serialized(Effect.gen(function*() {
          const entry = yield* find(entryId, "user")
          yield* tree.moveTo(entry.parentId)
          return yield* Effect.flatMap(commitUser(content, sendOptions), turn)
        })),
      compact: (compactOptions?: CompactOptions) =>
        serialized(Effect.gen(function*() {
          const entries = branch()
          const point = Conversation.compactionPoint(entries, compactOptions?.keep ?? 0)
          if (Option.isNone(point)) return []
          const request = yield* summaryPrompt(entries, point.value.summarised, compactOptions?.instruction ?? SUMMARY_INSTRUCTION)
          const content = yield* generate(request)
          const summary = content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("")
          if (summary.trim() === "") {
            const provider = providerFor(content)
            return yield* new ModelError({
              ...(provider === undefined ? {} : { provider }),
              reason: "the summary's response held no text",
              retryable: true
            })
          }
          const finish = content.find((part): part is Response.FinishPart => part.type === "finish")
          const usage = finish === undefined ? undefined : Codec.usageOf(finish)
          const entry = yield* tree.appendEntry({
            kind: "compaction",
            summary,
            firstKeptEntryId: point.value.firstKeptEntryId,
            tokensBefore: Conversation.estimate(Conversation.build(entries)),
            ...(usage === undefined ? {} : { usage })
          })
          return [entry]
        }).pipe(Effect.withSpan("Agent.compact", { captureStackTrace: false })))
    }
    return agent
  })

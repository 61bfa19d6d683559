import * as AiError from "@effect/ai/AiError"
import * as Chat from "@effect/ai/Chat"
import * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import { PersistenceBackingError } from "@effect/experimental/Persistence"
import {
  Conversation,
  Ids,
  inputError,
  isSessionError,
  type RecordV2,
  type SessionJournal,
  SessionStore,
  SessionTree
} from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Options } from "../ChatPersistence.js"
import * as Codec from "./codec.js"

/** What a chat ID may be: a plain name, so that no location built from it leaves its directory. */
export const CHAT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

const backing = (method: string, cause: unknown) => PersistenceBackingError.make(method, cause)

/** A loaded session a chat lives in; its appends run one at a time. */
interface Held {
  readonly tree: SessionTree.SessionTree
  readonly permit: Effect.Semaphore
}

/** A prompt message as Message IR v2, without its ID, to tell a stored message from a changed one. */
const shapeOf = (message: Prompt.Message): Either.Either<string, unknown> =>
  Either.map(
    Effect.runSync(Effect.either(Codec.fromPrompt(Prompt.fromMessages([message]), { newId: () => "pending" }))),
    (messages) => JSON.stringify(messages.map(({ id: _id, ...rest }) => rest))
  )

const same = (a: Prompt.Message, b: Prompt.Message): boolean => {
  if (a === b) return true
  const left = shapeOf(a)
  const right = shapeOf(b)
  return Either.isRight(left) && Either.isRight(right) && left.right === right.right
}

export const make = (
  options?: Options
): Effect.Effect<Chat.Persistence.Service, never, SessionJournal.SessionJournal | Ids.Ids | Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const context = yield* Effect.context<SessionJournal.SessionJournal | Ids.Ids>()
    const ids = yield* Ids.Ids
    const location = options?.location ?? ((chatId: string) => chatId)
    // Each chat's session is loaded once and held until the layer's scope closes.
    const held = new Map<string, Held>()
    const opening = yield* Effect.makeSemaphore(1)

    const hold = (store: SessionStore.SessionStore) =>
      Effect.map(Effect.all([SessionTree.make(store), Effect.makeSemaphore(1)]), ([tree, permit]) => ({ tree, permit }))

    /** The chat's session: held already, loaded, or (with `create`) created; none when absent and not created. */
    const open = (method: string, chatId: string, create: boolean) =>
      opening.withPermits(1)(Effect.gen(function*() {
        if (!CHAT_ID.test(chatId)) {
          return yield* backing(method, inputError("SESSION_INVALID_OPTIONS", `a chat ID is a plain name of at most 128 letters, digits, '.', '_' and '-': ${JSON.stringify(chatId)}`))
        }
        const known = held.get(chatId)
        if (known !== undefined) return Option.some(known)
        const at = location(chatId)
        const loaded = yield* Effect.either(SessionStore.load(at, { version: 2 }).pipe(Scope.extend(scope)))
        let store: SessionStore.SessionStore
        if (Either.isRight(loaded)) {
          store = loaded.right
        } else if (loaded.left.code === "SESSION_NOT_FOUND" && create) {
          store = yield* SessionStore.create(at, { id: chatId, version: 2 }).pipe(Scope.extend(scope), Effect.mapError((e) => backing(method, e)))
        } else if (loaded.left.code === "SESSION_NOT_FOUND") {
          return Option.none<Held>()
        } else {
          return yield* backing(method, loaded.left)
        }
        const made = yield* hold(store)
        held.set(chatId, made)
        return Option.some(made)
      }).pipe(Effect.provide(context)))

    const persisted = (chatId: string, session: Held) =>
      Effect.gen(function*() {
        const { permit, tree } = session
        // The chat's history: the context of the session's active branch, compactions applied.
        const path = tree.activeEntries as ReadonlyArray<RecordV2.SessionEntry>
        const built = Conversation.build(path)
        const prompt = yield* Codec.toPrompt(built, { blobs: Codec.storeBlobs(tree.store) }).pipe(
          Effect.mapError((e) => backing("get", e))
        )
        const entryOfMessage = new Map<string, string>()
        for (const entry of path) {
          if (entry.kind === "message") entryOfMessage.set(entry.message.id, entry.id)
          else if (entry.kind === "compaction") entryOfMessage.set(entry.id, entry.id)
        }
        const chat = yield* Chat.fromPrompt(prompt)
        /** The history as last stored: its messages, the entry each ends at, and the entry the next ones hang from. */
        let saved = {
          messages: prompt.content,
          entries: built.map((message) => entryOfMessage.get(message.id)!),
          leaf: tree.activeLeafId
        }

        const save = permit.withPermits(1)(Effect.gen(function*() {
          const history = (yield* Ref.get(chat.history)).content
          let common = 0
          while (common < saved.messages.length && common < history.length && same(history[common]!, saved.messages[common]!)) common++
          const fresh = history.slice(common)
          if (fresh.length === 0) return
          // Appended, never rewritten: after the stored history's end, or, where the history differs from it,
          // on a new branch from the last message both share.
          const parent = common === saved.messages.length ? saved.leaf : common === 0 ? null : saved.entries[common - 1]!
          const counts: Array<number> = []
          const messages: Array<RecordV2.Message> = []
          for (const message of fresh) {
            const converted = yield* Codec.fromPrompt(Prompt.fromMessages([message]), { newId: () => "pending" })
            counts.push(converted.length)
            for (const m of converted) messages.push({ ...m, id: yield* ids.entryId })
          }
          yield* tree.moveTo(parent)
          const entries = yield* tree.appendChain(messages.map((message) => ({ kind: "message", message })))
          const ends: Array<string> = []
          let at = 0
          for (const count of counts) {
            at += count
            ends.push(entries[at - 1]!.id)
          }
          saved = { messages: history, entries: [...saved.entries.slice(0, common), ...ends], leaf: entries.at(-1)!.id }
        }).pipe(
          Effect.mapError((error) =>
            isSessionError(error) && error.code === "SESSION_INVALID_MESSAGE"
              ? new AiError.MalformedOutput({ module: "ChatPersistence", method: "save", description: error.message })
              : backing("save", error)
          ),
          Effect.withSpan("ChatPersistence.save", { attributes: { chatId }, captureStackTrace: false })
        ))

        /**
         * Puts back what `Chat` leaves out of the history it keeps: the provider metadata of the
         * response's parts (reasoning signatures, encrypted reasoning) and its usage, as the codec gives
         * them. `@effect/ai`'s own `Prompt.fromResponseParts` drops them, and the next request would go
         * out without the reasoning the provider needs back.
         */
        const restore = (content: ReadonlyArray<Response.AnyPart>) =>
          Effect.gen(function*() {
            const theirs = Prompt.fromResponseParts(content).content.length
            if (theirs === 0) return
            const answer = yield* Codec.fromResponse({ content }, { id: yield* ids.entryId })
            const results = content.filter((part) => part.type === "tool-result" && !part.providerExecuted).length
            const pool = yield* Effect.replicateEffect(ids.entryId, results)
            const tools = yield* Codec.toolMessages({ content }, { newId: () => pool.shift()! })
            const ours = yield* Codec.toPrompt([...(answer.content.length === 0 ? [] : [answer]), ...tools])
            yield* Ref.update(chat.history, (history) => Prompt.fromMessages([...history.content.slice(0, history.content.length - theirs), ...ours.content]))
          }).pipe(Effect.orDie)

        const saving = Effect.orDie(save)
        const service: Chat.Persisted = {
          ...chat,
          id: chatId,
          save,
          generateText: (generate) =>
            chat.generateText(generate).pipe(
              Effect.tap((response) => restore(response.content as ReadonlyArray<Response.AnyPart>)),
              Effect.ensuring(saving)
            ),
          generateObject: (generate) =>
            chat.generateObject(generate).pipe(
              Effect.tap((response) => restore(response.content as ReadonlyArray<Response.AnyPart>)),
              Effect.ensuring(saving)
            ),
          streamText: (stream) =>
            Stream.suspend(() => {
              const parts: Array<Response.AnyPart> = []
              let whole = false
              return chat.streamText(stream).pipe(
                Stream.tap((part) => Effect.sync(() => parts.push(part as Response.AnyPart))),
                Stream.concat(Stream.execute(Effect.sync(() => (whole = true)))),
                Stream.ensuring(Effect.zipRight(Effect.suspend(() => (whole ? restore(parts) : Effect.void)), saving))
              )
            })
        } as Chat.Persisted
        return service
      })

    const refuseTimeToLive = (method: string, timeToLive: unknown) =>
      timeToLive === undefined
        ? Effect.void
        : Effect.fail(backing(method, inputError("SESSION_INVALID_OPTIONS", "a chat kept in a session tree does not expire: timeToLive is not supported")))

    return Chat.Persistence.of({
      get: (chatId, getOptions) =>
        Effect.gen(function*() {
          yield* refuseTimeToLive("get", getOptions?.timeToLive)
          const session = yield* open("get", chatId, false)
          if (Option.isNone(session)) return yield* new Chat.ChatNotFoundError({ chatId })
          return yield* persisted(chatId, session.value)
        }).pipe(Effect.withSpan("ChatPersistence.get", { attributes: { chatId }, captureStackTrace: false })),
      getOrCreate: (chatId, getOptions) =>
        Effect.gen(function*() {
          yield* refuseTimeToLive("getOrCreate", getOptions?.timeToLive)
          const session = yield* open("getOrCreate", chatId, true)
          return yield* persisted(chatId, Option.getOrThrow(session))
        }).pipe(Effect.withSpan("ChatPersistence.getOrCreate", { attributes: { chatId }, captureStackTrace: false }))
    })
  })

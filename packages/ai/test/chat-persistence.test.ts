/**
 * `Chat.Persistence` backed by session trees, with an unmodified `@effect/ai`
 * `Chat` program (`Chat.Persistence`, `getOrCreate`, `generateText`,
 * `streamText`) and the real Anthropic client against a provider on this
 * machine: the history survives a restart (a new layer over the same files or
 * the same PostgreSQL database), with the reasoning signature `Chat` itself
 * leaves out of its history; each save appends the new messages and rewrites
 * nothing; a history changed by the program is stored as a branch; a missing
 * chat, an ID that is not a plain name and a time to live are typed errors.
 */
import * as Chat from "@effect/ai/Chat"
import type * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import { describe, expect, it } from "@effect/vitest"
import { Ids, type RecordV2, SessionStore } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Stream from "effect/Stream"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Database from "../../pg/test/support/database.js"
import { ChatPersistence } from "../src/index.js"
import { anthropic, fakeProvider, json, sse } from "./support/provider.js"
import { tempDir } from "./support/session.js"
import * as W from "./support/wire.js"

const THINKING = { type: "thinking" as const, thinking: "A greeting: answer in kind.", signature: "EqQBCkYIBxgCKkBjaGF0UGVyc2lzdGVuY2U=" }

/** The program, as `@effect/ai`'s documentation writes one: nothing in it knows about session trees. */
const ask = (chatId: string, question: string) =>
  Effect.gen(function*() {
    const persistence = yield* Chat.Persistence
    const chat = yield* persistence.getOrCreate(chatId)
    const response = yield* chat.generateText({ prompt: question })
    return response.text
  })

const askStreaming = (chatId: string, question: string) =>
  Effect.gen(function*() {
    const persistence = yield* Chat.Persistence
    const chat = yield* persistence.getOrCreate(chatId)
    const parts = yield* Stream.runCollect(chat.streamText({ prompt: question }))
    return [...parts].flatMap((part) => (part.type === "text-delta" ? [part.delta] : [])).join("")
  })

const filePersistence = (dir: string) =>
  ChatPersistence.layer({ location: (id) => Path.join(dir, `${id}.jsonl`) }).pipe(
    Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
  )

/** One run of a program, as one process: the persistence layer built for it and released after. */
const run = <A, E>(
  program: Effect.Effect<A, E, Chat.Persistence | LanguageModel.LanguageModel>,
  persistence: Layer.Layer<Chat.Persistence, unknown>,
  model: Layer.Layer<LanguageModel.LanguageModel>
) => program.pipe(Effect.provide(Layer.merge(persistence, model)), Effect.scoped)

const roles = (entries: ReadonlyArray<RecordV2.SessionEntry>) =>
  entries.map((entry) => (entry.kind === "message" ? entry.message.role : entry.kind))

describe("Chat.Persistence on session files", () => {
  it.live("an unmodified Chat program's history survives a restart, reasoning signature included; saves only append", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const dir = yield* tempDir
      const file = Path.join(dir, "chat-1.jsonl")
      const model = anthropic(provider.url)
      provider.reply(json(W.anthropicMessage([THINKING, { type: "text", text: "Hello!" }])))
      expect(yield* run(ask("chat-1", "Hi, I am Ada."), filePersistence(dir), model)).toBe("Hello!")
      const first = NFS.readFileSync(file)

      // A restart: a new layer loads the chat from its file.
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "You are Ada." }])))
      expect(yield* run(ask("chat-1", "Who am I?"), filePersistence(dir), model)).toBe("You are Ada.")
      const second = provider.bodies()[1]
      expect(second.messages).toEqual([
        { role: "user", content: [{ type: "text", text: "Hi, I am Ada." }] },
        { role: "assistant", content: [THINKING, { type: "text", text: "Hello!" }] },
        { role: "user", content: [{ type: "text", text: "Who am I?" }] }
      ])
      // The second save appended its two messages after the first save's bytes, which are unchanged.
      const after = NFS.readFileSync(file)
      expect(after.subarray(0, first.length)).toEqual(first)
      const entries = (yield* SessionStore.read(file).pipe(Effect.provide(FileJournal.layerWithFs()))).entries as ReadonlyArray<RecordV2.SessionEntry>
      expect(roles(entries)).toEqual(["user", "assistant", "user", "assistant"])
      expect(entries.map((e) => e.parentId)).toEqual([null, entries[0]!.id, entries[1]!.id, entries[2]!.id])
      expect((entries[1] as RecordV2.MessageEntry).message).toMatchObject({
        content: [{ type: "reasoning", text: THINKING.thinking, options: { anthropic: { type: "thinking", signature: THINKING.signature } } }, { type: "text", text: "Hello!" }],
        meta: { model: "claude-sonnet-4-5-20250929", usage: { inputTokens: 120, outputTokens: 48 }, stopReason: "stop" }
      })

      // Streamed, in a third process: the same history, and the streamed answer stored whole.
      provider.reply(sse(W.anthropicEvents([THINKING, { type: "text", text: "Still Ada." }])))
      expect(yield* run(askStreaming("chat-1", "And now?"), filePersistence(dir), model)).toBe("Still Ada.")
      expect(provider.bodies()[2].messages).toHaveLength(5)
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "Yes." }])))
      yield* run(ask("chat-1", "Sure?"), filePersistence(dir), model)
      expect(provider.bodies()[3].messages[5]).toEqual({ role: "assistant", content: [THINKING, { type: "text", text: "Still Ada." }] })
    }).pipe(Effect.scoped))

  it.live("a history the program changed is stored as a branch from what both share; a new process resumes it", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const dir = yield* tempDir
      const model = anthropic(provider.url)
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "Paris." }])), json(W.anthropicMessage([{ type: "text", text: "Rome." }])))
      yield* run(Effect.zipRight(ask("c", "Capital of France?"), ask("c", "Capital of Italy?")), filePersistence(dir), model)
      // The program drops the second exchange, then asks something else: a branch from the first answer.
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "Madrid." }])))
      yield* run(
        Effect.gen(function*() {
          const chat = yield* (yield* Chat.Persistence).getOrCreate("c")
          yield* Ref.update(chat.history, (history) => Prompt.fromMessages(history.content.slice(0, 2)))
          return yield* chat.generateText({ prompt: "Capital of Spain?" })
        }),
        filePersistence(dir),
        model
      )
      const entries = (yield* SessionStore.read(Path.join(dir, "c.jsonl")).pipe(Effect.provide(FileJournal.layerWithFs()))).entries
      expect(entries).toHaveLength(6)
      expect(entries[4]!.parentId).toBe(entries[1]!.id)
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "Yes." }])))
      yield* run(ask("c", "Sure?"), filePersistence(dir), model)
      expect(provider.bodies()[3].messages.map((m: any) => m.content[0].text)).toEqual(["Capital of France?", "Paris.", "Capital of Spain?", "Madrid.", "Sure?"])
    }).pipe(Effect.scoped))

  it.live("a missing chat, an ID that is not a plain name and a time to live are typed errors; nothing is written", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const outcome = yield* Effect.gen(function*() {
        const persistence = yield* Chat.Persistence
        return [
          yield* Effect.flip(persistence.get("absent")),
          yield* Effect.flip(persistence.getOrCreate("../escape")),
          yield* Effect.flip(persistence.getOrCreate("ok", { timeToLive: "1 hour" }))
        ] as const
      }).pipe(Effect.provide(filePersistence(dir)), Effect.scoped)
      expect(outcome[0]).toMatchObject({ _tag: "ChatNotFoundError", chatId: "absent" })
      expect(outcome[1]).toMatchObject({ _tag: "PersistenceError", reason: "BackingError", cause: { code: "SESSION_INVALID_OPTIONS" } })
      expect(outcome[2]).toMatchObject({ _tag: "PersistenceError", reason: "BackingError", cause: { code: "SESSION_INVALID_OPTIONS" } })
      expect(NFS.readdirSync(dir)).toEqual([])
      expect(NFS.existsSync(Path.join(dir, "..", "escape.jsonl"))).toBe(false)
    }).pipe(Effect.scoped))
})

describe("Chat.Persistence on PostgreSQL", () => {
  it.live("an unmodified Chat program's history survives a restart", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const model = anthropic(provider.url)
      const persistence = ChatPersistence.layer()
      const journal = yield* Layer.build(Database.layer("chat"))
      const onDatabase = Layer.provide(persistence, Layer.succeedContext(journal))
      provider.reply(json(W.anthropicMessage([THINKING, { type: "text", text: "Hello!" }])))
      yield* run(ask("chat-pg", "Hi, I am Ada."), onDatabase, model)
      provider.reply(json(W.anthropicMessage([{ type: "text", text: "You are Ada." }])))
      expect(yield* run(ask("chat-pg", "Who am I?"), onDatabase, model)).toBe("You are Ada.")
      expect(provider.bodies()[1].messages).toEqual([
        { role: "user", content: [{ type: "text", text: "Hi, I am Ada." }] },
        { role: "assistant", content: [THINKING, { type: "text", text: "Hello!" }] },
        { role: "user", content: [{ type: "text", text: "Who am I?" }] }
      ])
      const loaded = yield* SessionStore.read("chat-pg").pipe(Effect.provide(Layer.succeedContext(journal)))
      expect(loaded.header.id).toBe("chat-pg")
      expect(roles(loaded.entries as ReadonlyArray<RecordV2.SessionEntry>)).toEqual(["user", "assistant", "user", "assistant"])
    }).pipe(Effect.scoped))
})

/**
 * The check that an imported session's reasoning goes back out as its provider
 * needs it: `sendsEveryPayloadBack(format, sources)` imports each source with
 * the importer the repository has today, stores it in a session file, reloads
 * it, sends every branch through the real client packages, and requires every
 * payload the source holds (Anthropic's signatures with their thinking, its
 * redacted data, OpenAI's encrypted reasoning), as read from the source itself
 * and not through the codec, in the request bodies byte for byte. Payloads of
 * lines the importer keeps in another session (a sub-agent's) or that a
 * compaction summarised (no context of the session shows them) are not asked
 * for. A format is one value (`sendsEveryPayloadBack(codex, realSources("codex"))`).
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import { describe, expect, it } from "@effect/vitest"
import { Conversation, type CorruptError, Ids, type RecordV2, Sessions, SessionStore, SessionTree } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Transcripts from "@session-tree/testing/Transcripts"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { Codec } from "../../src/index.js"
import { anthropic, fakeProvider, json, openai } from "./provider.js"
import { tempDir } from "./session.js"
import * as W from "./wire.js"

/** What a source holds that a provider must get back exactly. */
export interface Payloads {
  /** Anthropic thinking blocks: their text and signature, which go back together. */
  readonly thinking: Array<{ readonly thinking: string; readonly signature: string }>
  /** Anthropic redacted thinking: its encrypted data. */
  readonly redacted: Array<string>
  /** OpenAI reasoning items' encrypted content. */
  readonly encrypted: Array<string>
}

export interface Format {
  readonly kind: string
  readonly convert: (bytes: Uint8Array) => Either.Either<{ readonly header: RecordV2.SessionHeader; readonly entries: ReadonlyArray<RecordV2.SessionEntry> }, CorruptError>
  /** The payloads of the source, read from its own lines. */
  readonly payloads: (bytes: Uint8Array) => Payloads
}

export interface Source {
  readonly name: string
  readonly bytes: () => Uint8Array | Promise<Uint8Array>
}

const lines = (bytes: Uint8Array): Array<unknown> =>
  new TextDecoder().decode(bytes).split("\n").flatMap((line) => {
    try {
      return line.trim() === "" ? [] : [JSON.parse(line)]
    } catch {
      return []
    }
  })

const empty = (): Payloads => ({ thinking: [], redacted: [], encrypted: [] })

/** Every object of a JSON value, depth first. */
const objects = function*(value: unknown): Generator<{ readonly [key: string]: unknown }> {
  if (typeof value !== "object" || value === null) return
  if (!Array.isArray(value)) yield value as { readonly [key: string]: unknown }
  for (const child of Object.values(value)) yield* objects(child)
}

/** Claude Code: the thinking and redacted_thinking blocks of assistant lines. */
export const claudePayloads = (bytes: Uint8Array): Payloads => {
  const out = empty()
  for (const line of lines(bytes)) {
    for (const o of objects(line)) {
      if (o["type"] === "thinking" && typeof o["signature"] === "string" && typeof o["thinking"] === "string") {
        out.thinking.push({ thinking: o["thinking"], signature: o["signature"] })
      }
      if (o["type"] === "redacted_thinking" && typeof o["data"] === "string") out.redacted.push(o["data"])
    }
  }
  return out
}

/** Pi: the thinking parts of assistant messages, by the API that wrote them. */
export const piPayloads = (bytes: Uint8Array): Payloads => {
  const out = empty()
  for (const line of lines(bytes)) {
    const message = (line as { readonly message?: { readonly role?: unknown; readonly api?: unknown; readonly content?: unknown } }).message
    if (message?.role !== "assistant" || !Array.isArray(message.content)) continue
    for (const part of message.content as ReadonlyArray<{ [key: string]: unknown }>) {
      const signature = part["thinkingSignature"]
      if (part["type"] !== "thinking" || typeof signature !== "string") continue
      if (message.api === "anthropic-messages") {
        if (part["redacted"] === true) out.redacted.push(signature)
        else out.thinking.push({ thinking: String(part["thinking"]), signature })
      } else if (typeof message.api === "string" && message.api.includes("responses")) {
        const item = JSON.parse(signature) as { readonly encrypted_content?: unknown }
        if (typeof item.encrypted_content === "string") out.encrypted.push(item.encrypted_content)
      }
    }
  }
  return out
}

/** Codex rollouts: the encrypted content of every reasoning item. */
export const codexPayloads = (bytes: Uint8Array): Payloads => {
  const out = empty()
  for (const line of lines(bytes)) {
    for (const o of objects(line)) {
      if (o["type"] === "reasoning" && typeof o["encrypted_content"] === "string") out.encrypted.push(o["encrypted_content"])
    }
  }
  return out
}

/** The real transcripts of a kind in the shared collection (none when it is absent). */
export const realSources = (kind: "claude" | "codex" | "pi"): ReadonlyArray<Source> =>
  Transcripts.files(kind).map((name) => ({ name, bytes: () => NFS.readFileSync(Path.join(Transcripts.dir(kind), name)) }))

/** What the request bodies sent back: the same three kinds of payload, read from the wire. */
const sentBack = (anthropicBodies: ReadonlyArray<any>, openaiBodies: ReadonlyArray<any>): Payloads => {
  const out = empty()
  for (const body of anthropicBodies) {
    for (const message of body.messages) {
      for (const block of message.content) {
        if (block.type === "thinking") out.thinking.push({ thinking: block.thinking, signature: block.signature })
        if (block.type === "redacted_thinking") out.redacted.push(block.data)
      }
    }
  }
  for (const body of openaiBodies) {
    for (const item of body.input) if (item.type === "reasoning" && typeof item.encrypted_content === "string") out.encrypted.push(item.encrypted_content)
  }
  return out
}

const sessionsLayer = Sessions.layer.pipe(Layer.provideMerge(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)))

/**
 * With `nonEmpty`, each source must hold payloads and the session must keep every one of them (a
 * fixture written to hold them); real transcripts hold what they hold.
 */
export const sendsEveryPayloadBack = (
  format: Format,
  sources: ReadonlyArray<Source>,
  label = "real transcripts",
  options?: { readonly nonEmpty?: boolean }
): void => {
  describe(`${format.kind} (${label}): imported, reloaded and sent by the real clients, every reasoning payload goes back`, () => {
    if (sources.length === 0) {
      it.skip(`no ${format.kind} ${label}: ../shared/data/transcripts is absent`, () => {})
      return
    }
    for (const source of sources) {
      it.live(source.name, () =>
        Effect.gen(function*() {
          const bytes = yield* Effect.promise(async () => source.bytes())
          const converted = format.convert(bytes)
          if (Either.isLeft(converted)) {
            // The importer refuses this file (damaged, or a format it does not read): a typed error, nothing to send.
            expect(converted.left.code).toMatch(/^SESSION_/)
            return
          }
          const file = Path.join(yield* tempDir, "imported.jsonl")
          yield* Effect.flatMap(Sessions.Sessions, (sessions) => sessions.import(converted.right, file)).pipe(Effect.provide(sessionsLayer), Effect.orDie)
          // A new process loads what the import stored.
          const loaded = yield* SessionStore.read(file).pipe(Effect.provide(FileJournal.layerWithFs()), Effect.orDie)
          const entries = loaded.entries as ReadonlyArray<RecordV2.SessionEntry>
          const stored = JSON.stringify(entries)
          const contexts = SessionTree.leavesOf(entries)
            .map((leaf) => Conversation.build(SessionTree.pathTo(entries, leaf.id)))
            .filter((messages) => messages.length > 0)
          // A compaction's summary stands for the messages before it: what no context shows the model is not sent.
          const shown = JSON.stringify(contexts)
          const kept = (text: string) => stored.includes(text) && shown.includes(text)
          const payloads = format.payloads(bytes)
          const expected: Payloads = {
            thinking: payloads.thinking.filter((t) => kept(JSON.stringify(t.signature))),
            redacted: payloads.redacted.filter((d) => kept(d)),
            encrypted: payloads.encrypted.filter((e) => kept(e))
          }
          if (options?.nonEmpty === true) {
            expect(expected).toEqual(payloads)
            expect(payloads.thinking.length + payloads.redacted.length + payloads.encrypted.length).toBeGreaterThan(0)
          }
          const provider = yield* fakeProvider
          const anthropicBodies: Array<any> = []
          const openaiBodies: Array<any> = []
          for (const messages of contexts) {
            const prompt = yield* Codec.toPrompt(messages, { blobs: Codec.storeBlobs(loaded) }).pipe(Effect.orDie)
            const send = (model: Layer.Layer<LanguageModel.LanguageModel>) =>
              Effect.flatMap(LanguageModel.LanguageModel, (m) => m.generateText({ prompt })).pipe(Effect.provide(model), Effect.orDie)
            if (expected.thinking.length + expected.redacted.length > 0) {
              provider.reply(json(W.anthropicMessage([{ type: "text", text: "ok" }])))
              yield* send(anthropic(provider.url))
              anthropicBodies.push(JSON.parse(provider.requests.at(-1)!.body))
              // Byte for byte: each payload as JSON text in the body the client sent.
              for (const block of anthropicBodies.at(-1).messages.flatMap((m: any) => m.content)) {
                if (block.type === "thinking") expect(provider.requests.at(-1)!.body).toContain(JSON.stringify(block.signature))
              }
            }
            if (expected.encrypted.length > 0) {
              provider.reply(json(W.openaiResponse([{ type: "message", id: "msg_ok", text: "ok" }])))
              yield* send(openai(provider.url))
              openaiBodies.push(JSON.parse(provider.requests.at(-1)!.body))
            }
          }
          const sent = sentBack(anthropicBodies, openaiBodies)
          const key = (t: { readonly thinking: string; readonly signature: string }) => JSON.stringify([t.thinking, t.signature])
          const sentThinking = new Set(sent.thinking.map(key))
          for (const t of expected.thinking) expect(sentThinking.has(key(t)), `thinking signed ${t.signature.slice(0, 24)}…`).toBe(true)
          for (const d of expected.redacted) expect(sent.redacted, "redacted thinking").toContain(d)
          for (const e of expected.encrypted) expect(sent.encrypted, "encrypted reasoning").toContain(e)
        }).pipe(Effect.scoped), 120_000)
    }
  })
}

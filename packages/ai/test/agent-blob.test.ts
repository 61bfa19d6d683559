/**
 * An image stored as a blob reaches the model as its bytes: `Agent.send` with an image over
 * 65,536 bytes stores it as a blob of the session (the entry holds only its reference), and
 * every later prompt reads it back from the session's store, on memory and on files. A blob
 * whose bytes no longer match their hash fails the step with the store's error before the model
 * is called.
 */
import type * as Prompt from "@effect/ai/Prompt"
import { describe, expect, it } from "@effect/vitest"
import { Ids, MemoryJournal, type Record, type RecordV2, SessionStore, SessionTree } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { Agent } from "../src/index.js"
import { scripted, text } from "./support/scripted.js"

/** 70,000 bytes that are not all alike, so a lost or shifted byte shows. */
const IMAGE = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 31 + (i >> 8)) & 0xff)
const REF = `sha256:${createHash("sha256").update(IMAGE).digest("hex")}`

const question: ReadonlyArray<RecordV2.UserPart> = [
  { type: "text", text: "What is in this picture?" },
  { type: "file", mediaType: "image/png", name: "shot.png", data: { base64: Buffer.from(IMAGE).toString("base64") } }
]

/** The file parts of a prompt's user messages. */
const filesOf = (prompt: Prompt.Prompt): ReadonlyArray<Prompt.FilePart> =>
  prompt.content.flatMap((message) =>
    message.role === "user" ? message.content.filter((part): part is Prompt.FilePart => part.type === "file") : []
  )

const bytesOf = (data: Prompt.FilePart["data"]): Uint8Array => {
  if (!(data instanceof Uint8Array)) throw new Error(`file data is not bytes: ${String(data)}`)
  return data
}

const userFile = (entry: Record.Entry): RecordV2.FilePart =>
  ((entry as RecordV2.MessageEntry).message as RecordV2.UserMessage).content.find((part) => part.type === "file") as RecordV2.FilePart

const twoTurns = <E>(layer: (model: Layer.Layer<any>) => Layer.Layer<SessionTree.SessionTree, E>) => {
  const script = scripted([text("A test pattern."), text("Still a test pattern.")])
  return Effect.gen(function*() {
    const tree = yield* SessionTree.SessionTree
    const agent = yield* Agent.make()
    const first = yield* agent.send(question)
    yield* agent.send("And now?")
    // The entry holds the reference only; the store holds the bytes.
    expect(userFile(first[0]!).data).toEqual({ blob: REF, size: IMAGE.length })
    expect(yield* tree.store.blob(REF)).toEqual(IMAGE)
    expect(script.prompts).toHaveLength(2)
    for (const prompt of script.prompts) {
      const files = filesOf(prompt)
      expect(files).toHaveLength(1)
      expect(files[0]!.mediaType).toBe("image/png")
      expect(bytesOf(files[0]!.data)).toEqual(IMAGE)
    }
  }).pipe(Effect.provide(Layer.merge(layer(script.layer), script.layer)))
}

const memorySession = () =>
  SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerCreate("s")),
    Layer.provide(MemoryJournal.layer),
    Layer.provideMerge(Ids.layerDeterministic),
    Layer.orDie
  )

const fileSession = (file: string) =>
  SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerOpen(file)),
    Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)),
    Layer.orDie
  )

const tempDir = () => NFS.mkdtempSync(Path.join(OS.tmpdir(), "st-agent-blob-"))

describe("the agent and blobs", () => {
  it.effect("memory: an image over 64 KiB is stored as a blob and sent to the model as its bytes", () => twoTurns(() => memorySession()))

  it.live("files: an image over 64 KiB is stored as a blob and sent as its bytes, also after a reload", () => {
    const dir = tempDir()
    const file = Path.join(dir, "s.jsonl")
    return Effect.gen(function*() {
      yield* twoTurns(() => fileSession(file))
      expect(NFS.readdirSync(`${file}.blobs`)).toEqual([REF.slice("sha256:".length)])
      expect(NFS.readFileSync(file, "utf8")).not.toContain(Buffer.from(IMAGE).toString("base64").slice(0, 200))
      // A new store over the same file reads the blob from disk for the next prompt.
      const again = scripted([text("Yes.")])
      yield* Effect.flatMap(Agent.make(), (agent) => agent.send("Sure?")).pipe(
        Effect.provide(Layer.merge(fileSession(file), again.layer))
      )
      expect(bytesOf(filesOf(again.prompts[0]!)[0]!.data)).toEqual(IMAGE)
    }).pipe(Effect.ensuring(Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))))
  })

  it.live("files: a blob whose bytes changed fails the step with SESSION_BLOB_CORRUPT, the model never called", () => {
    const dir = tempDir()
    const file = Path.join(dir, "s.jsonl")
    return Effect.gen(function*() {
      yield* twoTurns(() => fileSession(file))
      const blob = Path.join(`${file}.blobs`, REF.slice("sha256:".length))
      const changed = Buffer.from(IMAGE)
      changed[1234] = changed[1234]! ^ 0xff
      NFS.chmodSync(blob, 0o600)
      NFS.writeFileSync(blob, changed)
      const never = scripted([])
      const error = yield* Effect.flip(
        Effect.flatMap(Agent.make(), (agent) => agent.send("Sure?")).pipe(Effect.provide(Layer.merge(fileSession(file), never.layer)))
      )
      expect(error).toMatchObject({ code: "SESSION_BLOB_CORRUPT" })
      expect(never.prompts).toHaveLength(0)
    }).pipe(Effect.ensuring(Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))))
  })
})

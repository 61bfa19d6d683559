/**
 * A version-2 session that holds blobs, written through a real store (memory): two PNG images
 * over 65,536 bytes, the first sent twice, and a PDF over the same size, so the store turns each
 * into a blob and the entries hold only their references. The store's `blob` reads them back,
 * hash checked; `blobs` is the storage behind it, for tests that change a blob by hand.
 */
import { Ids, MemoryJournal, type Record, SessionStore } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createHash } from "node:crypto"
import { png } from "./png.js"

export const IMAGE_A = png(160, 150, 1)
export const IMAGE_B = png(150, 160, 2)
export const PDF = Uint8Array.from({ length: 70_000 }, (_, i) => (Math.imul(i + 1, 2654435761) >>> 13) & 0xff)

export const refOf = (bytes: Uint8Array): string => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
export const base64Of = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

export interface BlobSession {
  readonly header: Record.Header
  readonly entries: ReadonlyArray<Record.Entry>
  readonly blob: (ref: string) => Effect.Effect<Uint8Array, import("@session-tree/core").SessionError>
  /** The memory backend's blob storage: session location → hash → bytes. */
  readonly blobs: MemoryJournal.BlobStorage
}

const file = (mediaType: string, name: string, bytes: Uint8Array) => ({ type: "file", mediaType, name, data: bytes })

/** The session: a user message with text, image A and the PDF; an answer; a user message with image A again and image B. */
export const blobSession = (): Promise<BlobSession> => {
  const blobs: MemoryJournal.BlobStorage = new Map()
  return Effect.runPromise(
    Effect.scoped(Effect.gen(function*() {
      const store = yield* SessionStore.create("with-blobs")
      const first = yield* store.append(null, {
        role: "user",
        id: "u1",
        content: [{ type: "text", text: "Two screenshots and the report." }, file("image/png", "a.png", IMAGE_A), file("application/pdf", "report.pdf", PDF)]
      })
      const answer = yield* store.append(first.id, { role: "assistant", id: "a1", content: [{ type: "text", text: "Send the first again." }] })
      yield* store.append(answer.id, {
        role: "user",
        id: "u2",
        content: [file("image/png", "a again.png", IMAGE_A), file("image/png", "b.png", IMAGE_B)]
      })
      // The store outlives this scope only as its records and its blob reader, which needs no scope.
      return { header: store.header, entries: store.entries, blob: store.blob, blobs }
    })).pipe(Effect.provide(Layer.merge(MemoryJournal.layerStorage(new Map(), blobs), Ids.layerDeterministic)))
  )
}

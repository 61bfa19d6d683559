/**
 * An import stores file data over 65,536 bytes as a blob, as an append does, on every backend:
 * here the memory backend (the file and PostgreSQL backends in the CLI's import tests).
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as Layer from "effect/Layer"
import { MAX_INLINE_FILE_BYTES } from "../src/Codec.js"
import * as Ids from "../src/Ids.js"
import * as MemoryJournal from "../src/MemoryJournal.js"
import * as RecordV2 from "../src/RecordV2.js"
import * as Sessions from "../src/Sessions.js"

const ts = "2026-01-02T03:04:05.000Z"
const image = (size: number, fill: number) => Encoding.encodeBase64(new Uint8Array(size).fill(fill))
const entry = (id: string, parentId: string | null, data: string): RecordV2.SessionEntry => ({
  type: "entry",
  version: 2,
  id,
  parentId,
  timestamp: ts,
  kind: "message",
  message: { role: "user", id, content: [{ type: "text", text: "look" }, { type: "file", mediaType: "image/png", data: { base64: data } }] }
})

describe("import and blobs", () => {
  it.effect("data over the inline size becomes a blob of the session; data up to it stays inline", () =>
    Effect.gen(function*() {
      const sessions = yield* Sessions.Sessions
      const large = image(MAX_INLINE_FILE_BYTES + 1, 7)
      const small = image(MAX_INLINE_FILE_BYTES, 8)
      yield* sessions.import({ header: { type: "session", version: 2, id: "s", timestamp: ts }, entries: [entry("a", null, large), entry("b", "a", small), entry("c", "b", large)] }, "m")
      const loaded = yield* sessions.read("m")
      const files = loaded.entries.flatMap((e) => e.version === 2 && e.kind === "message" && e.message.role === "user" ? e.message.content.filter((p) => p.type === "file") : [])
      const [a, b, c] = files.map((p) => p.type === "file" ? p.data : undefined)
      expect(a).toMatchObject({ size: MAX_INLINE_FILE_BYTES + 1 })
      expect(c).toEqual(a)
      expect(b).toEqual({ base64: small })
      const bytes = yield* loaded.blob((a as { blob: string }).blob)
      expect(Encoding.encodeBase64(bytes)).toBe(large)
    }).pipe(Effect.provide(Layer.provideMerge(Sessions.layer, Layer.merge(MemoryJournal.layer, Ids.layerDeterministic)))))
})

/**
 * Blobs in the views. The HTML page draws an image blob from a `data:` URL of its bytes, read
 * once through the reader it is given, so the page stays self-contained; a blob that is not a
 * raster image is named, never read. Markdown and the text views name a blob on one line (media
 * type, size, the start of its hash). A blob the reader cannot give, or gives at another size,
 * fails the view with a typed error: no view leaves a silent gap.
 */
import { describe, expect, it } from "@effect/vitest"
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Html from "../src/Html.js"
import * as Markdown from "../src/Markdown.js"
import * as Text from "../src/Text.js"
import { base64Of, blobSession, IMAGE_A, IMAGE_B, PDF, refOf } from "./support/blobs.js"

const A = refOf(IMAGE_A)
const B = refOf(IMAGE_B)
const P = refOf(PDF)

/** A reader over `read` that records every reference asked for. */
const counting = (read: Html.BlobReader) => {
  const asked: Array<string> = []
  return { asked, read: (ref: string) => Effect.suspend(() => (asked.push(ref), read(ref))) }
}

const occurrences = (text: string, part: string): number => text.split(part).length - 1

const failure = <A>(effect: Effect.Effect<A, SessionError>) => Effect.runPromise(Effect.flip(effect))

describe("blobs in the HTML page", () => {
  it("draws each image blob from a data: URL of its bytes, reading each blob once; a PDF blob is named, not read", async () => {
    const session = await blobSession()
    const reader = counting(session.blob)
    const page = await Effect.runPromise(Html.render(session.header, session.entries, { blobs: reader.read }))
    expect(reader.asked).toEqual([A, B])
    const a = `<img class="img" alt="" src="data:image/png;base64,${base64Of(IMAGE_A)}">`
    const b = `<img class="img" alt="" src="data:image/png;base64,${base64Of(IMAGE_B)}">`
    // Image A is sent twice: drawn in both messages.
    expect(occurrences(page, a)).toBe(2)
    expect(occurrences(page, b)).toBe(1)
    expect(page).toContain(`<div class="fd"><span>blob</span> <span class="cid">${P}</span></div>`)
    expect(page).not.toContain(base64Of(PDF).slice(0, 64))
  })

  it("without a reader names every blob and draws none", async () => {
    const session = await blobSession()
    const page = await Effect.runPromise(Html.render(session.header, session.entries))
    expect(page).not.toContain("data:image/png")
    expect(occurrences(page, `<span class="cid">${A}</span>`)).toBe(2)
    expect(page).toContain(`<span class="cid">${B}</span>`)
  })

  it("fails with the reader's error for a missing or corrupt blob, and SESSION_BLOB_MISSING for one of another size", async () => {
    const session = await blobSession()
    const render = (read: Html.BlobReader) => Html.render(session.header, session.entries, { blobs: read })
    const missing = await failure(render((ref) => ref === B ? Effect.fail(sessionError("SESSION_BLOB_MISSING", "gone")) : session.blob(ref)))
    expect(missing.code).toBe("SESSION_BLOB_MISSING")
    const short = await failure(render((ref) => Effect.map(session.blob(ref), (bytes) => ref === B ? bytes.subarray(1) : bytes)))
    expect(short.code).toBe("SESSION_BLOB_MISSING")
    expect(short.reason).toContain(B)
    // A blob changed behind the store's back: the store's own hash check refuses it.
    const stored = [...session.blobs.values()][0]!
    const bytes = stored.get(B.slice("sha256:".length))!
    bytes[100] = bytes[100]! ^ 1
    const corrupt = await failure(render(session.blob))
    expect(corrupt.code).toBe("SESSION_BLOB_CORRUPT")
  })
})

describe("blobs in Markdown and the text views", () => {
  it("Markdown names each blob on one line: media type, size, the start of its hash (verbose); never its bytes", async () => {
    const session = await blobSession()
    const reader = counting(session.blob)
    const md = await Effect.runPromise(Markdown.render(session.header, session.entries, { blobs: reader.read, verbose: true }))
    // Every blob on the path is read, so a missing one fails the export rather than being named.
    expect(reader.asked).toEqual([A, P, B])
    expect(md).toContain(`File \`a.png\` · \`image/png\` · ${IMAGE_A.length.toLocaleString("en-US")} bytes · blob \`${A.slice(0, 19)}…\``)
    expect(md).toContain(`File \`a again.png\` · \`image/png\` · ${IMAGE_A.length.toLocaleString("en-US")} bytes · blob \`${A.slice(0, 19)}…\``)
    expect(md).toContain(`File \`report.pdf\` · \`application/pdf\` · 70,000 bytes · blob \`${P.slice(0, 19)}…\``)
    expect(md).not.toContain("data:")
    expect(md).not.toContain(A)
  })

  it("Markdown fails with SESSION_BLOB_MISSING when a blob on the path cannot be read", async () => {
    const session = await blobSession()
    const error = await failure(Markdown.render(session.header, session.entries, {
      blobs: (ref) => ref === P ? Effect.fail(sessionError("SESSION_BLOB_MISSING", `no blob ${ref}`)) : session.blob(ref)
    }))
    expect(error.code).toBe("SESSION_BLOB_MISSING")
    // Off the path, a blob is not read: the path to the answer holds image A and the PDF only.
    const answer = session.entries[1]!.id
    const asked: Array<string> = []
    await Effect.runPromise(Markdown.render(session.header, session.entries, { leaf: answer, blobs: (ref) => (asked.push(ref), session.blob(ref)) }))
    expect(asked).toEqual([A, P])
  })

  it("log names each blob by its size and the start of its hash", async () => {
    const session = await blobSession()
    const lines = await Effect.runPromise(Text.renderLog(session.entries))
    expect(lines[0]).toContain(`file image/png "a.png" blob ${IMAGE_A.length.toLocaleString("en-US")} bytes ${A.slice(0, 19)}`)
    expect(lines[0]).toContain(`file application/pdf "report.pdf" blob 70,000 bytes ${P.slice(0, 19)}`)
    expect(lines[2]).toContain(`file image/png "b.png" blob ${IMAGE_B.length.toLocaleString("en-US")} bytes ${B.slice(0, 19)}`)
  })
})

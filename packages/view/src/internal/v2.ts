/**
 * What the views read from version-2 records beyond one entry: the labels in
 * force, the session's title, a message's text, and which file data may be shown
 * as an image or a link. Every value here is still untrusted text; each view
 * escapes it its own way.
 */
import * as Record from "@session-tree/core/Record"
import type { Entry } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Encoding from "effect/Encoding"
import * as Subagents from "@session-tree/core/Subagents"

/**
 * The label of each labelled entry: the newest label entry for a target wins, in
 * commit order over the whole session (a label may be set on any branch), and a
 * `null` label removes it.
 */
export const labelsOf = (entries: ReadonlyArray<Entry>): ReadonlyMap<string, string> => {
  const labels = new Map<string, string>()
  for (const entry of entries) {
    if (entry.version !== 2 || entry.kind !== "label") continue
    if (entry.label === null) labels.delete(entry.targetId)
    else labels.set(entry.targetId, entry.label)
  }
  return labels
}

/** The session's title: its newest title entry in commit order, if any. */
export const titleOf = (entries: ReadonlyArray<Entry>): string | undefined => {
  for (let i = entries.length - 1; i >= 0; i--) {
    const entry = entries[i]!
    if (entry.version === 2 && entry.kind === "title") return entry.title
  }
  return undefined
}

/** The text parts of a message, one after another (a line break between two): the core's reading. */
export const textOf: (message: V2.Message) => string = Record.textOf

// Raster formats a browser draws without running anything; SVG is left out, as it can hold script.
const IMAGE = /^image\/(?:png|jpeg|gif|webp|avif|bmp)$/
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Whether a file of this media type may be drawn inline: a raster image type, spelled exactly as listed. */
export const isRasterImage = (mediaType: string): boolean => IMAGE.test(mediaType)

/**
 * The `data:` URL of a file that can be shown inline: base64 data of a raster
 * image type, spelled exactly as listed (so the media type adds nothing to the
 * URL but those characters), or a blob of such a type whose bytes `blobs` holds
 * (as base64, by reference); undefined for anything else.
 */
export const inlineImage = (part: V2.FilePart, blobs?: ReadonlyMap<string, string>): string | undefined => {
  if (!IMAGE.test(part.mediaType)) return undefined
  const base64 = "base64" in part.data ? part.data.base64 : "blob" in part.data ? blobs?.get(part.data.blob) : undefined
  return base64 !== undefined && BASE64.test(base64) ? `data:${part.mediaType};base64,${base64}` : undefined
}

/**
 * Reads a blob of the session by its reference (`"sha256:…"`), as `SessionStore.blob` and
 * `Loaded.blob` do: the bytes checked against their hash, SESSION_BLOB_MISSING when the
 * session holds no such blob.
 */
export type BlobReader = (ref: string) => Effect.Effect<Uint8Array, SessionError>

/** A blob a view names: its reference, its size and the media type of the first part holding it. */
export interface BlobShown {
  readonly ref: string
  readonly size: number
  readonly mediaType: string
}

/** The blobs the file parts of `entries`' messages refer to, each once, in order; with `images`, raster images only. */
export const blobsOf = (entries: ReadonlyArray<Entry>, images: boolean): ReadonlyArray<BlobShown> => {
  const seen = new Map<string, BlobShown>()
  for (const entry of entries) {
    if (entry.version !== 2 || entry.kind !== "message" || entry.message.role === "system") continue
    for (const part of entry.message.content) {
      if (part.type !== "file" || !("blob" in part.data) || seen.has(part.data.blob)) continue
      if (images && !IMAGE.test(part.mediaType)) continue
      seen.set(part.data.blob, { ref: part.data.blob, size: part.data.size, mediaType: part.mediaType })
    }
  }
  return [...seen.values()]
}

/**
 * The bytes of each blob as base64, by reference, read one at a time through `read`. A blob
 * the reader cannot give fails the view with the reader's error, and bytes of another length
 * than the reference says are SESSION_BLOB_MISSING, as a load says of a short blob: a view never
 * leaves a gap where a blob should be.
 */
export const readBlobs = (blobs: ReadonlyArray<BlobShown>, read: BlobReader): Effect.Effect<ReadonlyMap<string, string>, SessionError> =>
  Effect.map(
    Effect.forEach(blobs, (blob) =>
      Effect.flatMap(read(blob.ref), (bytes) =>
        bytes.length === blob.size
          ? Effect.succeed([blob.ref, Encoding.encodeBase64(bytes)] as const)
          : Effect.fail(sessionError("SESSION_BLOB_MISSING", `the blob ${blob.ref} holds ${bytes.length} bytes, not the ${blob.size} its reference says`)))),
    (pairs) => new Map(pairs)
  )

/** `sha256:` and the first 12 hexadecimal digits of a blob's name, enough to tell blobs apart on a line. */
export const blobPrefix = (ref: string): string => ref.slice(0, "sha256:".length + 12)

// A URL a link may name: http or https, then only the characters RFC 3986 allows (no space,
// quote, angle bracket, backslash or control), so it cannot leave an attribute or a link.
const WEB = /^https?:\/\/[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/i

/** Whether `url` may be shown as a link: an http or https URL of plain URL characters only. */
export const isWebUrl = (url: string): boolean => WEB.test(url)

/** The bytes a file holds: decoded from base64, or as its blob says; undefined for a URL. */
export const sizeOf = (data: V2.FileData): number | undefined => {
  if ("base64" in data) {
    const padding = data.base64.endsWith("==") ? 2 : data.base64.endsWith("=") ? 1 : 0
    return (data.base64.length / 4) * 3 - padding
  }
  return "blob" in data ? data.size : undefined
}

/** The keys of an `options` object, the only part of a provider's payload the views show. */
export const optionKeys = (value: { readonly options?: V2.Opaque }): ReadonlyArray<string> =>
  value.options === undefined ? [] : Object.keys(value.options)

/**
 * What a link entry between a session and a subagent's says (`Subagents`): which way it points,
 * the other session, and the tool call that started the subagent; undefined for any other entry.
 */
export const linkOf = (
  entry: V2.SessionEntry
): { readonly to: "subagent" | "parent"; readonly session: string; readonly toolCallId: string | undefined } | undefined => {
  const [child] = Subagents.subagentsOf([entry])
  if (child !== undefined) return { to: "subagent", session: child.session, toolCallId: child.toolCallId }
  const parent = Subagents.parentOf([entry])
  return parent === undefined ? undefined : { to: "parent", session: parent.session, toolCallId: parent.toolCallId }
}

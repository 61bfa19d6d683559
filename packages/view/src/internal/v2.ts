/**
 * What the views read from version-2 records beyond one entry: the labels in
 * force, the session's title, a message's text, and which file data may be shown
 * as an image or a link. Every value here is still untrusted text; each view
 * escapes it its own way.
 */
import * as Record from "@session-tree/core/Record"
import type { Entry } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"

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

/**
 * The `data:` URL of a file that can be shown inline: base64 data of a raster
 * image type, spelled exactly as listed (so the media type adds nothing to the
 * URL but those characters); undefined for anything else.
 */
export const inlineImage = (part: V2.FilePart): string | undefined =>
  "base64" in part.data && IMAGE.test(part.mediaType) && BASE64.test(part.data.base64)
    ? `data:${part.mediaType};base64,${part.data.base64}`
    : undefined

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

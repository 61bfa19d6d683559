/**
 * The self-contained export (`export --format jsonl --inline-blobs`) and its reading back by
 * `import`: the session's canonical lines with the data of every file part held in a blob
 * written inline as `{"base64":…}`, so one file carries the whole session. Reading it back
 * turns each inline data of more than 65,536 bytes (decoded) into a blob again, as an append
 * would, so the session stored is line for line the one exported.
 */
import { encodeRecord, MAX_INLINE_FILE_BYTES } from "@session-tree/core/Codec"
import type { Entry, Header } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"

type Json = { [key: string]: unknown }

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value)

/** `entry` with the data of each of its file parts changed by `f` (undefined: left as it is); key order kept. */
const mapFileData = (entry: Json, f: (data: Json) => Json | undefined): Json => {
  const message = entry["message"]
  if (entry["kind"] !== "message" || !isObject(message) || !Array.isArray(message["content"])) return entry
  let changed = false
  const content = (message["content"] as Array<unknown>).map((part) => {
    if (!isObject(part) || part["type"] !== "file" || !isObject(part["data"])) return part
    const data = f(part["data"])
    if (data === undefined) return part
    changed = true
    return { ...part, data }
  })
  return changed ? { ...entry, message: { ...message, content } } : entry
}

/** The blob references of `entry`'s file parts, in order. */
const blobRefsOf = (entry: Entry): ReadonlyArray<string> => {
  const refs: Array<string> = []
  mapFileData(entry as unknown as Json, (data) => {
    if (typeof data["blob"] === "string") refs.push(data["blob"])
    return undefined
  })
  return refs
}

/**
 * The bytes of every blob the entries refer to, by reference, read through `blob` (the session's
 * own reader, hash checked): what an import of a session file needs besides its lines, since the
 * blobs live beside the file, not in it.
 *
 * @since 0.1.0
 * @category blobs
 */
export const blobsOf = (
  entries: ReadonlyArray<Entry>,
  blob: (ref: string) => Effect.Effect<Uint8Array, SessionError>
): Effect.Effect<ReadonlyMap<string, Uint8Array>, SessionError> =>
  Effect.gen(function*() {
    const bytes = new Map<string, Uint8Array>()
    for (const entry of entries) {
      for (const ref of blobRefsOf(entry)) if (!bytes.has(ref)) bytes.set(ref, yield* blob(ref))
    }
    return bytes
  })

/**
 * The session's lines with every blob's bytes inline, read through `blob` (the session's own
 * reader, hash checked), each blob read once however often it is referred to.
 *
 * @since 0.1.0
 * @category blobs
 */
export const inlineBlobs = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  blob: (ref: string) => Effect.Effect<Uint8Array, SessionError>
): Effect.Effect<string, SessionError> =>
  Effect.gen(function*() {
    const read = new Map<string, string>()
    const lines = [encodeRecord(header)]
    for (const entry of entries) {
      const refs = blobRefsOf(entry)
      if (refs.length === 0) {
        lines.push(encodeRecord(entry))
        continue
      }
      for (const ref of refs) {
        if (!read.has(ref)) read.set(ref, Buffer.from(yield* blob(ref)).toString("base64"))
      }
      lines.push(JSON.stringify(mapFileData(entry as unknown as Json, (data) =>
        typeof data["blob"] === "string" ? { base64: read.get(data["blob"])! } : undefined)))
    }
    return lines.map((line) => `${line}\n`).join("")
  })

/**
 * What reading a self-contained export gives: its lines with blob references again, and the blobs' bytes by reference.
 *
 * @since 0.1.0
 * @category models
 */
export interface Unpacked {
  readonly lines: ReadonlyArray<string>
  readonly blobs: ReadonlyMap<string, Uint8Array>
}

const CANONICAL_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/**
 * The lines of `text` with each inline file data of more than 65,536 bytes (canonical base64)
 * replaced by its blob reference, and those bytes; undefined when no line holds such data (an
 * ordinary session file, left to the ordinary reading). A line that is not a JSON object is
 * kept as it is, for the session's own decoding to judge.
 *
 * @since 0.1.0
 * @category blobs
 */
export const unpack = (text: string): Unpacked | undefined => {
  const lines = text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n")
  const blobs = new Map<string, Uint8Array>()
  const out = lines.map((line, i) => {
    if (i === 0 || !line.includes("\"base64\":")) return line
    let entry: unknown
    try {
      entry = JSON.parse(line)
    } catch {
      return line
    }
    if (!isObject(entry)) return line
    const mapped = mapFileData(entry, (data) => {
      const base64 = data["base64"]
      if (Object.keys(data).length !== 1 || typeof base64 !== "string" || !CANONICAL_BASE64.test(base64)) return undefined
      const bytes = Buffer.from(base64, "base64")
      if (bytes.length <= MAX_INLINE_FILE_BYTES) return undefined
      const ref = `sha256:${createHash("sha256").update(bytes).digest("hex")}`
      blobs.set(ref, new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length))
      return { blob: ref, size: bytes.length }
    })
    return mapped === entry ? line : JSON.stringify(mapped)
  })
  return blobs.size === 0 ? undefined : { lines: out, blobs }
}

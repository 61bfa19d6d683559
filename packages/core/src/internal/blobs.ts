/**
 * File data that becomes a blob on append (`docs/format.md`, "Blobs"): data over
 * `MAX_INLINE_FILE_BYTES` decoded, given as canonical base64 or as bytes, is taken out of the
 * message before its snapshot, named by its SHA-256, and replaced by its reference; bytes up to
 * that size become inline base64. Like the snapshot, this reads the caller's value by property
 * descriptor and never runs caller code: anything not plainly shaped is left for the snapshot,
 * which then refuses it as it always did.
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import { MAX_BLOB_BYTES, MAX_INLINE_FILE_BYTES } from "../Codec.js"
import { isCanonicalBase64 } from "../RecordV2.js"
import { type CorruptError, sessionError } from "../SessionError.js"
import type { BlobBytes } from "../SessionJournal.js"
import { isProxy } from "./runtime.js"

export type { BlobBytes }

/** A value with its large file data taken out: what the snapshot then copies, and the blobs taken. */
export interface Extracted {
  readonly value: unknown
  readonly blobs: ReadonlyArray<BlobBytes>
}

export type Sha256 = (bytes: Uint8Array) => string

/** `sha256:` and 64 lowercase hexadecimal digits. */
export const BLOB_REF = /^sha256:[0-9a-f]{64}$/

const dataOf = (value: object, key: string | number): PropertyDescriptor | undefined => {
  const d = Object.getOwnPropertyDescriptor(value, key)
  return d !== undefined && "value" in d ? d : undefined
}

const isPlainObject = (value: unknown): value is object => {
  if (typeof value !== "object" || value === null || isProxy(value) || Array.isArray(value)) return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

const isPlainArray = (value: unknown): value is ReadonlyArray<unknown> =>
  typeof value === "object" && value !== null && !isProxy(value) && Array.isArray(value) &&
  Object.getPrototypeOf(value) === Array.prototype

/** The bytes of canonical base64 over the inline size, else undefined (left as it is). */
const largeBase64 = (data: object): Either.Either<Uint8Array | undefined, CorruptError> => {
  const keys = Reflect.ownKeys(data)
  if (keys.length !== 1 || keys[0] !== "base64") return KEEP
  const text = dataOf(data, "base64")?.value
  if (typeof text !== "string" || !isCanonicalBase64(text)) return KEEP
  const size = (text.length / 4) * 3 - (text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0)
  if (size <= MAX_INLINE_FILE_BYTES) return KEEP
  if (size > MAX_BLOB_BYTES) return tooLarge(size)
  const decoded = Encoding.decodeBase64(text)
  return Either.isRight(decoded) ? Either.right(decoded.right) : KEEP
}

/** Data left as the caller gave it, for the snapshot to judge. */
const KEEP: Either.Either<undefined> = Either.right(undefined)

const tooLarge = (size: number): Either.Either<never, CorruptError> =>
  Either.left(sessionError("SESSION_FILE_TOO_LARGE", `the file data holds ${size} bytes, more than the ${MAX_BLOB_BYTES} a blob may hold`))

/** A private copy of the caller's bytes; undefined when they cannot be read (a detached buffer). */
const copyBytes = (data: Uint8Array): Uint8Array | undefined => {
  try {
    return new Uint8Array(data)
  } catch {
    return undefined
  }
}

/** The new `data` of a file part, with the blob it makes, or undefined when `data` stays as given. */
const fileData = (
  data: unknown,
  sha256: Sha256
): Either.Either<{ readonly data: object; readonly blob?: BlobBytes } | undefined, CorruptError> => {
  if (typeof data !== "object" || data === null || isProxy(data)) return KEEP
  let bytes: Uint8Array | undefined
  if (data instanceof Uint8Array) {
    bytes = copyBytes(data)
    if (bytes === undefined) return KEEP
    if (bytes.length > MAX_BLOB_BYTES) return tooLarge(bytes.length)
    if (bytes.length <= MAX_INLINE_FILE_BYTES) return Either.right({ data: { base64: Encoding.encodeBase64(bytes) } })
  } else if (isPlainObject(data)) {
    const large = largeBase64(data)
    if (Either.isLeft(large)) return Either.left(large.left)
    if (large.right === undefined) return KEEP
    bytes = large.right
  } else {
    return KEEP
  }
  const hash = sha256(bytes)
  return Either.right({ data: { blob: `sha256:${hash}`, size: bytes.length }, blob: { hash, size: bytes.length, bytes } })
}

/** `value` with its own data property `key` set to `to`, the rest of its own properties as they are. */
const withProperty = (value: object, key: string | number, to: unknown): object => {
  const copy: object = Array.isArray(value) ? new Array((value as ReadonlyArray<unknown>).length) : Object.create(Object.getPrototypeOf(value))
  for (const k of Reflect.ownKeys(value)) {
    if (Array.isArray(value) && k === "length") continue
    const d = Object.getOwnPropertyDescriptor(value, k)!
    Object.defineProperty(copy, k, k === String(key) ? { ...d, value: to } : d)
  }
  return copy
}

/**
 * A message with each file part's large data replaced by its blob reference, and small bytes by
 * inline base64; the message itself when nothing changes. The caller's value is never changed.
 */
export const extractMessage = (message: unknown, sha256: Sha256): Either.Either<Extracted, CorruptError> => {
  const unchanged = Either.right<Extracted>({ value: message, blobs: [] })
  if (!isPlainObject(message)) return unchanged
  const contentProperty = dataOf(message, "content")
  const content: unknown = contentProperty?.value
  if (!isPlainArray(content)) return unchanged
  let parts: object = content
  const blobs: Array<BlobBytes> = []
  for (let i = 0; i < content.length; i++) {
    const part: unknown = dataOf(content, i)?.value
    if (!isPlainObject(part) || dataOf(part, "type")?.value !== "file") continue
    const data = dataOf(part, "data")
    if (data === undefined) continue
    const replaced = fileData(data.value, sha256)
    if (Either.isLeft(replaced)) return Either.left(replaced.left)
    if (replaced.right === undefined) continue
    if (replaced.right.blob !== undefined) blobs.push(replaced.right.blob)
    parts = withProperty(parts, i, withProperty(part, "data", replaced.right.data))
  }
  return parts === content ? unchanged : Either.right({ value: withProperty(message, "content", parts), blobs })
}

/** `extractMessage` for the message of an entry body (`{ kind: "message", message }`); other bodies stay as they are. */
export const extractBody = (body: unknown, sha256: Sha256): Either.Either<Extracted, CorruptError> => {
  const unchanged = Either.right<Extracted>({ value: body, blobs: [] })
  if (!isPlainObject(body) || dataOf(body, "kind")?.value !== "message") return unchanged
  const message = dataOf(body, "message")
  if (message === undefined) return unchanged
  return Either.flatMap(extractMessage(message.value, sha256), (extracted) =>
    extracted.value === message.value
      ? unchanged
      : Either.right({ value: withProperty(body, "message", extracted.value), blobs: extracted.blobs }))
}

/**
 * Blobs taken out of a value the core copied itself (the tree copies an append at call time and
 * hands the copy to its store later): the store finds them here by the copy, which no caller holds.
 */
const carried = new WeakMap<object, ReadonlyArray<BlobBytes>>()

/** `value`, a fresh copy made by the core, with the blobs taken out of what it was copied from. */
export const carry = <A>(value: A, blobs: ReadonlyArray<BlobBytes>): A => {
  if (blobs.length > 0 && typeof value === "object" && value !== null) carried.set(value, blobs)
  return value
}

/** The blobs `carry` left with `value`, if any. */
export const carriedBy = (value: unknown): ReadonlyArray<BlobBytes> =>
  (typeof value === "object" && value !== null ? carried.get(value) : undefined) ?? []

/**
 * Whole entries (an import, a sync) with each message's file data over the inline size taken out
 * as blobs, as an append takes it out: so a session holds the same records whichever way its
 * entries arrived, on every backend. The entries given when nothing changes.
 */
export const extractEntries = <E extends { readonly version: number }>(
  entries: ReadonlyArray<E>,
  sha256: Sha256
): Either.Either<{ readonly entries: ReadonlyArray<E>; readonly blobs: ReadonlyArray<BlobBytes> }, CorruptError> => {
  let out: Array<E> | undefined
  const blobs: Array<BlobBytes> = []
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!
    const extracted = extractBody(entry, sha256)
    if (Either.isLeft(extracted)) return Either.left(extracted.left)
    if (extracted.right.value === entry) continue
    out ??= entries.slice()
    out[i] = extracted.right.value as E
    blobs.push(...extracted.right.blobs)
  }
  return Either.right({ entries: out ?? entries, blobs })
}

/**
 * A deep copy of caller input that never runs caller code: own data properties
 * are read by descriptor, so getters, proxies, class instances, cycles and
 * anything JSON cannot carry are refused instead of being called or dropped.
 */
import { CAPS_V2, MAX_LINE_BYTES } from "../Codec.js"
import { type AnyMessage, type Message, decodeCanonicalMessage, decodeMessage, deepFreeze } from "../Record.js"
import * as V2 from "../RecordV2.js"
import * as Either from "effect/Either"
import { type CorruptError, sessionError } from "../SessionError.js"
import { MAX_DEPTH } from "../Json.js"
import { isProxy } from "./runtime.js"

/** Why a value was not copied: what is wrong with it, and whether it is only too large. */
export interface Refusal {
  readonly reason: string
  readonly tooLarge?: true
}

/** The copy of a value, or why it was not made. */
export type Snapshot = Either.Either<unknown, Refusal>

const refuse = (reason: string): Snapshot => Either.left({ reason })

/** The error of a refused snapshot: over the line's cap, or not data of the kind `code` names. */
const refused = (refusal: Refusal, code: "SESSION_INVALID_MESSAGE" | "SESSION_INVALID_RECORD"): Either.Either<never, CorruptError> =>
  Either.left(sessionError(refusal.tooLarge ? "SESSION_LINE_TOO_LONG" : code, refusal.reason))

/** The objects enclosing a value, innermost first: a cycle is an object that encloses itself. */
interface Enclosing {
  readonly value: object
  readonly outer: Enclosing | undefined
}

/**
 * Copies a JSON-shaped value whose root sits at nesting depth `rootDepth` of its
 * record. A cycle is refused; a value reached twice (shared, not cyclic) is copied
 * twice, as JSON writes it. `budget` is a lower bound of the bytes the value's
 * JSON takes and every value visited costs at least one, so neither a large value
 * nor heavy sharing can make the copy do more than about a line's worth of work:
 * past `lineBytes` (the version's line cap) the copy stops as too large.
 */
export const snapshotJson = (input: unknown, rootDepth: number, lineBytes: number = MAX_LINE_BYTES): Snapshot => {
  let budget = lineBytes
  const root: { value: unknown } = { value: undefined }
  // Explicit stack of pending copies: (source, target container, key, depth, enclosing objects).
  const stack: Array<{
    readonly source: unknown
    readonly into: Record<string, unknown> | Array<unknown>
    readonly key: string | number
    readonly depth: number
    readonly outer: Enclosing | undefined
  }> = [
    { source: input, into: root as unknown as Record<string, unknown>, key: "value", depth: rootDepth, outer: undefined }
  ]
  while (stack.length > 0) {
    const { depth, into, key, outer, source } = stack.pop()!
    switch (typeof source) {
      case "string":
        budget -= source.length + 2
        ;(into as Record<string, unknown>)[key] = source
        break
      case "boolean":
        budget -= source ? 4 : 5
        ;(into as Record<string, unknown>)[key] = source
        break
      case "number":
        if (!Number.isFinite(source)) return refuse(`${source} is not a JSON number`)
        budget -= 1
        ;(into as Record<string, unknown>)[key] = source === 0 ? 0 : source
        break
      case "object": {
        if (source === null) {
          budget -= 4
          ;(into as Record<string, unknown>)[key] = null
          break
        }
        // Before anything else touches it: a Proxy's traps are caller code.
        if (isProxy(source)) return refuse("a Proxy is not plain data")
        if (depth > MAX_DEPTH) return refuse(`nesting deeper than ${MAX_DEPTH}`)
        for (let e = outer; e !== undefined; e = e.outer) {
          if (e.value === source) return refuse("the value contains a cycle")
        }
        const isArray = Array.isArray(source)
        const proto = Object.getPrototypeOf(source)
        if (isArray ? proto !== Array.prototype : proto !== Object.prototype && proto !== null) {
          return refuse("only plain objects and arrays can be stored")
        }
        const keys = Reflect.ownKeys(source)
        const target: Record<string, unknown> | Array<unknown> = isArray ? new Array((source as Array<unknown>).length) : {}
        const enclosing: Enclosing = { value: source, outer }
        // Brackets and separators: one per container plus one per member is at most what JSON writes.
        budget -= 1
        for (const k of keys) {
          if (typeof k === "symbol") return refuse("symbol keys cannot be stored")
          const d = Object.getOwnPropertyDescriptor(source, k)!
          if (isArray && k === "length") continue
          if (!("value" in d)) return refuse(`property "${k}" is an accessor`)
          if (!d.enumerable) return refuse(`property "${k}" is not enumerable`)
          if (k === "__proto__") return refuse("a __proto__ key cannot be stored")
          if (isArray && !/^(0|[1-9]\d*)$/.test(k)) return refuse(`array property "${k}" cannot be stored`)
          budget -= isArray ? 1 : k.length + 4
          // Claim the key now so the copy keeps the caller's key order (the stack pops in reverse).
          if (!isArray) (target as Record<string, unknown>)[k] = undefined
          stack.push({ source: d.value, into: target, key: isArray ? Number(k) : k, depth: depth + 1, outer: enclosing })
        }
        if (isArray && keys.length - 1 !== (source as Array<unknown>).length) return refuse("sparse arrays cannot be stored")
        ;(into as Record<string, unknown>)[key] = target
        break
      }
      default:
        return refuse(`a ${typeof source} is not JSON data`)
    }
    if (budget < 0) return Either.left({ reason: `the record would exceed ${lineBytes} bytes`, tooLarge: true })
  }
  return Either.right(root.value)
}

/**
 * Copies and decodes a message without running caller code: a fresh, deeply
 * frozen Message IR value, or the error that refuses it.
 */
export const snapshotMessage = (message: unknown): Either.Either<Message, CorruptError> => {
  const snapshot = snapshotJson(message, 2)
  if (Either.isLeft(snapshot)) {
    return refused(snapshot.left, "SESSION_INVALID_MESSAGE")
  }
  // Messages in schema key order (the usual case) skip the Schema interpreter; it decides the rest.
  const canonical = decodeCanonicalMessage(snapshot.right)
  return canonical !== undefined ? Either.right(deepFreeze(canonical)) : Either.map(decodeMessage(snapshot.right), deepFreeze)
}

/**
 * Copies and decodes a message for a session of `version`: Message IR v1 for version 1; for
 * version 2, Message IR v2, or a Message IR v1 value in its version-2 form (the upgrade).
 */
export const snapshotMessageFor = (message: unknown, version: 1 | 2): Either.Either<AnyMessage, CorruptError> => {
  if (version === 1) return snapshotMessage(message)
  const snapshot = snapshotJson(message, 2, CAPS_V2.lineBytes)
  if (Either.isLeft(snapshot)) {
    return refused(snapshot.left, "SESSION_INVALID_MESSAGE")
  }
  if (V2.isVersion1Shaped(snapshot.right)) {
    const canonical = decodeCanonicalMessage(snapshot.right)
    const v1 = canonical !== undefined ? Either.right(canonical) : decodeMessage(snapshot.right)
    // The upgrade of a valid v1 message is canonical v2 (its usual case): the direct decoder takes it, the Schema the rest.
    return Either.flatMap(v1, (message) => {
      const upgraded = V2.upgradeMessage(message)
      const direct = V2.decodeCanonicalMessage(upgraded)
      return direct !== undefined ? Either.right(direct) : V2.decodeMessage(upgraded)
    })
  }
  // Messages in schema key order (the usual case) skip the Schema interpreter; it decides the rest.
  const canonical = V2.decodeCanonicalMessage(snapshot.right)
  return canonical !== undefined ? Either.right(canonical) : V2.decodeMessage(snapshot.right)
}

/** Copies and decodes the body of a version-2 entry of any kind (the keys after `kind`, `kind` first). */
export const snapshotBody = (body: unknown): Either.Either<V2.Body, CorruptError> => {
  const snapshot = snapshotJson(body, 1, CAPS_V2.lineBytes)
  if (Either.isLeft(snapshot)) {
    return refused(snapshot.left, "SESSION_INVALID_RECORD")
  }
  const value = snapshot.right
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Either.left(sessionError("SESSION_INVALID_RECORD", "an entry's body must be an object with its `kind` first"))
  }
  const fields = value as { readonly [key: string]: unknown }
  for (const key of ENVELOPE_KEYS) {
    if (Object.prototype.hasOwnProperty.call(fields, key)) {
      return Either.left(sessionError("SESSION_INVALID_RECORD", `["${key}"] is the store's to write, not the body's`))
    }
  }
  if (fields["kind"] === "message") {
    const keys = Object.keys(fields)
    if (keys.length !== 2 || keys[1] !== "message") {
      return Either.left(sessionError("SESSION_INVALID_RECORD", "a message body holds exactly `kind` and `message`"))
    }
    return Either.map(snapshotMessageFor(fields["message"], 2), (message): V2.Body => ({ kind: "message", message: message as V2.Message }))
  }
  // The kind's Schema judges the body inside a placeholder envelope, which is then taken off again.
  return Either.map(V2.decodeEntry({ ...PLACEHOLDER, ...fields }), (decoded) => {
    const { id: _id, parentId: _parentId, timestamp: _timestamp, type: _type, version: _version, ...rest } = decoded
    return deepFreeze(rest) as V2.Body
  })
}

const ENVELOPE_KEYS = Object.keys(V2.envelope)
const PLACEHOLDER = { type: "entry", version: V2.VERSION, id: "-", parentId: null, timestamp: "1970-01-01T00:00:00.000Z" } as const

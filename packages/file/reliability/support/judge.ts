/** One loader input through the library and the independent reference decoder. */
import { type DecodedSession } from "@session-tree/core/Codec"
import { decode as decodeSession } from "../../src/Jsonl.js"
import { SessionError, SessionErrorCode, isSessionError } from "@session-tree/core/SessionError"
import * as Either from "effect/Either"
import { referenceDecode, VERSION_2 } from "./oracle.js"
import { messageOf } from "@session-tree/core/Record"

const CODES = new Set<string>(SessionErrorCode.literals)

export interface Finding {
  readonly kind: string
  readonly label: string
  readonly detail: string
  readonly base64: string
}

export interface Verdict {
  /** "ok", or what is wrong. */
  readonly kind: string
  readonly detail: string
  readonly ms: number
  /** "accepted", a B4 code, "crash" or "untyped". */
  readonly outcome: string
}

/** Runs one input through the library and the reference; says what is wrong, if anything. */
export const judge = (bytes: Uint8Array): Verdict => {
  let lib: DecodedSession | SessionError
  const t0 = performance.now()
  try {
    // The checks below also catch a value that is neither an error nor a session.
    lib = Either.merge(decodeSession(bytes))
  } catch (e) {
    return { kind: "crash", detail: String((e as Error)?.stack ?? e), ms: performance.now() - t0, outcome: "crash" }
  }
  const ms = performance.now() - t0
  const ref = referenceDecode(bytes)
  if (!ref.ok && ref.code === VERSION_2) {
    // A mutation made the header version 2: typed either way, and accepted only as a version-2 session.
    if (isSessionError(lib)) {
      return CODES.has(lib.code) ? { kind: "version-2", detail: "", ms, outcome: lib.code } : { kind: "untyped", detail: `code ${String(lib.code)}`, ms, outcome: "untyped" }
    }
    return lib.header.version === 2
      ? { kind: "version-2", detail: "", ms, outcome: "accepted" }
      : { kind: "accepted-corrupt", detail: "a version-2 header read as another version", ms, outcome: "accepted" }
  }
  if (isSessionError(lib)) {
    if (!CODES.has(lib.code)) return { kind: "untyped", detail: `code ${String(lib.code)}`, ms, outcome: "untyped" }
    if (ref.ok) return { kind: "rejected-valid", detail: `library: ${lib.message}; reference: accepted`, ms, outcome: lib.code }
    if (ref.code !== lib.code) return { kind: "code-differs", detail: `library: ${lib.message}; reference: ${ref.code} (${ref.why}, line ${ref.line})`, ms, outcome: lib.code }
    return { kind: "ok", detail: "", ms, outcome: lib.code }
  }
  if (typeof lib !== "object" || lib === null || !("header" in lib) || !("history" in lib)) {
    return { kind: "untyped", detail: `returned ${String(lib)}`, ms, outcome: "untyped" }
  }
  if (!ref.ok) return { kind: "accepted-corrupt", detail: `reference: ${ref.code} (${ref.why}, line ${ref.line})`, ms, outcome: "accepted" }
  const entries = lib.history.entries
  if (
    JSON.stringify(lib.header) !== JSON.stringify(ref.header) || lib.tail !== ref.tail || entries.length !== ref.entries.length ||
    entries.some((e, i) => JSON.stringify(e) !== JSON.stringify(ref.entries[i]))
  ) {
    return { kind: "result-differs", detail: `library: ${entries.length} entries, tail ${lib.tail}; reference: ${ref.entries.length}, tail ${ref.tail}`, ms, outcome: "accepted" }
  }
  if (!Object.isFrozen(lib.header) || entries.some((e) => !Object.isFrozen(e) || !Object.isFrozen(messageOf(e)))) {
    return { kind: "not-frozen", detail: "an accepted record is not frozen", ms, outcome: "accepted" }
  }
  return { kind: "ok", detail: "", ms, outcome: "accepted" }
}


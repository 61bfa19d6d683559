/**
 * The direct decoder: a record that is already exactly canonical (own keys
 * exactly its Schema's, in the Schema's order, every field valid) is rebuilt
 * here without the generic Schema interpreter, so that a load of a whole
 * session stays close to the cost of parsing its JSON. It only ever answers "this entry" or "not for me"; whatever it
 * declines goes to the Schema decoders of `Record.ts`, which decide and
 * explain. Its key orders and literals are read from those Schemas, and a
 * property test holds it to them (`test/decode-schema.test.ts`).
 *
 * Every result is a fresh, deeply frozen value, and nothing outlives a call:
 * the decoder keeps no state between records.
 */
import { hasKeyTokens } from "../Json.js"
import type * as Record from "../Record.js"
import { isCanonicalTimestamp } from "./timestamp.js"
import { copyJson, tally } from "./values.js"

/** The Schemas the decoder is built from. */
export interface Schemas {
  readonly entry: typeof Record.SessionEntry
  readonly user: typeof Record.UserMessage
  readonly assistant: typeof Record.AssistantMessage
  readonly tool: typeof Record.ToolMessage
  readonly call: typeof Record.ToolCall
}

/** A canonical entry line, decoded. */
export interface CanonicalLine {
  readonly entry: Record.SessionEntry
  /**
   * Whether a number was copied into tool-call arguments (a zero too: `2e-324` reads as 0). Only
   * then can the line hold a literal that no number holds exactly, which must be checked in the text.
   */
  readonly numbers: boolean
}

export interface Decoder {
  /**
   * The entry of one line when `value` (what `JSON.parse(text)` returned) is a canonical, valid
   * entry record and `text` repeats no key; otherwise undefined. Reads `value` only.
   */
  readonly line: (value: unknown, text: string) => CanonicalLine | undefined
  /** The entry of a canonical, valid entry record (no text to check: the caller checked its keys). */
  readonly entry: (record: unknown) => Record.SessionEntry | undefined
  /** The message of a canonical, valid Message IR value (a parsed line's, or an append's snapshot). */
  readonly message: (message: unknown) => Record.Message | undefined
}

/** A message copied by the decoder, and what the line check needs to know of it. */
interface Copied {
  readonly message: Record.Message
  /** The own keys of all objects in the message. */
  readonly keys: number
  readonly numbers: boolean
}

const hasOwn = Object.prototype.hasOwnProperty
const isId = (v: unknown): v is string => typeof v === "string" && v.length > 0
const isPlainObject = (v: unknown): v is { readonly [key: string]: unknown } =>
  typeof v === "object" && v !== null && !Array.isArray(v)

/**
 * Whether the keys of `o` are exactly `names`, in that order, all own. for-in
 * allocates nothing; it also lists inherited enumerable keys, which fail the
 * check. Only for what JSON.parse builds: every own key an enumerable string.
 */
const keysAre = (o: object, names: ReadonlyArray<string>): boolean => {
  let i = 0
  for (const key in o) {
    if (key !== names[i] || !hasOwn.call(o, key)) return false
    i++
  }
  return i === names.length
}

/** The one value a literal field of a Schema struct admits. */
const literal = <A>(field: { readonly literals: ReadonlyArray<A> }): A => field.literals[0]!

/** Builds the direct decoder of the records the given Schemas describe. */
export const make = (schemas: Schemas): Decoder => {
  const ENTRY_KEYS = Object.keys(schemas.entry.fields)
  const USER_KEYS = Object.keys(schemas.user.fields)
  const ASSISTANT_KEYS = Object.keys(schemas.assistant.fields)
  const TOOL_KEYS = Object.keys(schemas.tool.fields)
  const CALL_KEYS = Object.keys(schemas.call.fields)
  const ENTRY = literal(schemas.entry.fields.type)
  const VERSION = literal(schemas.entry.fields.version)
  const USER = literal(schemas.user.fields.role)
  const ASSISTANT = literal(schemas.assistant.fields.role)
  const TOOL = literal(schemas.tool.fields.role)
  // The depth of tool-call arguments: record 1, message 2, toolCalls 3, call 4, arguments 5.
  const ARGUMENTS_DEPTH = 5

  /** Whether `v` is an entry record with every field of a canonical one but its message. */
  const hasCanonicalEntryFields = (
    v: unknown
  ): v is { readonly [key: string]: unknown; readonly id: string; readonly parentId: string | null; readonly timestamp: string } => {
    if (!isPlainObject(v) || !keysAre(v, ENTRY_KEYS) || v["type"] !== ENTRY || v["version"] !== VERSION || !isId(v["id"])) {
      return false
    }
    const parentId = v["parentId"]
    const timestamp = v["timestamp"]
    return (parentId === null || isId(parentId)) && typeof timestamp === "string" && isCanonicalTimestamp(timestamp)
  }

  const entryOf = (
    fields: { readonly id: string; readonly parentId: string | null; readonly timestamp: string },
    message: Record.Message
  ): Record.SessionEntry =>
    Object.freeze({ type: ENTRY, version: VERSION, id: fields.id, parentId: fields.parentId, timestamp: fields.timestamp, message })

  /** The fresh, frozen copy of the canonical message `m`, or undefined when it is not canonical. */
  const copyMessage = (m: unknown): Copied | undefined => {
    if (!isPlainObject(m) || !hasOwn.call(m, "role")) return undefined
    const role = m["role"]
    if (role === USER) {
      if (!keysAre(m, USER_KEYS) || !isId(m["id"]) || typeof m["content"] !== "string") return undefined
      return { message: Object.freeze({ role: USER, id: m["id"], content: m["content"] }), keys: USER_KEYS.length, numbers: false }
    }
    if (role === TOOL) {
      if (
        !keysAre(m, TOOL_KEYS) || !isId(m["id"]) || !isId(m["toolCallId"]) || typeof m["toolName"] !== "string" ||
        typeof m["content"] !== "string" || typeof m["isError"] !== "boolean"
      ) return undefined
      const message = Object.freeze({
        role: TOOL,
        id: m["id"],
        toolCallId: m["toolCallId"],
        toolName: m["toolName"],
        content: m["content"],
        isError: m["isError"]
      })
      return { message, keys: TOOL_KEYS.length, numbers: false }
    }
    if (role !== ASSISTANT) return undefined
    if (!keysAre(m, ASSISTANT_KEYS) || !isId(m["id"]) || typeof m["content"] !== "string") return undefined
    const calls = m["toolCalls"]
    if (!Array.isArray(calls)) return undefined
    let keys = ASSISTANT_KEYS.length
    let numbers = false
    const toolCalls: Array<Record.ToolCall> = []
    for (let i = 0; i < calls.length; i++) {
      const c: unknown = calls[i]
      if (!isPlainObject(c) || !keysAre(c, CALL_KEYS) || !isId(c["id"]) || !isId(c["name"])) return undefined
      // A call ID repeated within the message is an error: the Schema path reports it.
      for (let j = 0; j < i; j++) if (toolCalls[j]!.id === c["id"]) return undefined
      const args = c["arguments"]
      if (!isPlainObject(args)) return undefined
      const counted = tally()
      const copied = copyJson(args, ARGUMENTS_DEPTH, counted) as { readonly [key: string]: unknown } | undefined
      if (copied === undefined) return undefined
      keys += CALL_KEYS.length + counted.keys
      numbers = numbers || counted.numbers
      toolCalls.push(Object.freeze({ id: c["id"], name: c["name"], arguments: copied }))
    }
    const message = Object.freeze({ role: ASSISTANT, id: m["id"], content: m["content"], toolCalls: Object.freeze(toolCalls) })
    return { message, keys, numbers }
  }

  return {
    line: (value, text) => {
      if (!hasCanonicalEntryFields(value)) return undefined
      const copied = copyMessage(value["message"])
      if (copied === undefined || !hasKeyTokens(text, ENTRY_KEYS.length + copied.keys)) return undefined
      return { entry: entryOf(value, copied.message), numbers: copied.numbers }
    },
    entry: (record) => {
      if (!hasCanonicalEntryFields(record)) return undefined
      const copied = copyMessage(record["message"])
      return copied === undefined ? undefined : entryOf(record, copied.message)
    },
    message: (message) => copyMessage(message)?.message
  }
}

/**
 * The direct decoder of version 2: a record that is already exactly canonical
 * (own keys exactly its Schema's, in the Schema's order, optional keys present
 * or absent, every value valid) is rebuilt here without the generic Schema
 * interpreter, so that loading a session of the agent format stays close to the
 * cost of parsing its JSON. It only ever answers "this entry" or "not for me":
 * whatever it declines goes to the Schema decoders of `RecordV2.ts`, which
 * decide and explain. Key orders and literals are read from those Schemas, and
 * a property test holds it to them (`test/decode-schema-v2.test.ts`).
 *
 * It checks what one record shows by itself, and declines a message that breaks
 * a rule within it (a tool-call ID repeated; a `tool-result` part that does not
 * answer, once, a provider-executed call made earlier in the same message), so
 * that the path which reports those rules sees it. What needs the rest of the
 * session (tool links, a compaction's kept entry, a label's target) is the
 * history's, here as on the Schema path.
 *
 * Every result is a fresh, deeply frozen value, and nothing outlives a call:
 * the decoder keeps no state between records.
 */
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { hasKeyTokens, isExactNumber } from "../Json.js"
import type * as RecordV2 from "../RecordV2.js"
import { isCanonicalTimestamp } from "./timestamp.js"
import { copyJson, tally, type Tally } from "./values.js"

/** The Schemas the decoder is built from (those of `RecordV2.ts`). */
export interface Schemas {
  /** The six entry kinds, in the order `RecordV2.SessionEntry` lists them. */
  readonly entry: typeof RecordV2.SessionEntry
  /** The four roles, in the order `RecordV2.Message` lists them. */
  readonly message: typeof RecordV2.Message
  /** Every part type (an assistant's content), in the order `RecordV2.AssistantPart` lists them. */
  readonly assistantPart: typeof RecordV2.AssistantPart
  /** The part types a user message may hold. */
  readonly userPart: typeof RecordV2.UserPart
  /** The part types a tool message may hold. */
  readonly toolPart: typeof RecordV2.ToolPart
  /** Where a file's bytes are: inline, at a URL, in a blob. */
  readonly fileData: typeof RecordV2.FileData
  readonly meta: typeof RecordV2.Meta
  readonly usage: typeof RecordV2.Usage
}

/** A canonical version-2 entry line, decoded. */
export interface CanonicalLine {
  readonly entry: RecordV2.SessionEntry
  /**
   * Whether the line may still hold a number literal that no number holds exactly (`2e-324` reads
   * as 0, `12345678901234567891` as 12345678901234567000), which the caller must then look for in
   * the text. False when every number literal of the line was seen and is exact: the decoder checks
   * each one that is the value of a key (the version, a count, a member of a JSON value). A number
   * inside an array of a JSON value is left to the caller, and so is every number of a line whose
   * keys the quick count cannot settle (whitespace before a colon or after one, a string that starts
   * with a colon).
   */
  readonly numbers: boolean
}

/**
 * A loader takes a line as `line` answers: an entry, then, only when `numbers` is set, the search
 * of the text for an inexact number literal; undefined, the Schema path with every line check.
 */
export interface Decoder {
  /**
   * The entry of one line when `value` (what `JSON.parse(text)` returned) is a canonical, valid
   * version-2 entry record and `text` repeats no key; otherwise undefined. Never changes `value`.
   */
  readonly line: (value: unknown, text: string) => CanonicalLine | undefined
  /** The entry of a canonical, valid version-2 entry record (no text to check: the caller checked its keys). */
  readonly entry: (record: unknown) => RecordV2.SessionEntry | undefined
  /**
   * The message of a canonical, valid Message IR v2 value (a parsed line's, or an append's
   * snapshot: JSON data only), or undefined.
   */
  readonly message: (message: unknown) => RecordV2.Message | undefined
}

type Obj = { readonly [key: string]: unknown }

/** A struct's keys in canonical order, and which of them may be absent. */
interface Shape {
  readonly names: ReadonlyArray<string>
  readonly optional: ReadonlyArray<boolean>
}

const hasOwn = Object.prototype.hasOwnProperty
const isId = (v: unknown): v is string => typeof v === "string" && v.length > 0
const isPlainObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v)
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0 && !Object.is(v, -0)

/** The TypeLiteral under a struct Schema (through its filters, as `Meta`'s "at least one key"). */
const typeLiteral = (schema: Schema.Schema.Any): AST.TypeLiteral => {
  let ast = schema.ast
  while (ast._tag === "Refinement") ast = ast.from
  if (ast._tag !== "TypeLiteral" || ast.indexSignatures.length > 0) throw new Error(`not a struct: ${ast._tag}`)
  return ast
}

const shapeOf = (schema: Schema.Schema.Any): Shape => {
  const signatures = typeLiteral(schema).propertySignatures
  return { names: signatures.map((p) => String(p.name)), optional: signatures.map((p) => p.isOptional) }
}

/** The one value the field `name` of a struct Schema admits. */
const literalOf = (schema: Schema.Schema.Any, name: string): AST.LiteralValue => {
  const field = typeLiteral(schema).propertySignatures.find((p) => p.name === name)
  if (field === undefined || field.type._tag !== "Literal") throw new Error(`no literal field ${name}`)
  return field.type.literal
}

/**
 * The number of own keys of `o` when they are a subsequence of `shape`'s names, in that order,
 * holding every name that is not optional; otherwise -1. for-in allocates nothing; it also lists
 * inherited enumerable keys, which fail the check. Only for JSON data: every own key an
 * enumerable string.
 */
const matchKeys = (o: object, shape: Shape): number => {
  const names = shape.names
  const optional = shape.optional
  let i = 0
  let n = 0
  for (const key in o) {
    if (!hasOwn.call(o, key)) return -1
    while (i < names.length && names[i] !== key) {
      if (!optional[i]) return -1
      i++
    }
    if (i === names.length) return -1
    i++
    n++
  }
  for (; i < names.length; i++) if (!optional[i]) return -1
  return n
}

/** The copy of a JSON object (tool-call arguments, a provider's options), or undefined. */
const copyObject = (value: unknown, depth: number, tally: Tally): Obj | undefined =>
  isPlainObject(value) ? copyJson(value, depth, tally) as Obj | undefined : undefined

const QUOTE = 0x22
const BACKSLASH = 0x5c
const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09

/**
 * One pass over the colons of `text` (a line JSON.parse accepted), as `hasKeyTokens` makes its
 * quick count: the colons directly preceded by an unescaped quote, times two, plus one when the
 * value after such a colon may be a number literal that no number holds exactly (one that is not,
 * or whitespace before it); -1 when some colon follows whitespace. When the count equals the own
 * keys of the parsed value, the colons counted are exactly those that end a key (see
 * `hasKeyTokens`), so every number that is the value of a key was seen.
 */
const keyColons = (text: string): number => {
  let keys = 0
  let unsure = 0
  let colon = text.indexOf(":")
  while (colon !== -1) {
    const before = text.charCodeAt(colon - 1)
    if (before === QUOTE) {
      let j = colon - 2
      while (text.charCodeAt(j) === BACKSLASH) j--
      if (((colon - 2 - j) & 1) === 0) {
        keys++
        const c = text.charCodeAt(colon + 1)
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
          // The number token; an integer of at most 15 characters is exact.
          let end = colon + 2
          let plain = true
          for (;; end++) {
            const d = text.charCodeAt(end)
            if (d >= 0x30 && d <= 0x39) continue
            if (d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) {
              plain = false
              continue
            }
            break
          }
          if ((!plain || end - colon - 1 > 15) && !isExactNumber(text.slice(colon + 1, end))) unsure = 1
        } else if (isWs(c)) unsure = 1
      }
    } else if (isWs(before)) {
      return -1
    }
    colon = text.indexOf(":", colon + 1)
  }
  return keys * 2 + unsure
}

// Nesting depths (the record is 1): the message 2, its options, result and meta 3, its content's
// parts 4, a part's options, arguments and result 5. A custom entry's data is at 2.
const MESSAGE_JSON_DEPTH = 3
const PART_JSON_DEPTH = 5
const ENTRY_JSON_DEPTH = 2

/** Builds the direct decoder of the records the given Schemas describe. */
export const make = (schemas: Schemas): Decoder => {
  const [messageEntry, compactionEntry, labelEntry, titleEntry, modelEntry, customEntry] = schemas.entry.members
  const [systemMessage, userMessage, assistantMessage, toolMessage] = schemas.message.members
  const [textPart, reasoningPart, filePart, toolCallPart, toolResultPart] = schemas.assistantPart.members
  const [inlineData, urlData, blobData] = schemas.fileData.members

  const ENTRY = literalOf(messageEntry, "type")
  const VERSION = literalOf(messageEntry, "version")
  const KIND = {
    message: literalOf(messageEntry, "kind"),
    compaction: literalOf(compactionEntry, "kind"),
    label: literalOf(labelEntry, "kind"),
    title: literalOf(titleEntry, "kind"),
    model: literalOf(modelEntry, "kind"),
    custom: literalOf(customEntry, "kind")
  }
  const ENTRY_SHAPE = {
    message: shapeOf(messageEntry),
    compaction: shapeOf(compactionEntry),
    label: shapeOf(labelEntry),
    title: shapeOf(titleEntry),
    model: shapeOf(modelEntry),
    custom: shapeOf(customEntry)
  }
  const SYSTEM = literalOf(systemMessage, "role")
  const USER = literalOf(userMessage, "role")
  const ASSISTANT = literalOf(assistantMessage, "role")
  const TOOL = literalOf(toolMessage, "role")
  const SYSTEM_SHAPE = shapeOf(systemMessage)
  const USER_SHAPE = shapeOf(userMessage)
  const ASSISTANT_SHAPE = shapeOf(assistantMessage)
  const TOOL_SHAPE = shapeOf(toolMessage)
  const TEXT = literalOf(textPart, "type")
  const REASONING = literalOf(reasoningPart, "type")
  const FILE = literalOf(filePart, "type")
  const CALL = literalOf(toolCallPart, "type")
  const RESULT = literalOf(toolResultPart, "type")
  const TEXT_SHAPE = shapeOf(textPart)
  const REASONING_SHAPE = shapeOf(reasoningPart)
  const FILE_SHAPE = shapeOf(filePart)
  const CALL_SHAPE = shapeOf(toolCallPart)
  const RESULT_SHAPE = shapeOf(toolResultPart)
  const PROVIDER_EXECUTED = literalOf(toolCallPart, "providerExecuted")
  const INLINE_SHAPE = shapeOf(inlineData)
  const URL_SHAPE = shapeOf(urlData)
  const BLOB_SHAPE = shapeOf(blobData)
  const META_SHAPE = shapeOf(schemas.meta)
  const USAGE_SHAPE = shapeOf(schemas.usage)
  const USER_PARTS: ReadonlySet<unknown> = new Set(schemas.userPart.members.map((m) => literalOf(m, "type")))
  const TOOL_PARTS: ReadonlySet<unknown> = new Set(schemas.toolPart.members.map((m) => literalOf(m, "type")))
  const ASSISTANT_PARTS: ReadonlySet<unknown> = new Set(schemas.assistantPart.members.map((m) => literalOf(m, "type")))
  // Rare and long values: their own Schemas decide, so their rules are not restated here.
  const isBase64 = Schema.is(inlineData.fields.base64)
  const isBlobRef = Schema.is(blobData.fields.blob)

  /** A provider's options when `o` holds them; `null` when it holds none; undefined when they are not valid. */
  const optionsOf = (o: Obj, depth: number, tally: Tally): Obj | null | undefined =>
    hasOwn.call(o, "options") ? copyObject(o["options"], depth, tally) : null

  const fileData = (d: unknown, tally: Tally): RecordV2.FileData | undefined => {
    if (!isPlainObject(d)) return undefined
    let n: number
    if ((n = matchKeys(d, INLINE_SHAPE)) >= 0) {
      const base64 = d["base64"]
      if (typeof base64 !== "string" || !isBase64(base64)) return undefined
      tally.keys += n
      return Object.freeze({ base64 })
    }
    if ((n = matchKeys(d, URL_SHAPE)) >= 0) {
      const url = d["url"]
      if (typeof url !== "string") return undefined
      tally.keys += n
      return Object.freeze({ url })
    }
    if ((n = matchKeys(d, BLOB_SHAPE)) >= 0) {
      const blob = d["blob"]
      const size = d["size"]
      if (typeof blob !== "string" || !isBlobRef(blob) || !isCount(size)) return undefined
      tally.keys += n
      return Object.freeze({ blob, size })
    }
    return undefined
  }

  /** A text part, or a reasoning part when `reasoning` is set: the same keys, another type. */
  const textLike = (p: Obj, reasoning: boolean, tally: Tally): RecordV2.TextPart | RecordV2.ReasoningPart | undefined => {
    const type = reasoning ? REASONING : TEXT
    const n = matchKeys(p, reasoning ? REASONING_SHAPE : TEXT_SHAPE)
    const text = p["text"]
    if (n < 0 || typeof text !== "string") return undefined
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    tally.keys += n
    return Object.freeze(options === null ? { type, text } : { type, text, options }) as RecordV2.TextPart
  }

  const file = (p: Obj, tally: Tally): RecordV2.FilePart | undefined => {
    const n = matchKeys(p, FILE_SHAPE)
    const mediaType = p["mediaType"]
    if (n < 0 || !isId(mediaType)) return undefined
    const part: { [key: string]: unknown } = { type: FILE, mediaType }
    if (hasOwn.call(p, "name")) {
      const name = p["name"]
      if (typeof name !== "string") return undefined
      part["name"] = name
    }
    const data = fileData(p["data"], tally)
    if (data === undefined) return undefined
    part["data"] = data
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    if (options !== null) part["options"] = options
    tally.keys += n
    return Object.freeze(part) as RecordV2.FilePart
  }

  const toolCall = (p: Obj, tally: Tally): RecordV2.ToolCallPart | undefined => {
    const n = matchKeys(p, CALL_SHAPE)
    const id = p["id"]
    const name = p["name"]
    if (n < 0 || !isId(id) || !isId(name)) return undefined
    const args = copyObject(p["arguments"], PART_JSON_DEPTH, tally)
    if (args === undefined) return undefined
    const part: { [key: string]: unknown } = { type: CALL, id, name, arguments: args }
    if (hasOwn.call(p, "providerExecuted")) {
      if (p["providerExecuted"] !== PROVIDER_EXECUTED) return undefined
      part["providerExecuted"] = PROVIDER_EXECUTED
    }
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    if (options !== null) part["options"] = options
    tally.keys += n
    return Object.freeze(part) as RecordV2.ToolCallPart
  }

  const toolResult = (p: Obj, tally: Tally): RecordV2.ToolResultPart | undefined => {
    const n = matchKeys(p, RESULT_SHAPE)
    const toolCallId = p["toolCallId"]
    const toolName = p["toolName"]
    const isError = p["isError"]
    if (n < 0 || !isId(toolCallId) || !isId(toolName) || typeof isError !== "boolean") return undefined
    const result = copyJson(p["result"], PART_JSON_DEPTH, tally)
    if (result === undefined) return undefined
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    tally.keys += n
    return Object.freeze(
      options === null
        ? { type: RESULT, toolCallId, toolName, isError, result }
        : { type: RESULT, toolCallId, toolName, isError, result, options }
    ) as RecordV2.ToolResultPart
  }

  /**
   * The copy of a message's content, each part of a type in `allowed`; undefined when a part is not
   * canonical, or breaks a rule within the message (which the Schema path reports).
   */
  const content = (c: unknown, allowed: ReadonlySet<unknown>, tally: Tally): ReadonlyArray<RecordV2.AssistantPart> | undefined => {
    if (!Array.isArray(c)) return undefined
    const parts: Array<RecordV2.AssistantPart> = []
    // The tool calls so far, and for each provider-executed one whether a result answered it.
    let calls: Array<RecordV2.ToolCallPart> | undefined
    let answered: Array<boolean> | undefined
    for (let i = 0; i < c.length; i++) {
      const p: unknown = c[i]
      if (!isPlainObject(p) || !hasOwn.call(p, "type")) return undefined
      const type = p["type"]
      if (!allowed.has(type)) return undefined
      let part: RecordV2.AssistantPart | undefined
      if (type === TEXT) part = textLike(p, false, tally)
      else if (type === REASONING) part = textLike(p, true, tally)
      else if (type === FILE) part = file(p, tally)
      else if (type === CALL) {
        const call = toolCall(p, tally)
        if (call === undefined) return undefined
        if (calls === undefined) {
          calls = []
          answered = []
        }
        for (let j = 0; j < calls.length; j++) if (calls[j]!.id === call.id) return undefined
        calls.push(call)
        answered!.push(false)
        part = call
      } else if (type === RESULT) {
        const result = toolResult(p, tally)
        if (result === undefined || calls === undefined) return undefined
        let j = 0
        while (j < calls.length && calls[j]!.id !== result.toolCallId) j++
        const call = calls[j]
        if (call === undefined || call.providerExecuted !== PROVIDER_EXECUTED || call.name !== result.toolName || answered![j]) {
          return undefined
        }
        answered![j] = true
        part = result
      }
      if (part === undefined) return undefined
      parts.push(part)
    }
    return Object.freeze(parts)
  }

  // Usage and meta are written key by key in their Schemas' order (the shapes checked it), each
  // key by name: a fresh object then takes the same few shapes every time.
  const usage = (u: unknown, tally: Tally): RecordV2.Usage | undefined => {
    if (!isPlainObject(u)) return undefined
    const n = matchKeys(u, USAGE_SHAPE)
    const inputTokens = u["inputTokens"]
    const outputTokens = u["outputTokens"]
    if (n < 0 || !isCount(inputTokens) || !isCount(outputTokens)) return undefined
    const copy: { -readonly [K in keyof RecordV2.Usage]: RecordV2.Usage[K] } = { inputTokens, outputTokens }
    if (hasOwn.call(u, "reasoningTokens")) {
      const count = u["reasoningTokens"]
      if (!isCount(count)) return undefined
      copy.reasoningTokens = count
    }
    if (hasOwn.call(u, "cachedInputTokens")) {
      const count = u["cachedInputTokens"]
      if (!isCount(count)) return undefined
      copy.cachedInputTokens = count
    }
    if (hasOwn.call(u, "cacheWriteTokens")) {
      const count = u["cacheWriteTokens"]
      if (!isCount(count)) return undefined
      copy.cacheWriteTokens = count
    }
    tally.keys += n
    return Object.freeze(copy)
  }

  const meta = (m: unknown, tally: Tally): RecordV2.Meta | undefined => {
    if (!isPlainObject(m)) return undefined
    const n = matchKeys(m, META_SHAPE)
    // Meta holds at least one key.
    if (n < 1) return undefined
    const copy: { -readonly [K in keyof RecordV2.Meta]: RecordV2.Meta[K] } = {}
    let v: unknown
    if (hasOwn.call(m, "provider")) {
      if (typeof (v = m["provider"]) !== "string") return undefined
      copy.provider = v
    }
    if (hasOwn.call(m, "model")) {
      if (typeof (v = m["model"]) !== "string") return undefined
      copy.model = v
    }
    if (hasOwn.call(m, "responseId")) {
      if (typeof (v = m["responseId"]) !== "string") return undefined
      copy.responseId = v
    }
    if (hasOwn.call(m, "usage")) {
      const copied = usage(m["usage"], tally)
      if (copied === undefined) return undefined
      copy.usage = copied
    }
    if (hasOwn.call(m, "stopReason")) {
      if (typeof (v = m["stopReason"]) !== "string") return undefined
      copy.stopReason = v
    }
    if (hasOwn.call(m, "error")) {
      if (typeof (v = m["error"]) !== "string") return undefined
      copy.error = v
    }
    tally.keys += n
    return Object.freeze(copy)
  }

  /** The fresh, frozen copy of the canonical message `m`, or undefined when it is not canonical. */
  const message = (m: unknown, tally: Tally): RecordV2.Message | undefined => {
    if (!isPlainObject(m) || !hasOwn.call(m, "role")) return undefined
    const role = m["role"]
    const id = m["id"]
    if (role === ASSISTANT) {
      const n = matchKeys(m, ASSISTANT_SHAPE)
      if (n < 0 || !isId(id)) return undefined
      const parts = content(m["content"], ASSISTANT_PARTS, tally)
      if (parts === undefined) return undefined
      let about: RecordV2.Meta | undefined
      if (hasOwn.call(m, "meta") && (about = meta(m["meta"], tally)) === undefined) return undefined
      const options = optionsOf(m, MESSAGE_JSON_DEPTH, tally)
      if (options === undefined) return undefined
      tally.keys += n
      const message: { [key: string]: unknown } = { role: ASSISTANT, id, content: parts }
      if (about !== undefined) message["meta"] = about
      if (options !== null) message["options"] = options
      return Object.freeze(message) as RecordV2.AssistantMessage
    }
    if (role === USER) {
      const n = matchKeys(m, USER_SHAPE)
      if (n < 0 || !isId(id)) return undefined
      const parts = content(m["content"], USER_PARTS, tally)
      // A user message holds at least one part.
      if (parts === undefined || parts.length === 0) return undefined
      const options = optionsOf(m, MESSAGE_JSON_DEPTH, tally)
      if (options === undefined) return undefined
      tally.keys += n
      return Object.freeze(options === null ? { role: USER, id, content: parts } : { role: USER, id, content: parts, options }) as RecordV2.UserMessage
    }
    if (role === TOOL) {
      const n = matchKeys(m, TOOL_SHAPE)
      const toolCallId = m["toolCallId"]
      const toolName = m["toolName"]
      const isError = m["isError"]
      if (n < 0 || !isId(id) || !isId(toolCallId) || !isId(toolName) || typeof isError !== "boolean") return undefined
      const parts = content(m["content"], TOOL_PARTS, tally)
      if (parts === undefined) return undefined
      const message: { [key: string]: unknown } = { role: TOOL, id, toolCallId, toolName, isError, content: parts }
      if (hasOwn.call(m, "result")) {
        const result = copyJson(m["result"], MESSAGE_JSON_DEPTH, tally)
        if (result === undefined) return undefined
        message["result"] = result
      }
      const options = optionsOf(m, MESSAGE_JSON_DEPTH, tally)
      if (options === undefined) return undefined
      if (options !== null) message["options"] = options
      tally.keys += n
      return Object.freeze(message) as RecordV2.ToolMessage
    }
    if (role === SYSTEM) {
      const n = matchKeys(m, SYSTEM_SHAPE)
      const text = m["content"]
      if (n < 0 || !isId(id) || typeof text !== "string") return undefined
      const options = optionsOf(m, MESSAGE_JSON_DEPTH, tally)
      if (options === undefined) return undefined
      tally.keys += n
      return Object.freeze(options === null ? { role: SYSTEM, id, content: text } : { role: SYSTEM, id, content: text, options }) as RecordV2.SystemMessage
    }
    return undefined
  }

  /** The fresh, frozen copy of the canonical entry record `v`, or undefined when it is not canonical. */
  const entry = (v: unknown, tally: Tally): RecordV2.SessionEntry | undefined => {
    if (!isPlainObject(v) || !hasOwn.call(v, "kind")) return undefined
    const kind = v["kind"]
    const shape = kind === KIND.message
      ? ENTRY_SHAPE.message
      : kind === KIND.compaction
      ? ENTRY_SHAPE.compaction
      : kind === KIND.label
      ? ENTRY_SHAPE.label
      : kind === KIND.title
      ? ENTRY_SHAPE.title
      : kind === KIND.model
      ? ENTRY_SHAPE.model
      : kind === KIND.custom
      ? ENTRY_SHAPE.custom
      : undefined
    if (shape === undefined) return undefined
    const n = matchKeys(v, shape)
    const id = v["id"]
    const parentId = v["parentId"]
    const timestamp = v["timestamp"]
    if (
      n < 0 || v["type"] !== ENTRY || v["version"] !== VERSION || !isId(id) || (parentId !== null && !isId(parentId)) ||
      typeof timestamp !== "string" || !isCanonicalTimestamp(timestamp)
    ) return undefined
    tally.keys += n
    if (kind === KIND.message) {
      const copied = message(v["message"], tally)
      if (copied === undefined) return undefined
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, message: copied }) as RecordV2.MessageEntry
    }
    if (kind === KIND.compaction) {
      const summary = v["summary"]
      const firstKeptEntryId = v["firstKeptEntryId"]
      if (typeof summary !== "string" || (firstKeptEntryId !== null && !isId(firstKeptEntryId))) return undefined
      // Keys in the Schema's order, so that the copy is canonical as written.
      const copy: { [key: string]: unknown } = {
        type: ENTRY,
        version: VERSION,
        id,
        parentId,
        timestamp,
        kind,
        summary,
        firstKeptEntryId
      }
      if (hasOwn.call(v, "tokensBefore")) {
        const tokensBefore = v["tokensBefore"]
        if (!isCount(tokensBefore)) return undefined
        copy.tokensBefore = tokensBefore
      }
      if (hasOwn.call(v, "usage")) {
        const copied = usage(v["usage"], tally)
        if (copied === undefined) return undefined
        copy.usage = copied
      }
      return Object.freeze(copy) as RecordV2.CompactionEntry
    }
    if (kind === KIND.label) {
      const targetId = v["targetId"]
      const label = v["label"]
      if (!isId(targetId) || (label !== null && !isId(label))) return undefined
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, targetId, label }) as RecordV2.LabelEntry
    }
    if (kind === KIND.title) {
      const title = v["title"]
      if (!isId(title)) return undefined
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, title }) as RecordV2.TitleEntry
    }
    if (kind === KIND.model) {
      const provider = v["provider"]
      const model = v["model"]
      if (!isId(provider) || !isId(model)) return undefined
      if (!hasOwn.call(v, "thinking")) {
        return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, provider, model }) as RecordV2.ModelEntry
      }
      const thinking = v["thinking"]
      if (!isId(thinking)) return undefined
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, provider, model, thinking }) as RecordV2.ModelEntry
    }
    const customType = v["customType"]
    if (!isId(customType)) return undefined
    const data = copyJson(v["data"], ENTRY_JSON_DEPTH, tally)
    if (data === undefined) return undefined
    return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, customType, data }) as RecordV2.CustomEntry
  }

  return {
    line: (value, text) => {
      const counted = tally()
      const decoded = entry(value, counted)
      if (decoded === undefined) return undefined
      const colons = keyColons(text)
      if (colons >> 1 === counted.keys) return { entry: decoded, numbers: counted.listed || (colons & 1) === 1 }
      // Whitespace, or a string that starts with a colon: the exact count decides, and the caller checks the numbers.
      return hasKeyTokens(text, counted.keys) ? { entry: decoded, numbers: true } : undefined
    },
    entry: (record) => entry(record, tally()),
    message: (value) => message(value, tally())
  }
}

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
 * Every result is deeply frozen, and nothing outlives a call: the decoder keeps
 * no state between records. A line's result is the parsed value itself, frozen
 * in place (nothing else holds it, and a copy of each of its objects was about
 * half of the decoder's time on load); an entry or a message given by someone
 * else (an append's snapshot) is copied.
 */
import * as Schema from "effect/Schema"
import type * as AST from "effect/SchemaAST"
import { hasKeyTokens, isExactNumber } from "../Json.js"
import type * as RecordV2 from "../RecordV2.js"
import { isCanonicalTimestamp } from "./timestamp.js"
import { copyJson, freezeJson, type Tally } from "./values.js"

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
   * version-2 entry record and `text` repeats no key; otherwise undefined. `value` is the call's
   * own, made for it and held by nothing else: the entry is `value` itself, deeply frozen, each
   * `-0` of a JSON value written as `0`. When it declines, some of `value` may be frozen so, which
   * changes nothing that the Schema path then decides (it copies what it keeps).
   */
  readonly line: (value: unknown, text: string) => CanonicalLine | undefined
  /** The fresh copy of a canonical, valid version-2 entry record (no text to check: the caller checked its keys). Never changes `record`. */
  readonly entry: (record: unknown) => RecordV2.SessionEntry | undefined
  /**
   * The fresh copy of a canonical, valid Message IR v2 value (a parsed line's, or an append's
   * snapshot: JSON data only), or undefined. Never changes `message`.
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
/** Whether `o` holds no key `key` of its own, or a string there. */
const textOrAbsent = (o: Obj, key: string): boolean => !hasOwn.call(o, key) || typeof o[key] === "string"
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

/**
 * What one decoding counts (`Tally`), and whether it owns the parsed value: then every object it
 * accepts is frozen in place and answered as it is (the records are parsed lines that nothing else
 * holds), not copied; so the copy is made only where the value may be someone else's.
 */
interface Pass extends Tally {
  readonly own: boolean
}
const pass = (own: boolean): Pass => ({ keys: 0, numbers: false, listed: false, own })

/** A JSON value (tool-call arguments and results, a provider's options, a custom entry's data) as `copyJson` gives it: copied, or frozen in place. */
const jsonOf = (value: unknown, depth: number, pass: Pass): unknown =>
  pass.own ? freezeJson(value, depth, pass) : copyJson(value, depth, pass)

/** A JSON object (tool-call arguments, a provider's options), or undefined. */
const copyObject = (value: unknown, depth: number, pass: Pass): Obj | undefined =>
  isPlainObject(value) ? jsonOf(value, depth, pass) as Obj | undefined : undefined

/** `o` frozen in place, with `key` set to `value` where that differs (a JSON value `-0` given as `0`). */
const frozenWith = <A>(o: Obj, key: string, value: unknown): A => {
  if (!Object.is(o[key], value)) (o as { [key: string]: unknown })[key] = value
  return Object.freeze(o) as A
}

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
  const optionsOf = (o: Obj, depth: number, tally: Pass): Obj | null | undefined =>
    hasOwn.call(o, "options") ? copyObject(o["options"], depth, tally) : null

  const fileData = (d: unknown, tally: Pass): RecordV2.FileData | undefined => {
    if (!isPlainObject(d)) return undefined
    let n: number
    if ((n = matchKeys(d, INLINE_SHAPE)) >= 0) {
      const base64 = d["base64"]
      if (typeof base64 !== "string" || !isBase64(base64)) return undefined
      tally.keys += n
      return Object.freeze(tally.own ? d : { base64 }) as RecordV2.FileData
    }
    if ((n = matchKeys(d, URL_SHAPE)) >= 0) {
      const url = d["url"]
      if (typeof url !== "string") return undefined
      tally.keys += n
      return Object.freeze(tally.own ? d : { url }) as RecordV2.FileData
    }
    if ((n = matchKeys(d, BLOB_SHAPE)) >= 0) {
      const blob = d["blob"]
      const size = d["size"]
      if (typeof blob !== "string" || !isBlobRef(blob) || !isCount(size)) return undefined
      tally.keys += n
      return Object.freeze(tally.own ? d : { blob, size }) as RecordV2.FileData
    }
    return undefined
  }

  /** A text part, or a reasoning part when `reasoning` is set: the same keys, another type. */
  const textLike = (p: Obj, reasoning: boolean, tally: Pass): RecordV2.TextPart | RecordV2.ReasoningPart | undefined => {
    const type = reasoning ? REASONING : TEXT
    const n = matchKeys(p, reasoning ? REASONING_SHAPE : TEXT_SHAPE)
    const text = p["text"]
    if (n < 0 || typeof text !== "string") return undefined
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    tally.keys += n
    return Object.freeze(tally.own ? p : options === null ? { type, text } : { type, text, options }) as RecordV2.TextPart
  }

  const file = (p: Obj, tally: Pass): RecordV2.FilePart | undefined => {
    const n = matchKeys(p, FILE_SHAPE)
    const mediaType = p["mediaType"]
    if (n < 0 || !isId(mediaType)) return undefined
    if (hasOwn.call(p, "name") && typeof p["name"] !== "string") return undefined
    const data = fileData(p["data"], tally)
    if (data === undefined) return undefined
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    tally.keys += n
    if (tally.own) return Object.freeze(p) as RecordV2.FilePart
    const part: { [key: string]: unknown } = { type: FILE, mediaType }
    if (hasOwn.call(p, "name")) part["name"] = p["name"]
    part["data"] = data
    if (options !== null) part["options"] = options
    return Object.freeze(part) as RecordV2.FilePart
  }

  const toolCall = (p: Obj, tally: Pass): RecordV2.ToolCallPart | undefined => {
    const n = matchKeys(p, CALL_SHAPE)
    const id = p["id"]
    const name = p["name"]
    if (n < 0 || !isId(id) || !isId(name)) return undefined
    const args = copyObject(p["arguments"], PART_JSON_DEPTH, tally)
    if (args === undefined) return undefined
    const executed = hasOwn.call(p, "providerExecuted")
    if (executed && p["providerExecuted"] !== PROVIDER_EXECUTED) return undefined
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    tally.keys += n
    if (tally.own) return Object.freeze(p) as RecordV2.ToolCallPart
    const part: { [key: string]: unknown } = { type: CALL, id, name, arguments: args }
    if (executed) part["providerExecuted"] = PROVIDER_EXECUTED
    if (options !== null) part["options"] = options
    return Object.freeze(part) as RecordV2.ToolCallPart
  }

  const toolResult = (p: Obj, tally: Pass): RecordV2.ToolResultPart | undefined => {
    const n = matchKeys(p, RESULT_SHAPE)
    const toolCallId = p["toolCallId"]
    const toolName = p["toolName"]
    const isError = p["isError"]
    if (n < 0 || !isId(toolCallId) || !isId(toolName) || typeof isError !== "boolean") return undefined
    const result = jsonOf(p["result"], PART_JSON_DEPTH, tally)
    if (result === undefined) return undefined
    const options = optionsOf(p, PART_JSON_DEPTH, tally)
    if (options === undefined) return undefined
    tally.keys += n
    if (tally.own) return frozenWith(p, "result", result)
    return Object.freeze(
      options === null
        ? { type: RESULT, toolCallId, toolName, isError, result }
        : { type: RESULT, toolCallId, toolName, isError, result, options }
    ) as RecordV2.ToolResultPart
  }

  /**
   * A message's content, frozen (in place, or a copy), each part of a type in `allowed`; undefined when a part is not
   * canonical, or breaks a rule within the message (which the Schema path reports).
   */
  const content = (c: unknown, allowed: ReadonlySet<unknown>, tally: Pass): ReadonlyArray<RecordV2.AssistantPart> | undefined => {
    if (!Array.isArray(c)) return undefined
    // Owned, the parts are `c`'s own, each frozen in place.
    const parts: Array<RecordV2.AssistantPart> | undefined = tally.own ? undefined : []
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
      parts?.push(part)
    }
    return Object.freeze(parts ?? c as Array<RecordV2.AssistantPart>)
  }

  // Usage and meta are written key by key in their Schemas' order (the shapes checked it), each
  // key by name: a fresh object then takes the same few shapes every time.
  const usage = (u: unknown, tally: Pass): RecordV2.Usage | undefined => {
    if (!isPlainObject(u)) return undefined
    const n = matchKeys(u, USAGE_SHAPE)
    const inputTokens = u["inputTokens"]
    const outputTokens = u["outputTokens"]
    if (n < 0 || !isCount(inputTokens) || !isCount(outputTokens)) return undefined
    const reasoning = hasOwn.call(u, "reasoningTokens")
    const cached = hasOwn.call(u, "cachedInputTokens")
    const written = hasOwn.call(u, "cacheWriteTokens")
    if (
      (reasoning && !isCount(u["reasoningTokens"])) || (cached && !isCount(u["cachedInputTokens"])) ||
      (written && !isCount(u["cacheWriteTokens"]))
    ) return undefined
    tally.keys += n
    if (tally.own) return Object.freeze(u) as RecordV2.Usage
    const copy: { -readonly [K in keyof RecordV2.Usage]: RecordV2.Usage[K] } = { inputTokens, outputTokens }
    if (reasoning) copy.reasoningTokens = u["reasoningTokens"] as number
    if (cached) copy.cachedInputTokens = u["cachedInputTokens"] as number
    if (written) copy.cacheWriteTokens = u["cacheWriteTokens"] as number
    return Object.freeze(copy)
  }

  const meta = (m: unknown, tally: Pass): RecordV2.Meta | undefined => {
    if (!isPlainObject(m)) return undefined
    const n = matchKeys(m, META_SHAPE)
    // Meta holds at least one key.
    if (n < 1) return undefined
    if (
      !textOrAbsent(m, "provider") || !textOrAbsent(m, "model") || !textOrAbsent(m, "responseId") ||
      !textOrAbsent(m, "stopReason") || !textOrAbsent(m, "error")
    ) return undefined
    let counted: RecordV2.Usage | undefined
    if (hasOwn.call(m, "usage") && (counted = usage(m["usage"], tally)) === undefined) return undefined
    tally.keys += n
    if (tally.own) return Object.freeze(m) as RecordV2.Meta
    const copy: { -readonly [K in keyof RecordV2.Meta]: RecordV2.Meta[K] } = {}
    if (hasOwn.call(m, "provider")) copy.provider = m["provider"] as string
    if (hasOwn.call(m, "model")) copy.model = m["model"] as string
    if (hasOwn.call(m, "responseId")) copy.responseId = m["responseId"] as string
    if (counted !== undefined) copy.usage = counted
    if (hasOwn.call(m, "stopReason")) copy.stopReason = m["stopReason"] as string
    if (hasOwn.call(m, "error")) copy.error = m["error"] as string
    return Object.freeze(copy)
  }

  /** The canonical message `m` frozen (in place when the pass owns it, else a fresh copy), or undefined when it is not canonical. */
  const message = (m: unknown, tally: Pass): RecordV2.Message | undefined => {
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
      if (tally.own) return Object.freeze(m) as RecordV2.AssistantMessage
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
      return Object.freeze(tally.own ? m : options === null ? { role: USER, id, content: parts } : { role: USER, id, content: parts, options }) as RecordV2.UserMessage
    }
    if (role === TOOL) {
      const n = matchKeys(m, TOOL_SHAPE)
      const toolCallId = m["toolCallId"]
      const toolName = m["toolName"]
      const isError = m["isError"]
      if (n < 0 || !isId(id) || !isId(toolCallId) || !isId(toolName) || typeof isError !== "boolean") return undefined
      const parts = content(m["content"], TOOL_PARTS, tally)
      if (parts === undefined) return undefined
      const answered = hasOwn.call(m, "result")
      const result = answered ? jsonOf(m["result"], MESSAGE_JSON_DEPTH, tally) : undefined
      if (answered && result === undefined) return undefined
      const options = optionsOf(m, MESSAGE_JSON_DEPTH, tally)
      if (options === undefined) return undefined
      tally.keys += n
      if (tally.own) return answered ? frozenWith(m, "result", result) : Object.freeze(m) as RecordV2.ToolMessage
      const message: { [key: string]: unknown } = { role: TOOL, id, toolCallId, toolName, isError, content: parts }
      if (answered) message["result"] = result
      if (options !== null) message["options"] = options
      return Object.freeze(message) as RecordV2.ToolMessage
    }
    if (role === SYSTEM) {
      const n = matchKeys(m, SYSTEM_SHAPE)
      const text = m["content"]
      if (n < 0 || !isId(id) || typeof text !== "string") return undefined
      const options = optionsOf(m, MESSAGE_JSON_DEPTH, tally)
      if (options === undefined) return undefined
      tally.keys += n
      return Object.freeze(tally.own ? m : options === null ? { role: SYSTEM, id, content: text } : { role: SYSTEM, id, content: text, options }) as RecordV2.SystemMessage
    }
    return undefined
  }

  /** The canonical entry record `v` frozen (in place when the pass owns it, else a fresh copy), or undefined when it is not canonical. */
  const entry = (v: unknown, tally: Pass): RecordV2.SessionEntry | undefined => {
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
      if (tally.own) return Object.freeze(v) as RecordV2.MessageEntry
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, message: copied }) as RecordV2.MessageEntry
    }
    if (kind === KIND.compaction) {
      const summary = v["summary"]
      const firstKeptEntryId = v["firstKeptEntryId"]
      if (typeof summary !== "string" || (firstKeptEntryId !== null && !isId(firstKeptEntryId))) return undefined
      const before = hasOwn.call(v, "tokensBefore")
      if (before && !isCount(v["tokensBefore"])) return undefined
      let counted: RecordV2.Usage | undefined
      if (hasOwn.call(v, "usage") && (counted = usage(v["usage"], tally)) === undefined) return undefined
      if (tally.own) return Object.freeze(v) as RecordV2.CompactionEntry
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
      if (before) copy.tokensBefore = v["tokensBefore"]
      if (counted !== undefined) copy.usage = counted
      return Object.freeze(copy) as RecordV2.CompactionEntry
    }
    if (kind === KIND.label) {
      const targetId = v["targetId"]
      const label = v["label"]
      if (!isId(targetId) || (label !== null && !isId(label))) return undefined
      if (tally.own) return Object.freeze(v) as RecordV2.LabelEntry
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, targetId, label }) as RecordV2.LabelEntry
    }
    if (kind === KIND.title) {
      const title = v["title"]
      if (!isId(title)) return undefined
      if (tally.own) return Object.freeze(v) as RecordV2.TitleEntry
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, title }) as RecordV2.TitleEntry
    }
    if (kind === KIND.model) {
      const provider = v["provider"]
      const model = v["model"]
      if (!isId(provider) || !isId(model)) return undefined
      if (hasOwn.call(v, "thinking") && !isId(v["thinking"])) return undefined
      if (tally.own) return Object.freeze(v) as RecordV2.ModelEntry
      if (!hasOwn.call(v, "thinking")) {
        return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, provider, model }) as RecordV2.ModelEntry
      }
      const thinking = v["thinking"]
      return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, provider, model, thinking }) as RecordV2.ModelEntry
    }
    const customType = v["customType"]
    if (!isId(customType)) return undefined
    const data = jsonOf(v["data"], ENTRY_JSON_DEPTH, tally)
    if (data === undefined) return undefined
    if (tally.own) return frozenWith(v, "data", data)
    return Object.freeze({ type: ENTRY, version: VERSION, id, parentId, timestamp, kind, customType, data }) as RecordV2.CustomEntry
  }

  return {
    line: (value, text) => {
      // The parsed value is the caller's own, made for this call: its objects become the entry's.
      const counted = pass(true)
      const decoded = entry(value, counted)
      if (decoded === undefined) return undefined
      const colons = keyColons(text)
      if (colons >> 1 === counted.keys) return { entry: decoded, numbers: counted.listed || (colons & 1) === 1 }
      // Whitespace, or a string that starts with a colon: the exact count decides, and the caller checks the numbers.
      return hasKeyTokens(text, counted.keys) ? { entry: decoded, numbers: true } : undefined
    },
    entry: (record) => entry(record, pass(false)),
    message: (value) => message(value, pass(false))
  }
}

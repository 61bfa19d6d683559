/**
 * The version-2 direct decoder (`internal/decodeV2.ts`) against the version-2
 * Schemas: whatever it takes, `Schema.decodeUnknownEither(RecordV2.SessionEntry)`
 * (no excess property, exact) takes too and gives the same entry (JSON values
 * with `-0` written as `0`), key for key in the same order; a line's entry is
 * its parsed value itself, frozen in place, while an entry or a message given
 * otherwise is copied; a line it declines is decided by the Schema path as if
 * it had never seen it; it takes nothing the
 * line checks refuse (a repeated key, `__proto__`, nesting beyond the cap) and
 * no message that breaks a rule within it; and it never declines a valid,
 * canonical record.
 *
 * Records are generated valid, then mutated at one place of their tree: a key
 * removed, added, renamed, repeated or mistyped at every level; keys reordered;
 * a literal, ID, timestamp, base64 text, blob name or count made wrong; a
 * number beyond 2^53 or beyond a double; a `__proto__` key, however spelled.
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { decodeLines } from "../src/Codec.js"
import { checkParsedLine, firstInexactNumber, MAX_DEPTH } from "../src/Json.js"
import * as DecodeV2 from "../src/internal/decodeV2.js"
import { deepFreeze } from "../src/Record.js"
import * as RecordV2 from "../src/RecordV2.js"
import { isSessionError } from "../src/SessionError.js"

const direct = DecodeV2.make({
  entry: RecordV2.SessionEntry,
  message: RecordV2.Message,
  assistantPart: RecordV2.AssistantPart,
  userPart: RecordV2.UserPart,
  toolPart: RecordV2.ToolPart,
  fileData: RecordV2.FileData,
  meta: RecordV2.Meta,
  usage: RecordV2.Usage
})

const strict = { onExcessProperty: "error", exact: true } as const
const schemaEntry = Schema.decodeUnknownEither(RecordV2.SessionEntry, strict)
const schemaMessage = Schema.decodeUnknownEither(RecordV2.Message, strict)

/** A copy of decoded data with every `-0` written as `0`, as the direct decoder copies JSON values. */
const normalized = (v: unknown): unknown => {
  if (typeof v === "number") return Object.is(v, -0) ? 0 : v
  if (Array.isArray(v)) return v.map(normalized)
  if (typeof v === "object" && v !== null) {
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(v)) out[key] = normalized((v as Record<string, unknown>)[key])
    return out
  }
  return v
}

const frozenDeep = (v: unknown): boolean =>
  typeof v !== "object" || v === null || (Object.isFrozen(v) && Object.values(v).every(frozenDeep))

const objectsOf = (v: unknown, out = new Set<object>()): Set<object> => {
  if (typeof v === "object" && v !== null) {
    out.add(v)
    for (const child of Object.values(v)) objectsOf(child, out)
  }
  return out
}

/** The rules inside one message that the Schemas do not see: call IDs once; each result answers an earlier provider-executed call, once. */
const keepsMessageRules = (message: RecordV2.Message): boolean => {
  if (message.role !== "assistant") return true
  const calls = new Map<string, { readonly name: string; readonly provider: boolean; answered: boolean }>()
  for (const part of message.content) {
    if (part.type === "tool-call") {
      if (calls.has(part.id)) return false
      calls.set(part.id, { name: part.name, provider: part.providerExecuted === true, answered: false })
    } else if (part.type === "tool-result") {
      const call = calls.get(part.toolCallId)
      if (call === undefined || !call.provider || call.name !== part.toolName || call.answered) return false
      call.answered = true
    }
  }
  return true
}

/**
 * What the direct decoder is held to for one parsed value: undefined when it declines, else the
 * same value as the Schema decode; and nothing taken that a line check or a message rule refuses.
 * `parsed` is what the decoder was given: `owned` (a line's), the result is made of its objects,
 * frozen in place; else the result shares none of them and `parsed` is left as it was. `pristine`
 * is the same value, parsed again, that no decoder saw: what the Schemas decode.
 */
const checkAgainstSchema = (
  fast: RecordV2.SessionEntry | RecordV2.Message,
  parsed: unknown,
  pristine: unknown,
  decoded: Either.Either<unknown, unknown>,
  owned: boolean
): void => {
  expect(Either.isRight(decoded)).toBe(true)
  const expected = deepFreeze(normalized(Either.getOrThrow(decoded)))
  expect(fast).toEqual(expected)
  // The same keys in the same order: the canonical line is what JSON.stringify writes.
  expect(JSON.stringify(fast)).toBe(JSON.stringify(expected))
  expect(frozenDeep(fast)).toBe(true)
  const shared = objectsOf(parsed)
  if (owned) {
    // The parsed value itself, every object of it frozen: nothing else holds it.
    expect(fast).toBe(parsed)
    for (const o of objectsOf(fast)) expect(shared.has(o)).toBe(true)
  } else {
    // Fresh: no object of the result is one of the parsed value's, which is left unfrozen.
    for (const o of objectsOf(fast)) expect(shared.has(o)).toBe(false)
    for (const o of shared) expect(Object.isFrozen(o)).toBe(false)
  }
  const message = "kind" in fast ? (fast.kind === "message" ? fast.message : undefined) : fast
  if (message !== undefined) expect(keepsMessageRules(message)).toBe(true)
  // And the loader's own Schema path (the message rules and the copy included) gives the same value.
  const loaded = "kind" in fast ? Either.merge(RecordV2.decodeEntry(pristine as Record<string, unknown>)) : Either.merge(RecordV2.decodeMessage(pristine))
  expect(loaded).toEqual(fast)
  expect(JSON.stringify(loaded)).toBe(JSON.stringify(fast))
}

// ---------------------------------------------------------------------------
// Valid records

const id = fc.oneof(
  { arbitrary: fc.constantFrom("e", "c1", "a:b", "x\"y", "\\", "é"), weight: 3 },
  { arbitrary: fc.string({ minLength: 1, maxLength: 5 }), weight: 2 }
)
const text = fc.oneof(fc.string({ maxLength: 6 }), fc.constantFrom("", ":", "\":", "\"arguments\":", "é😀", "\u2028"))
const nonEmpty = fc.oneof(id, fc.constantFrom("image/png", "anthropic", "claude-sonnet-4-5"))
const json: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    fc.constantFrom(null, true, false, 0, 1, -1.5, 1e21, 2 ** 53, "", ":"),
    text,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom("a", "b", ":", "constructor", "toString", "hasOwnProperty", "signature"), tie("value"), { maxKeys: 3 })
  )
})).value
const jsonObject = fc.dictionary(fc.constantFrom("path", "limit", "k:", "", "signature", "type"), json, { maxKeys: 3 })
const count = fc.oneof(fc.nat({ max: 5_000 }), fc.constant(Number.MAX_SAFE_INTEGER))
const options = { options: jsonObject }

const base64 = fc.uint8Array({ maxLength: 7 }).map((bytes) => Buffer.from(bytes).toString("base64"))
const blobRef = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => `sha256:${Buffer.from(bytes).toString("hex")}`)
const fileData = fc.oneof(
  fc.record({ base64 }),
  fc.record({ url: text }),
  fc.record({ blob: blobRef, size: count })
)
const textPart = fc.record({ type: fc.constant("text"), text, ...options }, { requiredKeys: ["type", "text"] })
const reasoningPart = fc.record({ type: fc.constant("reasoning"), text, ...options }, { requiredKeys: ["type", "text"] })
const filePart = fc.record(
  { type: fc.constant("file"), mediaType: nonEmpty, name: text, data: fileData, ...options },
  { requiredKeys: ["type", "mediaType", "data"] }
)
const callPart = fc.record(
  { type: fc.constant("tool-call"), id, name: nonEmpty, arguments: jsonObject, providerExecuted: fc.constant(true as const), ...options },
  { requiredKeys: ["type", "id", "name", "arguments"] }
)

/**
 * An assistant's content: text, reasoning, files and tool calls with distinct IDs, each
 * provider-executed call answered by a `tool-result` part somewhere after it, or not at all.
 */
const assistantContent = fc.tuple(
  fc.array(fc.oneof(textPart, reasoningPart, filePart, callPart), { maxLength: 4 }),
  fc.array(fc.record({ answer: fc.boolean(), later: fc.nat(3), isError: fc.boolean(), result: json, options: fc.option(jsonObject) }), {
    minLength: 4,
    maxLength: 4
  })
).map(([parts, answers]) => {
  const content: Array<Record<string, unknown>> = []
  const pending: Array<{ readonly at: number; readonly part: Record<string, unknown> }> = []
  parts.forEach((part, i) => {
    const p: Record<string, unknown> = part.type === "tool-call" ? { ...part, id: `${(part as { id: string }).id}-${i}` } : part
    content.push(p)
    const a = answers[i]!
    if (p["type"] === "tool-call" && p["providerExecuted"] === true && a.answer) {
      const result: Record<string, unknown> = { type: "tool-result", toolCallId: p["id"], toolName: p["name"], isError: a.isError, result: a.result }
      if (a.options !== null) result["options"] = a.options
      pending.push({ at: i + a.later, part: result })
    }
    for (const r of pending.filter((r) => r.at <= i)) content.push(r.part)
    pending.splice(0, pending.length, ...pending.filter((r) => r.at > i))
  })
  for (const r of pending) content.push(r.part)
  return content
})

const usage = fc.record(
  { inputTokens: count, outputTokens: count, reasoningTokens: count, cachedInputTokens: count, cacheWriteTokens: count },
  { requiredKeys: ["inputTokens", "outputTokens"] }
)
const meta = fc.record(
  { provider: text, model: text, responseId: text, usage, stopReason: text, error: text },
  { requiredKeys: [] }
).filter((m) => Object.keys(m).length > 0)

const message = fc.oneof(
  fc.record({ role: fc.constant("system"), id, content: text, ...options }, { requiredKeys: ["role", "id", "content"] }),
  fc.record(
    { role: fc.constant("user"), id, content: fc.array(fc.oneof(textPart, filePart), { minLength: 1, maxLength: 3 }), ...options },
    { requiredKeys: ["role", "id", "content"] }
  ),
  fc.record({ role: fc.constant("assistant"), id, content: assistantContent, meta, ...options }, { requiredKeys: ["role", "id", "content"] }),
  fc.record(
    {
      role: fc.constant("tool"),
      id,
      toolCallId: id,
      toolName: nonEmpty,
      isError: fc.boolean(),
      content: fc.array(fc.oneof(textPart, filePart), { maxLength: 3 }),
      result: json,
      ...options
    },
    { requiredKeys: ["role", "id", "toolCallId", "toolName", "isError", "content"] }
  )
)

const timestamp = fc.integer({ min: -62_167_219_200_000, max: 253_402_300_799_999 }).map((ms) => new Date(ms).toISOString())
const envelope = { type: fc.constant("entry"), version: fc.constant(2), id, parentId: fc.oneof(fc.constant(null), id), timestamp }
const envelopeKeys = ["type", "version", "id", "parentId", "timestamp", "kind"] as const
const record = fc.oneof(
  { arbitrary: fc.record({ ...envelope, kind: fc.constant("message"), message }), weight: 6 },
  fc.record(
    { ...envelope, kind: fc.constant("compaction"), summary: text, firstKeptEntryId: fc.oneof(fc.constant(null), id), tokensBefore: count, usage },
    { requiredKeys: [...envelopeKeys, "summary", "firstKeptEntryId"] }
  ),
  fc.record({ ...envelope, kind: fc.constant("label"), targetId: id, label: fc.oneof(fc.constant(null), nonEmpty) }),
  fc.record({ ...envelope, kind: fc.constant("title"), title: nonEmpty }),
  fc.record(
    { ...envelope, kind: fc.constant("model"), provider: nonEmpty, model: nonEmpty, thinking: nonEmpty },
    { requiredKeys: [...envelopeKeys, "provider", "model"] }
  ),
  fc.record({ ...envelope, kind: fc.constant("custom"), customType: nonEmpty, data: json })
)

// ---------------------------------------------------------------------------
// Mutations at one place of the tree

type Json = { [key: string]: unknown } | Array<unknown>

/** Every object and array of `v` (the record first). */
const containers = (v: unknown, out: Array<Json> = []): Array<Json> => {
  if (typeof v === "object" && v !== null) {
    out.push(v as Json)
    for (const child of Object.values(v)) containers(child, out)
  }
  return out
}

/** Stands for a number literal JSON.stringify cannot write; replaced in the text. */
const LITERALS = ["12345678901234567891", "9007199254740993", "-9007199254740993", "1e400", "-1e400", "1.0", "-0", "2e-324", "1E2", "2.0000000000000001"]
const marker = (i: number) => `@@literal${i}@@`

const wrongValue = fc.constantFrom<unknown>(null, 0, 1, 2, -1, 1.5, "", "x", "1", true, false, [], {}, [1], { a: 1 }, [{}], 2 ** 53)
const badScalar = fc.constantFrom<unknown>(
  "",
  "2026-01-02T03:04:05.006z",
  "2026-02-29T00:00:00.000Z",
  "2026-01-02T03:04:05Z",
  2,
  1,
  "2",
  "entry",
  "session",
  "message",
  "compaction",
  "label",
  "title",
  "model",
  "custom",
  "system",
  "user",
  "assistant",
  "tool",
  "text",
  "reasoning",
  "file",
  "tool-call",
  "tool-result",
  "QR==",
  "QQ",
  "QQ==",
  "Q===",
  `sha256:${"a".repeat(64)}`,
  `sha256:${"A".repeat(64)}`,
  `sha256:${"a".repeat(63)}`,
  true,
  false
)

interface Mutation {
  readonly kind: "none" | "remove" | "add" | "retype" | "proto" | "literal" | "rename" | "reorder" | "swap" | "scalar" | "deep"
  readonly at: number
  readonly pick: number
  readonly value: unknown
  readonly literal: number
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom(
    "none",
    "none",
    "none",
    "remove",
    "add",
    "retype",
    "retype",
    "proto",
    "literal",
    "literal",
    "rename",
    "reorder",
    "swap",
    "scalar",
    "scalar",
    "deep"
  ),
  at: fc.nat(),
  pick: fc.nat(),
  value: fc.oneof(wrongValue, json, badScalar),
  literal: fc.nat({ max: LITERALS.length - 1 })
})

/** `depth` nested arrays around `inner`. */
const nested = (depth: number, inner: unknown = 1): unknown => {
  let v = inner
  for (let i = 0; i < depth; i++) v = [v]
  return v
}

/** The line of `r` after `m`, with `__proto__` spelled `protoSpelling`. */
const mutate = (r: unknown, m: Mutation, protoSpelling: string): string => {
  const copy = structuredClone(r)
  const all = containers(copy)
  const target = all[m.at % all.length]!
  const keys = Object.keys(target)
  const key = Array.isArray(target) ? (target.length === 0 ? 0 : m.pick % target.length) : keys.length === 0 ? undefined : keys[m.pick % keys.length]!
  const set = (k: string | number, v: unknown) => ((target as Record<string, unknown>)[k] = v)
  const rebuild = (entries: ReadonlyArray<readonly [string, unknown]>) => {
    for (const k of keys) delete (target as Record<string, unknown>)[k]
    for (const [k, v] of entries) set(k, v)
  }
  switch (m.kind) {
    case "remove":
      if (Array.isArray(target)) target.splice(m.pick % (target.length + 1), 1)
      else if (key !== undefined) delete (target as Record<string, unknown>)[key]
      break
    case "add":
      if (Array.isArray(target)) target.push(m.value)
      else set(["extra", "options", "name", "meta", "result", "tokensBefore", "thinking", "providerExecuted"][m.pick % 8]!, m.value)
      break
    case "retype":
    case "scalar":
      if (key !== undefined) set(key, m.value)
      break
    case "literal":
      if (Array.isArray(target)) target.push(marker(m.literal))
      else set(key ?? "n", marker(m.literal))
      break
    case "rename":
      if (!Array.isArray(target) && key !== undefined) rebuild(Object.entries(target).map(([k, v]) => [k === key ? `${k}_` : k, v] as const))
      break
    case "reorder":
      if (!Array.isArray(target) && keys.length > 1) rebuild(Object.entries(target).reverse())
      break
    case "swap":
      // Two neighbouring keys change places.
      if (!Array.isArray(target) && keys.length > 1) {
        const entries = Object.entries(target)
        const i = m.pick % (entries.length - 1)
        ;[entries[i], entries[i + 1]] = [entries[i + 1]!, entries[i]!]
        rebuild(entries)
      } else if (Array.isArray(target) && target.length > 1) target.reverse()
      break
    case "proto":
      if (Array.isArray(target)) target.push({ "@@proto@@": 1 })
      else set("@@proto@@", {})
      break
    case "deep": {
      // A value nested to around the cap, wherever it lands.
      const value = nested(MAX_DEPTH - 8 + (m.pick % 12))
      if (Array.isArray(target)) target.push(value)
      else if (key !== undefined) set(key, value)
      break
    }
    case "none":
      break
  }
  let line = JSON.stringify(copy)
  line = line.replaceAll("\"@@proto@@\"", protoSpelling)
  LITERALS.forEach((literal, i) => (line = line.replaceAll(`"${marker(i)}"`, literal)))
  return line
}

/** The same line with the first member of the `at`-th non-empty object repeated right after itself. */
const repeatMember = (line: string, at: number): string => {
  const value: unknown = JSON.parse(line)
  const objects = containers(value).filter((c) => !Array.isArray(c) && Object.keys(c).length > 0)
  if (objects.length === 0) return line
  const target = objects[at % objects.length]!
  const [k] = Object.keys(target)
  const member = `${JSON.stringify(k)}:${JSON.stringify((target as Record<string, unknown>)[k!])}`
  const i = line.indexOf(`{${member}`)
  return i === -1 ? line : `${line.slice(0, i + 1)}${member},${line.slice(i + 1)}`
}

/** What the loader's Schema path makes of a parsed line: the line checks, then the entry's Schema; the record or the error's code and message. */
const schemaPath = (value: unknown, line: string): unknown => {
  const checked = checkParsedLine(value, line)
  if (Either.isLeft(checked)) return { reason: checked.left }
  const decoded = RecordV2.decodeEntry(checked.right, 2)
  return Either.isRight(decoded)
    ? { entry: JSON.stringify(decoded.right, (_, v) => (Object.is(v, -0) ? "-0" : v)), frozen: frozenDeep(decoded.right) }
    : { code: decoded.left.code, message: decoded.left.message }
}

const PROTO = ["\"__proto__\"", "\"\\u005f_proto__\"", "\"__prot\\u006f__\""]

const parse = (line: string): { readonly value: unknown } | undefined => {
  try {
    return { value: JSON.parse(line) }
  } catch {
    return undefined
  }
}

// ---------------------------------------------------------------------------

describe("the version-2 direct decoder against the Schemas", () => {
  it("never declines a valid, canonical record, and gives what the Schema decode gives", () => {
    const kinds = new Set<string>()
    fc.assert(
      fc.property(record, (r) => {
        const line = JSON.stringify(r)
        const value: unknown = JSON.parse(line)
        const pristine: unknown = JSON.parse(line)
        const fast = direct.line(value, line)
        expect(fast).toBeDefined()
        checkAgainstSchema(fast!.entry, value, pristine, schemaEntry(pristine), true)
        const copied = direct.entry(pristine)
        expect(copied).toEqual(fast!.entry)
        checkAgainstSchema(copied!, pristine, JSON.parse(line), schemaEntry(JSON.parse(line)), false)
        kinds.add(fast!.entry.kind === "message" ? `message:${fast!.entry.message.role}` : fast!.entry.kind)
        // JSON.stringify writes every number exactly: nothing is left to check, unless a number sits
        // in an array, or the quick count of keys cannot settle the line (a string that starts with
        // a colon, whitespace before a colon inside a string).
        if (fast!.numbers) expect(/[[,]-?\d/.test(line) || /[[{,:]":/.test(line) || /[ \t\n\r]:/.test(line)).toBe(true)
      }),
      { numRuns: 3_000 }
    )
    expect([...kinds].sort()).toEqual([
      "compaction",
      "custom",
      "label",
      "message:assistant",
      "message:system",
      "message:tool",
      "message:user",
      "model",
      "title"
    ])
  })

  it("declines every mutated line it cannot take exactly, and takes the others as the Schemas do", () => {
    let taken = 0
    let declined = 0
    let numbers = 0
    fc.assert(
      fc.property(
        record,
        mutation,
        fc.nat({ max: PROTO.length - 1 }),
        fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: fc.nat(), weight: 1 }),
        (r, m, proto, repeat) => {
          let line = mutate(r, m, PROTO[proto]!)
          if (repeat !== null) line = repeatMember(line, repeat)
          const parsed = parse(line)
          if (parsed === undefined) return
          const pristine: unknown = JSON.parse(line)
          const fast = direct.line(parsed.value, line)
          if (fast === undefined) {
            declined++
            // What the decoder froze of the value before it declined changes nothing the loader's
            // Schema path then decides: the same record, or the same error.
            expect(schemaPath(parsed.value, line)).toEqual(schemaPath(pristine, line))
            return
          }
          taken++
          checkAgainstSchema(fast.entry, parsed.value, pristine, schemaEntry(pristine), true)
          // Nothing the line checks refuse: a repeated key, __proto__, nesting beyond the cap.
          expect(Either.isRight(checkParsedLine(parsed.value, line))).toBe(true)
          // A literal no number holds exactly, anywhere in the line, is left for the caller to find.
          if (fast.numbers) numbers++
          else expect(firstInexactNumber(line)).toBeUndefined()
        }
      ),
      { numRuns: 10_000 }
    )
    expect(taken).toBeGreaterThan(2_000)
    expect(declined).toBeGreaterThan(3_000)
    expect(numbers).toBeGreaterThan(200)
  })

  it("decodes a message as the Schema decode does, or declines it", () => {
    let taken = 0
    fc.assert(
      fc.property(message, mutation, (msg, m) => {
        const text = mutate(msg, m, "\"__proto__\"")
        const parsed = parse(text)
        if (parsed === undefined) return
        const fast = direct.message(parsed.value)
        if (fast === undefined) {
          if (m.kind === "none") throw new Error(`a valid message was declined: ${JSON.stringify(msg)}`)
          return
        }
        taken++
        checkAgainstSchema(fast, parsed.value, JSON.parse(text), schemaMessage(JSON.parse(text)), false)
      }),
      { numRuns: 5_000 }
    )
    expect(taken).toBeGreaterThan(1_500)
  })
})

// ---------------------------------------------------------------------------

const ENVELOPE = { type: "entry", version: 2, id: "e", parentId: null, timestamp: "2026-01-02T03:04:05.006Z" } as const
const lineOf = (body: Record<string, unknown>) => JSON.stringify({ ...ENVELOPE, ...body })
const assistant = (content: ReadonlyArray<unknown>) => lineOf({ kind: "message", message: { role: "assistant", id: "m", content } })
const call = (id: string, name: string, providerExecuted?: true) => ({
  type: "tool-call",
  id,
  name,
  arguments: {},
  ...(providerExecuted ? { providerExecuted } : {})
})
const result = (toolCallId: string, toolName: string) => ({ type: "tool-result", toolCallId, toolName, isError: false, result: null })
const takes = (line: string) => direct.line(JSON.parse(line), line)

describe("the rules inside one message", () => {
  it("takes provider-executed calls answered once, after them, in the same message", () => {
    for (
      const content of [
        [call("a", "search", true), result("a", "search")],
        [call("a", "search", true), { type: "text", text: "found" }, result("a", "search"), call("b", "read")],
        [call("a", "search", true), call("b", "fetch", true), result("b", "fetch"), result("a", "search")],
        [call("a", "search", true)]
      ]
    ) {
      const line = assistant(content)
      expect(takes(line)?.entry).toEqual(deepFreeze(normalized(Either.getOrThrow(schemaEntry(JSON.parse(line))))))
    }
  })

  it("declines what only the message rules refuse, which the Schemas take", () => {
    for (
      const content of [
        // A call ID twice in one message.
        [call("a", "read"), call("a", "read")],
        [call("a", "search", true), result("a", "search"), call("a", "search", true)],
        // A result with no call before it, or before its call.
        [result("a", "search")],
        [result("a", "search"), call("a", "search", true)],
        // A result answering a call that is not provider-executed.
        [call("a", "read"), result("a", "read")],
        // A result under another tool's name, or answering the same call twice.
        [call("a", "search", true), result("a", "fetch")],
        [call("a", "search", true), result("a", "search"), result("a", "search")]
      ]
    ) {
      const line = assistant(content)
      expect(Either.isRight(schemaEntry(JSON.parse(line)))).toBe(true)
      expect(isSessionError(Either.merge(RecordV2.decodeEntry(JSON.parse(line))))).toBe(true)
      expect(takes(line)).toBeUndefined()
      expect(direct.message(JSON.parse(line).message)).toBeUndefined()
    }
  })
})

describe("deep and odd JSON values", () => {
  // A custom entry's data sits at depth 2 of its record (so k arrays nest to depth k + 1); a value in
  // a tool call's arguments at 6 (k + 5).
  const custom = (data: unknown) => lineOf({ kind: "custom", customType: "x", data })
  const args = (value: unknown) => assistant([{ type: "tool-call", id: "c", name: "n", arguments: { value } }])

  it("takes nesting up to the cap and declines it beyond, as the line checks do", () => {
    for (const [make, base] of [[custom, 1], [args, 5]] as const) {
      const atCap = make(nested(MAX_DEPTH - base))
      const beyond = make(nested(MAX_DEPTH - base + 1))
      expect(Either.isRight(checkParsedLine(JSON.parse(atCap), atCap))).toBe(true)
      expect(Either.isRight(checkParsedLine(JSON.parse(beyond), beyond))).toBe(false)
      expect(takes(atCap)).toBeDefined()
      expect(takes(beyond)).toBeUndefined()
    }
    // Nesting far deeper than any stack: declined, never a thrown error.
    const deep = custom(null).replace("null", "[".repeat(100_000) + "]".repeat(100_000))
    expect(takes(deep)).toBeUndefined()
  })

  it("declines __proto__ however spelled, and copies keys that name Object.prototype's members", () => {
    for (const spelling of PROTO) {
      const line = custom({ a: 1 }).replace("\"a\"", spelling)
      expect(takes(line)).toBeUndefined()
    }
    const odd = { constructor: 1, toString: "x", hasOwnProperty: [null], valueOf: { __defineGetter__: true } }
    const taken = takes(custom(odd))
    expect(taken?.entry).toEqual({ ...ENVELOPE, kind: "custom", customType: "x", data: odd })
    expect(frozenDeep(taken?.entry)).toBe(true)
  })

  it("refuses a part whose type is an object without a text, with a typed error rather than a throw", () => {
    // The union of parts picks a member by the text of `type`: `{"toString":null}` has none.
    const header = JSON.stringify({ type: "session", version: 2, id: "s", timestamp: ENVELOPE.timestamp })
    const odd = { type: { toString: null }, text: "" }
    for (
      const [message, types] of [
        [{ role: "assistant", id: "m", content: [{ type: "text", text: "" }, odd] }, "\"text\" | \"reasoning\" | \"file\" | \"tool-call\" | \"tool-result\""],
        [{ role: "user", id: "m", content: [odd] }, "\"text\" | \"file\""],
        [{ role: "tool", id: "m", toolCallId: "c", toolName: "n", isError: false, content: [odd] }, "\"text\" | \"file\""]
      ] as const
    ) {
      const line = lineOf({ kind: "message", message })
      expect(takes(line)).toBeUndefined()
      const at = message.content.length - 1
      const decoded = decodeLines({ lines: [header, line], sizes: [header.length, line.length], tail: "none" })
      expect(Either.isLeft(decoded) && decoded.left.code).toBe("SESSION_INVALID_MESSAGE")
      expect(Either.isLeft(decoded) && decoded.left.message).toContain(`["content"][${at}]["type"] Expected ${types}, actual {"toString":null}`)
      const direct = RecordV2.decodeMessage(JSON.parse(line).message)
      expect(Either.isLeft(direct) && direct.left.code).toBe("SESSION_INVALID_MESSAGE")
    }
  })

  it("copies -0 as 0", () => {
    const line = custom([-0, { z: -0 }]).replace("[0,{\"z\":0}]", "[-0,{\"z\":-0}]")
    const data = (takes(line)!.entry as RecordV2.CustomEntry).data as [number, { z: number }]
    expect(Object.is(data[0], 0)).toBe(true)
    expect(Object.is(data[1].z, 0)).toBe(true)
    // A count of -0 is left to the Schema path (which would keep it as -0).
    expect(takes(lineOf({ kind: "compaction", summary: "s", firstKeptEntryId: null, tokensBefore: 0 }).replace(":0}", ":-0}"))).toBeUndefined()
  })

  it("leaves a number literal to the caller where no number holds it exactly, or where it did not look", () => {
    const usage = (inputTokens: string) =>
      lineOf({ kind: "message", message: { role: "assistant", id: "m", content: [], meta: { usage: { inputTokens: 1, outputTokens: 2 } } } })
        .replace("\"inputTokens\":1", `"inputTokens":${inputTokens}`)
    const blob = (size: string) =>
      lineOf({ kind: "message", message: { role: "user", id: "m", content: [{ type: "file", mediaType: "image/png", data: { blob: `sha256:${"0".repeat(64)}`, size: 3 } }] } })
        .replace("\"size\":3", `"size":${size}`)
    const compaction = (tokensBefore: string) =>
      lineOf({ kind: "compaction", summary: "s", firstKeptEntryId: null, tokensBefore: 0 }).replace("\"tokensBefore\":0", `"tokensBefore":${tokensBefore}`)
    const exact = [
      usage("1"),
      usage("1.0"),
      usage("1E2"),
      blob("0.00000000000000000003e20"),
      blob("123456789012345"),
      compaction("0"),
      custom({ a: 1.5, b: -2, c: 12345678901234567890e10 }),
      custom(["1", null, true]),
      args(4503599627370496.5),
      lineOf({ kind: "title", title: "t" }).replace("\"version\":2", "\"version\":2.0")
    ]
    for (const line of exact) {
      expect(firstInexactNumber(line)).toBeUndefined()
      expect(takes(line)?.numbers).toBe(false)
    }
    const inexact = [
      usage("2e-324"),
      usage("1.00000000000000001"),
      blob("3.00000000000000001"),
      compaction("2e-324"),
      custom({ a: 1 }).replace(":1}", ":12345678901234567891}"),
      args(1).replace(":1}", ":9007199254740993}"),
      lineOf({ kind: "title", title: "t" }).replace("\"version\":2", "\"version\":2.0000000000000001")
    ]
    for (const line of inexact) {
      expect(firstInexactNumber(line)).toBeDefined()
      expect(takes(line)?.numbers).toBe(true)
    }
    // Not looked at: a number in an array, a line written with whitespace.
    expect(takes(custom([1]))?.numbers).toBe(true)
    expect(takes(lineOf({ kind: "title", title: "t" }).replace("\"title\":", "\"title\": "))?.numbers).toBe(true)
    expect(takes(JSON.stringify(JSON.parse(lineOf({ kind: "title", title: "t" })), null, 1))?.numbers).toBe(true)
  })

  it("declines a value that is not a number JSON can write back", () => {
    expect(takes(custom({ a: 1 }).replace(":1}", ":1e400}"))).toBeUndefined()
    expect(takes(args(1).replace(":1}", ":-1e400}"))).toBeUndefined()
  })
})

/**
 * The conversion of a Pi session file to version 1 (`PiSession.fromPi`, whose module documents
 * the mapping), and the Schemas it reads Pi's format 3 through.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { decodeLines, utf8Length } from "../Codec.js"
import { firstInexactNumber } from "../Json.js"
import type { Converted, Dropped, FromPiOptions, Skipped } from "../PiSession.js"
import type { SessionEntry, SessionHeader } from "../Record.js"
import { type CorruptError, restated, sessionError } from "../SessionError.js"
import * as File from "./piFile.js"

type Counts<T> = { -readonly [K in keyof T]: number }

/** The Pi entry types that hold no conversation content, and the count each goes to. */
const SKIPPED: Readonly<Record<string, keyof Skipped>> = {
  model_change: "modelChanges",
  thinking_level_change: "thinkingLevelChanges",
  label: "labels",
  session_info: "sessionInfo",
  custom: "custom"
}

/** Entries and messages Message IR cannot hold as a whole: the count each goes to, and what it holds. */
const UNREPRESENTABLE_ENTRIES: Readonly<Record<string, readonly [keyof Dropped, string]>> = {
  compaction: ["compactions", "a compaction summary"],
  branch_summary: ["branchSummaries", "a branch summary"],
  custom_message: ["customMessages", "a custom message"]
}
const UNREPRESENTABLE_ROLES: Readonly<Record<string, readonly [keyof Dropped, string]>> = {
  bashExecution: ["bashExecutions", "a bash execution"],
  custom: ["customMessages", "a custom message"],
  branchSummary: ["branchSummaries", "a branch summary message"],
  compactionSummary: ["compactions", "a compaction summary message"]
}

// ---------------------------------------------------------------------------
// Pi's format 3, as Schemas: what this module reads of it. Unknown fields are
// ignored, as Pi ignores them. Fields carried over unchanged into Message IR
// (tool-call IDs, names and arguments, a result's `toolCallId`, `toolName` and
// `isError`, the header's ID and timestamp) are `Unknown` here: the loader's own
// decoder checks them on the converted record, so its explanation names them.

/** A `message` entry: the entry and its message, read by role below. */
export const PiMessageEntry = Schema.Struct({ ...File.PiEntry.fields, type: Schema.Literal("message"), message: Schema.Unknown })

/** Content of user and tool-result messages: a string, or parts. */
const PiContent = Schema.Union(Schema.String, Schema.Array(Schema.Unknown))

export const PiUserMessage = Schema.Struct({ role: Schema.Literal("user"), content: PiContent })
export const PiToolResultMessage = Schema.Struct({
  role: Schema.Literal("toolResult"),
  toolCallId: Schema.Unknown,
  toolName: Schema.Unknown,
  content: PiContent,
  isError: Schema.Unknown
})
export const PiAssistantMessage = Schema.Struct({ role: Schema.Literal("assistant"), content: Schema.Array(Schema.Unknown) })

export const PiTextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
/** Only the kind of an image or thinking part is read: Message IR never holds one. */
export const PiImagePart = Schema.Struct({ type: Schema.Literal("image") })
export const PiThinkingPart = Schema.Struct({ type: Schema.Literal("thinking") })
export const PiToolCallPart = Schema.Struct({
  type: Schema.Literal("toolCall"),
  id: Schema.Unknown,
  name: Schema.Unknown,
  arguments: Schema.Unknown
})

const decodeUser = Schema.decodeUnknownEither(PiUserMessage)
const decodeToolResult = Schema.decodeUnknownEither(PiToolResultMessage)
const decodeAssistant = Schema.decodeUnknownEither(PiAssistantMessage)
const decodeText = Schema.decodeUnknownEither(PiTextPart)
const decodeToolCall = Schema.decodeUnknownEither(PiToolCallPart)

const hasOwn = Object.prototype.hasOwnProperty
const own = (o: { readonly [key: string]: unknown }, key: string): unknown => (hasOwn.call(o, key) ? o[key] : undefined)
const isObject = (v: unknown): v is { readonly [key: string]: unknown } => typeof v === "object" && v !== null && !Array.isArray(v)
const plural = (n: number, one: string, many: string): string => (n === 1 ? one : `${n} ${many}`)

/**
 * A converted record before the loader has read it: Message IR in shape, with the fields carried
 * over from Pi as Pi wrote them. Its canonical line is what the loader then decodes.
 */
interface Candidate {
  readonly [key: string]: unknown
}

/** The conversion state of one call. */
interface Run {
  readonly lossy: boolean
  readonly dropped: Counts<Dropped>
}

/** What one entry converts to: a message, or nothing (skipped or dropped); else the error that refuses the file. */
type Outcome = Either.Either<Candidate | undefined, CorruptError>

/** Nothing to convert, and nothing refused. */
const NOTHING: Either.Either<undefined, never> = Either.right(undefined)

/**
 * Content Message IR cannot hold, `count` pieces of `kind` in entry `id`: the
 * error that refuses the file, or (lossy) nothing after counting it.
 */
const unrepresentable = (
  run: Run,
  kind: keyof Dropped,
  count: number,
  what: string,
  id: string,
  line: number
): Either.Either<undefined, CorruptError> => {
  if (!run.lossy) {
    return Either.left(sessionError(
      "SESSION_INVALID_MESSAGE",
      `Pi entry "${id}" holds ${what}, which Message IR v1 cannot hold (a lossy import drops it)`,
      { line }
    ))
  }
  run.dropped[kind] += count
  return NOTHING
}

const invalidMessage = (id: string, line: number, reason: string): Either.Either<never, CorruptError> =>
  Either.left(sessionError("SESSION_INVALID_MESSAGE", `Pi entry "${id}": ${reason}`, { line }))

/** The type of a part, when it has a string one (the only kind a part is read by). */
const partType = (part: unknown): string | undefined => {
  const type = isObject(part) ? own(part, "type") : undefined
  return typeof type === "string" ? type : undefined
}

/** The text of a user or tool-result message (`where`): its text parts joined; an image is unrepresentable. */
const textOf = (
  run: Run,
  content: typeof PiContent.Type,
  where: string,
  id: string,
  line: number
): Either.Either<string, CorruptError> => {
  if (typeof content === "string") return Either.right(content)
  const texts: Array<string> = []
  let images = 0
  for (const part of content) {
    const type = partType(part)
    const text = type === "text" ? decodeText(part) : undefined
    if (text !== undefined && Either.isRight(text)) texts.push(text.right.text)
    else if (type === "image") images++
    else return invalidMessage(id, line, `a part that is not text or an image: ${describePart(part)}`)
  }
  if (images > 0) {
    const lost = unrepresentable(run, "images", images, `${plural(images, "an image", "images")} in ${where}`, id, line)
    if (Either.isLeft(lost)) return Either.left(lost.left)
  }
  return Either.right(texts.join("\n"))
}

/** A part named in an error: its type, or what it is when it has none. */
const describePart = (part: unknown): string => {
  const type = isObject(part) ? own(part, "type") : undefined
  if (typeof type !== "string") return part === null ? "null" : Array.isArray(part) ? "an array" : typeof part
  return type === "text" ? "a text part without a string text" : `type ${JSON.stringify(type)}`
}

/** One `message` entry's message → Message IR (or nothing, when lossy drops it). */
const convertMessage = (run: Run, message: unknown, id: string, line: number): Outcome => {
  if (!isObject(message)) return invalidMessage(id, line, "message is not an object")
  // The role is compared as a string before a Schema reads the message, so no value of it is ever turned into text.
  const role = own(message, "role")
  switch (role) {
    case "user": {
      const user = decodeUser(message)
      if (Either.isLeft(user)) return invalidMessage(id, line, "content is neither a string nor an array of parts")
      return Either.map(textOf(run, user.right.content, "a user message", id, line), (text) => ({ role: "user", id, content: text }))
    }
    case "toolResult": {
      const result = decodeToolResult(message)
      if (Either.isLeft(result)) return invalidMessage(id, line, "content is neither a string nor an array of parts")
      const { isError, toolCallId, toolName } = result.right
      return Either.map(
        textOf(run, result.right.content, "a tool result", id, line),
        (text) => ({ role: "tool", id, toolCallId, toolName, content: text, isError })
      )
    }
    case "assistant": {
      const assistant = decodeAssistant(message)
      if (Either.isLeft(assistant)) return invalidMessage(id, line, "an assistant's content is not an array of parts")
      const texts: Array<string> = []
      const toolCalls: Array<Candidate> = []
      let thinking = 0
      for (const part of assistant.right.content) {
        const type = partType(part)
        const text = type === "text" ? decodeText(part) : undefined
        const call = type === "toolCall" ? decodeToolCall(part) : undefined
        if (text !== undefined && Either.isRight(text)) texts.push(text.right.text)
        else if (type === "thinking") thinking++
        else if (call !== undefined && Either.isRight(call)) {
          toolCalls.push({ id: call.right.id, name: call.right.name, arguments: call.right.arguments })
        } else return invalidMessage(id, line, `an assistant part that is not text, thinking or a tool call: ${describePart(part)}`)
      }
      if (thinking > 0) {
        const lost = unrepresentable(run, "thinking", thinking, plural(thinking, "a thinking block", "thinking blocks"), id, line)
        if (Either.isLeft(lost)) return lost
      }
      return Either.right({ role: "assistant", id, content: texts.join("\n"), toolCalls })
    }
    default: {
      const whole = typeof role === "string" && hasOwn.call(UNREPRESENTABLE_ROLES, role) ? UNREPRESENTABLE_ROLES[role] : undefined
      if (whole === undefined) return invalidMessage(id, line, `unknown message role ${JSON.stringify(role) ?? "(none)"}`)
      return unrepresentable(run, whole[0], 1, whole[1], id, line)
    }
  }
}

/** The Pi header (line 1) → this project's header, or why the file is not a Pi v3 session. */
const convertHeader = (text: string | undefined): Either.Either<Candidate, CorruptError> =>
  // ID and timestamp are checked by the loader's header decoder.
  Either.map(File.readHeader(text), (header) => ({ type: "session", version: 1, id: own(header, "id"), timestamp: own(header, "timestamp") }))

export const fromPi = (bytes: Uint8Array, options?: FromPiOptions): Either.Either<Converted, CorruptError> => {
  const text = File.decodeUtf8(bytes)
  if (Either.isLeft(text)) return Either.left(text.left)
  const lines = File.splitLines(text.right)

  const header = convertHeader(lines[0])
  if (Either.isLeft(header)) return Either.left(header.left)

  const run: Run = {
    lossy: options?.lossy === true,
    dropped: { images: 0, thinking: 0, compactions: 0, branchSummaries: 0, customMessages: 0, bashExecutions: 0 }
  }
  const skipped: Counts<Skipped> = { modelChanges: 0, thinkingLevelChanges: 0, labels: 0, sessionInfo: 0, custom: 0 }
  // Pi entry ID → the nearest kept entry at or above it (null: none), for every entry seen so far.
  const keptAt = new Map<string, string | null>()
  // The converted records' canonical lines (key order as written here), for the loader to decode.
  const records: Array<string> = [JSON.stringify(header.right)]
  // The Pi line and entry ID of each entry record, to report the converted session's problems where they come from.
  const origins: Array<{ readonly line: number; readonly id: string }> = []

  for (let i = 1; i < lines.length; i++) {
    const line = i + 1
    const read = File.readEntry(lines[i]!, line)
    if (Either.isLeft(read)) return Either.left(read.left)
    const { record } = read.right
    const { id, parentId, timestamp, type } = read.right.entry
    if (keptAt.has(id)) return Either.left(sessionError("SESSION_DUPLICATE_ID", `Pi entry ID "${id}" is already used`, { line }))
    const parent = parentId === null ? null : keptAt.get(parentId)
    if (parent === undefined) {
      return Either.left(sessionError("SESSION_UNKNOWN_PARENT", `Pi entry "${id}": parent "${parentId}" is not an earlier entry`, { line }))
    }

    let outcome: Outcome
    if (type === "message") {
      // Re-encoding would round a literal no number holds exactly: refuse it, as a load does.
      const inexact = firstInexactNumber(lines[i]!)
      if (inexact !== undefined) {
        return Either.left(sessionError(
          "SESSION_INVALID_MESSAGE",
          `Pi entry "${id}" holds the number ${inexact.literal}, which cannot be held exactly (it would become ${JSON.stringify(Number(inexact.literal))})`,
          { line }
        ))
      }
      // The envelope is decoded above; the message itself is read by the message Schemas.
      outcome = convertMessage(run, own(record, "message"), id, line)
    } else if (hasOwn.call(SKIPPED, type)) {
      skipped[SKIPPED[type]!]++
      outcome = NOTHING
    } else if (hasOwn.call(UNREPRESENTABLE_ENTRIES, type)) {
      const [kind, what] = UNREPRESENTABLE_ENTRIES[type]!
      outcome = unrepresentable(run, kind, 1, what, id, line)
    } else {
      return Either.left(sessionError("SESSION_INVALID_RECORD", `Pi entry "${id}" has an unknown type ${JSON.stringify(type)}`, { line }))
    }
    if (Either.isLeft(outcome)) return Either.left(outcome.left)
    if (outcome.right === undefined) {
      keptAt.set(id, parent)
      continue
    }
    keptAt.set(id, id)
    records.push(JSON.stringify({ type: "entry", version: 1, id, parentId: parent, timestamp, message: outcome.right }))
    origins.push({ line, id })
  }

  const decoded = decodeLines({ lines: records, sizes: records.map(utf8Length), tail: "none" })
  if (Either.isLeft(decoded)) return Either.left(atPiLine(decoded.left, origins))
  // The records above are version 1 throughout, so the loader gave version-1 values back.
  return Either.right(Object.freeze({
    header: decoded.right.header as SessionHeader,
    entries: Object.freeze(decoded.right.history.entries.slice()) as ReadonlyArray<SessionEntry>,
    dropped: Object.freeze({ ...run.dropped }),
    skipped: Object.freeze({ ...skipped })
  }))
}

/** A problem the loader found in the converted records, restated at the Pi line (and entry) it comes from. */
const atPiLine = (error: CorruptError, origins: ReadonlyArray<{ readonly line: number; readonly id: string }>): CorruptError => {
  if (error.line === undefined) return restated(error, `the converted session: ${error.reason}`)
  // Record line 1 is the header; record line n + 2 is the entry converted from origins[n].
  const origin = origins[error.line - 2]
  if (origin === undefined) return restated(error, `the converted header: ${error.reason}`, { line: 1 })
  return restated(error, `Pi entry "${origin.id}", converted: ${error.reason}`, { line: origin.line })
}


/**
 * The common front of every import, as `docs/import.md` describes it: a source's format detected from its
 * content, its lines read (a torn last line left out), damage refused or (`skipDamaged`) recorded
 * in the session, and the format's converter run. Pure: bytes in, records out.
 */
import * as Either from "effect/Either"
import * as Encoding from "effect/Encoding"
import * as RecordV2 from "../RecordV2.js"
import { deepFreeze } from "../Record.js"
import { type CorruptError, type InputError, type SessionError, sessionError } from "../SessionError.js"
import { fromClaudeLines, type StoredEntries } from "./claude.js"
import { COMPACTION_FIELDS as CODEX_COMPACTION_FIELDS, fromCodexLines, SESSION_META, WHOLE_PREFIX as CODEX_PREFIX } from "./codex.js"
import { checkLoads } from "./importCheck.js"
import { DAMAGED_LINE, SUBAGENT_OF } from "./links.js"
import { fromPiV2Lines } from "./piV2.js"
import { type DamagedLine, readSource, type SourceLine, type SourceLines, type TornLine } from "./source.js"

/** The formats an import reads. */
export type Format = "session-tree" | "pi" | "claude" | "codex"
export const FORMATS: ReadonlyArray<Format> = ["session-tree", "pi", "claude", "codex"]

/** The formats in words, as an error about an unknown one lists them. */
// Short enough that a command's first line of at most ~200 characters names all four.
export const FORMAT_NAMES = "session-tree (ours, versions 1 and 2), pi (Pi, format 3), claude (Claude Code), codex (Codex rollouts)"

const PI_TYPES = new Set(["message", "model_change", "thinking_level_change", "compaction", "branch_summary", "custom", "custom_message", "label", "session_info"])
const CODEX_TYPES = new Set(["session_meta", "response_item", "event_msg", "turn_context", "compacted"])
const CLAUDE_TYPES = new Set(["user", "assistant", "system", "summary", "progress", "file-history-snapshot", "queue-operation", "attachment", "ai-title", "last-prompt", "permission-mode", "custom-title"])
const isObject = (v: unknown): v is { readonly [key: string]: unknown } => typeof v === "object" && v !== null && !Array.isArray(v)

/** The format one line shows, or undefined when it shows none. */
const formatOfLine = (l: SourceLine): Format | undefined => {
  const r = l.record
  const type = r.type
  if (type === "session") return typeof r.cwd === "string" ? "pi" : "session-tree"
  if (type === "entry" && (r.version === 1 || r.version === 2)) return "session-tree"
  if (typeof type === "string" && PI_TYPES.has(type) && typeof r.id === "string" && "parentId" in r && !("sessionId" in r)) return "pi"
  if (typeof type === "string" && CODEX_TYPES.has(type) && isObject(r.payload)) return "codex"
  // The rollouts written before the envelope existed start with a bare header: an ID, a time, instructions.
  if (l.line === 1 && type === undefined && typeof r.id === "string" && typeof r.timestamp === "string" && "instructions" in r) return "codex"
  if (typeof type === "string" && (typeof r.sessionId === "string" || (CLAUDE_TYPES.has(type) && (type === "summary" || type === "file-history-snapshot")))) {
    return CLAUDE_TYPES.has(type) || typeof r.uuid === "string" ? "claude" : undefined
  }
  return undefined
}

/** How many lines detection reads before it gives up: the first few lines of every format say what it is. */
const DETECTION_LINES = 64

/** The format of a source from its first lines, or undefined. */
export const detectLines = (source: SourceLines): Format | undefined => {
  for (const l of source.lines.slice(0, DETECTION_LINES)) {
    const format = formatOfLine(l)
    if (format !== undefined) return format
  }
  return undefined
}

export const unknownFormat = (): InputError =>
  sessionError("SESSION_UNKNOWN_FORMAT", `the file is none of the formats read: ${FORMAT_NAMES}`, { line: 1 })

/** The format of a source's bytes, detected from its content; SESSION_UNKNOWN_FORMAT when it is none of them. */
export const detect = (bytes: Uint8Array): Either.Either<Format, InputError> => {
  const format = detectLines(readSource(bytes))
  return format === undefined ? Either.left(unknownFormat()) : Either.right(format)
}

/** One session an import makes: the source's own first, then its subagents'. */
export interface ImportedSession {
  readonly header: RecordV2.SessionHeader
  readonly entries: ReadonlyArray<RecordV2.SessionEntry>
  /** The source line of each entry. */
  readonly origins: ReadonlyArray<number>
}

/** A damaged line left out with `skipDamaged`: its number, size and why; also kept in the session. */
export interface Damaged {
  readonly line: number
  readonly bytes: number
  readonly code: SessionError["code"]
  readonly reason: string
}

export interface Imported {
  readonly format: Exclude<Format, "session-tree">
  readonly sessions: ReadonlyArray<ImportedSession>
  /** The source's lines (or entries) read, per kind. */
  readonly read: Readonly<Record<string, number>>
  /** What was not stored, per kind: lines with no place in version 2 (without `keepAll`), repeats. */
  readonly skipped: Readonly<Record<string, number>>
  /** What was stored whole as `custom` entries `<format>:<kind>`, per kind. */
  readonly kept: Readonly<Record<string, number>>
  readonly damaged: ReadonlyArray<Damaged>
  readonly torn: TornLine | undefined
  /** Lines withheld because what they belong to may still change (`final: false`). */
  readonly pending: number
}

/** A format's converter over a source's lines, as the front calls it. */
export interface Converter {
  readonly convert: (
    lines: ReadonlyArray<SourceLine>,
    options: {
      readonly keepAll: boolean
      readonly final: boolean
      readonly skip: ReadonlySet<number>
      readonly stored: StoredEntries | undefined
      /** With `skipDamaged`: what hangs from a line that is not there (damaged, unreadable) follows the file's order. */
      readonly followOrphans: boolean
      /** A subagent's parent transcript (Claude Code, Codex), read: where the tool call that started it is looked for. */
      readonly parent: ReadonlyArray<SourceLine> | undefined
    }
  ) => Either.Either<Omit<Imported, "format" | "damaged" | "torn">, CorruptError>
}

export interface ImportOptions {
  /** The format, detected from the content unless given. */
  readonly from?: Exclude<Format, "session-tree"> | undefined
  /** Store what has no place in version 2 as `custom` entries `<format>:<kind>` instead of counting it. */
  readonly keepAll?: boolean | undefined
  /** Import around damaged lines, each recorded (number, bytes, why) in the session and the result. */
  readonly skipDamaged?: boolean | undefined
  /** Whether the source is complete (the default): false withholds what may still change (sync). */
  readonly final?: boolean | undefined
  /** What an earlier import of this source stored, to convert it again the same way (sync). */
  readonly stored?: StoredEntries | undefined
  /**
   * For a subagent's own file (a Claude Code subagent's, a Codex subagent thread's rollout): its
   * parent session's transcript, where the tool call that started the subagent is looked for, so that
   * its `subagent-of` entry names it (`docs/import.md`, "Subagents"). A transcript of another
   * session names no call.
   */
  readonly parent?: Uint8Array | undefined
}

const claude: Converter = {
  convert: (lines, options) =>
    Either.map(fromClaudeLines(lines, options), (c) => ({
      sessions: [c, ...c.subagents],
      read: c.read,
      skipped: c.skipped,
      kept: c.kept,
      pending: c.pending
    }))
}

const pi: Converter = {
  // Pi keeps every entry (those without a place whole, as `pi:<type>`): nothing to skip, nothing pending.
  convert: (lines, options) =>
    Either.map(fromPiV2Lines(lines, options), (c) => ({ sessions: [c], read: c.read, skipped: {}, kept: c.whole, pending: 0 }))
}

/** A damaged line as found: in the bytes (not one JSON object), or by the converter (not one record of the format). */
interface Found extends Omit<DamagedLine, "code"> {
  readonly code: SessionError["code"]
}

const codex: Converter = {
  // Codex writes each item whole on its line: nothing waits. A damaged line is left out; the rest keep their IDs (`<session>:<line>`).
  convert: (lines, options) =>
    Either.map(fromCodexLines(options.skip.size === 0 ? lines : lines.filter((l) => !options.skip.has(l.line)), { keepAll: options.keepAll, parent: options.parent, stored: options.stored }), (c) => {
      const kept: Record<string, number> = {}
      for (const entry of c.entries) {
        if (entry.kind !== "custom" || !entry.customType.startsWith(CODEX_PREFIX)) continue
        if (entry.customType === SESSION_META || entry.customType === CODEX_COMPACTION_FIELDS) continue
        const kind = entry.customType.slice(CODEX_PREFIX.length)
        kept[kind] = (kept[kind] ?? 0) + 1
      }
      return { sessions: [c], read: c.read, skipped: c.skipped, kept, pending: 0 }
    })
}

/** The most damaged lines an import skips: past that, the file is not a transcript with damage in it. */
const MAX_DAMAGED = 10_000

/** Whether an error is about one line that can be left out, rather than the whole file. */
const isLineProblem = (error: SessionError, lines: ReadonlyMap<number, SourceLine>): boolean =>
  error.line !== undefined && lines.has(error.line) &&
  !(error.code === "SESSION_INVALID_HEADER" && error.line === 1) && error.code !== "SESSION_UNSUPPORTED_VERSION"

/** The text a damaged-line entry keeps of the line: the text itself, or its bytes as base64 when they are not UTF-8. */
const keptBytes = (bytes: Uint8Array): { readonly text: string } | { readonly base64: string } => {
  try {
    return { text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes) }
  } catch {
    return { base64: Encoding.encodeBase64(bytes) }
  }
}

/**
 * `session` with one `DAMAGED_LINE` entry per damaged line, each where its line is in the file: after
 * the last entry of an earlier line, and what came after that entry then follows it, so that the
 * session keeps its branches.
 */
const withDamaged = (session: ImportedSession, damaged: ReadonlyArray<Found>): ImportedSession => {
  if (damaged.length === 0) return session
  const entries = [...session.entries]
  const origins = [...session.origins]
  for (const d of [...damaged].sort((a, b) => a.line - b.line)) {
    let at = origins.findIndex((line) => line > d.line)
    if (at < 0) at = entries.length
    const before = at === 0 ? undefined : entries[at - 1]!
    const parentId = before?.id ?? null
    const id = `damaged:${d.line}`
    const entry: RecordV2.SessionEntry = deepFreeze({
      type: "entry",
      version: RecordV2.VERSION,
      id,
      parentId,
      timestamp: before?.timestamp ?? session.header.timestamp,
      kind: "custom",
      customType: DAMAGED_LINE,
      data: { line: d.line, code: d.code, reason: d.reason, ...keptBytes(d.bytes) }
    })
    for (let i = at; i < entries.length; i++) {
      if (entries[i]!.parentId === parentId) entries[i] = deepFreeze({ ...entries[i]!, parentId: id })
    }
    entries.splice(at, 0, entry)
    origins.splice(at, 0, d.line)
  }
  return { header: session.header, entries, origins }
}

/**
 * Converts a source's bytes: detects the format (unless `from`), reads the lines, refuses damage
 * (or records it with `skipDamaged`), converts. Every error's `line` is the source's.
 */
export const convert = (bytes: Uint8Array, options: ImportOptions = {}): Either.Either<Imported, SessionError> => {
  const source = readSource(bytes)
  const format = options.from ?? detectLines(source)
  if (format === undefined) return Either.left(unknownFormat())
  if (format === "session-tree") {
    return Either.left(sessionError("SESSION_INVALID_OPTIONS", "a session-tree file is imported as it is, not converted"))
  }
  const converter = format === "claude" ? claude : format === "pi" ? pi : codex
  const skipDamaged = options.skipDamaged === true
  const byLine = new Map(source.lines.map((l) => [l.line, l]))
  const damaged: Array<Found> = [...source.damaged]
  const skip = new Set<number>()
  const parent = options.parent === undefined || format === "pi" ? undefined : readSource(options.parent).lines
  const run = (lines: ReadonlyArray<SourceLine>) =>
    converter.convert(lines, { keepAll: options.keepAll === true, final: options.final !== false, skip, stored: options.stored, followOrphans: skipDamaged, parent })
  if (!skipDamaged && damaged.length > 0) {
    // The first problem in file order: the conversion's (of the lines that are not damaged), or the damaged line.
    const first = damaged[0]!
    const around = run(source.lines)
    if (Either.isLeft(around) && around.left.line !== undefined && around.left.line < first.line) return Either.left(around.left)
    return Either.left(sessionError(first.code, first.reason, { line: first.line }))
  }
  for (;;) {
    const converted = run(source.lines)
    if (Either.isRight(converted)) {
      const [own, ...subagents] = converted.right.sessions
      const recorded = withDamaged(own!, damaged)
      if (recorded !== own) {
        const loads = checkLoads(recorded.header, recorded.entries, recorded.origins, format)
        if (Either.isLeft(loads)) return Either.left(loads.left)
      }
      return Either.right({
        format,
        ...converted.right,
        sessions: [recorded, ...subagents],
        damaged: damaged.sort((a, b) => a.line - b.line).map((d) => ({ line: d.line, bytes: d.bytes.length, code: d.code, reason: d.reason })),
        torn: source.torn
      })
    }
    const error = converted.left
    if (!skipDamaged || !isLineProblem(error, byLine) || skip.has(error.line!) || damaged.length >= MAX_DAMAGED) return Either.left(error)
    // A line the converter refuses is damaged too: left out and recorded, and the rest converted again.
    skip.add(error.line!)
    damaged.push({ line: error.line!, bytes: lineBytes(bytes, error.line!), code: error.code, reason: error.reason })
  }
}

/**
 * The parent session a converted Claude Code subagent's file names when its link names no tool call
 * yet (its `subagent-of` entry): the session whose transcript to look for, to convert it again with `parent`.
 */
export const parentToFind = (imported: Imported): string | undefined => {
  if (imported.format === "pi") return undefined
  const root = imported.sessions[0]?.entries[0]
  if (root === undefined || root.kind !== "custom" || root.customType !== SUBAGENT_OF || root.id !== "subagent-of") return undefined
  const data = root.data as { readonly session?: unknown; readonly toolCallId?: unknown } | null
  return data !== null && typeof data === "object" && typeof data.session === "string" && data.toolCallId === undefined ? data.session : undefined
}

/**
 * Where the transcript of session `sessionId` is looked for, seen from its subagent's file at
 * `path`: where Claude Code keeps it, beside it (`<project>/agent-<id>.jsonl`, 2.0) or two
 * directories up (`<project>/<sessionId>/subagents/agent-<id>.jsonl`, 2.1); and the Codex rollouts
 * of that thread among `names`, the names of the files beside it. Paths with `/` separators.
 */
export const parentPaths = (path: string, sessionId: string, names: ReadonlyArray<string> = []): ReadonlyArray<string> => {
  const parts = path.split("/")
  const dir = parts.slice(0, -1)
  const out = [[...dir, `${sessionId}.jsonl`].join("/")]
  // A Codex rollout of that thread beside it: `rollout-<time>-<thread>.jsonl`.
  for (const name of names) if (isRolloutOf(name, sessionId)) out.push([...dir, name].join("/"))
  if (dir.length >= 2 && dir[dir.length - 1] === "subagents" && dir[dir.length - 2] === sessionId) {
    out.push([...dir.slice(0, -2), `${sessionId}.jsonl`].join("/"))
  }
  return out
}

/** Whether a file's name is a Codex rollout's of thread `thread`: `rollout-<time>-<thread>.jsonl`. */
export const isRolloutOf = (name: string, thread: string): boolean => name.startsWith("rollout-") && name.endsWith(`-${thread}.jsonl`)

/** The bytes of line `line` (1-based) of `bytes`, without its newline. */
const lineBytes = (bytes: Uint8Array, line: number): Uint8Array => {
  let start = 0
  for (let n = 1; n < line; n++) start = bytes.indexOf(0x0a, start) + 1
  const end = bytes.indexOf(0x0a, start)
  return bytes.slice(start, end < 0 ? bytes.length : end)
}

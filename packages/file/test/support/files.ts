/**
 * Builders of session lines and files for tests, and helpers to look at a
 * directory without changing it. Records are built as plain objects and
 * serialised here, so a test states the JSON it means instead of going through
 * the library's own encoder.
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileJournal from "../../src/FileJournal.js"
import * as Fs from "../../src/Fs.js"
import type { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"

export const TS = "2026-01-02T03:04:05.006Z"

// ---------------------------------------------------------------------------
// Records

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
export type JsonRecord = { readonly [key: string]: Json }

export const header = (overrides: JsonRecord = {}): JsonRecord => ({
  type: "session",
  version: 1,
  id: "session-001",
  timestamp: TS,
  ...overrides
})

export const user = (id = "message-001", content = "root"): JsonRecord => ({ role: "user", id, content })

export const call = (id: string, name: string, args: JsonRecord = {}): JsonRecord => ({ id, name, arguments: args })

export const assistant = (id: string, content: string, toolCalls: ReadonlyArray<JsonRecord> = []): JsonRecord => ({
  role: "assistant",
  id,
  content,
  toolCalls
})

export const tool = (id: string, toolCallId: string, toolName: string, content = "ok", isError = false): JsonRecord => ({
  role: "tool",
  id,
  toolCallId,
  toolName,
  content,
  isError
})

export const entry = (
  id = "entry-001",
  parentId: string | null = null,
  message: Json = user(),
  overrides: JsonRecord = {}
): JsonRecord => ({ type: "entry", version: 1, id, parentId, timestamp: TS, message, ...overrides })

/** `record` without `key` (for "missing field" cases). */
export const without = (record: JsonRecord, key: string): JsonRecord => {
  const copy: Record<string, Json> = { ...record }
  delete copy[key]
  return copy
}

/** The seed's `headerLine()`: the header of session-001 as one JSON line (no terminator). */
export const headerLine = (overrides: JsonRecord = {}): string => JSON.stringify(header(overrides))

/** The seed's `entryLine()`: entry-001, a root user message, as one JSON line (no terminator). */
export const entryLine = (
  id = "entry-001",
  parentId: string | null = null,
  message: Json = user(),
  overrides: JsonRecord = {}
): string => JSON.stringify(entry(id, parentId, message, overrides))

/** Joins lines with `eol`, ending with `eol` unless `final` is false. */
export const jsonl = (
  lines: ReadonlyArray<string>,
  options: { readonly eol?: "\n" | "\r\n"; readonly final?: boolean } = {}
): string => {
  const eol = options.eol ?? "\n"
  return lines.join(eol) + (options.final === false ? "" : eol)
}

/** A user entry line of exactly `bytes` UTF-8 bytes, its content filled with `unit` (then ASCII to fit). */
export const paddedEntryLine = (
  bytes: number,
  id = "entry-001",
  parentId: string | null = null,
  unit = "x"
): string => {
  const base = entryLine(id, parentId, user("m-" + id, ""))
  const room = bytes - Buffer.byteLength(base)
  if (room < 0) throw new Error(`an entry line needs at least ${Buffer.byteLength(base)} bytes`)
  const unitBytes = Buffer.byteLength(unit)
  const units = Math.floor(room / unitBytes)
  const content = unit.repeat(units) + "x".repeat(room - units * unitBytes)
  const line = entryLine(id, parentId, user("m-" + id, content))
  if (Buffer.byteLength(line) !== bytes) throw new Error("the padding unit must not need escaping in JSON")
  return line
}

/** Root user entries `e-0001`… one per line, canonical, each line `\n`-terminated. */
export const manyEntries = (count: number, first = 1): Array<string> =>
  Array.from({ length: count }, (_, i) => entryLine(`e-${String(first + i).padStart(4, "0")}`, null, user("m", "")))

/**
 * A valid, newline-terminated session of exactly `total` bytes: the header then
 * entries of at most 65,536 bytes each (IDs `big-NNN`).
 */
export const fileOfSize = (total: number): Uint8Array => {
  const head = headerLine() + "\n"
  const minimum = Buffer.byteLength(paddedEntryLine(200, "big-000")) - 200 + 1 // bytes of the shortest entry line + "\n"
  const parts = [head]
  let remaining = total - head.length
  let n = 0
  while (remaining > 0) {
    let take = Math.min(65_537, remaining)
    if (remaining - take > 0 && remaining - take < minimum + 1) take = remaining - (minimum + 1)
    parts.push(paddedEntryLine(take - 1, `big-${String(n++).padStart(3, "0")}`) + "\n")
    remaining -= take
  }
  const bytes = utf8(parts.join(""))
  if (bytes.length !== total) throw new Error(`built ${bytes.length} bytes, wanted ${total}`)
  return bytes
}

// ---------------------------------------------------------------------------
// Bytes

export const utf8 = (text: string): Uint8Array => new Uint8Array(Buffer.from(text, "utf8"))

/** Concatenates text (as UTF-8) and raw bytes. */
export const bytesOf = (...parts: ReadonlyArray<string | ReadonlyArray<number> | Uint8Array>): Uint8Array =>
  new Uint8Array(Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p)))))

export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

// ---------------------------------------------------------------------------
// Directories

/** A fresh directory under the OS temp dir; `remove` deletes it and everything in it. */
export const tempDir = (prefix = "session-tree-"): { readonly dir: string; readonly remove: () => void } => {
  const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), prefix))
  return { dir, remove: () => NFS.rmSync(dir, { recursive: true, force: true }) }
}

export interface DirEntry {
  readonly name: string
  readonly kind: "file" | "directory" | "symlink" | "fifo" | "socket" | "other"
  readonly ino: number
  readonly nlink: number
  readonly size: number
  readonly mtimeNs: bigint
  /** sha256 of a regular file's bytes; the target of a symlink. Never opens anything else (a FIFO would block). */
  readonly content?: string
}

/** Every name in `dir` with its kind, identity and content, sorted by name. */
export const snapshotDir = (dir: string): ReadonlyArray<DirEntry> =>
  NFS.readdirSync(dir).sort().map((name) => {
    const path = Path.join(dir, name)
    const s = NFS.lstatSync(path, { bigint: true })
    const kind = s.isFile()
      ? "file"
      : s.isDirectory()
      ? "directory"
      : s.isSymbolicLink()
      ? "symlink"
      : s.isFIFO()
      ? "fifo"
      : s.isSocket()
      ? "socket"
      : "other"
    const base = { name, kind, ino: Number(s.ino), nlink: Number(s.nlink), size: Number(s.size), mtimeNs: s.mtimeNs } as const
    if (kind === "file") return { ...base, content: sha256(NFS.readFileSync(path)) }
    if (kind === "symlink") return { ...base, content: NFS.readlinkSync(path) }
    return base
  })

// ---------------------------------------------------------------------------
// Loading

export type ReadResult = Either.Either<SessionStore.Loaded, SessionError>

/** `SessionStore.read(path)` on the real filesystem (or one seen through `around`), as an Either. */
export const readSession = (
  path: string,
  around?: Parameters<typeof Fs.layerIntercepted>[0]
): Effect.Effect<ReadResult> =>
  Effect.either(SessionStore.read(path)).pipe(
    Effect.provide(around === undefined ? FileJournal.layerWithFs() : FileJournal.layerIntercepted(around))
  )

/** Records every filesystem step of `effect`'s reads. */
export const recordingSteps = (): {
  readonly steps: Array<Fs.Step>
  readonly around: Parameters<typeof Fs.layerIntercepted>[0]
} => {
  const steps: Array<Fs.Step> = []
  return {
    steps,
    around: (step, run) => Effect.suspend(() => {
      steps.push(step)
      return run
    })
  }
}

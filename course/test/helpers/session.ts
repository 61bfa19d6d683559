/**
 * Helpers of the checkpoint test: a deterministic clock and ID factory, record
 * lines written by hand (so the loader is tested against bytes it did not
 * produce), fresh temporary directories, and typed-error assertions.
 */
import { createHash } from "node:crypto"
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect } from "vitest"
import { type CourseMessage, SessionError, type SessionOptions } from "../../src/session.js"

/** The time of the deterministic clock's first reading: 2026-01-02T03:04:05.006Z. */
export const T0 = Date.UTC(2026, 0, 2, 3, 4, 5, 6)

/** The timestamp of the deterministic clock's k-th reading (0-based): one second apart. */
export const iso = (k: number): string => new Date(T0 + k * 1000).toISOString()

export const pad = (n: number): string => String(n).padStart(3, "0")

export interface DeterministicOptions extends Required<SessionOptions> {}

/** The next clock tick and the last entry number of each deterministic options object. */
const counters = new WeakMap<DeterministicOptions, { now: number; createId: number }>()
export const callsOf = (options: DeterministicOptions): { readonly now: number; readonly createId: number } =>
  counters.get(options)!

/**
 * `now` reads T0, T0+1s, …; `createId` gives entry-001, entry-002, … Passing the
 * same object to `create` and a later `load` continues both sequences. For a
 * file written by hand with a header and `existing` entries (as `headerLine` and
 * `entryLine` write them), `deterministicOptions(existing)` continues where that
 * file stops: the next entry is `entryLine({}, existing + 1)` exactly. The
 * object holds only the two options (the store refuses unknown ones).
 */
export const deterministicOptions = (existing?: number): DeterministicOptions => {
  const calls = { now: existing === undefined ? 0 : existing + 1, createId: existing ?? 0 }
  const options: DeterministicOptions = {
    now: () => T0 + 1000 * calls.now++,
    createId: () => `entry-${pad(++calls.createId)}`
  }
  counters.set(options, calls)
  return options
}

export const user = (id: string, content: string): CourseMessage => ({ role: "user", id, content })

export const assistant = (
  id: string,
  content: string,
  toolCalls: ReadonlyArray<{ id: string; name: string; arguments?: Record<string, unknown> }> = []
): CourseMessage => ({
  role: "assistant",
  id,
  content,
  toolCalls: toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments ?? {} }))
})

export const toolResult = (id: string, toolCallId: string, toolName: string, content = "ok"): CourseMessage => ({
  role: "tool",
  id,
  toolCallId,
  toolName,
  content,
  isError: false
})

/** A header line (no terminator), canonical unless overridden. */
export const headerLine = (overrides: Record<string, unknown> = {}): string =>
  JSON.stringify({ type: "session", version: 1, id: "session-001", timestamp: iso(0), ...overrides })

/** Entry `entry-NNN` as a canonical line (no terminator); defaults to entry-001, a root user message. */
export const entryLine = (overrides: Record<string, unknown> = {}, n = 1): string =>
  JSON.stringify({
    type: "entry",
    version: 1,
    id: `entry-${pad(n)}`,
    parentId: n === 1 ? null : `entry-${pad(n - 1)}`,
    timestamp: iso(n),
    message: user(`message-${pad(n)}`, n === 1 ? "root" : `message ${n}`),
    ...overrides
  })

/** Awaits a rejection and checks it is the facade's SessionError (an Error) with `code`. */
export const expectSessionError = async (promise: Promise<unknown>, code: string): Promise<SessionError> => {
  const outcome = await promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error })
  )
  if (outcome.ok) throw new Error(`expected ${code}, but it resolved with ${String(outcome.value)}`)
  const error = outcome.error
  expect(error).toBeInstanceOf(SessionError)
  expect(error).toBeInstanceOf(Error)
  expect((error as SessionError).code).toBe(code)
  expect((error as Error).message.startsWith(`${code}:`)).toBe(true)
  return error as SessionError
}

const made: Array<string> = []

/** A fresh temporary directory and a session path in it. */
export const tempSession = (name = "session.jsonl"): { readonly dir: string; readonly path: string } => {
  const dir = mkdtempSync(join(tmpdir(), "session-tree-course-"))
  made.push(dir)
  return { dir, path: join(dir, name) }
}

export const removeTempDirs = (): void => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true })
}

/** What a test compares to prove that nothing changed: content hash and inode of the file. */
export const fingerprint = (path: string): { readonly sha256: string; readonly ino: bigint; readonly size: number } => {
  const bytes = readFileSync(path)
  return {
    sha256: createHash("sha256").update(bytes).digest("hex"),
    ino: lstatSync(path, { bigint: true }).ino,
    size: bytes.length
  }
}

/** The names in `dir`, sorted. */
export const listDir = (dir: string): ReadonlyArray<string> => readdirSync(dir).sort()

/** The body of `Sync`: one source after another, each read only when its fingerprint changed. */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schedule from "effect/Schedule"
import type * as Import from "../Import.js"
import type * as RecordV2 from "../RecordV2.js"
import { type SessionError, sessionError } from "../SessionError.js"
import { Sessions } from "../Sessions.js"
import { type SourceFile, type SourceReport, SyncFiles, type SyncOptions, type SyncReport, type SyncState } from "../Sync.js"
import { convert, detectLines, isRolloutOf, parentPaths, parentToFind } from "./imports.js"
import { sha256Hex } from "./sha256.js"
import { readSource } from "./source.js"

export const QUIET_MS = 10_000

const SAFE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/

export const fileName = (sessionId: string): string => {
  if (SAFE.test(sessionId) && !sessionId.endsWith(".jsonl")) return `${sessionId}.jsonl`
  const kept = sessionId.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120)
  return `${kept}-${sha256Hex(new TextEncoder().encode(sessionId)).slice(0, 16)}.jsonl`
}

/** A race with another process (a session busy or replaced while held) is tried again. */
const isRace = (error: SessionError): boolean => error.code === "SESSION_BUSY" || error.code === "SESSION_REPLACED"
const RETRY = Schedule.exponential("10 millis", 2).pipe(Schedule.jittered, Schedule.intersect(Schedule.recurs(5)))

const report = (path: string, status: SourceReport["status"], extra: Partial<SourceReport> = {}): SourceReport => ({
  path,
  status,
  sessions: [],
  skipped: {},
  kept: {},
  damaged: [],
  pending: 0,
  ...extra
})

/** The entries a sync stored before in each of `ids`'s sessions, by session and entry ID (absent sessions hold none). */
const storedOf = (ids: ReadonlyArray<string>, locate: (id: string) => string) =>
  Effect.gen(function*() {
    const sessions = yield* Sessions
    const byId = new Map<string, ReadonlyMap<string, RecordV2.SessionEntry>>()
    for (const id of ids) {
      const loaded = yield* Effect.retry(sessions.read(locate(id)), { schedule: RETRY, while: isRace }).pipe(
        Effect.map((l) => l as { readonly entries: ReadonlyArray<RecordV2.SessionEntry> } | undefined),
        Effect.catchIf((e) => e.code === "SESSION_NOT_FOUND", () => Effect.succeed(undefined))
      )
      if (loaded !== undefined) byId.set(id, new Map(loaded.entries.map((e) => [e.id, e])))
    }
    return byId
  })

/**
 * The transcript of session `sessionId`, the parent of the subagent whose file is at `path`: where
 * Claude Code keeps it, or a Codex rollout of that thread among the files walked; undefined when none is there. One that is there but cannot be read fails the
 * source (tried again next time), so that what a link names never depends on a passing failure.
 */
const parentBytes = (path: string, sessionId: string, found: ReadonlyArray<SourceFile>) =>
  Effect.gen(function*() {
    const files = yield* SyncFiles
    // Claude Code's places, then the Codex rollouts of that thread among the files walked (a rollout's name ends with its thread).
    const rollouts = found.filter((f) => isRolloutOf(f.path.slice(f.path.lastIndexOf("/") + 1), sessionId)).map((f) => f.path)
    for (const candidate of new Set([...parentPaths(path, sessionId), ...rollouts])) {
      if (candidate === path) continue
      const read = yield* files.read(candidate).pipe(
        Effect.map((r) => r.bytes),
        Effect.catchIf((e) => e.code === "SESSION_NOT_FOUND" || e.code === "SESSION_NOT_REGULAR_FILE", () => Effect.succeed(undefined))
      )
      if (read !== undefined) return read
    }
    return undefined
  })

/** One source: read, converted (again, with what was stored, when some of its sessions exist), and mirrored. */
const syncSource = (
  file: SourceFile,
  options: SyncOptions,
  locate: (id: string) => string,
  found: ReadonlyArray<SourceFile>
): Effect.Effect<{ readonly report: SourceReport; readonly file: SourceFile }, SessionError, Sessions | SyncFiles> =>
  Effect.gen(function*() {
    const files = yield* SyncFiles
    const sessions = yield* Sessions
    const read = yield* files.read(file.path)
    const now = yield* Clock.currentTimeMillis
    const quiet = now - read.file.mtimeMs >= (options.quietMs ?? QUIET_MS)
    const format = detectLines(readSource(read.bytes))
    if (format === undefined || format === "session-tree") return { report: report(file.path, "ignored", { format }), file: read.file }
    const importOptions: Import.ImportOptions = {
      from: format,
      keepAll: options.keepAll,
      skipDamaged: options.skipDamaged,
      final: quiet
    }
    const first = convert(read.bytes, importOptions)
    if (Either.isLeft(first)) return yield* Effect.fail(first.left)
    // Converted again with what earlier syncs stored, so that a response stored in parts stays in those parts.
    const stored = yield* storedOf(first.right.sessions.map((s) => s.header.id), locate)
    // A subagent's file whose link is not stored yet: its parent's transcript names the call that started it.
    const own = first.right.sessions[0]!.header.id
    const parentId = stored.get(own)?.has("subagent-of") === true ? undefined : parentToFind(first.right)
    const parent = parentId === undefined ? undefined : yield* parentBytes(file.path, parentId, found)
    const converted = stored.size === 0 && parent === undefined
      ? first
      : convert(read.bytes, { ...importOptions, parent, stored: (session, id) => stored.get(session)?.get(id) })
    if (Either.isLeft(converted)) return yield* Effect.fail(converted.left)
    const imported = converted.right
    const made: Array<SourceReport["sessions"][number]> = []
    // The subagents' sessions first, so that a link in the parent names a session that is there.
    const [ownSession, ...subagents] = imported.sessions
    for (const session of [...subagents, ownSession!]) {
      const location = locate(session.header.id)
      const mirror = Effect.retry(sessions.mirror(session, location), { schedule: RETRY, while: isRace })
      // Still busy once other writers had their turns: what an interrupted commit left there, cleared if the caller can.
      const recover = options.recover
      const mirrored = yield* recover === undefined ? mirror : mirror.pipe(
        Effect.catchIf((e) => e.code === "SESSION_BUSY" || e.code === "SESSION_ROLLBACK_FAILED", () => Effect.zipRight(recover(location), mirror))
      )
      made.push({ id: session.header.id, ...mirrored })
    }
    made.unshift(made.pop()!)
    const changed = made.some((s) => s.created || s.appended > 0)
    return {
      report: report(file.path, changed ? "synced" : "current", {
        format,
        sessions: made,
        skipped: imported.skipped,
        kept: imported.kept,
        damaged: imported.damaged,
        torn: imported.torn,
        pending: imported.pending
      }),
      file: read.file
    }
  })

const NONE: Readonly<Record<string, number>> = Object.freeze({})
const NO_DAMAGE: ReadonlyArray<never> = Object.freeze([])
/**
 * An unchanged source's session: its location asked of the caller only when read (thousands of
 * them are never read). A class, whose getter is its prototype's: an object literal with a getter
 * costs a call into the engine's runtime each, four times what the rest of the report costs. JSON
 * gives it as a plain session.
 */
class Unchanged {
  readonly created = false
  readonly appended = 0
  constructor(readonly id: string, private readonly locate: (id: string) => string) {}
  get location(): string {
    return this.locate(this.id)
  }
  toJSON() {
    return { id: this.id, location: this.location, created: this.created, appended: this.appended }
  }
}

const defaultLocate = Effect.map(Sessions, () => (id: string) => id)

export const syncFiles = (
  found: ReadonlyArray<SourceFile>,
  options: SyncOptions = {}
): Effect.Effect<SyncReport, SessionError, Sessions | SyncFiles> =>
  Effect.gen(function*() {
    const files = yield* SyncFiles
    const locate = options.locate ?? (yield* defaultLocate)
    const state = yield* files.loadState
    // Copied only once something changes: a sync of unchanged sources only reads it.
    let sources: Record<string, SyncState["sources"][string]> = state.sources as Record<string, SyncState["sources"][string]>
    let dirty = false
    const change = () => {
      if (!dirty) sources = { ...sources }
      dirty = true
    }
    const reports: Array<SourceReport> = []
    const now = yield* Clock.currentTimeMillis
    const quietMs = options.quietMs ?? QUIET_MS
    for (const file of found) {
      const known = sources[file.path]
      // Unchanged since a sync that stored everything of it: not read again. One that left something waiting is read once quiet.
      if (known !== undefined && known.fingerprint === file.fingerprint && (!known.pending || now - file.mtimeMs < quietMs)) {
        // The path a sync of thousands of unchanged sources takes for each: a lookup and a small record, no more.
        reports.push({ path: file.path, status: "unchanged", sessions: known.sessions.map((id) => new Unchanged(id, locate)), skipped: NONE, kept: NONE, damaged: NO_DAMAGE, pending: 0 })
        continue
      }
      const done = yield* Effect.either(syncSource(file, options, locate, found))
      if (Either.isLeft(done)) {
        const error = done.left
        const located = error.path === undefined ? sessionError(error.code, error.reason, { line: error.line, path: file.path, cause: error.cause }) : error
        reports.push(report(file.path, error.code === "SESSION_SOURCE_CHANGED" ? "changed" : "failed", { error: located }))
        // A source that failed is read again next time, to report it again.
        if (known !== undefined) {
          change()
          delete sources[file.path]
        }
        continue
      }
      const { file: seen, report: made } = done.right
      reports.push(made)
      const next = { fingerprint: seen.fingerprint, sessions: made.sessions.map((s) => s.id), pending: made.pending > 0 }
      if (known === undefined || known.fingerprint !== next.fingerprint || known.pending !== next.pending || known.sessions.join("\n") !== next.sessions.join("\n")) {
        change()
        sources[file.path] = next
      }
    }
    // Saved only when it changed: a sync of unchanged sources writes nothing at all.
    if (dirty) yield* files.saveState({ sources })
    return { sources: reports }
  }).pipe(Effect.withSpan("Sync.syncFiles"))

export const sync = (roots: ReadonlyArray<string>, options: SyncOptions = {}): Effect.Effect<SyncReport, SessionError, Sessions | SyncFiles> =>
  Effect.gen(function*() {
    const files = yield* SyncFiles
    const found = yield* files.walk(roots, options.exclude ?? [])
    return yield* syncFiles(found, options)
  }).pipe(Effect.withSpan("Sync.sync"))

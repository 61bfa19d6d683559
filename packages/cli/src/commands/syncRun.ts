/**
 * What `session-tree sync` runs (`sync.ts` defines its options): one round, or rounds while it
 * watches the sources. Loaded only when a sync runs.
 */
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Sync from "@session-tree/core/Sync"
import * as Fs from "@session-tree/file/Fs"
import * as Recovery from "@session-tree/file/Recovery"
import * as SyncFiles from "@session-tree/file/SyncFiles"
import * as SyncWatch from "@session-tree/file/SyncWatch"
import { formatError, json as jsonLine, printable } from "@session-tree/view/Text"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as NodePath from "node:path"
import * as Backend from "../Backend.js"
import { reportLines } from "./import.js"

/** Where the state of a sync into a database is kept by default: the user's state directory, one file per database. */
const defaultDatabaseState = (url: string): string => {
  const home = process.env["XDG_STATE_HOME"] !== undefined && process.env["XDG_STATE_HOME"] !== ""
    ? process.env["XDG_STATE_HOME"]
    : NodePath.join(OS.homedir(), ".local", "state")
  const name = createHash("sha256").update(Backend.describeDatabase(url)).digest("hex").slice(0, 16)
  return NodePath.join(home, "session-tree", `sync-${name}`)
}

/** One line per session a round created or extended; a line per problem, on stderr. */
const printRound = (report: Sync.SyncReport, backend: Backend.Backend) =>
  Effect.gen(function*() {
    let failed = 0
    for (const source of report.sources) {
      for (const session of source.sessions) {
        if (!session.created && session.appended === 0) continue
        yield* Console.log(`${session.created ? "new" : "   "} +${String(session.appended).padEnd(5)} ${printable(session.id)}  ${printable(source.path)}`)
      }
      if (source.status !== "unchanged" && source.status !== "ignored") {
        for (const line of reportLines(source)) yield* Console.error(`${printable(source.path)}: ${line}`)
      }
      if (source.error !== undefined) {
        failed++
        yield* Console.error(formatError(Backend.locate(source.error as SessionError, backend, source.path)))
      }
    }
    return failed
  })

const summary = (report: Sync.SyncReport): string => {
  const counts: Record<string, number> = {}
  for (const source of report.sources) counts[source.status] = (counts[source.status] ?? 0) + 1
  const parts = ["synced", "current", "unchanged", "ignored", "changed", "failed"].filter((s) => counts[s] !== undefined).map((s) => `${counts[s]} ${s}`)
  return `${report.sources.length} sources${parts.length === 0 ? "" : `: ${parts.join(", ")}`}`
}

/**
 * `session-tree sync` with its parsed options.
 *
 * @since 0.2.0
 * @category commands
 */
export const sync = ({ db, json, keepAll, quiet, skipDamaged, sources, state, to, watch }: {
  readonly db: Backend.Backend
  readonly json: boolean
  readonly keepAll: boolean
  readonly quiet: Option.Option<number>
  readonly skipDamaged: boolean
  readonly sources: ReadonlyArray<string>
  readonly state: Option.Option<string>
  readonly to: Option.Option<string>
  readonly watch: boolean
}) =>
  Effect.gen(function*() {
    if (db._tag === "Files" && Option.isNone(to)) return yield* new Backend.UsageError({ reason: "sync needs --to DIR on files" })
    if (db._tag === "Database" && Option.isSome(to)) return yield* new Backend.UsageError({ reason: "--to DIR and --db URL exclude each other: sessions go to one place" })
    if (json && watch) return yield* new Backend.UsageError({ reason: "--json prints one report: it does not go with --watch" })
    const dir = Option.map(to, (d) => NodePath.resolve(d))
    if (Option.isSome(dir)) {
      yield* Effect.try({
        try: () => NFS.mkdirSync(dir.value, { recursive: true }),
        catch: (cause) => new Backend.UsageError({ reason: `--to ${printable(dir.value)} cannot be a directory: ${(cause as Error).message}` })
      })
    }
    const statePath = Option.getOrElse(state, () => Option.isSome(dir) ? NodePath.join(dir.value, SyncFiles.STATE_FILE) : defaultDatabaseState((db as { url: string }).url))
    yield* Effect.sync(() => NFS.mkdirSync(NodePath.dirname(NodePath.resolve(statePath)), { recursive: true }))
    const quietMs = Option.isSome(quiet) ? quiet.value * 1000 : Sync.QUIET_MS
    const options: Sync.SyncOptions = {
      locate: Option.isSome(dir) ? (id) => NodePath.join(dir.value, Sync.fileName(id)) : undefined,
      exclude: Option.toArray(dir),
      keepAll,
      skipDamaged,
      quietMs,
      // On files, a leftover of an interrupted commit (a sync killed mid-way) is cleared by recovery.
      recover: db._tag === "Files" ? (location) => Recovery.recover(location).pipe(Effect.provide(Fs.layer)) : undefined
    }
    const once = Effect.flatMap(Fs.Fs, (fs) => Sync.sync(sources, options).pipe(Effect.provideService(Sync.SyncFiles, SyncFiles.make(fs, { state: statePath }))))
    yield* Backend.run(db, Effect.gen(function*() {
      if (watch) {
        const round = Effect.gen(function*() {
          const report = yield* once
          yield* printRound(report, db)
          // What waits for quiet is synced again once it can be.
          return report.sources.some((s) => s.pending > 0) ? quietMs + 50 : undefined
        })
        return yield* SyncWatch.watch(sources, round)
      }
      const report = yield* once
      if (json) {
        yield* Console.log(jsonLine({
          ok: report.sources.every((s) => s.error === undefined),
          sources: report.sources.map((s) => ({ ...s, error: s.error === undefined ? undefined : { code: s.error.code, message: formatError(s.error) } }))
        }))
      } else {
        yield* printRound(report, db)
        yield* Console.log(summary(report))
      }
      // Each problem is reported above; the command then fails with the first one's code.
      const failed = report.sources.filter((s) => s.error !== undefined)
      if (failed.length > 0) {
        return yield* sessionError(
          failed[0]!.error!.code,
          `${failed.length} of ${report.sources.length} sources were not synced (each reported above); every other source is`
        )
      }
    }))
  })

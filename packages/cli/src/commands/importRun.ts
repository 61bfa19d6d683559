/**
 * What `session-tree import` runs (`import.ts` defines its options): FILE read, its format
 * detected, converted and stored. Loaded only when an import runs.
 */
import * as Codec from "@session-tree/core/Codec"
import * as Import from "@session-tree/core/Import"
import * as PiSession from "@session-tree/core/PiSession"
import { restated, type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Sessions from "@session-tree/core/Sessions"
import * as Sync from "@session-tree/core/Sync"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Files from "@session-tree/file/Files"
import * as Fs from "@session-tree/file/Fs"
import { json as jsonLine, printable } from "@session-tree/view/Text"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as NodePath from "node:path"
import * as Backend from "../Backend.js"
import * as SelfContained from "../selfContained.js"
import { type FROM, reportLines } from "./import.js"

/** The most a source file may hold: images make transcripts large. */
const MAX_SOURCE_BYTES = 256 * 1024 * 1024

/** The most a self-contained export may hold: its lines and every blob's bytes as base64. */
const MAX_SELF_CONTAINED_BYTES = 512 * 1024 * 1024

const dropped = (converted: PiSession.Converted): string => {
  const parts = Object.entries(converted.dropped).filter(([, n]) => n > 0).map(([kind, n]) => `${n} ${kind}`)
  return parts.length === 0 ? "nothing was dropped" : `dropped ${parts.join(", ")}`
}

/**
 * FILE converted; a subagent's file (Claude Code's, a Codex subagent thread's rollout) converted again
 * with its parent's transcript, where Claude Code keeps it or a Codex rollout of that thread beside it,
 * so that its link names the tool call that started it. Where that transcript is not there, or does not name the call, a line on stderr says so.
 */
const convertWithParent = (file: string, bytes: Uint8Array, options: Import.ImportOptions, aboutFile: (e: SessionError) => SessionError) =>
  Effect.gen(function*() {
    let imported = yield* Effect.mapError(Import.convert(bytes, options), aboutFile)
    const parent = Import.parentToFind(imported)
    if (parent === undefined) return imported
    const absolute = NodePath.resolve(file)
    const names = yield* Effect.flatMap(Fs.Fs, (fs) => fs.readdir(NodePath.dirname(absolute))).pipe(Effect.provide(Fs.layer), Effect.orElseSucceed(() => []))
    const paths = Import.parentPaths(absolute.split(NodePath.sep).join("/"), parent, names)
    for (const path of paths) {
      // Not there: looked for elsewhere. There but unreadable: the import fails, naming it, rather than link less than it could.
      const parentBytes = yield* Files.readBytes(path, MAX_SOURCE_BYTES).pipe(
        Effect.provide(Fs.layer),
        Effect.catchIf((e) => e.code === "SESSION_NOT_FOUND" || e.code === "SESSION_NOT_REGULAR_FILE", () => Effect.succeed(undefined))
      )
      if (parentBytes === undefined) continue
      imported = yield* Effect.mapError(Import.convert(bytes, { ...options, parent: parentBytes }), aboutFile)
      if (Import.parentToFind(imported) !== undefined) {
        yield* Console.error(`subagent of ${printable(parent)}: the tool call that started it is not in ${printable(path)}; its link names none`)
      }
      return imported
    }
    yield* Console.error(`subagent of ${printable(parent)}: its parent's transcript is not beside it (${paths.map(printable).join(", ")}); its link names no tool call`)
    return imported
  })

/**
 * A self-contained export's records (inline data over 65,536 bytes turned back into blob
 * references) and the blobs' bytes; undefined for a file that holds no such data, or that cannot
 * be read here, which the ordinary reading then judges with its own errors.
 */
const readSelfContained = (file: string) =>
  Effect.gen(function*() {
    const bytes = yield* Effect.option(Files.readBytes(file, MAX_SELF_CONTAINED_BYTES))
    if (Option.isNone(bytes)) return undefined
    const unpacked = SelfContained.unpack(new TextDecoder("utf-8", { fatal: false }).decode(bytes.value))
    if (unpacked === undefined) return undefined
    const sizes = new Map([...unpacked.blobs].map(([ref, blob]) => [ref.slice("sha256:".length), blob.length]))
    const decoded = Codec.decodeLines({ lines: unpacked.lines, sizes: unpacked.lines.map(Codec.utf8Length), tail: "none", blobs: sizes })
    if (Either.isLeft(decoded)) {
      const error = decoded.left
      return yield* restated(error, error.reason, { line: error.line, path: file, cause: error.cause })
    }
    const records: Sessions.Records = { header: decoded.right.header, entries: decoded.right.history.entries }
    return { records, blobs: unpacked.blobs }
  })

/**
 * Where each session of an import goes: on files, the source's own at `to` and each subagent's
 * beside it (`<to without .jsonl>.<what its ID adds to the parent's>.jsonl`); in a database,
 * each at its ID.
 */
const locationsOf = (sessions: ReadonlyArray<Import.ImportedSession>, to: string | undefined): Array<string | undefined> => {
  if (to === undefined) return sessions.map(() => undefined)
  const own = sessions[0]!.header.id
  const stem = to.endsWith(".jsonl") ? to.slice(0, -".jsonl".length) : to
  return sessions.map((session, i) => {
    if (i === 0) return to
    const id = session.header.id
    const suffix = id.startsWith(`${own}.`) ? id.slice(own.length + 1) : id
    return NodePath.join(NodePath.dirname(stem), Sync.fileName(`${NodePath.basename(stem)}.${suffix}`))
  })
}

/**
 * Stores each session, the source's own first; when one cannot be stored, those stored before it
 * are deleted again, so that an import is all of its sessions or none.
 */
const storeAll = (sessions: ReadonlyArray<Import.ImportedSession>, to: string | undefined) =>
  Effect.gen(function*() {
    const service = yield* Sessions.Sessions
    const made: Array<Sessions.Summary> = []
    const locations = locationsOf(sessions, to)
    for (let i = 0; i < sessions.length; i++) {
      const stored = yield* Effect.either(service.import(sessions[i]!, locations[i]))
      if (Either.isLeft(stored)) {
        for (const summary of made) yield* Effect.ignore(service.delete(summary.location))
        return yield* stored.left
      }
      made.push(stored.right)
    }
    return made
  })

/**
 * `session-tree import` with its parsed options.
 *
 * @since 0.2.0
 * @category commands
 */
export const importFile = ({ db, file, from, json, keepAll, lossy, skipDamaged, to, version }: {
  readonly db: Backend.Backend
  readonly file: string
  readonly from: Option.Option<(typeof FROM)[number]>
  readonly json: boolean
  readonly keepAll: boolean
  readonly lossy: boolean
  readonly skipDamaged: boolean
  readonly to: Option.Option<string>
  readonly version: Option.Option<1 | 2>
}) =>
  Effect.gen(function*() {
    const onDatabase = db._tag === "Database"
    const asked = Option.getOrUndefined(version)
    if (Option.isNone(to) && !onDatabase) return yield* new Backend.UsageError({ reason: "import needs --to PATH on files" })
    yield* Backend.checkPaths(db, Option.toArray(to))
    // A line number in a conversion's error is FILE's, so the error names FILE, not the new session.
    const aboutFile = (e: SessionError): SessionError =>
      e.path === undefined ? sessionError(e.code, e.reason, { line: e.line, path: file, cause: e.cause }) : e
    const bytes = yield* Files.readBytes(file, MAX_SOURCE_BYTES).pipe(Effect.mapError((e) => Backend.locate(aboutFile(e), db)), Effect.provide(Fs.layer))
    const format = Option.isSome(from) ? from.value : yield* Effect.mapError(Import.detect(bytes), (e) => Backend.locate(aboutFile(e), db))
    const converting = format !== "session-tree"
    if (lossy && format !== "pi") return yield* new Backend.UsageError({ reason: `--lossy applies to Pi sessions only; ${printable(file)} is read as ${format}` })
    if (lossy && asked === 2) return yield* new Backend.UsageError({ reason: "--lossy makes a version-1 session: version 2 keeps everything, without --lossy" })
    if ((format === "claude" || format === "codex") && asked === 1) {
      return yield* new Backend.UsageError({ reason: `a ${format === "claude" ? "Claude Code transcript" : "Codex rollout"} imports as version 2 only` })
    }
    if ((keepAll || skipDamaged) && (!converting || lossy || asked === 1)) {
      return yield* new Backend.UsageError({ reason: "--keep-all and --skip-damaged apply to the version-2 import of Pi, Claude Code and Codex files" })
    }
    const target = Option.getOrUndefined(to)
    const stored = yield* Backend.run(db, Effect.gen(function*() {
      const service = yield* Sessions.Sessions
      if (format === "pi" && (lossy || asked === 1)) {
        const converted = yield* Effect.mapError(PiSession.fromPi(bytes, { lossy }), aboutFile)
        if (lossy) yield* Console.error(dropped(converted))
        return { sessions: [yield* service.import(converted, target, { version: asked })], imported: undefined }
      }
      if (format === "session-tree") {
        const unpacked = yield* readSelfContained(file)
        if (unpacked !== undefined) return { sessions: [yield* service.import(unpacked.records, target, { version: asked, blobs: unpacked.blobs })], imported: undefined }
        // A session file's blobs live beside it (FILE.blobs/): the new session gets their bytes.
        const loaded = yield* FileJournal.readSession(file)
        const blobs = yield* SelfContained.blobsOf(loaded.entries, loaded.blob)
        return { sessions: [yield* service.import(loaded, target, { version: asked, blobs: blobs.size === 0 ? undefined : blobs })], imported: undefined }
      }
      const imported = yield* convertWithParent(file, bytes, { from: format, keepAll, skipDamaged }, aboutFile)
      return { sessions: yield* storeAll(imported.sessions, target), imported }
    }), Option.getOrElse(to, () => file))
    const { imported, sessions } = stored
    if (json) {
      return yield* Console.log(jsonLine({
        ok: true,
        format,
        sessions: sessions.map((s) => ({ id: s.id, location: s.location, entries: s.entries })),
        ...(imported === undefined ? {} : {
          read: imported.read,
          skipped: imported.skipped,
          kept: imported.kept,
          damaged: imported.damaged,
          torn: imported.torn ?? null
        })
      }))
    }
    if (imported !== undefined) for (const line of reportLines(imported)) yield* Console.error(line)
    for (const session of sessions) yield* Console.log(printable(session.id))
  })

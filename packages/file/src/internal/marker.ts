/**
 * The marker's name, `NAME.marker`: the lock of a session file between
 * processes. A version-1 commit and a delete link the generation they replace
 * there (a file: the lock and the rollback copy); a version-2 append creates its
 * intent there (a symbolic link whose text says where its batch lies, see
 * `append.ts`). Whoever finds the name taken fails with SESSION_BUSY, saying why.
 */
import { type ConflictError, type IoError, sessionError } from "@session-tree/core/SessionError"
import { sha256 } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Ref from "effect/Ref"
import { type FsError, type FsService, sameFile, type Stat } from "../Fs.js"
import { isLocked, lock, rollbackFailed, type Strays } from "./held.js"
import { lstatNamed, lstatOrMissing, removeOwn, stepError, type WriteFailure } from "./io.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"

/** What an append intent says: the batch occupies bytes [from, to) of the file and hashes to `sha256`. */
export interface Intent {
  readonly from: number
  readonly to: number
  readonly sha256: string
  /** The writer (see `owner.ts`), so that `recover` leaves a running writer's intent alone. */
  readonly owner: Owner.Owner
}

/** An intent's text; a session file (what a version-1 commit links at the marker's name) is a regular file instead. */
const INTENT = /^session-tree-append-1:(\d+):(\d+):([0-9a-f]{64}):([0-9a-f]{8}-\d+-\d+):\d+$/

/** The text of a new intent of this process; the sequence number makes each one unique, which readers rely on. */
export const encodeIntent = (intent: Omit<Intent, "owner">): string =>
  `session-tree-append-1:${intent.from}:${intent.to}:${intent.sha256}:${Owner.selfName()}:${Owner.nextSeq()}`

/** The intent a symbolic link's text holds, or undefined when it is not one. */
export const parseIntent = (text: string): Intent | undefined => {
  const m = INTENT.exec(text)
  const owner = m === null ? undefined : Owner.parse(m[4]!)
  if (m === null || owner === undefined) return undefined
  const from = Number(m[1])
  const to = Number(m[2])
  return Number.isSafeInteger(to) && from < to ? { from, to, sha256: m[3]!, owner } : undefined
}

/**
 * How many bytes of a file of `size` bytes a reader shows under `intent`, given the file's bytes
 * from `intent.from` on (`batch`): `to` when the file holds exactly the batch after `from`, else
 * `from`. A file shorter than `from`, or longer than `to`, is not one the intent's writer left:
 * SESSION_REPLACED. Every reader and `recover` judge by this one rule.
 */
export const settle = (size: number, batch: Uint8Array, intent: Intent, path: string): number | ConflictError => {
  if (size < intent.from || size > intent.to) {
    return sessionError(
      "SESSION_REPLACED",
      `the file holds ${size} bytes, which its append intent (bytes ${intent.from} to ${intent.to}) cannot explain`,
      { path }
    )
  }
  return size === intent.to && sha256(batch) === intent.sha256 ? intent.to : intent.from
}

/** What the operation that found the marker was about to do, for its SESSION_BUSY. */
export interface Action {
  /** What the caller should do while another writer is at work: "reload and retry", "try again". */
  readonly retry: string
  /** What the marker blocks: "appends", "the delete". */
  readonly blocked: string
}

export const COMMIT: Action = { retry: "reload and retry", blocked: "appends" }
export const DELETE: Action = { retry: "try again", blocked: "the delete" }

/**
 * Why the marker exists, for the SESSION_BUSY of an operation that found it: another writer's
 * commit in flight (its temp name, or its append intent, names a running process), or one that
 * crashed or could not prove its rollback, which only `recover` resolves.
 */
export const busy = (fs: FsService, paths: Paths.SessionPaths, action: Action): Effect.Effect<ConflictError> =>
  // Unlisted, the marker is still there: the message then points at `recover`, which lists again.
  Effect.map(Effect.all([
    Effect.orElseSucceed(Paths.leftovers(fs, paths), () => undefined),
    Effect.orElseSucceed(fs.readlink(paths.marker), () => "")
  ]), ([found, link]) => {
    // A version-1 commit or a delete names its writer with its temp file, a version-2 append in its intent.
    const appender = parseIntent(link)?.owner
    const live = found?.live?.owner ?? (appender !== undefined && Owner.isAlive(appender) ? appender : undefined)
    return sessionError(
      "SESSION_BUSY",
      live !== undefined
        ? `another writer (pid ${live.pid}) is committing to this session right now; ${action.retry}`
        : `a recovery marker (${paths.marker}) left by an interrupted commit blocks ${action.blocked}; ` +
          `no writer is running, so run \`session-tree recover ${paths.path}\` (Recovery.recover) to resolve it`,
      { path: paths.path }
    )
  })

/** What `take` linked at the marker: the file it links as lstat saw it, or why lstat could not tell. */
export type Linked = { readonly _tag: "Seen"; readonly stat: Stat } | { readonly _tag: "Unseen"; readonly error: FsError }

/**
 * Links the current file at the marker's name: the lock of a commit or a delete. A name already
 * there is SESSION_BUSY (`busy`); ENOENT is a file that vanished since it was looked at
 * (`vanished`). Then what was linked is looked at: whatever sits at the name is ours from here on.
 */
export const link = (
  fs: FsService,
  paths: Paths.SessionPaths,
  action: Action,
  vanished: "SESSION_REPLACED" | "SESSION_NOT_FOUND"
): Effect.Effect<Linked, WriteFailure> =>
  Effect.zipRight(
    Effect.catchAll(fs.link(paths.path, paths.marker), (e) =>
      e.errno === "EEXIST"
        ? Effect.flatMap(busy(fs, paths, action), Effect.fail)
        : Effect.fail(stepError("lock (link marker)", e, { ENOENT: vanished }))),
    Effect.match(fs.lstat(paths.marker), {
      onFailure: (error): Linked => ({ _tag: "Unseen", error }),
      onSuccess: (stat): Linked => ({ _tag: "Seen", stat })
    })
  )

/**
 * The marker of a commit (`link`), held while `use` runs with the file it links. When `use`
 * fails the marker goes, but only while it is still the link this commit made (whatever it
 * links: a symlink swapped in before the link included); when that cannot be proven it is kept,
 * and the writer locked. On success the commit has removed it itself, as its last step.
 */
export const withLock = <A, S extends Strays>(
  fs: FsService,
  state: Ref.Ref<S>,
  paths: Paths.SessionPaths,
  use: (marker: Stat) => Effect.Effect<A, WriteFailure>
): Effect.Effect<A, WriteFailure> =>
  Effect.acquireUseRelease(
    link(fs, paths, COMMIT, "SESSION_REPLACED"),
    (linked) => linked._tag === "Unseen" ? Effect.fail(stepError("lstat marker", linked.error)) : use(linked.stat),
    (linked, exit) => Exit.isSuccess(exit) ? Effect.void : release(fs, state, paths, linked, exit)
  )

/** The marker removed after a failure, only while it is still the link made; else kept, and the writer locked. */
const release = <S extends Strays>(
  fs: FsService,
  state: Ref.Ref<S>,
  paths: Paths.SessionPaths,
  linked: Linked,
  exit: Exit.Exit<unknown, unknown>
): Effect.Effect<void> =>
  Effect.flatMap(isLocked(state), (locked) =>
    locked ? Effect.void : Effect.matchEffect(lstatOrMissing(fs, paths.marker), {
      onFailure: (e) => lock(state, rollbackFailed(paths, "the marker", "the marker could not be checked", exit, e)),
      onSuccess: (now) => {
        if (now === undefined) return Effect.void
        const ours = linked._tag === "Seen" ? sameFile(now, linked.stat) : now.kind === "file"
        if (!ours) return lock(state, rollbackFailed(paths, "the marker", "the marker is not the link this commit made", exit))
        return Effect.flatMap(removeOwn(fs, paths.marker), (gone) =>
          gone ? Effect.void : lock(state, rollbackFailed(paths, "the marker", "the marker could not be removed", exit)))
      }
    }))

/** What is at the marker's name: nothing, a version-1 commit's marker (a file), or an append intent (a link's text). */
export type Now = undefined | { readonly _tag: "File"; readonly stat: Stat } | { readonly _tag: "Intent"; readonly text: string }

/** The marker as a reader sees it; "changing" when it went or changed between the lstat and the readlink. */
export const now = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Now | "changing", ConflictError | IoError> =>
  Effect.flatMap(lstatNamed(fs, "lstat marker", paths.marker), (stat): Effect.Effect<Now | "changing", ConflictError | IoError> => {
    if (stat === undefined) return Effect.succeed(undefined)
    if (stat.kind === "file") return Effect.succeed({ _tag: "File" as const, stat })
    if (stat.kind === "symlink") {
      return Effect.matchEffect(fs.readlink(paths.marker), {
        // Gone or replaced between the lstat and the readlink: an append ended meanwhile.
        onFailure: (e) =>
          e.errno === "ENOENT" || e.errno === "EINVAL" ? Effect.succeed("changing" as const) : Effect.fail(stepError("readlink marker", e)),
        onSuccess: (text) => Effect.succeed({ _tag: "Intent" as const, text })
      })
    }
    return Effect.fail(sessionError("SESSION_BUSY", `${paths.marker} is not a regular file: it blocks this session until it is removed`, { path: paths.path }))
  })

/** The same marker before and after a read: both absent, the same file unchanged, or the same intent (each is unique). */
export const same = (a: Now, b: Now): boolean =>
  a === undefined || b === undefined
    ? a === b
    : a._tag === "File"
    ? b._tag === "File" && sameFile(a.stat, b.stat) && a.stat.size === b.stat.size && a.stat.mtimeNs === b.stat.mtimeNs
    : b._tag === "Intent" && a.text === b.text

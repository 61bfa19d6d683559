/**
 * Which backend a command runs on (SPEC C5): session files, or the PostgreSQL
 * database named by `--db URL` (default: the environment variable
 * `SESSION_TREE_DB`). The database package is loaded only when a command uses
 * it, so the file commands start without it.
 */
import * as Ids from "@session-tree/core/Ids"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionError } from "@session-tree/core/SessionError"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Fs from "@session-tree/file/Fs"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"

/** What every command may use: the sessions of the backend and its ports, IDs, and the filesystem (import and export files). */
export type Library = Sessions.Sessions | SessionJournal | SessionCatalog | Ids.Ids | Fs.Fs

export type Backend =
  | { readonly _tag: "Files" }
  | { readonly _tag: "Database"; readonly url: string }

/** The backend of `--db` (or `$SESSION_TREE_DB` when the option is absent); files when neither is set. */
export const choose = (db: Option.Option<string>): Backend => {
  const url = Option.orElse(db, () => Option.fromNullable(process.env["SESSION_TREE_DB"]).pipe(Option.filter((u) => u !== "")))
  return Option.isSome(url) ? { _tag: "Database", url: url.value } : { _tag: "Files" }
}

const FilesLive: Layer.Layer<Library> = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))

/** The services of `backend`; connecting to a database that cannot be reached is SESSION_IO. */
export const layer = (backend: Backend): Effect.Effect<Layer.Layer<Library, SessionError>> =>
  backend._tag === "Files"
    ? Effect.succeed(FilesLive)
    : Effect.map(Effect.promise(() => import("@session-tree/pg/PgJournal")), (PgJournal) =>
      Layer.provideMerge(Sessions.layer, Layer.mergeAll(PgJournal.layerUrl(backend.url), Ids.layerRandom, Fs.layer)))

/** Runs `effect` on `backend` (one `choose` per command, made by the option parser). */
export const run = <A, E>(backend: Backend, effect: Effect.Effect<A, E, Library>): Effect.Effect<A, E | SessionError> =>
  Effect.flatMap(layer(backend), (live) => Effect.provide(effect, live))

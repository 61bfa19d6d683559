/**
 * This project's store, held open across measurements: a store lives in a
 * Scope, so the benchmarks make one, extend it with `load`/`create`, and close
 * it when done. The file journal on the real filesystem, random UUIDs, the
 * system clock.
 */
import * as Ids from "@session-tree/core/Ids"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Fs from "@session-tree/file/Fs"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"

export interface Open {
  readonly store: SessionStore.SessionStore
  readonly close: () => Promise<void>
}

const hold = async (
  make: Effect.Effect<SessionStore.SessionStore, unknown, SessionJournal | Ids.Ids | Scope.Scope>,
  fs: Fs.FsService,
  options?: FileJournal.Options
): Promise<Open> => {
  const scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(make.pipe(
    Scope.extend(scope),
    Effect.provideService(SessionJournal, FileJournal.make(fs, options)),
    Effect.provideService(Ids.Ids, Ids.random)
  ))
  return { store, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** Loads `path`; `fs` may be the real filesystem seen through an interceptor that counts or times steps. */
export const load = (path: string, fs: Fs.FsService = Fs.node, options?: FileJournal.Options): Promise<Open> =>
  hold(SessionStore.load(path), fs, options)
export const create = (path: string): Promise<Open> => hold(SessionStore.create(path), Fs.node)

const defaultJournal = FileJournal.make(Fs.node)

/** Loads a session read-only through the file journal. */
export const read = (path: string): Promise<SessionStore.Loaded> =>
  Effect.runPromise(Effect.provideService(SessionStore.read(path), SessionJournal, defaultJournal))

/** One append, as a Promise. */
export const append = (store: SessionStore.SessionStore, parentId: string | null, message: unknown) =>
  Effect.runPromise(store.append(parentId, message))

/** One append of any kind (version 2), as a Promise. */
export const appendEntry = (store: SessionStore.SessionStore, parentId: string | null, body: unknown) =>
  Effect.runPromise(store.appendEntry(parentId, body))

/** Runs an effect of the store as a Promise. */
export const run = <A>(effect: Effect.Effect<A, unknown>): Promise<A> => Effect.runPromise(effect)

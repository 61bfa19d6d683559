/**
 * This project's store, held open across measurements: a store lives in a
 * Scope, so the benchmarks make one, extend it with `load`/`create`, and close
 * it when done. Real filesystem, random UUIDs, the system clock.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as Fs from "@session-tree/core/Fs"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"

export interface Open {
  readonly store: SessionStore.SessionStore
  readonly close: () => Promise<void>
}

const hold = async (
  make: Effect.Effect<SessionStore.SessionStore, unknown, Fs.Fs | Ids.Ids | Scope.Scope>,
  fs: Fs.FsService
): Promise<Open> => {
  const scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(make.pipe(
    Scope.extend(scope),
    Effect.provideService(Fs.Fs, fs),
    Effect.provideService(Ids.Ids, Ids.makeRandom)
  ))
  return { store, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

/** Loads `path`; `fs` may be the real filesystem seen through an interceptor that counts or times steps. */
export const load = (path: string, fs: Fs.FsService = Fs.make): Promise<Open> => hold(SessionStore.load(path), fs)
export const create = (path: string): Promise<Open> => hold(SessionStore.create(path), Fs.make)

/** One append, as a Promise. */
export const append = (store: SessionStore.SessionStore, parentId: string | null, message: unknown) =>
  Effect.runPromise(store.append(parentId, message))

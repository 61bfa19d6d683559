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

const provide = <A, E>(effect: Effect.Effect<A, E, Fs.Fs | Ids.Ids | Scope.Scope>, scope: Scope.CloseableScope) =>
  effect.pipe(
    Scope.extend(scope),
    Effect.provideService(Fs.Fs, Fs.make),
    Effect.provideService(Ids.Ids, Ids.makeRandom)
  )

const hold = async (make: Effect.Effect<SessionStore.SessionStore, unknown, Fs.Fs | Ids.Ids | Scope.Scope>): Promise<Open> => {
  const scope = Effect.runSync(Scope.make())
  const store = await Effect.runPromise(provide(make, scope))
  return { store, close: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
}

export const load = (path: string): Promise<Open> => hold(SessionStore.load(path))
export const create = (path: string): Promise<Open> => hold(SessionStore.create(path))

/** One append, as a Promise. */
export const append = (store: SessionStore.SessionStore, parentId: string | null, message: unknown) =>
  Effect.runPromise(store.append(parentId, message))

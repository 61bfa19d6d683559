/**
 * The in-process locks of session files: every store and `recover` of one file
 * in this process take the file's lock around a commit, a flush, a release or a
 * recovery, so that their commits take turns.
 *
 * A lock is a semaphore of one permit, kept in a registry while a holder's scope
 * is open and forgotten when the last one closes.
 */
import * as Effect from "effect/Effect"
import { globalValue } from "effect/GlobalValue"
import type * as Scope from "effect/Scope"

export interface FileLocks {
  /** The lock of `key` (see `SessionPaths.lockKey`), held by the caller until its scope closes. */
  readonly lockFor: (key: string) => Effect.Effect<Effect.Semaphore, never, Scope.Scope>
  /** How many locks some scope holds now (for tests: a lock no one holds is forgotten). */
  readonly held: () => number
}

/** A registry of its own, for tests. */
export const make = (): FileLocks => {
  const locks = new Map<string, { readonly semaphore: Effect.Semaphore; holders: number }>()
  return {
    lockFor: (key) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          let entry = locks.get(key)
          if (entry === undefined) {
            entry = { semaphore: Effect.unsafeMakeSemaphore(1), holders: 0 }
            locks.set(key, entry)
          }
          entry.holders++
          return entry.semaphore
        }),
        () =>
          Effect.sync(() => {
            const entry = locks.get(key)!
            if (--entry.holders === 0) locks.delete(key)
          })
      ),
    held: () => locks.size
  }
}

/**
 * The registry of this process, made when first asked for. It is one per process rather than one
 * per layer because two stores of one file must take turns whatever built their journals (the
 * Promise facade builds a layer per store; `FileJournal.make` and `Recovery.recover` need no layer
 * at all), while the lock between processes, the marker, makes a second writer fail instead of wait.
 */
export const processLocks = (): FileLocks => globalValue(Symbol.for("@session-tree/file/FileLocks"), make)

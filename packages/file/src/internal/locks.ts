/**
 * The in-process lock of a session file: every store and `recover` of one file
 * in this process take it around a commit, a flush, a release or a recovery.
 *
 * A mutex of our own rather than Effect's semaphore, because a commit takes it
 * once per batch and it is then almost always free: taking a free lock here is a
 * check and an assignment, where the semaphore suspends the fiber and resumes it.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"

export class Lock {
  private held = false
  private readonly waiters = new Set<() => void>()

  private readonly take: Effect.Effect<void> = Effect.suspend(() => {
    if (!this.held) {
      this.held = true
      return Effect.void
    }
    return Effect.async<void>((resume) => {
      const waiter = () => resume(this.take)
      this.waiters.add(waiter)
      return Effect.sync(() => void this.waiters.delete(waiter))
    })
  })

  // Every waiter tries again (one wins, the others wait anew): a waiter interrupted after being
  // woken then cannot leave the others waiting on a free lock.
  private readonly release: Effect.Effect<void> = Effect.sync(() => {
    this.held = false
    if (this.waiters.size === 0) return
    const woken = [...this.waiters]
    this.waiters.clear()
    for (const waiter of woken) waiter()
  })

  /** Runs `effect` holding the lock; waiting for it is interruptible, holding it is released on any exit. */
  readonly withLock = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.uninterruptibleMask((restore) => Effect.zipRight(restore(this.take), Effect.ensuring(restore(effect), this.release)))
}

/** One lock per (directory identity, file name), with the number of holders; forgotten when none is left. */
const pathLocks = new Map<string, { readonly lock: Lock; holders: number }>()

/** The lock of `key`, held by the caller until its scope closes. */
export const lockFor = (key: string): Effect.Effect<Lock, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.sync(() => {
      let held = pathLocks.get(key)
      if (held === undefined) {
        held = { lock: new Lock(), holders: 0 }
        pathLocks.set(key, held)
      }
      held.holders++
      return held.lock
    }),
    () =>
      Effect.sync(() => {
        const held = pathLocks.get(key)!
        if (--held.holders === 0) pathLocks.delete(key)
      })
  )

/** How many file locks this process holds (for tests: a lock no one holds is forgotten). */
export const heldLocks = (): number => pathLocks.size

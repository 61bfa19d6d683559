import * as Effect from "effect/Effect"

// One lock per (directory identity, file name): every store and `recover` of a file in this process go through it.
const pathLocks = new Map<string, Effect.Semaphore>()

export const lockFor = (key: string): Effect.Semaphore => {
  let lock = pathLocks.get(key)
  if (lock === undefined) {
    lock = Effect.unsafeMakeSemaphore(1)
    pathLocks.set(key, lock)
  }
  return lock
}

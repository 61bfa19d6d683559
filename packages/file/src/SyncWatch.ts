/**
 * The following part of `sync --watch`: a round of sync run at once, then again whenever a file
 * under the sources changes (inotify, through `fs.watch` with `recursive`, debounced), when the
 * last round asked for one (what it left waiting will be quiet by then), and every `rescanMs`
 * whatever happens, so that an event the kernel dropped delays a change, never loses it. Runs
 * until interrupted (SIGINT, SIGTERM): a round in flight then ends as any interrupted sync does,
 * its commits whole or not made.
 *
 * @since 0.2.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as NFS from "node:fs"
import * as Path from "node:path"

/**
 * How `watch` waits: a burst of changes as one round, and a round at least this often.
 *
 * @since 0.2.0
 * @category models
 */
export interface WatchOptions {
  /** How long a round waits after a change for the next ones, so that a burst of writes is one round. Default 30 ms. */
  readonly debounceMs?: number | undefined
  /** A round at least this often, changes seen or not. Default 60 s. */
  readonly rescanMs?: number | undefined
}

/**
 * Runs `round` now and after each change under `roots`, until interrupted. `round` answers when
 * it wants to run again at the latest (in milliseconds), or undefined for no sooner than the
 * rescan. A failed round ends the watch with its error.
 *
 * @since 0.2.0
 * @category syncing
 */
export const watch = <E, R>(
  roots: ReadonlyArray<string>,
  round: Effect.Effect<number | undefined, E, R>,
  options: WatchOptions = {}
): Effect.Effect<never, E, R> =>
  Effect.scoped(Effect.gen(function*() {
    const debounce = Duration.millis(options.debounceMs ?? 30)
    const rescanMs = options.rescanMs ?? 60_000
    const changes = yield* Queue.unbounded<void>()
    for (const root of roots) {
      const path = Path.resolve(root)
      yield* Effect.acquireRelease(
        Effect.sync(() => {
          const recursive = NFS.statSync(path).isDirectory()
          const watcher = NFS.watch(path, { recursive, persistent: false }, () => void Queue.unsafeOffer(changes, undefined))
          // A watcher that fails (its directory removed, too many watches) is left to the rescans.
          watcher.on("error", () => void Queue.unsafeOffer(changes, undefined))
          return watcher
        }),
        (watcher) => Effect.sync(() => watcher.close())
      )
    }
    let due = yield* round
    for (;;) {
      const wait = Math.max(0, Math.min(due ?? rescanMs, rescanMs))
      yield* Effect.timeoutOption(Queue.take(changes), Duration.millis(wait))
      yield* Effect.sleep(debounce)
      yield* Queue.takeAll(changes)
      due = yield* round
    }
  }))

/**
 * The memory journal with a probe between the store and its writers: it
 * records every batch a writer is handed, can hold the next commit until the
 * test lets it go, and can fail chosen commits, so that tests of the store see
 * its commits without a file system.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Ids from "../../src/Ids.js"
import * as MemoryJournal from "../../src/MemoryJournal.js"
import { type AppendError, type Batch, SessionJournal, type SessionJournalService, type Writer } from "../../src/SessionJournal.js"

/** A commit the probe holds: it has arrived at the writer, and goes on once `release` is done. */
export interface Held {
  readonly arrived: Deferred.Deferred<void>
  readonly release: Deferred.Deferred<void>
}

export class Probe {
  /** The entry IDs of every batch handed to a writer (a flush hands none), in order. */
  readonly batches: Array<ReadonlyArray<string>> = []
  /** The listing each create and each batch offered its backend for the location it was stored at, if any. */
  readonly listings: Array<string | undefined> = []
  /** The canonical lines each batch brought (`Batch.canonical`), if any. */
  readonly canonical: Array<ReadonlyArray<string> | undefined> = []
  /** The commit to hold next, if any. */
  private held: Held | undefined = undefined
  /** Failures for the next commits, in order: each is used by one commit, which then writes nothing. */
  private readonly failures: Array<AppendError> = []

  /** Holds the next commit at the writer until the returned `release` is done. */
  hold(): Effect.Effect<Held> {
    return Effect.map(Effect.zip(Deferred.make<void>(), Deferred.make<void>()), ([arrived, release]) => (this.held = { arrived, release }))
  }

  /**
   * Forks `effect` with the next commit held, and returns once that commit has arrived at the
   * writer: the fiber, and `release`, which lets the commit go on.
   */
  forkHeld<A, E, R>(
    effect: Effect.Effect<A, E, R>
  ): Effect.Effect<{ readonly fiber: Fiber.RuntimeFiber<A, E>; readonly release: Effect.Effect<void> }, never, R> {
    return Effect.gen(this, function*() {
      const held = yield* this.hold()
      const fiber = yield* Effect.fork(effect)
      yield* Deferred.await(held.arrived)
      return { fiber, release: Effect.asVoid(Deferred.succeed(held.release, undefined)) }
    })
  }

  failNext(error: AppendError): void {
    this.failures.push(error)
  }

  /** The number of batches handed to writers. */
  get commits(): number {
    return this.batches.length
  }

  wrap(writer: Writer, location: string): Writer {
    return {
      append: (batch: Batch) =>
        Effect.suspend(() => {
          this.batches.push(batch.ids)
          this.listings.push(batch.listing?.(location))
          this.canonical.push(batch.canonical?.lines)
          const held = this.held
          this.held = undefined
          const failure = this.failures.shift()
          const commit = failure === undefined ? writer.append(batch) : Effect.fail(failure)
          return held === undefined
            ? commit
            : Effect.zipRight(Effect.zipRight(Deferred.succeed(held.arrived, undefined), Deferred.await(held.release)), commit)
        })
    }
  }
}

/** A memory journal over `storage` whose writers go through `probe`. */
export const probed = (storage: MemoryJournal.Storage, probe: Probe): SessionJournalService => {
  const journal = MemoryJournal.make(storage)
  return {
    ...journal,
    create: (location, session) =>
      Effect.map(journal.create(location, session), (created) => {
        probe.listings.push(session.listing?.(created.location))
        return { ...created, writer: probe.wrap(created.writer, created.location) }
      }),
    hold: (location) => Effect.map(journal.hold(location), (opened) => ({ ...opened, writer: probe.wrap(opened.writer, opened.location) }))
  }
}

/** A fresh storage and probe, and the layer of a probed journal over them with deterministic IDs. */
export const makeProbed = () => {
  const storage: MemoryJournal.Storage = new Map()
  const probe = new Probe()
  const layer = Layer.merge(Layer.succeed(SessionJournal, probed(storage, probe)), Ids.layerDeterministic)
  return { storage, probe, layer }
}

/**
 * Group commit: inputs submitted while a commit is running, or together with the
 * one that starts it, are committed together. It is generic over what it
 * commits: the caller's `commit` turns a batch of inputs into one outcome per input.
 *
 * - A submission made while no commit is in flight commits on its caller's
 *   fiber: nothing is handed over to another fiber. Its caller yields once
 *   first, so that submissions made in the same turn of the scheduler join its
 *   batch.
 * - A submission made while a commit is in flight waits in the queue. When that
 *   commit is done, the first one waiting is woken to commit everything queued by
 *   then, on its own fiber: under contention each batch is what queued behind
 *   the commit before it.
 * - A submission interrupted while it waits (or before its caller's batch is
 *   taken) is withdrawn: its input never reaches `commit`, and a turn to commit
 *   it was given passes to the next one waiting. Once its batch is taken, its
 *   input is committed either way, so an interruption then waits for the
 *   outcome (which is lost to the interrupted caller, as with any
 *   uninterruptible work) and the fiber ends interrupted only after it.
 * - When the scope closes, everything still queued fails with `closed()`, new
 *   submissions fail the same way, and the close waits for the batch being
 *   committed, so that nothing commits after it and no commit outlives the
 *   resources it uses.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as Scope from "effect/Scope"

export interface GroupCommit<I, A, E> {
  /** Commits `input` (with whatever is queued) and waits for the outcome of the commit that holds it. */
  readonly submit: (input: I) => Effect.Effect<A, E>
  /** Whether the scope has closed: submissions fail from then on. */
  readonly isClosed: Effect.Effect<boolean>
}

/** The outcome of each input of a batch, in the batch's order. */
export type Outcomes<A, E> = ReadonlyArray<Exit.Exit<A, E>>

export interface Options<I, A, E> {
  /**
   * Commits one batch. A failure or defect of the effect itself fails every
   * input of the batch with its cause; the batch after it is committed all the same.
   */
  readonly commit: (batch: ReadonlyArray<I>) => Effect.Effect<Outcomes<A, E>, E>
  /** Why a submission fails once the scope has closed. */
  readonly closed: () => E
}

/** What wakes a waiting submission: its outcome, or its turn to commit what is queued. */
const TURN = Symbol.for("@session-tree/core/GroupCommit/turn")

/** One submission that waits: from its queueing to its outcome, or to its turn to commit. */
class Waiting<I, A, E> {
  /** Queued; taken into a batch (its input will be committed); given the turn to commit; or withdrawn by its interrupted caller. */
  stage: "queued" | "taken" | "turn" | "withdrawn" = "queued"
  readonly woken: Deferred.Deferred<A | typeof TURN, E> = Deferred.unsafeMake<A | typeof TURN, E>(FiberId.none)
  constructor(readonly input: I) {}
}

export const make = <I, A, E>(options: Options<I, A, E>): Effect.Effect<GroupCommit<I, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    // Read and written only in synchronous steps of the fibers that submit: one of them holds the turn at a time.
    const queue: Array<Waiting<I, A, E>> = []
    let committing = false
    let closed = false
    let idle: Deferred.Deferred<void> | undefined

    /** The submissions still queued, taken into the batch of the one that holds the turn. */
    const takeQueued = (): Array<Waiting<I, A, E>> => {
      const taken: Array<Waiting<I, A, E>> = []
      for (const waiting of queue.splice(0)) {
        if (waiting.stage !== "queued") continue
        waiting.stage = "taken"
        taken.push(waiting)
      }
      return taken
    }

    /** Gives the turn to the first submission still queued, or ends it; a close waiting for the turn to end is told. */
    const passTurn = (): void => {
      while (queue.length > 0) {
        const next = queue.shift()!
        if (next.stage !== "queued") continue
        next.stage = "turn"
        Deferred.unsafeDone(next.woken, Exit.succeed(TURN))
        return
      }
      committing = false
      if (idle !== undefined) Deferred.unsafeDone(idle, Exit.void)
    }

    /**
     * Commits `own` and everything queued, as the holder of the turn, and passes the turn on; the
     * outcome of `own`. Run uninterruptibly: once the batch is taken, it is committed.
     */
    const commitTurn = (own: I): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        const taken = takeQueued()
        if (closed) {
          const refused = Exit.fail(options.closed())
          for (const waiting of taken) Deferred.unsafeDone(waiting.woken, refused)
          passTurn()
          return refused
        }
        const inputs = [own]
        for (const waiting of taken) inputs.push(waiting.input)
        const settle = (outcome: (i: number) => Exit.Exit<A, E>): Exit.Exit<A, E> => {
          taken.forEach((waiting, i) => Deferred.unsafeDone(waiting.woken, outcome(i + 1)))
          passTurn()
          return outcome(0)
        }
        return Effect.matchCauseEffect(options.commit(inputs), {
          onFailure: (cause) => settle(() => Exit.failCause(cause)),
          onSuccess: (outcomes) =>
            settle((i) => outcomes[i] ?? Exit.die(new Error(`the commit gave ${outcomes.length} outcomes for ${inputs.length} inputs`)))
        })
      })

    /** After an interruption while waiting: withdrawn when still queued, the turn passed on, or the outcome awaited once taken. */
    const leave = (waiting: Waiting<I, A, E>): Effect.Effect<void> =>
      Effect.suspend(() => {
        switch (waiting.stage) {
          case "queued":
            waiting.stage = "withdrawn"
            return Effect.void
          case "turn":
            waiting.stage = "withdrawn"
            passTurn()
            return Effect.void
          default:
            return Effect.asVoid(Effect.exit(Deferred.await(waiting.woken)))
        }
      })

    // The close refuses what is queued and waits for the commit in flight: nothing commits after it.
    yield* Effect.addFinalizer(() =>
      Effect.suspend(() => {
        closed = true
        const refused = Exit.fail(options.closed())
        for (const waiting of takeQueued()) Deferred.unsafeDone(waiting.woken, refused)
        if (!committing) return Effect.void
        idle ??= Deferred.unsafeMake<void>(FiberId.none)
        return Deferred.await(idle)
      })
    )

    const submit = (input: I): Effect.Effect<A, E> =>
      Effect.suspend(() => {
        if (closed) return Effect.fail(options.closed())
        if (!committing) {
          committing = true
          // One yield first, so that what is submitted in the same turn joins this batch; an
          // interruption then withdraws this input and passes the turn on.
          return Effect.uninterruptibleMask((restore) =>
            Effect.flatMap(Effect.exit(restore(Effect.yieldNow())), (yielded): Effect.Effect<A, E> => {
              if (Exit.isSuccess(yielded)) return commitTurn(input)
              // Interrupted before its batch was taken: withdrawn, the turn passed on.
              passTurn()
              return Effect.failCause(yielded.cause)
            })
          )
        }
        const waiting = new Waiting<I, A, E>(input)
        queue.push(waiting)
        return Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(
            Effect.onInterrupt(restore(Deferred.await(waiting.woken)), () => leave(waiting)),
            (woken): Effect.Effect<A, E> => (woken === TURN ? commitTurn(input) : Effect.succeed(woken))
          )
        )
      })

    return { submit, isClosed: Effect.sync(() => closed) }
  })

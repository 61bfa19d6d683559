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

/**
 * The state of one group commit: what waits, whether a submission holds the turn to commit, and
 * whether its scope has closed. Read and written only in synchronous steps of the fibers that
 * submit, one of which holds the turn at a time.
 */
class Group<I, A, E> implements GroupCommit<I, A, E> {
  private readonly queue: Array<Waiting<I, A, E>> = []
  private committing = false
  private closed = false
  /** Told when the turn ends, once a close waits for it. */
  private idle: Deferred.Deferred<void> | undefined = undefined

  constructor(private readonly options: Options<I, A, E>) {}

  readonly isClosed: Effect.Effect<boolean> = Effect.sync(() => this.closed)

  readonly submit = (input: I): Effect.Effect<A, E> =>
    Effect.suspend(() => {
      if (this.closed) return Effect.fail(this.options.closed())
      if (!this.committing) {
        this.committing = true
        return this.lead(input)
      }
      const waiting = new Waiting<I, A, E>(input)
      this.queue.push(waiting)
      return this.wait(waiting)
    })

  /** Refuses what is queued and waits for the commit in flight: nothing commits after it. */
  readonly close: Effect.Effect<void> = Effect.suspend(() => {
    this.closed = true
    const refused = Exit.fail(this.options.closed())
    for (const waiting of this.takeQueued()) Deferred.unsafeDone(waiting.woken, refused)
    if (!this.committing) return Effect.void
    this.idle ??= Deferred.unsafeMake<void>(FiberId.none)
    return Deferred.await(this.idle)
  })

  /**
   * Commits `input` on its caller's fiber, which holds the turn. It yields once first, so that what
   * is submitted in the same turn of the scheduler joins its batch; an interruption then withdraws
   * the input and passes the turn on.
   */
  private lead(input: I): Effect.Effect<A, E> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(Effect.exit(restore(Effect.yieldNow())), (yielded): Effect.Effect<A, E> => {
        if (Exit.isSuccess(yielded)) return this.commitTurn(input)
        this.passTurn()
        return Effect.failCause(yielded.cause)
      })
    )
  }

  /** Waits for the outcome of the batch that takes `waiting`, or for its turn to commit; see `leave` for an interruption. */
  private wait(waiting: Waiting<I, A, E>): Effect.Effect<A, E> {
    return Effect.uninterruptibleMask((restore) =>
      Effect.flatMap(
        Effect.onInterrupt(restore(Deferred.await(waiting.woken)), () => this.leave(waiting)),
        (woken): Effect.Effect<A, E> => (woken === TURN ? this.commitTurn(waiting.input) : Effect.succeed(woken))
      )
    )
  }

  /** The submissions still queued, taken into the batch of the one that holds the turn. */
  private takeQueued(): Array<Waiting<I, A, E>> {
    const taken: Array<Waiting<I, A, E>> = []
    for (const waiting of this.queue.splice(0)) {
      if (waiting.stage !== "queued") continue
      waiting.stage = "taken"
      taken.push(waiting)
    }
    return taken
  }

  /** Gives the turn to the first submission still queued, or ends it; a close waiting for the turn to end is told. */
  private passTurn(): void {
    while (this.queue.length > 0) {
      const next = this.queue.shift()!
      if (next.stage !== "queued") continue
      next.stage = "turn"
      Deferred.unsafeDone(next.woken, Exit.succeed(TURN))
      return
    }
    this.committing = false
    if (this.idle !== undefined) Deferred.unsafeDone(this.idle, Exit.void)
  }

  /**
   * Commits `own` and everything queued, as the holder of the turn, and passes the turn on; the
   * outcome of `own`. Run uninterruptibly: once the batch is taken, it is committed.
   */
  private commitTurn(own: I): Effect.Effect<A, E> {
    return Effect.suspend(() => {
      const taken = this.takeQueued()
      if (this.closed) {
        const refused = Exit.fail(this.options.closed())
        for (const waiting of taken) Deferred.unsafeDone(waiting.woken, refused)
        this.passTurn()
        return refused
      }
      const inputs = [own]
      for (const waiting of taken) inputs.push(waiting.input)
      const settle = (outcome: (i: number) => Exit.Exit<A, E>): Exit.Exit<A, E> => {
        taken.forEach((waiting, i) => Deferred.unsafeDone(waiting.woken, outcome(i + 1)))
        this.passTurn()
        return outcome(0)
      }
      return Effect.matchCauseEffect(this.options.commit(inputs), {
        onFailure: (cause) => settle(() => Exit.failCause(cause)),
        onSuccess: (outcomes) =>
          settle((i) => outcomes[i] ?? Exit.die(new Error(`the commit gave ${outcomes.length} outcomes for ${inputs.length} inputs`)))
      })
    })
  }

  /** After an interruption while waiting: withdrawn when still queued, the turn passed on, or the outcome awaited once taken. */
  private leave(waiting: Waiting<I, A, E>): Effect.Effect<void> {
    return Effect.suspend(() => {
      switch (waiting.stage) {
        case "queued":
          waiting.stage = "withdrawn"
          return Effect.void
        case "turn":
          waiting.stage = "withdrawn"
          this.passTurn()
          return Effect.void
        default:
          return Effect.asVoid(Effect.exit(Deferred.await(waiting.woken)))
      }
    })
  }
}

/** A group commit of `options.commit`, in the scope: its close refuses what is queued and waits for the commit in flight. */
export const make = <I, A, E>(options: Options<I, A, E>): Effect.Effect<GroupCommit<I, A, E>, never, Scope.Scope> =>
  Effect.flatMap(Effect.sync(() => new Group(options)), (group) => Effect.as(Effect.addFinalizer(() => group.close), group))

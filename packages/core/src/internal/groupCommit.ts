/**
 * Group commit: inputs submitted while a commit is running, or together with the
 * one that starts it, are committed together, by one fiber that lives in the
 * scope the group commit was made in. It is generic over what it commits: the
 * caller's `commit` turns a batch of inputs into one outcome per input.
 *
 * - A batch is what was queued when the committer took it. Submissions made in
 *   the same turn of the scheduler land in the same batch, because the committer
 *   is woken through the scheduler after them.
 * - A submission interrupted while it is queued is withdrawn: its input never
 *   reaches `commit`. Once its batch is taken, its input is committed either
 *   way, so an interruption then waits for the outcome (which is lost to the
 *   interrupted caller, as with any uninterruptible work) and the fiber ends
 *   interrupted only after it.
 * - When the scope closes, everything still queued fails with `closed()`, new
 *   submissions fail the same way, and the close waits for the batch being
 *   committed, so that nothing commits after it and no commit outlives the
 *   resources it uses.
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Mailbox from "effect/Mailbox"
import type * as Scope from "effect/Scope"

export interface GroupCommit<I, A, E> {
  /** Queues `input` and waits for the outcome of the commit that holds it. */
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

/** One submission, from its queueing to its outcome. */
class Submission<I, A, E> {
  /** Queued, taken into a batch (its input will be committed), or withdrawn by its interrupted caller. */
  stage: "queued" | "taken" | "withdrawn" = "queued"
  readonly outcome: Deferred.Deferred<A, E> = Deferred.unsafeMake<A, E>(FiberId.none)
  constructor(readonly input: I) {}
}

export const make = <I, A, E>(options: Options<I, A, E>): Effect.Effect<GroupCommit<I, A, E>, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Mailbox.make<Submission<I, A, E>>()

    /** Commits the inputs of the submissions taken that are still wanted, or fails them once the scope has closed. */
    const commitBatch = (taken: Iterable<Submission<I, A, E>>, closed: boolean): Effect.Effect<void> =>
      Effect.suspend(() => {
        const batch: Array<Submission<I, A, E>> = []
        for (const submission of taken) {
          if (submission.stage !== "queued") continue
          submission.stage = "taken"
          batch.push(submission)
        }
        if (batch.length === 0) return Effect.void
        if (closed) {
          const refused = Exit.fail(options.closed())
          for (const submission of batch) Deferred.unsafeDone(submission.outcome, refused)
          return Effect.void
        }
        return Effect.matchCause(options.commit(batch.map((submission) => submission.input)), {
          onFailure: (cause) => {
            for (const submission of batch) Deferred.unsafeDone(submission.outcome, Exit.failCause(cause))
          },
          onSuccess: (outcomes) => {
            batch.forEach((submission, i) =>
              Deferred.unsafeDone(
                submission.outcome,
                outcomes[i] ?? Exit.die(new Error(`the commit gave ${outcomes.length} outcomes for ${batch.length} inputs`))
              )
            )
          }
        })
      })

    // Once the queue is ended, `takeAll` hands over what is left with `done` set: what was queued when
    // the scope closed. The committer is never interrupted; it ends after that last, refused, batch.
    const committer: Effect.Effect<void> = Effect.flatMap(
      queue.takeAll,
      ([taken, done]) => Effect.zipRight(commitBatch(taken, done), done ? Effect.void : committer)
    )
    const fiber = yield* Effect.forkScoped(Effect.uninterruptible(committer))

    // Added after the fork's own finalizer, so it runs first: the committer has ended when that one runs.
    const closing = yield* Deferred.make<void>()
    yield* Effect.addFinalizer(() => Effect.zipRight(Deferred.succeed(closing, undefined), Effect.zipRight(queue.end, Fiber.await(fiber))))

    const withdraw = (submission: Submission<I, A, E>): Effect.Effect<void> =>
      Effect.suspend(() => {
        if (submission.stage === "queued") {
          submission.stage = "withdrawn"
          return Effect.void
        }
        return Effect.asVoid(Effect.exit(Deferred.await(submission.outcome)))
      })

    return {
      submit: (input) =>
        Effect.suspend(() => {
          const submission = new Submission<I, A, E>(input)
          if (!queue.unsafeOffer(submission)) return Effect.fail(options.closed())
          return Effect.onInterrupt(Deferred.await(submission.outcome), () => withdraw(submission))
        }),
      isClosed: Deferred.isDone(closing)
    }
  })

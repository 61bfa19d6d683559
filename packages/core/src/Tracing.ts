/**
 * The spans of the library. Every public operation of the store, the tree and the
 * backends runs in a span named after it (`SessionStore.append`,
 * `FileJournal.hold`, …) carrying the session it works on, the size of its batch
 * where it has one, and its outcome: `success`, the code of the error it failed
 * with, `interrupted` or `defect`. With no tracer of the caller's, Effect's own
 * records them and nothing leaves the program.
 *
 * Most operations are `span`s: what they call nests under them. The operations
 * that run once per append (`leaf`) do not make themselves the parent of what
 * they call, which would cost an append as much as a step of its protocol; the
 * spans they cause are their siblings, under the caller's span.
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Tracer from "effect/Tracer"
import { isSessionError } from "./SessionError.js"

/**
 * The attribute naming the session an operation works on: its location (a path, an ID).
 *
 * @since 0.1.0
 * @category attributes
 */
export const SESSION = "session_tree.session"

/**
 * The attribute counting the entries an operation commits (an append's, a batch's).
 *
 * @since 0.1.0
 * @category attributes
 */
export const BATCH_SIZE = "session_tree.batch_size"

/**
 * The attribute holding how an operation ended: `success`, an error's code, `interrupted` or `defect`.
 *
 * @since 0.1.0
 * @category attributes
 */
export const OUTCOME = "session_tree.outcome"

/**
 * What a span of the library says of an operation besides its name: its session and, where it has
 * one, the size of its batch.
 *
 * @since 0.1.0
 * @category models
 */
export interface Subject {
  readonly session: string
  readonly batch?: number | undefined
}

/**
 * How an operation ended, as its span's `OUTCOME` says it.
 *
 * @since 0.1.0
 * @category attributes
 */
export const outcomeOf = (exit: Exit.Exit<unknown, unknown>): string => {
  if (exit._tag === "Success") return "success"
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) return isSessionError(failure.value) ? failure.value.code : "failure"
  return Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "defect"
}

const attributesOf = (subject: Subject): Record<string, unknown> =>
  subject.batch === undefined ? { [SESSION]: subject.session } : { [SESSION]: subject.session, [BATCH_SIZE]: subject.batch }

/** Runs `self`, recording its outcome on `span` as it ends. */
const ending = <A, E, R>(self: Effect.Effect<A, E, R>, span: Tracer.Span): Effect.Effect<A, E, R> =>
  Effect.onExit(self, (exit) => Effect.sync(() => span.attribute(OUTCOME, outcomeOf(exit))))

/**
 * `self` in the span `name`, the parent of the spans it causes, with `subject`'s attributes and,
 * when it ends, its outcome.
 *
 * @since 0.1.0
 * @category combinators
 */
export const span: {
  (name: string, subject: Subject): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
} = (name, subject) => (self) =>
  Effect.useSpan(name, { attributes: attributesOf(subject) }, (s) => ending(Effect.withParentSpan(self, s), s))

/**
 * `self` in the span `name`, with `subject`'s attributes and its outcome, for the operations that
 * run once per append: the spans it causes are its siblings, under the caller's span.
 *
 * @since 0.1.0
 * @category combinators
 */
export const leaf: {
  (name: string, subject: Subject): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
} = (name, subject) => (self) =>
  Effect.useSpan(name, { attributes: attributesOf(subject) }, (s) =>
    Effect.matchCauseEffect(self, {
      onFailure: (cause) => {
        s.attribute(OUTCOME, outcomeOf(Exit.failCause(cause)))
        return Effect.failCause(cause)
      },
      onSuccess: (value) => {
        s.attribute(OUTCOME, "success")
        return Effect.succeed(value)
      }
    }))

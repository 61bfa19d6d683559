/** Running store programs from tests: the real filesystem (or a wrapped one) and IDs unique per run. */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as FileJournal from "../../src/FileJournal.js"
import * as Fs from "../../src/Fs.js"
import { Ids, type IdsService } from "@session-tree/core/Ids"
import type { Message } from "@session-tree/core/Record"
import { isSessionError, type SessionError } from "@session-tree/core/SessionError"

export type Env = Fs.Fs | SessionJournal | Ids | Scope.Scope

/** IDs that stay unique across every process and run that shares one file: `PREFIX-1`, `PREFIX-2`, … */
export const prefixedIds = (prefix: string): IdsService => {
  let n = 0
  return {
    sessionId: Effect.sync(() => `${prefix}-session`),
    entryId: Effect.sync(() => `${prefix}-${++n}`)
  }
}

let runs = 0
/** IDs unique to one `run` (several runs often share one file). */
const freshIds = (): IdsService => prefixedIds(`r${++runs}`)

export const layerWith = (fs: Fs.FsService, ids: IdsService = freshIds()): Layer.Layer<Fs.Fs | SessionJournal | Ids> =>
  Layer.merge(FileJournal.layerWithFs(fs), Layer.succeed(Ids, ids))

export const run = <A, E>(
  effect: Effect.Effect<A, E, Env>,
  fs: Fs.FsService = Fs.node,
  ids?: IdsService
): Promise<A> => Effect.runPromise(Effect.scoped(effect).pipe(Effect.provide(layerWith(fs, ids))))

/** Runs and returns the typed failure instead of throwing; an untyped failure (a defect) still throws. */
export const attempt = <A>(
  effect: Effect.Effect<A, SessionError, Env>,
  fs: Fs.FsService = Fs.node,
  ids?: IdsService
): Promise<Either.Either<A, SessionError>> => run(Effect.either(effect), fs, ids)

export const codeOf = (u: unknown): string => (isSessionError(u) ? u.code : `UNTYPED(${String(u)})`)

export const user = (id: string, content: string): Message => ({ role: "user", id, content })

export const assistant = (id: string, calls: ReadonlyArray<{ id: string; name: string }>): Message => ({
  role: "assistant",
  id,
  content: "",
  toolCalls: calls.map((c) => ({ id: c.id, name: c.name, arguments: { n: 1 } }))
})

export const tool = (id: string, callId: string, name: string): Message => ({
  role: "tool",
  id,
  toolCallId: callId,
  toolName: name,
  content: "ok",
  isError: false
})

/**
 * The writer of one session file, held until its scope closes: it takes the
 * file's in-process lock for every commit, knows how it commits next (its
 * `Mode`) and what the file holds besides the generation it holds open, and
 * closes replaced generations in the background.
 */
import type { AppendError, Batch, Lines, Writer } from "@session-tree/core/SessionJournal"
import { sessionError } from "@session-tree/core/SessionError"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Mailbox from "effect/Mailbox"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import type { FsService, Handle } from "../Fs.js"
import * as Append from "./append.js"
import * as Blobs from "./blobs.js"
import * as Generation from "./generation.js"
import { type Directory, dropStrays, type Held } from "./held.js"
import { closeQuietly, step } from "./io.js"
import type * as Paths from "./paths.js"

const NEWLINE = 0x0a

/** The bytes `lines` take in a file: each line and its newline. */
export const sizeOf = (lines: Lines): number => {
  let total = 0
  for (const size of lines.sizes) total += size + 1
  return total
}

/** Writes each of `lines` and its newline into `buffer` from `at`, which must have room (`sizeOf`); returns the end. */
const writeLines = (buffer: Buffer, at: number, lines: Lines): number => {
  for (let i = 0; i < lines.lines.length; i++) {
    at += buffer.write(lines.lines[i]!, at, lines.sizes[i]!, "utf8")
    buffer[at++] = NEWLINE
  }
  return at
}

/** Growable bytes of the canonical generation, so the next one is the previous plus its new lines. */
export class GenerationBuffer {
  private buffer: Buffer
  length: number
  /** The generation of `lines`, written straight into a buffer with room for as much again. */
  constructor(lines: Lines) {
    const size = sizeOf(lines)
    this.buffer = Buffer.allocUnsafe(Math.max(size * 2, 4096))
    this.length = writeLines(this.buffer, 0, lines)
  }
  /** Writes `lines` (`added` bytes, see `sizeOf`) after the current bytes without committing them; returns the whole candidate. */
  stage(lines: Lines, added: number): Buffer {
    const needed = this.length + added
    if (needed > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(needed, this.buffer.length * 2))
      this.buffer.copy(grown, 0, 0, this.length)
      this.buffer = grown
    }
    writeLines(this.buffer, this.length, lines)
    return this.buffer.subarray(0, needed)
  }
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length)
  }
}

/**
 * How this writer commits, and what it knows the file holds besides the generation it holds open.
 * Version 1 writes every generation whole: `Read` until its first commit after a load (the lines
 * read, shared with the load rather than copied, and whether the file is exactly those lines each
 * with a newline), then `Whole` (the canonical generation, and whether the file holds exactly
 * it). Version 2 is `InPlace` while the file is exactly its lines each with a newline: batches go
 * after the committed end (`append.ts`), unless a batch brings the canonical lines, which are then
 * written whole; `Rewrite` after loading one with other bytes (CRLF endings, a skipped tail, no
 * final newline), whose first commit writes the canonical generation whole. `Closed` once the
 * writer's scope has closed: its descriptors are gone.
 */
export type Mode =
  | { readonly _tag: "Read"; readonly lines: Lines; readonly plain: boolean }
  | { readonly _tag: "Whole"; readonly generation: GenerationBuffer; readonly current: boolean }
  | {
    readonly _tag: "InPlace"
    /** The file open for writing, once an append has opened it. */
    readonly handle: Handle | undefined
    /** An intent whose removal failed after its batch was durable, removed before the next commit. */
    readonly staleIntent: string | undefined
  }
  | { readonly _tag: "Rewrite"; readonly lines: Lines }
  | { readonly _tag: "Closed" }

export const IN_PLACE: Mode = { _tag: "InPlace", handle: undefined, staleIntent: undefined }

/** What a writer holds: the file as its commits left it (`Held`), and how it commits next. */
export interface State extends Held {
  readonly mode: Mode
}

/** A writer's own: what it commits through, its lock, and the closer of the generations it replaces. */
interface Own {
  readonly fs: FsService
  readonly paths: Paths.SessionPaths
  readonly dir: Directory
  readonly kernelCopyFrom: number
  readonly state: Ref.Ref<State>
  readonly closeReplaced: (handle: Handle) => Effect.Effect<void>
}

/**
 * The writer of one session file over `state`, held until the scope closes; it takes `lock` for
 * every commit and closes what it holds when the scope closes, after any commit in flight.
 */
export const make = (
  fs: FsService,
  kernelCopyFrom: number,
  paths: Paths.SessionPaths,
  dir: Directory,
  lock: Effect.Semaphore,
  start: State
): Effect.Effect<Writer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state = yield* Ref.make(start)
    const closer = yield* replacedCloser(fs)
    const own: Own = { fs, paths, dir, kernelCopyFrom, state, closeReplaced: closer.close }
    yield* Effect.addFinalizer(() => lock.withPermits(1)(release(own, closer.done)))
    return {
      // Waiting for the lock is interruptible, holding it is not: once a commit has linked its marker,
      // its outcome must reach this state, which the next commit starts from.
      append: (batch) => lock.withPermits(1)(Effect.uninterruptible(Effect.flatMap(Ref.get(state), (now) => commit(own, now, batch))))
    }
  })

/** One batch, as the writer's mode says; refused once the writer is closed or locked. */
const commit = (own: Own, now: State, batch: Batch): Effect.Effect<void, AppendError> => {
  const mode = now.mode
  if (mode._tag === "Closed") return Effect.fail(sessionError("SESSION_IO", "the store's scope is closed", { path: own.paths.path }))
  if (now.locked !== undefined) return Effect.fail(now.locked)
  switch (mode._tag) {
    case "Read":
    case "Whole":
      return commitV1(own, now, mode, batch)
    case "InPlace":
    case "Rewrite": {
      // Only a version-2 batch holds blobs: durable before the commit of the lines that refer to them.
      const lines = commitV2(own, now, mode, batch)
      return batch.blobs === undefined || batch.blobs.length === 0 ? lines : Effect.zipRight(Blobs.putBytes(own.fs, own.paths, batch.blobs), lines)
    }
  }
}

/** Releases what the writer holds, after the commit in flight: the generation, the append descriptor, own names left. */
const release = (own: Own, closerDone: Effect.Effect<void>): Effect.Effect<void> =>
  Effect.flatMap(Ref.getAndUpdate(own.state, (s) => ({ ...s, mode: { _tag: "Closed" as const } })), (before) =>
    closerDone.pipe(
      Effect.zipRight(closeQuietly(own.fs, before.base.handle)),
      Effect.zipRight(before.mode._tag === "InPlace" && before.mode.handle !== undefined ? closeQuietly(own.fs, before.mode.handle) : Effect.void),
      Effect.zipRight(dropStrays(own.fs, own.state))
    ))

/**
 * Closes replaced generations in the background, one at a time, in one fiber of the writer's
 * scope: the last close of one frees its blocks, which no caller needs to wait for. The queue
 * holds one more, waiting, so at most two replaced generations are open when an append resolves;
 * a commit that replaces a third waits for the running close. Each close starts only after the
 * closer has yielded once, so the append that queued it has resolved by then. `done` waits for
 * every close queued.
 */
const replacedCloser = (fs: FsService): Effect.Effect<{ readonly close: (handle: Handle) => Effect.Effect<void>; readonly done: Effect.Effect<void> }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const replaced = yield* Mailbox.make<Handle>({ capacity: 1 })
    // `take` fails once the queue has ended and is empty: the closer ends there.
    const closer: Effect.Effect<void, Cause.NoSuchElementException> = Effect.flatMap(replaced.take, (handle) =>
      Effect.zipRight(Effect.zipRight(Effect.yieldNow(), Effect.ignore(fs.closeDetached(handle))), closer))
    const fiber = yield* Effect.forkScoped(Effect.uninterruptible(Effect.ignore(closer)))
    return {
      close: (handle) => Effect.asVoid(replaced.offer(handle)),
      done: Effect.zipRight(replaced.end, Fiber.await(fiber))
    }
  })

/**
 * Commits `bytes` (the current generation plus `added` new bytes), which the state then holds,
 * names left by earlier commits removed first; `current` says whether the file holds exactly the
 * bytes before the added ones. The generation replaced is closed in the background.
 */
const commitBytes = (own: Own, now: State, bytes: Buffer, added: number, current: boolean): Effect.Effect<void, AppendError> => {
  const copyPrefix = current && bytes.length >= own.kernelCopyFrom ? bytes.length - added : 0
  const commit = Effect.zipRight(
    Generation.commit(own.fs, { paths: own.paths, dir: own.dir, base: now.base, bytes, copyPrefix }, own.state),
    own.closeReplaced(now.base.handle)
  )
  return now.strays.length === 0 ? commit : Effect.zipRight(dropStrays(own.fs, own.state), commit)
}

const setMode = (own: Own, mode: Mode): Effect.Effect<void> => Ref.update(own.state, (s) => ({ ...s, mode }))

/** A version-1 commit: the whole generation, which the first commit after a load builds. */
const commitV1 = (own: Own, now: State, mode: Extract<Mode, { readonly _tag: "Read" | "Whole" }>, batch: Batch): Effect.Effect<void, AppendError> => {
  const whole = mode._tag === "Whole" ? mode : {
    _tag: "Whole" as const,
    generation: new GenerationBuffer(batch.canonical ?? mode.lines),
    current: batch.canonical === undefined && mode.plain
  }
  const { current, generation } = whole
  const committed = current ? Effect.void : setMode(own, { _tag: "Whole", generation, current: true })
  // The buffer built from a load is the writer's from now on, whatever the commit's outcome.
  const built = whole === mode ? Effect.void : setMode(own, whole)
  if (batch.lines.length === 0) return current ? built : Effect.zipRight(built, Effect.zipRight(commitBytes(own, now, generation.bytes(), 0, current), committed))
  const added = sizeOf(batch)
  return Effect.zipRight(
    built,
    Effect.zipRight(commitBytes(own, now, generation.stage(batch, added), added, current), Effect.suspend(() => {
      generation.length += added
      return committed
    }))
  )
}

/**
 * A version-2 commit: in place when the file holds exactly the canonical lines, else (a skipped
 * tail, CRLF endings, lines written otherwise) the whole canonical generation once, like version 1.
 */
const commitV2 = (own: Own, now: State, mode: Extract<Mode, { readonly _tag: "InPlace" | "Rewrite" }>, batch: Batch): Effect.Effect<void, AppendError> => {
  if (mode._tag === "Rewrite") return rewrite(own, now, batch.canonical ?? mode.lines, batch)
  if (batch.canonical !== undefined) return rewrite(own, now, batch.canonical, batch)
  return batch.lines.length === 0 ? Effect.void : appendBatch(own, now, mode, batch)
}

/** A version-2 batch after the committed end of a canonical file (`append.ts`), names left by earlier commits removed first. */
const appendBatch = (own: Own, now: State, mode: Extract<Mode, { readonly _tag: "InPlace" }>, batch: Batch): Effect.Effect<void, AppendError> => {
  const { fs, paths, state } = own
  const bytes = Buffer.allocUnsafe(sizeOf(batch))
  writeLines(bytes, 0, batch)
  const append = Effect.flatMap(
    Append.append(fs, { paths, dir: own.dir, base: now.base, bytes, handle: mode.handle }, state),
    (appended) =>
      Ref.update(state, (s) => ({
        ...s,
        base: appended.generation,
        mode: { _tag: "InPlace" as const, handle: appended.handle, staleIntent: appended.staleIntent }
      }))
  )
  if (now.strays.length === 0 && mode.staleIntent === undefined) return append
  return Effect.gen(function*() {
    yield* dropStrays(fs, state)
    if (mode.staleIntent !== undefined && (yield* Append.removeIntent(fs, paths, mode.staleIntent))) {
      yield* setMode(own, { ...mode, staleIntent: undefined })
    }
    return yield* append
  })
}

/** The whole canonical generation of version 2: `canonical` and then the batch. */
const rewrite = (own: Own, now: State, canonical: Lines, batch: Batch): Effect.Effect<void, AppendError> => {
  // The generation is built for this commit only: in-place appends never need it again.
  const generation = new GenerationBuffer(canonical)
  const added = sizeOf(batch)
  // An append intent removed without a directory sync since (by any writer) could come back in a
  // crash beside the new generation, which it does not describe: the sync makes its removal durable first.
  return step("fsync directory", own.fs.fsync(own.dir.handle)).pipe(
    Effect.zipRight(commitBytes(own, now, generation.stage(batch, added), added, false)),
    Effect.zipRight(Effect.flatMap(Ref.get(own.state), ({ mode }) => {
      if (mode._tag === "Rewrite") return setMode(own, IN_PLACE)
      // The descriptor opened for appending held the generation just replaced.
      if (mode._tag !== "InPlace" || mode.handle === undefined) return Effect.void
      return Effect.zipRight(setMode(own, { ...mode, handle: undefined }), closeQuietly(own.fs, mode.handle))
    }))
  )
}

import { type RecordLines, versionOf } from "@session-tree/core/Codec"
import { type CorruptError, type LockedError, sessionError } from "@session-tree/core/SessionError"
import type { AppendError, Batch, Lines, ReadError, SessionJournalService, Stored, Writer } from "@session-tree/core/SessionJournal"
import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Mailbox from "effect/Mailbox"
import type * as Scope from "effect/Scope"
import type { FileId, FsService, Handle } from "../Fs.js"
import { toLines } from "../Jsonl.js"
import * as Append from "./append.js"
import * as Blobs from "./blobs.js"
import * as Generation from "./generation.js"
import { closeQuietly, step } from "./io.js"
import { processLocks } from "./locks.js"
import { versionOfHead } from "./lines.js"
import * as Paths from "./paths.js"

/** Commits at or above this size copy the current generation in the kernel (reflink/copy_file_range). */
export const KERNEL_COPY_MIN_BYTES = 256 * 1024

const NEWLINE = 0x0a

/** The bytes `lines` take in a file: each line and its newline. */
const sizeOf = (lines: Lines): number => {
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
class GenerationBuffer {
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
 * final newline), whose first commit writes the canonical generation whole.
 */
type Mode =
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

const IN_PLACE: Mode = { _tag: "InPlace", handle: undefined, staleIntent: undefined }

interface State {
  /** The generation this writer holds open: the one it last read or committed. */
  base: Generation.OpenGeneration
  mode: Mode
  /** Set when a commit could not prove its rollback: the marker is kept, nothing more is committed. */
  locked: LockedError | undefined
  /** Set once the scope has closed: the descriptors are gone. */
  closed: boolean
  /** Own names a commit could not remove, retried before the next commit. */
  leftover: Array<string>
}

/** Whether `bytes` are exactly `read`'s lines each followed by a newline: no CRLF, no skipped tail, a final newline. */
const isPlain = (bytes: Uint8Array, read: RecordLines): boolean =>
  // Ending in a newline, every line has a terminator; one byte each is then the size of lines and newlines.
  read.tail === "none" && bytes.length === sizeOf(read) && (bytes.length === 0 || bytes[bytes.length - 1] === NEWLINE)

interface Directory {
  readonly handle: Handle
  readonly id: FileId
}

/** The writer of one session file, held until the scope closes; takes the file's in-process lock for every commit. */
const makeWriter = (
  fs: FsService,
  kernelCopyFrom: number,
  paths: Paths.SessionPaths,
  dir: Directory,
  lock: Effect.Semaphore,
  state: State
): Effect.Effect<Writer, never, Scope.Scope> =>
  Effect.gen(function*() {

    const removeLeftovers = Effect.suspend(() =>
      state.leftover.length === 0 ? Effect.void : Effect.forEach(state.leftover.splice(0), (name) =>
        Effect.flatMap(Effect.either(fs.unlink(name)), (gone) =>
          Effect.sync(() => {
            if (gone._tag === "Left" && gone.left.errno !== "ENOENT") state.leftover.push(name)
          })), { discard: true })
    )

    /**
     * Closes replaced generations in the background, one at a time, in one fiber of this writer's
     * scope: the last close of one frees its blocks, which no caller needs to wait for. The queue
     * holds one more, waiting, so at most two replaced generations are open when an append resolves;
     * a commit that replaces a third waits for the running close. Each close starts only after the
     * closer has yielded once, so the append that queued it has resolved by then. The scope's close
     * waits for every close queued.
     */
    const replaced = yield* Mailbox.make<Handle>({ capacity: 1 })
    // `take` fails once the queue has ended and is empty: the closer ends there.
    const closer: Effect.Effect<void, Cause.NoSuchElementException> = Effect.flatMap(replaced.take, (handle) =>
      Effect.zipRight(Effect.zipRight(Effect.yieldNow(), Effect.ignore(fs.closeDetached(handle))), closer))
    const closerFiber = yield* Effect.forkScoped(Effect.uninterruptible(Effect.ignore(closer)))
    const closeReplaced = (handle: Handle): Effect.Effect<void> => Effect.asVoid(replaced.offer(handle))
    const awaitReplacedClosed: Effect.Effect<void> = Effect.zipRight(replaced.end, Fiber.await(closerFiber))

    // Waits for a commit in flight, then releases the generation this writer holds. The directory
    // handle is released after this (it was acquired first), so no later call may use either.
    yield* Effect.addFinalizer(() =>
      lock.withPermits(1)(Effect.suspend(() => {
        state.closed = true
        return awaitReplacedClosed.pipe(
          Effect.zipRight(closeQuietly(fs, state.base.handle)),
          Effect.zipRight(closeAppendHandle),
          Effect.zipRight(removeLeftovers)
        )
      }))
    )

    const closeAppendHandle = Effect.suspend(() => {
      const mode = state.mode
      if (mode._tag !== "InPlace" || mode.handle === undefined) return Effect.void
      state.mode = { ...mode, handle: undefined }
      return closeQuietly(fs, mode.handle)
    })

    /**
     * Commits `bytes` (the current generation plus `added` new bytes) and makes it the base on
     * success; `current` says whether the file holds exactly the bytes before the added ones.
     */
    const commitBytes = (bytes: Buffer, added: number, current: boolean): Effect.Effect<void, AppendError> =>
      Effect.gen(function*() {
        yield* removeLeftovers
        const copyPrefix = current && bytes.length >= kernelCopyFrom ? bytes.length - added : 0
        const old = state.base
        state.base = yield* Generation.commit(
          fs,
          { paths, dirHandle: dir.handle, dirId: dir.id, base: old, bytes, copyPrefix },
          (name) => state.leftover.push(name)
        ).pipe(Effect.catchTag("Locked", ({ error }) => {
          state.locked = error
          return Effect.fail(error)
        }))
        yield* closeReplaced(old.handle)
      })

    /** A version-1 commit: the whole generation, which the first commit after a load builds. */
    const commitV1 = (mode: Extract<Mode, { readonly _tag: "Read" | "Whole" }>, batch: Batch): Effect.Effect<void, AppendError> => {
      const whole = mode._tag === "Whole" ? mode : (state.mode = {
        _tag: "Whole",
        generation: new GenerationBuffer(batch.canonical ?? mode.lines),
        current: batch.canonical === undefined && mode.plain
      })
      const { current, generation } = whole
      const committed = () => {
        if (!current) state.mode = { _tag: "Whole", generation, current: true }
      }
      if (batch.lines.length === 0) return current ? Effect.void : Effect.tap(commitBytes(generation.bytes(), 0, current), committed)
      const added = sizeOf(batch)
      return Effect.tap(commitBytes(generation.stage(batch, added), added, current), () => {
        generation.length += added
        committed()
      })
    }

    /** A version-2 batch after the committed end of a canonical file (`append.ts`). */
    const appendBatch = (mode: Extract<Mode, { readonly _tag: "InPlace" }>, batch: Batch): Effect.Effect<void, AppendError> =>
      Effect.gen(function*() {
        yield* removeLeftovers
        if (mode.staleIntent !== undefined && (yield* Append.removeIntent(fs, paths, mode.staleIntent))) {
          state.mode = { ...mode, staleIntent: undefined }
        }
        const bytes = Buffer.allocUnsafe(sizeOf(batch))
        writeLines(bytes, 0, batch)
        const appended = yield* Append.append(fs, {
          paths,
          dirHandle: dir.handle,
          dirId: dir.id,
          base: state.base,
          bytes,
          handle: mode.handle,
          rolledBack: (generation) => {
            state.base = generation
          }
        }, Generation.busy(fs, paths)).pipe(Effect.catchTag("Locked", ({ error }) => {
          state.locked = error
          return Effect.fail(error)
        }))
        state.base = appended.generation
        state.mode = { _tag: "InPlace", handle: appended.handle, staleIntent: appended.staleIntent }
      })

    /**
     * A version-2 commit: in place when the file holds exactly the canonical lines, else (a skipped
     * tail, CRLF endings, lines written otherwise) the whole canonical generation once, like version 1.
     */
    const commitV2 = (mode: Extract<Mode, { readonly _tag: "InPlace" | "Rewrite" }>, batch: Batch): Effect.Effect<void, AppendError> => {
      if (mode._tag === "Rewrite") return rewrite(batch.canonical ?? mode.lines, batch)
      if (batch.canonical !== undefined) return rewrite(batch.canonical, batch)
      return batch.lines.length === 0 ? Effect.void : appendBatch(mode, batch)
    }

    /** The whole canonical generation of version 2: `canonical` and then the batch. */
    const rewrite = (canonical: Lines, batch: Batch): Effect.Effect<void, AppendError> => {
      // The generation is built for this commit only: in-place appends never need it again.
      const generation = new GenerationBuffer(canonical)
      const added = sizeOf(batch)
      // An append intent removed without a directory sync since (by any writer) could come back in a
      // crash beside the new generation, which it does not describe: the sync makes its removal durable first.
      return step("fsync directory", fs.fsync(dir.handle)).pipe(
        Effect.zipRight(commitBytes(generation.stage(batch, added), added, false)),
        Effect.zipRight(Effect.suspend(() => {
          if (state.mode._tag === "Rewrite") state.mode = IN_PLACE
          return closeAppendHandle
        }))
      )
    }

    return {
      // Waiting for the lock is interruptible, holding it is not: once a commit has linked its marker,
      // its outcome must reach this state, which the next commit starts from.
      append: (batch) =>
        lock.withPermits(1)(Effect.uninterruptible(Effect.suspend(() => {
          if (state.closed) return Effect.fail(sessionError("SESSION_IO", "the store's scope is closed", { path: paths.path }))
          if (state.locked !== undefined) return Effect.fail(state.locked)
          const mode = state.mode
          // Only a version-2 batch holds blobs: durable before the commit of the lines that refer to them.
          return mode._tag === "InPlace" || mode._tag === "Rewrite"
            ? Effect.zipRight(Blobs.putBytes(fs, paths, batch.blobs), commitV2(mode, batch))
            : commitV1(mode, batch)
        })))
    }
  })

/** The record lines of a generation's bytes. */
const linesOf = (bytes: Uint8Array): Effect.Effect<RecordLines, CorruptError> => toLines(bytes)

const storedOf = (paths: Paths.SessionPaths, bytes: Uint8Array): Effect.Effect<Stored, CorruptError> =>
  Effect.map(linesOf(bytes), (lines) => ({ ...lines, location: paths.path, size: bytes.length }))

/** Reads the session file at `paths` (already resolved) whole, holding nothing afterwards. */
export const readAt = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Stored, ReadError> =>
  Effect.flatMap(Generation.read(fs, paths), (bytes) =>
    Effect.flatMap(storedOf(paths, bytes), (stored) =>
      // Only version 2 refers to blobs: a version-1 session has none to check.
      versionOfHead(bytes) === 2 ? Blobs.attachReferenced(fs, paths, stored, bytes) : Effect.succeed(stored)))

export interface Options {
  readonly kernelCopyFrom?: number | undefined
}

/** The journal of session files, every step through `fs`. */
export const make = (fs: FsService, options?: Options): SessionJournalService => {
  const kernelCopyFrom = options?.kernelCopyFrom ?? KERNEL_COPY_MIN_BYTES
  return {
    locations: "chosen",
    blob: (location, hash) => Effect.flatMap(Paths.resolve(fs, location), (paths) => Blobs.read(fs, paths, hash)),
    read: (location) => Effect.flatMap(Paths.resolve(fs, location), (paths) => readAt(fs, paths)),
    hold: (location) =>
      // Uninterruptible from the first descriptor to the finalizer that owns it.
      Effect.uninterruptible(Effect.gen(function*() {
        const paths = yield* Paths.resolve(fs, location)
        const opened = yield* Generation.open(fs, paths)
        const writer = yield* Effect.gen(function*() {
          const version = versionOfHead(opened.bytes)
          // Only version 2 refers to blobs: a version-1 session has none to know of.
          const stored = yield* Effect.flatMap(storedOf(paths, opened.bytes), (read) =>
            version === 2 ? Blobs.attach(fs, paths, read) : Effect.succeed(read))
          const lock = yield* processLocks.lockFor(paths.lockKey(opened.dir.dev, opened.dir.ino))
          const handle = yield* Effect.acquireRelease(Generation.openDirectory(fs, paths, opened.dir), (h) => closeQuietly(fs, h))
          const read: Lines = { lines: stored.lines, sizes: stored.sizes }
          const plain = isPlain(opened.bytes, stored)
          const writer = yield* makeWriter(fs, kernelCopyFrom, paths, { handle, id: opened.dir }, lock, {
            base: opened.generation,
            mode: version === 2
              ? (plain ? IN_PLACE : { _tag: "Rewrite", lines: read })
              : { _tag: "Read", lines: read, plain },
            locked: undefined,
            closed: false,
            leftover: []
          })
          return { ...stored, writer }
        }).pipe(Effect.onError(() => closeQuietly(fs, opened.generation.handle)))
        return writer
      })),
    create: (location, session) =>
      Effect.uninterruptible(Effect.gen(function*() {
        const paths = yield* Paths.resolve(fs, location)
        // The first generation is the buffer's bytes: later commits grow it without a copy of them.
        const generation = new GenerationBuffer(session)
        const bytes = generation.bytes()
        const dirStat = yield* Generation.statDirectory(fs, paths)
        const handle = yield* Effect.acquireRelease(Generation.openDirectory(fs, paths, dirStat), (h) => closeQuietly(fs, h))
        const lock = yield* processLocks.lockFor(paths.lockKey(dirStat.dev, dirStat.ino))
        // A taken path is refused before the blobs go beside it, so that nothing there changes.
        if (session.blobs !== undefined && session.blobs.length > 0) yield* Generation.refuseExisting(fs, paths)
        yield* Blobs.put(fs, paths, session.blobs)
        const created = yield* lock.withPermits(1)(Generation.create(fs, paths, bytes, handle, dirStat))
        const writer = yield* makeWriter(fs, kernelCopyFrom, paths, { handle, id: dirStat }, lock, {
          base: created.generation,
          mode: versionOf(session.lines[0]) === 2 ? IN_PLACE : { _tag: "Whole", generation, current: true },
          locked: undefined,
          closed: false,
          leftover: created.leftover.slice()
        })
        return { location: paths.path, writer }
      }))
  }
}

import { type RecordLines, versionOf } from "@session-tree/core/Codec"
import { type CorruptError, SessionError, sessionError } from "@session-tree/core/SessionError"
import type { Batch, Lines, ReadError, SessionJournalService, Stored, Writer } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import * as Scheduler from "effect/Scheduler"
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

interface State {
  /** The generation this writer holds open: the one it last read or committed. */
  base: Generation.OpenGeneration
  /** The canonical generation; built on the first commit of a loaded file. */
  generation: GenerationBuffer | undefined
  /** Bytes read at load, kept until the first commit decides whether they are canonical. */
  loadedBytes: Uint8Array | undefined
  /** Whether the file holds exactly `generation`. */
  diskCanonical: boolean
  /**
   * Version 2: batches are appended in place (`append.ts`) once the file is known to hold the
   * canonical lines; version 1 writes every generation whole.
   */
  readonly appendInPlace: boolean
  /** Version 2, after a load and until the first commit: the lines read, to tell whether the file is canonical. */
  loadedLines: RecordLines | undefined
  /** Version 2: the file open for writing, once an append has opened it. */
  appendHandle: Handle | undefined
  /** Version 2: an intent whose removal failed after its batch was durable, removed before the next commit. */
  staleIntent: string | undefined
  /** Set when a commit could not prove its rollback: the marker is kept, nothing more is committed. */
  locked: SessionError | undefined
  /** Set once the scope has closed: the descriptors are gone. */
  closed: boolean
  /** Own names a commit could not remove, retried before the next commit. */
  leftover: Array<string>
}

interface Directory {
  readonly handle: Handle
  readonly id: FileId
}

/** Starts a fiber on a later turn of the event loop. */
const nextTurn = Scheduler.timer(0)

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
     * Closes replaced generations in the background, in fibers of this writer's scope: the last
     * close of one frees its blocks, which no caller needs to wait for. A close starts on a later
     * turn of the event loop (a fiber scheduled by a timer starts it), after the append that
     * replaced the generation has resolved, so the append does not pay for it either. Appends that
     * follow each other with no turn in between start the waiting close themselves; at most one
     * close runs, and one waits to start, at any time, and the scope waits for both.
     */
    const closing = yield* FiberSet.make<void>()
    const run = yield* FiberSet.runtime(closing)<never>()
    let unclosed: Handle | undefined
    let running: Fiber.RuntimeFiber<void> | undefined
    const startClose = (): void => {
      if (unclosed === undefined || running !== undefined) return
      const handle = unclosed
      unclosed = undefined
      // Started at once; when it ends, a close that waited meanwhile starts.
      running = run(Effect.ensuring(Effect.ignore(fs.closeDetached(handle)), Effect.sync(() => {
        running = undefined
        startClose()
      })))
    }
    // `await`, not `join`: a join would also merge the closing fiber's FiberRefs into this one.
    const awaitClosing = Effect.suspend(() => (running !== undefined ? Fiber.await(running) : Effect.void))
    const closeReplaced = (handle: Handle): Effect.Effect<void> =>
      Effect.suspend(() => {
        startClose()
        if (unclosed === undefined) {
          unclosed = handle
          run(Effect.sync(startClose), { scheduler: nextTurn, immediate: false })
          return Effect.void
        }
        // One close runs and one waits: the end of the running one starts the waiting one.
        return Effect.zipRight(awaitClosing, closeReplaced(handle))
      })
    const awaitReplacedClosed: Effect.Effect<void> = Effect.suspend(() => {
      startClose()
      return running !== undefined ? Effect.zipRight(awaitClosing, awaitReplacedClosed) : Effect.void
    })

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
      const handle = state.appendHandle
      state.appendHandle = undefined
      return handle === undefined ? Effect.void : closeQuietly(fs, handle)
    })

    const canonicalOf = (batch: Batch): GenerationBuffer => {
      if (state.generation === undefined) {
        const generation = new GenerationBuffer(batch.accepted())
        state.diskCanonical = state.loadedBytes !== undefined && generation.bytes().equals(state.loadedBytes)
        state.generation = generation
        state.loadedBytes = undefined
      }
      return state.generation
    }

    /** Commits `bytes` (the current generation plus `added` new bytes) and makes it the base on success. */
    const commitBytes = (bytes: Buffer, added: number): Effect.Effect<void, SessionError> =>
      Effect.gen(function*() {
        yield* removeLeftovers
        const copyPrefix = state.diskCanonical && bytes.length >= kernelCopyFrom ? bytes.length - added : 0
        const old = state.base
        state.base = yield* Generation.commit(
          fs,
          { paths, dirHandle: dir.handle, dirId: dir.id, base: old, bytes, copyPrefix },
          (name) => state.leftover.push(name)
        ).pipe(Effect.catchTag("Locked", ({ error }) => {
          state.locked = error
          return Effect.fail(error)
        }))
        state.diskCanonical = true
        yield* closeReplaced(old.handle)
      })

    /** A version-2 batch after the committed end of a canonical file (`append.ts`). */
    const appendBatch = (batch: Batch): Effect.Effect<void, SessionError> =>
      Effect.gen(function*() {
        yield* removeLeftovers
        if (state.staleIntent !== undefined && (yield* Append.removeIntent(fs, paths, state.staleIntent))) state.staleIntent = undefined
        const bytes = Buffer.allocUnsafe(sizeOf(batch))
        writeLines(bytes, 0, batch)
        const appended = yield* Append.append(fs, {
          paths,
          dirHandle: dir.handle,
          dirId: dir.id,
          base: state.base,
          bytes,
          handle: state.appendHandle,
          rolledBack: (generation) => {
            state.base = generation
          }
        }, Generation.busy(fs, paths)).pipe(Effect.catchTag("Locked", ({ error }) => {
          state.locked = error
          return Effect.fail(error)
        }))
        state.base = appended.generation
        state.appendHandle = appended.handle
        state.staleIntent = appended.staleIntent
      })

    /**
     * A version-2 commit: in place when the file holds exactly the canonical lines, else (a skipped
     * tail, CRLF endings, lines written otherwise) the whole canonical generation once, like version 1.
     */
    const commitV2 = (batch: Batch): Effect.Effect<void, SessionError> => {
      if (state.loadedLines !== undefined) {
        state.diskCanonical = holdsExactly(state.loadedLines, batch.accepted())
        state.loadedLines = undefined
      }
      if (state.diskCanonical) return batch.lines.length === 0 ? Effect.void : appendBatch(batch)
      // The generation is built for this commit only: in-place appends never need it again.
      const generation = new GenerationBuffer(batch.accepted())
      const added = sizeOf(batch)
      // An append intent removed without a directory sync since (by any writer) could come back in a
      // crash beside the new generation, which it does not describe: the sync makes its removal durable first.
      return step("fsync directory", fs.fsync(dir.handle)).pipe(
        Effect.zipRight(commitBytes(generation.stage(batch, added), added)),
        Effect.zipRight(closeAppendHandle)
      )
    }

    return {
      // Waiting for the lock is interruptible, holding it is not: once a commit has linked its marker,
      // its outcome must reach this state, which the next commit starts from.
      append: (batch) =>
        lock.withPermits(1)(Effect.uninterruptible(Effect.suspend(() => {
          if (state.closed) return Effect.fail(sessionError("SESSION_IO", "the store's scope is closed", { path: paths.path }))
          if (state.locked !== undefined) return Effect.fail(state.locked)
          // Only a version-2 batch holds blobs: durable before the commit of the lines that refer to them.
          if (state.appendInPlace) return Effect.zipRight(Blobs.put(fs, paths, batch.blobs), commitV2(batch))
          const generation = canonicalOf(batch)
          if (batch.lines.length === 0) return state.diskCanonical ? Effect.void : commitBytes(generation.bytes(), 0)
          const added = sizeOf(batch)
          return Effect.tap(commitBytes(generation.stage(batch, added), added), () => {
            generation.length += added
          })
        })))
    }
  })

/** Whether `loaded` (a file's lines as read) is exactly the canonical generation `canonical`: no CRLF, no skipped tail, the same lines. */
const holdsExactly = (loaded: RecordLines, canonical: Lines): boolean => {
  if (loaded.tail !== "none" || loaded.lines.length !== canonical.lines.length || loaded.size !== sizeOf(canonical)) return false
  for (let i = 0; i < canonical.lines.length; i++) if (loaded.lines[i] !== canonical.lines[i]) return false
  return true
}

/** The record lines of a generation's bytes. */
const linesOf = (bytes: Uint8Array): Effect.Effect<RecordLines, CorruptError> => toLines(bytes)

const storedOf = (paths: Paths.SessionPaths, bytes: Uint8Array): Effect.Effect<Stored, CorruptError> =>
  Effect.map(linesOf(bytes), (lines) => ({ ...lines, location: paths.path, size: bytes.length }))

/** Reads the session file at `paths` (already resolved) whole, holding nothing afterwards. */
export const readAt = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Stored, ReadError> =>
  Effect.flatMap(Generation.read(fs, paths), (bytes) => Effect.flatMap(storedOf(paths, bytes), (stored) => Blobs.attach(fs, paths, stored)))

export interface Options {
  readonly kernelCopyFrom?: number | undefined
}

/** The journal of session files, every step through `fs`. */
export const make = (fs: FsService, options?: Options): SessionJournalService => {
  const kernelCopyFrom = options?.kernelCopyFrom ?? KERNEL_COPY_MIN_BYTES
  return {
    sessionIdAt: () => undefined,
    sha256: Blobs.sha256,
    blob: (location, hash) => Effect.flatMap(Paths.resolve(fs, location), (paths) => Blobs.read(fs, paths, hash)),
    read: (location) => Effect.flatMap(Paths.resolve(fs, location), (paths) => readAt(fs, paths)),
    open: (location) =>
      // Uninterruptible from the first descriptor to the finalizer that owns it.
      Effect.uninterruptible(Effect.gen(function*() {
        const paths = yield* Paths.resolve(fs, location)
        const opened = yield* Generation.open(fs, paths)
        const writer = yield* Effect.gen(function*() {
          const stored = yield* Effect.flatMap(storedOf(paths, opened.bytes), (read) => Blobs.attach(fs, paths, read))
          const appendInPlace = versionOfHead(opened.bytes) === 2
          const lock = yield* processLocks.lockFor(paths.lockKey(opened.dir.dev, opened.dir.ino))
          const handle = yield* Effect.acquireRelease(Generation.openDirectory(fs, paths, opened.dir), (h) => closeQuietly(fs, h))
          const writer = yield* makeWriter(fs, kernelCopyFrom, paths, { handle, id: opened.dir }, lock, {
            base: opened.generation,
            generation: undefined,
            loadedBytes: appendInPlace ? undefined : opened.bytes,
            appendInPlace,
            loadedLines: appendInPlace ? stored : undefined,
            appendHandle: undefined,
            staleIntent: undefined,
            diskCanonical: false,
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
        yield* Blobs.put(fs, paths, session.blobs)
        const created = yield* lock.withPermits(1)(Generation.create(fs, paths, bytes, handle, dirStat))
        const appendInPlace = versionOf(session.lines[0]) === 2
        const writer = yield* makeWriter(fs, kernelCopyFrom, paths, { handle, id: dirStat }, lock, {
          base: created.generation,
          generation: appendInPlace ? undefined : generation,
          loadedBytes: undefined,
          appendInPlace,
          loadedLines: undefined,
          appendHandle: undefined,
          staleIntent: undefined,
          diskCanonical: true,
          locked: undefined,
          closed: false,
          leftover: created.leftover.slice()
        })
        return { location: paths.path, writer }
      }))
  }
}

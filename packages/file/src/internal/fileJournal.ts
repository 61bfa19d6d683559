import { type RecordLines, versionOf } from "@session-tree/core/Codec"
import type { CorruptError } from "@session-tree/core/SessionError"
import * as Tracing from "@session-tree/core/Tracing"
import type { Created, Held as Opened, Lines, ReadAfter, ReadError, SessionJournalService, Stored } from "@session-tree/core/SessionJournal"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import type { FsService } from "../Fs.js"
import { toLines } from "../Jsonl.js"
import * as Blobs from "./blobs.js"
import * as Generation from "./generation.js"
import { held, type Strays } from "./held.js"
import { versionOfHead } from "./lines.js"
import { processLocks } from "./locks.js"
import * as ReadAfterFile from "./readAfter.js"
import * as Paths from "./paths.js"
import { GenerationBuffer, IN_PLACE, type Mode, sizeOf } from "./writer.js"
import * as Writer from "./writer.js"

/** Commits at or above this size copy the current generation in the kernel (reflink/copy_file_range). */
export const KERNEL_COPY_MIN_BYTES = 256 * 1024

const NEWLINE = 0x0a

/** Whether `bytes` are exactly `read`'s lines each followed by a newline: no CRLF, no skipped tail, a final newline. */
const isPlain = (bytes: Uint8Array, read: RecordLines): boolean =>
  // Ending in a newline, every line has a terminator; one byte each is then the size of lines and newlines.
  read.tail === "none" && bytes.length === sizeOf(read) && (bytes.length === 0 || bytes[bytes.length - 1] === NEWLINE)

const storedOf = (paths: Paths.SessionPaths, bytes: Uint8Array): Effect.Effect<Stored, CorruptError> =>
  Effect.map(toLines(bytes), (lines) => ({ ...lines, location: paths.path, size: bytes.length }))

/** Reads the session file at `paths` (already resolved) whole, holding nothing afterwards. */
export const readAt = (fs: FsService, paths: Paths.SessionPaths): Effect.Effect<Stored, ReadError> =>
  Effect.flatMap(Effect.scoped(Generation.open(fs, paths, "end")), ({ bytes, generation }) =>
    Effect.flatMap(storedOf(paths, bytes), (read) => {
      // Where the read ended, for `readAfter` (version 2 only: a version-1 commit replaces the file).
      const mark = ReadAfterFile.markOf(generation.id, bytes)
      const stored = mark === undefined ? read : { ...read, mark }
      // Only version 2 refers to blobs: a version-1 session has none to check.
      return versionOfHead(bytes) === 2 ? Blobs.attachReferenced(fs, paths, stored, bytes) : Effect.succeed(stored)
    }))

/**
 * Reads the session file at `paths` again after `before`: from where `before` ended when the file
 * is provably the one read then, grown only (`readAfter.ts`); whole otherwise.
 */
export const readAfterAt = (fs: FsService, paths: Paths.SessionPaths, before: Stored): Effect.Effect<ReadAfter, ReadError> =>
  Effect.flatMap(ReadAfterFile.readAfter(fs, paths, before, Generation.readRetries), (after): Effect.Effect<ReadAfter, ReadError> =>
    after === undefined
      ? Effect.map(readAt(fs, paths), (stored) => ({ _tag: "Whole", stored }))
      : Effect.map(
        // The blobs the new lines can refer to: those of the lines before were checked by the read before.
        Blobs.attachReferenced(fs, paths, after.stored, after.bytes),
        (stored) => ({ _tag: "After", stored })
      ))

export interface Options {
  readonly kernelCopyFrom?: number | undefined
}

/**
 * Reads the session at `location` and holds it for appending until the scope closes. Interruptible:
 * each resource it takes (the descriptor read through, the lock's registration, the directory) is
 * acquired uninterruptibly and released by the scope, so an interrupted load leaves nothing open.
 */
const hold = (fs: FsService, kernelCopyFrom: number, location: string) =>
  Effect.gen(function*() {
    const paths = yield* Paths.resolve(fs, location)
    // The descriptor read through is the writer's once the writer is made: until then it is a
    // resource of a scope of its own, which the hand-over closes.
    const handing = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
    const opened = yield* Scope.extend(Generation.open(fs, paths, "failure"), handing)
    const version = versionOfHead(opened.bytes)
    // Only version 2 refers to blobs: a version-1 session has none to know of.
    const stored = yield* Effect.flatMap(storedOf(paths, opened.bytes), (read) => version === 2 ? Blobs.attach(fs, paths, read) : Effect.succeed(read))
    const lock = yield* processLocks().lockFor(paths.lockKey(opened.dir.dev, opened.dir.ino))
    const dir = yield* Generation.directory(fs, paths, opened.dir)
    const read: Lines = { lines: stored.lines, sizes: stored.sizes }
    const plain = isPlain(opened.bytes, stored)
    const mode: Mode = version === 2 ? (plain ? IN_PLACE : { _tag: "Rewrite", lines: read }) : { _tag: "Read", lines: read, plain }
    const writer = yield* Effect.uninterruptible(
      Effect.zipLeft(Writer.make(fs, kernelCopyFrom, paths, dir, lock, { ...held(opened.generation), mode }), Scope.close(handing, Exit.void))
    )
    return { ...stored, writer } satisfies Opened
  })

/** Creates the session at `location` holding `session`, and holds it for appending until the scope closes. */
const create = (fs: FsService, kernelCopyFrom: number, location: string, session: Parameters<SessionJournalService["create"]>[1]) =>
  Effect.uninterruptible(Effect.gen(function*() {
    const paths = yield* Paths.resolve(fs, location)
    // The first generation is the buffer's bytes: later commits grow it without a copy of them.
    const generation = new GenerationBuffer(session)
    const dirStat = yield* Generation.statDirectory(fs, paths)
    const dir = yield* Generation.directory(fs, paths, dirStat)
    const lock = yield* processLocks().lockFor(paths.lockKey(dirStat.dev, dirStat.ino))
    // A taken path is refused before the blobs go beside it, so that nothing there changes.
    if (session.blobs !== undefined && session.blobs.length > 0) yield* Generation.refuseExisting(fs, paths)
    yield* Blobs.put(fs, paths, session.blobs)
    const strays = yield* Ref.make<Strays>({ strays: [], locked: undefined })
    const base = yield* lock.withPermits(1)(Generation.create(fs, paths, generation.bytes(), dir, strays))
    const mode: Mode = versionOf(session.lines[0]) === 2 ? IN_PLACE : { _tag: "Whole", generation, current: true }
    const writer = yield* Writer.make(fs, kernelCopyFrom, paths, dir, lock, { ...held(base, (yield* Ref.get(strays)).strays), mode })
    return { location: paths.path, writer } satisfies Created
  }))

/** The journal of session files, every step through `fs`. */
export const make = (fs: FsService, options?: Options): SessionJournalService => {
  const kernelCopyFrom = options?.kernelCopyFrom ?? KERNEL_COPY_MIN_BYTES
  return {
    locations: "chosen",
    blob: (location, hash) =>
      Effect.flatMap(Paths.resolve(fs, location), (paths) => Blobs.read(fs, paths, hash)).pipe(Tracing.span("FileJournal.blob", { session: location })),
    read: (location) =>
      Effect.flatMap(Paths.resolve(fs, location), (paths) => readAt(fs, paths)).pipe(Tracing.span("FileJournal.read", { session: location })),
    readAfter: (location, before) =>
      Effect.flatMap(Paths.resolve(fs, location), (paths) => readAfterAt(fs, paths, before)).pipe(
        Tracing.span("FileJournal.readAfter", { session: location })
      ),
    hold: (location) => hold(fs, kernelCopyFrom, location).pipe(Tracing.span("FileJournal.hold", { session: location })),
    create: (location, session) =>
      create(fs, kernelCopyFrom, location, session).pipe(Tracing.span("FileJournal.create", { session: location, batch: session.ids.length }))
  }
}

/**
 * Reading a version-2 session file again from where a read of it ended (`SessionJournal.readAfter`).
 *
 * A version-2 commit writes its batch after the committed end of the same file and never writes
 * before it: the bytes of a read that ended at a committed end stay the file's first bytes for as
 * long as the file is that one (`docs/files.md`, "The append intent"). What replaces
 * the session (a version-1 commit, a rewrite to the canonical form, a delete and a create, an
 * editor's save, a rename over it) is another file: another (dev, ino). So the bytes from the old
 * end on are read alone when the path is still the file read before (its identity, through the
 * descriptor read), no shorter than the end read then, its first and its last bytes before that
 * end (up to `CHECK_BYTES` each) what they were, and the read settled as a whole read settles it
 * (the marker looked at before and after; an append intent's rule). Anything else, and anything
 * not certain (a marker that is a file, an intent from before the old end, bytes after the end that
 * are not whole lines), and the session is read whole. A program that rewrites bytes in the middle
 * of the same file, keeping its size at least and its first and last 4 KiB before the old end, is
 * not seen by this read: the store never does that, and the server reads every session whole when
 * it opens it.
 */
import { capsOf } from "@session-tree/core/Codec"
import type { Stored } from "@session-tree/core/SessionJournal"
import { sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Schedule from "effect/Schedule"
import { Buffer } from "node:buffer"
import { type FsService, sameFile } from "../Fs.js"
import { type ReadFailure, opened, readExactly, step } from "./io.js"
import { SESSION_CAPS, splitLinesAfter, versionOfHead } from "./lines.js"
import * as Marker from "./marker.js"
import type * as Paths from "./paths.js"

/** How many bytes at the start and before the end of a read are kept, to be compared by the next. */
export const CHECK_BYTES = 4096

/** Where a read of a version-2 file ended, and what it read there. */
export interface FileMark {
  readonly _tag: "FileMark"
  readonly dev: bigint
  readonly ino: bigint
  /** The settled end of the read: the bytes before it are the lines read. */
  readonly end: number
  /** The first bytes of the file, `CHECK_BYTES` at most. */
  readonly first: Uint8Array
  /** The bytes before `end`, `CHECK_BYTES` at most; the last is a newline. */
  readonly last: Uint8Array
}

const NEWLINE = 0x0a

/**
 * The mark of a whole read of `bytes` from the file (dev, ino): only for a version-2 file whose
 * bytes end with a newline (no tail skipped), else undefined.
 */
export const markOf = (id: { readonly dev: bigint; readonly ino: bigint }, bytes: Uint8Array): FileMark | undefined =>
  bytes.length === 0 || bytes[bytes.length - 1] !== NEWLINE || versionOfHead(bytes) !== 2
    ? undefined
    : {
      _tag: "FileMark",
      dev: id.dev,
      ino: id.ino,
      end: bytes.length,
      first: Uint8Array.prototype.slice.call(bytes, 0, Math.min(CHECK_BYTES, bytes.length)),
      last: Uint8Array.prototype.slice.call(bytes, Math.max(0, bytes.length - CHECK_BYTES))
    }

const isMark = (mark: unknown): mark is FileMark =>
  typeof mark === "object" && mark !== null && (mark as FileMark)._tag === "FileMark"

/** A read that an append overlapped, to be tried again. */
class Overlapped {
  readonly _tag = "Overlapped"
}

/** Whether `bytes` from `at` are `expected`. */
const equalAt = (bytes: Uint8Array, at: number, expected: Uint8Array): boolean =>
  Buffer.from(bytes.buffer, bytes.byteOffset + at, expected.length).equals(expected)

/** How a read after the mark ended: the lines after it (their bytes), or undefined (read whole). */
export interface After {
  readonly stored: Stored
  /** The bytes of the new lines, for the blobs they refer to. */
  readonly bytes: Uint8Array
}

/**
 * The lines appended to the file at `paths` after the read `before`, or undefined when that read
 * cannot be proven to be the file's beginning (the caller then reads whole). Retried as a whole
 * read is when an append overlapped it; SESSION_BUSY when appends never pause.
 */
export const readAfter = (
  fs: FsService,
  paths: Paths.SessionPaths,
  before: Stored,
  retries: Schedule.Schedule<unknown>
): Effect.Effect<After | undefined, ReadFailure> => {
  const mark = before.mark
  if (!isMark(mark) || before.tail !== "none" || before.size !== mark.end) return Effect.succeed(undefined)
  return Effect.scoped(Effect.gen(function*() {
    const markerBefore = yield* Marker.now(fs, paths)
    const checked = yield* opened(fs, paths.path, SESSION_CAPS.most, "session file", "end")
    const size = checked.stat.size
    if (!sameFile(checked.stat, mark) || size < mark.end || size > capsOf(2).sessionBytes) return undefined
    const path = paths.path
    const shrank = () => sessionError("SESSION_REPLACED", "the file shrank while it was read", { path })
    const first = yield* readExactly(fs, checked.handle, Buffer.allocUnsafe(mark.first.length), 0, shrank)
    // The bytes before the old end, then what follows it: one read.
    const from = mark.end - mark.last.length
    const bytes = yield* readExactly(fs, checked.handle, Buffer.allocUnsafe(size - from), from, shrank)
    const sizeAfter = (yield* step("fstat", fs.fstat(checked.handle))).size
    const markerAfter = yield* Marker.now(fs, paths)
    if (markerBefore === "changing" || markerAfter === "changing" || sizeAfter !== size || !Marker.same(markerBefore, markerAfter)) {
      return yield* Effect.fail(new Overlapped())
    }
    if (!equalAt(first, 0, mark.first) || !equalAt(bytes, 0, mark.last)) return undefined
    let end = size
    if (markerAfter !== undefined) {
      if (markerAfter._tag === "File") return undefined
      const intent = Marker.parseIntent(markerAfter.text)
      if (intent === undefined || intent.from < mark.end) return undefined
      const settled = Marker.settle(size, bytes.subarray(Math.min(intent.from, size) - from), intent, path)
      if (typeof settled !== "number") return undefined
      end = settled
    }
    const added = bytes.subarray(mark.last.length, end - from)
    if (added.length > 0 && added[added.length - 1] !== NEWLINE) return undefined
    const split = splitLinesAfter(added, 2)
    if (Either.isLeft(split) || split.right.tail !== null) return undefined
    const next: FileMark = {
      ...mark,
      end,
      last: Uint8Array.prototype.slice.call(bytes, Math.max(0, end - from - CHECK_BYTES), end - from)
    }
    return {
      stored: { location: path, lines: split.right.lines, sizes: split.right.sizes, tail: "none", size: end, mark: next },
      bytes: added
    } satisfies After
  })).pipe(
    Effect.retry({ schedule: retries, while: (e) => e instanceof Overlapped }),
    Effect.catchIf((e): e is Overlapped => e instanceof Overlapped, () =>
      Effect.fail(sessionError("SESSION_BUSY", "the session is being appended to without a pause long enough to read it; try again", {
        path: paths.path
      })))
  )
}

/**
 * The bytes of a session file → its record lines (`docs/format.md`, "Lines, caps and the tail"): UTF-8 decoded
 * fatally, one record per line (`\n` or `\r\n`), caps counted in bytes, and
 * the one kind of damage a crash can cause, an unfinished final record, told
 * apart from corruption. What the lines mean is the core's `Codec`.
 */
import { type DecodedSession, decodeLines, type RecordLines } from "@session-tree/core/Codec"
import { type CorruptError, sessionError } from "@session-tree/core/SessionError"
import * as Either from "effect/Either"
import { splitLines } from "./internal/lines.js"
import { classifyTail } from "./internal/tail.js"

/**
 * A file's bytes → its record lines, or why they cannot be a session's. Bytes after the last newline are a last
 * line when they hold a complete JSON object, skipped (`tail: "incomplete"`)
 * when some continuation would make them one, and corruption otherwise.
 *
 * @since 0.1.0
 * @category decoding
 */
export const toLines = (bytes: Uint8Array): Either.Either<RecordLines, CorruptError> =>
  Either.flatMap(splitLines(bytes), (split): Either.Either<RecordLines, CorruptError> => {
    const size = bytes.byteLength
    if (split.tail === null) return Either.right({ lines: split.lines, sizes: split.sizes, size, tail: "none" })
    const state = classifyTail(split.tail)
    if (state === "invalid") {
      return Either.left(sessionError("SESSION_INVALID_JSON", "the last line is not a JSON object nor a prefix of one", {
        line: split.lines.length + 1
      }))
    }
    // Whitespace alone is a viable prefix too; either way bytes were skipped and stay on disk.
    if (state === "incomplete") return Either.right({ lines: split.lines, sizes: split.sizes, size, tail: "incomplete" })
    return Either.right({ lines: [...split.lines, split.tail], sizes: [...split.sizes, split.tailSize!], size, tail: "none" })
  })

/**
 * A file's bytes → its validated records, or the first problem in line order (it fails closed).
 *
 * @since 0.1.0
 * @category decoding
 */
export const decode = (bytes: Uint8Array): Either.Either<DecodedSession, CorruptError> => Either.flatMap(toLines(bytes), decodeLines)

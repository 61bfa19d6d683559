/**
 * The last step of an import's conversion: the converted session read by the
 * loader itself, so an import never produces a session that a load would
 * refuse (tool links, a compaction's kept entry, a label's target, the caps),
 * and a problem is reported at the line of the source file it comes from.
 */
import { decodeLines, encodeRecord, utf8Length } from "../Codec.js"
import type * as RecordV2 from "../RecordV2.js"
import * as Either from "effect/Either"
import { type CorruptError, restated } from "../SessionError.js"

/**
 * Nothing when `header` and `entries` load; else the loader's first problem with them, restated at
 * `origins[i]` (the source line of entry `i`). `source` names the format in the message.
 */
export const checkLoads = (
  header: RecordV2.SessionHeader,
  entries: ReadonlyArray<RecordV2.SessionEntry>,
  origins: ReadonlyArray<number>,
  source: string
): Either.Either<void, CorruptError> => {
  const lines = [encodeRecord(header), ...entries.map(encodeRecord)]
  const loaded = decodeLines({ lines, sizes: lines.map(utf8Length), tail: "none" })
  if (Either.isRight(loaded)) return Either.void
  const decoded = loaded.left
  // Record line 1 is the header; record line n + 2 is entries[n].
  const at = decoded.line === undefined ? undefined : decoded.line - 2
  const entry = at === undefined ? undefined : entries[at]
  if (entry === undefined) {
    return Either.left(restated(decoded, `the converted session: ${decoded.reason}`, { line: decoded.line === 1 ? 1 : undefined }))
  }
  return Either.left(restated(decoded, `${source} line converted to entry "${entry.id}": ${decoded.reason}`, { line: origins[at!] }))
}

/**
 * The last step of an import's conversion: the converted session read by the
 * loader itself, so an import never produces a session that a load would
 * refuse (tool links, a compaction's kept entry, a label's target, the caps),
 * and a problem is reported at the line of the source file it comes from.
 */
import { decodeLines, encodeRecord, utf8Length } from "../Codec.js"
import type * as RecordV2 from "../RecordV2.js"
import { isSessionError, type SessionError, sessionError } from "../SessionError.js"

/**
 * The loader's first problem with `header` and `entries`, restated at `origins[i]` (the source
 * line of entry `i`), or undefined when it loads. `source` names the format in the message.
 */
export const checkLoads = (
  header: RecordV2.SessionHeader,
  entries: ReadonlyArray<RecordV2.SessionEntry>,
  origins: ReadonlyArray<number>,
  source: string
): SessionError | undefined => {
  const lines = [encodeRecord(header), ...entries.map(encodeRecord)]
  const decoded = decodeLines({ lines, sizes: lines.map(utf8Length), tail: "none" })
  if (!isSessionError(decoded)) return undefined
  // Record line 1 is the header; record line n + 2 is entries[n].
  const at = decoded.line === undefined ? undefined : decoded.line - 2
  const entry = at === undefined ? undefined : entries[at]
  if (entry === undefined) return sessionError(decoded.code, `the converted session: ${decoded.reason}`, { line: decoded.line === 1 ? 1 : undefined })
  return sessionError(decoded.code, `${source} line converted to entry "${entry.id}": ${decoded.reason}`, { line: origins[at!] })
}

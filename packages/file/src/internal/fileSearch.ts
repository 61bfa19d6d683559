import type { Candidates, CandidateLine, CandidateRequest, Pattern, SearchIndexService } from "@session-tree/core/Search"
import { type InputError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { Buffer, isUtf8 } from "node:buffer"
import * as Path from "node:path"
import type { Options } from "../FileSearch.js"
import type { FsService } from "../Fs.js"
import * as Catalog from "./fileCatalog.js"
import * as Generation from "./generation.js"
import * as Paths from "./paths.js"
import { Buffers, lineStarts, type Strategy } from "./asciiSearch.js"
import * as FileIndex from "./fileIndex.js"
import { bare, extentOf } from "./searchIndex.js"
import { classifyTail } from "./tail.js"

const LF = 0x0a

/** Bytes turned into one string at a time for the patterns: large enough that a turn costs little. */
export const WINDOW_BYTES = 16 * 1024 * 1024


/**
 * The candidate lines of one session file's bytes (as a load sees them: settled, tail and all):
 * every complete line after the header that the pattern finds. An ASCII query looks in the bytes
 * for its words in any case (`Pattern.folded`, see `asciiSearch.ts`; `strategy` chooses how, for
 * tests); any other in the bytes turned into text a window at a time, each window ending at a line's
 * end. `buffers` are the search's (see `Buffers`).
 */
export const scanBytes = (
  bytes: Uint8Array,
  pattern: Pattern,
  window = WINDOW_BYTES,
  buffers: Buffers = new Buffers(),
  strategy: Strategy = "auto"
): { readonly header: string | undefined; readonly lines: Array<CandidateLine> } => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const { end, headerEnd } = extentOf(buf)
  const lines: Array<CandidateLine> = []
  if (headerEnd < 0) {
    // No complete header line: a file holding only a torn header has nothing committed yet.
    const whole = buf.toString("utf8")
    return { header: classifyTail(whole) === "incomplete" ? undefined : bare(whole), lines }
  }
  const header = bare(buf.toString("utf8", 0, headerEnd))
  const { anchor, encoding, escape, folded, others } = pattern
  if (folded !== undefined) {
    const start = headerEnd + 1
    // A line that escapes a character is a candidate whatever its words (see `Pattern.escape`).
    for (const from of lineStarts(buf, start, end, folded, escape, buffers, strategy)) {
      let to = buf.indexOf(LF, from)
      if (to < 0 || to > end) to = end
      lines.push({ order: from, text: bare(buf.toString("utf8", from, to)) })
    }
    return { header, lines }
  }
  for (let start = headerEnd + 1; start < end;) {
    // A window of whole lines: up to the last line feed within `window` bytes (or the next one past it).
    let stop = Math.min(end, start + window)
    if (stop < end) {
      const back = buf.lastIndexOf(LF, stop - 1)
      stop = back >= start ? back + 1 : buf.indexOf(LF, stop) + 1 || end
    }
    const text = encoding === "latin1" ? buf.toString("latin1", start, stop) : buf.toString("utf8", start, stop)
    // Where each candidate line starts in `text`: those the words find, and those holding an escape.
    const found: Array<number> = []
    const endOf = (at: number) => {
      const to = text.indexOf("\n", at)
      return to < 0 ? text.length : to
    }
    anchor.lastIndex = 0
    for (let m = anchor.exec(text); m !== null; m = anchor.exec(text)) {
      const from = text.lastIndexOf("\n", m.index) + 1
      const to = endOf(m.index)
      if (others.length === 0 || others.every((r) => r.test(text.slice(from, to)))) found.push(from)
      anchor.lastIndex = to + 1
    }
    for (let at = text.indexOf(escape); at >= 0; at = text.indexOf(escape, endOf(at) + 1)) found.push(text.lastIndexOf("\n", at) + 1)
    if (found.length > 0) {
      found.sort((a, b) => a - b)
      // For UTF-8 text, where each candidate starts in bytes is counted on from the window's start.
      let charAt = 0
      let byteAt = start
      for (let k = 0; k < found.length; k++) {
        const from = found[k]!
        if (k > 0 && from === found[k - 1]) continue
        const to = endOf(from)
        if (encoding === "latin1") {
          lines.push({ order: start + from, text: bare(buf.toString("utf8", start + from, start + to)) })
        } else {
          byteAt += Buffer.byteLength(text.slice(charAt, from))
          charAt = from
          lines.push({ order: byteAt, text: bare(text.slice(from, to)) })
        }
      }
    }
    start = stop
  }
  return { header, lines }
}

/**
 * The candidates of a session file's settled bytes: its header and the lines the scan finds. Every
 * file read is handed over (and counted as searched), those with nothing to find with no lines.
 */
export const scanned = (location: string, bytes: Uint8Array, pattern: Pattern, buffers: Buffers): Candidates => {
  const { header, lines } = scanBytes(bytes, pattern, WINDOW_BYTES, buffers)
  if (header === undefined || lines.length === 0) return { location, header: header ?? "", lines: [] }
  // A file that is not UTF-8 does not load: said once, for the session, when it holds a candidate.
  if (!isUtf8(bytes)) return { location, error: sessionError("SESSION_INVALID_UTF8", "file is not valid UTF-8", { path: location }) }
  return { location, header, lines }
}

/** The candidates of the session file at `location` (as the catalog names it). */
export const scanFile = (fs: FsService, location: string, pattern: Pattern, buffers: Buffers): Effect.Effect<Option.Option<Candidates>> =>
  Paths.resolve(fs, location).pipe(
    Effect.flatMap((paths) => Generation.read(fs, paths, buffers.take)),
    Effect.map((bytes) => Option.some(scanned(location, bytes, pattern, buffers))),
    Effect.catchAll((error) => Effect.succeed(FileIndex.unread(location, error)))
  )

/** The header line of the file at `location`, when it has one to read; for choosing sessions by ID. */
const headerIdOf = (fs: FsService, location: string, buffers: Buffers): Effect.Effect<string | undefined> =>
  Paths.resolve(fs, location).pipe(
    Effect.flatMap((paths) => Generation.read(fs, paths, buffers.take)),
    Effect.map((bytes) => {
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      const end = buf.indexOf(LF)
      try {
        const id: unknown = (JSON.parse(buf.toString("utf8", 0, end < 0 ? buf.length : end)) as { id?: unknown }).id
        return typeof id === "string" ? id : undefined
      } catch {
        return undefined
      }
    }),
    Effect.orElseSucceed(() => undefined)
  )

/**
 * The sessions a request names, among those the catalog listed: by path (as given, resolved from
 * the current directory, or a name in the listed directory), or by the ID in their header.
 */
const chosen = (
  fs: FsService,
  listed: ReadonlyArray<string>,
  sessions: ReadonlyArray<string>,
  buffers: Buffers
): Effect.Effect<ReadonlyArray<string>> =>
  Effect.gen(function*() {
    const byPath = new Set<string>()
    for (const s of sessions) {
      byPath.add(Path.resolve(s))
      const real = yield* Effect.orElseSucceed(Paths.realDirectory(fs, Path.dirname(Path.resolve(s))), () => undefined)
      if (real !== undefined) byPath.add(Path.join(real, Path.basename(s)))
    }
    const ids = new Set(sessions)
    const out: Array<string> = []
    for (const location of listed) {
      if (byPath.has(location)) out.push(location)
      else {
        const id = yield* headerIdOf(fs, location, buffers)
        if (id !== undefined && ids.has(id)) out.push(location)
      }
    }
    return out
  })

/** The share of a session's bytes the scan's lines must hold for a search to index it (`FileSearch.Options.indexShare`). */
export const INDEX_SHARE = 0.25

/** The file backend's search: the index of each session file (see `fileIndex.ts`), or a scan of its bytes. */
export const make = (fs: FsService, options: Options = {}): SearchIndexService => {
  const catalog = Catalog.make(fs)
  const useIndex = options.index ?? true
  const settleMs = options.settleMs ?? 2_000
  const share = options.indexShare ?? INDEX_SHARE
  // Checked here, reported by every search: `make` itself returns a service, not an Effect.
  const invalid = !Number.isFinite(settleMs * 1e6) || settleMs < 0
    ? sessionError("SESSION_INVALID_OPTIONS", "settleMs must be a finite number of milliseconds, 0 or more")
    : !Number.isFinite(share) || share < 0 || share > 1
    ? sessionError("SESSION_INVALID_OPTIONS", "indexShare must be a number from 0 to 1")
    : undefined
  const settleNs = invalid === undefined ? BigInt(Math.round(settleMs * 1e6)) : 0n
  return {
    candidates: (request: CandidateRequest) =>
      invalid !== undefined ? Stream.fail(invalid as InputError) : Stream.unwrap(Effect.gen(function*() {
        const listed = (yield* catalog.scan(request.directory)).map((entry) => entry.location).sort()
        // One set of buffers for the files of this search, read one after another: nothing is kept past it.
        const buffers = new Buffers()
        const locations = request.sessions === undefined ? listed : yield* chosen(fs, listed, request.sessions, buffers)
        const indexed = useIndex && request.trusted
        if (indexed && request.sessions === undefined) {
          const searched = yield* Effect.orElseSucceed(Paths.realDirectory(fs, Path.resolve(request.directory ?? ".")), () => undefined)
          yield* FileIndex.forgetGone(fs, listed, searched)
        }
        const scan = (location: string) => scanFile(fs, location, request.pattern, buffers)
        const search = indexed
          ? FileIndex.searcher(fs, request, buffers, settleNs, share, scan, (location, bytes) => scanned(location, bytes, request.pattern, buffers))
          : scan
        return Stream.fromIterable(locations).pipe(
          Stream.mapEffect(search),
          Stream.filterMap((found) => found)
        )
      }))
  }
}


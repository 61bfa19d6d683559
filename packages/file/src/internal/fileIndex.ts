/**
 * A search of session files through their index (`searchIndex.ts`): each session answered from its
 * segment while the segment is the session's (same file, unchanged, no marker beside it), else read
 * as a load reads it and scanned; when the lines found hold a good share of it (`share`), indexed,
 * its segment written for the next search, and answered from what was just made. A session the index cannot serve (a marker beside it, a file changed in the last
 * moments, a directory where no segment can be written) is scanned instead: the same answer.
 */
import { Buffer, isUtf8 } from "node:buffer"
import type { CandidateLine, CandidateRequest, Candidates } from "@session-tree/core/Search"
import { type SessionError, sessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Path from "node:path"
import { Flags, FsError, type FsService, type Stat } from "../Fs.js"
import type { Buffers } from "./asciiSearch.js"
import * as Generation from "./generation.js"
import { closeQuietly, lstatOrMissing, step } from "./io.js"
import * as Marker from "./marker.js"
import * as Owner from "./owner.js"
import * as Paths from "./paths.js"
import * as Index from "./searchIndex.js"

/** The failures of a write that say the directory takes no segment at all (not just this one). */
const UNWRITABLE: ReadonlySet<string> = new Set(["EROFS", "EACCES", "EPERM", "ENOSPC", "EDQUOT"])

/** What one search knows of the index directory: once a segment could not be written, the rest are scanned. */
interface State {
  writable: boolean
}

/** The lines at `places` of the session, or undefined when they cannot be read as the segment knew them. */
type LinesAt = (places: ReadonlyArray<Index.Place>) => Effect.Effect<Array<CandidateLine> | undefined>

/**
 * A session's candidates from its segment: for a decidable request, the entries the segment decided
 * and the lines that did not decode (read at once, as the scan would find them); otherwise every line
 * whose lexemes hold the request's, read from the session. Undefined when the segment is damaged or
 * the session no longer reads as it did: then the session is indexed again.
 */
const answer = (
  fs: FsService,
  location: string,
  path: string,
  segment: Index.Segment,
  request: CandidateRequest,
  linesAt: LinesAt
): Effect.Effect<Candidates | undefined> =>
  Effect.gen(function*() {
    const ids = yield* segment.items(request.lexemes)
    if (ids.length === 0) return { location, header: segment.header, lines: [] }
    const records = yield* segment.records
    let split = 0
    while (split < ids.length && ids[split]! < segment.decided) split++
    if (!request.decidable) {
      // Every line the segment names, read at once: those that did not decode only where the scan would find them.
      const lines = yield* linesAt([...ids].map((id) => Index.placeOf(records, id)))
      if (lines === undefined) return undefined
      const kept = lines.filter((line, k) => k < split || Index.scanFinds(request.pattern, line.text))
      return { location, header: segment.header, lines: kept.sort((a, b) => a.order - b.order) }
    }
    const decided = ids.subarray(0, split)
    const rawLines = yield* linesAt([...ids.subarray(split)].map((id) => Index.placeOf(records, id)))
    if (rawLines === undefined) return undefined
    const unread = rawLines.filter((line) => Index.scanFinds(request.pattern, line.text))
    const identity = segment.identity
    return {
      location,
      header: segment.header,
      lines: unread,
      entries: Index.entriesOf(segment, records, decided),
      // The page's lines, read from the session file, which must still be the file indexed.
      fetch: (orders: ReadonlyArray<number>): Effect.Effect<ReadonlyArray<string>, SessionError> =>
        Effect.suspend(() => {
          const byOrder = new Map<number, Index.Place>()
          for (const id of decided) {
            const place = Index.placeOf(records, id)
            byOrder.set(place.order, place)
          }
          const places = orders.map((order) => byOrder.get(order))
          const changed = sessionError("SESSION_REPLACED", "the session changed since it was indexed", { path })
          if (places.some((place) => place === undefined)) return Effect.fail(changed)
          return Effect.flatMap(Index.readLines(fs, path, identity, places as Array<Index.Place>), (lines) =>
            lines === undefined ? Effect.fail(changed) : Effect.succeed(lines.map((line) => line.text)))
        })
    }
  }).pipe(Effect.catchTag("Damaged", () => Effect.succeed(undefined)))

/** The bytes the lines hold in the file (UTF-8, each with its newline), against which a share is measured. */
const foundBytes = (lines: ReadonlyArray<CandidateLine>): number => {
  let n = 0
  for (const line of lines) n += Buffer.byteLength(line.text, "utf8") + 1
  return n
}

/** The lines at `places` of settled bytes held in memory (a session just read whole). */
const linesIn = (bytes: Buffer): LinesAt => (places) =>
  Effect.sync(() =>
    places.map((place) => {
      return { order: place.order, text: Index.bare(bytes.toString("utf8", place.order, place.order + place.length)) }
    })
  )

/**
 * The candidates of each session file of one search, through the index. `scan` searches a session by
 * its bytes; `scanned` makes the candidates of bytes already read. `settleNs`: see `Options.settleMs`.
 */
export const searcher = (
  fs: FsService,
  request: CandidateRequest,
  buffers: Buffers,
  settleNs: bigint,
  share: number,
  scan: (location: string) => Effect.Effect<Option.Option<Candidates>>,
  scanned: (location: string, bytes: Uint8Array) => Candidates
) => {
  const state: State = { writable: true }
  /** The session read whole, indexed, its segment written (when it may be trusted later), and answered. */
  const reindex = (
    location: string,
    paths: Paths.SessionPaths,
    before: Stat
  ): Effect.Effect<Option.Option<Candidates>, SessionError> =>
    Effect.scoped(Effect.gen(function*() {
      const { bytes, generation } = yield* Generation.open(fs, paths, "end", buffers.take)
      const stat = yield* step("fstat", fs.fstat(generation.handle))
      // A marker after the read: the bytes may be an append's settled prefix, not the file's.
      const intent = (yield* Marker.now(fs, paths)) !== undefined
      // The later of the two times: a file system without a true change time may keep ctime still.
      const changed = stat.ctimeNs > stat.mtimeNs ? stat.ctimeNs : stat.mtimeNs
      const recent = BigInt(Date.now()) * 1_000_000n - changed < settleNs
      // The bytes read are the file's whole, as it was before and after the read: else they may be
      // an append's settled prefix, or a mix of a change made while they were read.
      const stable = Index.sameIdentity(Index.identityOf(before, false), stat) && bytes.length === stat.size
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
      const { end, headerEnd } = Index.extentOf(buf)
      // The scan's answer, made once whichever way the session ends up answered by it.
      let found: Candidates | undefined
      const scannedOnce = (): Candidates => (found ??= scanned(location, bytes))
      if (intent || recent || !stable || headerEnd < 0 || !state.writable) return Option.some(scannedOnce())
      // A query rare in the session: its scan decodes a few lines, where making the segment would
      // decode and split into words every line. The segment is made by a search that would decode
      // a good share of the session anyway (a common word), for the searches after it.
      if (share > 0) {
        const scanAnswer = scannedOnce()
        if ("lines" in scanAnswer && foundBytes(scanAnswer.lines) < share * (end - headerEnd)) return Option.some(scanAnswer)
      }
      const target = yield* Index.indexDirectory(fs, paths.dir, true)
      if (target === undefined) {
        // None can be made, or the one there is not this process's to trust: the directory's sessions are scanned.
        state.writable = false
        return Option.some(scannedOnce())
      }
      const utf8 = isUtf8(bytes)
      const segment = Index.build(buf, headerEnd, end, Index.identityOf(stat, false), utf8 ? "index" : "scan")
      const written = yield* Effect.catchAll(Effect.as(Index.write(fs, target, paths.base, segment), true), (error) =>
        Effect.sync(() => {
          // A directory that takes no segment stops the writes of this search; any other failure
          // (a name too long for a segment's) is this session's alone, answered all the same.
          if (error instanceof FsError && UNWRITABLE.has(error.errno)) state.writable = false
          return false
        }))
      // Deleted (or replaced) while it was indexed: the segment, which holds its words, goes too.
      if (written) {
        const now = yield* Effect.orElseSucceed(freshStat(fs, paths.path), () => undefined)
        if (now === undefined || !Index.sameIdentity(Index.identityOf(stat, false), now)) yield* Index.forget(fs, paths.dir, paths.base)
      }
      const opened = yield* Effect.either(Index.open(Index.inMemory(segment), segment.length))
      // A segment that leaves its session to the scan (not UTF-8, too many models to number).
      const answered = opened._tag === "Right" && opened.right.kind === "index"
        ? yield* answer(fs, location, paths.path, opened.right, request, linesIn(buf))
        : undefined
      return Option.some(answered ?? scannedOnce())
    }))

  return (location: string): Effect.Effect<Option.Option<Candidates>> =>
    Effect.gen(function*() {
      const paths = yield* Paths.resolve(fs, location)
      const stat = yield* Effect.orElseSucceed(freshStat(fs, paths.path), () => undefined)
      // Not a regular file, or a marker beside it (an append or a commit under way): as the scan reads it.
      if (stat === undefined || stat.kind !== "file" || (yield* Marker.now(fs, paths)) !== undefined) return yield* scan(location)
      const dir = yield* Index.indexDirectory(fs, paths.dir, false)
      const stored = dir === undefined ? undefined : yield* Effect.scoped(Effect.gen(function*() {
        const segment = yield* Index.read(fs, dir, paths.base)
        if (segment === undefined || !Index.sameIdentity(segment.identity, stat)) return undefined
        if (segment.kind === "scan") return yield* scan(location)
        const answered = yield* answer(fs, location, paths.path, segment, request, (places) =>
          Index.readLines(fs, paths.path, segment.identity, places))
        return answered === undefined ? undefined : Option.some(answered)
      }))
      return stored ?? (yield* reindex(location, paths, stat))
    }).pipe(Effect.catchAll((error) => Effect.succeed(unread(location, error))))
}

/**
 * The session file's identity now, from an open descriptor (never through a link): on a network file
 * system an open fetches the file's attributes afresh, where an `lstat` may answer from a cache a
 * few seconds old and miss another machine's append, which the scan (reading the file) would see.
 */
const freshStat = (fs: FsService, path: string): Effect.Effect<Stat | undefined, FsError> =>
  Effect.flatMap(lstatOrMissing(fs, path), (named) =>
    named === undefined || named.kind !== "file"
      ? Effect.succeed(named)
      : Effect.scoped(Effect.flatMap(
        Effect.acquireRelease(fs.open(path, Flags.readNoFollow), (handle) => closeQuietly(fs, handle)),
        (handle) => fs.fstat(handle)
      )))

/** A session file that could not be read: gone since the catalog listed it (nothing to search), or its error. */
export const unread = (location: string, error: SessionError): Option.Option<Candidates> =>
  error.code === "SESSION_NOT_FOUND" ? Option.none() : Option.some({ location, error })

/**
 * A temp name of the index (`NAME.seg.tmp-OWNER-SEQ`) whose writer is gone: another process that
 * ended before it renamed it. This process's own are never taken, as one of its searches may be
 * writing one now.
 */
const strayTemp = (name: string): boolean => {
  const at = name.indexOf(`${Index.SEGMENT_SUFFIX}.tmp-`)
  if (at < 0) return false
  const owner = Owner.parse(name.slice(at + Index.SEGMENT_SUFFIX.length + 5, name.lastIndexOf("-")))
  return owner !== undefined && owner.pid !== Owner.self().pid && !Owner.isAlive(owner)
}

/**
 * Removes the segments of session files no longer in the directories of `listed` (every session file
 * of a search of whole directories) or in `directory` (the directory searched, which may hold none
 * now), and temp names their writers left: a segment is kept only beside its session. Only in an
 * index directory this process may trust (`Index.indexDirectory`), checked again before the removals.
 * Best effort: a segment left is never used for another file, whose identity differs.
 */
export const forgetGone = (fs: FsService, listed: ReadonlyArray<string>, directory: string | undefined): Effect.Effect<void> =>
  Effect.suspend(() => {
    const byDir = new Map<string, Set<string>>()
    if (directory !== undefined) byDir.set(directory, new Set())
    for (const location of listed) {
      const dir = Path.dirname(location)
      const names = byDir.get(dir) ?? new Set<string>()
      names.add(`${Path.basename(location)}${Index.SEGMENT_SUFFIX}`)
      byDir.set(dir, names)
    }
    return Effect.forEach(byDir, ([dir, names]) =>
      Effect.gen(function*() {
        const index = yield* Index.indexDirectory(fs, dir, false)
        if (index === undefined) return
        const found = yield* Effect.orElseSucceed(fs.readdir(index.path), () => [])
        const gone = found.filter((name) => (name.endsWith(Index.SEGMENT_SUFFIX) && !names.has(name)) || strayTemp(name))
        if (gone.length === 0 || !(yield* Index.stillThere(fs, index))) return
        yield* Effect.forEach(gone, (name) => Effect.ignore(fs.unlink(Path.join(index.path, name))), { discard: true })
      }), { discard: true })
  })

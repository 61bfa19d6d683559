import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { decodeLines, encodeLine, encodeRecord } from "../Codec.js"
import type { Ids } from "../Ids.js"
import { type Remembered, type ScanError, SessionCatalog } from "../SessionCatalog.js"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { type CorruptError, type InputError, type SessionError, sessionError } from "../SessionError.js"
import { type BlobBytes, type NewBlob, SessionJournal, type SessionJournalService, type Stored } from "../SessionJournal.js"
import type { ImportOptions, Listed, ListingPage, ListOptions, Mirrored, Records, SessionsService } from "../Sessions.js"
import * as SessionStore from "../SessionStore.js"
import type { Entry } from "../Record.js"
import * as V2 from "../RecordV2.js"
import { type Linked, pathTo } from "../SessionTree.js"
import { encodeAll } from "./entries.js"
import { listingOf, SessionLister } from "./listing.js"
import { createWhole, decode, newHeader, newSessionId } from "./sessionStore.js"
import { extractEntries } from "./blobs.js"
import { sha256Hex } from "./sha256.js"
import { decodeSummary, encodeSummary, summarize, type Summary } from "./summary.js"
import { SearchIndex } from "../Search.js"
import * as Search from "./search.js"
import { makeStats } from "./stats.js"

export type { Summary }

const unreadable = (location: string, error: SessionError): Listed => ({
  location,
  error: { code: error.code, message: error.line === undefined ? error.reason : `${error.reason} (line ${error.line})` }
})

/**
 * A listing whose `updated` is the time of the session's last commit, as the backend keeps it (a
 * file's modification time, the database's commit time), but never before what the records tell
 * (the creation, the newest entry's time: `summarize`'s `updated`): a clock that disagrees
 * (another machine's, a file system's coarser one, a file's time set back) cannot make a session
 * look updated before it was made or written.
 */
const lastCommit = (listed: Listed, changed: number): Listed =>
  "error" in listed ? listed : { ...listed, updated: notBefore(listed.updated, changed) }

/** The summary of a session this process has just committed: updated now (as its clock reads it), not at its newest entry's time. */
const committedNow = (summary: Summary): Effect.Effect<Summary> =>
  Effect.map(Clock.currentTimeMillis, (now) => ({ ...summary, updated: notBefore(summary.updated, now) }))

/** `at` (epoch milliseconds) as an ISO timestamp, or `earliest` when that is later. */
const notBefore = (earliest: string, at: number): string =>
  Number.isFinite(at) && !(at < Date.parse(earliest)) ? new Date(at).toISOString() : earliest

export const pathToOrFail = <E extends Linked>(entries: ReadonlyArray<E>, leaf: string): Effect.Effect<ReadonlyArray<E>, InputError> => {
  const path = pathTo(entries, leaf)
  return path.length === 0
    ? Effect.fail(sessionError("SESSION_UNKNOWN_ENTRY", `${JSON.stringify(leaf)} is not an entry of this session`))
    : Effect.succeed(path)
}

/** The version a fork or an import writes: the source's, or 2 from a version-1 source; never down. */
const targetVersion = (source: 1 | 2, wanted: 1 | 2 | undefined): Effect.Effect<1 | 2, SessionError> =>
  wanted === undefined || wanted === source
    ? Effect.succeed(source)
    : wanted === 2
    ? Effect.succeed(2)
    : Effect.fail(sessionError("SESSION_UNSUPPORTED_VERSION", `a version-${source} session is never converted to version ${String(wanted)}`))

/** Entries for a session of `version`: version-1 entries in their version-2 form when it is 2. */
const converted = (entries: ReadonlyArray<Entry>, version: 1 | 2): ReadonlyArray<Entry> =>
  version === 1 ? entries : entries.map((entry) => (entry.version === 1 ? V2.upgradeEntry(entry) : entry))

/** Version-1 records in their version-2 form, under the same session ID and time. */
const upgraded = (records: Records): Records => ({
  header: { type: "session", version: V2.VERSION, id: records.header.id, timestamp: records.header.timestamp },
  entries: converted(records.entries, 2)
})

/**
 * The blobs `entries` refer to, each once, to be taken from the session at `from`: a fork shares
 * or copies them, so that deleting either session leaves the other whole.
 */
const blobsFrom = (entries: ReadonlyArray<Entry>, from: string): ReadonlyArray<NewBlob> => {
  const found = new Map<string, NewBlob>()
  for (const entry of entries) {
    if (entry.version !== 2 || entry.kind !== "message") continue
    for (const ref of V2.blobsOf(entry.message)) {
      const hash = V2.hashOf(ref.blob)
      if (!found.has(hash)) found.set(hash, { hash, size: ref.size, from })
    }
  }
  return [...found.values()]
}

/**
 * The blobs `entries` refer to, from the bytes `given` (by reference or by hash), each checked
 * against its name; one not given is left out, so that the load check refuses it as missing.
 */
const blobsGiven = (
  entries: ReadonlyArray<Entry>,
  given: ReadonlyMap<string, Uint8Array> | undefined,
  sha256: (bytes: Uint8Array) => string
): Either.Either<ReadonlyArray<NewBlob>, CorruptError> => {
  if (given === undefined) return Either.right([])
  const found = new Map<string, NewBlob>()
  for (const entry of entries) {
    if (entry.version !== 2 || entry.kind !== "message") continue
    for (const ref of V2.blobsOf(entry.message)) {
      const hash = V2.hashOf(ref.blob)
      if (found.has(hash)) continue
      const bytes = given.get(ref.blob) ?? given.get(hash)
      if (bytes === undefined) continue
      if (sha256(bytes) !== hash) {
        return Either.left(sessionError("SESSION_BLOB_CORRUPT", `the bytes given for blob "${ref.blob}" do not match its hash`))
      }
      found.set(hash, { hash, size: bytes.length, bytes: bytes.slice() })
    }
  }
  return Either.right([...found.values()])
}

/** Each blob once, by its hash. */
const uniqueBlobs = (blobs: ReadonlyArray<NewBlob>): ReadonlyArray<NewBlob> => [...new Map(blobs.map((blob) => [blob.hash, blob])).values()]

const changed = (reason: string, location: string): SessionError =>
  sessionError("SESSION_SOURCE_CHANGED", `the session holds what its source no longer says: ${reason}; it is left as it is`, { path: location })

/**
 * `mirror`'s work on a session that exists: held for appending (no other store appends meanwhile),
 * compared record by record with `records`, and extended by the entries it lacks in one commit.
 */
const extend = (
  journal: SessionJournalService,
  location: string,
  header: Records["header"],
  entries: ReadonlyArray<Entry>,
  blobs: ReadonlyArray<BlobBytes>
): Effect.Effect<Mirrored | undefined, SessionError> =>
  Effect.scoped(Effect.gen(function*() {
    const held = yield* Effect.catchIf(journal.hold(location), (e) => e.code === "SESSION_NOT_FOUND", () => Effect.succeed(undefined))
    if (held === undefined) return undefined
    const decoded = yield* decode(journal, held)
    if (encodeRecord(decoded.header) !== encodeRecord(header)) return yield* changed("its header differs", held.location)
    const stored = decoded.history.entries
    if (stored.length > entries.length) {
      return yield* changed(`it holds ${stored.length} entries, the source gives ${entries.length}`, held.location)
    }
    for (let i = 0; i < stored.length; i++) {
      if (encodeRecord(stored[i]!) !== encodeRecord(entries[i]!)) return yield* changed(`entry "${stored[i]!.id}" (entry ${i + 1}) differs`, held.location)
    }
    const added = entries.slice(stored.length)
    if (added.length === 0) return { location: held.location, created: false, appended: 0 }
    // The whole session once extended, validated as a load validates it.
    const sizes = new Map(held.blobs ?? [])
    for (const blob of blobs) sizes.set(blob.hash, blob.size)
    const all = encodeAll([header, ...stored, ...added])
    const checked = decodeLines({ ...all, tail: "none", blobs: sizes })
    if (Either.isLeft(checked)) {
      const error = checked.left
      return yield* sessionError(error.code, error.reason, { line: error.line, path: held.location })
    }
    const count = 1 + stored.length
    // What the backend read is committed in its canonical form with the batch when it was spelled otherwise.
    const canonical = held.tail === "none" && held.lines.every((line, i) => line === all.lines[i])
      ? undefined
      : { lines: all.lines.slice(0, count), sizes: all.sizes.slice(0, count) }
    const lister = yield* SessionLister
    yield* held.writer.append({
      lines: all.lines.slice(count),
      sizes: all.sizes.slice(count),
      ids: added.map((entry) => entry.id),
      canonical,
      listing: listingOf(lister, { header: checked.right.header, entries: checked.right.history.entries }),
      blobs: blobs.filter((blob) => !(held.blobs?.has(blob.hash) ?? false) && added.some((entry) => refersTo(entry, blob.hash)))
    })
    return { location: held.location, created: false, appended: added.length }
  }))

/** Whether `entry` refers to the blob `hash`. */
const refersTo = (entry: Entry, hash: string): boolean =>
  entry.version === 2 && entry.kind === "message" && V2.blobsOf(entry.message).some((ref) => V2.hashOf(ref.blob) === hash)

export const toJsonl = (records: Records): string => encodeLine(records.header) + records.entries.map(encodeLine).join("")

/** A page of `items`: `offset` and `limit` taken as given when they are whole numbers, else refused. */
const page = <A>(items: ReadonlyArray<A>, options: ListOptions | undefined): Either.Either<ReadonlyArray<A>, InputError> => {
  const offset = options?.offset ?? 0
  const limit = options?.limit ?? Number.POSITIVE_INFINITY
  if (!Number.isSafeInteger(offset) || offset < 0) {
    return Either.left(sessionError("SESSION_INVALID_OPTIONS", `offset ${offset} is not a whole number`))
  }
  if (limit !== Number.POSITIVE_INFINITY && (!Number.isSafeInteger(limit) || limit < 0)) {
    return Either.left(sessionError("SESSION_INVALID_OPTIONS", `limit ${limit} is not a whole number`))
  }
  return Either.right(items.slice(offset, limit === Number.POSITIVE_INFINITY ? undefined : offset + limit))
}

export const make: Effect.Effect<SessionsService, never, SessionJournal | SessionCatalog | Ids> = Effect.gen(function*() {
  const journal = yield* SessionJournal
  const catalog = yield* SessionCatalog
  const context = yield* Effect.context<SessionJournal | Ids>()
  const provide = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, SessionJournal | Ids>> =>
    Effect.provide(effect, context)

  /** What was listed of each location, under the catalog's version it had then. */
  const cache = new Map<string, { readonly version: string; readonly listed: Listed }>()

  /** The listing of a stored session: its summary, or why it does not load. */
  const listedOf = (read: Either.Either<Stored, SessionError>, location: string): Listed => {
    if (Either.isLeft(read)) return unreadable(location, read.left)
    const decoded = decode(journal, read.right)
    return Either.isLeft(decoded)
      ? unreadable(location, decoded.left)
      : summarize(location, { header: decoded.right.header, entries: decoded.right.history.entries })
  }

  const list = (options?: ListOptions): Effect.Effect<ListingPage, ScanError> =>
    Effect.gen(function*() {
      const scanned = yield* catalog.scan(options?.directory ?? options?.scope)
      const ordered = [...scanned].sort((a, b) => b.changed - a.changed || (a.location < b.location ? -1 : a.location > b.location ? 1 : 0))
      const wanted = yield* page(ordered, options)
      // What this listing shows of a session it could not read for a passing reason; kept nowhere.
      const passing = new Map<string, Listed>()
      let stale = wanted.filter((entry) => cache.get(entry.location)?.version !== entry.version)
      const listings = catalog.listings
      if (stale.length > 0 && listings !== undefined) {
        const recalled = yield* listings.recall(stale)
        stale = stale.filter((entry) => {
          const summary = decodeSummary(recalled.get(entry.location))
          if (summary === undefined || summary.location !== entry.location) return true
          cache.set(entry.location, { version: entry.version, listed: summary })
          return false
        })
      }
      if (stale.length > 0) {
        const read = yield* catalog.readMany(stale.map((entry) => entry.location))
        const made: Array<Remembered> = []
        stale.forEach((entry, i) => {
          const listed = listedOf(read[i]!, entry.location)
          if ("error" in listed) {
            // A session that could not be read now may read next time under the same version.
            if (listed.error.code === "SESSION_IO") return passing.set(entry.location, listed)
          } else {
            made.push({ location: entry.location, version: entry.version, listing: encodeSummary(listed) })
          }
          cache.set(entry.location, { version: entry.version, listed })
        })
        if (made.length > 0 && listings !== undefined) yield* listings.remember(made)
      }
      const sessions = wanted.map((entry, i) => {
        const listed = lastCommit(passing.get(entry.location) ?? cache.get(entry.location)!.listed, entry.changed)
        return { listed, key: "error" in listed ? entry.changed : Date.parse(listed.updated), i }
      })
      // The page is cut by the catalog's times; within it, the order is the one `updated` shows
      // (which is later only where `created` is later than the catalog's time).
      sessions.sort((a, b) => b.key - a.key || a.i - b.i)
      return { sessions: sessions.map(({ listed }) => listed), total: ordered.length }
    })

  const read = (location: string) => provide(SessionStore.read(location))

  // Search and usage: each in a module of its own, over the same ports.
  const index = yield* Effect.serviceOption(SearchIndex)
  const candidates = Option.isSome(index) ? index.value.candidates : Search.catalogCandidates(catalog)

  return {
    create: (location, options) => provide(SessionStore.create(location, options)),
    load: (location, options) => provide(SessionStore.load(location, options)),
    read,
    list,
    latest: (directory) =>
      Effect.flatMap(list({ directory, limit: 1 }), (listing) =>
        listing.sessions.length === 0
          ? Effect.fail(sessionError("SESSION_NOT_FOUND", directory === undefined ? "there is no session" : "there is no session here", { path: directory }))
          : Effect.succeed(listing.sessions[0]!)),
    fork: (source, leaf, target, options) =>
      Effect.gen(function*() {
        const loaded = yield* read(source)
        const path = yield* pathToOrFail(loaded.entries, leaf)
        const version = yield* targetVersion(loaded.header.version, options?.version)
        const id = yield* provide(newSessionId(journal, target, options?.id))
        const header = yield* newHeader(id, {
          version,
          forkedFrom: version === 2 ? { session: loaded.header.id, entry: leaf } : undefined
        })
        const created = yield* createWhole(journal, target, header, converted(path, version), blobsFrom(path, loaded.location))
        return yield* committedNow(summarize(created.location, created))
      }),
    delete: (location) =>
      Effect.tap(catalog.delete(location), (deleted) =>
        Effect.sync(() => {
          cache.delete(deleted)
          cache.delete(location)
        })),
    exportJsonl: (location) => Effect.map(read(location), toJsonl),
    search: (options) => Search.runOptions(options, candidates),
    stats: makeStats(journal, catalog),
    import: (records, to, options?: ImportOptions) =>
      Effect.gen(function*() {
        const version = yield* targetVersion(records.header.version, options?.version)
        if (version !== records.header.version) records = upgraded(records)
        const sha256 = journal.sha256 ?? sha256Hex
        const given = yield* blobsGiven(records.entries, options?.blobs, sha256)
        // File data over the inline size is a blob on every backend, as an append makes it.
        const extracted = yield* extractEntries(records.entries, sha256)
        const location = to ?? (journal.locations === "sessionId" ? records.header.id : undefined)
        if (location === undefined) {
          return yield* sessionError("SESSION_INVALID_OPTIONS", "this backend needs a location to import to")
        }
        const created = yield* createWhole(journal, location, records.header, extracted.entries, uniqueBlobs([...given, ...extracted.blobs]))
        return yield* committedNow(summarize(created.location, created))
      }),
    mirror: (records, to) =>
      Effect.gen(function*() {
        const extracted = yield* extractEntries(records.entries, journal.sha256 ?? sha256Hex)
        const blobs = uniqueBlobs(extracted.blobs) as ReadonlyArray<BlobBytes>
        const location = to ?? (journal.locations === "sessionId" ? records.header.id : undefined)
        if (location === undefined) return yield* sessionError("SESSION_INVALID_OPTIONS", "this backend needs a location to mirror to")
        // Created whole when nothing is there; a create that another process won is then extended like any other.
        for (let attempt = 0;; attempt++) {
          const extended = yield* extend(journal, location, records.header, extracted.entries, blobs)
          if (extended !== undefined) return extended
          const created = yield* Effect.either(createWhole(journal, location, records.header, extracted.entries, blobs))
          if (Either.isRight(created)) return { location: created.right.location, created: true, appended: extracted.entries.length }
          if (created.left.code !== "SESSION_EXISTS" || attempt > 0) return yield* created.left
        }
      })
  }
})

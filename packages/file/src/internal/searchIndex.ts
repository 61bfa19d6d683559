/**
 * The search index of a directory of session files: one segment per session file in the hidden
 * directory `.session-tree-index` beside them (`docs/search-index.md` gives the format). A segment
 * holds what the library decides of each entry line (`Search.entryFacts`: lexemes, timestamp, role,
 * model; or that the line does not decode), so a query of words is counted and ranked from it
 * without reading the session, and the page's lines are read from the session file by offset.
 *
 * A segment is made from the session's bytes as a load reads them, and names the file it was made
 * of (device, inode, size, modification and change times): it is used only while the file is that
 * file, unchanged, with no marker (an append or a commit under way) beside it. Each part a query
 * reads carries a CRC-32, so a damaged segment is found and made again, never believed.
 */
import { Buffer } from "node:buffer"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import type { CandidateLine, EntryFacts, IndexedEntries, Pattern } from "@session-tree/core/Search"
import { entryFacts } from "@session-tree/core/Search"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import { type FileId, Flags, type FsService, type Handle, type Stat } from "../Fs.js"
import { closeQuietly, lstatOrMissing, readExactly } from "./io.js"
import * as Owner from "./owner.js"
import { classifyTail } from "./tail.js"

const LF = 0x0a

/** The hidden directory of the segments, in the served directory (the catalog lists `*.jsonl` names only). */
export const INDEX_DIRECTORY = ".session-tree-index"

/** A segment's name: its session file's name and this. */
export const SEGMENT_SUFFIX = ".seg"

const MAGIC = 0x49535453 // "STSI", little-endian
/**
 * The segment format, and with it the rules of what a segment keeps (`entryFacts`: the words, their
 * folding, the 64-code-point cut, the searched text, roles and models). A change to either must
 * bump it, so that no segment made by the old rules is trusted; a test pins the rules' output to it.
 */
export const FORMAT = 1

/**
 * The Unicode tables the words were made by (`\p{L}`, lower case: the runtime's, which a Node
 * upgrade may change), as a number kept in each segment's head: a segment made under others is
 * made again, since its words may split where the matcher's now do not.
 */
const TABLES = Zlib.crc32(`unicode ${process.versions.unicode ?? ""}`)
const FIXED = 128
const RECORD = 48
const NONE = 0xffff
/** The first read of a segment: its fixed part, the header line, the strings and the bucket directory, mostly. */
const FIRST_READ = 64 * 1024

/** What a segment is: an index of the file's lines, or a mark that the file is searched by the scan (not UTF-8). */
export type Kind = "index" | "scan"

/** The session file a segment was made of. */
export interface Identity {
  readonly dev: bigint
  readonly ino: bigint
  readonly size: number
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
  /** Whether an append intent (or any marker) was there when the file was read: such a segment is never used. */
  readonly intent: boolean
}

export const identityOf = (stat: Stat, intent: boolean): Identity => ({
  dev: stat.dev,
  ino: stat.ino,
  size: stat.size,
  mtimeNs: stat.mtimeNs,
  ctimeNs: stat.ctimeNs,
  intent
})

/** Whether the file `stat` shows is the one a segment of `identity` was made of, unchanged. */
export const sameIdentity = (identity: Identity, stat: Stat): boolean =>
  !identity.intent && stat.kind === "file" && identity.dev === stat.dev && identity.ino === stat.ino &&
  identity.size === stat.size && identity.mtimeNs === stat.mtimeNs && identity.ctimeNs === stat.ctimeNs

/**
 * Where a session file's settled bytes end their header line (-1: none complete) and their entry
 * lines: after the last line feed, or at the end when the bytes after it are a complete line and
 * not the torn end of an append (what a load reads).
 */
export const extentOf = (buf: Buffer): { readonly headerEnd: number; readonly end: number } => {
  const headerEnd = buf.indexOf(LF)
  let end = buf.lastIndexOf(LF) + 1
  if (end < buf.length && headerEnd >= 0 && classifyTail(buf.toString("utf8", end)) !== "incomplete") end = buf.length
  return { headerEnd, end }
}

const crc = (bytes: Uint8Array): number => Zlib.crc32(bytes)

/** FNV-1a over the lexeme's UTF-16 code units: which bucket holds it. */
const hashOf = (lexeme: string): number => {
  let h = 0x811c9dc5
  for (let i = 0; i < lexeme.length; i++) h = Math.imul(h ^ lexeme.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** `line` without the `\r` a CRLF ending leaves. */
export const bare = (line: string): string => (line.charCodeAt(line.length - 1) === 0x0d ? line.slice(0, -1) : line)

interface Item {
  readonly order: number
  readonly line: number
  readonly length: number
  readonly facts: EntryFacts
}

/**
 * The segment of a session file whose settled bytes are `bytes`, its header the bytes before the
 * first line feed and its entry lines those up to `end` (the torn tail left out, as a load leaves it).
 */
export const build = (bytes: Buffer, headerEnd: number, end: number, identity: Identity, kind: Kind): Buffer => {
  const header = kind === "index" ? bare(bytes.toString("utf8", 0, headerEnd)) : ""
  const decided: Array<Item> = []
  const raw: Array<Item> = []
  if (kind === "index") {
    const factsOf = entryFacts(header)
    let lineNo = 2
    for (let from = headerEnd + 1; from < end; lineNo++) {
      let to = bytes.indexOf(LF, from)
      if (to < 0 || to > end) to = end
      const text = bare(bytes.toString("utf8", from, to))
      const facts = factsOf(text, lineNo)
      // An entry without searched text (a label, a model change) is never a hit: nothing to keep.
      if (facts.decoded !== undefined ? facts.decoded.searched : facts.lexemes.length > 0) {
        ;(facts.decoded !== undefined ? decided : raw).push({ order: from, line: lineNo, length: to - from, facts })
      }
      from = to + 1
    }
  }
  // Newest first, then by place: the order a search ranks a session's hits in, so postings are ranked.
  decided.sort((a, b) => {
    const ta = a.facts.decoded!.timestamp
    const tb = b.facts.decoded!.timestamp
    return ta !== tb ? (ta > tb ? -1 : 1) : a.order - b.order
  })
  const items = [...decided, ...raw]
  // Roles and models are kept as 16-bit numbers: a session of more distinct models than that is scanned.
  const distinct = new Set(decided.flatMap((item) => [item.facts.decoded!.role, item.facts.decoded!.model ?? ""]))
  if (distinct.size >= NONE) return build(bytes, headerEnd, end, identity, "scan")
  const strings: Array<string> = []
  const stringIds = new Map<string, number>()
  const stringId = (s: string | undefined): number => {
    if (s === undefined) return NONE
    let id = stringIds.get(s)
    if (id === undefined) {
      id = strings.length
      strings.push(s)
      stringIds.set(s, id)
    }
    return id
  }
  const records = Buffer.alloc(items.length * RECORD)
  const postings = new Map<string, Array<number>>()
  items.forEach((item, id) => {
    const at = id * RECORD
    records.writeDoubleLE(item.order, at)
    records.writeUInt32LE(item.line, at + 8)
    records.writeUInt32LE(item.length, at + 12)
    records.writeUInt32LE(crc(bytes.subarray(item.order, item.order + item.length)), at + 44)
    const decodedFacts = item.facts.decoded
    if (decodedFacts !== undefined) {
      records.write(decodedFacts.timestamp, at + 16, 24, "latin1")
      records.writeUInt16LE(stringId(decodedFacts.role), at + 40)
      records.writeUInt16LE(stringId(decodedFacts.model), at + 42)
    } else {
      records.writeUInt16LE(NONE, at + 40)
      records.writeUInt16LE(NONE, at + 42)
    }
    for (const lexeme of item.facts.lexemes) {
      const list = postings.get(lexeme)
      if (list === undefined) postings.set(lexeme, [id])
      else list.push(id)
    }
  })
  let buckets = 1
  while (buckets * 8 < postings.size) buckets *= 2
  const byBucket: Array<Array<string>> = Array.from({ length: buckets }, () => [])
  for (const lexeme of postings.keys()) byBucket[hashOf(lexeme) & (buckets - 1)]!.push(lexeme)
  let postingCount = 0
  for (const list of postings.values()) postingCount += list.length
  const postingBytes = Buffer.alloc(postingCount * 4)
  const lexParts: Array<Buffer> = []
  const dir = Buffer.alloc((buckets + 1) * 4 + buckets * 4)
  let lexLength = 0
  let next = 0
  for (let b = 0; b < buckets; b++) {
    dir.writeUInt32LE(lexLength, b * 4)
    const parts: Array<Buffer> = []
    for (const lexeme of byBucket[b]!) {
      const list = postings.get(lexeme)!
      const start = next
      for (const id of list) postingBytes.writeUInt32LE(id, 4 * next++)
      const word = Buffer.from(lexeme, "utf8")
      const entry = Buffer.alloc(2 + word.length + 12)
      entry.writeUInt16LE(word.length, 0)
      word.copy(entry, 2)
      entry.writeUInt32LE(start, 2 + word.length)
      entry.writeUInt32LE(list.length, 6 + word.length)
      entry.writeUInt32LE(crc(postingBytes.subarray(start * 4, next * 4)), 10 + word.length)
      parts.push(entry)
    }
    const bucket = Buffer.concat(parts)
    dir.writeUInt32LE(crc(bucket), (buckets + 1) * 4 + b * 4)
    lexParts.push(bucket)
    lexLength += bucket.length
  }
  dir.writeUInt32LE(lexLength, buckets * 4)
  const headerBytes = Buffer.from(header, "utf8")
  const stringBytes = Buffer.from(JSON.stringify(strings), "utf8")
  const headerOff = FIXED
  const stringsOff = headerOff + headerBytes.length
  const dirOff = stringsOff + stringBytes.length
  const headEnd = dirOff + dir.length
  const recordsOff = align(headEnd)
  const lexOff = recordsOff + records.length
  const postingsOff = align(lexOff + lexLength)
  const total = postingsOff + postingBytes.length
  const out = Buffer.alloc(total)
  out.writeUInt32LE(MAGIC, 0)
  out.writeUInt32LE(FORMAT, 4)
  out.writeUInt32LE(kind === "index" ? 0 : 1, 12)
  out.writeBigUInt64LE(identity.dev, 16)
  out.writeBigUInt64LE(identity.ino, 24)
  out.writeDoubleLE(identity.size, 32)
  out.writeBigInt64LE(identity.mtimeNs, 40)
  out.writeBigInt64LE(identity.ctimeNs, 48)
  out.writeUInt32LE(identity.intent ? 1 : 0, 56)
  out.writeUInt32LE(total, 60)
  out.writeUInt32LE(headEnd, 64)
  out.writeUInt32LE(headerOff, 68)
  out.writeUInt32LE(headerBytes.length, 72)
  out.writeUInt32LE(stringsOff, 76)
  out.writeUInt32LE(stringBytes.length, 80)
  out.writeUInt32LE(dirOff, 84)
  out.writeUInt32LE(buckets, 88)
  out.writeUInt32LE(recordsOff, 92)
  out.writeUInt32LE(decided.length, 96)
  out.writeUInt32LE(raw.length, 100)
  out.writeUInt32LE(crc(records), 104)
  out.writeUInt32LE(lexOff, 108)
  out.writeUInt32LE(postingsOff, 112)
  out.writeUInt32LE(TABLES, 116)
  headerBytes.copy(out, headerOff)
  stringBytes.copy(out, stringsOff)
  dir.copy(out, dirOff)
  records.copy(out, recordsOff)
  let at = lexOff
  for (const part of lexParts) {
    part.copy(out, at)
    at += part.length
  }
  postingBytes.copy(out, postingsOff)
  out.writeUInt32LE(crc(out.subarray(12, headEnd)), 8)
  return out
}

const align = (n: number): number => Math.ceil(n / 8) * 8

/** Reads `length` bytes at `position` of a segment; fails (the segment is unusable) on a short read. */
export type ReadAt = (position: number, length: number) => Effect.Effect<Buffer, Damaged>

/** A segment that cannot be used: missing, of another format, torn or damaged. It is made again. */
export class Damaged {
  readonly _tag = "Damaged"
  constructor(readonly reason: string) {}
}

const damaged = (reason: string) => Effect.fail(new Damaged(reason))

/** A segment's fixed part and head, checked; its parts read on demand. */
export interface Segment {
  readonly kind: Kind
  readonly identity: Identity
  readonly header: string
  /** The items (decided entries, then lines that did not decode) holding every one of `lexemes`, ascending. */
  readonly items: (lexemes: ReadonlyArray<string>) => Effect.Effect<Uint32Array, Damaged>
  readonly decided: number
  /** The records of every item, checked (read once). */
  readonly records: Effect.Effect<Buffer, Damaged>
  readonly strings: ReadonlyArray<string>
}

/**
 * Whether [from, from + length) lies within `size` bytes. Every offset and count a segment gives is
 * checked with it before it is used: a segment whose checksums hold may still have been written by
 * a program of another version, or by hand.
 */
const within = (from: number, length: number, size: number): boolean =>
  Number.isSafeInteger(from) && Number.isSafeInteger(length) && from >= 0 && length >= 0 && from + length <= size

/** The segment's list of strings (roles and models), or undefined when it is not one. */
const stringsOf = (text: string): Array<string> | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    return Array.isArray(value) && value.every((v) => typeof v === "string") ? value as Array<string> : undefined
  } catch {
    return undefined
  }
}

/** A segment's head read through `readAt` (the bytes of a file, or a segment just made), `size` bytes long. */
export const open = (readAt: ReadAt, size: number): Effect.Effect<Segment, Damaged> =>
  Effect.gen(function*() {
    if (size < FIXED) return yield* damaged("shorter than its fixed part")
    let head = yield* readAt(0, Math.min(size, FIRST_READ))
    if (head.readUInt32LE(0) !== MAGIC || head.readUInt32LE(4) !== FORMAT) return yield* damaged("not a segment of this format")
    const total = head.readUInt32LE(60)
    const headEnd = head.readUInt32LE(64)
    if (total !== size || headEnd > total || headEnd < FIXED) return yield* damaged("torn: its length is not the one it was written with")
    if (headEnd > head.length) head = yield* readAt(0, headEnd)
    if (crc(head.subarray(12, headEnd)) !== head.readUInt32LE(8)) return yield* damaged("its head does not match its checksum")
    if (head.readUInt32LE(116) !== TABLES) return yield* damaged("made under other Unicode tables")
    const kind: Kind = head.readUInt32LE(12) === 0 ? "index" : "scan"
    const identity: Identity = {
      dev: head.readBigUInt64LE(16),
      ino: head.readBigUInt64LE(24),
      size: head.readDoubleLE(32),
      mtimeNs: head.readBigInt64LE(40),
      ctimeNs: head.readBigInt64LE(48),
      intent: head.readUInt32LE(56) !== 0
    }
    const dirOff = head.readUInt32LE(84)
    const buckets = head.readUInt32LE(88)
    const recordsOff = head.readUInt32LE(92)
    const decided = head.readUInt32LE(96)
    const rawCount = head.readUInt32LE(100)
    const recordsCrc = head.readUInt32LE(104)
    const lexOff = head.readUInt32LE(108)
    const postingsOff = head.readUInt32LE(112)
    const items = decided + rawCount
    if (
      !within(head.readUInt32LE(68), head.readUInt32LE(72), headEnd) || !within(head.readUInt32LE(76), head.readUInt32LE(80), headEnd) ||
      buckets === 0 || (buckets & (buckets - 1)) !== 0 || !within(dirOff, (2 * buckets + 1) * 4, headEnd) ||
      !within(recordsOff, items * RECORD, size) || !within(lexOff, 0, size) || !within(postingsOff, 0, size)
    ) return yield* damaged("a part of it lies outside it")
    const header = head.toString("utf8", head.readUInt32LE(68), head.readUInt32LE(68) + head.readUInt32LE(72))
    const strings = stringsOf(head.toString("utf8", head.readUInt32LE(76), head.readUInt32LE(76) + head.readUInt32LE(80)))
    if (strings === undefined) return yield* damaged("its roles and models are not a list of strings")
    const dirAt = (b: number) => head.readUInt32LE(dirOff + b * 4)
    const postingsOf = (lexeme: string): Effect.Effect<Uint32Array, Damaged> =>
      Effect.gen(function*() {
        const b = hashOf(lexeme) & (buckets - 1)
        const from = dirAt(b)
        const to = dirAt(b + 1)
        if (to === from) return new Uint32Array(0)
        if (to < from || !within(lexOff + from, to - from, size)) return yield* damaged("a bucket lies outside it")
        const bucket = yield* readAt(lexOff + from, to - from)
        if (crc(bucket) !== head.readUInt32LE(dirOff + (buckets + 1) * 4 + b * 4)) return yield* damaged("a bucket does not match its checksum")
        const word = Buffer.from(lexeme, "utf8")
        for (let at = 0; at < bucket.length;) {
          if (!within(at, 2, bucket.length) || !within(at, 14 + bucket.readUInt16LE(at), bucket.length)) {
            return yield* damaged("a bucket's word runs past it")
          }
          const length = bucket.readUInt16LE(at)
          const found = bucket.subarray(at + 2, at + 2 + length)
          const start = bucket.readUInt32LE(at + 2 + length)
          const count = bucket.readUInt32LE(at + 6 + length)
          if (found.equals(word)) {
            if (!within(postingsOff + start * 4, count * 4, size)) return yield* damaged("a list of entries lies outside it")
            const bytes = yield* readAt(postingsOff + start * 4, count * 4)
            if (crc(bytes) !== bucket.readUInt32LE(at + 10 + length)) return yield* damaged("a list of entries does not match its checksum")
            // Copied, so that the list is aligned for reading as 32-bit numbers.
            const list = new Uint32Array(count)
            for (let k = 0; k < count; k++) list[k] = bytes.readUInt32LE(k * 4)
            // Ascending ids of the segment's items: the intersection and the records rely on it.
            for (let k = 0; k < count; k++) if (list[k]! >= items || (k > 0 && list[k]! <= list[k - 1]!)) return yield* damaged("a list names no item")
            return list
          }
          at += 14 + length
        }
        return new Uint32Array(0)
      })
    const records = Effect.cached(Effect.flatMap(readAt(recordsOff, items * RECORD), (bytes) =>
      crc(bytes) !== recordsCrc
        ? damaged("the entries do not match their checksum")
        : recordsValid(bytes, items, decided, strings.length, identity.size)
        ? Effect.succeed(bytes)
        : damaged("an entry names a role or model it does not list")))
    return {
      kind,
      identity,
      header,
      decided,
      strings,
      records: yield* records,
      items: (lexemes) =>
        Effect.gen(function*() {
          let out: Uint32Array | undefined
          for (const lexeme of lexemes) {
            const list = yield* postingsOf(lexeme)
            out = out === undefined ? list : intersect(out, list)
            if (out.length === 0) break
          }
          return out ?? new Uint32Array(0)
        })
    }
  })

/**
 * Whether every item's place lies within the session file indexed (a whole number of bytes from the
 * first line's end, a line number past the header) and every decided entry's role and model name one
 * of the segment's strings (a model may be none).
 */
const recordsValid = (records: Buffer, items: number, decided: number, strings: number, fileSize: number): boolean => {
  for (let id = 0; id < items; id++) {
    const order = records.readDoubleLE(id * RECORD)
    if (!within(order, records.readUInt32LE(id * RECORD + 12), fileSize) || records.readUInt32LE(id * RECORD + 8) < 2) return false
  }
  for (let id = 0; id < decided; id++) {
    const role = records.readUInt16LE(id * RECORD + 40)
    const model = records.readUInt16LE(id * RECORD + 42)
    if (role >= strings || (model !== NONE && model >= strings)) return false
  }
  return true
}

/** The ids in both ascending lists. */
const intersect = (a: Uint32Array, b: Uint32Array): Uint32Array => {
  const out = new Uint32Array(Math.min(a.length, b.length))
  let n = 0
  for (let i = 0, j = 0; i < a.length && j < b.length;) {
    if (a[i]! < b[j]!) i++
    else if (a[i]! > b[j]!) j++
    else {
      out[n++] = a[i]!
      i++
      j++
    }
  }
  return out.subarray(0, n)
}

/** Where an item's line is in the session file, which line it is, and the CRC-32 of its bytes. */
export interface Place {
  readonly order: number
  readonly line: number
  readonly length: number
  readonly crc: number
}

export const placeOf = (records: Buffer, id: number): Place => {
  const at = id * RECORD
  return {
    order: records.readDoubleLE(at),
    line: records.readUInt32LE(at + 8),
    length: records.readUInt32LE(at + 12),
    crc: records.readUInt32LE(at + 44)
  }
}

/** The decided entries among `ids` (those under `segment.decided`), read from the records as the run asks. */
export const entriesOf = (segment: Segment, records: Buffer, ids: Uint32Array): IndexedEntries => {
  const strings = segment.strings
  const base = (i: number) => ids[i]! * RECORD
  return {
    size: ids.length,
    order: (i) => records.readDoubleLE(base(i)),
    line: (i) => records.readUInt32LE(base(i) + 8),
    timestamp: (i) => records.toString("latin1", base(i) + 16, base(i) + 40),
    role: (i) => strings[records.readUInt16LE(base(i) + 40)]!,
    model: (i) => {
      const id = records.readUInt16LE(base(i) + 42)
      return id === NONE ? undefined : strings[id]
    }
  }
}

/** `readAt` over a segment held in memory (one just made). */
export const inMemory = (bytes: Buffer): ReadAt => (position, length) =>
  within(position, length, bytes.length) ? Effect.succeed(bytes.subarray(position, position + length)) : damaged("short read")

/** `readAt` over an open segment file. */
export const inFile = (fs: FsService, handle: Handle, size: number): ReadAt => (position, length) => {
  // Checked before anything is allocated: a damaged segment may name any length.
  if (!within(position, length, size)) return damaged("short read")
  return Effect.mapError(
    readExactly(fs, handle, Buffer.allocUnsafe(length), position, () => new Damaged("short read")),
    (error) => (error instanceof Damaged ? error : new Damaged("a read failed"))
  )
}

/** An index directory as it was checked (`indexDirectory`): its path and identity. */
export interface IndexDirectory {
  readonly path: string
  readonly id: FileId
}

/** This process's user ID, where the platform has one. */
const ownUid = (): number | undefined => (typeof process.getuid === "function" ? process.getuid() : undefined)

/**
 * The index directory beside the session files of `dir`, when this process may trust it: a real
 * directory (not a link), of this process's user, that no other user may write (0700 as made), in a
 * directory where no other user may rename it (see below); made when missing and `make`. Undefined otherwise, and then nothing in it is read, written or removed
 * (its sessions are scanned): through a planted link a search would write and remove files
 * elsewhere, and whoever may write the directory may write segments that steer a search's counts.
 */
export const indexDirectory = (fs: FsService, dir: string, make: boolean): Effect.Effect<IndexDirectory | undefined> =>
  Effect.gen(function*() {
    // The sessions' directory must be one where no other user can rename our index directory away
    // and put a link in its place between a check and a write: its owner's (this user's, or the
    // system's), and not writable by others unless sticky (where only an entry's owner may rename it).
    const parent = yield* lstatOrMissing(fs, dir)
    const self = ownUid()
    if (
      parent === undefined || parent.kind !== "directory" ||
      (self !== undefined && parent.uid !== self && parent.uid !== 0) ||
      ((parent.mode & 0o022) !== 0 && (parent.mode & 0o1000) === 0)
    ) return undefined
    const path = Path.join(dir, INDEX_DIRECTORY)
    let stat = yield* lstatOrMissing(fs, path)
    if (stat === undefined && make) {
      yield* Effect.ignore(fs.mkdir(path, 0o700))
      stat = yield* lstatOrMissing(fs, path)
    }
    const uid = ownUid()
    if (stat === undefined || stat.kind !== "directory" || (stat.mode & 0o022) !== 0 || (uid !== undefined && stat.uid !== uid)) {
      return undefined
    }
    return { path, id: { dev: stat.dev, ino: stat.ino } }
  }).pipe(Effect.orElseSucceed(() => undefined))

/** Whether `dir`'s name still names the directory checked (not swapped for another since). */
export const stillThere = (fs: FsService, dir: IndexDirectory): Effect.Effect<boolean> =>
  Effect.map(
    Effect.orElseSucceed(lstatOrMissing(fs, dir.path), () => undefined),
    (stat) => stat !== undefined && stat.kind === "directory" && stat.dev === dir.id.dev && stat.ino === dir.id.ino
  )

/** The segment file of the session file `base` in the index directory `dir`. */
export const segmentPath = (dir: IndexDirectory, base: string): string => Path.join(dir.path, `${base}${SEGMENT_SUFFIX}`)

/**
 * Opens the segment of the session file `base` in `dir`, its descriptor held until the scope closes
 * (its parts are read as a query asks for them); undefined when there is none or it cannot be used,
 * or when the directory's name no longer names the directory checked.
 */
export const read = (fs: FsService, dir: IndexDirectory, base: string): Effect.Effect<Segment | undefined, never, Scope.Scope> =>
  Effect.acquireRelease(fs.open(segmentPath(dir, base), Flags.readNoFollow), (handle) => closeQuietly(fs, handle)).pipe(
    Effect.flatMap((handle) =>
      Effect.flatMap(fs.fstat(handle), (stat) => (stat.kind === "file" ? open(inFile(fs, handle, stat.size), stat.size) : damaged("not a file")))
    ),
    Effect.flatMap((segment) => Effect.map(stillThere(fs, dir), (same) => (same ? segment : undefined))),
    Effect.catchAll(() => Effect.succeed(undefined))
  )

/**
 * Writes `bytes` as the segment of the session file `base` in `dir`: a temp file of this process's
 * own, then renamed onto the segment's name, so a reader finds the old segment or the new one,
 * whole; the temp file is removed however the write ends short of that (an interruption too). The
 * directory is checked to be the same one after. No fsync: a segment lost or torn by a crash is only
 * found damaged and made again.
 */
export const write = (fs: FsService, dir: IndexDirectory, base: string, bytes: Buffer): Effect.Effect<void, unknown> =>
  Effect.gen(function*() {
    const path = segmentPath(dir, base)
    const temp = `${path}.tmp-${Owner.selfName()}-${Owner.nextSeq()}`
    yield* Effect.acquireUseRelease(
      fs.open(temp, Flags.createExclusive, 0o600),
      (handle) =>
        Effect.flatMap(fs.write(handle, bytes, 0, bytes.length, 0), (n) =>
          n === bytes.length ? Effect.void : Effect.fail(new Damaged("short write"))),
      (handle) => closeQuietly(fs, handle)
    ).pipe(
      Effect.zipRight(fs.rename(temp, path)),
      // Only a rename that happened ends this part well: any other end leaves the temp name to remove.
      Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Effect.ignore(fs.unlink(temp))))
    )
    if (!(yield* stillThere(fs, dir))) return yield* Effect.fail(new Damaged("the index directory was replaced"))
  })

/**
 * Removes the segment of the session file `base` of `dir` (a session deleted), when the index
 * directory is one to trust; best effort: a segment left is never used for another file.
 */
export const forget = (fs: FsService, dir: string, base: string): Effect.Effect<void> =>
  Effect.flatMap(indexDirectory(fs, dir, false), (index) =>
    index === undefined ? Effect.void : Effect.ignore(fs.unlink(segmentPath(index, base))))

/**
 * The lines of the session file at `path` at `places`, read through one descriptor that must be the
 * file `identity` names, each the bytes indexed (else undefined: the file changed since it was indexed).
 */
export const readLines = (
  fs: FsService,
  path: string,
  identity: Identity,
  places: ReadonlyArray<Place>
): Effect.Effect<Array<CandidateLine> | undefined> =>
  places.length === 0 ? Effect.succeed([]) : Effect.acquireUseRelease(
    fs.open(path, Flags.readNoFollow),
    (handle) =>
      Effect.gen(function*() {
        const out: Array<CandidateLine> = []
        for (const place of places) {
          // (A file shorter than the place fails the read: the session is not what was indexed.)
          const buffer = yield* readExactly(fs, handle, Buffer.allocUnsafe(place.length), place.order, () => "short" as const)
          // Each line must be the bytes indexed, whatever the file's times say.
          if (crc(buffer) !== place.crc) return undefined
          out.push({ order: place.order, text: bare(buffer.toString("utf8")) })
        }
        // Checked after the reads: a change during them shows in the times or the size.
        const stat = yield* fs.fstat(handle)
        return sameIdentity(identity, stat) ? out : undefined
      }),
    (handle) => closeQuietly(fs, handle)
  ).pipe(Effect.catchAll(() => Effect.succeed(undefined)))

/**
 * Whether the scan would hand over `text` for `pattern` (see `Search.Pattern`): a line escaping a
 * character, or one whose bytes hold every word in any case. Asked of the lines that did not decode,
 * so that a session is said unreadable for exactly the lines a scan finds.
 */
export const scanFinds = (pattern: Pattern, text: string): boolean => {
  if (text.includes(pattern.escape)) return true
  const subject = pattern.encoding === "latin1" ? Buffer.from(text, "utf8").toString("latin1") : text
  pattern.anchor.lastIndex = 0
  const found = pattern.anchor.test(subject)
  pattern.anchor.lastIndex = 0
  return found && pattern.others.every((other) => other.test(subject))
}

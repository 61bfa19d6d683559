/**
 * The search of an ASCII query's words in a session file's bytes, in any case (see
 * `Search.Pattern.folded`), and the buffers one search reads and folds its files in.
 *
 * A native byte search (`Buffer.indexOf`) runs several times faster than folding the bytes in
 * JavaScript, so the anchor word is looked for as it can be written: each case variant of a short
 * piece of it whose first byte is rare in the file (`zanzibar`: `za`, `Za`, `zA`, `ZA`), each place
 * found then checked against the whole word in any case. When the piece's first byte is common (a
 * native search stops at each of its places) the bytes are folded instead, four at a time, and
 * searched once for six bytes of the word from its rarest (a pattern that short is searched from
 * one place of its first byte to the next, faster here than a longer one), each place found then
 * checked against the whole word. Either way the bytes go a window of whole lines at a time (a word
 * never spans a line feed), so that the searches of a window find it in the processor's cache.
 */
import { Buffer } from "node:buffer"

const LF = 0x0a

/**
 * The buffers of one search, grown as needed and kept for its files: a file is read into `take`'s
 * buffer, the bytes or lines a scan folds go into another; reading and searching a directory then
 * leave no garbage behind. Each holds its bytes until its next use only.
 */
export class Buffers {
  private read = Buffer.allocUnsafeSlow(0)
  private bytes = Buffer.allocUnsafeSlow(0)
  private words = new Uint32Array(0)
  /** Counts of each byte in a sample of the file being scanned (see `planOf`). */
  readonly counts = new Uint32Array(256)

  /** A buffer of `size` bytes to read a file into (see `BufferOf`). */
  readonly take = (size: number): Buffer => {
    if (this.read.length < size) this.read = Buffer.allocUnsafeSlow(Math.ceil(size * 1.25))
    return this.read.subarray(0, size)
  }

  /** `source` from `from` to `to` with bit 5 of every byte set, in a buffer of these (valid until the next call). */
  fold(source: Buffer, from: number, to: number): Buffer {
    const length = to - from
    if (this.bytes.length < length) {
      // Whole 32-bit words, so that the fold goes four bytes at a time.
      this.bytes = Buffer.allocUnsafeSlow(Math.ceil((length * 1.25) / 4) * 4)
      this.words = new Uint32Array(this.bytes.buffer, this.bytes.byteOffset, this.bytes.length / 4)
    }
    const bytes = this.bytes
    const words = this.words
    source.copy(bytes, 0, from, to)
    const whole = length >>> 2
    for (let i = 0; i < whole; i++) words[i] = words[i]! | 0x20202020
    for (let i = whole << 2; i < length; i++) bytes[i] = bytes[i]! | 0x20
    return bytes.subarray(0, length)
  }
}

/** How the anchor is looked for: `auto` decides by the file's bytes; the others are for tests. */
export type Strategy = "auto" | "variants" | "fold"

/**
 * How the anchor word is looked for: each of `pieces` (the case variants of a piece of it, found at
 * `at` in it) in the bytes; or, when `folded`, the one piece (lower case) in the bytes folded.
 */
interface Plan {
  readonly at: number
  readonly pieces: ReadonlyArray<Buffer>
  readonly folded: boolean
}

const isLower = (byte: number): boolean => byte >= 0x61 && byte <= 0x7a

/** Every way `piece` (lower case ASCII) can be written in ASCII cases. */
const variantsOf = (piece: Buffer): Array<Buffer> => {
  let out = [Buffer.from(piece)]
  for (let j = 0; j < piece.length; j++) {
    if (!isLower(piece[j]!)) continue
    out = out.flatMap((v) => {
      const upper = Buffer.from(v)
      upper[j] = v[j]! - 0x20
      return [v, upper]
    })
  }
  return out
}

/** Bytes of a file counted to choose the piece: enough to be typical, few enough to cost nothing. */
const SAMPLE_BYTES = 32 * 1024
/** At most this many variants: each is a native search of the whole file. */
const MOST_VARIANTS = 4
/**
 * Above this share of the bytes (the piece's first byte, in either case), folding is the cheaper:
 * measured on agent sessions, a native search of four variants then costs what folding does.
 */
const MOST_SHARE = 1 / 100

/**
 * A piece of this many bytes at most is what the folded bytes are searched for: a native search of
 * a pattern this short goes from one place of its first byte to the next (a `memchr`), which for
 * agent sessions ran 1.3–2.5× faster than its search of a longer word (a Boyer-Moore-Horspool).
 */
const FOLDED_PIECE = 6

/**
 * How to look for `word` in `buf` from `start` to `end` (see `Plan`), by a sample of the file: the
 * variants of a piece starting at the word's byte rarest in it, as long as it has at most
 * `MOST_VARIANTS` variants (a digit has one case); or, when that byte is common, the folded bytes
 * for the `FOLDED_PIECE` bytes of the word from its rarest byte (or its whole when shorter).
 */
const planOf = (buf: Buffer, start: number, end: number, word: Buffer, counts: Uint32Array, strategy: Strategy): Plan => {
  counts.fill(0)
  const sampleEnd = Math.min(end, start + SAMPLE_BYTES)
  for (let i = start; i < sampleEnd; i++) counts[buf[i]!]!++
  const share = (j: number) => counts[word[j]!]! + (isLower(word[j]!) ? counts[word[j]! - 0x20]! : 0)
  // A piece of two bytes at least where the word has them: one byte returns to JavaScript at each place.
  let at = 0
  for (let j = 1; j < Math.max(1, word.length - 1); j++) if (share(j) < share(at)) at = j
  let length = 1
  let count = isLower(word[at]!) ? 2 : 1
  while (at + length < word.length && count * (isLower(word[at + length]!) ? 2 : 1) <= MOST_VARIANTS) {
    count *= isLower(word[at + length]!) ? 2 : 1
    length++
  }
  const sampled = sampleEnd - start
  const common = count > 1 && share(at) > sampled * (length === 1 ? MOST_SHARE / 10 : MOST_SHARE)
  if (strategy === "variants" || (strategy === "auto" && !common)) {
    return { at, pieces: variantsOf(word.subarray(at, at + length)), folded: false }
  }
  let from = 0
  for (let j = 1; j <= word.length - FOLDED_PIECE; j++) if (share(j) < share(from)) from = j
  return { at: from, pieces: [word.subarray(from, from + FOLDED_PIECE)], folded: true }
}

/** Whether `word` (lower case ASCII) is at `at` in `buf`, in any case (bit 5 set, as `Buffers.fold` does). */
const holdsAt = (buf: Buffer, at: number, word: Buffer): boolean => {
  for (let j = 0; j < word.length; j++) if ((buf[at + j]! | 0x20) !== word[j]) return false
  return true
}

/** Whether the line of `buf` from `from` to `to`, folded, holds each of `others`. */
const lineHolds = (buf: Buffer, from: number, to: number, others: ReadonlyArray<Buffer>, buffers: Buffers): boolean => {
  if (others.length === 0) return true
  const line = buffers.fold(buf, from, to)
  return others.every((word) => line.indexOf(word) >= 0)
}

/**
 * Bytes searched at a time: whole lines of about this many bytes (a longer line is one window), so
 * that the several searches of a window (each variant, the escape; or the fold, then its search)
 * find its bytes in the processor's cache.
 */
export const WINDOW_BYTES = 256 * 1024

/** The end of the window of whole lines from `from`: after the line feed ending the line at `from + WINDOW_BYTES`. */
const windowEnd = (buf: Buffer, from: number, end: number): number => {
  if (from + WINDOW_BYTES >= end) return end
  const feed = buf.indexOf(LF, from + WINDOW_BYTES - 1)
  return feed < 0 || feed >= end ? end : feed + 1
}

/**
 * The starts of the lines of `buf` between `start` (a line's start) and `end` (a line's end, or
 * the end of the last line) that hold every one of `words` (lower case ASCII, the anchor first) in
 * any case, or that hold `always` as it is; each once, in order.
 */
export const lineStarts = (
  buf: Buffer,
  start: number,
  end: number,
  words: ReadonlyArray<string>,
  always: string,
  buffers: Buffers,
  strategy: Strategy = "auto"
): Array<number> => {
  const [anchor, ...others] = words.map((word) => Buffer.from(word, "latin1"))
  const word = anchor!
  const escape = Buffer.from(always, "latin1")
  const plan = planOf(buf, start, end, word, buffers.counts, strategy)
  const found: Array<number> = []
  for (let from = start; from < end;) {
    const to = windowEnd(buf, from, end)
    const first = found.length
    if (plan.folded) foldedWindow(buf, from, to, word, plan.at, plan.pieces[0]!, others, buffers, found)
    else for (const variant of plan.pieces) variantWindow(buf, from, to, word, plan.at, variant, others, buffers, found)
    const searched = found.length
    const window = buf.subarray(from, to)
    for (let at = window.indexOf(escape); at >= 0;) {
      found.push(buf.lastIndexOf(LF, from + at) + 1)
      const feed = window.indexOf(LF, at)
      at = feed < 0 ? -1 : window.indexOf(escape, feed + 1)
    }
    // Several searches of the window each found lines in order: merged into one order, each line once.
    if (plan.pieces.length > 1 || found.length > searched) {
      const window = found.splice(first).sort((a, b) => a - b)
      for (let k = 0; k < window.length; k++) if (k === 0 || window[k] !== window[k - 1]) found.push(window[k]!)
    }
    from = to
  }
  return found
}

/** Pushes the lines of the window `from`..`to` of `buf` where `variant` is at `at` of `word` and the line holds `others`. */
const variantWindow = (
  buf: Buffer,
  from: number,
  to: number,
  word: Buffer,
  at: number,
  variant: Buffer,
  others: ReadonlyArray<Buffer>,
  buffers: Buffers,
  found: Array<number>
): void => {
  const window = buf.subarray(from, to)
  for (let hit = window.indexOf(variant, at); hit >= 0;) {
    const wordAt = from + hit - at
    if (wordAt + word.length > to || !holdsAt(buf, wordAt, word)) {
      hit = window.indexOf(variant, hit + 1)
      continue
    }
    const lineFrom = buf.lastIndexOf(LF, wordAt) + 1
    let lineTo = buf.indexOf(LF, wordAt)
    if (lineTo < 0 || lineTo > to) lineTo = to
    if (lineHolds(buf, lineFrom, lineTo, others, buffers)) found.push(lineFrom)
    // The line is decided: on to the next.
    hit = lineTo + 1 >= to ? -1 : window.indexOf(variant, lineTo + 1 - from + at)
  }
}

/**
 * Pushes the lines of the window `from`..`to` of `buf` that hold `word` and `others`, by a search of
 * the window folded (see `Buffers.fold`) for `piece`, at `at` in `word`.
 */
const foldedWindow = (
  buf: Buffer,
  from: number,
  to: number,
  word: Buffer,
  at: number,
  piece: Buffer,
  others: ReadonlyArray<Buffer>,
  buffers: Buffers,
  found: Array<number>
): void => {
  const folded = buffers.fold(buf, from, to)
  // In `folded` a line feed is no longer one (bit 5 makes it `*`): the lines are found in `buf`.
  for (let hit = folded.indexOf(piece, at); hit >= 0;) {
    const wordAt = hit - at
    if (wordAt + word.length > folded.length || folded.compare(word, 0, word.length, wordAt, wordAt + word.length) !== 0) {
      hit = folded.indexOf(piece, hit + 1)
      continue
    }
    const lineFrom = buf.lastIndexOf(LF, from + wordAt) + 1
    let lineTo = buf.indexOf(LF, from + wordAt)
    if (lineTo < 0 || lineTo > to) lineTo = to
    const line = folded.subarray(lineFrom - from, lineTo - from)
    if (others.every((other) => line.indexOf(other) >= 0)) found.push(lineFrom)
    hit = lineTo + 1 >= to ? -1 : folded.indexOf(piece, lineTo + 1 - from + at)
  }
}

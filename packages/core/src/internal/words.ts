/**
 * Words, as search sees them: the text an entry is searched by, cut into words
 * and folded to one case, the same way on every backend, so that an index made
 * by one program finds what the library's own matcher decides.
 *
 * A word is a run of letters, marks and digits (`\p{L}\p{M}\p{N}`); everything
 * else separates words. Two words are equal when they are equal code point by
 * code point after `fold`: a code point's lower case when that is one code point
 * and as ASCII as the code point itself (so `K` matches `k`, `Ä` matches `ä`, but
 * the Kelvin sign stays itself and `İ`, whose lower case is two code points, too).
 */

/** One code point of a word: a letter, a mark or a digit. */
export const WORD_CODE_POINT = /[\p{L}\p{M}\p{N}]/u

/** A run of letters, marks and digits. */
export const WORD = new RegExp(`${WORD_CODE_POINT.source}+`, "gu")

/** Longer words are indexed by their first this many code points (a PostgreSQL lexeme stays short). */
export const LEXEME_CODE_POINTS = 64

/** One code point folded to its case-insensitive form (see the module's comment). */
const foldCodePoint = (c: string): string => {
  const lower = c.toLowerCase()
  if (lower === c) return c
  // One code point, and ASCII exactly when the original is.
  if (lower.length > 2 || (lower.length === 2 && lower.codePointAt(0)! <= 0xffff)) return c
  return (c.codePointAt(0)! < 0x80) === (lower.codePointAt(0)! < 0x80) ? lower : c
}

const ASCII_UPPER = /[A-Z]/g
const NON_ASCII = /[^\u0000-\u007f]/

/** A word folded to its case-insensitive form. */
export const fold = (word: string): string => {
  if (!NON_ASCII.test(word)) return word.replace(ASCII_UPPER, (c) => String.fromCharCode(c.charCodeAt(0) + 32))
  let out = ""
  for (const c of word) out += foldCodePoint(c)
  return out
}

/** A word as an index keeps it: folded, at most `LEXEME_CODE_POINTS` code points. */
export const lexemeOf = (folded: string): string => {
  if (folded.length <= LEXEME_CODE_POINTS) return folded
  let end = 0
  for (let n = 0; n < LEXEME_CODE_POINTS && end < folded.length; n++) end += folded.codePointAt(end)! > 0xffff ? 2 : 1
  return folded.slice(0, end)
}

/** One word of a text: folded, and where it is (UTF-16 offsets into the text). */
export interface Word {
  readonly word: string
  readonly start: number
  readonly end: number
}

/** The words of `text`, in order. */
export const wordsOf = (text: string): Array<Word> => {
  const out: Array<Word> = []
  for (const m of text.matchAll(WORD)) out.push({ word: fold(m[0]), start: m.index, end: m.index + m[0].length })
  return out
}

/** Whether `text` is ASCII only: then its words are runs of `[a-z0-9]` once it is lower-cased whole. */
export const isAscii = (text: string): boolean => !NON_ASCII.test(text)

const ASCII_WORD = /[a-z0-9]+/g

/** The distinct lexemes of `text`. */
export const lexemesOf = (text: string): Set<string> => {
  const out = new Set<string>()
  // ASCII text (most of what agents write): lower-cased in one call, its words found by one native scan.
  if (isAscii(text)) {
    for (const word of text.toLowerCase().match(ASCII_WORD) ?? []) out.add(lexemeOf(word))
    return out
  }
  for (const m of text.matchAll(WORD)) out.add(lexemeOf(fold(m[0])))
  return out
}

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]

/** The two ASCII digits at `i` as a number, or -1. */
const twoDigits = (s: string, i: number): number => {
  const a = s.charCodeAt(i) - 48
  const b = s.charCodeAt(i + 1) - 48
  return a >= 0 && a <= 9 && b >= 0 && b <= 9 ? a * 10 + b : -1
}

const inRange = (n: number, max: number): boolean => n >= 0 && n <= max

/**
 * True for exactly the strings `Date.prototype.toISOString()` writes (four-digit
 * years): `YYYY-MM-DDTHH:mm:ss.sssZ` with every field in range and the days of
 * each month of the proleptic Gregorian calendar. Checked by hand, without a
 * Date, because the loader checks one per entry.
 */
export const isCanonicalTimestamp = (s: string): boolean => {
  if (
    s.length !== 24 || s.charCodeAt(4) !== 0x2d || s.charCodeAt(7) !== 0x2d || s.charCodeAt(10) !== 0x54 ||
    s.charCodeAt(13) !== 0x3a || s.charCodeAt(16) !== 0x3a || s.charCodeAt(19) !== 0x2e || s.charCodeAt(23) !== 0x5a
  ) return false
  const century = twoDigits(s, 0)
  const yearOfCentury = twoDigits(s, 2)
  const month = twoDigits(s, 5)
  const day = twoDigits(s, 8)
  const lastMsDigit = s.charCodeAt(22) - 48
  if (
    century < 0 || yearOfCentury < 0 || twoDigits(s, 20) < 0 || lastMsDigit < 0 || lastMsDigit > 9 ||
    month < 1 || month > 12 || day < 1 ||
    !inRange(twoDigits(s, 11), 23) || !inRange(twoDigits(s, 14), 59) || !inRange(twoDigits(s, 17), 59)
  ) return false
  const year = century * 100 + yearOfCentury
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)
}

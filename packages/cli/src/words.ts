/**
 * The library's words for what is wrong with a value, as a user reads them: Schema's paths and
 * types (`["content"][0]["type"] Expected "text" | "file", actual "txt"`) become the field and
 * the fault (`content[0].type: expected "text" | "file", got "txt"`).
 */

/**
 * A Schema path as a reader writes it: `toolCalls[0].arguments`.
 *
 * @since 0.2.0
 * @category messages
 */
export const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((key, i) => (typeof key === "number" ? `[${key}]` : `${i === 0 ? "" : "."}${String(key)}`)).join("")

/** At most this many characters of a value a message holds are quoted in an error. */
const QUOTED = 60

/**
 * Schema's words for one fault of a message, in a reader's: types by their names, the value found cut short.
 *
 * @since 0.2.0
 * @category messages
 */
export const plainIssue = (text: string): string => {
  const named = text.replaceAll("{ readonly [x: string]: unknown }", "a JSON object").replaceAll("minLength(1)", "a non-empty string")
  const mismatch = /^Expected ([\s\S]*), actual ([\s\S]*)$/.exec(named)
  if (mismatch === null) return named
  const actual = mismatch[2]!.length > QUOTED ? `${mismatch[2]!.slice(0, QUOTED)}…` : mismatch[2]!
  return `expected ${mismatch[1]}, got ${actual}`
}

/** A Schema path as a reader writes it: `["content"][0]["type"]` → `content[0].type`. */
const dotted = (path: string): string =>
  [...path.matchAll(/\["((?:[^"\\]|\\.)*)"\]|\[(\d+)\]/g)]
    .map((m, i) => (m[2] !== undefined ? `[${m[2]}]` : `${i === 0 ? "" : "."}${m[1]}`))
    .join("")

/** A Schema path, then what follows it: `["content"][0]["type"] Expected …`. */
const BRACKETS = /^((?:\[(?:"(?:[^"\\]|\\.)*"|\d+)\])+)\s*([\s\S]*)$/

/**
 * A Schema failure in a reader's words: the field at fault and what is wrong there, instead of
 * the union of every shape a record may have (`{ readonly type: "entry"; … } └─ ["version"] └─ is
 * missing` → `version is missing`). Text that holds none is left as it is.
 *
 * @since 0.2.0
 * @category messages
 */
export const schemaWords = (reason: string): string => {
  const parts = reason.split(/\s*└─\s*/)
  const steps = parts.slice(0, -1).flatMap((part) => {
    const m = BRACKETS.exec(part)
    return m !== null && m[2] === "" ? [dotted(m[1]!)] : []
  })
  let fault = parts.at(-1)!
  const last = BRACKETS.exec(fault)
  if (last !== null) {
    steps.push(dotted(last[1]!))
    fault = last[2]!
  }
  if (steps.length === 0) return reason
  const at = steps.join(".").replace(/\.\[/g, "[")
  // What the library said before the Schema's text (`line "x", converted: `) stays.
  const first = parts[0]!
  const prefix = parts.length > 1 && first.includes("{") ? first.slice(0, first.indexOf("{")) : ""
  return prefix + (/^is missing\b/.test(fault) ? `${at} ${fault}` : `${at}: ${plainIssue(fault)}`)
}

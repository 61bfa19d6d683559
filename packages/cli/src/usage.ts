/**
 * Wrong usage in a user's words: the argument parser's message on one line, what was meant
 * where a word is close to a command or an option (`--usr` → `--user`, `expor` → `export`),
 * and where to read more. The parser still decides what is valid; this only words its verdict.
 */
import type * as HelpDoc from "@effect/cli/HelpDoc"
import type * as Span from "@effect/cli/HelpDoc/Span"

/**
 * An option of a command, as its help's usage line shows it.
 *
 * @since 0.2.0
 * @category models
 */
export interface OptionName {
  readonly name: string
  /** What it takes (`TEXT`, `1 | 2`), or undefined for a flag. */
  readonly value: string | undefined
}

/**
 * The options a command's help shows (`--user TEXT`, `--root`), each once: an option named
 * with a value anywhere takes one (a description may name another option without it).
 *
 * @since 0.2.0
 * @category usage
 */
export const optionsOf = (help: string): Array<OptionName> => {
  const found = new Map<string, string | undefined>()
  for (const m of help.matchAll(/(--[a-z][a-z-]*)(?: ([A-Z][A-Z_]*|[\w.-]+(?: \| [\w.-]+)+))?/g)) {
    if (found.get(m[1]!) === undefined) found.set(m[1]!, m[2])
  }
  return [...found].map(([name, value]) => ({ name, value }))
}

/**
 * A help page's words without its layout: each block on a line of its own, each span's text as
 * written. What `optionsOf` reads; the printer's layout of the same page cost a start of the
 * command more time than everything else it did.
 *
 * @since 0.2.0
 * @category usage
 */
export const plainText = (doc: HelpDoc.HelpDoc): string => {
  const span = (s: Span.Span): string => {
    switch (s._tag) {
      case "Text":
      case "URI":
        return s.value
      case "Highlight":
      case "Strong":
      case "Weak":
        return span(s.value)
      case "Sequence":
        return span(s.left) + span(s.right)
    }
  }
  switch (doc._tag) {
    case "Empty":
      return ""
    case "Header":
    case "Paragraph":
      return `${span(doc.value)}\n`
    case "DescriptionList":
      return doc.definitions.map(([term, described]) => `${span(term)}\n${plainText(described)}`).join("")
    case "Enumeration":
      return doc.elements.map(plainText).join("")
    case "Sequence":
      return plainText(doc.left) + plainText(doc.right)
  }
}

/**
 * The edit distance of `a` and `b` (insertions, deletions, substitutions, and swaps of neighbours).
 *
 * @since 0.2.0
 * @category usage
 */
export const distance = (a: string, b: string): number => {
  const d: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)))
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1)
    }
  }
  return d[a.length]![b.length]!
}

/**
 * The candidates nearest to `word`: those it starts (`--mess` → `--message`, `--message-file`),
 * else those within a few edits (about one in three letters), nearest first; none when nothing
 * is close enough to be what was meant.
 *
 * @since 0.2.0
 * @category usage
 */
export const nearest = (word: string, candidates: ReadonlyArray<string>): Array<string> => {
  const bare = (s: string) => s.replace(/^-+/, "").toLowerCase()
  const w = bare(word)
  if (w === "") return []
  const started = candidates.filter((c) => bare(c).startsWith(w) && bare(c) !== w)
  if (started.length > 0) return started.slice(0, 3)
  const limit = Math.max(1, Math.floor(w.length / 3))
  return candidates
    .map((c) => ({ c, d: distance(w, bare(c)) }))
    .filter(({ d }) => d <= limit)
    .sort((x, y) => x.d - y.d)
    .slice(0, 3)
    .map(({ c }) => c)
}

/**
 * `; did you mean X?` (or `X or Y`), or nothing.
 *
 * @since 0.2.0
 * @category usage
 */
export const didYouMean = (word: string, candidates: ReadonlyArray<string>): string => {
  const found = nearest(word, candidates)
  return found.length === 0 ? "" : `; did you mean ${found.join(" or ")}?`
}

/**
 * What a usage error is about: the command line's words and the commands, with each one's options.
 *
 * @since 0.2.0
 * @category models
 */
export interface Context {
  readonly args: ReadonlyArray<string>
  /** The names of the commands. */
  readonly commands: ReadonlyArray<string>
  /** A command's options (worked out when asked: only the command at hand needs them). */
  readonly options: (command: string) => ReadonlyArray<OptionName>
  /** The options every command takes (`--help`, `--verbose`, …). */
  readonly builtIns: ReadonlyArray<string>
}

/**
 * The command of a command line: its first word that is not an option, when it names one.
 *
 * @since 0.2.0
 * @category usage
 */
export const commandOf = (context: Pick<Context, "args" | "commands">): string | undefined => {
  const first = context.args.find((arg) => !arg.startsWith("-"))
  return first !== undefined && context.commands.includes(first) ? first : undefined
}

/**
 * Wrong usage found before the parser runs, which the parser would word badly or let through:
 * a known option that takes a value given without one (the parser would take the option's name
 * for a PATH, or call it unknown). Undefined when there is none.
 *
 * @since 0.2.0
 * @category usage
 */
export const missingValue = (context: Context): string | undefined => {
  const command = commandOf(context)
  if (command === undefined) return undefined
  const options = context.options(command)
  const end = context.args.indexOf("--")
  const args = end < 0 ? context.args : context.args.slice(0, end)
  for (let i = 0; i < args.length; i++) {
    const option = options.find((o) => o.name === args[i])
    if (option?.value === undefined) continue
    const next = args[i + 1]
    if (next === undefined || (next.startsWith("--") && next !== "-")) {
      return `${option.name} needs a value (${command} ${option.name} ${option.value}); see session-tree ${command} --help`
    }
    i++
  }
  return undefined
}

/**
 * The parser's verdict (`text`, the words of its message) as one line of usage, with what was likely meant.
 *
 * @since 0.2.0
 * @category usage
 */
export const explain = (text: string, context: Context): string => {
  const said = text.replace(/\s+/g, " ").trim()
  const command = commandOf(context)
  const help = command === undefined ? "session-tree --help" : `session-tree ${command} --help`
  if (/^Invalid subcommand/.test(said)) {
    const word = context.args.find((arg) => !arg.startsWith("-")) ?? ""
    const names = context.commands
    const meant = didYouMean(word, names)
    // The whole list only when nothing is close to what was typed; the list is then what the
    // help would add, and a pointer to it would push the line past what a terminal shows.
    return `session-tree has no command ${JSON.stringify(word)}${meant === "" ? ` (the commands: ${names.join(", ")})` : `${meant} (see session-tree --help)`}`
  }
  const unknown = /^Received unknown argument: '(.*)'$/.exec(said)?.[1] ?? /^The flag '([^']*)' is not recognized/.exec(said)?.[1]
  if (unknown !== undefined) {
    if (!unknown.startsWith("-")) return `${command ?? "session-tree"} takes no argument ${JSON.stringify(unknown)} here (see ${help})`
    const names = [...(command === undefined ? [] : context.options(command).map((o) => o.name)), ...context.builtIns]
    return `${command ?? "session-tree"} has no option ${unknown}${didYouMean(unknown, names)} (see ${help})`
  }
  const own = command === undefined ? [] : context.options(command)
  const required = /^Expected to find option: '([^']*)'$/.exec(said)?.[1]
  if (required !== undefined) {
    const option = own.find((o) => o.name === required)
    return `${command ?? "session-tree"} needs ${required}${option?.value === undefined ? "" : ` ${option.value}`} (see ${help})`
  }
  const argument = /^Missing argument <([^>]*)>$/.exec(said)?.[1]
  if (argument !== undefined) return `${command ?? "session-tree"} needs ${argument} (see ${help})`
  const cases = /^Expected one of the following cases: (.*)$/.exec(said)?.[1]
  if (cases !== undefined) {
    const allowed = cases.split(/,\s*/)
    const i = context.args.findIndex((arg, k) => own.some((o) => o.name === arg && o.value?.includes("|")) && !allowed.includes(context.args[k + 1] ?? ""))
    if (i >= 0) return `${context.args[i]} takes ${allowed.join(", ")}, not ${JSON.stringify(context.args[i + 1] ?? "")} (see ${help})`
  }
  return `${said} (see ${help})`
}

/**
 * `session-tree import FILE`: a session file of this project, a Pi session, a Claude Code
 * transcript or a Codex rollout, its format detected from its content (`--from` forces one),
 * stored as new sessions: the file's own, and one per subagent whose lines it holds
 * (`docs/import.md`). What the conversion left out or kept whole is reported on stderr by kind; a
 * torn last line is left out and reported; damage elsewhere refuses the import whole unless
 * `--skip-damaged`. Every error about the file names it and its line.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type * as Import from "@session-tree/core/Import"
import { printable, visible } from "@session-tree/view/Text"
import * as Effect from "effect/Effect"
import { db, formatVersion, json } from "../options.js"

/** Counts by kind, in the order first met: `3 progress, 1 system:turn_duration`. */
const byKind = (counts: Readonly<Record<string, number>>): string =>
  Object.entries(counts).map(([kind, n]) => `${n} ${printable(kind)}`).join(", ")

/**
 * What an import reports besides the IDs: what it did not store or kept whole, a torn last line, each damaged line.
 *
 * @since 0.2.0
 * @category commands
 */
export const reportLines = (imported: {
  readonly skipped: Import.Imported["skipped"]
  readonly kept: Import.Imported["kept"]
  readonly torn?: Import.TornLine | undefined
  readonly damaged: Import.Imported["damaged"]
  readonly pending: number
}): Array<string> => {
  const lines: Array<string> = []
  if (Object.keys(imported.skipped).length > 0) lines.push(`skipped ${byKind(imported.skipped)}`)
  if (Object.keys(imported.kept).length > 0) lines.push(`kept whole ${byKind(imported.kept)}`)
  if (imported.torn !== undefined) {
    lines.push(`left out the last line (line ${imported.torn.line}, ${imported.torn.bytes} bytes): it is cut short, as a line still being written is`)
  }
  for (const d of imported.damaged) lines.push(`damaged line ${d.line} (${d.bytes} bytes) kept aside: ${d.code} ${visible(d.reason)}`)
  if (imported.pending > 0) lines.push(`${imported.pending} lines wait for what they belong to to be complete`)
  return lines
}

/**
 * The formats `--from` names.
 *
 * @since 0.2.0
 * @category options
 */
export const FROM = ["session-tree", "pi", "claude", "codex"] as const

/**
 * `session-tree import`: another agent's transcript as a session (`docs/import.md`).
 *
 * @since 0.2.0
 * @category commands
 */
export const importCommand = Command.make(
  "import",
  {
    file: Args.text({ name: "FILE" }).pipe(Args.withDescription("the file to import")),
    to: Options.text("to").pipe(
      Options.withPseudoName("PATH"),
      Options.optional,
      Options.withDescription("where the new session goes (required on files; subagents' sessions go beside it; with --db: the header's ID)")
    ),
    from: Options.choice("from", FROM).pipe(
      Options.optional,
      Options.withDescription("the format of FILE: this project's, a Pi coding-agent session, a Claude Code transcript or a Codex rollout (default: detected from its content)")
    ),
    version: formatVersion("the new session's format (default: FILE's for session-tree, 2 otherwise); 1 converts a Pi session to the course format, refusing what it cannot hold"),
    lossy: Options.boolean("lossy").pipe(Options.withDescription("pi: version 1, dropping what it cannot hold (images, thinking, summaries) instead of refusing")),
    keepAll: Options.boolean("keep-all").pipe(Options.withDescription("store every line that has no place in version 2 as a custom entry <format>:<kind> instead of counting it")),
    skipDamaged: Options.boolean("skip-damaged").pipe(
      Options.withDescription("import around damaged lines, each kept aside in the session (its number, bytes and why) and reported, instead of refusing the file")
    ),
    json,
    db
  },
  // The importers and what stores their sessions are loaded only when an import runs: every other
  // command starts without evaluating them (`importRun.ts`).
  (args) => Effect.flatMap(Effect.promise(() => import("./importRun.js")), (run) => run.importFile(args))
).pipe(
  Command.withDescription(
    "Store FILE (this project's session with its blobs, a Pi session, a Claude Code transcript or a Codex rollout; the format read from its content) as new sessions that keep its IDs: its own, then its subagents'; prints their IDs."
  )
)

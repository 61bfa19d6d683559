/** The options several commands share, defined once: `--json`, the backend (`--db`, `--files`), `--format-version`. */
import * as HelpDoc from "@effect/cli/HelpDoc"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as Either from "effect/Either"
import * as Backend from "./Backend.js"

export const json = Options.boolean("json").pipe(Options.withDescription("print one JSON object on stdout"))

// Parsed straight into the backend they name, so each command chooses it once (the rule: Backend.ts).
export const db = Options.all({
  db: Options.text("db").pipe(
    Options.withPseudoName("URL"),
    Options.optional,
    Options.withDescription("a PostgreSQL database (default: $SESSION_TREE_DB); session paths are then session IDs; \"\" means files")
  ),
  files: Options.boolean("files").pipe(Options.withDescription("use session files, whatever $SESSION_TREE_DB says"))
}).pipe(
  Options.mapEffect((choice) => Either.mapLeft(Backend.choose(choice), (reason) => ValidationError.invalidValue(HelpDoc.p(reason))))
)

/** `--format-version 1|2`: a format version (`--version` prints the command's own). */
export const formatVersion = (description: string) =>
  Options.choice("format-version", ["1", "2"]).pipe(
    Options.map((v) => (v === "1" ? 1 : 2) as 1 | 2),
    Options.optional,
    Options.withDescription(description)
  )

/** The options several commands share, defined once: `--json`, the backend (`--db`, `--files`), `--format-version`. */
import * as Options from "@effect/cli/Options"
import * as Backend from "./Backend.js"

/**
 * `--json`: one JSON object on stdout instead of text.
 *
 * @since 0.2.0
 * @category options
 */
export const json = Options.boolean("json").pipe(Options.withDescription("print one JSON object on stdout"))

/**
 * `--db URL` and `--files`, parsed straight into the backend they name (the rule: Backend.ts).
 *
 * @since 0.2.0
 * @category options
 */
export const db = Backend.option

/**
 * `--format-version 1|2`: a format version (`--version` prints the command's own).
 *
 * @since 0.2.0
 * @category options
 */
export const formatVersion = (description: string) =>
  Options.choice("format-version", ["1", "2"]).pipe(
    Options.map((v) => (v === "1" ? 1 : 2) as 1 | 2),
    Options.optional,
    Options.withDescription(description)
  )

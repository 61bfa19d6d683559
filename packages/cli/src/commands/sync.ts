/**
 * `session-tree sync SOURCE… --to DIR | --db URL [--watch]`: every transcript under the sources
 * (Claude Code projects, Codex sessions, Pi sessions) kept as one session each, in DIR or the
 * database (`docs/sync.md`). Prints what each round changed; a source that changed where it was
 * already imported, or could not be synced, is reported on stderr with its code and the command
 * exits 1 once every other source is synced. `--watch` keeps following until interrupted.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import { db, json } from "../options.js"

// Sync.QUIET_MS / 1000 and SyncFiles.STATE_FILE, which the help states; a test holds them equal. Importing
// those modules here would evaluate the sync and its importers at every start of the command.
const QUIET_SECONDS = 10
const STATE_FILE = ".session-tree-sync"

const quietOption = Options.integer("quiet").pipe(
  Options.withPseudoName("SECONDS"),
  Options.optional,
  Options.withDescription(`how long a source must be unchanged for a response whose blocks may still arrive to be stored (default: ${QUIET_SECONDS})`)
)

/**
 * `session-tree sync`: every transcript under the sources, imported or brought up to date
 * (`docs/sync.md`).
 *
 * @since 0.2.0
 * @category commands
 */
export const syncCommand = Command.make(
  "sync",
  {
    sources: Args.text({ name: "SOURCE" }).pipe(Args.atLeast(1), Args.withDescription("a transcript, or a directory of them (walked recursively)")),
    to: Options.text("to").pipe(Options.withPseudoName("DIR"), Options.optional, Options.withDescription("the directory of the sessions (required on files)")),
    state: Options.text("state").pipe(
      Options.withPseudoName("FILE"),
      Options.optional,
      Options.withDescription(`where the sync remembers what it synced (default: DIR/${STATE_FILE}; with --db: a file under $XDG_STATE_HOME/session-tree)`)
    ),
    keepAll: Options.boolean("keep-all").pipe(Options.withDescription("store every line that has no place in version 2 as a custom entry <format>:<kind>")),
    skipDamaged: Options.boolean("skip-damaged").pipe(Options.withDescription("sync around damaged lines, each kept aside in the session and reported")),
    quiet: quietOption,
    watch: Options.boolean("watch").pipe(Options.withDescription("keep following the sources until interrupted (Ctrl-C)")),
    json,
    db
  },
  // The sync, its importers and its watcher are loaded only when a sync runs (`syncRun.ts`).
  (args) => Effect.flatMap(Effect.promise(() => import("./syncRun.js")), (run) => run.sync(args))
).pipe(
  Command.withDescription(
    "Keep every transcript under the SOURCEs (Claude Code, Codex, Pi) as one session each in DIR or the database: a rerun appends only what is new; --watch keeps following."
  )
)

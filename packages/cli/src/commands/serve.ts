/**
 * `session-tree serve [--dir DIR | --db URL] [--port N] [--host H]`: the sessions of a
 * directory or a database in a browser, read-only, live (`@session-tree/server`,
 * `docs/serve.md`). The first line printed is the URL to open (with the token when
 * the server needs one); the command runs until it is interrupted (SIGINT, SIGTERM),
 * then stops cleanly: no new connections, live pages told, connections closed.
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Backend from "../Backend.js"

/**
 * `--dir DIR`: a directory of session files (files only).
 *
 * @since 0.2.0
 * @category options
 */
export const dirOption = Options.text("dir").pipe(
  Options.withPseudoName("DIR"),
  Options.optional,
  Options.withDescription("the directory whose *.jsonl sessions are used (default: .)")
)

/**
 * A directory with --db is wrong usage: a database holds one set of sessions.
 *
 * @since 0.2.0
 * @category commands
 */
export const directoryOf = (db: Backend.Backend, dir: Option.Option<string>): Effect.Effect<string | undefined, Backend.UsageError> =>
  Option.isSome(dir) && db._tag === "Database"
    ? Effect.fail(new Backend.UsageError({ reason: "--dir applies to session files; with --db the database's sessions are used" }))
    : Effect.succeed(Option.getOrUndefined(dir))

/**
 * `session-tree serve`: the sessions as pages in a browser (`docs/serve.md`).
 *
 * @since 0.2.0
 * @category commands
 */
export const serve = Command.make(
  "serve",
  {
    dir: dirOption,
    db: Backend.option,
    port: Options.integer("port").pipe(Options.withPseudoName("N"), Options.withDefault(7862), Options.withDescription("the port to listen on; 0 takes any free port (default: 7862)")),
    host: Options.text("host").pipe(
      Options.withPseudoName("HOST"),
      Options.withDefault("127.0.0.1"),
      Options.withDescription("the address to listen on (default: 127.0.0.1); any other needs the printed token on every request")
    )
  },
  ({ db, dir, host, port }) =>
    Effect.gen(function*() {
      const directory = yield* directoryOf(db, dir)
      if (!Number.isSafeInteger(port) || port < 0 || port > 65_535) return yield* new Backend.UsageError({ reason: `--port ${port} is not a port (0 to 65535)` })
      // The server and the HTTP stack under it are loaded only when serve runs: every other command starts without them.
      const Server = yield* Effect.promise(() => import("@session-tree/server/Server"))
      yield* Backend.run(db, Effect.scoped(Effect.gen(function*() {
        const running = yield* Server.serve({
          backend: db._tag === "Files" ? "files" : "database",
          directory,
          host,
          port,
          describe: Backend.describe(db)
        })
        yield* Console.log(running.url)
        yield* Console.error(
          `serving ${db._tag === "Files" ? directory ?? "." : Backend.describe(db)} read-only` +
            `${running.token === undefined ? "" : "; every request needs the token in the address above"}; stop it with Ctrl-C`
        )
        return yield* Effect.never
      })), directory)
    })
).pipe(Command.withDescription("Serve the sessions in a browser (list, search, live pages), read-only; prints the URL to open on its first line."))

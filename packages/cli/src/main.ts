/** Entry point of the `session-tree` command: runs one command line and exits with its code. */
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { run } from "./Cli.js"

NodeRuntime.runMain(
  run(process.argv).pipe(
    Effect.flatMap((code) => Effect.sync(() => (process.exitCode = code))),
    Effect.provide(NodeContext.layer)
  ),
  {
    // `run` prints every error itself (code first, no stack trace) and never fails; only
    // an interruption (Ctrl-C) ends it otherwise, with the shell's code for SIGINT.
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
  }
)

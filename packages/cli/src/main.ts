/** Entry point of the `session-tree` command: runs one command line and exits with its code. */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Terminal from "@effect/platform/Terminal"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { run } from "./Cli.js"

// Help and errors respect a pipe: no colour codes when the stream is not a terminal, or NO_COLOR is set.
const ANSI = /\x1b\[[0-9;]*[A-Za-z]/g
const noColor = process.env["NO_COLOR"] !== undefined && process.env["NO_COLOR"] !== ""
const plain = (stream: NodeJS.WriteStream, write: (...args: Array<unknown>) => void) =>
  stream.isTTY === true && !noColor ? write : (...args: Array<unknown>) => write(...args.map((a) => (typeof a === "string" ? a.replace(ANSI, "") : a)))
console.log = plain(process.stdout, console.log.bind(console))
console.info = plain(process.stdout, console.info.bind(console))
console.error = plain(process.stderr, console.error.bind(console))
console.warn = plain(process.stderr, console.warn.bind(console))

// A reader of stdout that goes away (`| head -1`) ends the command quietly, as `cat` and `git`
// end: every command prints to stdout only after its work is done, so nothing is left half done,
// and the exit is 0. Any other failure to write stdout is a failure of the command. A reader of
// stderr that goes away stops nothing: the command's work and its exit code stay what they are.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code === "EPIPE") process.exit(0)
  process.stderr.write(`SESSION_IO cannot write the output: ${error.message}\n`)
  process.exit(1)
})
process.stderr.on("error", () => {})

// What the argument parser needs, and no more: every argument is text, so its file system is never
// used; only --wizard reads from the terminal, and only then is Node's terminal (readline) loaded.
const terminal = process.argv.includes("--wizard")
  ? Layer.unwrapEffect(Effect.map(Effect.promise(() => import("@effect/platform-node/NodeTerminal")), (m) => m.layer))
  : Layer.succeed(Terminal.Terminal, Terminal.Terminal.of({
    columns: Effect.sync(() => process.stdout.columns ?? 80),
    rows: Effect.sync(() => process.stdout.rows ?? 24),
    isTTY: Effect.sync(() => process.stdout.isTTY === true),
    readInput: Effect.dieMessage("the terminal is read only with --wizard"),
    readLine: Effect.dieMessage("the terminal is read only with --wizard"),
    display: (text) => Effect.sync(() => void process.stdout.write(text))
  }))

NodeRuntime.runMain(
  run(process.argv).pipe(
    Effect.flatMap((code) => Effect.sync(() => (process.exitCode = code))),
    Effect.provide(Layer.mergeAll(FileSystem.layerNoop({}), NodePath.layer, terminal))
  ),
  {
    // `run` prints every error itself (code first, no stack trace) and never fails; only
    // an interruption (Ctrl-C) ends it otherwise, with the shell's code for SIGINT.
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
  }
)

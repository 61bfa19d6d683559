/** Entry point of the `session-tree` command: runs one command line and exits with its code. */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
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

NodeRuntime.runMain(
  run(process.argv).pipe(
    Effect.flatMap((code) => Effect.sync(() => (process.exitCode = code))),
    // What the argument parser needs (files for --help completions, paths, a terminal for --wizard),
    // not the whole NodeContext, whose other services cost start-up time for nothing here.
    Effect.provide(Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer))
  ),
  {
    // `run` prints every error itself (code first, no stack trace) and never fails; only
    // an interruption (Ctrl-C) ends it otherwise, with the shell's code for SIGINT.
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
  }
)

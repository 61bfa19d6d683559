/**
 * `npm test` after the documentation check: the type check and the tests at once, then both
 * verdicts. The type check is one single-threaded process that reads no test's output, so on two
 * cores it need not hold the tests up for the minute it takes on a busy machine; its messages are
 * printed after the tests' report, and the run fails when either fails.
 *
 * The tests run in two vitest workers (vitest's default on two cores is one): most test files wait
 * on child processes, the disk, PostgreSQL or Chromium, so a second worker uses what one leaves.
 * `--no-isolate` lets a worker run every file of a project in turn with the modules it loaded:
 * the projects' own `isolate: false` stops vitest resetting modules between files, but without the
 * pool's it starts a fresh process for each file, which loaded Effect and the libraries anew.
 * Arguments are passed to vitest (`npm test -- --project file`).
 *
 * Usage: node scripts/test.mjs [vitest arguments…]
 */
import { spawn } from "node:child_process"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const bin = (...parts) => Path.join(root, "node_modules", ...parts)

const children = new Set()

/** Runs Node on `args`; resolves with its exit code (128 + the signal's number when a signal ended it) and what it printed, when captured. */
const run = (args, capture) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: capture ? ["ignore", "pipe", "pipe"] : "inherit" })
    children.add(child)
    let output = ""
    if (capture) {
      child.stdout.on("data", (d) => (output += d))
      child.stderr.on("data", (d) => (output += d))
    }
    child.on("error", reject)
    child.on("close", (code, signal) => {
      children.delete(child)
      resolve({ code: code ?? 128 + (signal === "SIGINT" ? 2 : signal === "SIGTERM" ? 15 : 9), output })
    })
  })

// Ctrl-C or a CI timeout ends both, so that neither outlives the run.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal)
  })
}

const typeCheck = run([bin("typescript", "bin", "tsc"), "-p", "tsconfig.json", "--noEmit"], true)
const tests = run([bin("vitest", "vitest.mjs"), "run", "--maxWorkers=2", "--minWorkers=1", "--no-isolate", ...process.argv.slice(2)], false)

const [checked, tested] = await Promise.all([typeCheck, tests])
if (checked.code === 0) {
  process.stdout.write("\ntype check (tsc -p tsconfig.json --noEmit): passed\n")
} else {
  process.stdout.write(`\ntype check (tsc -p tsconfig.json --noEmit): FAILED (exit ${checked.code})\n${checked.output}\n`)
}
process.exitCode = tested.code !== 0 ? tested.code : checked.code

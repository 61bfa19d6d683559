/**
 * 8. Start-up of the command: whole processes, `session-tree verify` on a small
 * session against `node -e 0`, run alternately in the same rounds. The command
 * is built first from the current sources (`packages/cli/scripts/build.mjs`)
 * and run through its installed entry point, `bin/session-tree.cjs`, with the
 * code cache in a directory of this run (made by the warm-up rounds, as a
 * user's first run makes it), and once more without the cache; `--version`
 * shows what parsing a command line costs before any command runs. Beside
 * them, the library alone reading the same session (`startupFloor.ts`), bundled
 * and loaded the same way: the floor of `verify`, whatever the command does.
 * Twice: in this process's environment, and in a clean one.
 */
import { execFileSync, spawn } from "node:child_process"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { conversation, ourFile } from "../data.js"
import { rounds, type Row, summarize } from "../harness.js"

export interface StartupOptions {
  readonly rounds: number
  readonly warmup: number
}

const cli = fileURLToPath(new URL("../../../cli/", import.meta.url))
const floorEntry = fileURLToPath(new URL("../startupFloor.ts", import.meta.url))
const BASELINE = "node -e 0"

/** Runs a process to its end; rejects unless it exits 0. */
const exec = (args: ReadonlyArray<string>, env: NodeJS.ProcessEnv): Promise<void> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env, stdio: ["ignore", "ignore", "pipe"] })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()))
    child.on("error", reject)
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${args.join(" ")} exited ${code}: ${stderr}`))))
  })

export const benchStartup = async (options: StartupOptions, dir: string): Promise<Array<Row>> => {
  execFileSync(process.execPath, [Path.join(cli, "scripts", "build.mjs")], { stdio: "inherit" })
  const bin = Path.join(cli, "bin", "session-tree.cjs")
  // The floor: its own bundle, started by a copy of the command's loader (which loads ../dist/session-tree.cjs).
  const floor = Path.join(dir, "floor")
  execFileSync(process.execPath, [Path.join(cli, "scripts", "build.mjs"), Path.join(floor, "dist"), "--entry", floorEntry], { stdio: "inherit" })
  NFS.mkdirSync(Path.join(floor, "bin"))
  NFS.copyFileSync(bin, Path.join(floor, "bin", "session-tree.cjs"))
  const floorBin = Path.join(floor, "bin", "session-tree.cjs")
  const session = Path.join(dir, "small.jsonl")
  NFS.writeFileSync(session, ourFile(conversation({ entries: 20 })))
  const cache = Path.join(dir, "cache")
  // This run's cache, no colour, no database; either the rest of this process's environment (as a
  // user's shell starts the command: NODE_OPTIONS or NODE_EXTRA_CA_CERTS slow every start of node
  // alike) or nothing else at all.
  const own = { HOME: dir, XDG_CACHE_HOME: cache, NO_COLOR: "1", SESSION_TREE_DB: "" }
  const environments = [
    ["this environment", { ...process.env, ...own }],
    ["a clean environment", { PATH: process.env["PATH"] ?? "", ...own }]
  ] as const
  const rows: Array<Row> = []
  for (const [name, env] of environments) {
    const samples = await rounds([
      { name: BASELINE, run: () => exec(["-e", "0"], env) },
      { name: "session-tree --version", run: () => exec([bin, "--version"], env) },
      { name: "session-tree verify small.jsonl", run: () => exec([bin, "verify", session], env) },
      { name: "session-tree verify small.jsonl, no code cache", run: () => exec([bin, "verify", session], { ...env, SESSION_TREE_NO_CODE_CACHE: "1" }) },
      { name: "the library alone: SessionStore.read small.jsonl", run: () => exec([floorBin, session], env) }
    ], options)
    const range = Object.fromEntries(samples.map((s) => [s.name, `min ${Math.min(...s.ms).toFixed(0)} ms, max ${Math.max(...s.ms).toFixed(0)} ms`]))
    rows.push(...summarize(`start-up, whole process, ${name}`, samples, BASELINE, range))
  }
  if (NFS.readdirSync(Path.join(cache, "session-tree")).length === 0) throw new Error("the command made no code cache")
  return rows
}

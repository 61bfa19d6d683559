/**
 * A vitest global setup that fails the run when a process a test started outlives it.
 *
 * Every project names it first among its global setups. The first to start makes the run's
 * directory (`Tracked.REGISTRY`), set in the environment before any test process is started, so
 * every process of the run inherits it; the last to finish (after the PostgreSQL server of the
 * run has been stopped) waits a few seconds for children still exiting, then fails the run,
 * naming the command of each process still alive, and kills them, so that a failing run does
 * not leave them behind either.
 */
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { carrying, isAlive, parentOf, REGISTRY, type Tracked, trackedIn } from "./Tracked.js"

// Every project loads this module anew, but all of them run in vitest's main process.
const KEY = Symbol.for("@session-tree/testing/child-guard")
interface Shared {
  readonly dir: string
  users: number
}
const registry = globalThis as { [KEY]?: Shared }

/** How long children that are exiting as the run ends get to be gone. */
const GRACE_MS = 10_000

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The processes of the run still alive: tracked children and whatever else inherited the run's
 * variable, but for the children of `owner` that nothing tracked (the test runner's own workers).
 */
const survivors = (dir: string, owner: number | undefined): Array<Tracked> => {
  const found = new Map<number, Tracked>()
  for (const child of trackedIn(dir)) if (isAlive(child)) found.set(child.pid, child)
  for (const child of carrying(dir)) {
    if (found.has(child.pid) || child.pid === owner || (owner !== undefined && parentOf(child.pid) === owner)) continue
    if (isAlive(child)) found.set(child.pid, child)
  }
  return [...found.values()]
}

/**
 * Fails, naming each command, when a process of the run written down in `dir` (or carrying it
 * in its environment) is still alive after `graceMs`; kills those, and removes `dir` either way.
 */
export const check = async (dir: string, options: { readonly graceMs?: number; readonly owner?: number } = {}): Promise<void> => {
  const deadline = Date.now() + (options.graceMs ?? GRACE_MS)
  let left = survivors(dir, options.owner)
  while (left.length > 0 && Date.now() < deadline) {
    await sleep(200)
    left = survivors(dir, options.owner)
  }
  NFS.rmSync(dir, { recursive: true, force: true })
  if (left.length === 0) return
  for (const child of left) {
    try {
      process.kill(child.pid, "SIGKILL")
    } catch {
      // Gone by now.
    }
  }
  throw new Error(
    `${left.length} process(es) started by the tests outlived the run (killed now):\n` +
      left.map((child) => `  pid ${child.pid}: ${child.command.join(" ")}`).join("\n")
  )
}

export default function setup(): () => Promise<void> {
  const shared = (registry[KEY] ??= { dir: NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-children-")), users: 0 })
  shared.users++
  process.env[REGISTRY] = shared.dir
  return async () => {
    if (--shared.users > 0) return
    delete registry[KEY]
    delete process.env[REGISTRY]
    await check(shared.dir, { owner: process.pid })
  }
}

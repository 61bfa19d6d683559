/**
 * The processes a test run starts, written down so that the run can prove none outlives it.
 *
 * `ChildGuard` (a vitest global setup) makes a directory for the run and names it in
 * `SESSION_TREE_TEST_CHILDREN`, which every process the tests start inherits. The child helpers
 * (`Children.spawnChild`, `Children.runNode`, the file package's fixtures) write each child they
 * start into it with `track`: its PID, its start time (so that a PID used again later is not
 * taken for it) and its command. At the end, the guard looks for every tracked child still alive,
 * and for every other process that carries the run's variable (a grandchild, such as the script a
 * wrapper started), and fails the run naming their commands.
 */
import type { ChildProcess } from "node:child_process"
import * as NFS from "node:fs"
import * as Path from "node:path"

/** The environment variable that names the run's directory of tracked children. */
export const REGISTRY = "SESSION_TREE_TEST_CHILDREN"

/** One child as `track` wrote it down. */
export interface Tracked {
  readonly pid: number
  /** The kernel's start time of the process (Linux), or undefined where it cannot be read. */
  readonly start: string | undefined
  readonly command: ReadonlyArray<string>
}

/** The start time of process `pid` in clock ticks since boot (field 22 of /proc/PID/stat); undefined when it is gone or there is no /proc. */
export const startTime = (pid: number): string | undefined => {
  try {
    const stat = NFS.readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) may hold spaces and parentheses: the fields after it start after the last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  } catch {
    return undefined
  }
}

/** Whether `tracked` is still the process it was: alive, and started when it was. */
export const isAlive = (tracked: Pick<Tracked, "pid" | "start">): boolean => {
  try {
    process.kill(tracked.pid, 0)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false
  }
  // A zombie has exited; only its parent has not reaped it yet.
  if (processState(tracked.pid) === "Z") return false
  return tracked.start === undefined || startTime(tracked.pid) === tracked.start
}

/** The one-letter state of process `pid` (field 3 of /proc/PID/stat), or undefined. */
const processState = (pid: number): string | undefined => {
  try {
    const stat = NFS.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0]
  } catch {
    return undefined
  }
}

/**
 * Writes `child` down in the run's directory, when there is one (a run under `ChildGuard`);
 * anywhere else (a benchmark) it does nothing. Returns `child`.
 */
export const track = <C extends ChildProcess>(child: C, command: ReadonlyArray<string>): C => {
  const dir = process.env[REGISTRY]
  const pid = child.pid
  if (dir === undefined || dir === "" || pid === undefined) return child
  const record: Tracked = { pid, start: startTime(pid), command }
  try {
    // One file per test process, appended a line at a time: no two processes write the same file.
    NFS.appendFileSync(Path.join(dir, `${process.pid}.jsonl`), `${JSON.stringify(record)}\n`)
  } catch {
    // The run's directory is gone: the run is over, and nothing checks any more.
  }
  return child
}

/** Every child written down in `dir`. */
export const trackedIn = (dir: string): Array<Tracked> => {
  const found: Array<Tracked> = []
  for (const name of NFS.readdirSync(dir)) {
    if (!name.endsWith(".jsonl")) continue
    for (const line of NFS.readFileSync(Path.join(dir, name), "utf8").split("\n")) {
      if (line !== "") found.push(JSON.parse(line) as Tracked)
    }
  }
  return found
}

/**
 * The processes whose environment names `dir` as the run's registry (Linux: /proc), whatever
 * started them; a process whose environment this user may not read is not seen.
 */
export const carrying = (dir: string): Array<Tracked> => {
  let pids: Array<string>
  try {
    pids = NFS.readdirSync("/proc").filter((name) => /^\d+$/.test(name))
  } catch {
    return []
  }
  const marker = `${REGISTRY}=${dir}`
  const found: Array<Tracked> = []
  for (const name of pids) {
    const pid = Number(name)
    try {
      const environment = NFS.readFileSync(`/proc/${pid}/environ`, "utf8").split("\0")
      if (!environment.includes(marker)) continue
      const command = NFS.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((arg) => arg !== "")
      found.push({ pid, start: startTime(pid), command })
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return found
}

/** The parent of process `pid` (field 4 of /proc/PID/stat), or undefined. */
export const parentOf = (pid: number): number | undefined => {
  try {
    const stat = NFS.readFileSync(`/proc/${pid}/stat`, "utf8")
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1])
  } catch {
    return undefined
  }
}

/**
 * Child processes of the test suites, talking in lines on stdout.
 *
 * A child program is compiled once per run with esbuild into one ESM file, then
 * started with plain `node`: under `node --import tsx` every start transpiles and
 * resolves a few hundred modules, which the kill tests would pay a thousand
 * times. The workspace's packages are bundled from their sources, as the tests
 * run them. Without esbuild, children run through tsx.
 */
import { type ChildProcess, execFile, spawn } from "node:child_process"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { track } from "./Tracked.js"

export { track }

const root = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..")

/** The condition under which the workspace's packages resolve to their TypeScript sources. */
export const SOURCE_CONDITION = "@session-tree/source"

/** The arguments of `node` that start a child program (before its own arguments). */
export type ChildCommand = ReadonlyArray<string>

let bundleDir: string | undefined
const built = new Map<string, Promise<ChildCommand>>()

/** Compiles the child program at `entry` (a `.ts` file), once per run. */
export const prepareChild = (entry: string): Promise<ChildCommand> => {
  let command = built.get(entry)
  if (command === undefined) {
    command = (async () => {
      let esbuild: typeof import("esbuild")
      try {
        esbuild = await import("esbuild")
      } catch {
        return [`--conditions=${SOURCE_CONDITION}`, "--import", "tsx", entry]
      }
      if (bundleDir === undefined) {
        const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-children-"))
        bundleDir = dir
        process.once("exit", () => NFS.rmSync(dir, { recursive: true, force: true }))
      }
      const outfile = Path.join(bundleDir, `${built.size}-${Path.basename(entry).replace(/\.ts$/, ".mjs")}`)
      // Built synchronously, then esbuild's service stopped: it would otherwise live as long as the
      // test worker, which outlives a test file (and no other build can be under way meanwhile).
      esbuild.buildSync({
        entryPoints: [entry],
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        outfile,
        conditions: [SOURCE_CONDITION],
        logLevel: "error",
        // Optional modules of `pg` that it loads only when asked to.
        external: ["pg-native", "cloudflare:sockets"],
        // Bundled CommonJS (`pg`) calls `require` for Node's own modules, which ESM has not got.
        banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" }
      })
      await esbuild.stop()
      return [outfile]
    })()
    built.set(entry, command)
  }
  return command
}

export interface Child {
  readonly proc: ChildProcess
  /** Complete lines printed so far (a line cut by a kill is not one). */
  readonly lines: Array<string>
  readonly stderr: () => string
  /** Resolves with the first line starting with `prefix`, or rejects once the child's output is closed without one. */
  readonly waitFor: (prefix: string) => Promise<string>
  /**
   * Resolves with true once `n` lines start with `prefix`, or with false once the
   * child's output is closed with fewer. It resolves either way because the kill
   * tests wait for "about n acknowledgements" and must go on (and find the child's
   * own failure in `lines`) when it died first; a caller that needs the count checks the result.
   */
  readonly waitForCount: (prefix: string, n: number) => Promise<boolean>
  /** Resolves when the child has exited and been reaped: its pid no longer names it. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly send: (line: string) => void
}

export const spawnChild = (
  command: ChildCommand,
  args: ReadonlyArray<string>,
  options: { readonly uid?: number; readonly gid?: number; readonly env?: NodeJS.ProcessEnv } = {}
): Child => {
  const proc = spawn(process.execPath, [...command, ...args], {
    stdio: ["pipe", "pipe", "pipe"],
    cwd: root,
    ...(options.env !== undefined ? { env: { ...process.env, ...options.env } } : {}),
    ...(options.uid !== undefined ? { uid: options.uid } : {}),
    ...(options.gid !== undefined ? { gid: options.gid } : {})
  })
  track(proc, [process.execPath, ...command, ...args])
  const lines: Array<string> = []
  const waiters: Array<{ prefix: string; resolve: (l: string) => void; reject: (e: Error) => void }> = []
  const counters: Array<{ prefix: string; left: number; resolve: (reached: boolean) => void }> = []
  // Set on 'close', not 'exit': stdout may still hold lines after the process has exited.
  let closed = false
  let partial = ""
  let err = ""
  proc.stdout!.setEncoding("utf8")
  proc.stdout!.on("data", (chunk: string) => {
    partial += chunk
    let nl = partial.indexOf("\n")
    while (nl >= 0) {
      const line = partial.slice(0, nl)
      partial = partial.slice(nl + 1)
      lines.push(line)
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (line.startsWith(waiters[i]!.prefix)) waiters.splice(i, 1)[0]!.resolve(line)
      }
      for (let i = counters.length - 1; i >= 0; i--) {
        if (line.startsWith(counters[i]!.prefix) && --counters[i]!.left <= 0) counters.splice(i, 1)[0]!.resolve(true)
      }
      nl = partial.indexOf("\n")
    }
  })
  proc.stderr!.setEncoding("utf8")
  proc.stderr!.on("data", (chunk: string) => void (err += chunk))
  // Writes to a killed child's stdin fail with EPIPE; that is expected.
  proc.stdin!.on("error", () => {})
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    proc.on("close", (code, signal) => {
      closed = true
      for (const w of waiters.splice(0)) w.reject(new Error(`child exited (${code ?? signal}) before "${w.prefix}": ${err}`))
      for (const c of counters.splice(0)) c.resolve(false)
      resolve({ code, signal })
    })
  })
  return {
    proc,
    lines,
    stderr: () => err,
    exited,
    send: (line) => void proc.stdin!.write(line + "\n"),
    waitForCount: (prefix, n) => {
      const left = n - lines.filter((l) => l.startsWith(prefix)).length
      if (left <= 0) return Promise.resolve(true)
      if (closed) return Promise.resolve(false)
      return new Promise((resolve) => counters.push({ prefix, left, resolve }))
    },
    waitFor: (prefix) => {
      const found = lines.find((l) => l.startsWith(prefix))
      if (found !== undefined) return Promise.resolve(found)
      if (closed) return Promise.reject(new Error(`child exited before "${prefix}": ${err}`))
      return new Promise((resolve, reject) => waiters.push({ prefix, resolve, reject }))
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export interface Finished {
  /** The exit code, or null when a signal ended it. */
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

export interface RunOptions {
  readonly cwd?: string
  /** The whole environment of the child (default: this process's). */
  readonly env?: NodeJS.ProcessEnv
  /** What the child reads on stdin; it reads an empty stdin otherwise. */
  readonly input?: string | Uint8Array | undefined
  /** Another user to run as (this process must be root). */
  readonly uid?: number | undefined
  readonly gid?: number | undefined
}

/**
 * Runs `command …args` to its end, tracked like `spawnChild`, and resolves with how it ended and
 * its output, whatever its code. Start Node programs with `runNode`: a command that is a wrapper
 * (the `tsx` command runs a second Node) leaves the process that works out of reach of a kill.
 */
export const runCommand = (command: string, args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Finished> =>
  new Promise((resolve, reject) => {
    const child = execFile(command, [...args], {
      cwd: options.cwd ?? root,
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
      ...(options.env !== undefined ? { env: options.env } : {}),
      ...(options.uid !== undefined ? { uid: options.uid } : {}),
      ...(options.gid !== undefined ? { gid: options.gid } : {})
    }, (error, stdout, stderr) => {
      if (error === null) return resolve({ code: 0, signal: null, stdout, stderr })
      // Not started at all (ENOENT, EACCES): no code and no signal.
      if (typeof error.code !== "number" && error.signal == null) return reject(error)
      resolve({ code: typeof error.code === "number" ? error.code : null, signal: error.signal ?? null, stdout, stderr })
    })
    track(child, [command, ...args])
    // A child that exits without reading all of its input closes the pipe: that is its business.
    child.stdin!.on("error", () => {})
    child.stdin!.end(options.input)
  })

/** Runs `node …args` (this Node, started directly, so that a kill reaches the process that works) with `runCommand`. */
export const runNode = (args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Finished> =>
  runCommand(process.execPath, args, options)

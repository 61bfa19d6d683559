/**
 * Child processes of the PostgreSQL tests, talking in lines on stdout, each with
 * connections of its own. A child is bundled once per test file with esbuild
 * (installed with tsx) and started with plain `node`, which takes a fraction of
 * the time `node --import tsx` needs to load it; without esbuild it runs through tsx.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const root = Path.join(here, "..", "..", "..", "..")

/** The path of child program `name` in `packages/pg/test/children`. */
export const childPath = (name: string): string => Path.join(here, "..", "children", name)

export type ChildCommand = ReadonlyArray<string>

const built = new Map<string, Promise<ChildCommand>>()

export const prepareChild = (name: string): Promise<ChildCommand> => {
  let command = built.get(name)
  if (command === undefined) {
    command = (async () => {
      let esbuild: typeof import("esbuild")
      try {
        esbuild = await import("esbuild")
      } catch {
        return ["--import", "tsx", childPath(name)]
      }
      const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-pg-child-"))
      process.once("exit", () => NFS.rmSync(dir, { recursive: true, force: true }))
      const outfile = Path.join(dir, name.replace(/\.ts$/, ".mjs"))
      await esbuild.build({
        entryPoints: [childPath(name)],
        bundle: true,
        platform: "node",
        format: "esm",
        target: "node20",
        outfile,
        logLevel: "error",
        // Optional modules of `pg` that it only loads when asked to; a CommonJS `require` needs a real one in ESM.
        external: ["pg-native", "cloudflare:sockets"],
        banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" }
      })
      return [outfile]
    })()
    built.set(name, command)
  }
  return command
}

export interface Child {
  readonly proc: ChildProcess
  /** Complete lines printed so far (a line cut by a kill is not one). */
  readonly lines: Array<string>
  readonly stderr: () => string
  /** Resolves with the first line starting with `prefix` (or rejects when the child exits first). */
  readonly waitFor: (prefix: string) => Promise<string>
  /** Resolves once `n` lines start with `prefix`, or when the child exits (check `lines` then). */
  readonly waitForCount: (prefix: string, n: number) => Promise<void>
  /** Resolves when the child has exited and its output has ended. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly send: (line: string) => void
}

export const spawnChild = (command: ChildCommand, args: ReadonlyArray<string>): Child => {
  const proc = spawn(process.execPath, [...command, ...args], { stdio: ["pipe", "pipe", "pipe"], cwd: root })
  const lines: Array<string> = []
  const waiters: Array<{ prefix: string; resolve: (l: string) => void; reject: (e: Error) => void }> = []
  const counters: Array<{ prefix: string; left: number; resolve: () => void }> = []
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
        if (line.startsWith(counters[i]!.prefix) && --counters[i]!.left <= 0) counters.splice(i, 1)[0]!.resolve()
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
      for (const w of waiters.splice(0)) w.reject(new Error(`child exited (${code ?? signal}) before "${w.prefix}": ${err}`))
      for (const c of counters.splice(0)) c.resolve()
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
      if (left <= 0 || proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve()
      return new Promise((resolve) => counters.push({ prefix, left, resolve }))
    },
    waitFor: (prefix) => {
      const found = lines.find((l) => l.startsWith(prefix))
      if (found !== undefined) return Promise.resolve(found)
      if (proc.exitCode !== null || proc.signalCode !== null) return Promise.reject(new Error(`child exited before "${prefix}": ${err}`))
      return new Promise((resolve, reject) => waiters.push({ prefix, resolve, reject }))
    }
  }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

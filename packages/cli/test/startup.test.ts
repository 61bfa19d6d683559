/**
 * A start of the command evaluates only what the command at hand runs: the server (and the HTTP
 * stack under it), PostgreSQL's client, the importers and the sync are loaded by the commands that
 * use them, when they run. Checked twice: in the bundle's import graph (no static path leads to
 * them from the entry point, so esbuild initializes them only when an `import()` asks for them),
 * and in the processes themselves (the Node modules only the server needs are never loaded).
 */
import * as Sync from "@session-tree/core/Sync"
import * as SyncFiles from "@session-tree/file/SyncFiles"
import { runNode, spawnChild } from "@session-tree/testing/Children"
import { execFileSync } from "node:child_process"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bin, removeTempDirs, runCli, tempDir, writeConversation } from "./support.js"

const cli = fileURLToPath(new URL("../", import.meta.url))

interface Metafile {
  readonly inputs: Record<string, { readonly imports: ReadonlyArray<{ readonly path: string; readonly kind: string; readonly external?: boolean }> }>
}

/** The inputs reachable from `entry` through static imports (what evaluating the entry evaluates), each with the chain that reaches it. */
const staticallyReached = (meta: Metafile, entry: string): Map<string, string> => {
  const chains = new Map([[entry, entry]])
  const queue = [entry]
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    for (const imported of meta.inputs[at]?.imports ?? []) {
      if (imported.kind === "dynamic-import" || imported.external === true || chains.has(imported.path)) continue
      chains.set(imported.path, `${chains.get(at)} -> ${imported.path}`)
      queue.push(imported.path)
    }
  }
  return chains
}

/** What only the commands that use them may load: a path of the bundle's inputs holding one of these. */
const LAZY: ReadonlyArray<readonly [string, RegExp]> = [
  ["the server", /\/server\/src\//],
  ["the HTTP stack", /@effect\/platform-node\/dist\/esm\/internal\/http|\/node_modules\/ws\//],
  ["PostgreSQL", /\/pg\/src\/|\/node_modules\/(pg|pg-[a-z-]+|@effect\/sql|@effect\/sql-pg)\//],
  ["the importers", /\/core\/src\/(Import|PiSession|Sync)\.ts$|\/core\/src\/internal\/(imports|claude|codex|sync)\.ts$/],
  ["the sync", /\/file\/src\/(SyncFiles|SyncWatch)\.ts$|^src\/commands\/syncRun\.ts$/],
  ["the import command's body", /^src\/commands\/importRun\.ts$/]
]

/**
 * Node's modules that only the server (its HTTP server, its WebSocket library) loads. Not `zlib`:
 * the file backend's search index checks its parts with `zlib.crc32`, so every command on files loads it.
 */
const SERVER_ONLY = ["NativeModule http", "NativeModule https", "NativeModule tls"]

let dir: string
let meta: Metafile

beforeAll(() => {
  dir = tempDir()
  // Built from the package's directory, whose paths the metafile's are then relative to.
  execFileSync(process.execPath, [Path.join(cli, "scripts", "build.mjs"), Path.join(dir, "bundle"), "--metafile"], { cwd: cli, stdio: "inherit" })
  meta = JSON.parse(NFS.readFileSync(Path.join(dir, "bundle", "session-tree.meta.json"), "utf8")) as Metafile
}, 120_000)
afterAll(removeTempDirs)

/** A preload that writes, when the process exits, the Node modules it loaded after its own start. */
const recorder = (out: string): string => {
  const file = Path.join(dir, `record-${Path.basename(out)}.cjs`)
  NFS.writeFileSync(
    file,
    `const before = new Set(process.moduleLoadList)\n` +
      `process.on("exit", () => require("node:fs").writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.filter((m) => !before.has(m)).join("\\n")))\n`
  )
  return file
}

describe("the start of session-tree", () => {
  it("reaches the server, PostgreSQL, the importers and the sync from its entry point only through import(), though the bundle holds them", () => {
    const inputs = Object.keys(meta.inputs)
    const reached = staticallyReached(meta, "src/main.ts")
    // Most of the bundle is reached: the entry point and the graph are what the test believes them to be.
    expect(reached.has("src/Cli.ts")).toBe(true)
    expect(reached.size).toBeGreaterThan(300)
    for (const [what, pattern] of LAZY) {
      expect(inputs.filter((p) => pattern.test(p)), `${what} is in the bundle`).not.toEqual([])
      expect([...reached].filter(([p]) => pattern.test(p)).map(([, chain]) => chain), `${what}, evaluated at every start`).toEqual([])
    }
  })

  it("loads none of the server's Node modules for verify, list, log or --version; serve loads them, and, stopped by its user, keeps its code cache", async () => {
    const session = Path.join(dir, "small.jsonl")
    await writeConversation(session)
    const caches = Path.join(dir, "cache")
    const env = { ...process.env, SESSION_TREE_DB: "", NO_COLOR: "1", XDG_CACHE_HOME: caches }
    for (const args of [["verify", session], ["list", dir], ["log", session], ["--version"]]) {
      const out = Path.join(dir, `loaded-${args[0]!.replace(/\W/g, "")}.txt`)
      const ran = await runNode(["--require", recorder(out), bin, ...args], { env })
      expect(ran.code, ran.stderr).toBe(0)
      const loaded = NFS.readFileSync(out, "utf8").split("\n")
      expect(loaded.filter((m) => SERVER_ONLY.includes(m)), args.join(" ")).toEqual([])
    }
    // The control: the same record of serve, which evaluates the server, holds them.
    const out = Path.join(dir, "loaded-serve.txt")
    const serve = spawnChild(["--require", recorder(out), bin], ["serve", "--dir", dir, "--port", "0"], { env })
    try {
      expect(await serve.waitFor("http://")).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
    } finally {
      serve.proc.kill("SIGINT")
    }
    expect(await serve.exited).toEqual({ code: 130, signal: null })
    expect(NFS.readFileSync(out, "utf8").split("\n").filter((m) => SERVER_ONLY.includes(m)).sort()).toEqual([...SERVER_ONLY].sort())
    // Stopped by its user, serve made its own code cache, as each command that succeeded did.
    const made = NFS.readdirSync(Path.join(caches, "session-tree")).map((name) => name.replace(/^code-.*-\d+-\d+\./, "")).sort()
    expect(made).toEqual(["list.bin", "log.bin", "none.bin", "serve.bin", "verify.bin"])
  })

  it("states the sync's own defaults in its help", async () => {
    // sync.ts repeats them so that a start does not evaluate the sync to read them.
    const help = await runCli("sync", "--help")
    expect(help.code).toBe(0)
    expect(help.stdout).toContain(`(default: ${Sync.QUIET_MS / 1000})`)
    expect(help.stdout).toContain(`(default: DIR/${SyncFiles.STATE_FILE};`)
  })
})

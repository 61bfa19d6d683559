#!/usr/bin/env node
// The `session-tree` command: loads the bundle (dist/session-tree.cjs, made by
// `npm run build`) with V8's code cache, kept in the user's cache directory, so a
// start skips compiling the bundle. A missing, stale or damaged cache is simply
// made anew: V8 checks it against the bundle and the Node version, and refuses
// one that does not match. Each command has a cache of its own: a cache holds the
// functions that the run that made it compiled, so one made by `--version` would
// leave every later `verify` compiling the reading of a session again.
"use strict"
const NFS = require("node:fs")
const Module = require("node:module")
const OS = require("node:os")
const Path = require("node:path")
const VM = require("node:vm")

const bundle = Path.join(__dirname, "..", "dist", "session-tree.cjs")
let source
try {
  source = NFS.readFileSync(bundle, "utf8")
} catch {
  process.stderr.write(`INTERNAL the command is not built: ${bundle} is missing (run npm run build)\n`)
  process.exit(1)
}

/** This user's own cache directory (never a shared one: the cache holds compiled code), or undefined. */
const cacheDir = () => {
  const base = process.env.XDG_CACHE_HOME || (OS.homedir() && Path.join(OS.homedir(), ".cache"))
  if (!base || !Path.isAbsolute(base)) return undefined
  const dir = Path.join(base, "session-tree")
  try {
    NFS.mkdirSync(dir, { recursive: true, mode: 0o700 })
    const stat = NFS.lstatSync(dir)
    // Owned by this user and writable by no one else: another user could plant code in it.
    return stat.isDirectory() && stat.uid === process.getuid?.() && (stat.mode & 0o022) === 0 ? dir : undefined
  } catch {
    return undefined
  }
}

/** How many builds' caches are kept (several installs may run). */
const KEEP = 4
/** A cache's name: `code-<node>-<arch>-<size>-<mtime>` names the build, then the command, if any. */
const CACHE_NAME = /^(code-.*-\d+-\d+)(?:\.[a-z0-9-]+)?\.bin$/
const dir = process.env.SESSION_TREE_NO_CODE_CACHE ? undefined : cacheDir()
const stat = NFS.statSync(bundle)
// The command is the first word that is not an option; a run with none (--version, --help) is "none".
const word = process.argv.slice(2).find((arg) => !arg.startsWith("-"))
const command = word === undefined ? "none" : /^[a-z][a-z0-9-]{0,31}$/.test(word) ? word : "other"
const cacheFile = dir && Path.join(dir, `code-${process.version}-${process.arch}-${stat.size}-${Math.floor(stat.mtimeMs)}.${command}.bin`)
let cachedData
if (cacheFile) {
  try {
    cachedData = NFS.readFileSync(cacheFile)
  } catch {}
}
const script = new VM.Script(Module.wrap(source), { filename: bundle, cachedData })
if (cacheFile && (cachedData === undefined || script.cachedDataRejected)) {
  // Made at exit, so it holds every function this run compiled; written whole or not at all. Only
  // after a run that did its work (0) or that its user stopped (130: serve, sync --watch): a run
  // that failed early compiled less than the command's next runs will need.
  process.once("exit", (code) => {
    if (code !== 0 && code !== 130) return
    const tmp = `${cacheFile}.${process.pid}`
    try {
      NFS.writeFileSync(tmp, script.createCachedData(), { mode: 0o600 })
      NFS.renameSync(tmp, cacheFile)
      // Each build of the bundle has its own caches: those of the newest few builds are kept.
      const caches = NFS.readdirSync(dir)
        .filter((name) => CACHE_NAME.test(name))
        .map((name) => ({ name, build: CACHE_NAME.exec(name)[1], mtime: NFS.statSync(Path.join(dir, name)).mtimeMs }))
      const newest = new Map()
      for (const { build, mtime } of caches) newest.set(build, Math.max(mtime, newest.get(build) ?? 0))
      const kept = new Set([...newest].sort((a, b) => b[1] - a[1]).slice(0, KEEP).map(([build]) => build))
      for (const { build, name } of caches) if (!kept.has(build)) NFS.unlinkSync(Path.join(dir, name))
    } catch {
      try {
        NFS.unlinkSync(tmp)
      } catch {}
    }
  })
}
const module_ = { exports: {} }
script.runInThisContext()(module_.exports, require, module_, bundle, Path.dirname(bundle))

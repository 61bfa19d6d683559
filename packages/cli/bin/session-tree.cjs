#!/usr/bin/env node
// The `session-tree` command: loads the bundle (dist/session-tree.cjs, made by
// `npm run build`) with V8's code cache, kept in the user's cache directory, so a
// start skips compiling the bundle. A missing, stale or damaged cache is simply
// made anew: V8 checks it against the bundle and the Node version, and refuses
// one that does not match.
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

const KEEP = 4
const dir = process.env.SESSION_TREE_NO_CODE_CACHE ? undefined : cacheDir()
const stat = NFS.statSync(bundle)
const cacheFile = dir && Path.join(dir, `code-${process.version}-${process.arch}-${stat.size}-${Math.floor(stat.mtimeMs)}.bin`)
let cachedData
if (cacheFile) {
  try {
    cachedData = NFS.readFileSync(cacheFile)
  } catch {}
}
const script = new VM.Script(Module.wrap(source), { filename: bundle, cachedData })
if (cacheFile && (cachedData === undefined || script.cachedDataRejected)) {
  // Made at exit, so it holds every function this run compiled; written whole or not at all.
  process.once("exit", () => {
    const tmp = `${cacheFile}.${process.pid}`
    try {
      NFS.writeFileSync(tmp, script.createCachedData(), { mode: 0o600 })
      NFS.renameSync(tmp, cacheFile)
      // Each build of the bundle has its own cache: keep the newest few (several installs may run).
      const old = NFS.readdirSync(dir)
        .filter((name) => /^code-.*\.bin$/.test(name))
        .map((name) => ({ name, mtime: NFS.statSync(Path.join(dir, name)).mtimeMs }))
        .sort((a, b) => b.mtime - a.mtime)
        .slice(KEEP)
      for (const { name } of old) NFS.unlinkSync(Path.join(dir, name))
    } catch {
      try {
        NFS.unlinkSync(tmp)
      } catch {}
    }
  })
}
const module_ = { exports: {} }
script.runInThisContext()(module_.exports, require, module_, bundle, Path.dirname(bundle))

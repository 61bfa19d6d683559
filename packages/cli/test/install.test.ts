/**
 * The packages as a user gets them: each one built, packed with `npm pack`, and
 * installed from the tarballs into empty projects outside the repository by the
 * README's own install commands, whose third-party packages (Effect and its SQL
 * packages) the registry resolves, never the workspace's copies; so this test
 * fails whenever those commands would. Then used there from plain Node (ESM),
 * from TypeScript (`moduleResolution: NodeNext`), by each package README's
 * example, and as the `session-tree` command installed globally and through npx.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { runCommand } from "@session-tree/testing/Children"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const PACKAGES = ["core", "file", "pg", "view", "ai", "cli"] as const

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const run = async (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> => {
  const ran = await runCommand(command, args, { cwd, env: { ...process.env, NO_COLOR: "1", ...env } })
  return { code: ran.code ?? 128 + OS.constants.signals[ran.signal!], stdout: ran.stdout, stderr: ran.stderr }
}

const ok = async (command: string, args: ReadonlyArray<string>, cwd: string, env?: NodeJS.ProcessEnv): Promise<string> => {
  const result = await run(command, args, cwd, env)
  if (result.code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.code}: ${result.stderr}${result.stdout}`)
  return result.stdout
}

const readJson = <A = Record<string, unknown>>(path: string): A => JSON.parse(NFS.readFileSync(path, "utf8")) as A

/** The version of `name` the workspace runs on: the line the tests ran against. */
const installed = (name: string): string => readJson<{ version: string }>(Path.join(root, "node_modules", name, "package.json")).version

/** `1.2.3` → `1.2`: a release line, as `~1.2` names it. */
const lineOf = (version: string): string => version.split(".").slice(0, 2).join(".")

const readme = NFS.readFileSync(Path.join(root, "README.md"), "utf8")

/** The fenced block right after the marker line `<!-- MARKER -->` in `text`, or undefined. */
const blockAfter = (text: string, marker: string): string | undefined =>
  new RegExp(`<!-- ${marker} -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\`\\n`).exec(text)?.[1]

/** Each `npm install …` line of a block, as its arguments, without the comment. */
const installCommands = (block: string): Array<ReadonlyArray<string>> =>
  block.split("\n").map((line) => line.replace(/#.*$/, "").trim()).filter((line) => line !== "").map((line) => {
    const words = line.split(/\s+/)
    if (words[0] !== "npm" || words[1] !== "install") throw new Error(`not an npm install command: ${line}`)
    return words.slice(2)
  })

/** `@scope/name@range` → name; `name` → name. */
const nameOf = (spec: string): string => spec.replace(/^(@?[^@]+)@.*$/, "$1")

const README_COMMANDS = installCommands(blockAfter(readme, "install: packages") ?? "")

interface Packed {
  readonly name: string
  readonly filename: string
  readonly files: ReadonlyArray<{ readonly path: string }>
}

interface Install {
  readonly command: ReadonlyArray<string>
  readonly project: string
  readonly result: Run
}

let work: string
let app: string
let globalPrefix: string
const packed = new Map<string, Packed & { readonly tarball: string }>()
const installs: Array<Install> = []

/**
 * The arguments npm gets for a README command: each of this project's packages as its tarball,
 * with the tarballs of this project's packages it depends on (standing in for the registry's copies,
 * as the packages are not published from here); every other argument as the README writes it.
 */
const mapped = (command: ReadonlyArray<string>): Array<string> => {
  const ours = new Set<string>()
  const add = (name: string) => {
    const p = packed.get(name)
    if (p === undefined) throw new Error(`the README installs ${name}, which is not one of the packed packages`)
    if (ours.has(name)) return
    ours.add(name)
    const manifest = readJson<{ dependencies?: Record<string, string> }>(Path.join(root, "packages", name.split("/")[1]!, "package.json"))
    for (const dep of Object.keys(manifest.dependencies ?? {})) if (dep.startsWith("@session-tree/")) add(dep)
  }
  const rest: Array<string> = []
  for (const arg of command) {
    if (arg.startsWith("@session-tree/")) add(nameOf(arg))
    else rest.push(arg)
  }
  return [...rest, ...[...ours].map((name) => packed.get(name)!.tarball)]
}

const emptyProject = (name: string): string => {
  const dir = Path.join(work, name)
  NFS.mkdirSync(dir)
  NFS.writeFileSync(Path.join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", private: true, type: "module" }, null, 2))
  return dir
}

const npmInstall = async (command: ReadonlyArray<string>, project: string, extra: ReadonlyArray<string> = []): Promise<Run> => {
  const result = await run("npm", ["install", "--no-audit", "--no-fund", ...extra, ...mapped(command)], project)
  installs.push({ command, project, result })
  return result
}

const scope = Effect.runSync(Scope.make())

beforeAll(async () => {
  work = NFS.mkdtempSync(Path.join(NFS.realpathSync(OS.tmpdir()), "session-tree-install-"))
  // The libraries' compiled output; the command's bundle is the one this run's global setup built.
  await ok("npm", ["run", "build:libraries"], root)
  const list = JSON.parse(await ok("npm", ["pack", "--json", "--pack-destination", work, ...PACKAGES.flatMap((p) => ["--workspace", `packages/${p}`])], root)) as Array<Packed>
  for (const p of list) packed.set(p.name, { ...p, tarball: Path.join(work, p.filename) })

  const local = README_COMMANDS.filter((c) => !c.includes("--global"))
  const global = README_COMMANDS.filter((c) => c.includes("--global"))
  globalPrefix = Path.join(work, "global")
  // Each command alone in an empty project of its own, so each must resolve by itself; and the app,
  // where all of them are installed together, as by a user who wants files, the database and the views.
  app = emptyProject("app")
  await Promise.all([
    npmInstall([...new Set(local.flatMap((c) => c.filter((a) => !a.startsWith("-"))))], app),
    ...local.map((command, i) => npmInstall(command, emptyProject(`alone-${i + 1}`))),
    ...global.map((command) => npmInstall(command, emptyProject("global-cwd"), ["--prefix", globalPrefix]))
  ])
  // What a TypeScript project on Node has beside the packages.
  await ok("npm", ["install", "--no-audit", "--no-fund", "--save-dev", `@types/node@${installed("@types/node")}`], app)
}, 600_000)

afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  if (work !== undefined) NFS.rmSync(work, { recursive: true, force: true })
}, 120_000)

describe("the README's install commands", { timeout: 120_000 }, () => {
  it("are there: files, PostgreSQL, views, the command", () => {
    const named = README_COMMANDS.map((c) => c.filter((a) => a.startsWith("@session-tree/")).map(nameOf))
    for (const name of PACKAGES) expect(named.flat()).toContain(`@session-tree/${name}`)
    expect(README_COMMANDS.find((c) => c.includes("@session-tree/cli"))).toContain("--global")
  })

  it("each name every peer of the packages they install, with a range on the line the workspace runs", () => {
    for (const command of README_COMMANDS) {
      const specs = new Map(command.filter((a) => !a.startsWith("-")).map((a) => [nameOf(a), a]))
      for (const name of [...specs.keys()].filter((n) => n.startsWith("@session-tree/"))) {
        const manifest = readJson<{ peerDependencies?: Record<string, string> }>(Path.join(root, "packages", name.split("/")[1]!, "package.json"))
        for (const peer of Object.keys(manifest.peerDependencies ?? {})) {
          expect(specs.get(peer), `${command.join(" ")}: ${name} peers on ${peer}`).toBe(`${peer}@~${lineOf(installed(peer))}`)
        }
      }
    }
  })

  it("agree with the README's table of peers, which is each manifest's", () => {
    for (const name of PACKAGES) {
      const row = new RegExp(`^\\| \`@session-tree/${name}\` \\| (.*) \\|$`, "m").exec(readme)?.[1]
      expect(row, name).toBeDefined()
      const manifest = readJson<{ peerDependencies?: Record<string, string> }>(Path.join(root, "packages", name, "package.json"))
      const shown = [...row!.matchAll(/`([^`]+)` (\^[0-9.]+)/g)].filter((m) => !m[1]!.startsWith("@session-tree/")).map((m) => [m[1], m[2]])
      expect(Object.fromEntries(shown), name).toEqual(manifest.peerDependencies ?? {})
    }
  })

  it("each resolve from the registry in an empty project: no conflict, no overridden peer, npm ls clean", async () => {
    expect(installs.length).toBe(README_COMMANDS.length + 1)
    const registry = (await ok("npm", ["config", "get", "registry"], work)).trim().replace(/\/$/, "")
    const listings = await Promise.all(installs.map(({ project }) => run("npm", ["ls", "--all"], project)))
    for (const [i, { command, project, result }] of installs.entries()) {
      const what = `npm install ${command.join(" ")} in ${Path.basename(project)}`
      expect(result.code, `${what}: ${result.stderr}`).toBe(0)
      expect(result.stderr, what).not.toMatch(/ERESOLVE|overriding peer|Could not resolve dependency|conflicting peer/i)
      if (command.includes("--global")) continue
      const ls = listings[i]!
      expect(ls.code, `${what}: npm ls: ${ls.stderr}${ls.stdout}`).toBe(0)
      // The third-party packages came from the registry, on the line the workspace's tests ran.
      const lock = readJson<{ packages: Record<string, { version?: string; resolved?: string; integrity?: string }> }>(Path.join(project, "package-lock.json"))
      for (const spec of command.filter((a) => !a.startsWith("-") && !a.startsWith("@session-tree/"))) {
        const name = nameOf(spec)
        const entry = lock.packages[`node_modules/${name}`]
        // From the registry: a version and its integrity, and the registry's URL unless npm is set to omit it.
        expect(entry?.version, `${what}: ${name}`).toBeDefined()
        expect(entry?.integrity, `${what}: ${name}`).toMatch(/^sha512-/)
        expect(entry?.resolved === undefined || entry.resolved.startsWith(`${registry}/`), `${what}: ${name} resolved ${entry?.resolved}`).toBe(true)
        // A package pinned to a line (`~x.y`) resolves on the line the workspace's tests ran.
        if (spec.includes("@~")) expect(lineOf(entry!.version!), `${what}: ${name}`).toBe(lineOf(installed(name)))
      }
    }
  })
})

// Independent checks of what is installed: run together to keep the file's time down.
describe.concurrent("the packed packages", { timeout: 120_000 }, () => {
  it("hold compiled JavaScript, declarations and source maps, no tests, a README and their links, and name their peers", ({ expect }) => {
    for (const name of PACKAGES) {
      const dir = name === "cli"
        ? Path.join(globalPrefix, "lib", "node_modules", "@session-tree", "cli")
        : Path.join(app, "node_modules", "@session-tree", name)
      const manifest = readJson(Path.join(dir, "package.json"))
      expect(manifest["private"]).toBeUndefined()
      expect(NFS.existsSync(Path.join(dir, "test"))).toBe(false)
      expect(manifest["license"]).toBe("MIT")
      expect(NFS.readFileSync(Path.join(dir, "LICENSE"), "utf8")).toMatch(/^MIT License/)
      // The package page: a README naming the package and its install command, and where it comes from.
      const page = NFS.readFileSync(Path.join(dir, "README.md"), "utf8")
      expect(page.startsWith(`# @session-tree/${name}\n`)).toBe(true)
      expect(page).toContain("npm install")
      expect(manifest["repository"]).toEqual({ type: "git", url: expect.stringMatching(/^git\+https:\/\/.+\.git$/), directory: `packages/${name}` })
      expect(manifest["homepage"]).toMatch(/^https:\/\//)
      expect((manifest["keywords"] as ReadonlyArray<string>).length).toBeGreaterThan(2)
      // The link is a copy of the tarball: no workspace link into the repository.
      expect(NFS.lstatSync(dir).isSymbolicLink()).toBe(false)
      if (name === "cli") {
        expect(NFS.existsSync(Path.join(dir, "dist", "session-tree.cjs"))).toBe(true)
        expect(manifest["dependencies"]).toBeUndefined()
        // No source map unless asked for at build time.
        expect(packed.get("@session-tree/cli")!.files.map((f) => f.path).filter((p) => p.endsWith(".map"))).toEqual([])
        expect(NFS.readdirSync(Path.join(dir, "dist")).filter((f) => f.endsWith(".map"))).toEqual([])
        continue
      }
      for (const file of ["index.js", "index.d.ts", "index.js.map", "index.d.ts.map"]) expect(NFS.existsSync(Path.join(dir, "dist", file))).toBe(true)
      expect(Object.keys(manifest["peerDependencies"] as object)).toContain("effect")
      expect((manifest["exports"] as Record<string, unknown>)["./internal/*"]).toBeNull()
    }
    const pg = readJson<{ peerDependencies: Record<string, string> }>(Path.join(app, "node_modules", "@session-tree", "pg", "package.json"))
    expect(Object.keys(pg.peerDependencies)).toEqual(expect.arrayContaining(["@effect/sql", "@effect/sql-pg", "effect"]))
  })

  it("each README's install commands are among the repository README's", ({ expect }) => {
    const commands = new Set(README_COMMANDS.map((c) => c.join(" ")))
    for (const name of PACKAGES) {
      const page = NFS.readFileSync(Path.join(root, "packages", name, "README.md"), "utf8")
      const shown = [...page.matchAll(/^npm install (.+)$/gm)].map((m) => m[1]!.replace(/#.*$/, "").trim())
      expect(shown.length, name).toBeGreaterThan(0)
      for (const command of shown) expect(commands, `${name}: npm install ${command}`).toContain(command)
    }
  })

  it("work from a plain .mjs: the Effect API, the Promise facade, the views, the database layer", async ({ expect }) => {
    NFS.writeFileSync(Path.join(app, "app.mjs"), `
import { Ids, Sessions, SessionStore, SessionTree } from "@session-tree/core"
import { FileJournal } from "@session-tree/file"
import { SessionStore as PromiseStore, SessionTree as PromiseTree, SessionError, Sessions as PromiseSessions } from "@session-tree/file/Promise"
import { PgJournal, Migrations } from "@session-tree/pg"
import { Html, Markdown } from "@session-tree/view"
import { Record } from "@session-tree/core"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "consumer-"))
const Live = Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic))
const shown = await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
  const tree = yield* SessionTree.make(yield* SessionStore.create(join(dir, "a.jsonl"), { id: "a" }))
  const root = yield* tree.append({ role: "user", id: "m1", content: "hello" })
  yield* tree.append({ role: "assistant", id: "m2", content: "hi", toolCalls: [] })
  const listing = yield* (yield* Sessions.Sessions).list({ directory: dir })
  const loaded = yield* SessionStore.read(join(dir, "a.jsonl"))
  const markdown = yield* Markdown.render(loaded.header, loaded.entries)
  const html = yield* Html.render(loaded.header, loaded.entries)
  return [root.id, listing.total, markdown.includes("hello"), html.startsWith("<!DOCTYPE html>")]
})).pipe(Effect.provide(Live)))
console.log(JSON.stringify(shown))

const store = await PromiseStore.create(join(dir, "b.jsonl"), { id: "b" })
const tree = new PromiseTree(store)
await tree.append({ role: "user", id: "m1", content: "promise" })
console.log(tree.activeMessages.map(Record.textOf).join(","), store.entries.length)
await store.close()
const listing = await new PromiseSessions().list({ directory: dir })
console.log(listing.sessions.map((s) => s.id).sort().join(","))
const refused = await PromiseStore.load(join(dir, "missing.jsonl")).catch((e) => e)
console.log(refused instanceof SessionError, refused.code)
console.log(typeof PgJournal.layerUrl, typeof Migrations.migrate)
const internal = await import("@session-tree/core/internal/sessionStore").catch((e) => e.code)
console.log(internal)
`)
    const out = await ok(process.execPath, ["app.mjs"], app)
    expect(out.trim().split("\n")).toEqual([
      JSON.stringify(["entry-001", 1, true, true]),
      "promise 1",
      "a,b",
      "true SESSION_NOT_FOUND",
      "function object",
      "ERR_PACKAGE_PATH_NOT_EXPORTED"
    ])
  })

  it("type-check from TypeScript with moduleResolution NodeNext, and keep internal modules out of reach", async ({ expect }) => {
    NFS.writeFileSync(Path.join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true, noEmit: true, types: ["node"] },
      files: ["app.ts", "internal.ts"]
    }))
    NFS.writeFileSync(Path.join(app, "app.ts"), `
import { Ids, SessionStore, SessionTree, type SessionError } from "@session-tree/core"
import type { Entry } from "@session-tree/core/Record"
import { FileJournal } from "@session-tree/file"
import { SessionStore as PromiseStore, Sessions as PromiseSessions, type ListingPage } from "@session-tree/file/Promise"
import { PgJournal } from "@session-tree/pg"
import { Markdown } from "@session-tree/view"
import { Codec } from "@session-tree/ai"
import type * as Prompt from "@effect/ai/Prompt"
import { Effect, Layer } from "effect"

const program: Effect.Effect<Entry, SessionError, never> = Effect.scoped(Effect.gen(function*() {
  const tree = yield* SessionTree.make(yield* SessionStore.create("a.jsonl"))
  return yield* tree.append({ role: "user", id: "m1", content: "hello" })
})).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)))
const db = PgJournal.layerUrl("postgres://localhost/db")
const store: Promise<PromiseStore> = PromiseStore.open("a.jsonl")
const listing: Promise<ListingPage> = new PromiseSessions().list({ directory: "." })
const text: Effect.Effect<string, SessionError> = Markdown.render({ type: "session", version: 1, id: "s", timestamp: "2026-01-02T03:04:05.006Z" }, [])
const prompt: Effect.Effect<Prompt.Prompt, SessionError | Codec.BlobMissingError> = Codec.toPrompt([{ role: "system", id: "s", content: "Be brief." }])
export { db, listing, program, prompt, store, text }
`)
    NFS.writeFileSync(Path.join(app, "internal.ts"), `
// @ts-expect-error internal modules are not exported
import * as Hidden from "@session-tree/core/internal/sessionStore"
export { Hidden }
`)
    const tsc = await run(process.execPath, [Path.join(root, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"], app)
    expect(tsc.stdout + tsc.stderr).toBe("")
    expect(tsc.code).toBe(0)
  })

  for (const name of ["core", "file", "pg", "view", "ai"] as const) {
    it(`@session-tree/${name}'s README example runs as installed and prints what its comments say`, async ({ expect }) => {
      const page = NFS.readFileSync(Path.join(app, "node_modules", "@session-tree", name, "README.md"), "utf8")
      const example = blockAfter(page, "example")
      expect(example).toBeDefined()
      const expected = example!.split("\n").filter((l) => l.includes("console.log(") && l.includes(" // ")).map((l) => l.slice(l.lastIndexOf(" // ") + 4))
      expect(expected.length).toBeGreaterThan(0)
      const file = Path.join(app, `readme-${name}.mjs`)
      NFS.writeFileSync(file, example!)
      const env = name === "pg" ? { SESSION_TREE_DB: await Effect.runPromise(Scope.extend(freshDatabase("install"), scope)) } : {}
      const result = await run(process.execPath, [file], app, env)
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout.trimEnd().split("\n")).toEqual(expected)
    })
  }
})

describe.concurrent("the session-tree command", { timeout: 120_000 }, () => {
  const bin = () => Path.join(globalPrefix, "bin", "session-tree")

  it("installed globally, runs its compiled bundle from any directory", async ({ expect }) => {
    const dir = NFS.mkdtempSync(Path.join(work, "cli-"))
    const env = { SESSION_TREE_DB: "" }
    expect((await ok(bin(), ["--version"], dir, env)).trim()).toBe("0.1.0")
    expect((await ok(bin(), ["create", "s.jsonl", "--id", "chat-1"], dir, env)).trim()).toBe("chat-1")
    const entry = (await ok(bin(), ["append", "s.jsonl", "--user", "hello"], dir, env)).trim()
    expect(JSON.parse(await ok(bin(), ["verify", "s.jsonl", "--json"], dir, env))).toEqual({ ok: true, entries: 1, leaf: entry, tail: "none" })
    const listed = JSON.parse(await ok(bin(), ["list", "--json"], dir, env)) as Array<{ readonly id: string }>
    expect(listed.map((s) => s.id)).toEqual(["chat-1"])
  })

  it("runs its README's example as written", async ({ expect }) => {
    const page = NFS.readFileSync(Path.join(globalPrefix, "lib", "node_modules", "@session-tree", "cli", "README.md"), "utf8")
    const example = blockAfter(page, "example")
    expect(example).toBeDefined()
    const dir = NFS.mkdtempSync(Path.join(work, "cli-readme-"))
    const result = await run("bash", ["-c", `set -e\n${example}`], dir, { PATH: `${Path.dirname(bin())}:${process.env["PATH"]}`, SESSION_TREE_DB: "" })
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    expect(result.stdout.split("\n")[0]).toBe("chat-1")
    expect(NFS.readFileSync(Path.join(dir, "chat.html"), "utf8")).toMatch(/^<!doctype html>/i)
  })

  it("keeps its code cache where the README says, and none with SESSION_TREE_NO_CODE_CACHE=1", async ({ expect }) => {
    const dir = NFS.mkdtempSync(Path.join(work, "cache-"))
    const off = Path.join(dir, "off")
    expect((await ok(bin(), ["--version"], dir, { XDG_CACHE_HOME: off, SESSION_TREE_NO_CODE_CACHE: "1" })).trim()).toBe("0.1.0")
    expect(NFS.existsSync(off)).toBe(false)
    const home = Path.join(dir, "home")
    NFS.mkdirSync(home)
    // Without XDG_CACHE_HOME, the cache is ~/.cache/session-tree.
    const env: NodeJS.ProcessEnv = { HOME: home, XDG_CACHE_HOME: "" }
    expect((await ok(bin(), ["--version"], dir, env)).trim()).toBe("0.1.0")
    expect(NFS.readdirSync(Path.join(home, ".cache", "session-tree")).filter((f) => /^code-.*\.bin$/.test(f))).toHaveLength(1)
  })

  it("runs through npx from an empty directory, as the README's npx --package line does", async ({ expect }) => {
    const dir = NFS.mkdtempSync(Path.join(work, "npx-"))
    const tarball = packed.get("@session-tree/cli")!.tarball
    const result = await run("npx", ["--yes", "--package", tarball, "session-tree", "--version"], dir)
    expect(result.code, result.stderr).toBe(0)
    expect(result.stdout.trim()).toBe("0.1.0")
    expect(readme).toContain("npx --yes --package @session-tree/cli session-tree --help")
  })
})

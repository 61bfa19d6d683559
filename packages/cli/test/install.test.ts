/**
 * The packages as a user gets them (SPEC C6): each one built, packed with `npm
 * pack`, and installed from the tarballs into an empty project outside the
 * repository, with no workspace links; used there from plain Node (ESM), from
 * TypeScript (`moduleResolution: NodeNext`), and as the `session-tree` command.
 */
import { execFile } from "node:child_process"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const PACKAGES = ["core", "file", "pg", "view", "cli"] as const

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const run = (command: string, args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Run> =>
  new Promise((resolve, reject) => {
    execFile(command, args, { cwd, encoding: "utf8", maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1", ...env } }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") return reject(error)
      resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr })
    })
  })

const ok = async (command: string, args: ReadonlyArray<string>, cwd: string, env?: NodeJS.ProcessEnv): Promise<string> => {
  const result = await run(command, args, cwd, env)
  if (result.code !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.code}: ${result.stderr}${result.stdout}`)
  return result.stdout
}

/** The version of `name` the workspace runs on, so the project installs what the tests ran against. */
const installed = (name: string): string =>
  (JSON.parse(NFS.readFileSync(Path.join(root, "node_modules", name, "package.json"), "utf8")) as { version: string }).version

let work: string
let app: string
const tarballs = new Map<string, string>()

beforeAll(async () => {
  work = NFS.mkdtempSync(Path.join(NFS.realpathSync(OS.tmpdir()), "session-tree-install-"))
  app = Path.join(work, "app")
  NFS.mkdirSync(app)
  // The libraries' compiled output; the command's bundle is the one this run's global setup built.
  await ok("npm", ["run", "build:libraries"], root)
  const packed = JSON.parse(await ok("npm", ["pack", "--json", "--pack-destination", work, ...PACKAGES.flatMap((p) => ["--workspace", `packages/${p}`])], root)) as Array<
    { readonly name: string; readonly filename: string; readonly files: ReadonlyArray<{ readonly path: string }> }
  >
  for (const p of packed) tarballs.set(p.name, Path.join(work, p.filename))
  NFS.writeFileSync(Path.join(app, "package.json"), JSON.stringify({
    name: "consumer",
    private: true,
    type: "module",
    dependencies: {
      ...Object.fromEntries([...tarballs].map(([name, file]) => [name, `file:${file}`])),
      effect: installed("effect"),
      "@effect/sql": installed("@effect/sql"),
      "@effect/sql-pg": installed("@effect/sql-pg"),
      // What a TypeScript project on Node has; node-postgres's types are what @effect/sql-pg's declarations name.
      "@types/node": installed("@types/node"),
      "@types/pg": installed("@types/pg")
    }
  }, null, 2))
  await ok("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline"], app)
}, 600_000)

afterAll(() => {
  if (work !== undefined) NFS.rmSync(work, { recursive: true, force: true })
})

describe("the packed packages", { timeout: 120_000 }, () => {
  it("hold compiled JavaScript, declarations and source maps, no tests, and name their peers", () => {
    for (const name of PACKAGES) {
      const dir = Path.join(app, "node_modules", "@session-tree", name)
      const manifest = JSON.parse(NFS.readFileSync(Path.join(dir, "package.json"), "utf8")) as Record<string, unknown>
      expect(manifest["private"]).toBeUndefined()
      expect(NFS.existsSync(Path.join(dir, "test"))).toBe(false)
      expect(manifest["license"]).toBe("MIT")
      expect(NFS.readFileSync(Path.join(dir, "LICENSE"), "utf8")).toMatch(/^MIT License/)
      // The link is a copy of the tarball: no workspace link into the repository.
      expect(NFS.lstatSync(dir).isSymbolicLink()).toBe(false)
      if (name === "cli") {
        expect(NFS.existsSync(Path.join(dir, "dist", "session-tree.cjs"))).toBe(true)
        expect(manifest["dependencies"]).toBeUndefined()
        continue
      }
      for (const file of ["index.js", "index.d.ts", "index.js.map", "index.d.ts.map"]) expect(NFS.existsSync(Path.join(dir, "dist", file))).toBe(true)
      expect(Object.keys(manifest["peerDependencies"] as object)).toContain("effect")
      expect((manifest["exports"] as Record<string, unknown>)["./internal/*"]).toBeNull()
    }
    const pg = JSON.parse(NFS.readFileSync(Path.join(app, "node_modules", "@session-tree", "pg", "package.json"), "utf8")) as {
      peerDependencies: Record<string, string>
    }
    expect(Object.keys(pg.peerDependencies)).toEqual(expect.arrayContaining(["@effect/sql", "@effect/sql-pg", "effect"]))
  })

  it("work from a plain .mjs: the Effect API, the Promise facade, the views, the database layer", async () => {
    NFS.writeFileSync(Path.join(app, "app.mjs"), `
import { Ids, Sessions, SessionStore, SessionTree } from "@session-tree/core"
import { FileJournal } from "@session-tree/file"
import { SessionStore as PromiseStore, SessionTree as PromiseTree, SessionError } from "@session-tree/file/Promise"
import { PgJournal, Migrations } from "@session-tree/pg"
import { Html, Markdown } from "@session-tree/view"
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
  const listing = yield* (yield* Sessions.Sessions).list({ scope: dir })
  const loaded = yield* SessionStore.read(join(dir, "a.jsonl"))
  const markdown = yield* Markdown.render(loaded.header, loaded.entries)
  const html = yield* Html.render(loaded.header, loaded.entries)
  return [root.id, listing.total, markdown.includes("hello"), html.startsWith("<!DOCTYPE html>")]
})).pipe(Effect.provide(Live)))
console.log(JSON.stringify(shown))

const store = await PromiseStore.create(join(dir, "b.jsonl"))
const tree = new PromiseTree(store)
await tree.append({ role: "user", id: "m1", content: "promise" })
console.log(tree.activeMessages.map((m) => m.content).join(","), store.entries.length)
await store.close()
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
      "true SESSION_NOT_FOUND",
      "function object",
      "ERR_PACKAGE_PATH_NOT_EXPORTED"
    ])
  })

  it("type-check from TypeScript with moduleResolution NodeNext, and keep internal modules out of reach", async () => {
    NFS.writeFileSync(Path.join(app, "tsconfig.json"), JSON.stringify({
      compilerOptions: { module: "NodeNext", moduleResolution: "NodeNext", target: "ES2022", strict: true, noEmit: true, types: ["node"] },
      files: ["app.ts", "internal.ts"]
    }))
    NFS.writeFileSync(Path.join(app, "app.ts"), `
import { Ids, SessionStore, SessionTree, type SessionError } from "@session-tree/core"
import type { SessionEntry } from "@session-tree/core/Record"
import { FileJournal } from "@session-tree/file"
import { SessionStore as PromiseStore } from "@session-tree/file/Promise"
import { PgJournal } from "@session-tree/pg"
import { Markdown } from "@session-tree/view"
import { Effect, Layer } from "effect"

const program: Effect.Effect<SessionEntry, SessionError, never> = Effect.scoped(Effect.gen(function*() {
  const tree = yield* SessionTree.make(yield* SessionStore.create("a.jsonl"))
  return yield* tree.append({ role: "user", id: "m1", content: "hello" })
})).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)))
const db = PgJournal.layerUrl("postgres://localhost/db")
const store: Promise<PromiseStore> = PromiseStore.load("a.jsonl")
const text: Effect.Effect<string, SessionError> = Markdown.render({ type: "session", version: 1, id: "s", timestamp: "2026-01-02T03:04:05.006Z" }, [])
export { db, program, store, text }
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

  it("install the session-tree command, which runs its compiled bundle", async () => {
    const bin = Path.join(app, "node_modules", ".bin", "session-tree")
    const dir = NFS.mkdtempSync(Path.join(work, "cli-"))
    const env = { SESSION_TREE_DB: "" }
    expect((await ok(bin, ["--version"], dir, env)).trim()).toBe("0.1.0")
    expect((await ok(bin, ["create", "s.jsonl", "--id", "chat-1"], dir, env)).trim()).toBe("chat-1")
    const entry = (await ok(bin, ["append", "s.jsonl", "--user", "hello"], dir, env)).trim()
    expect(JSON.parse(await ok(bin, ["verify", "s.jsonl", "--json"], dir, env))).toEqual({ ok: true, entries: 1, leaf: entry, tail: "none" })
    const listed = JSON.parse(await ok(bin, ["list", "--json"], dir, env)) as Array<{ readonly id: string }>
    expect(listed.map((s) => s.id)).toEqual(["chat-1"])
  })
})

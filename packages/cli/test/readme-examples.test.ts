/**
 * Keeps README.md true: every example block is a file that tsc checks and this
 * test runs, printed results included; the CLI walkthrough runs as written; the
 * demo excerpt is what `npm start` prints; the error table lists every code.
 */
import { SessionErrorCode } from "@session-tree/core/SessionError"
import { prepareChild, runCommand } from "@session-tree/testing/Children"
import * as OS from "node:os"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import { afterAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { bin, removeTempDirs, STACK_FRAME, tempDir } from "./support.js"

const scope = Effect.runSync(Scope.make())
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})
const databaseUrl = () => Effect.runPromise(Scope.extend(freshDatabase("readme"), scope))
/** `url` with libpq's `connect_timeout` (seconds), which `PgJournal.layerUrl` reads. */
const withConnectTimeout = (url: string, seconds: number): string => {
  const parsed = new URL(url)
  parsed.searchParams.set("connect_timeout", String(seconds))
  return parsed.toString()
}

const root = fileURLToPath(new URL("../../../", import.meta.url))
const readme = NFS.readFileSync(Path.join(root, "README.md"), "utf8")

/** The fenced block right after `<!-- KIND: NAME -->`. */
const blocks = (kind: string): Array<{ readonly name: string; readonly body: string }> =>
  [...readme.matchAll(new RegExp(`<!-- ${kind}: (.+?) -->\\n\`\`\`\\w*\\n([\\s\\S]*?)\`\`\`\\n`, "g"))].map((m) => ({
    name: m[1]!,
    body: m[2]!
  }))

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const run = async (file: string, args: ReadonlyArray<string>, options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> => {
  const ran = await runCommand(file, args, { cwd: options.cwd ?? root, env: { ...process.env, ...options.env } })
  return { code: ran.code ?? 128 + OS.constants.signals[ran.signal!], stdout: ran.stdout, stderr: ran.stderr }
}

// Within the workspace, the packages resolve to their sources (see the packages' exports): the
// example is bundled from them once, as every child of the suites, and run by Node itself.
const runExample = async (file: string, env: NodeJS.ProcessEnv = {}) => run(process.execPath, [...(await prepareChild(file))], { env })

/** What an example says it prints: the `// …` comment after each `console.log(…)`, in order. */
const promisedOutput = (source: string): Array<string> =>
  source.split("\n").filter((line) => line.includes("console.log(") && line.includes(" // ")).map((line) =>
    line.slice(line.lastIndexOf(" // ") + 4)
  )

describe.concurrent("README.md", { timeout: 180_000 }, () => {
  const examples = blocks("example").filter((b) => b.name.endsWith(".ts"))

  it("has the Promise, the Effect and the PostgreSQL example, each identical to a checked file", ({ expect }) => {
    expect(examples.map((e) => e.name)).toEqual([
      "packages/cli/test/readme/promise-example.ts",
      "packages/cli/test/readme/effect-example.ts",
      "packages/cli/test/readme/pg-example.ts"
    ])
    for (const example of examples) {
      expect(example.body).toBe(NFS.readFileSync(Path.join(root, example.name), "utf8"))
    }
  })

  for (const example of examples) {
    it(`${example.name} runs and prints what its comments say`, async ({ expect }) => {
      const expected = promisedOutput(example.body)
      expect(expected.length).toBeGreaterThan(2)
      const tmp = tempDir()
      // The PostgreSQL example runs on a fresh database of the run's server. Its first connection
      // may wait on a machine busy with the whole run: the URL gives it a minute, not the default 5 s.
      const database = example.name.endsWith("pg-example.ts") ? { SESSION_TREE_DB: withConnectTimeout(await databaseUrl(), 60) } : {}
      const result = await runExample(Path.join(root, example.name), { TMPDIR: tmp, ...database })
      expect(result.stderr).toBe("")
      expect(result.code).toBe(0)
      expect(result.stdout.trimEnd().split("\n")).toEqual(expected)
    })
  }

  it("the CLI walkthrough runs as written", async ({ expect }) => {
    const [cli] = blocks("example").filter((b) => b.name === "cli")
    expect(cli).toBeDefined()
    const cwd = tempDir()
    // `npx session-tree` resolves to this bin (checked below); calling it directly saves npm's start-up per line.
    const script = `set -e\nnpx() { if [ "$1" = session-tree ]; then shift; node "$BIN" "$@"; else command npx "$@"; fi; }\n${cli!.body}`
    const result = await run("bash", ["-c", script], { cwd, env: { BIN: bin } })
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const lines = result.stdout.trimEnd().split("\n")
    const [created, second, third, header, ...rest] = lines
    expect(created).toBe("chat-1")
    expect(header).toMatch(/^session chat-1 .* 3 entries$/)
    const picture = rest.slice(0, 3)
    const log = rest.slice(3, 5)
    expect(rest).toHaveLength(6)
    expect(picture[0]).toMatch(/^● \S+ +user +"What is in \/project\?"$/)
    expect(picture[1]).toMatch(new RegExp(`^├── ○ ${second}  assistant`))
    expect(picture[2]).toMatch(new RegExp(`^└── ● ${third}  user +"Actually, which files are large\\?"  ← leaf$`))
    expect(log[0]).toMatch(/user +"What is in \/project\?"$/)
    expect(log[1]).toMatch(new RegExp(`^${third}  user +"Actually, which files are large\\?"$`))
    expect(JSON.parse(rest[5]!)).toEqual({ ok: true, entries: 3, leaf: third, tail: "none" })
  })

  it("npx session-tree works from the repository root", async ({ expect }) => {
    const result = await run("npx", ["--no-install", "session-tree", "--version"])
    expect(result.code).toBe(0)
    expect(result.stdout.trim()).toBe("0.1.0")
  })

  it("npm start (the demo) exits 0, prints the README excerpt and removes its temp dir", async ({ expect }) => {
    const result = await runExample(Path.join(root, "packages/cli/src/demo.ts"))
    expect(result.stderr).not.toMatch(STACK_FRAME)
    expect(result.code).toBe(0)
    // The header line holds the creation time: compare it without the time.
    const untimed = (text: string) => text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<time>").split("\n")
    const lines = untimed(result.stdout)
    const [excerpt] = blocks("output")
    expect(excerpt?.name).toBe("npm start")
    const shown = untimed(excerpt!.body.trimEnd())
    // The excerpt is a contiguous part of the output.
    const start = lines.indexOf(shown[0]!)
    expect(start).toBeGreaterThan(-1)
    expect(lines.slice(start, start + shown.length)).toEqual(shown)
    for (const claim of ["SESSION_TOOL_LINK", "tail \"incomplete\"", "SESSION_INVALID_JSON"]) {
      expect(result.stdout).toContain(claim)
    }
    const dir = /working in (\S+)/.exec(result.stdout)?.[1]
    expect(dir).toBeDefined()
    expect(NFS.existsSync(dir!)).toBe(false)
  })

  it("lists every error code of the library in its table", ({ expect }) => {
    const listed = [...readme.matchAll(/^\| `(SESSION_[A-Z0-9_]+)` \|/gm)].map((m) => m[1])
    expect([...listed].sort()).toEqual([...SessionErrorCode.literals].sort())
  })
})

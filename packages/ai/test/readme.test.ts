/**
 * Keeps the README's examples true: the blocks after `<!-- example -->` (the
 * codec) and `<!-- example: agent -->` run as written (against the sources) and
 * print what their comments say; the block after `<!-- example: provider -->`
 * (an agent on Anthropic's API, the real client) runs as written twice, two
 * processes over one session file, against a provider on this machine that
 * answers in the Messages API's format, reached through its `apiUrl`.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { expect, it } from "vitest"
import { prepareChild, runNode } from "@session-tree/testing/Children"
import { fakeProvider, KEY, sse } from "./support/provider.js"
import * as W from "./support/wire.js"

const here = fileURLToPath(new URL("../", import.meta.url))
const readme = NFS.readFileSync(Path.join(here, "README.md"), "utf8")

for (const marker of ["example", "example: agent"]) {
  it(`runs the README's block after <!-- ${marker} --> and prints what its comments say`, async () => {
    const block = new RegExp(`<!-- ${marker} -->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\`\\n`).exec(readme)?.[1]
    expect(block).toBeDefined()
    const expected = [...block!.matchAll(/console\.log\(.*\) \/\/ (.*)$/gm)].map((m) => m[1])
    expect(expected.length).toBeGreaterThan(0)
    // Inside the package, so that its imports resolve as a user's would.
    const dir = NFS.mkdtempSync(Path.join(here, "scratch-"))
    try {
      const file = Path.join(dir, "example.mjs")
      NFS.writeFileSync(file, block!)
      // Bundled from the sources once (as every child of the suites), run by Node itself.
      const ran = await runNode([...(await prepareChild(file))], { cwd: dir })
      expect(ran.code, ran.stderr).toBe(0)
      expect(ran.stdout.trimEnd().split("\n")).toEqual(expected)
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)
}

/** Runs the bundled example with Node itself (tracked, as every child of the suites); its stdout, or a failure with its stderr. */
const runExample = async (args: ReadonlyArray<string>, cwd: string, env: NodeJS.ProcessEnv) => {
  const ran = await runNode(args, { cwd, env: { ...process.env, ...env } })
  if (ran.code !== 0) throw new Error(`exit ${ran.code ?? ran.signal}\n${ran.stderr}`)
  return ran.stdout
}

it("runs the README's real-provider example twice, as two processes, against a provider on this machine", () =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const block = /<!-- example: provider -->\n```js\n([\s\S]*?)```\n/.exec(readme)?.[1]
    expect(block).toBeDefined()
    const provider = yield* fakeProvider
    const signature = "EqQBCkYIBxgCKkByZWFkbWVFeGFtcGxl"
    provider.reply(
      sse(W.anthropicEvents([
        { type: "thinking", thinking: "I should look.", signature },
        { type: "tool_use", id: "toolu_1", name: "list_dir", input: { path: "/project" } }
      ])),
      sse(W.anthropicEvents([{ type: "text", text: "README.md and src/." }])),
      sse(W.anthropicEvents([{ type: "text", text: "Yes, those two." }]))
    )
    const dir = NFS.mkdtempSync(Path.join(here, "scratch-"))
    yield* Effect.addFinalizer(() => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true })))
    const file = Path.join(dir, "example.mjs")
    NFS.writeFileSync(file, block!)
    const env = { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: provider.url }
    const args = yield* Effect.promise(() => prepareChild(file))
    const first = yield* Effect.promise(() => runExample(args, dir, env))
    expect(first.trimEnd().split("\n")).toEqual([
      "committed: system user",
      "committed: assistant tool",
      "committed: assistant",
      "README.md and src/."
    ])
    const second = yield* Effect.promise(() => runExample([...args, "Sure?"], dir, env))
    expect(second.trimEnd().split("\n")).toEqual(["committed: user", "committed: assistant", "Yes, those two."])
    // The second process loaded the session and sent the first turn's thinking back with its signature.
    const [, , third] = provider.bodies()
    expect(third.stream).toBe(true)
    expect(third.system).toEqual([{ type: "text", text: "You are a careful assistant." }])
    expect(third.messages[1].content[0]).toEqual({ type: "thinking", thinking: "I should look.", signature })
    for (const request of provider.requests) expect(request.headers["x-api-key"]).toBe(KEY)
  }))), 120_000)

it("the repository's README shows the same agent examples as this package's", () => {
  const root = NFS.readFileSync(Path.join(here, "../../README.md"), "utf8")
  const blocks = (text: string) =>
    ["example: agent", "example: provider"].map((marker) => new RegExp(`<!-- ${marker} -->\\n\`\`\`js\\n([\\s\\S]*?)\`\`\`\\n`).exec(text)?.[1])
  expect(blocks(readme).every((block) => block !== undefined)).toBe(true)
  expect(blocks(root)).toEqual(blocks(readme))
})

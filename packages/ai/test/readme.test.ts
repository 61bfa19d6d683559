/**
 * Keeps the README's examples true: the blocks after `<!-- example -->` (the
 * codec) and `<!-- example: agent -->` run as written (against the sources) and
 * print what their comments say.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { expect, it } from "vitest"
import { prepareChild, runNode } from "@session-tree/testing/Children"

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

it("the repository's README shows the same agent examples as this package's", () => {
  const root = NFS.readFileSync(Path.join(here, "../../README.md"), "utf8")
  const agentBlocks = (text: string) => {
    const start = text.indexOf("<!-- example: agent -->")
    const scripted = /```js\n[\s\S]*?```\n/.exec(text.slice(start))![0]
    const rest = text.slice(start + scripted.length)
    return [scripted, /```ts\n[\s\S]*?```\n/.exec(rest)![0]]
  }
  expect(agentBlocks(root)).toEqual(agentBlocks(readme))
})

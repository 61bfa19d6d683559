/**
 * `scripts/check-docs.mjs`, which `npm test` runs first: it passes a module whose every export has
 * `@since` and `@category`, and fails one with an untagged export, naming it.
 */
import { runNode } from "@session-tree/testing/Children"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { afterAll, describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const script = Path.join(root, "scripts", "check-docs.mjs")
const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "check-docs-"))
afterAll(() => NFS.rmSync(dir, { recursive: true, force: true }))

const TAGGED = `/**\n * One.\n *\n * @since 0.1.0\n * @category constants\n */\nexport const one = 1\n`

const check = (name: string, text: string) => {
  const file = Path.join(dir, name)
  NFS.writeFileSync(file, text)
  return runNode([script, file], { cwd: root })
}

describe("scripts/check-docs.mjs", { timeout: 60_000 }, () => {
  it("passes a module whose exports are all tagged", async () => {
    const run = await check("Tagged.ts", TAGGED)
    expect(run.code, run.stdout + run.stderr).toBe(0)
  })

  it("fails a module with an export without @category, naming it", async () => {
    const run = await check("Untagged.ts", `${TAGGED}/**\n * Two.\n *\n * @since 0.1.0\n */\nexport const two = 2\n`)
    expect(run.code).toBe(1)
    expect(run.stdout + run.stderr).toMatch(/Untagged\.ts:13: two has no @category$/m)
    expect(run.stdout + run.stderr).not.toMatch(/: one has no/)
  })
})

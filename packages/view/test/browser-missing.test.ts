/**
 * A machine without Chromium (`SESSION_TREE_CHROMIUM` names a launcher that is not there): the
 * browser tests are skipped and the run passes, each skipped test named with what to install and
 * how to run them; with REQUIRE_BROWSER=1 (as CI sets it), the run fails instead.
 */
import { runNode } from "@session-tree/testing/Children"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const vitest = Path.join(root, "node_modules", "vitest", "vitest.mjs")
const file = "packages/view/test/browser.test.ts"
const names = [...NFS.readFileSync(Path.join(root, file), "utf8").matchAll(/browserIt\(\s*"((?:[^"\\]|\\.)*)"/g)].map((m) => JSON.parse(`"${m[1]}"`) as string)

/** The browser tests in a vitest run of their own, where Chromium is not installed. */
const withoutChromium = (env: NodeJS.ProcessEnv) =>
  runNode([vitest, "run", "--project", "view", file], {
    cwd: root,
    env: { ...process.env, CI: "", REQUIRE_BROWSER: "", NO_COLOR: "1", SESSION_TREE_CHROMIUM: "/nonexistent/chromium", ...env }
  })

describe("the browser tests on a machine without Chromium", { timeout: 180_000 }, () => {
  it("are skipped, each named with what to install and how to run them, and the run passes", async () => {
    expect(names.length).toBeGreaterThan(3)
    const run = await withoutChromium({})
    const output = run.stdout + run.stderr
    expect(run.code, output).toBe(0)
    for (const name of names) {
      expect(output).toContain(`skipped (no Chromium; install it with sudo .ci/install-chromium.sh, then npx vitest run --project view ${file}): ${name}`)
    }
    // Every test of the file skipped, none run.
    const skipped = /Tests\s+(\d+) skipped \((\d+)\)/.exec(output)
    expect(skipped !== null && skipped[1] === skipped[2] && Number(skipped[1]) >= names.length, output).toBe(true)
  })

  it("fail the run when REQUIRE_BROWSER=1, as CI sets it", async () => {
    const run = await withoutChromium({ REQUIRE_BROWSER: "1" })
    const output = run.stdout + run.stderr
    expect(run.code, output).toBe(1)
    expect(output).toMatch(/FAILING the browser tests: CI or REQUIRE_BROWSER=1 is set/)
    expect(output).toContain("Chromium is installed, as CI requires")
  })
})

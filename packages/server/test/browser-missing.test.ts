/**
 * The server's browser tests on a machine without Chromium (`SESSION_TREE_CHROMIUM` names a
 * launcher that is not there): skipped, and the run passes, each skipped test named with what to
 * install and how to run them; with REQUIRE_BROWSER=1 (as CI sets it), the run fails instead.
 */
import { runNode } from "@session-tree/testing/Children"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, inject, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))
const vitest = Path.join(root, "node_modules", "vitest", "vitest.mjs")
const file = "packages/server/test/browser.test.ts"
const SKIPPED = `skipped (no Chromium; install it with sudo .ci/install-chromium.sh, then npx vitest run --project server ${file}): `

/** The browser tests in a vitest run of their own, where Chromium is not installed, on this run's PostgreSQL server. */
const withoutChromium = (env: NodeJS.ProcessEnv) =>
  runNode([vitest, "run", "--project", "server", file], {
    cwd: root,
    env: { ...process.env, CI: "", REQUIRE_BROWSER: "", NO_COLOR: "1", SESSION_TREE_CHROMIUM: "/nonexistent/chromium", SESSION_TREE_TEST_DB: inject("pgUrl"), ...env }
  })

// Both runs start at once: each is a vitest of its own, mostly waiting on its start.
let runs: { readonly skipped: ReturnType<typeof withoutChromium>; readonly required: ReturnType<typeof withoutChromium> } | undefined
const started = () => (runs ??= { skipped: withoutChromium({}), required: withoutChromium({ REQUIRE_BROWSER: "1" }) })

describe("the server's browser tests on a machine without Chromium", { timeout: 180_000 }, () => {
  it("are skipped, each named (on files and on PostgreSQL) with what to install and how to run them, and the run passes", async () => {
    const run = await started().skipped
    const output = run.stdout + run.stderr
    expect(run.code, output).toBe(0)
    const named = output.split("\n").filter((line) => line.startsWith(SKIPPED)).map((line) => line.slice(SKIPPED.length))
    // Every test of the file skipped, none run, and each of them named once.
    const skipped = /Tests\s+(\d+) skipped \((\d+)\)/.exec(output)
    expect(skipped !== null && skipped[1] === skipped[2], output).toBe(true)
    expect(named).toHaveLength(Number(skipped![1]))
    expect(new Set(named).size).toBe(named.length)
    for (const backend of ["files", "PostgreSQL"]) {
      expect(named.filter((name) => name.startsWith(`the served pages in Chromium, on ${backend} > `)).length, backend).toBeGreaterThanOrEqual(5)
    }
    expect(named).toContain("the served pages in Chromium, on files > opens a session of 100,000 entries that the command has not laid out yet with its first screen first, then its tree and facts")
    expect(named).toContain("the served pages in Chromium, on PostgreSQL > opens a session of 100,000 entries laid out with its first screen drawn within a second, and shows an append to it")
  })

  it("fail the run when REQUIRE_BROWSER=1, as CI sets it", async () => {
    const run = await started().required
    const output = run.stdout + run.stderr
    expect(run.code, output).toBe(1)
    expect(output).toMatch(/FAILING the browser tests: CI or REQUIRE_BROWSER=1 is set/)
    expect(output).toContain("CI or REQUIRE_BROWSER=1 is set, so the browser tests must run")
    expect(output).not.toContain(SKIPPED)
  })
})

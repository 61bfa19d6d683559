/**
 * A real headless Chromium for the page tests: Debian's `chromium`, driven by
 * playwright-core (whose own browser download cannot work offline).
 *
 * Missing Chromium skips the browser tests with a loud message, except when
 * `CI` or `REQUIRE_BROWSER=1` is set: there the tests fail, so a run cannot
 * pass on skipped tests. The binary is checked before launching, since a failed
 * launch leaves its profile directory behind in /tmp.
 */
import * as NFS from "node:fs"
import { type Browser, chromium } from "playwright-core"
import { it } from "vitest"

/**
 * The launcher Debian installs, and the binary it runs. `SESSION_TREE_CHROMIUM` names another
 * launcher (then that one alone must be executable): a path where there is none shows what a
 * machine without Chromium does.
 */
const override = process.env["SESSION_TREE_CHROMIUM"]
export const CHROMIUM = override !== undefined && override !== "" ? override : "/usr/bin/chromium"
const BINARY = override !== undefined && override !== "" ? override : "/usr/lib/chromium/chromium"

const executable = (path: string): boolean => {
  try {
    NFS.accessSync(path, NFS.constants.X_OK)
    return NFS.statSync(path).isFile()
  } catch {
    return false
  }
}

const flag = (value: string | undefined): boolean => value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false"

export const browserFound: boolean = executable(CHROMIUM) && executable(BINARY)
export const browserRequired: boolean = flag(process.env["CI"]) || process.env["REQUIRE_BROWSER"] === "1"

export const MISSING = `Chromium is not installed (${CHROMIUM}${BINARY === CHROMIUM ? "" : ` and ${BINARY}`} must be executable). ` +
  `Install it with: sudo .ci/install-chromium.sh  (apt-get install chromium fonts-liberation)`

/** How to run the browser tests once Chromium is installed. */
export const RUN_THEM = "npx vitest run --project view packages/view/test/browser.test.ts"

if (!browserFound && browserRequired) {
  const banner = "=".repeat(100)
  console.warn(`\n${banner}\nFAILING the browser tests: CI or REQUIRE_BROWSER=1 is set and ${MISSING}\n${banner}\n`)
}

/** Whether the browser tests run: always when Chromium is there, and also (to fail) when it is required. */
export const runBrowserTests: boolean = browserFound || browserRequired

/**
 * `it` for a test that needs Chromium: run when it is there (or required, to fail); otherwise
 * skipped, and named on stderr with what to install and how to run it.
 */
export const browserIt = (name: string, fn: () => Promise<void>, timeout?: number): void => {
  if (runBrowserTests) {
    it(name, fn, timeout)
    return
  }
  process.stderr.write(`skipped (no Chromium; install it with sudo .ci/install-chromium.sh, then ${RUN_THEM}): ${name}\n`)
  it.skip(name, fn)
}

export const launch = (): Promise<Browser> => {
  if (!browserFound) return Promise.reject(new Error(MISSING))
  // The resolver rule stops Chromium's background DNS lookups; Playwright adds --headless, --no-sandbox and the rest.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--host-resolver-rules=MAP * ~NOTFOUND"] })
}

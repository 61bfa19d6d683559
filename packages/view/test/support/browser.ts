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

/** The launcher Debian installs; it runs the binary below. */
export const CHROMIUM = "/usr/bin/chromium"
const BINARY = "/usr/lib/chromium/chromium"

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

export const MISSING = `Chromium is not installed (${CHROMIUM} and ${BINARY} must be executable). ` +
  `Install it with: sudo .ci/install-chromium.sh  (apt-get install chromium fonts-liberation)`

if (!browserFound) {
  const banner = "=".repeat(100)
  const what = browserRequired
    ? "FAILING the browser tests: CI or REQUIRE_BROWSER=1 is set and"
    : "SKIPPING the browser tests of @session-tree/view:"
  console.warn(`\n${banner}\n${what} ${MISSING}\n${banner}\n`)
}

/** Whether the browser tests run: always when Chromium is there, and also (to fail) when it is required. */
export const runBrowserTests: boolean = browserFound || browserRequired

export const launch = (): Promise<Browser> => {
  if (!browserFound) return Promise.reject(new Error(MISSING))
  // The resolver rule stops Chromium's background DNS lookups; Playwright adds --headless, --no-sandbox and the rest.
  return chromium.launch({ executablePath: CHROMIUM, args: ["--host-resolver-rules=MAP * ~NOTFOUND"] })
}

/**
 * Tests that call Pi run when it is installed and are skipped otherwise, each named on stderr
 * with the command that installs it (`support/pi.ts`).
 */
import { PI_INSTALL, PI_PACKAGE } from "@session-tree/testing/PiReference"
import { describe } from "vitest"
import { piInstalled } from "./pi.js"

/**
 * For `it.skipIf(withoutPi(name))(name, …)`: whether a test that calls Pi must be skipped (Pi is
 * not installed), saying so on stderr with its name and how to run it.
 */
export const withoutPi = (name: string): boolean => {
  if (piInstalled()) return false
  // CI installs Pi (.ci/run): there a missing Pi fails the run instead of skipping its checks.
  if (process.env["REQUIRE_PI"] === "1") throw new Error(`${PI_PACKAGE} is not installed, and REQUIRE_PI=1: ${PI_INSTALL} installs it`)
  process.stderr.write(`skipped (${PI_PACKAGE} is not installed; ${PI_INSTALL}, then run the tests again): ${name}\n`)
  return true
}

/**
 * `describe` for tests that call Pi: skipped when Pi is not installed, with a line on stderr
 * that names them and says how to run them.
 */
export const describePi = (name: string, body: () => void): void => {
  if (withoutPi(name)) describe.skip(name, body)
  else describe(name, body)
}


/**
 * Builds the command once per test run, so the tests run the compiled bundle of
 * the current sources, as users run it (vitest global setup of the cli project).
 */
import { execFileSync } from "node:child_process"
import { fileURLToPath } from "node:url"

export default function setup(): void {
  execFileSync(process.execPath, [fileURLToPath(new URL("../scripts/build.mjs", import.meta.url))], { stdio: "inherit" })
}

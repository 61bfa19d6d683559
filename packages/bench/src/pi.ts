/**
 * Pi (`@mariozechner/pi-coding-agent`), the reference agent SDK, imported once:
 * its entry point loads the whole agent (model SDKs included), which takes
 * seconds and is not part of any measurement.
 */
import * as NFS from "node:fs"
import type * as PiModule from "@mariozechner/pi-coding-agent"

let loaded: Promise<typeof PiModule> | undefined

export const pi = (): Promise<typeof PiModule> => (loaded ??= import("@mariozechner/pi-coding-agent"))

/** The version installed, for the report. */
export const piVersion = (): string => {
  // The package exports only its entry point (dist/index.js); package.json sits one level up.
  const entry = new URL(import.meta.resolve("@mariozechner/pi-coding-agent"))
  return (JSON.parse(NFS.readFileSync(new URL("../package.json", entry), "utf8")) as { version: string }).version
}

/**
 * Pi (`@mariozechner/pi-coding-agent`), the reference agent SDK the benchmark compares with. It
 * is not a dependency of the workspace (it brings a few hundred packages nothing else needs): the
 * first benchmark run installs it, pinned, into `.reference/` at the repository's root
 * (`@session-tree/testing/PiReference`), and later runs find it there. Only its session-manager
 * module is imported, once: what every suite measures.
 */
import { importPi, installedVersion, installPi, PI_PACKAGE, type PiSessionModule } from "@session-tree/testing/PiReference"

let loaded: Promise<PiSessionModule> | undefined

export const pi = (): Promise<PiSessionModule> =>
  (loaded ??= Promise.resolve().then(() => {
    installPi()
    return importPi<PiSessionModule>("dist/core/session-manager.js")
  }))

/** The version compared with, for the report: installed first when it is not yet. */
export const piVersion = (): string => {
  installPi()
  return installedVersion() ?? `${PI_PACKAGE} (not installed)`
}

/**
 * Pi (`@mariozechner/pi-coding-agent`), the reference agent SDK that the tests of the Pi mapping
 * and the benchmark's Pi comparison use. It is not a dependency of the workspace: it brings a
 * few hundred packages (model SDKs, a terminal UI with a native module) that nothing else needs.
 * It is installed on demand, pinned, in `.reference/` at the repository's root (`npm run
 * pi:install`, or the benchmark does it itself), and found there or in any `node_modules` above.
 *
 * The types below are the part of Pi's API the tests and the benchmark call, as Pi 0.73 declares
 * it, so that the workspace type-checks without the package.
 */
import { execFileSync } from "node:child_process"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/** The package and the version every measurement and test of Pi was made with. */
export const PI_PACKAGE = "@mariozechner/pi-coding-agent"
export const PI_VERSION = "0.73.1"

const root = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..")

/** Where `npm run pi:install` puts Pi: outside `node_modules`, so `npm ci` keeps it. */
export const REFERENCE_DIR = Path.join(root, ".reference")

/** The command that installs Pi for the tests that need it. */
export const PI_INSTALL = "npm run pi:install"

/** The installed package's directory: in `.reference/`, or the nearest `node_modules` above this file; undefined when there is none. */
export const piDirectory = (): string | undefined => {
  const inReference = Path.join(REFERENCE_DIR, "node_modules", ...PI_PACKAGE.split("/"))
  if (NFS.existsSync(Path.join(inReference, "package.json"))) return inReference
  for (let dir = Path.dirname(fileURLToPath(import.meta.url)); ; dir = Path.dirname(dir)) {
    const candidate = Path.join(dir, "node_modules", ...PI_PACKAGE.split("/"))
    if (NFS.existsSync(Path.join(candidate, "package.json"))) return candidate
    if (Path.dirname(dir) === dir) return undefined
  }
}

/** The version of the installed package, or undefined. */
export const installedVersion = (): string | undefined => {
  const dir = piDirectory()
  return dir === undefined ? undefined : (JSON.parse(NFS.readFileSync(Path.join(dir, "package.json"), "utf8")) as { version: string }).version
}

/** Installs Pi, pinned, into `.reference/` (npm, from the registry), unless it is there; returns its directory. */
export const installPi = (): string => {
  const found = piDirectory()
  if (found !== undefined) return found
  NFS.mkdirSync(REFERENCE_DIR, { recursive: true })
  // A package.json of its own, so that npm installs here and not into the workspace. No install
  // script runs: what the tests and the benchmark use of Pi (its session manager) needs none.
  const manifest = Path.join(REFERENCE_DIR, "package.json")
  if (!NFS.existsSync(manifest)) NFS.writeFileSync(manifest, `${JSON.stringify({ private: true, description: "Pi, the reference agent SDK, for the tests of the Pi mapping and the benchmark" }, null, 2)}\n`)
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--save-exact", "--ignore-scripts", `${PI_PACKAGE}@${PI_VERSION}`], { cwd: REFERENCE_DIR, stdio: "inherit" })
  const dir = piDirectory()
  if (dir === undefined) throw new Error(`npm installed ${PI_PACKAGE} but it is not in ${REFERENCE_DIR}`)
  return dir
}

/** Imports a module of the installed package by its file (`dist/index.js`, `dist/core/session-manager.js`). */
export const importPi = async <A>(file: string): Promise<A> => {
  const dir = piDirectory()
  if (dir === undefined) throw new Error(`${PI_PACKAGE} is not installed: ${PI_INSTALL} installs it`)
  return (await import(pathToFileURL(Path.join(dir, file)).href)) as A
}

// --- The part of Pi's API in use --------------------------------------------------------------

/** A line of a Pi session file after its header. */
export interface PiEntry {
  readonly type: string
  readonly id: string
  readonly parentId: string | null
  readonly timestamp: string
  readonly [key: string]: unknown
}

export interface PiHeader {
  readonly type: "session"
  readonly version?: number
  readonly id: string
  readonly timestamp: string
  readonly cwd: string
  readonly [key: string]: unknown
}

/** What `appendMessage` takes: Pi's user, assistant and tool-result messages and its own kinds (built by the tests as plain objects). */
export interface PiMessage {
  readonly role: string
  readonly [key: string]: unknown
}

/** Content as `appendCustomMessageEntry` takes it: a string, or text and image parts. */
export type PiCustomContent = string | ReadonlyArray<{ readonly type: string; readonly [key: string]: unknown }>

export interface PiSessionManager {
  appendMessage(message: PiMessage): string
  appendThinkingLevelChange(thinkingLevel: string): string
  appendModelChange(provider: string, modelId: string): string
  appendCompaction(summary: string, firstKeptEntryId: string, tokensBefore: number, details?: unknown, fromHook?: boolean): string
  appendCustomEntry(customType: string, data?: unknown): string
  appendSessionInfo(name: string): string
  appendCustomMessageEntry(customType: string, content: PiCustomContent, display: boolean, details?: unknown): string
  appendLabelChange(targetId: string, label: string | undefined): string
  branchWithSummary(branchFromId: string | null, summary: string, details?: unknown, fromHook?: boolean): string
  branch(branchFromId: string): void
  resetLeaf(): void
  getLeafId(): string | null
  getEntry(id: string): PiEntry | undefined
  getBranch(fromId?: string): Array<PiEntry>
  getHeader(): PiHeader | null
  getEntries(): Array<PiEntry>
}

export interface PiSessionInfo {
  readonly path: string
  readonly id: string
  readonly [key: string]: unknown
}

export interface PiSessionManagerClass {
  open(path: string, sessionDir?: string, cwdOverride?: string): PiSessionManager
  create(cwd: string, sessionDir?: string): PiSessionManager
  inMemory(cwd?: string): PiSessionManager
  list(cwd: string, sessionDir?: string): Promise<Array<PiSessionInfo>>
}

/** Pi's session-manager module (`dist/core/session-manager.js`; its main entry exports the same). */
export interface PiSessionModule {
  readonly SessionManager: PiSessionManagerClass
  readonly CURRENT_SESSION_VERSION: number
  readonly buildSessionContext: (entries: ReadonlyArray<PiEntry>, leafId?: string | null) => { readonly messages: Array<PiMessage> }
  readonly parseSessionEntries: (content: string) => Array<PiHeader | PiEntry>
}

/**
 * Pi's own SessionManager for the tests: the reference agent SDK writes the
 * session files that `PiSession.fromPi` is tested on, and reads what the
 * mapping back gives. Pi is not a dependency of the workspace: it is installed
 * on demand (`npm run pi:install`, see `@session-tree/testing/PiReference`).
 * The tests that need it run when it is there and are skipped, named, with the
 * command that installs it, when it is not; the recorded check
 * (`pi-recorded.test.ts`) runs either way. Only its session-manager module is
 * imported (its main entry loads the whole agent, which takes over a second).
 */
import * as NFS from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import {
  importPi,
  installedVersion,
  PI_INSTALL,
  PI_PACKAGE,
  PI_VERSION,
  type PiCustomContent,
  type PiMessage as Message,
  type PiSessionManager,
  type PiSessionModule
} from "@session-tree/testing/PiReference"

export type PiModule = PiSessionModule
export type { PiSessionManager }
export type PiMessage = Message

/** Whether Pi is installed here, so that the tests that call it can run. */
export const piInstalled = (): boolean => installedVersion() !== undefined

/** Pi's session-manager module (`dist/core/session-manager.js` of the installed package). */
export const loadPi = async (): Promise<PiModule> => {
  const version = installedVersion()
  if (version === undefined) throw new Error(`${PI_PACKAGE} is not installed: ${PI_INSTALL} installs it`)
  const module = await importPi<PiModule>(Path.join("dist", "core", "session-manager.js"))
  // The facts these tests rely on were measured on format 3 as Pi 0.73 writes it.
  if (module.CURRENT_SESSION_VERSION !== 3) throw new Error(`Pi ${version} writes session format ${module.CURRENT_SESSION_VERSION}, not 3 (the tests pin ${PI_VERSION})`)
  return module
}

export type PiPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly data: string; readonly mimeType: string }
  | { readonly type: "thinking"; readonly thinking: string; readonly thinkingSignature?: string; readonly redacted?: boolean }
  | { readonly type: "toolCall"; readonly id: string; readonly name: string; readonly arguments: Record<string, unknown> }

/** A 1x1 PNG, base64, as Pi stores an image part. */
export const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

let epoch = Date.parse("2025-01-15T10:00:00.000Z")
/** Message timestamps (epoch ms) as Pi's agent sets them: metadata the conversion does not keep. */
const now = (): number => (epoch += 1000)

const usage = {
  input: 100, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: 120,
  cost: { input: 0.0003, output: 0.0003, cacheRead: 0, cacheWrite: 0, total: 0.0006 }
}

export const piUser = (content: string | ReadonlyArray<PiPart>): PiMessage =>
  ({ role: "user", content, timestamp: now() }) as unknown as PiMessage

/** An assistant message with the metadata Pi's agent writes (api, provider, model, usage, stopReason). */
export const piAssistant = (content: ReadonlyArray<PiPart>, extra: Record<string, unknown> = {}): PiMessage =>
  ({
    role: "assistant",
    content,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage,
    stopReason: content.some((part) => part.type === "toolCall") ? "toolUse" : "stop",
    timestamp: now(),
    ...extra
  }) as unknown as PiMessage

export const piToolResult = (
  toolCallId: string,
  toolName: string,
  content: ReadonlyArray<PiPart>,
  isError = false,
  details?: unknown
): PiMessage => ({ role: "toolResult", toolCallId, toolName, content, details, isError, timestamp: now() }) as unknown as PiMessage

export const piBash = (command: string, output: string): PiMessage =>
  ({ role: "bashExecution", command, output, exitCode: 0, cancelled: false, truncated: false, timestamp: now() }) as unknown as PiMessage

export const piCustom = (customType: string, content: string): PiMessage =>
  ({ role: "custom", customType, content, display: true, timestamp: now() }) as unknown as PiMessage

/** Parts as `appendCustomMessageEntry` takes them (text and image parts only). */
export const piParts = (parts: ReadonlyArray<PiPart>): PiCustomContent => parts

export const text = (t: string): PiPart => ({ type: "text", text: t })
export const image = (data: string = PNG): PiPart => ({ type: "image", data, mimeType: "image/png" })
export const thinking = (t: string, extra: { thinkingSignature?: string; redacted?: boolean } = {}): PiPart => ({ type: "thinking", thinking: t, ...extra })
export const toolCall = (id: string, name: string, args: Record<string, unknown>): PiPart => ({ type: "toolCall", id, name, arguments: args })

/** A directory of its own under the system's temp directory, for one test file's Pi sessions. */
export const tempDir = (): string => NFS.mkdtempSync(Path.join(NFS.realpathSync(os.tmpdir()), "pi-session-"))

/**
 * A session written by Pi's SessionManager at `file` (which must not exist: `open` on an existing
 * file would migrate and rewrite it). Pi writes nothing before the first assistant message, so
 * `build` must append one. Returns the manager and the file's bytes.
 */
export const writePi = (
  pi: PiModule,
  file: string,
  build: (sm: PiSessionManager) => void
): { readonly sm: PiSessionManager; readonly bytes: Uint8Array } => {
  if (NFS.existsSync(file)) throw new Error(`${file} exists`)
  const sm = pi.SessionManager.open(file, Path.dirname(file), "/home/user/project")
  build(sm)
  if (!NFS.existsSync(file)) throw new Error("Pi wrote no file: the session has no assistant message")
  return { sm, bytes: NFS.readFileSync(file) }
}

/** The 1-based line of the Pi file holding the entry `id`. */
export const lineOf = (bytes: Uint8Array, id: string): number => {
  const lines = new TextDecoder().decode(bytes).split("\n")
  const index = lines.findIndex((line) => line !== "" && (JSON.parse(line) as { id?: unknown }).id === id)
  if (index < 1) throw new Error(`no entry ${id}`)
  return index + 1
}

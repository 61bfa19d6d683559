/**
 * Pi's own SessionManager for the tests: the reference agent SDK writes the
 * session files that `PiSession.fromPi` is tested on. The package exports only
 * its main entry, whose import takes over a second; its session-manager module
 * alone takes a tenth of that. So the module is found the way Node finds the
 * package (the nearest node_modules above this file holding it, wherever the
 * workspace hoisted it) and imported by its file URL; its types are the ones
 * the main entry exports, which are the same classes.
 */
import * as NFS from "node:fs"
import * as os from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type * as Pi from "@mariozechner/pi-coding-agent"

const PACKAGE = Path.join("node_modules", "@mariozechner", "pi-coding-agent")

const packageDir = (): string => {
  for (let dir = Path.dirname(fileURLToPath(import.meta.url)); ; dir = Path.dirname(dir)) {
    const candidate = Path.join(dir, PACKAGE)
    if (NFS.existsSync(Path.join(candidate, "package.json"))) return candidate
    if (Path.dirname(dir) === dir) throw new Error("@mariozechner/pi-coding-agent is not installed")
  }
}

export type PiModule = Pick<typeof Pi, "SessionManager" | "buildSessionContext" | "CURRENT_SESSION_VERSION">

/** Pi's session-manager module (`dist/core/session-manager.js` of the installed package). */
export const loadPi = async (): Promise<PiModule> => {
  const dir = packageDir()
  const { version } = JSON.parse(NFS.readFileSync(Path.join(dir, "package.json"), "utf8")) as { version: string }
  const module = (await import(pathToFileURL(Path.join(dir, "dist", "core", "session-manager.js")).href)) as PiModule
  // The facts these tests rely on were measured on format 3 as Pi 0.73 writes it.
  if (module.CURRENT_SESSION_VERSION !== 3) throw new Error(`Pi ${version} writes session format ${module.CURRENT_SESSION_VERSION}, not 3`)
  return module
}

export type PiSessionManager = Pi.SessionManager
/** What `SessionManager.appendMessage` takes: Pi's user, assistant and tool-result messages and its own kinds. */
export type PiMessage = Parameters<Pi.SessionManager["appendMessage"]>[0]
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
export const piParts = (parts: ReadonlyArray<PiPart>): Parameters<Pi.SessionManager["appendCustomMessageEntry"]>[1] =>
  parts as unknown as Parameters<Pi.SessionManager["appendCustomMessageEntry"]>[1]

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
  build: (sm: Pi.SessionManager) => void
): { readonly sm: Pi.SessionManager; readonly bytes: Uint8Array } => {
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

/** Helpers for the CLI tests: run the real bin, and build session files through the library. */
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Ids from "@session-tree/core/Ids"
import type { SessionEntry } from "@session-tree/core/Record"
import * as SessionStore from "@session-tree/core/SessionStore"
import { runNode } from "@session-tree/testing/Children"
import * as V1 from "@session-tree/testing/Version1"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export const bin = fileURLToPath(new URL("../bin/session-tree.cjs", import.meta.url))

export interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

// Start-up is CPU-bound: more spawns at once than cores only makes each one slower.
const slots = Math.max(2, OS.availableParallelism())
let running = 0
const waiting: Array<() => void> = []
const acquire = (): Promise<void> =>
  running < slots ? (running++, Promise.resolve()) : new Promise((resolve) => waiting.push(resolve))
const release = (): void => {
  const next = waiting.shift()
  if (next === undefined) running--
  else next()
}

/** What a run may set besides its arguments: environment variables, and what it reads on stdin. */
export interface RunOptions {
  readonly env?: NodeJS.ProcessEnv
  readonly input?: string | Uint8Array
  /** The directory it runs in (default: the repository's). */
  readonly cwd?: string
  /** Another user to run as (the tests must run as root). */
  readonly uid?: number
  readonly gid?: number
}

/** Spawns `node bin/session-tree.cjs …args`, as npm's `.bin` link does; a last object sets environment variables or stdin. */
export const runCli = async (...args: ReadonlyArray<string | RunOptions>): Promise<Run> => {
  const last = args.at(-1)
  const options = typeof last === "object" ? last : {}
  const words = args.filter((a): a is string => typeof a === "string")
  await acquire()
  try {
    return await spawnCli(words, options)
  } finally {
    release()
  }
}

/** Runs the command once, without the limit on concurrent runs; a signal is reported as the shell does (128 + its number). */
export const spawnCli = async (args: ReadonlyArray<string>, options: RunOptions = {}): Promise<Run> => {
  // SESSION_TREE_DB of the environment that runs the tests must not choose the backend of a file test.
  const env = { ...process.env, SESSION_TREE_DB: "", NO_COLOR: "1", ...options.env }
  const ran = await runNode([bin, ...args], { env, input: options.input, uid: options.uid, gid: options.gid, ...(options.cwd === undefined ? {} : { cwd: options.cwd }) })
  return { code: ran.code ?? 128 + OS.constants.signals[ran.signal!], stdout: ran.stdout, stderr: ran.stderr }
}

/** The first whitespace-separated word: where the error code must be. */
export const firstWord = (text: string): string => text.trimStart().split(/\s+/)[0] ?? ""

/** A Node stack frame line, which no output of the command may contain. */
export const STACK_FRAME = /^\s+at .+[:(]/m

const dirs: Array<string> = []
export const tempDir = (): string => {
  const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-cli-"))
  dirs.push(dir)
  return dir
}
export const removeTempDirs = (): void => {
  for (const dir of dirs.splice(0)) NFS.rmSync(dir, { recursive: true, force: true })
}

const Live = Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)

const assistantCall = {
  role: "assistant",
  id: "m-2",
  content: "Let me look.",
  toolCalls: [{ id: "call-1", name: "list_dir", arguments: { path: "/project" } }]
} as const

/**
 * The Trace shape of the spec, with a tool call on the old branch:
 *
 *   entry-001 user ─┬─ entry-002 assistant (calls call-1) ─ entry-003 tool (answers call-1)
 *                   └─ entry-004 assistant ─ entry-005 user   ← newest, so the active leaf
 */
export const writeConversation = (path: string): Promise<ReadonlyArray<SessionEntry>> =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path, { id: "s-1", version: 1 })
    const root = yield* store.append(null, { role: "user", id: "m-1", content: "What is in /project?" })
    const call = yield* store.append(root.id, assistantCall)
    yield* store.append(call.id, {
      role: "tool",
      id: "m-3",
      toolCallId: "call-1",
      toolName: "list_dir",
      content: "README.md\nsrc/",
      isError: false
    })
    const other = yield* store.append(root.id, { role: "assistant", id: "m-4", content: "Shall I list it recursively?", toolCalls: [] })
    yield* store.append(other.id, { role: "user", id: "m-5", content: "Yes, please." })
    return V1.entries(store.entries)
  })).pipe(Effect.provide(Live)))

/** Every record of a file, parsed line by line (for files the tests wrote as canonical). */
export const records = (path: string): Array<Record<string, unknown>> =>
  NFS.readFileSync(path, "utf8").split("\n").filter((line) => line !== "").map((line) => JSON.parse(line))

/** A boot ID that is not this machine's, so `recover` knows the writer of a leftover is gone. */
export const otherBoot = (): string => {
  const mine = NFS.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").replace(/-/g, "").slice(0, 8)
  return mine === "0badb007" ? "0badb008" : "0badb007"
}

/**
 * Sessions for the tests with the real provider clients: a session file in a
 * temporary directory (removed with the scope), and an agent over it and a
 * model layer, built afresh each time as a new process would (a reload).
 */
import type * as LanguageModel from "@effect/ai/LanguageModel"
import { Ids, type Record, type RecordV2, SessionStore, SessionTree } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { Agent } from "../../src/index.js"
import { handlers, tools } from "./scripted.js"

/** A directory of its own, removed when the scope closes. */
export const tempDir: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "st-ai-"))),
  (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
)

/** The session at `file` (created when absent), loaded whole as a new process loads it. */
export const fileSession = (file: string) =>
  SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerOpen(file)),
    Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)),
    Layer.orDie
  )

export const FILES = { "/project": ["README.md", "src/"] }

/** The toolkit's handlers: `list_dir` answers from `FILES`. */
export const Handlers = handlers(FILES)

/**
 * Runs `body` with an agent (the toolkit, and `options`) over the session at `file` and `model`,
 * both built for this run alone and released after it.
 */
export const withAgent = <A, E>(
  file: string,
  model: Layer.Layer<LanguageModel.LanguageModel>,
  options: Agent.Options<typeof tools extends { readonly tools: infer T } ? T extends globalThis.Record<string, any> ? T : never : never>,
  body: (agent: Agent.Service, tree: SessionTree.SessionTree) => Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  Effect.gen(function*() {
    const tree = yield* SessionTree.SessionTree
    const agent = yield* Agent.make(options)
    return yield* body(agent, tree)
  }).pipe(Effect.provide(Layer.mergeAll(fileSession(file), model, Handlers)), Effect.scoped)

export const messageOf = (entry: Record.Entry): RecordV2.Message => (entry as RecordV2.MessageEntry).message
export const roles = (entries: ReadonlyArray<Record.Entry>) =>
  entries.map((entry) => (entry as RecordV2.SessionEntry).kind === "message" ? messageOf(entry).role : (entry as RecordV2.SessionEntry).kind)

/** The session's entries as a fresh read-only load sees them. */
export const readEntries = (file: string) =>
  Effect.map(SessionStore.read(file), (loaded) => loaded.entries as ReadonlyArray<RecordV2.SessionEntry>).pipe(
    Effect.provide(FileJournal.layerWithFs()),
    Effect.orDie
  )

/**
 * A server for the tests, in this process, over a directory of session files,
 * started in a scope of its own and stopped by `stop` (over a database:
 * `serveDatabase.ts`). The corpus (`@session-tree/testing/Corpus`) is written
 * first where asked.
 */
import * as Ids from "@session-tree/core/Ids"
import type * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as Server from "../../src/Server.js"

export interface Served extends Server.Running {
  readonly backend: "files" | "database"
  /** The directory (files) or the database URL. */
  readonly where: string
  /** The key of a corpus session in URLs: its file name, or its ID. */
  readonly keyOf: (name: string) => string
  /** Stores sessions through the library while the server runs (a database). */
  readonly add?: (records: ReadonlyArray<Sessions.Records>) => Promise<void>
  readonly stop: () => Promise<void>
}

export const tempDir = (label: string): string => NFS.realpathSync(NFS.mkdtempSync(Path.join(OS.tmpdir(), `session-tree-${label}-`)))

export const writeCorpus = (dir: string): void => {
  for (const session of Corpus.corpus) NFS.writeFileSync(Path.join(dir, `${session.name}.jsonl`), Corpus.fileText(session))
}

const files = Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)

/** Starts a server over the session files of `dir`. */
export const serveFiles = async (dir: string, options: Partial<Server.Options> = {}): Promise<Served> => {
  const scope = Effect.runSync(Scope.make())
  try {
    const running = await Effect.runPromise(
      Server.serve({ backend: "files", directory: dir, ...options }).pipe(Scope.extend(scope), Effect.provide(files))
    )
    return { ...running, backend: "files", where: dir, keyOf: (name) => `${name}.jsonl`, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
  } catch (error) {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    throw error
  }
}


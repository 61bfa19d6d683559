/**
 * What the conformance suite needs of a backend besides its `SessionJournal`:
 * fresh locations, and a way to put lines into the backend and read them back
 * behind the library's back, as a crash, an old version or a person editing
 * the data would. Every backend is held to the same rules for what it holds.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"

export interface KitService {
  /** What `Sessions.list` takes as its scope to list this kit's sessions (a directory for files). */
  readonly scope: string | undefined
  /** A location no test has used, as the journal takes it (`name` only makes it readable). */
  readonly location: (name: string) => string
  /** Stores exactly `lines` (the header's first, none with a terminator) at `location`, replacing what is there. */
  readonly put: (location: string, lines: ReadonlyArray<string>) => Effect.Effect<void>
  /** The lines stored at `location` now, or undefined when nothing is. */
  readonly raw: (location: string) => Effect.Effect<ReadonlyArray<string> | undefined>
}

export class Kit extends Context.Tag("@session-tree/conformance/Kit")<Kit, KitService>() {}

export interface Backend {
  readonly name: string
  readonly layer: Layer.Layer<SessionJournal | SessionCatalog | Kit, unknown>
}

let sequence = 0
const unique = (name: string) => `${name}-${++sequence}`

/** The memory journal over a map the kit reads and writes. */
export const memory: Backend = {
  name: "memory",
  layer: Layer.suspend(() => {
    const storage: MemoryJournal.Storage = new Map()
    const kit: KitService = {
      scope: undefined,
      location: unique,
      put: (location, lines) => Effect.sync(() => void storage.set(location, lines.slice())),
      raw: (location) => Effect.sync(() => storage.get(location))
    }
    return Layer.merge(MemoryJournal.layerStorage(storage), Layer.succeed(Kit, kit))
  })
}

/** The file journal on the real filesystem, in a directory of its own removed when the layer is released. */
export const file: Backend = {
  name: "file",
  layer: Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-conformance-"))),
        (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
      ),
      (dir) => {
        const kit: KitService = {
          scope: dir,
          location: (name) => Path.join(dir, `${unique(name)}.jsonl`),
          put: (location, lines) => Effect.sync(() => NFS.writeFileSync(location, lines.map((line) => `${line}\n`).join(""))),
          raw: (location) =>
            Effect.sync(() => {
              if (!NFS.existsSync(location)) return undefined
              const text = NFS.readFileSync(location, "utf8")
              if (text === "") return []
              return text.endsWith("\n") ? text.slice(0, -1).split("\n") : text.split("\n")
            })
        }
        return Layer.merge(FileJournal.layerWithFs(), Layer.succeed(Kit, kit))
      }
    )
  )
}

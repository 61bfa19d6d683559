/**
 * The catalog of session files (`session-tree list`): the `*.jsonl` names directly
 * in a directory, each with a version made of its identity, size and times, so
 * that a listing reads a file again whenever anything about it changed. The
 * directory is resolved through symlinks once, as a store resolves its own,
 * so a listed location is the one its store reports. A name
 * that is not a regular file is still listed (its read then fails with
 * SESSION_NOT_REGULAR_FILE): nothing is hidden. `delete` removes a session file
 * and its blob directory whole, behind the marker a commit locks the file with.
 */
import { SessionCatalog, type SessionCatalogService } from "@session-tree/core/SessionCatalog"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Fs, type FsService } from "./Fs.js"
import * as internal from "./internal/fileCatalog.js"

/**
 * The catalog of session files, every step through `fs`, reading sessions through the file journal.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: (fs: FsService) => SessionCatalogService = internal.make

/**
 * The file catalog over the `Fs` service in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<SessionCatalog, never, Fs> = Layer.effect(SessionCatalog, Effect.map(Fs, make))

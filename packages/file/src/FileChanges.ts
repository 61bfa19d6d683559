/**
 * What changes in a directory of session files, as it changes (`SessionChanges`):
 * the kernel's notifications (`fs.watch`, inotify on Linux) for the directory,
 * gathered for a few milliseconds, each name that is a session's (or its
 * marker's) looked at again with `lstat`, and reported only when the catalog's
 * version of it changed. Everything is looked at again (`Resync`) when the
 * kernel gives no name, the watcher fails, and every 30 seconds in case an event
 * was dropped (a network file system may give none for another machine's writes).
 *
 * @since 0.2.0
 */
import { SessionChanges, type SessionChangesService } from "@session-tree/core/SessionChanges"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { Fs, type FsService } from "./Fs.js"
import * as internal from "./internal/fileChanges.js"

/**
 * `gather`: how long events are gathered into one batch (15 ms); `resyncEvery`: how often
 * everything is looked at again (30 seconds).
 * @since 0.2.0
 * @category models
 */
export type Options = internal.Options

/**
 * The changes of session files, every `lstat` through `fs`.
 * @since 0.2.0
 * @category constructors
 */
export const make: (fs: FsService, options?: Options) => SessionChangesService = internal.make

/**
 * The changes of session files over the `Fs` in context.
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<SessionChanges, never, Fs> = Layer.effect(SessionChanges, Effect.map(Fs, (fs) => make(fs)))

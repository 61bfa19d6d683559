/**
 * The port through which a backend says what changed, as it changes: a file
 * written or removed in a directory (`fs.watch`), a commit in a database
 * (`LISTEN`/`NOTIFY`, sent in the commit's transaction). What a change means is
 * still read through the catalog and the journal: a change only says where to
 * look again, with the catalog's version of what is there now.
 *
 * A backend that may have missed changes (a watcher restarted, a connection
 * lost and made again) says `Resync`: whoever follows must look at everything
 * again (`SessionCatalog.scan`).
 *
 * @since 0.2.0
 */
import * as Context from "effect/Context"
import type * as Stream from "effect/Stream"
import type { Entry, ScanError } from "./SessionCatalog.js"

/**
 * One change: a session there now (created or changed) with the catalog's entry for it, a session
 * gone, or everything to be looked at again.
 * @since 0.2.0
 * @category models
 */
export type Change =
  | { readonly _tag: "Changed"; readonly entry: Entry }
  | { readonly _tag: "Removed"; readonly location: string }
  | { readonly _tag: "Resync" }

/**
 * @since 0.2.0
 * @category port
 */
export interface SessionChangesService {
  /**
   * The changes to the sessions of `directory` (files; a database ignores it) until the stream is
   * interrupted, in batches as they come (a burst of writes to one session is one change). The
   * first batch is `Resync`, once the watch is live: a follower looks at everything then, and
   * misses nothing between that look and the changes that follow. The watcher is released when
   * the stream ends. Fails only when the directory cannot be watched at all (`ScanError`).
   */
  readonly watch: (directory: string | undefined) => Stream.Stream<ReadonlyArray<Change>, ScanError>
}

/**
 * @since 0.2.0
 * @category port
 */
export class SessionChanges extends Context.Tag("@session-tree/SessionChanges")<SessionChanges, SessionChangesService>() {}

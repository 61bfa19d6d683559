/**
 * What changes in a PostgreSQL database, as it changes (`SessionChanges`): the
 * migration's trigger sends a session's ID on the channel `session_tree_changes`
 * in the transaction of every create, append, delete and new incarnation, so a
 * `LISTEN` hears of a commit when it commits, from any node. Each ID heard is
 * looked up for its catalog version; a session gone is reported removed. The
 * listener also sends itself a notification every 10 seconds: a connection that
 * stops hearing them is lost, though nothing said so, and is listened on again,
 * followed by a `Resync`.
 *
 * @since 0.2.0
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import { SessionChanges, type SessionChangesService } from "@session-tree/core/SessionChanges"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as internal from "./internal/changes.js"

/**
 * `gather`: how long notifications are gathered into one batch (15 ms); `heartbeat`: how often the
 * listener checks its connection (10 seconds); `retryAfter`: the wait before listening again after
 * a lost connection (1 second).
 * @since 0.2.0
 * @category models
 */
export type Options = internal.Options

/**
 * The channel the trigger notifies on.
 * @since 0.2.0
 * @category constants
 */
export const CHANNEL: string = internal.CHANNEL

/**
 * The changes of the sessions in `client`'s database.
 * @since 0.2.0
 * @category constructors
 */
export const make: (client: PgClient.PgClient, options?: Options) => SessionChangesService = internal.make

/**
 * The changes over the `PgClient` in context.
 * @since 0.2.0
 * @category layers
 */
export const layer: Layer.Layer<SessionChanges, never, PgClient.PgClient> = Layer.effect(SessionChanges, Effect.map(PgClient.PgClient, (client) => make(client)))

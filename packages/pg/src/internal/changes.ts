import { SqlError } from "@effect/sql/SqlError"
import type * as PgClient from "@effect/sql-pg/PgClient"
import type { Change, SessionChangesService } from "@session-tree/core/SessionChanges"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { MAX_ID_BYTES, versionOf } from "./rows.js"

/** The channel the migration's trigger notifies on, with the changed session's ID. */
export const CHANNEL = "session_tree_changes"

/**
 * The listener's own notification: longer than any session ID may be, so never one. The first one
 * heard on a connection says that it is listening; the next ones that it still is.
 */
const HEARTBEAT = `session-tree-listening:${"~".repeat(MAX_ID_BYTES)}`

export interface Options {
  /** How long notifications are gathered into one batch. Default 15 ms. */
  readonly gather?: Duration.DurationInput | undefined
  /** How often the listener checks that its connection still hears (a lost one is made again). Default 10 s. */
  readonly heartbeat?: Duration.DurationInput | undefined
  /** How long to wait before listening again after the connection failed. Default 1 second. */
  readonly retryAfter?: Duration.DurationInput | undefined
}

export const make = (client: PgClient.PgClient, options?: Options): SessionChangesService => {
  const sql = client.withoutTransforms()
  const heartbeat = Duration.decode(options?.heartbeat ?? Duration.seconds(10))

  /** The catalog's entry of each of `ids` now, or its removal. */
  const changesOf = (ids: ReadonlyArray<string>) =>
    Effect.map(
      sql<{ readonly id: string; readonly version: string; readonly changed: number }>`
        SELECT s.id, ${versionOf("s")} AS version, (extract(epoch FROM s.changed_at) * 1000)::float8 AS changed
          FROM session_tree_sessions s
         WHERE s.id = ANY(${ids}::text[])`,
      (rows): ReadonlyArray<Change> => {
        const found = new Map(rows.map((row) => [row.id, row]))
        return ids.map((id): Change => {
          const row = found.get(id)
          return row === undefined
            ? { _tag: "Removed", location: id }
            : { _tag: "Changed", entry: { location: id, version: row.version, changed: row.changed } }
        })
      }
    )

  /**
   * One connection's notifications: a `Resync` once its own first heartbeat comes back (it is
   * listening then), then the changes. Silence for longer than two heartbeats ends it with an error:
   * the connection is gone, though nothing said so.
   */
  const connection = Stream.suspend(() => {
    let listening = false
    // Often until the first one is heard (the LISTEN is on its way), then every `heartbeat`.
    const beats = Stream.repeatEffect(Effect.suspend(() =>
      Effect.zipRight(Effect.sleep(listening ? heartbeat : Duration.millis(50)), sql`SELECT pg_notify(${CHANNEL}, ${HEARTBEAT})`)
    )).pipe(Stream.drain)
    return Stream.merge(client.listen(CHANNEL), beats).pipe(
      Stream.timeoutFail(() => new SqlError({ message: "the listening connection stopped hearing its own notifications" }), Duration.times(heartbeat, 2.5)),
      Stream.groupedWithin(4096, options?.gather ?? Duration.millis(15)),
      Stream.mapEffect((chunk) => {
        const payloads = [...chunk]
        const ids = [...new Set(payloads.filter((p) => p !== HEARTBEAT))]
        const first = !listening && payloads.includes(HEARTBEAT)
        if (first) listening = true
        const resync: ReadonlyArray<Change> = first ? [{ _tag: "Resync" }] : []
        // Before the first heartbeat the LISTEN may not be in force yet: the Resync covers those.
        if (!listening || ids.length === 0) return Effect.succeed(resync)
        return Effect.map(changesOf(ids), (changes) => [...resync, ...changes])
      }),
      Stream.filter((changes) => changes.length > 0)
    )
  })

  /** Connections one after another, for as long as the stream runs: each failure waits, then listens again. */
  const forever: Stream.Stream<ReadonlyArray<Change>> = connection.pipe(
    Stream.catchAllCause(() => Stream.unwrap(Effect.as(Effect.sleep(options?.retryAfter ?? Duration.seconds(1)), Stream.suspend(() => forever))))
  )

  // A database holds one set of sessions: a directory means nothing here.
  return { watch: () => forever }
}

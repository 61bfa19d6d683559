/**
 * SIGKILL of writer processes at random moments (SPEC B5, C2). A child appends
 * to one session in a loop, 1–3 entries per commit; it prints every batch before
 * the backend sees it and every entry once its append resolved. It is killed at
 * a random moment: while it connects or loads, between commits, or a few
 * hundred microseconds after a batch went to the database, which lands inside
 * the transaction or its COMMIT. After each kill, once the server has dropped
 * the child's connections, the session must load, hold every acknowledged
 * entry, and hold each announced batch whole or not at all. The next child
 * carries on with the same session until it is large, then a new one starts.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Sessions from "@session-tree/core/Sessions"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import type * as ManagedRuntime from "effect/ManagedRuntime"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import { versionOf } from "../../src/internal/rows.js"
import { type Child, prepareChild, sleep, spawnChild } from "./children.js"

export interface KillStats {
  seed: number
  kills: number
  sessions: number
  acknowledged: number
  acknowledgedLost: number
  batchesAnnounced: number
  partialBatches: number
  /** Batches the child handed to the database but was killed before it heard back, found committed. */
  unacknowledgedCommitted: number
  /** The same, found not committed. */
  unacknowledgedAbsent: number
  /** Kills that came before the child had loaded its session. */
  killedBeforeReady: number
  /** Races a child lost to a commit of a killed predecessor that landed after it loaded (typed, then reloaded). */
  lostRaces: number
  prefixBroken: number
  /** Kills after which the kept listing was missing, of another version, or not what the rows give. */
  listingsStale: number
  maxEntries: number
}

/** Rotate to a new session past this many entries: well below the cap of 4,096. */
const ROTATE_ENTRIES = 2_500
const WARM = 2

export const runKills = async (
  kills: number,
  url: string,
  runtime: ManagedRuntime.ManagedRuntime<SessionJournal | SqlClient.SqlClient, unknown>,
  label: string
): Promise<{ readonly stats: KillStats; readonly problems: ReadonlyArray<string> }> => {
  const seed = Number(process.env["RELIABILITY_SEED"] ?? Date.now() % 1_000_000)
  let rng = seed
  // A deterministic pseudo-random sequence, so a failing run can be replayed with its seed.
  const random = () => {
    rng = (Math.imul(rng, 1103515245) + 12345) >>> 0
    return rng / 2 ** 32
  }
  const stats: KillStats = {
    seed,
    kills: 0,
    sessions: 1,
    acknowledged: 0,
    acknowledgedLost: 0,
    batchesAnnounced: 0,
    partialBatches: 0,
    unacknowledgedCommitted: 0,
    unacknowledgedAbsent: 0,
    killedBeforeReady: 0,
    lostRaces: 0,
    prefixBroken: 0,
    listingsStale: 0,
    maxEntries: 0
  }
  const problems: Array<string> = []
  const appender = await prepareChild("appender.ts")
  let sessionNo = 1
  let session = `${label}-${sessionNo}`
  let acked = new Set<string>()
  let observed: ReadonlyArray<string> = []
  let childNo = 0
  const warm: Array<{ child: Child; tag: string }> = []
  const spawnNext = () => {
    const tag = `${label}k${++childNo}`
    warm.push({ child: spawnChild(appender, [url, tag, "loop", session]), tag })
  }

  /** Waits until the server has no connection of `tag` left: its last transaction is then over, one way or the other. */
  const connectionsGone = (tag: string) =>
    runtime.runPromise(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      for (let i = 0; i < 2_000; i++) {
        const [row] = yield* sql<{ n: number }>`
          SELECT count(*)::int4 AS n FROM pg_stat_activity WHERE application_name = ${`session-tree-${tag}`}`
        if (row!.n === 0) return true
        yield* Effect.sleep("5 millis")
      }
      return false
    }))

  for (let i = 0; i < WARM; i++) spawnNext()
  try {
    for (let kill = 0; kill < kills; kill++) {
      const { child, tag } = warm.shift()!
      spawnNext()
      await child.waitFor("loaded")
      child.send("go")
      const draw = random()
      if (draw < 0.15) {
        // While it connects and loads.
        await sleep(random() * 40)
      } else if (draw < 0.6) {
        // Just after a batch went to the database: inside its transaction or its COMMIT.
        await child.waitFor("ready").catch(() => undefined)
        await child.waitForCount("batch ", 1 + Math.floor(random() * 8))
        const until = performance.now() + random() * 1.5
        while (performance.now() < until) {
          // spin: a timer is far too coarse for this
        }
      } else {
        await child.waitFor("ready").catch(() => undefined)
        await child.waitForCount("ack ", Math.floor(random() * 12))
        await sleep(random() * 4)
      }
      if (!child.lines.some((l) => l.startsWith("ready"))) stats.killedBeforeReady++
      child.proc.kill("SIGKILL")
      const exit = await child.exited
      stats.kills++
      const failed = child.lines.find((l) => l.startsWith("error"))
      if (failed !== undefined || exit.signal !== "SIGKILL") {
        problems.push(`kill ${kill}: the child failed on its own: ${failed ?? exit.code} ${child.stderr().slice(0, 500)}`)
        break
      }
      const batches: Array<ReadonlyArray<string>> = []
      const mine = new Set<string>()
      for (const line of child.lines) {
        if (line.startsWith("ack ")) {
          const entry = line.split(" ")[1]!
          acked.add(entry)
          mine.add(entry)
          stats.acknowledged++
        } else if (line.startsWith("batch ")) {
          batches.push(line.slice(6).split(","))
        } else if (line.startsWith("lost ")) stats.lostRaces++
      }
      stats.batchesAnnounced += batches.length
      if (!(await connectionsGone(tag))) {
        problems.push(`kill ${kill}: the server kept a connection of the killed child`)
        break
      }

      const loaded = await runtime.runPromise(Effect.either(SessionStore.read(session)))
      if (loaded._tag === "Left") {
        // Killed before `create` committed: nothing was promised yet.
        if (loaded.left.code === "SESSION_NOT_FOUND" && acked.size === 0 && observed.length === 0) continue
        problems.push(`kill ${kill}: the session does not load: ${loaded.left.message}`)
        break
      }
      const ids = loaded.right.entries.map((e) => e.id)
      const present = new Set(ids)
      for (const id of acked) {
        if (!present.has(id)) {
          stats.acknowledgedLost++
          problems.push(`kill ${kill}: acknowledged entry ${id} is lost`)
        }
      }
      for (const batch of batches) {
        const found = batch.filter((id) => present.has(id)).length
        if (found !== 0 && found !== batch.length) {
          stats.partialBatches++
          problems.push(`kill ${kill}: batch ${batch.join(",")} is stored in part (${found} of ${batch.length})`)
        }
        if (!batch.every((id) => mine.has(id))) {
          if (found === batch.length) stats.unacknowledgedCommitted++
          else if (found === 0) stats.unacknowledgedAbsent++
        }
      }
      // The listing kept by the last commit is the one of what the session holds: it commits with the rows.
      const kept = await runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<{ readonly listing: string; readonly current: boolean }>`
          SELECT l.listing, l.version = ${versionOf("s")} AS current
            FROM session_tree_listings l JOIN session_tree_sessions s ON s.id = l.session_id WHERE l.session_id = ${session}`))
      if (kept[0]?.current !== true || JSON.stringify(JSON.parse(kept[0].listing)) !== JSON.stringify(Sessions.summarize(session, loaded.right))) {
        stats.listingsStale++
        problems.push(`kill ${kill}: the kept listing is not the one of the session's rows: ${kept[0]?.listing ?? "none"}`)
      }
      if (observed.some((id, i) => ids[i] !== id)) {
        stats.prefixBroken++
        problems.push(`kill ${kill}: entries seen before are no longer a prefix of the session`)
      }
      observed = ids
      stats.maxEntries = Math.max(stats.maxEntries, ids.length)
      if (problems.length > 0) break
      if (ids.length > ROTATE_ENTRIES) {
        // A new session: the warm children hold the old one's ID, so they are replaced.
        for (const w of warm.splice(0)) {
          w.child.proc.kill("SIGKILL")
          await w.child.exited
        }
        session = `${label}-${++sessionNo}`
        acked = new Set()
        observed = []
        stats.sessions++
        for (let i = 0; i < WARM; i++) spawnNext()
      }
    }
  } finally {
    for (const w of warm.splice(0)) {
      w.child.proc.kill("SIGKILL")
      await w.child.exited
    }
  }
  return { stats, problems }
}

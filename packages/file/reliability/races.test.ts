/**
 * Races between processes (SPEC B5): several processes append to one file at
 * once. Whoever loses a race fails with SESSION_BUSY or SESSION_REPLACED (checked
 * in the child, with its memory unchanged), reloads and retries; in the end every
 * acknowledged entry is in the file, each message exactly once (a failed append
 * left nothing behind), and nothing is left beside the file.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, expect, it } from "vitest"
import * as SessionStore from "@session-tree/core/SessionStore"
import { type Child, prepareChild, spawnChild } from "./support/children.js"
import { count, diskTempDir, removeDir, report } from "./support/config.js"
import { contentFor } from "./support/content.js"
import { attempt, run } from "./support/run.js"
import { messageOf, textOf } from "@session-tree/core/Record"

const PROCESSES = count(4, 8)
const APPENDS = count(25, 150)

const dir = diskTempDir("races")
afterAll(() => removeDir(dir))

it(`${PROCESSES} processes × ${APPENDS} appends on one file lose no acknowledged entry`, async () => {
  const path = Path.join(dir, "s.jsonl")
  await run(Effect.asVoid(SessionStore.create(path)))
  const racer = await prepareChild("racer.ts")
  const children: Array<Child> = Array.from({ length: PROCESSES }, (_, i) => spawnChild(racer, [path, `p${i}`, String(APPENDS)]))
  await Promise.all(children.map((c) => c.waitFor("loaded")))
  const started = performance.now()
  for (const c of children) c.send("go")
  const exits = await Promise.all(children.map((c) => c.exited))
  const seconds = (performance.now() - started) / 1000

  const errors = children.flatMap((c, i) => c.lines.filter((l) => l.startsWith("error")).map((l) => `p${i}: ${l}`))
  const acked = children.flatMap((c) => c.lines.filter((l) => l.startsWith("ack ")).map((l) => l.slice(4)))
  const retries: Record<string, number> = {}
  for (const c of children) {
    for (const l of c.lines) if (l.startsWith("retry ")) retries[l.slice(6)] = (retries[l.slice(6)] ?? 0) + 1
  }
  const loaded = await attempt(SessionStore.read(path))
  const entries = loaded._tag === "Right" ? loaded.right.entries : []
  const ids = new Set(entries.map((e) => e.id))
  const lost = acked.filter((id) => !ids.has(id))
  const messageIds = entries.map((e) => messageOf(e)!.id)
  const beside = NFS.readdirSync(dir).filter((n) => n !== "s.jsonl")
  report("races", {
    processes: PROCESSES,
    appendsEach: APPENDS,
    acknowledged: acked.length,
    entries: entries.length,
    lost: lost.length,
    retries,
    seconds: Math.round(seconds * 10) / 10
  })

  expect(errors).toEqual([])
  expect(exits.map((e) => e.code)).toEqual(children.map(() => 0))
  expect(loaded._tag).toBe("Right")
  expect(acked.length).toBe(PROCESSES * APPENDS)
  expect(lost).toEqual([])
  // Every message once: no append that failed left an entry behind, none was acknowledged twice.
  expect(new Set(messageIds).size).toBe(messageIds.length)
  expect(entries.length).toBe(PROCESSES * APPENDS)
  for (const e of entries) {
    const m = messageOf(e)
    expect(m?.role === "user" && textOf(m) === contentFor(m.id)).toBe(true)
  }
  expect(beside).toEqual([])
})

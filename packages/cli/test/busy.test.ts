/**
 * Commands that load a session afresh retry the races such a load can win: six
 * `append` processes started at once on one file all succeed, or, past the
 * bound, exit 3 ("busy, try again"); none exits 1 (rejected); and readers beside
 * them succeed. An append that a recovery marker blocks (one that is still
 * there after the retries) exits 1 and names `recover`.
 */
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { firstWord, type Run, removeTempDirs, runCli, spawnCli, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

/** The command without the helpers' limit on concurrent runs, so the runs really overlap. */
const spawn = (args: ReadonlyArray<string>): Promise<Run> => spawnCli(args)

const readOnly = (path: string) =>
  Effect.runPromise(SessionStore.read(path).pipe(Effect.provide(FileJournal.layerWithFs()), Effect.provide(Ids.layerRandom)))

describe("session-tree under concurrency", { timeout: 300_000 }, () => {
  it("six parallel appends on one file: each succeeds or exits 3, none exits 1, and every success is stored", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    // Rounds, since one round on a loaded machine may not overlap at all.
    let stored = 5
    for (let round = 0; round < 3; round++) {
      // Readers beside them read the session again when an append replaced it under them.
      const [runs, reads] = await Promise.all([
        Promise.all(Array.from({ length: 6 }, (_, i) => spawn(["append", path, "--user", `round ${round}, writer ${i}`]))),
        Promise.all([spawn(["verify", path]), spawn(["log", path]), spawn(["export", path])])
      ])
      for (const read of reads) expect([read.code, read.stderr]).toEqual([0, ""])
      for (const run of runs) {
        expect([0, 3], run.stderr).toContain(run.code)
        if (run.code === 3) {
          expect(["SESSION_BUSY", "SESSION_REPLACED"]).toContain(firstWord(run.stderr))
          expect(run.stderr).toMatch(/run the command again/i)
        }
      }
      const ok = runs.filter((run) => run.code === 0)
      stored += ok.length
      const loaded = await readOnly(path)
      expect(loaded.entries).toHaveLength(stored)
      const ids = new Set(loaded.entries.map((e) => e.id))
      for (const run of ok) expect(ids.has(run.stdout.trim())).toBe(true)
    }
    expect(stored).toBeGreaterThan(5)
  })

  it("an append blocked by a recovery marker exits 1 and says how to resolve it, in a user's words", async ({ expect }) => {
    const path = Path.join(tempDir(), "s.jsonl")
    await writeConversation(path)
    NFS.linkSync(path, `${path}.marker`)
    const busy = await runCli("append", path, "--user", "blocked")
    expect([busy.code, firstWord(busy.stderr), busy.stdout]).toEqual([1, "SESSION_BUSY", ""])
    expect(busy.stderr).toContain(`session-tree recover ${path}`)
    expect(busy.stderr).not.toMatch(/generation|store|writer|Recovery\.recover/)
  })
})

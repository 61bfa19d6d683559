/**
 * `list` shows the time it sorts by: when each session last changed, as its
 * backend records it (a file's modification time; `changed` in `--json`, the
 * first column in words), newest first; `updated` keeps its meaning (the newest
 * entry's time), which a fork's older entries put before its `created`.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, it } from "vitest"
import { removeTempDirs, runCli, tempDir, writeConversation } from "./support.js"

afterAll(removeTempDirs)

describe("session-tree list", { timeout: 180_000 }, () => {
  it("shows the time it sorts by, newest change first, also for a fork whose entries are older than it", async ({ expect }) => {
    const dir = tempDir()
    const a = Path.join(dir, "a.jsonl")
    const b = Path.join(dir, "b.jsonl")
    const fork = Path.join(dir, "fork.jsonl")
    await writeConversation(a)
    await writeConversation(b)
    // The fork's entries keep their times from before the fork; its header is newer.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect((await runCli("fork", a, "--leaf", "entry-005", "--to", fork, "--id", "forked")).code).toBe(0)
    // Whole seconds, which every file system stores exactly.
    const now = Math.floor(Date.now() / 1000) * 1000
    const times = { [a]: new Date(now - 60_000), [b]: new Date(now - 30_000) }
    NFS.utimesSync(a, times[a]!, times[a]!)
    NFS.utimesSync(b, times[b]!, times[b]!)
    const [json, words] = await Promise.all([runCli("list", dir, "--json"), runCli("list", dir)])
    const listed = JSON.parse(json.stdout) as Array<{ location: string; created: string; updated: string; changed: string }>
    expect(listed.map((l) => l.location)).toEqual([fork, b, a])
    expect(listed[1]!.changed).toBe(times[b]!.toISOString())
    expect(listed[2]!.changed).toBe(times[a]!.toISOString())
    const changes = listed.map((l) => l.changed)
    expect([...changes].sort().reverse()).toEqual(changes)
    // `updated` is the newest entry's time, as the listing format defines it: a fork's precedes its creation.
    expect(listed[0]!.updated < listed[0]!.created).toBe(true)
    // In words, the first column is the time sorted by: for the fork, its last change, not its entries' older time.
    const lines = words.stdout.trimEnd().split("\n")
    expect(lines.map((line) => line.split(/\s+/)[0])).toEqual(changes)
    expect(changes[0]! > listed[0]!.updated).toBe(true)
    // A page of a large directory: --limit sessions after --offset, in the same order.
    const page = await runCli("list", dir, "--json", "--offset", "1", "--limit", "1")
    expect((JSON.parse(page.stdout) as Array<{ location: string }>).map((l) => l.location)).toEqual([b])
    expect((JSON.parse((await runCli("list", dir, "--json", "--limit", "0")).stdout) as Array<unknown>)).toEqual([])
    const negative = await runCli("list", dir, "--limit", "-1")
    expect([negative.code, negative.stderr.split(/\s+/)[0]]).toEqual([1, "SESSION_INVALID_OPTIONS"])
  })
})

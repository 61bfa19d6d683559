/**
 * `list` shows when each session was last updated: the time of its last commit, as its backend
 * keeps it (a file's modification time, the database's commit time), never before what its
 * records tell (its creation, its newest entry), and sorts by it, the one updated last first. A
 * fork, whose entries keep their older times, is updated when it was made; a file whose time was
 * set back shows its newest entry's time.
 */
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { records, removeTempDirs, runCli, tempDir, writeConversation } from "./support.js"

let scope: Scope.CloseableScope
let db: string

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("list"), scope))
}, 60_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

interface Listed {
  readonly location: string
  readonly created: string
  readonly updated: string
  readonly leaf: string | null
}

/** `list --json` and `list` of the same sessions; the words' first column is each session's `updated`. */
const listBoth = async (expect: import("vitest").ExpectStatic, ...args: ReadonlyArray<string>) => {
  const [json, words] = [await runCli("list", ...args, "--json"), await runCli("list", ...args)]
  expect([json.code, json.stderr, words.code, words.stderr]).toEqual([0, "", 0, ""])
  const listed = JSON.parse(json.stdout) as Array<Listed>
  expect(words.stdout.trimEnd().split("\n").map((line) => line.split(/\s+/)[0])).toEqual(listed.map((l) => l.updated))
  return listed
}

/** What every listing must hold: `updated` never before `created`, the list sorted by `updated`, newest first. */
const expectUpdatedOrder = (expect: import("vitest").ExpectStatic, listed: ReadonlyArray<Listed>) => {
  for (const l of listed) expect(Date.parse(l.updated), l.location).toBeGreaterThanOrEqual(Date.parse(l.created))
  const times = listed.map((l) => Date.parse(l.updated))
  expect([...times].sort((a, b) => b - a)).toEqual(times)
}

describe("session-tree list", { timeout: 180_000 }, () => {
  it("a fork is updated when it was made, not at its copied entries' time, and lists first", async ({ expect }) => {
    const dir = tempDir()
    const a = Path.join(dir, "a.jsonl")
    const b = Path.join(dir, "b.jsonl")
    const fork = Path.join(dir, "fork.jsonl")
    await writeConversation(a)
    await writeConversation(b)
    // The fork's entries keep their times from before the fork; its header and its commit are newer.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect((await runCli("fork", a, "--leaf", "entry-005", "--to", fork, "--id", "forked")).code).toBe(0)
    const listed = await listBoth(expect, dir)
    expect(listed.map((l) => l.location)).toEqual([fork, ...[a, b].sort((x, y) => NFS.statSync(y).mtimeMs - NFS.statSync(x).mtimeMs)])
    expectUpdatedOrder(expect, listed)
    const forked = listed[0]!
    // Its last commit is its creation: not the copied leaf's time, which precedes it.
    const copiedLeaf = listed.find((l) => l.location === a)!
    expect(forked.leaf).toBe(copiedLeaf.leaf)
    expect(Date.parse(forked.updated)).toBeGreaterThanOrEqual(Date.parse(forked.created))
    // The file's time, or its creation where the file system's coarser clock stamped the write a
    // little before the time the header holds.
    expect(forked.updated).toBe(new Date(Math.max(Math.floor(NFS.statSync(fork).mtimeMs), Date.parse(forked.created))).toISOString())
  })

  it("the time of the last commit is the file's modification time; a time set before the session was written shows its newest entry's", async ({ expect }) => {
    const dir = tempDir()
    const [a, b, c] = ["a", "b", "c"].map((n) => Path.join(dir, `${n}.jsonl`)) as [string, string, string]
    for (const path of [a, b, c]) await writeConversation(path)
    // Whole seconds, which every file system stores exactly; after the sessions were made.
    const now = Math.floor(Date.now() / 1000) * 1000
    NFS.utimesSync(a, new Date(now + 60_000), new Date(now + 60_000))
    NFS.utimesSync(b, new Date(now + 30_000), new Date(now + 30_000))
    // A clock that disagrees, or a copy that kept an old time: never "updated" before it was made.
    NFS.utimesSync(c, new Date("2020-01-02T03:04:05.000Z"), new Date("2020-01-02T03:04:05.000Z"))
    const listed = await listBoth(expect, dir)
    expect(listed.map((l) => l.location)).toEqual([a, b, c])
    expect(listed[0]!.updated).toBe(new Date(now + 60_000).toISOString())
    expect(listed[1]!.updated).toBe(new Date(now + 30_000).toISOString())
    // What the records tell instead: the newest entry's time (written after the creation).
    expect(listed[2]!.updated).toBe(records(c).at(-1)!["timestamp"])
    expectUpdatedOrder(expect, listed)
    // A page of a large directory: --limit sessions after --offset, in the same order.
    const page = await runCli("list", dir, "--json", "--offset", "1", "--limit", "1")
    expect((JSON.parse(page.stdout) as Array<{ location: string }>).map((l) => l.location)).toEqual([b])
    expect(JSON.parse((await runCli("list", dir, "--json", "--limit", "0")).stdout) as Array<unknown>).toEqual([])
    const negative = await runCli("list", dir, "--limit", "-1")
    expect([negative.code, negative.stderr.split(/\s+/)[0]]).toEqual([1, "SESSION_INVALID_OPTIONS"])
  })

  it("--db: the database's commit time, never before the creation, a fork and an append moving a session first", async ({ expect }) => {
    expect((await runCli("migrate", "--db", db)).code).toBe(0)
    for (const id of ["s-1", "s-2"]) {
      expect((await runCli("create", id, "--db", db)).code).toBe(0)
      expect((await runCli("append", id, "--user", `hello ${id}`, "--db", db)).code).toBe(0)
    }
    const leaf = (await runCli("log", "s-1", "--json", "--db", db)).stdout
    const leafId = (JSON.parse(leaf) as { leaf: string }).leaf
    expect((await runCli("fork", "s-1", "--leaf", leafId, "--to", "s-fork", "--db", db)).code).toBe(0)
    let listed = await listBoth(expect, "--db", db)
    expect(listed.map((l) => l.location)).toEqual(["s-fork", "s-2", "s-1"])
    expectUpdatedOrder(expect, listed)
    expect((await runCli("append", "s-1", "--user", "again", "--db", db)).code).toBe(0)
    listed = await listBoth(expect, "--db", db)
    expect(listed.map((l) => l.location)).toEqual(["s-1", "s-fork", "s-2"])
    expectUpdatedOrder(expect, listed)
  })
})

/**
 * What `/s/NAME/since` sends an open page after an append: to a page of the version before (whose
 * tree's rows it holds), only what changed (the tree's rows between those both versions share, the
 * new cards, the facts); to any other page, everything. Either way the page ends as a page loaded
 * afresh would be, which a second server, laying the session out whole, shows.
 */
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { serveFiles, type Served, tempDir } from "./support/serve.js"

const runtime = ManagedRuntime.make(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
const dir = tempDir("live-delta")
const servers: Array<Served> = []
afterAll(async () => {
  for (const served of servers) await served.stop()
  await runtime.dispose()
  NFS.rmSync(dir, { recursive: true, force: true })
})

interface Since {
  readonly version: string
  readonly n?: number
  readonly added?: number
  readonly facts?: string
  readonly treeHeading?: string
  readonly rows?: ReadonlyArray<string>
  readonly treeDelta?: { readonly at: number; readonly remove: number; readonly rows: ReadonlyArray<string> }
  readonly extend?: { readonly path: string; readonly leaf: number; readonly leafId: string; readonly cards: string }
}

const since = async (served: Served, query: string): Promise<Since> => {
  const response = await fetch(`${served.url}s/session.jsonl/since?${query}`)
  expect(response.status).toBe(200)
  return (await response.json()) as Since
}

const location = Path.join(dir, "session.jsonl")
const text = (t: string) => [{ type: "text" as const, text: t }]

/** Appends to the session through the store, as an agent would: `add` gets the store and the newest entry's ID. */
const appendWith = (add: (store: SessionStore.SessionStore, newest: string) => Effect.Effect<unknown, unknown>) =>
  runtime.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.load(location)
    yield* add(store, store.entries.at(-1)!.id)
  })))

/** Asks `/since` until the server has a version other than `version`. */
const changed = async (served: Served, version: string, query: string): Promise<Since> => {
  for (let k = 0; k < 200; k++) {
    const answer = await since(served, `v=${encodeURIComponent(version)}&${query}`)
    if (answer.version !== version) return answer
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error("the server never heard of the append")
}

/** What a page of the session, loaded afresh by a server that lays it out whole, has. */
const fresh = async (leaf: number) => {
  const cold = await serveFiles(dir, { ahead: 0 })
  try {
    return await since(cold, `v=&r=&n=0&leaf=${leaf}`)
  } finally {
    await cold.stop()
  }
}

describe("/since after an append", () => {
  it("sends a page of the version before only what changed, and the page ends as one loaded afresh", async () => {
    await runtime.runPromise(Effect.scoped(Effect.gen(function*() {
      const store = yield* SessionStore.create(location, { version: 2 })
      let parent = (yield* store.append(null, { role: "user", id: "u0", content: text("Read the file") })).id
      parent = (yield* store.append(parent, {
        role: "assistant",
        id: "a0",
        content: [{ type: "tool-call", id: "call-1", name: "read", arguments: { path: "a.txt" } }]
      })).id
      // A chain long enough to fold in the tree.
      for (let i = 0; i < 20; i++) parent = (yield* store.append(parent, { role: i % 2 === 0 ? "user" : "assistant", id: `m${i}`, content: text(`step ${i}`) })).id
    })))
    const served = await serveFiles(dir, { ahead: 0 })
    servers.push(served)
    const first = await since(served, "v=&r=&n=0&leaf=-1")
    expect(first.rows).toBeDefined()
    expect(first.treeDelta).toBeUndefined()
    expect(first.n).toBe(22)

    // Two entries after the newest: a result of the call made at the start, and an answer.
    await appendWith((store, newest) =>
      Effect.flatMap(
        store.append(newest, { role: "tool", id: "t1", toolCallId: "call-1", toolName: "read", isError: false, content: text("the file's text") }),
        (result) => store.append(result.id, { role: "assistant", id: "a1", content: text("It says hello.") })
      ))
    const delta = await changed(served, first.version, `r=${encodeURIComponent(first.version)}&n=22&leaf=21`)
    expect(delta.n).toBe(24)
    expect(delta.rows).toBeUndefined()
    expect(delta.treeDelta).toBeDefined()
    // Only the rows that differ: fewer than the tree has.
    expect(delta.treeDelta!.rows.length).toBeLessThan(first.rows!.length)
    const rows = [...first.rows!]
    rows.splice(delta.treeDelta!.at, delta.treeDelta!.remove, ...delta.treeDelta!.rows)
    // The new cards only: the result links to the call it answers.
    expect(delta.extend?.cards.match(/<article /g)).toHaveLength(2)
    expect(delta.extend?.cards).toContain(`data-to="c1-0"`)

    const cold = await fresh(21)
    expect(rows).toEqual(cold.rows)
    expect({ facts: delta.facts, treeHeading: delta.treeHeading, n: delta.n, extend: delta.extend }).toEqual({
      facts: cold.facts,
      treeHeading: cold.treeHeading,
      n: cold.n,
      extend: cold.extend
    })
    expect(delta.facts).toContain("24")

    // A page whose rows are of another version (or that holds none) gets the whole tree.
    const other = await since(served, `v=x&r=${encodeURIComponent("another")}&n=22&leaf=21`)
    expect(other.rows).toEqual(cold.rows)
    expect(other.treeDelta).toBeUndefined()

    // A new branch from the first entry: the tree changes in the middle, and still ends as a fresh load.
    await appendWith((store) => store.append(store.entries[0]!.id, { role: "assistant", id: "b1", content: text("Another way") }))
    const branched = await changed(served, delta.version, `r=${encodeURIComponent(delta.version)}&n=24&leaf=23`)
    expect(branched.treeDelta).toBeDefined()
    rows.splice(branched.treeDelta!.at, branched.treeDelta!.remove, ...branched.treeDelta!.rows)
    const coldBranched = await fresh(23)
    expect(rows).toEqual(coldBranched.rows)
    expect([branched.facts, branched.treeHeading, branched.added, branched.extend]).toEqual([coldBranched.facts, coldBranched.treeHeading, 1, coldBranched.extend])
  })
})

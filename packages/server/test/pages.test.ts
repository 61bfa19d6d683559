/**
 * What the pages say, at the HTTP level, on session files and on PostgreSQL:
 *
 * - the list: pages of 200, newest change first, each page reading only the
 *   sessions it shows (so the first page of 100,000 sessions costs what the
 *   first of 100 does); the next pages, a filter and another order; a session
 *   that does not load listed on its page with its error; the tokens it shows
 *   are the numbers of the usage page (`Sessions.stats`);
 * - search: the filters by role, model, date and session narrow the hits as
 *   `Sessions.search` does;
 * - a session page links to the session it was forked from, to the session
 *   that started it and to its subagents' sessions, and `/id/ID` leads there;
 *   a long text is folded to its first lines;
 * - a database served on another address refuses a wrong token on every route.
 */
import * as Codec from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import type { Entry, Header } from "@session-tree/core/Record"
import { SessionCatalog } from "@session-tree/core/SessionCatalog"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import type * as Sessions from "@session-tree/core/Sessions"
import * as Subagents from "@session-tree/core/Subagents"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Server from "../src/Server.js"
import { serveFiles, type Served, tempDir, writeCorpus } from "./support/serve.js"
import { serveDatabase } from "./support/serveDatabase.js"

const TOKEN = "a-token-of-the-tests-0123456789abcdefghijklm"

/** A GET of `path`; with `token`, as a bearer header. */
const get = async (served: Served, path: string, token?: string) => {
  const response = await fetch(`http://127.0.0.1:${served.port}${path}`, { redirect: "manual", headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })
  return { status: response.status, location: response.headers.get("location"), body: await response.text() }
}

const unescape = (html: string) => html.replaceAll("&quot;", "\"").replaceAll("&#39;", "'").replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&")

/** The keys of a list page's rows, in order. */
const rowKeys = (body: string) => [...body.matchAll(/<tr (?:class="bad" )?data-k="([^"]*)"/g)].map((m) => unescape(m[1]!))
/** A list page's totals line, as text. */
const totals = (body: string) => unescape(/<p class="totals">([\s\S]*?)<\/p>/.exec(body)![1]!.replace(/<[^>]*>/g, ""))
/** A search page's hits as `key/entry`. */
const hitsOf = (body: string) => [...body.matchAll(/<span class="loc">([^<]*) · entry ([^<]*)<\/span><\/div>/g)].map((m) => `${unescape(m[1]!)}/${unescape(m[2]!)}`)
/** A session page's header links: label, and the address or text. */
const linksOf = (body: string) => {
  const block = /<div class="links">([\s\S]*?)<\/div>/.exec(body)
  if (block === null) return []
  return [...block[1]!.matchAll(/<span>([^<]*) (?:<a href="([^"]*)">[^<]*<\/a>|<span class="id">([^<]*)<\/span>)/g)].map((m) =>
    `${unescape(m[1]!)} ${unescape(m[2] ?? m[3]!)}`
  )
}

// Before the files of the list were last changed, so that the catalog's times order them.
const T = (minute: number) => new Date(Date.UTC(2025, 2, 1, 9, minute)).toISOString()
const header = (id: string, extra: object = {}): Header => ({ type: "session", version: 2, id, timestamp: T(0), ...extra }) as Header
const user = (id: string, parentId: string | null, text: string, minute: number): Entry =>
  ({ type: "entry", version: 2, id, parentId, timestamp: T(minute), kind: "message", message: { role: "user", id: `m-${id}`, content: [{ type: "text", text }] } }) as Entry
const custom = (id: string, parentId: string | null, customType: string, data: unknown, minute: number): Entry =>
  ({ type: "entry", version: 2, id, parentId, timestamp: T(minute), kind: "custom", customType, data }) as Entry

/**
 * A session forked from the corpus's incident, a parent that started two subagents, and the first
 * subagent's session, as an import writes them (`docs/import.md`, "Subagents").
 */
const linked: ReadonlyArray<Sessions.Records> = [
  { header: header("fork-1", { forkedFrom: { session: "s-incident", entry: "i1" } }), entries: [user("f1", null, "a fork of the incident", 1)] },
  {
    header: header("parent-1"),
    entries: [
      user("p1", null, "look into the flaky test with two helpers", 1),
      custom("p1:subagent", "p1", Subagents.SUBAGENT, { session: "parent-1.agent-a1", toolCallId: "toolu_1" }, 2),
      custom("p2:subagent", "p1:subagent", Subagents.SUBAGENT, { session: "parent-1.agent-a2", toolCallId: "toolu_2" }, 3)
    ]
  },
  {
    header: header("parent-1.agent-a1"),
    entries: [
      custom("subagent-of", null, Subagents.SUBAGENT_OF, { session: "parent-1", toolCallId: "toolu_1", agentId: "a1" }, 1),
      user("a1", "subagent-of", "find the flaky test", 2)
    ]
  },
  { header: header("long-1"), entries: [user("l1", null, Array.from({ length: 40 }, (_, i) => `line ${i} of a long paste`).join("\n"), 1)] }
]

const fileText = (records: Sessions.Records) => [records.header, ...records.entries].map((r) => `${Codec.encodeRecord(r)}\n`).join("")

interface Backend {
  readonly name: string
  readonly start: () => Promise<Served>
  /** The token the server needs, if any. */
  readonly token: string | undefined
}

const backends: ReadonlyArray<Backend> = [
  {
    name: "files",
    token: undefined,
    start: async () => {
      const dir = tempDir("pages")
      writeCorpus(dir)
      for (const records of linked) NFS.writeFileSync(Path.join(dir, `${records.header.id}.jsonl`), fileText(records))
      const served = await serveFiles(dir, { port: 0 })
      return { ...served, keyOf: (name) => (linked.some((r) => r.header.id === name) ? `${name}.jsonl` : served.keyOf(name)), stop: async () => (await served.stop(), NFS.rmSync(dir, { recursive: true, force: true })) }
    }
  },
  {
    name: "PostgreSQL, on another address",
    token: TOKEN,
    start: async () => {
      const served = await serveDatabase("pages", { records: linked, host: "0.0.0.0", token: TOKEN })
      return { ...served, keyOf: (name) => (linked.some((r) => r.header.id === name) ? name : served.keyOf(name)) }
    }
  }
]

for (const backend of backends) {
  describe(`the pages on ${backend.name}`, () => {
    let served: Served
    const page = (path: string) => get(served, path, backend.token)
    beforeAll(async () => {
      served = await backend.start()
    })
    afterAll(async () => {
      await served?.stop()
    })

    it("narrows a search by role, model, date and session as Sessions.search does", async () => {
      const k = served.keyOf
      const hits = async (query: string) => {
        const answer = await page(`/search?${query}`)
        expect(answer.status, query).toBe(200)
        return hitsOf(answer.body)
      }
      expect(await hits("q=connection&role=user")).toEqual([`${k("pooling")}/p1`, `${k("incident")}/i1`])
      expect(await hits("q=refused&role=compaction")).toEqual([`${k("notes")}/n3`])
      expect(await hits("q=deploy&role=title")).toEqual([`${k("notes")}/n4`])
      expect(await hits("q=connection&model=claude-opus-4")).toEqual([`${k("notes")}/n7`])
      expect(await hits("q=refused&since=2026-01-03")).toEqual([`${k("notes")}/n3`])
      expect(await hits("q=refused&until=2026-01-02")).toEqual([`${k("incident")}/i4`, `${k("incident")}/i1`])
      expect(await hits("q=refused")).toEqual([`${k("notes")}/n3`, `${k("incident")}/i4`, `${k("incident")}/i1`])
      // A session by the name the list shows, or by its ID.
      expect(await hits(`q=connection&session=${encodeURIComponent(k("pooling"))}`)).toEqual([`${k("pooling")}/p1`])
      expect(await hits("q=connection&session=s-notes")).toEqual([`${k("notes")}/n7`])
      // A filter that names nothing valid is refused with its code, on the page.
      for (const bad of ["role=robot", "since=yesterday", "until=2026-02-30"]) {
        const answer = await page(`/search?q=connection&${bad}`)
        expect([bad, answer.status]).toEqual([bad, 400])
        expect(answer.body).toContain("SESSION_INVALID_OPTIONS")
        expect(hitsOf(answer.body)).toEqual([])
      }
    })

    it("links a session to the session it was forked from, the session that started it and its subagents' sessions", async () => {
      const fork = await page(`/s/${encodeURIComponent(served.keyOf("fork-1"))}`)
      expect(linksOf(fork.body)).toEqual(["Forked from /id/s-incident?entry=i1"])
      const parent = await page(`/s/${encodeURIComponent(served.keyOf("parent-1"))}`)
      expect(linksOf(parent.body)).toEqual(["Subagent /id/parent-1.agent-a1", "Subagent /id/parent-1.agent-a2"])
      const child = await page(`/s/${encodeURIComponent(served.keyOf("parent-1.agent-a1"))}`)
      expect(linksOf(child.body)).toEqual(["Subagent of /id/parent-1"])
      // Each link leads to the session it names, at the entry it names.
      const toSource = await page("/id/s-incident?entry=i1")
      expect([toSource.status, toSource.location]).toEqual([303, `/s/${encodeURIComponent(served.keyOf("incident"))}?entry=i1`])
      const toParent = await page("/id/parent-1")
      expect([toParent.status, toParent.location]).toEqual([303, `/s/${encodeURIComponent(served.keyOf("parent-1"))}`])
      const opened = await page(toParent.location!)
      expect(opened.status).toBe(200)
      expect(opened.body).toContain("look into the flaky test with two helpers")
      // A subagent that was never imported is no session here: its link finds nothing, and says so.
      expect((await page("/id/parent-1.agent-a2")).status).toBe(404)
    })

    it("folds a long text to its first lines, the whole of it a click away", async () => {
      const body = (await page(`/s/${encodeURIComponent(served.keyOf("long-1"))}`)).body
      const folded = /<details class="long"><summary>([\s\S]*?)<\/summary>([\s\S]*?)<\/details>/.exec(body)!
      expect(folded[1]).toContain("line 0 of a long paste")
      expect(folded[1]).not.toContain("line 39 of a long paste")
      expect(folded[1]).toContain("Show all 40 lines")
      expect(folded[2]).toContain("line 39 of a long paste")
    })

    if (backend.token !== undefined) {
      it("refuses a wrong token on every route, and answers the right one", async () => {
        const wrong = TOKEN.slice(0, -1) + "X"
        const key = encodeURIComponent(served.keyOf("incident"))
        for (const path of ["/", `/s/${key}`, `/s/${key}/since?v=x`, "/search?q=refused", "/stats", "/events", "/id/s-incident"]) {
          for (const token of [wrong, TOKEN.slice(0, 8), ""]) {
            const answer = await get(served, path, token)
            expect([path, token, answer.status]).toEqual([path, token, 401])
            expect(answer.body).not.toContain("Connection refused")
          }
        }
        expect((await page(`/s/${key}`)).body).toContain("Connection refused")
      })
    }
  })
}

describe("the list of a directory of many sessions", () => {
  const N = 451
  let dir = ""
  let served: Served
  const reads: Array<string> = []
  let scope: Scope.CloseableScope

  beforeAll(async () => {
    dir = tempDir("many")
    // Session k last changed at minute k: s450 is the newest. s137 does not load.
    for (let k = 0; k < N; k++) {
      const name = `s${String(k).padStart(3, "0")}.jsonl`
      const file = Path.join(dir, name)
      const records = { header: header(`id-${k}`), entries: [user(`e${k}`, null, `session number ${k}${k % 50 === 0 ? " deploy" : ""}`, 1), ...(k % 3 === 0 ? [user(`f${k}`, `e${k}`, "and more", 2)] : [])] }
      NFS.writeFileSync(file, k === 137 ? "{\"type\":\"session\",\"version\":2,\n" : fileText(records))
      const at = new Date(Date.UTC(2026, 0, 1) + k * 60_000)
      NFS.utimesSync(file, at, at)
    }
    // The server over files, with every read of a session counted (one at a time, or a listing's).
    const count = (locations: ReadonlyArray<string>) => Effect.sync(() => reads.push(...locations.map((l) => Path.basename(l))))
    const counting = Layer.merge(
      Layer.effect(SessionJournal, Effect.map(SessionJournal, (journal) => ({ ...journal, read: (location: string) => Effect.zipRight(count([location]), journal.read(location)) }))),
      Layer.effect(SessionCatalog, Effect.map(SessionCatalog, (catalog) => ({ ...catalog, readMany: (locations: ReadonlyArray<string>) => Effect.zipRight(count(locations), catalog.readMany(locations)) })))
    )
    scope = Effect.runSync(Scope.make())
    const running = await Effect.runPromise(
      Server.serve({ backend: "files", directory: dir, port: 0 }).pipe(
        Scope.extend(scope),
        Effect.provide(Layer.provideMerge(counting, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)))
      )
    )
    served = { ...running, backend: "files", where: dir, keyOf: (name) => `${name}.jsonl`, stop: () => Effect.runPromise(Scope.close(scope, Exit.void)) }
  })
  afterAll(async () => {
    await served?.stop()
    if (dir !== "") NFS.rmSync(dir, { recursive: true, force: true })
  })

  const name = (k: number) => `s${String(k).padStart(3, "0")}.jsonl`
  const newestFirst = Array.from({ length: N }, (_, i) => name(N - 1 - i))

  it("shows pages of 200, newest change first, each reading only the sessions it shows", async () => {
    const first = await get(served, "/")
    expect(first.status).toBe(200)
    expect(rowKeys(first.body)).toEqual(newestFirst.slice(0, 200))
    expect(totals(first.body)).toBe(`1–200 of ${N} sessions · last change, newest first`)
    expect(first.body).toContain(`<a href="/?page=1" rel="next">`)
    // Only the page's sessions were read (the server lays out the newest few ahead; they are on it).
    expect(new Set(reads).size).toBeLessThanOrEqual(200)
    expect([...new Set(reads)].filter((r) => !newestFirst.slice(0, 200).includes(r))).toEqual([])
    reads.length = 0
    const third = await get(served, "/?page=2")
    expect(rowKeys(third.body)).toEqual(newestFirst.slice(400))
    expect([...new Set(reads)].sort()).toEqual(newestFirst.slice(400).sort())
    expect(third.body).not.toContain(`rel="next"`)
    // The oldest first, from the other end.
    const oldest = await get(served, "/?sort=oldest")
    expect(rowKeys(oldest.body)).toEqual([...newestFirst].reverse().slice(0, 200))
  })

  it("lists a session that does not load on its page with its error, never hiding it", async () => {
    const at = newestFirst.indexOf(name(137))
    const shown = await get(served, `/?page=${Math.floor(at / 200)}`)
    expect(rowKeys(shown.body)).toContain(name(137))
    const row = new RegExp(`<tr class="bad" data-k="${name(137)}"[^>]*>(.*?)</tr>`).exec(shown.body)![1]!
    expect(row).toMatch(/<span class="err">SESSION_[A-Z_]+<\/span>/)
    expect(totals(shown.body)).toContain("1 on this page do not load")
    // Its page says the same.
    const opened = await get(served, `/s/${name(137)}`)
    expect(opened.status).toBe(500)
    expect(opened.body).toContain(/<span class="err">(SESSION_[A-Z_]+)<\/span>/.exec(row)![1]!)
  })

  it("filters by title, ID or name, and sorts by title or entries, a page at a time", async () => {
    const filtered = await get(served, "/?q=deploy")
    expect(rowKeys(filtered.body)).toEqual([450, 400, 350, 300, 250, 200, 150, 100, 50, 0].map(name))
    expect(totals(filtered.body)).toBe("1–10 of 10 sessions matching “deploy” · last change, newest first")
    expect(rowKeys((await get(served, "/?q=id-42")).body)).toEqual([name(429), name(428), name(427), name(426), name(425), name(424), name(423), name(422), name(421), name(420), name(42)])
    // Most entries first: every third session has two; the one that does not load comes last.
    const byEntries = rowKeys((await get(served, "/?sort=entries")).body)
    expect(byEntries.slice(0, 151).every((n) => Number(n.slice(1, 4)) % 3 === 0)).toBe(true)
    const last = rowKeys((await get(served, "/?sort=entries&page=2")).body)
    expect(last.at(-1)).toBe(name(137))
    const byTitle = rowKeys((await get(served, "/?sort=title&page=0")).body)
    expect(byTitle.slice(0, 3)).toEqual([name(0), name(1), name(10)])
  })
})

describe("the list's usage", () => {
  let dir = ""
  let served: Served
  beforeAll(async () => {
    dir = tempDir("usage")
    writeCorpus(dir)
    served = await serveFiles(dir, { port: 0 })
  })
  afterAll(async () => {
    await served?.stop()
    if (dir !== "") NFS.rmSync(dir, { recursive: true, force: true })
  })

  it("shows each session's tokens and cost as the usage page (Sessions.stats) sums them", async () => {
    const list = (await get(served, "/")).body
    const usage = (await get(served, "/stats?by=session")).body
    const cells = (html: string) => [...html.matchAll(/<td class="n">([^<]*)<\/td>/g)].map((m) => m[1]!)
    for (const name of ["incident", "notes"]) {
      const key = `${name}.jsonl`
      const row = new RegExp(`<tr data-k="${key}"[^>]*>(.*?)</tr>`).exec(list)![1]!
      // Entries, branches, tokens in, tokens out, cost.
      const [, , tokensIn, tokensOut, cost] = cells(row)
      const sums = new RegExp(`<a href="/s/${key}">${key}</a></td>(.*?)</tr>`).exec(usage)![1]!
      // Sessions, messages, input, cached input, cache writes, output, reasoning, cost.
      const [, , input, , , output, , statsCost] = cells(sums)
      expect([name, tokensIn, tokensOut, cost]).toEqual([name, input, output, statsCost])
      expect(Number(tokensIn!.replaceAll(",", ""))).toBeGreaterThan(0)
    }
    // The incident's first message carries its cost, as Pi records it; the notes' none.
    expect(/<tr data-k="incident.jsonl"[^>]*>(.*?)<\/tr>/.exec(list)![1]).toMatch(/<td class="n">\$0\.\d{4}<\/td>/)
  })
})

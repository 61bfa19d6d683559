/**
 * The served pages in a real headless Chromium, on session files and on
 * PostgreSQL alike:
 *
 * - a reader's way through: the list, a search from the bar, a hit opened on its
 *   branch, another branch chosen in the tree (the page never reloads);
 * - live: another process appends (a child started with Node), and the open
 *   session page and list show it within a second, the reader's place kept;
 * - a session of 100,000 entries opens with its first screen drawn within a second once laid out;
 *   at its first request (on the command `session-tree serve`, a process of its own as a user runs
 *   it, started before the session was written) its first screen comes first and the time is
 *   printed; an append to it reaches its open page (how long it takes is printed);
 * - hostile sessions: nothing in them runs or loads (no script, dialog, request
 *   beyond the server, policy violation), on the list, the session and a search;
 *   hostile addresses get a refusal page and nothing of any session.
 *
 * Without Chromium these tests are skipped with a loud message, unless CI or
 * REQUIRE_BROWSER=1 is set: then they fail (see support/browser.ts).
 */
import * as Codec from "@session-tree/core/Codec"
import type { Entry, Header } from "@session-tree/core/Record"
import * as Sessions from "@session-tree/core/Sessions"
import { type Child, prepareChild, spawnChild } from "@session-tree/testing/Children"
import { linearLines } from "@session-tree/testing/Corpus"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import type { Browser } from "playwright-core"
import { afterAll, afterEach, beforeAll, expect, it } from "vitest"
import { hostile } from "../../view/test/support/sessions.js"
import { hostileAgent } from "../../view/test/support/v2.js"
import { browserDescribe, browserFound, launch, MISSING, type Opened, onlyTo, openPage } from "./support/browser.js"
import { serveFiles, type Served, tempDir, writeCorpus } from "./support/serve.js"
import { serveDatabase } from "./support/serveDatabase.js"

// The callbacks given to page.evaluate and waitForFunction run in the browser.
declare const document: {
  readonly documentElement: { getAttribute(name: string): string | null }
  querySelectorAll(selector: string): ArrayLike<{ readonly id: string; readonly textContent: string | null; getAttribute(name: string): string | null }>
  querySelector(selector: string): { readonly scrollTop: number; readonly textContent: string | null } | null
}
declare const window: { __marker?: number; __pwned?: unknown; readonly location: { readonly href: string } }

const ARTIFACTS = fileURLToPath(new URL("./artifacts/", import.meta.url))
const APPENDER = fileURLToPath(new URL("./children/appender.ts", import.meta.url))
const COMMAND = fileURLToPath(new URL("../../cli/src/main.ts", import.meta.url))

/** The IDs of the cards the session page shows, in order. */
const cards = (opened: Opened) =>
  opened.page.$$eval("#cards .msg", (list) => list.map((card) => card.querySelector(".mh .id")!.textContent))

const ready = (opened: Opened) => opened.page.waitForFunction(() => document.documentElement.getAttribute("data-ready") === "1", undefined, { polling: "raf" })

/**
 * Nothing ran, loaded or was reported: requests to the server only (and `data:` images, which the
 * view draws inline and Chromium uses for its own date picker), no error, dialog or violation.
 */
const expectSealed = async (opened: Opened, served: Served) => {
  const origin = `http://127.0.0.1:${served.port}/`
  const beyond = onlyTo(opened, origin)
  expect({ context: beyond.context, cdp: beyond.cdp.filter((url) => !url.startsWith("data:image/png;") && !url.startsWith("data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHdpZHRoPSIxNiIgaGVpZ2h0PSIxNSIg")) })
    .toEqual({ context: [], cdp: [] })
  expect(await opened.violations()).toEqual([])
  expect(opened.errors).toEqual([])
  expect(opened.dialogs).toEqual([])
  expect(await opened.page.evaluate(() => window.__pwned)).toBeUndefined()
}

const BIG = 100_000
/** How many commands open the big session cold, each once. */
const COLD_OPENS = 3

/** The big session's lines, made once for both backends, and its records (decoded once, for the database). */
let bigMade: Array<string> | undefined
const big = (): Array<string> => (bigMade ??= linearLines("big", BIG))
const bigText = (): string => big().map((l) => `${l}\n`).join("")
let bigDecoded: Sessions.Records | undefined
const bigRecords = (): Sessions.Records => (bigDecoded ??= recordsOf(big()))

/** One Chromium for every test of the file, launched by the first that needs it. */
let sharedBrowser: Promise<Browser> | undefined
const browserOnce = (): Promise<Browser> => (sharedBrowser ??= launch())
afterAll(async () => {
  const browser = await sharedBrowser?.catch(() => undefined)
  await browser?.close()
})

interface Backend {
  readonly name: string
  /** Starts a server with the corpus and the hostile sessions in it, laying out nothing ahead. */
  readonly start: () => Promise<Served>
  /**
   * Adds the big session while the server runs, as another process would: after the searches, so
   * that on PostgreSQL none of them writes its 100,000 entries into the search index.
   */
  readonly addBig: (served: Served) => Promise<void>
  /** The appender's arguments for the session `key` of `served`. */
  readonly appenderArgs: (served: Served, key: string) => ReadonlyArray<string>
  /** The command `serve`'s options for what `served` serves. */
  readonly commandArgs: (served: Served) => ReadonlyArray<string>
}

/** The records of a session's lines. */
const recordsOf = (lines: ReadonlyArray<string>): Sessions.Records => {
  const decoded = Codec.decodeLines({ lines, sizes: lines.map(Codec.utf8Length), tail: "none" })
  if (decoded._tag === "Left") throw decoded.left
  return { header: decoded.right.header, entries: decoded.right.history.entries }
}

const linesOf = (header: Header, entries: ReadonlyArray<Entry>): Array<string> => [header, ...entries].map((r) => Codec.encodeRecord(r))

const files: Backend = {
  name: "files",
  start: async () => {
    const dir = tempDir("browser")
    writeCorpus(dir)
    const v1 = await hostile()
    NFS.writeFileSync(Path.join(dir, "hostile.jsonl"), linesOf(v1.header, v1.entries).map((l) => `${l}\n`).join(""))
    const v2 = hostileAgent()
    NFS.writeFileSync(Path.join(dir, "hostile-agent.jsonl"), linesOf(v2.header, v2.entries).map((l) => `${l}\n`).join(""))
    // The agent session names a blob: a file of its size stands for it (it is a PDF, never drawn).
    const ref = JSON.stringify(v2.entries).match(/sha256:([0-9a-f]{64})/)![1]!
    NFS.mkdirSync(Path.join(dir, "hostile-agent.jsonl.blobs"))
    NFS.writeFileSync(Path.join(dir, "hostile-agent.jsonl.blobs", ref), Buffer.alloc(123_456))
    const served = await serveFiles(dir, { port: 0, ahead: 0 })
    return { ...served, stop: async () => (await served.stop(), NFS.rmSync(dir, { recursive: true, force: true })) }
  },
  appenderArgs: (served, key) => [Path.join(served.where, key)],
  commandArgs: (served) => ["--files", "--dir", served.where],
  addBig: async (served) => {
    // Written beside and renamed in, as a writer makes a file whole: never seen half-written.
    NFS.writeFileSync(Path.join(served.where, ".big.tmp"), bigText())
    NFS.renameSync(Path.join(served.where, ".big.tmp"), Path.join(served.where, "big.jsonl"))
  }
}

const database: Backend = {
  name: "PostgreSQL",
  start: async () => {
    // The hostile session under an ID the database can hold, and PostgreSQL text holds no NUL, which
    // the hostile entry IDs do: a U+0001 stands in for it.
    const v1 = await hostile()
    const lines = linesOf({ ...v1.header, id: "hostile" }, v1.entries).map((line) => line.replaceAll("\\u0000", "\\u0001"))
    const served = await serveDatabase("browser", { records: [recordsOf(lines)], ahead: 0 })
    return { ...served, keyOf: (name) => (name === "hostile" || name === "big" ? name : served.keyOf(name)) }
  },
  appenderArgs: (served, key) => [key, served.where],
  commandArgs: (served) => ["--db", served.where],
  addBig: (served) => served.add!([bigRecords()])
}

for (const backend of [files, database]) {
  browserDescribe(`the served pages in Chromium, on ${backend.name}`, () => {
    let browser: Browser | undefined
    let served: Served
    let appender: ReadonlyArray<string> = []
    const children: Array<Child> = []
    /** The command `serve`, each a process of its own, started before the big session is written. */
    const commands: Array<{ readonly child: Child; readonly port: number }> = []
    const opened: Array<Opened> = []
    const open = async () => {
      const o = await openPage(browser!)
      opened.push(o)
      return o
    }

    beforeAll(async () => {
      if (!browserFound) throw new Error(`${MISSING}. CI or REQUIRE_BROWSER=1 is set, so the browser tests must run.`)
      NFS.mkdirSync(ARTIFACTS, { recursive: true })
      let command: ReadonlyArray<string>
      ;[browser, served, appender, command] = await Promise.all([browserOnce(), backend.start(), prepareChild(APPENDER), prepareChild(COMMAND)])
      for (let k = 0; k < COLD_OPENS; k++) {
        const child = spawnChild(command, ["serve", ...backend.commandArgs(served), "--port", "0"])
        commands.push({ child, port: 0 })
      }
      for (const [k, { child }] of commands.entries()) {
        const url = await child.waitFor("http://127.0.0.1:")
        commands[k] = { child, port: Number(new URL(url).port) }
      }
    })

    /** Resolves once the server on `port` lists the big session (its live stream for it answers). */
    const listedAt = async (port: number) => {
      const url = `http://127.0.0.1:${port}/events?s=${encodeURIComponent(served.keyOf("big"))}`
      for (;;) {
        const stop = new AbortController()
        const response = await fetch(url, { signal: stop.signal })
        stop.abort()
        if (response.status === 200) return
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
    }

    /** The big session added, once, and listed by the server. */
    let bigAdded: Promise<void> | undefined
    const bigListed = () => (bigAdded ??= backend.addBig(served).then(() => listedAt(served.port)))

    // What a test opened goes with it: pages left open would follow every change that comes after.
    afterEach(async () => {
      for (const child of children.splice(0)) {
        child.proc.stdin?.end()
        if (child.proc.exitCode === null) child.proc.kill("SIGKILL")
        await child.exited
      }
      for (const o of opened.splice(0)) await o.close()
    })

    afterAll(async () => {
      for (const { child } of commands.splice(0)) {
        if (child.proc.exitCode === null) child.proc.kill("SIGKILL")
        await child.exited
      }
      await served?.stop()
    })

    it("goes from the list to a search, opens a hit on its branch, and chooses another branch without a reload", async () => {
      const o = await open()
      const { page } = o
      await page.goto(served.url)
      const titles = await page.$$eval("#rows tr td.t a", (links) => links.map((a) => a.textContent))
      expect(titles).toEqual(expect.arrayContaining(["Why does the API say Connection refused after the deploy?", "Deploy checklist notes", "How big should the connection pool be?"]))
      // A search from the bar.
      await page.fill("header.site input[name=q]", "refused")
      await Promise.all([page.waitForURL(/\/search\?q=refused/), page.press("header.site input[name=q]", "Enter")])
      const hits = await page.$$eval(".hit", (list) => list.map((hit) => hit.querySelector(".loc")!.textContent))
      expect(hits).toEqual([`${served.keyOf("notes")} · entry n3`, `${served.keyOf("incident")} · entry i4`, `${served.keyOf("incident")} · entry i1`])
      expect(await page.$$eval(".hit mark", (marks) => marks.map((m) => m.textContent))).toEqual(["refused", "refused", "refused"])
      // The second hit, on its branch: the path to it, its card marked.
      await Promise.all([page.waitForURL(/\/s\//), page.click(".hit:nth-child(2) .hh a")])
      await ready(o)
      expect(await cards(o)).toEqual(["i1", "i4"])
      expect(await page.locator("#m3").getAttribute("class")).toContain("flash")
      expect(await page.locator("#pid").textContent()).toBe("i4")
      // Another branch, chosen in the tree: the same page, another path.
      await page.evaluate(() => (window.__marker = 1))
      await page.click("#r2")
      await page.waitForFunction(() => document.querySelector("#pid")?.textContent === "i3")
      expect(await cards(o)).toEqual(["i1", "i2", "i3"])
      expect(await page.$$eval("#tree .row.sel", (rows) => rows.map((r) => r.id))).toEqual(["r0", "r1", "r2"])
      expect(await page.evaluate(() => window.__marker)).toBe(1)
      expect(page.url()).toMatch(/[?&]leaf=i3$/)
      // A call's link leads to its result, a result's to its call.
      await page.locator("#m1 .call .go").click()
      expect(await page.locator("#m2").getAttribute("class")).toContain("flash")
      await page.screenshot({ path: Path.join(ARTIFACTS, `session-${backend.name}.png`) })
      await expectSealed(o, served)
    })

    it("shows another process's append in an open session page and the list within a second, keeping the reader's place", async () => {
      const key = served.keyOf("pooling")
      const child = spawnChild(appender, backend.appenderArgs(served, key))
      children.push(child)
      await child.waitFor("ready")
      const session = await open()
      await session.page.goto(`${served.url}s/${encodeURIComponent(key)}`.replace(/\?token=[^/]*/, ""))
      await ready(session)
      await session.page.waitForFunction(() => document.querySelector("#live")?.textContent === "live")
      const list = await open()
      await list.page.goto(served.url)
      await list.page.waitForFunction(() => document.querySelector("#live")?.textContent === "live")
      const before = await cards(session)
      const latencies: Array<number> = []
      for (let k = 1; k <= 3; k++) {
        const text = `zebra crossing ${k}`
        const shown = session.page.waitForFunction((t) => Array.prototype.some.call(document.querySelectorAll("#cards .msg .tx"), (el: { textContent: string | null }) => el.textContent === t), text, { polling: "raf", timeout: 5_000 })
        const listed = list.page.waitForFunction((n) => document.querySelector(`#rows tr.fresh td.n`)?.textContent === String(n), 3 + k, { polling: "raf", timeout: 5_000 })
        child.send(`user ${text}`)
        await child.waitForCount("appended", k)
        const started = performance.now()
        await Promise.all([shown, listed])
        latencies.push(performance.now() - started)
      }
      console.log(`live latency on ${backend.name} (append acknowledged → shown in the session page and the list): ${latencies.map((ms) => ms.toFixed(0)).join(", ")} ms`)
      for (const ms of latencies) expect(ms).toBeLessThan(1_000)
      const after = await cards(session)
      expect(after.slice(0, before.length)).toEqual(before)
      expect(after).toHaveLength(before.length + 3)
      // The tree, laid in from the changes `/since` sent, is the tree of a page loaded now.
      const treeOf = (o: Awaited<ReturnType<typeof open>>) =>
        o.page.evaluate(() => ({
          heading: document.querySelector("#th")?.textContent,
          facts: document.querySelector("#facts")?.textContent,
          rows: Array.prototype.map.call(document.querySelectorAll("#tree .row, #tree summary"), (el: { id: string; textContent: string | null }) => `${el.id} ${el.textContent}`)
        }))
      const fresh = await open()
      await fresh.page.goto(`${served.url}s/${encodeURIComponent(key)}`.replace(/\?token=[^/]*/, ""))
      await ready(fresh)
      expect(await treeOf(session)).toEqual(await treeOf(fresh))
      await expectSealed(fresh, served)
      await expectSealed(session, served)
      await expectSealed(list, served)
    })

    it("runs nothing and loads nothing a hostile session holds, on the list, its page and a search", async () => {
      const pages = [
        "",
        `s/${encodeURIComponent(served.keyOf("hostile"))}`,
        ...(backend === files ? [`s/${encodeURIComponent("hostile-agent.jsonl")}`] : []),
        `search?q=${encodeURIComponent("script pwned")}`,
        `search?q=${encodeURIComponent("onerror")}&role=user`
      ]
      // One page goes to each in turn: what it records (requests, errors, dialogs) adds up, and must stay empty.
      const o = await open()
      for (const path of pages) {
        await o.page.goto(`http://127.0.0.1:${served.port}/${path}`)
        if (path.startsWith("s/")) {
          await ready(o)
          // Every row chosen in turn: every card of every branch laid out and shown.
          const rows = await o.page.$$eval("#tree .row", (list) => list.map((r) => r.id))
          for (const id of rows.slice(0, 12)) await o.page.click(`#${id}`)
        }
        expect(await o.page.evaluate(() => window.__pwned)).toBeUndefined()
        await expectSealed(o, served)
      }
    })

    it("answers hostile addresses with a refusal, never with a session", async () => {
      // (`s/..` and `s/%2e%2e` never reach a server from a browser: the address is resolved first.)
      const o = await open()
      for (const path of ["s/..%2F..%2Fetc%2Fpasswd", "s/..%2Foutside.jsonl", "id/%00", "s/big/blob/..%2F..", "s/pooling.jsonl/run?start=-1&n=1&level=0", `s/${"x".repeat(3000)}`]) {
        const response = await o.page.goto(`http://127.0.0.1:${served.port}/${path}`)
        expect([path, response!.status() >= 400 && response!.status() < 500]).toEqual([path, true])
        expect(await o.page.locator("#cards .msg").count()).toBe(0)
      }
    })

    // A cold open is the session's whole load and check first (about 0.6 s of work for these 100,000
    // entries on a quiet machine), then its first screen. It is measured on the command itself, a
    // process of its own as a user runs it: the server in this test's process shares its heap and
    // its turns with the test, Chromium's driver and the other server, and takes 2-3 times as long.
    // Each command is opened once, so each open is its first. BENCHMARKS.md, "Serve", has the figures.
    it(`opens a session of ${BIG.toLocaleString("en-US")} entries that the command has not laid out yet with its first screen first, then its tree and facts`, async () => {
      await bigListed()
      const key = served.keyOf("big")
      const times: Array<string> = []
      let best = Infinity
      for (const { child, port } of commands) {
        await listedAt(port)
        const o = await open()
        const started = performance.now()
        await o.page.goto(`http://127.0.0.1:${port}/s/${encodeURIComponent(key)}`, { waitUntil: "commit" })
        await o.page.locator(`#m${BIG - 1}`).waitFor({ state: "visible" })
        await o.page.waitForFunction((n) => document.querySelector("#pn")?.textContent === `${n} entries`, BIG, { polling: "raf" })
        const first = performance.now() - started
        expect(await o.page.locator("#cards .msg").count()).toBeLessThanOrEqual(200)
        // Then the rest of the page: the tree with its folded run, the facts.
        await ready(o)
        const whole = performance.now() - started
        expect(await o.page.locator("#th").textContent()).toBe(`${BIG.toLocaleString("en-US")} entries in 1 branch`)
        expect(await o.page.locator("#tree details.run").count()).toBe(1)
        expect(await o.page.locator("#facts dl.facts").count()).toBe(1)
        await expectSealed(o, { ...served, port })
        await o.close()
        // Stopped as a user stops it (its memory freed for the next): it shuts down cleanly, as interrupted.
        child.proc.kill("SIGTERM")
        expect(await child.exited).toEqual({ code: 130, signal: null })
        times.push(`${first.toFixed(0)} ms (the whole page ${whole.toFixed(0)} ms)`)
        best = Math.min(best, first)
      }
      // Printed, not held to a second: on a machine busy with other work a cold open takes longer
      // (the goal is met on a quiet machine only; BENCHMARKS.md, "Serve").
      console.log(`first screen of ${BIG} entries on ${backend.name}, opened cold on the command: ${times.join(", ")}; best ${best.toFixed(0)} ms`)
    })

    it(`opens a session of ${BIG.toLocaleString("en-US")} entries laid out with its first screen drawn within a second, and shows an append to it`, async () => {
      const key = served.keyOf("big")
      /** Opens the big session; the time from the request to the newest entry's card on the screen. */
      const firstScreen = async (check: boolean) => {
        const o = await open()
        const started = performance.now()
        await o.page.goto(`http://127.0.0.1:${served.port}/s/${encodeURIComponent(key)}`, { waitUntil: "commit" })
        await ready(o)
        await o.page.locator(`#m${BIG - 1}`).waitFor({ state: "visible" })
        const ms = performance.now() - started
        expect(await o.page.locator("#cards .msg").count()).toBeLessThanOrEqual(200)
        expect(await o.page.locator("#pn").textContent()).toBe(`${BIG} entries`)
        if (check) {
          // The folded run opens with its rows, loaded a page at a time; earlier cards come on request.
          await o.page.click("#tree details.run > summary")
          await o.page.locator("#tree details.run .row").first().waitFor()
          expect(await o.page.locator("#tree details.run .row").count()).toBe(500)
          await o.page.click("#tree details.run > .more button")
          await o.page.waitForFunction(() => document.querySelectorAll("#tree details.run .row").length === 1_000)
          await o.page.click("#earlier button")
          await o.page.locator(`#m${BIG - 201}`).waitFor({ state: "attached" })
          await expectSealed(o, served)
        }
        await o.close()
        return ms
      }
      // Laid out by its first request (the test before), and kept: the server keeps the sessions opened last.
      await bigListed()
      await fetch(`http://127.0.0.1:${served.port}/s/${encodeURIComponent(key)}`).then((r) => r.text())
      const laidOut = [await firstScreen(true), await firstScreen(false), await firstScreen(false)]
      console.log(`first screen of ${BIG} entries on ${backend.name}: ${laidOut.map((ms) => ms.toFixed(0)).join(", ")} ms laid out`)
      for (const ms of laidOut) expect(ms).toBeLessThan(1_000)

      // Another process appends to it while its page is open: the new card follows the path's end.
      const child = spawnChild(appender, backend.appenderArgs(served, key))
      children.push(child)
      const o = await open()
      await Promise.all([child.waitFor("ready"), o.page.goto(`http://127.0.0.1:${served.port}/s/${encodeURIComponent(key)}`)])
      await ready(o)
      await o.page.waitForFunction(() => document.querySelector("#live")?.textContent === "live")
      const shown = o.page.waitForFunction((id) => document.querySelector(`#cards #m${id} .tx`)?.textContent === "one more step", BIG, { polling: "raf", timeout: 60_000 })
      const sent = performance.now()
      child.send("user one more step")
      await child.waitForCount("appended", 1)
      const started = performance.now()
      await shown
      const latency = performance.now() - started
      // (The server runs in this process: while it reads the session, the child's answer waits, so the
      // time from the answer can be short; the time from the request includes the child's own load.)
      const fromSent = performance.now() - sent
      expect(await o.page.locator("#pn").textContent()).toBe(`${BIG + 1} entries`)
      expect(await o.page.locator(`#m${BIG}`).isVisible()).toBe(true)
      console.log(`live latency on a session of ${BIG} entries on ${backend.name} (append acknowledged → shown in its open page): ${latency.toFixed(0)} ms; from the request to the appender (which loads the session first): ${fromSent.toFixed(0)} ms`)
      await expectSealed(o, served)
    })
  })
}

/**
 * The HTML page in a real headless Chromium (Debian's, driven by
 * playwright-core), loaded from a file:// URL so the page itself is the one
 * request there should be.
 *
 * Requests are recorded twice: the context's `request` event (which also sees
 * attempts the policy blocks) and the DevTools protocol's
 * `Network.requestWillBeSent` (the only one that also sees data: and blob:
 * URLs). Both recorders are shown to work by the injection test, which makes
 * requests on purpose. Policy violations are collected by a listener that runs
 * before the page's own script.
 *
 * A version-2 page may draw images from `data:` URLs, so the DevTools
 * recorder sees those too, and nothing else but the page.
 *
 * Without Chromium these tests are skipped, each named on stderr with what to
 * install and how to run them, unless CI or REQUIRE_BROWSER=1 is set: then
 * they fail (see support/browser.ts).
 */
import type { Entry, Header } from "@session-tree/core/Record"
import { leavesOf, pathTo } from "@session-tree/core/SessionTree"
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import type { Browser, BrowserContext, Page } from "playwright-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Html from "../src/Html.js"
import { pathTo as pathOf } from "../src/internal/session.js"
import { browserFound, browserIt, browserRequired, launch, MISSING, runBrowserTests } from "./support/browser.js"
import type { DomDocument, DomElement, DomWindow } from "./support/dom.js"
import { big, demo, HOSTILE, hostile, twin } from "./support/sessions.js"
import { base64Of, blobSession, IMAGE_A, IMAGE_B, PDF, refOf } from "./support/blobs.js"
import { agent, harmlessAgent, hostileAgent, PIXEL } from "./support/v2.js"

// The callbacks given to page.evaluate and $$eval run in the browser (see support/dom.ts).
declare const document: DomDocument
declare const window: DomWindow
declare const requestAnimationFrame: (callback: () => void) => number

const ARTIFACTS = fileURLToPath(new URL("./artifacts/", import.meta.url))
const VIEWPORT = { width: 1280, height: 800 }

interface Violation {
  readonly directive: string
  readonly blocked: string
}

interface Opened {
  readonly page: Page
  readonly url: string
  /** Milliseconds from `goto` to the page parsed and its script run (the tree and transcript laid out). */
  readonly readyMs: number
  readonly requests: { readonly context: Array<string>; readonly cdp: Array<string> }
  readonly errors: Array<string>
  readonly violations: () => Promise<Array<Violation>>
  readonly close: () => Promise<void>
}

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

const htmlOf = (session: { readonly header: Header; readonly entries: ReadonlyArray<Entry> }, options?: Html.Options) => Effect.runPromise(Html.render(session.header, session.entries, options))

/** What the page shows for `text`: control characters as their pictures (as `escapeHtml` writes them), CR and CRLF as LF (as the HTML parser reads them). */
const shownText = (text: string) =>
  text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)))
    .replace(/\r\n?/g, "\n")

// The DOM queries run inside the page.
/** The entry IDs of the tree rows marked as the active path, in document order. */
const activeRows = (page: Page) =>
  page.$$eval("#tree .row.act", (rows: Array<DomElement>) => rows.map((row) => row.querySelector(".id")!.textContent))
/** The entry IDs of the transcript cards shown, in document order. */
const shownCards = (page: Page) =>
  page.$$eval("#panel .msg", (cards: Array<DomElement>) => cards.filter((card) => card.checkVisibility()).map((card) => card.querySelector(".mh .id")!.textContent))
/** The entry IDs of the rows highlighted as the selected path. */
const selectedRows = (page: Page) => page.$$eval("#tree .row.sel", (rows: Array<DomElement>) => rows.map((row) => row.querySelector(".id")!.textContent))
/** Every element as its tag and attributes, in document order. */
const census = (page: Page) =>
  page.$$eval("*", (elements: Array<DomElement>) => elements.map((el) => `${el.tagName} ${Array.from(el.attributes, (a) => `${a.name}=${a.value}`).join(" ")}`))

const ids = (path: ReadonlyArray<Entry>) => path.map((entry) => entry.id)

describe("the HTML page in Chromium", () => {
  let browser: Browser | undefined
  let dir = ""
  const contexts: Array<BrowserContext> = []

  beforeAll(async () => {
    if (!runBrowserTests) return
    if (!browserFound) throw new Error(`${MISSING}. CI or REQUIRE_BROWSER=1 is set, so the browser tests must run.`)
    browser = await launch()
    dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-view-"))
    NFS.mkdirSync(ARTIFACTS, { recursive: true })
  })

  afterAll(async () => {
    await browser?.close()
    if (dir !== "") NFS.rmSync(dir, { recursive: true, force: true })
  })

  /** Writes `html` to a file and opens it in a fresh context, recording requests, errors and policy violations. */
  const open = async (name: string, html: string, viewport = VIEWPORT): Promise<Opened> => {
    const file = Path.join(dir, `${name}.html`)
    NFS.writeFileSync(file, html)
    const url = pathToFileURL(file).href
    const context = await browser!.newContext({ viewport })
    contexts.push(context)
    const page = await context.newPage()
    const requests = { context: [] as Array<string>, cdp: [] as Array<string> }
    context.on("request", (request) => requests.context.push(request.url()))
    const cdp = await context.newCDPSession(page)
    await cdp.send("Network.enable")
    cdp.on("Network.requestWillBeSent", (event) => requests.cdp.push(event.request.url))
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text())
    })
    await page.addInitScript(() => {
      const violations: Array<{ directive: string; blocked: string }> = []
      window.__violations = violations
      document.addEventListener("securitypolicyviolation", (e) => violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI }))
    })
    const started = performance.now()
    await page.goto(url, { waitUntil: "commit" })
    await page.waitForFunction(() => document.documentElement.getAttribute("data-ready") === "1", undefined, { polling: "raf" })
    const readyMs = performance.now() - started
    return {
      page,
      url,
      readyMs,
      requests,
      errors,
      // Events are dispatched asynchronously: one more frame lets any pending one arrive.
      violations: () =>
        page.evaluate(() =>
          new Promise<Array<Violation>>((resolve) =>
            requestAnimationFrame(() => setTimeout(() => resolve(window.__violations ?? []), 50))
          )
        ),
      close: () => context.close()
    }
  }

  /** The page made exactly one request, for itself, by both recorders; it reported no error and no violation. */
  const expectSealed = async (opened: Opened) => {
    expect(await opened.violations()).toEqual([])
    expect(opened.requests.context).toEqual([opened.url])
    expect(opened.requests.cdp).toEqual([opened.url])
    expect(opened.errors).toEqual([])
  }

  browserIt("shows the demo session: every entry, the active path, any entry's path on click or key", async () => {
    const session = await demo()
    const opened = await open("demo", await htmlOf(session))
    const { page } = opened
    expect(await page.locator("#tree .row").count()).toBe(session.entries.length)
    expect(await page.locator("#panel .msg").count()).toBe(session.entries.length)
    const active = ids(pathTo(session.entries, "entry-006"))
    expect(await activeRows(page)).toEqual(active)
    expect(await selectedRows(page)).toEqual(active)
    expect(await shownCards(page)).toEqual(active)
    expect(await page.locator("#pid").textContent()).toBe("entry-006")
    await page.screenshot({ path: Path.join(ARTIFACTS, "demo.png") })

    // A click on another entry shows its root-to-entry path; the active path stays marked.
    await page.click("#r3")
    expect(await shownCards(page)).toEqual(ids(pathTo(session.entries, "entry-004")))
    expect(await selectedRows(page)).toEqual(ids(pathTo(session.entries, "entry-004")))
    expect(await activeRows(page)).toEqual(active)
    expect(await page.locator("#pid").textContent()).toBe("entry-004")
    expect(await page.locator("#pn").textContent()).toBe("4 entries")
    expect(await page.locator("#r3").getAttribute("aria-current")).toBe("true")
    expect(await page.locator("#r5").getAttribute("aria-current")).toBeNull()

    // The keyboard: arrows move through the rows and select; Enter selects the focused row.
    await page.keyboard.press("ArrowDown")
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("r4")
    expect(await shownCards(page)).toEqual(ids(pathTo(session.entries, "entry-005")))
    await page.keyboard.press("ArrowUp")
    await page.keyboard.press("ArrowUp")
    expect(await shownCards(page)).toEqual(ids(pathTo(session.entries, "entry-003")))
    await page.keyboard.press("End")
    expect(await shownCards(page)).toEqual(active)
    await page.focus("#r1")
    await page.keyboard.press("Enter")
    expect(await shownCards(page)).toEqual(ids(pathTo(session.entries, "entry-002")))

    // A call links to its result (selecting it) and a result to its call.
    await page.locator("#m1 .call .go").click()
    expect(await shownCards(page)).toEqual(ids(pathTo(session.entries, "entry-003")))
    await page.locator("#m2 .link .go").click()
    expect(await page.locator("#c1-0").getAttribute("class")).toContain("flash")
    await page.click("#toleaf")
    expect(await shownCards(page)).toEqual(active)
    await expectSealed(opened)
    await opened.close()
  })

  browserIt("renders hostile content as text: nothing runs, no element is added, nothing is requested", async () => {
    const session = await hostile()
    const opened = await open("hostile", await htmlOf(session))
    const harmless = await open("hostile-twin", await htmlOf(twin(session)))
    const { page } = opened
    expect(await page.evaluate(() => Object.keys(window).filter((key) => key.includes("pwned")))).toEqual([])
    expect(await census(page)).toEqual(await census(harmless.page))
    expect(await page.locator("script").count()).toBe(1)

    // Every value arrives as text, exactly.
    const shown = await page.$$eval("#panel .msg", (cards: Array<DomElement>) =>
      cards.map((card) => ({
        id: card.querySelector(".mh .id")!.textContent,
        content: (card.querySelector(":scope > .tx, :scope > details.long .tx.full") ?? card.querySelector(".empty"))!.textContent
      })))
    expect(shown).toEqual(session.entries.map((entry) => ({ id: shownText(entry.id), content: shownText(entry.message.content) })))
    const rowIds = await page.$$eval("#tree .row .id", (spans: Array<DomElement>) => spans.map((span) => span.textContent))
    expect(new Set(rowIds)).toEqual(new Set(session.entries.map((entry) => shownText(entry.id))))
    expect(await page.locator(".facts .id").first().textContent()).toBe(shownText(session.header.id))
    const args = await page.$$eval("#panel .args", (blocks: Array<DomElement>) => blocks.map((block) => block.textContent))
    expect(args).toEqual(session.entries.flatMap((e) => e.message.role === "assistant" ? e.message.toolCalls.map((c) => shownText(JSON.stringify(c.arguments, null, 2))) : []))
    await expect(page.getByText(HOSTILE[0]!, { exact: false }).first().isVisible()).resolves.toBe(true)
    await page.screenshot({ path: Path.join(ARTIFACTS, "hostile.png") })
    await expectSealed(opened)
    await expectSealed(harmless)

    // Markup injected by the test itself is stopped by the policy, reported, and seen by both recorders.
    await page.evaluate(() => {
      const div = document.createElement("div")
      div.innerHTML = "<img src=\"injected.png\" onerror=\"window.__pwned = 1\"><img src=\"data:image/gif;base64,R0lGODlhAQABAAAAACw=\">"
      document.body.append(div)
    })
    const violations = await opened.violations()
    expect(violations.map((v) => v.directive).sort()).toEqual(["img-src", "img-src", "script-src-attr"])
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined()
    const injected = new URL("injected.png", opened.url).href
    expect(opened.requests.context).toEqual([opened.url, injected])
    expect(opened.requests.cdp).toEqual([opened.url, injected, "data:image/gif;base64,R0lGODlhAQABAAAAACw="])
    await opened.close()
    await harmless.close()
  })

  /** As `expectSealed`, but the DevTools recorder may also see the page's own `data:` images, and nothing else. */
  const expectSealedBut = async (opened: Opened, images: ReadonlyArray<string>) => {
    expect(await opened.violations()).toEqual([])
    expect(opened.requests.context).toEqual([opened.url])
    expect(opened.requests.cdp[0]).toBe(opened.url)
    expect(new Set(opened.requests.cdp.slice(1))).toEqual(new Set(images))
    expect(opened.errors).toEqual([])
  }

  browserIt("shows a version-2 session: every kind, labels, the title, reasoning collapsed, images from data: URLs only", async () => {
    const session = agent()
    const leaf = "text 59#e10"
    const opened = await open("agent", await htmlOf(session, { leaf }))
    const { page } = opened
    expect(await page.title()).toBe("Picture questions text 41")
    expect(await page.locator("h1").textContent()).toBe("Picture questions text 41")
    expect(await page.locator("#tree .row").count()).toBe(session.entries.length)
    const active = ids(pathOf(session.entries, leaf))
    expect(await activeRows(page)).toEqual(active)
    expect(await shownCards(page)).toEqual(active)
    expect(await page.$$eval("#tree .row .k", (names: Array<DomElement>) => names.map((name) => name.textContent))).toEqual(
      // At the fork, the branch off the active path comes first, so the active path reads downwards.
      ["system", "user", "assistant", "tool", "model", "compaction", "user", "label", "title", "custom", "assistant"]
    )
    // The label shows on the entry it labels, in the tree and in the transcript.
    expect(await page.locator("#r1 .chip.lbl").textContent()).toBe("⚑ important text 40")
    expect(await page.locator("#m1 .mh .lbl").isVisible()).toBe(true)

    // Reasoning is collapsed until opened.
    const reasoning = page.locator("#m2 details.rs")
    expect(await reasoning.evaluate((el: DomElement) => el.open)).toBe(false)
    expect(await reasoning.locator(".tx").evaluate((el: DomElement) => el.checkVisibility())).toBe(false)
    await reasoning.locator("summary").click()
    expect(await reasoning.locator(".tx").evaluate((el: DomElement) => el.checkVisibility())).toBe(true)
    expect(await reasoning.locator(".tx").textContent()).toBe("Thinking about the picture. text 15")

    // The images are drawn (from their data: URLs); the web file is a link, not loaded.
    const widths = await page.$$eval("#panel img", (images: Array<DomElement>) => images.map((image) => (image as DomElement & { naturalWidth: number }).naturalWidth))
    expect(widths).toEqual([1, 1])
    expect(await page.locator("#m1 a.url").getAttribute("href")).toBe("https://example.com/a?b=1&c=(2)")
    expect(await page.locator("#m1 a.url").isVisible()).toBe(true)
    await page.screenshot({ path: Path.join(ARTIFACTS, "agent.png") })

    // The label's card leads to the entry it labels; a provider result leads to its call.
    // (The target is on the shown path here, so its card stays shown and is flashed.)
    await page.locator("#m6 .link .go").click()
    expect(await shownCards(page)).toEqual(active)
    expect(await page.locator("#m1").getAttribute("class")).toContain("flash")
    await page.click("#r2")
    expect(await shownCards(page)).toEqual(ids(pathOf(session.entries, "text 52#e3")))
    await page.locator("#m2 [data-to=\"c2-4\"]").click()
    expect(await page.locator("#c2-4").getAttribute("class")).toContain("flash")
    await expectSealedBut(opened, [`data:image/png;base64,${PIXEL}`])
    await opened.close()
  })

  browserIt("renders hostile version-2 content as text: nothing runs, no element is added, nothing but data: images requested", async () => {
    const session = hostileAgent()
    const opened = await open("agent-hostile", await htmlOf(session))
    const harmless = await open("agent-hostile-twin", await htmlOf(harmlessAgent()))
    const { page } = opened
    expect(await page.evaluate(() => Object.keys(window).filter((key) => key.includes("pwned")))).toEqual([])
    expect(await census(page)).toEqual(await census(harmless.page))
    expect(await page.locator("script").count()).toBe(1)
    // The title is the hostile markup of HOSTILE[2], as text (it holds no control character or space run).
    expect(await page.title()).toBe(`Picture questions ${HOSTILE[41 % HOSTILE.length]!}`)
    expect(await page.locator("#r1 .chip.lbl").textContent()).toBe(shownText(`⚑ important ${HOSTILE[40 % HOSTILE.length]!}`))
    expect(await page.locator("#m1 .file .cid").first().textContent()).toBe("image/png")
    expect(await page.locator("#m1 .file .cid").nth(1).textContent()).toBe(shownText(`text/html${HOSTILE[7 % HOSTILE.length]!}`))
    await page.screenshot({ path: Path.join(ARTIFACTS, "agent-hostile.png") })
    await expectSealedBut(opened, [`data:image/png;base64,${PIXEL}`])
    await expectSealedBut(harmless, [`data:image/png;base64,${PIXEL}`])

    // Markup injected by the test itself: the policy still stops a network image and an inline handler.
    await page.evaluate(() => {
      const div = document.createElement("div")
      div.innerHTML = "<img src=\"injected.png\" onerror=\"window.__pwned = 1\">"
      document.body.append(div)
    })
    expect((await opened.violations()).map((v) => v.directive).sort()).toEqual(["img-src", "script-src-attr"])
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined()
    await opened.close()
    await harmless.close()
  })

  browserIt("draws image blobs read through the store from data: URLs: the page stays self-contained", async () => {
    const session = await blobSession()
    const opened = await open("blobs", await htmlOf(session, { blobs: session.blob }))
    const { page } = opened
    // The active path: image A, the answer, then image A again and image B, each drawn at its own size.
    const sizes = await page.$$eval("#panel img", (images: Array<DomElement>) =>
      images.map((image) => {
        const img = image as DomElement & { naturalWidth: number; naturalHeight: number; complete: boolean }
        return [img.complete, img.naturalWidth, img.naturalHeight]
      }))
    expect(sizes).toEqual([[true, 160, 150], [true, 160, 150], [true, 150, 160]])
    expect(await page.locator("#m0 .file").nth(1).locator(".cid").last().textContent()).toBe(refOf(PDF))
    await page.screenshot({ path: Path.join(ARTIFACTS, "blobs.png") })
    await expectSealedBut(opened, [`data:image/png;base64,${base64Of(IMAGE_A)}`, `data:image/png;base64,${base64Of(IMAGE_B)}`])
    await opened.close()
  })

  browserIt("loads a 4,096-entry session quickly, folded, and changes the path without freezing", async () => {
    const session = await big()
    expect(session.entries).toHaveLength(4_096)
    const html = await htmlOf(session)
    const runs: Array<{ ready: number; fcp: number; dcl: number }> = []
    let last: Opened | undefined
    for (let run = 0; run < 5; run++) {
      await last?.close()
      last = await open(`large-${run}`, html)
      await expectSealed(last)
      const timing = await last.page.evaluate(() => {
        const navigation = window.performance.getEntriesByType("navigation")[0]!
        const paint = window.performance.getEntriesByName("first-contentful-paint")[0]
        return { fcp: paint === undefined ? Number.NaN : paint.startTime, dcl: navigation.domContentLoadedEventEnd }
      })
      runs.push({ ready: last.readyMs, ...timing })
    }
    const page = last!.page
    const summary = {
      ready: median(runs.map((r) => r.ready)),
      fcp: median(runs.map((r) => r.fcp)),
      dcl: median(runs.map((r) => r.dcl))
    }
    console.log(
      `4,096-entry page (${(html.length / 1e6).toFixed(2)} MB), ${runs.length} loads: ` +
        `goto → laid out and script ready, median ${summary.ready.toFixed(0)} ms (${runs.map((r) => r.ready.toFixed(0)).join(", ")}); ` +
        `first-contentful-paint median ${summary.fcp.toFixed(0)} ms (${runs.map((r) => r.fcp.toFixed(0)).join(", ")}); ` +
        `DOMContentLoaded median ${summary.dcl.toFixed(0)} ms`
    )
    // The goal is 1 s; the bound only catches a page that freezes, since a loaded test machine is slower.
    expect(summary.ready).toBeLessThan(5_000)
    expect(Number.isFinite(summary.fcp)).toBe(true)

    expect(await page.locator("#tree .row").count()).toBe(4_096)
    const leaf = session.entries.at(-1)!.id
    const active = ids(pathTo(session.entries, leaf))
    expect(await activeRows(page)).toEqual(active)
    expect(await shownCards(page)).toEqual(active)

    // Long single-child chains and long texts are folded, and open on demand.
    expect(await page.locator("details.run").count()).toBeGreaterThan(10)
    expect(await page.locator("details.run[open]").count()).toBe(0)
    const long = page.locator("#panel .msg.on details.long").first()
    expect(await long.evaluate((el: DomElement) => el.open)).toBe(false)
    expect(await long.locator(".full").evaluate((el: DomElement) => el.checkVisibility())).toBe(false)
    await long.locator("summary").click()
    expect(await long.locator(".full").evaluate((el: DomElement) => el.checkVisibility())).toBe(true)

    // Selecting the deepest leaf of another branch shows its path, within a frame or two.
    const others = leavesOf(session.entries).filter((entry) => entry.id !== leaf)
    const target = others.reduce((a, b) => (pathTo(session.entries, b.id).length > pathTo(session.entries, a.id).length ? b : a))
    const index = session.entries.indexOf(target)
    const selectMs = await page.evaluate((i) =>
      new Promise<number>((resolve) => {
        const started = window.performance.now()
        document.getElementById(`r${i}`)!.click()
        requestAnimationFrame(() => setTimeout(() => resolve(window.performance.now() - started)))
      }), index)
    console.log(`selecting a path of ${pathTo(session.entries, target.id).length} entries on the 4,096-entry page: ${selectMs.toFixed(0)} ms`)
    expect(selectMs).toBeLessThan(2_000)
    expect(await shownCards(page)).toEqual(ids(pathTo(session.entries, target.id)))
    expect(await activeRows(page)).toEqual(active)
    await page.screenshot({ path: Path.join(ARTIFACTS, "large.png") })
    await expectSealed(last!)
    await last!.close()
  })
})

// Under CI or REQUIRE_BROWSER=1 a missing browser is a failed test, not a skipped one.
it.runIf(browserRequired)("Chromium is installed, as CI requires", () => {
  expect(browserFound, MISSING).toBe(true)
})

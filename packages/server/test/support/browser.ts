/**
 * Chromium for the server's pages, as for the HTML view's (Debian's binary,
 * driven by playwright-core; skipped loudly without it, each skipped test named
 * by `browserDescribe`, failed with CI or REQUIRE_BROWSER=1), with one difference: the pages are served from
 * 127.0.0.1, so the resolver rule that stops every lookup leaves that address out.
 *
 * `open` records every request a page makes twice (the context's `request`
 * event, which sees what the policy blocks too, and the DevTools protocol's
 * `requestWillBeSent`, which also sees data: URLs), every error, every dialog,
 * and every policy violation (collected by a listener that runs before the
 * page's own script).
 */
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"
import { describe } from "vitest"
import { getCurrentSuite } from "vitest/suite"
import { browserFound, browserRequired, CHROMIUM, MISSING, runBrowserTests } from "../../../view/test/support/browser.js"

export { browserFound, browserRequired, MISSING, runBrowserTests }

/** How to run the server's browser tests once Chromium is installed. */
export const RUN_THEM = "npx vitest run --project server packages/server/test/browser.test.ts"

/**
 * `describe` for tests that need Chromium: run when it is there (or required, to fail);
 * otherwise skipped, each of its tests named on stderr with what to install and how to run them,
 * as the view's `browserIt` does (a run that passes says what it did not test).
 */
export const browserDescribe = (name: string, fn: () => void): void => {
  if (runBrowserTests) {
    describe(name, fn)
    return
  }
  describe.skip(name, () => {
    fn()
    // The tests `fn` declared, with their names as written (templates filled in).
    for (const task of getCurrentSuite().tasks) {
      if (task.type === "test") process.stderr.write(`skipped (no Chromium; install it with sudo .ci/install-chromium.sh, then ${RUN_THEM}): ${name} > ${task.name}\n`)
    }
  })
}

export const launch = (): Promise<Browser> => {
  if (!browserFound) return Promise.reject(new Error(MISSING))
  return chromium.launch({ executablePath: CHROMIUM, args: ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"] })
}

export interface Violation {
  readonly directive: string
  readonly blocked: string
}

export interface Opened {
  readonly context: BrowserContext
  readonly page: Page
  readonly requests: { readonly context: Array<string>; readonly cdp: Array<string> }
  readonly errors: Array<string>
  readonly dialogs: Array<string>
  readonly violations: () => Promise<Array<Violation>>
  readonly close: () => Promise<void>
}

// The callbacks given to page.evaluate run in the browser.
declare const document: {
  readonly documentElement: { getAttribute(name: string): string | null }
  addEventListener(type: string, listener: (e: { readonly effectiveDirective: string; readonly blockedURI: string }) => void): void
}
declare const window: { __violations?: Array<Violation> }
declare const requestAnimationFrame: (callback: () => void) => number

/** A fresh context and page, recording what the page does. */
export const openPage = async (browser: Browser, viewport = { width: 1280, height: 800 }): Promise<Opened> => {
  const context = await browser.newContext({ viewport })
  const page = await context.newPage()
  const requests = { context: [] as Array<string>, cdp: [] as Array<string> }
  context.on("request", (request) => requests.context.push(request.url()))
  const cdp = await context.newCDPSession(page)
  await cdp.send("Network.enable")
  cdp.on("Network.requestWillBeSent", (event) => requests.cdp.push(event.request.url))
  const errors: Array<string> = []
  const dialogs: Array<string> = []
  page.on("pageerror", (error) => errors.push(error.message))
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text())
  })
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message())
    void dialog.dismiss()
  })
  await page.addInitScript(() => {
    const violations: Array<Violation> = []
    window.__violations = violations
    document.addEventListener("securitypolicyviolation", (e) => violations.push({ directive: e.effectiveDirective, blocked: e.blockedURI }))
  })
  return {
    context,
    page,
    requests,
    errors,
    dialogs,
    // Events are dispatched asynchronously: one more frame lets any pending one arrive.
    violations: () =>
      page.evaluate(() => new Promise<Array<Violation>>((resolve) => requestAnimationFrame(() => setTimeout(() => resolve(window.__violations ?? []), 50)))),
    close: () => context.close()
  }
}

/** Whether every request the page made went to `origin`. */
export const onlyTo = (opened: Opened, origin: string): { readonly context: Array<string>; readonly cdp: Array<string> } => ({
  context: opened.requests.context.filter((url) => !url.startsWith(origin)),
  cdp: opened.requests.cdp.filter((url) => !url.startsWith(origin))
})

/**
 * Makes docs/session-view.png: the HTML page of the demo session (the
 * conversation of `npm start`) in headless Chromium, with the old branch's
 * last entry selected so the transcript shows the `list_dir` call, its
 * arguments and the result that answers it, while the tree keeps the active
 * path marked.
 *
 *   npx tsx packages/view/test/screenshot-demo.ts [OUT.png]
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Html from "../src/Html.js"
import { launch } from "./support/browser.js"
import type { DomDocument } from "./support/dom.js"
import { demo } from "./support/sessions.js"

// The wait below runs in the browser (see support/dom.ts).
declare const document: DomDocument

const out = process.argv[2] ?? fileURLToPath(new URL("../../../docs/session-view.png", import.meta.url))
const session = await demo()
const html = await Effect.runPromise(Html.render(session.header, session.entries))
const dir = NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-shot-"))
const browser = await launch()
try {
  const file = Path.join(dir, "demo.html")
  NFS.writeFileSync(file, html)
  const page = await browser.newPage({ viewport: { width: 1200, height: 700 } })
  const requests: Array<string> = []
  page.on("request", (request) => requests.push(request.url()))
  await page.goto(pathToFileURL(file).href)
  await page.waitForFunction(() => document.documentElement.getAttribute("data-ready") === "1")
  await page.click("#r3")
  await page.mouse.move(0, 0)
  if (requests.length !== 1) throw new Error(`the page made requests besides itself: ${requests.join(", ")}`)
  NFS.mkdirSync(Path.dirname(out), { recursive: true })
  await page.screenshot({ path: out })
  console.log(`wrote ${out}`)
} finally {
  await browser.close()
  NFS.rmSync(dir, { recursive: true, force: true })
}

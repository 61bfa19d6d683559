/**
 * Makes docs/serve.png and docs/serve-list.png: the demo's sessions (left by
 * `npm start` in the system's temp directory) served, in headless Chromium: the
 * list, and the agent's session on the path to its newest entry with a search
 * hit's entry marked.
 *
 *   npm start && npx tsx --conditions=@session-tree/source packages/server/test/screenshot-serve.ts [DIR]
 */
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { launch } from "./support/browser.js"
import { serveFiles } from "./support/serve.js"

// The waits below run in the browser.
declare const document: { readonly documentElement: { getAttribute(name: string): string | null }; querySelector(s: string): { textContent: string | null } | null }

const dir = process.argv[2] ?? Path.join(OS.tmpdir(), "session-tree-demo-sessions")
if (!NFS.existsSync(Path.join(dir, "agent.jsonl"))) throw new Error(`no demo sessions in ${dir}: run npm start first`)
const docs = fileURLToPath(new URL("../../../docs/", import.meta.url))
const served = await serveFiles(dir, { port: 0 })
const browser = await launch()
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } })
  const requests: Array<string> = []
  page.on("request", (request) => requests.push(request.url()))
  await page.goto(served.url)
  await page.waitForFunction(() => document.querySelector("#live")?.textContent === "live")
  await page.screenshot({ path: Path.join(docs, "serve-list.png") })
  await page.fill("header.site input[name=q]", "README")
  await Promise.all([page.waitForURL(/search/), page.press("header.site input[name=q]", "Enter")])
  await Promise.all([page.waitForURL(/\/s\/agent\.jsonl/), page.click(".hit .hh a >> nth=0")])
  await page.waitForFunction(() => document.documentElement.getAttribute("data-ready") === "1")
  await page.waitForFunction(() => document.querySelector("#live")?.textContent === "live")
  await page.waitForTimeout(1_600)
  await page.mouse.move(0, 0)
  await page.screenshot({ path: Path.join(docs, "serve.png") })
  const beyond = requests.filter((url) => !url.startsWith(`http://127.0.0.1:${served.port}/`))
  if (beyond.length > 0) throw new Error(`the pages made requests beyond the server: ${beyond.join(", ")}`)
  console.log(`wrote ${Path.join(docs, "serve.png")} and serve-list.png`)
} finally {
  await browser.close()
  await served.stop()
}

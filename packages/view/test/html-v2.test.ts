/**
 * The HTML page of a version-2 session, as text: its policy (its own style
 * sheet and script by hash, images from `data:` URLs only), every kind of entry
 * as its own kind of node, every part, labels on their targets, the title; and
 * hostile caller text in every field turned into text only, checked against a
 * harmless twin. `browser.test.ts` opens the same pages in Chromium.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import * as Html from "../src/Html.js"
import { SCRIPT, SCRIPT_HASH, STYLE, STYLE_V2, STYLE_V2_HASH } from "../src/internal/page.js"
import { inlineImage, isWebUrl } from "../src/internal/v2.js"
import { big, demo, HOSTILE } from "./support/sessions.js"
import { agent, BLOB, build2, harmlessAgent, hostileAgent, PIXEL, type Session2, upgrade } from "./support/v2.js"

const render = (session: Session2, options?: Html.Options) => Effect.runPromise(Html.render(session.header, session.entries, options))

const sha256 = (text: string) => `sha256-${createHash("sha256").update(text, "utf8").digest("base64")}`

const between = (page: string, open: string, close: string): string => {
  const start = page.indexOf(open)
  expect(start, open).toBeGreaterThanOrEqual(0)
  return page.slice(start + open.length, page.indexOf(close, start + open.length))
}

/** The page with every text node emptied: the tags and their attributes, in order. */
const skeleton = (page: string) => page.replace(/>[^<]*</g, "><")

/** The card of the entry at commit index `i`. */
const card = (page: string, i: number): string => {
  const start = page.indexOf(`id="m${i}">`)
  expect(start, `card m${i}`).toBeGreaterThan(0)
  return page.slice(page.lastIndexOf("<article", start), page.indexOf("</article>", start))
}

/** The tree row of the entry at commit index `i`. */
const row = (page: string, i: number): string => {
  const start = page.indexOf(`id="r${i}"`)
  expect(start, `row r${i}`).toBeGreaterThan(0)
  return page.slice(page.lastIndexOf("<button", start), page.indexOf("</button>", start))
}

describe("Html.render on version 2", () => {
  it("allows by hash its own style sheet and script, and images from data: URLs only", async () => {
    const page = await render(agent())
    const style = between(page, "<style>", "</style>")
    expect(style).toBe(STYLE_V2)
    expect(style.startsWith(STYLE)).toBe(true)
    expect(between(page, "<script>", "</script>")).toBe(SCRIPT)
    // If this fails, STYLE_V2 changed without its hash: put the value printed here into page.ts.
    expect({ STYLE_V2_HASH: sha256(style), SCRIPT_HASH: sha256(SCRIPT) }).toEqual({ STYLE_V2_HASH, SCRIPT_HASH })
    const policy = between(page, "<meta http-equiv=\"Content-Security-Policy\" content=\"", "\">")
    const directives = new Map(policy.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]))
    expect(directives.get("default-src")).toEqual(["'none'"])
    expect(directives.get("style-src")).toEqual([`'${STYLE_V2_HASH}'`])
    expect(directives.get("script-src")).toEqual([`'${SCRIPT_HASH}'`])
    expect(directives.get("img-src")).toEqual(["data:"])
    for (const name of ["connect-src", "font-src", "media-src", "object-src", "frame-src", "base-uri", "form-action"]) {
      expect(directives.get(name), name).toEqual(["'none'"])
    }
    expect(STYLE_V2).not.toMatch(/@import|url\(|@font-face/i)
  })

  it("names no network resource: images only from data: URLs of base64 PNG, links only to http(s) and never loaded", async () => {
    for (const session of [agent(), hostileAgent()]) {
      const page = skeleton(await render(session))
      const attributes = [...page.matchAll(/\s(src|href|srcset|action|formaction|poster|data|background|ping)="([^"]*)"/gi)].map((m) => `${m[1]} ${m[2]}`)
      expect(attributes).toEqual([
        `src data:image/png;base64,${PIXEL}`,
        "href https://example.com/a?b=1&amp;c=(2)",
        `src data:image/png;base64,${PIXEL}`
      ])
      expect(page.match(/<img [^>]*>/g)).toEqual([
        `<img class="img" alt="" src="data:image/png;base64,${PIXEL}">`,
        `<img class="img" alt="" src="data:image/png;base64,${PIXEL}">`
      ])
      expect(page.match(/<a [^>]*>/g)).toEqual(["<a class=\"url\" href=\"https://example.com/a?b=1&amp;c=(2)\" rel=\"noopener noreferrer nofollow\" target=\"_blank\">"])
    }
  })

  it("shows an image or a link only for what is safe: base64 raster images, http(s) URLs of URL characters", () => {
    const file = (mediaType: string, data: { base64: string } | { url: string }) => ({ type: "file" as const, mediaType, data })
    expect(inlineImage(file("image/png", { base64: PIXEL }))).toBe(`data:image/png;base64,${PIXEL}`)
    expect(inlineImage(file("image/jpeg", { base64: "AAAA" }))).toBe("data:image/jpeg;base64,AAAA")
    for (const mediaType of ["image/svg+xml", "image/png;charset=x", "image/png\" onerror=\"x", "IMAGE/PNG ", "text/html", "image/png)"]) {
      expect(inlineImage(file(mediaType, { base64: "AAAA" })), mediaType).toBeUndefined()
    }
    expect(inlineImage(file("image/png", { url: "https://example.com/a.png" }))).toBeUndefined()
    expect(inlineImage(file("image/png", { base64: "AA\"A" }))).toBeUndefined()
    for (const url of ["https://example.com/", "http://a.b/c?d=e&f=(g)#h", "HTTPS://X.Y/%20"]) expect(isWebUrl(url), url).toBe(true)
    for (const url of ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "//example.com", "https://a.b/\"onmouseover=x", "https://a.b/ c", "https://a.b/<x>", "https://a.b/\\x", "https://a.b/\nx", " https://a.b/", "ftp://a.b/"]) {
      expect(isWebUrl(url), url).toBe(false)
    }
  })

  it("titles the page and its heading by the session's title, and names its origin", async () => {
    const page = await render(agent())
    expect(page).toContain("<title>Picture questions text 41</title>")
    expect(page).toContain("<h1>Picture questions text 41</h1>")
    // A title option still wins; without a title entry the first user message's text is the title.
    expect(await render(agent(), { title: "Chosen" })).toContain("<title>Chosen</title>")
    const untitled = build2("u", (s) => void s.add({ kind: "message", message: { role: "user", id: "m", content: [{ type: "text", text: "Hello there" }] } }), {
      forkedFrom: { session: "src-session", entry: "e7" }
    })
    const plain = await render(untitled)
    expect(plain).toContain("<title>Hello there</title>")
    expect(plain).toContain("<dt>Forked from</dt><dd><span class=\"id\">src-session</span> at <span class=\"id\">e7</span></dd>")
  })

  it("shows every kind of entry as its own kind of node, in the tree and in the transcript", async () => {
    const page = await render(agent())
    const kinds = [...page.matchAll(/<button type="button" class="row ([^ ]+(?: e)?) l\d+[^"]*" id="r(\d+)"[^>]*><span class="k">([^<]+)<\/span>/g)]
      .map((m) => [Number(m[2]), m[1], m[3]])
      .sort((a, b) => (a[0] as number) - (b[0] as number))
    expect(kinds).toEqual([
      [0, "s", "system"],
      [1, "u", "user"],
      [2, "a", "assistant"],
      [3, "t e", "tool"],
      [4, "md", "model"],
      [5, "cp", "compaction"],
      [6, "lb", "label"],
      [7, "ti", "title"],
      [8, "cu", "custom"],
      [9, "a", "assistant"],
      [10, "u", "user"]
    ])
    expect(page.match(/<article class="msg /g)).toHaveLength(11)
    expect(card(page, 0)).toContain("<div class=\"tx\">You are careful. text 1</div>")
    expect(card(page, 4)).toContain("<span>provider</span><span class=\"tn\">openai text 36</span><span>model</span><span class=\"tn\">gpt-y text 37</span><span>thinking</span><span class=\"tn\">high text 38</span>")
    expect(card(page, 5)).toContain("keeps the entries from <button type=\"button\" class=\"go\" data-go=\"1\">text 51#e2</button> on · 4,321 tokens before")
    expect(card(page, 5)).toContain("<div class=\"tx\">The user asked about a picture. text 39</div>")
    expect(card(page, 6)).toContain("<button type=\"button\" class=\"go\" data-go=\"1\">text 51#e2</button> labelled <span class=\"lbl\">⚑ important text 40</span>")
    expect(card(page, 7)).toContain("titles the session</div><div class=\"tx\">Picture questions text 41</div>")
    expect(card(page, 8)).toContain("<span class=\"tn\">my-extension text 42</span>")
    expect(card(page, 8)).toContain("<div class=\"args\">{\n  &quot;text 43&quot;: [\n    &quot;text 44&quot;,\n    1,\n    null\n  ]\n}</div>")
    expect(row(page, 5)).toContain("<span class=\"pv\">The user asked about a picture. text 39</span>")
    expect(row(page, 8)).toContain("<span class=\"pv\">my-extension text 42 {&quot;text 43&quot;:[&quot;text 44&quot;,1,null]}</span>")
  })

  it("shows each label on the entry it labels, row and card; the newest label wins and null removes it", async () => {
    const page = await render(agent())
    expect(row(page, 1)).toContain("<span class=\"chip lbl\">⚑ important text 40</span>")
    expect(card(page, 1)).toContain("<span class=\"lbl\">⚑ important text 40</span></div>")
    expect(page.match(/⚑ important text 40/g)).toHaveLength(3)
    const relabelled = build2("l", (s) => {
      const u = s.add({ kind: "message", message: { role: "user", id: "u", content: [{ type: "text", text: "hi" }] } })
      s.add({ kind: "label", targetId: u, label: "old" })
      s.add({ kind: "label", targetId: u, label: "new" })
      s.add({ kind: "label", targetId: "entry-002", label: "gone" })
      s.add({ kind: "label", targetId: "entry-002", label: null })
    })
    const out = await render(relabelled)
    expect(row(out, 0)).toContain("⚑ new")
    expect(row(out, 0)).not.toContain("⚑ old")
    expect(row(out, 1)).not.toContain("chip lbl")
    expect(card(out, 4)).toContain("removes the label of <button type=\"button\" class=\"go\" data-go=\"1\">entry-002</button>")
  })

  it("shows every part: reasoning collapsed, files, calls, a provider-executed call with its result, meta and options", async () => {
    const page = await render(agent())
    const user = card(page, 1)
    expect(user).toContain(`<span class="tn">pixel text 6.png</span><span class="cid">image/png</span><span>70 bytes</span></div><div class="fd"><img class="img" alt="" src="data:image/png;base64,${PIXEL}"></div>`)
    expect(user).toContain("<span class=\"tn\">page text 8</span><span class=\"cid\">text/htmltext 7</span></div><div class=\"fd\"><a class=\"url\" href=\"https://example.com/a?b=1&amp;c=(2)\"")
    expect(user).toContain(`<span class="cid">application/pdftext 9</span><span>123,456 bytes</span></div><div class="fd"><span>blob</span> <span class="cid">${BLOB}</span></div>`)
    expect(user).toContain("<span class=\"cid\">image/svg+xmltext 11</span><span>11 bytes</span></div><div class=\"fd\"><span>(inline data, not shown)</span>")
    expect(user).toContain("<span class=\"url\">javascript:alert(1)text 13</span> <span>(not a web link)</span>")
    const assistant = card(page, 2)
    expect(assistant).toContain("<details class=\"rs\"><summary>reasoning · 35 characters</summary><div class=\"tx\">Thinking about the picture. text 15</div></details>")
    expect(assistant).not.toMatch(/<details[^>]* open/)
    expect(assistant).toContain("<div class=\"opt\">reasoning options: <span class=\"tn\">signature</span></div>")
    expect(assistant).not.toContain("sig text 16")
    expect(assistant).toContain("<p class=\"empty\">reasoning, redacted</p><div class=\"opt\">reasoning options: <span class=\"tn\">redacted</span></div>")
    expect(assistant).toContain("<div class=\"call\" id=\"c2-3\"><div class=\"ch\"><span>⚙ call</span><span class=\"tn\">zoom text 20</span><span class=\"cid\">text 19#call-1</span><span>answered by <button type=\"button\" class=\"go\" data-go=\"3\">text 53#e4</button></span>")
    expect(assistant).toContain("<span class=\"cid\">text 23#search</span><span>run by the provider</span><button type=\"button\" class=\"go\" data-to=\"p2-5\">its result</button>")
    expect(assistant).toContain("<div class=\"call\" id=\"p2-5\"><div class=\"ch\"><span>↩ result</span><span class=\"tn\">web_search text 24</span><button type=\"button\" class=\"go\" data-to=\"c2-4\"><span class=\"cid\">text 23#search</span></button><span class=\"status\">ok</span></div><div class=\"args\">{\n  &quot;hits&quot;: [")
    expect(assistant).toContain(
      "<div class=\"meta\"><span>model</span><span class=\"tn\">claude-x text 28</span><span>provider</span><span class=\"tn\">anthropic text 27</span>" +
        "<span>response</span><span class=\"cid\">resp text 29</span><span>tokens</span><span>1,200 in · 345 out · 67 reasoning · 800 cached · 9 cache write</span>" +
        "<span>stop</span><span class=\"tn\">tool_use text 30</span><span class=\"status err\">error</span><span class=\"tn\">overloaded text 31</span></div>"
    )
    expect(card(page, 0)).toContain("<div class=\"opt\">message options: <span class=\"tn\">text 2</span></div>")
    const tool = card(page, 3)
    expect(tool).toContain("answers <button type=\"button\" class=\"go\" data-to=\"c2-3\"><span class=\"tn\">zoom text 20</span> call")
    expect(tool).toContain("<div class=\"tx\">zoomed text 33</div>")
    expect(tool).toContain(`<img class="img" alt="" src="data:image/png;base64,${PIXEL}">`)
    expect(tool).toContain("<div class=\"call\"><div class=\"ch\"><span>result</span></div><div class=\"args\">{\n  &quot;pixels&quot;: 16,")
  })

  it("turns hostile caller text in every field into text only: the same tags and attributes as its harmless twin", async () => {
    const page = await render(hostileAgent())
    const harmless = await render(harmlessAgent())
    expect(skeleton(page)).toBe(skeleton(harmless))
    expect(page.split("<").length).toBe(harmless.split("<").length)
    expect(page).not.toContain("\u0000")
    // The hostile values are there, as text.
    for (const k of [6, 7, 8, 40, 41, 42]) expect(page).toContain(Html.escapeHtml(HOSTILE[k % HOSTILE.length]!))
    expect(page).toContain(`<title>Picture questions ${Html.escapeHtml(HOSTILE[41 % HOSTILE.length]!)}</title>`)
    expect(page).toContain(`<dt>Forked from</dt><dd><span class="id">source ${Html.escapeHtml(HOSTILE[3]!)}</span> at <span class="id">entry ${Html.escapeHtml(HOSTILE[12]!)}</span>`)
  })

  it("shows an upgraded version-1 session as version 1 shows it, in the same tree, with the same links", async () => {
    const v1 = await demo()
    const v2 = upgrade(v1)
    const [one, two] = [await Effect.runPromise(Html.render(v1.header, v1.entries)), await render(v2)]
    const rows = (page: string) => [...page.matchAll(/<button type="button" class="(row [^"]*)" id="(r\d+)" data-p="(-?\d+)"/g)].map((m) => m.slice(1).join(" "))
    expect(rows(two)).toEqual(rows(one))
    const go = (page: string) => [...page.matchAll(/data-(?:go|to)="([^"]*)"/g)].map((m) => m[1])
    // The call is the first part of the assistant's content after its text: position 1, where version 1 counts calls from 0.
    expect(go(two)).toEqual(go(one).map((to) => to!.replace(/^c1-0$/, "c1-1")))
    expect(two).toContain("<div class=\"tx\">README.md\nsrc/</div>")
  })

  it("renders a 4,096-entry version-2 session quickly and folds it, naming the kinds of each folded run", async () => {
    const session = upgrade(await big())
    const started = performance.now()
    const page = await render(session)
    const ms = performance.now() - started
    console.log(`Html.render of ${session.entries.length} version-2 entries: ${ms.toFixed(0)} ms, ${(page.length / 1e6).toFixed(2)} MB`)
    // The bound catches navigation that grows with the square of the session (a list the core
    // keeps no index of), not a busy machine.
    expect(ms).toBeLessThan(5_000)
    expect(page.match(/<button type="button" class="row /g)).toHaveLength(4_096)
    const runs = [...page.matchAll(/<details class="run[^"]*"><summary>[^<]* · ([^<]*)<\/summary>/g)].map((m) => m[1]!)
    expect(runs.length).toBeGreaterThan(10)
    for (const run of runs) expect(run).toMatch(/^\d+ user(, \d+ assistant)?(, \d+ tool)?$|^\d+ assistant(, \d+ tool)?$|^\d+ tool$/)
  })
})

/**
 * The HTML page as text, without a browser: its policy allows exactly the
 * style sheet and script it holds (hashes recomputed here from the page's own
 * bytes), it names no resource, and no content changes its markup: a hostile
 * session and its harmless twin give pages with the very same tags and
 * attributes. `browser.test.ts` checks the same page in Chromium.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import * as Html from "../src/Html.js"
import { SCRIPT, SCRIPT_HASH, STYLE, STYLE_HASH } from "../src/internal/page.js"
import { big, build, demo, hostile, type Session, twin } from "./support/sessions.js"

const render = (session: Session, options?: Html.Options) => Effect.runPromise(Html.render(session.header, session.entries, options))

const sha256 = (text: string) => `sha256-${createHash("sha256").update(text, "utf8").digest("base64")}`

/** The text between the one `<tag>` and its `</tag>`; fails unless the page has exactly one. */
const only = (page: string, tag: string): string => {
  expect(page.split(`<${tag}`).length - 1, `one <${tag}> in the page`).toBe(1)
  const start = page.indexOf(`<${tag}>`) + tag.length + 2
  return page.slice(start, page.indexOf(`</${tag}>`, start))
}

const policyOf = (page: string): string => {
  const match = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(page)
  expect(match).not.toBeNull()
  return match![1]!
}

/** The page with every text node emptied: the tags and their attributes, in order. */
const skeleton = (page: string) => page.replace(/>[^<]*</g, "><")

describe("Html.render", () => {
  it("allows by hash exactly the style sheet and the script the page holds", async () => {
    const page = await render(await demo())
    const style = only(page, "style")
    const script = only(page, "script")
    expect(style).toBe(STYLE)
    expect(script).toBe(SCRIPT)
    // If this fails, the constant changed without its hash: put the value printed here into page.ts.
    expect({ STYLE_HASH: sha256(style), SCRIPT_HASH: sha256(script) }).toEqual({ STYLE_HASH, SCRIPT_HASH })
    const directives = new Map(policyOf(page).split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values]))
    expect(directives.get("default-src")).toEqual(["'none'"])
    expect(directives.get("style-src")).toEqual([`'${sha256(style)}'`])
    expect(directives.get("script-src")).toEqual([`'${sha256(script)}'`])
    expect(directives.get("base-uri")).toEqual(["'none'"])
    expect(directives.get("form-action")).toEqual(["'none'"])
    // The policy comes before anything it governs.
    expect(page.indexOf("Content-Security-Policy")).toBeLessThan(page.indexOf("<style>"))
    expect(page.indexOf("<meta charset=\"utf-8\">")).toBeLessThan(page.indexOf("Content-Security-Policy"))
  })

  it("names no resource: no URL, no src, href or srcset, no @import or url() in the style", async () => {
    for (const session of [await demo(), await hostile()]) {
      const page = skeleton(await render(session))
      expect(page.match(/\s(src|href|srcset|action|formaction|poster|data|background|ping)=/gi)).toBeNull()
      expect(page.match(/https?:|\/\/[a-z]/gi)).toBeNull()
    }
    expect(STYLE).not.toMatch(/@import|url\(|@font-face/i)
  })

  it("turns hostile content into text only: the same tags and attributes as its harmless twin", async () => {
    const session = await hostile()
    const page = await render(session)
    const harmless = await render(twin(session))
    expect(skeleton(page)).toBe(skeleton(harmless))
    // Every text node of the page is escaped: the only `<` are the renderer's own tags.
    expect(page.split("<").length).toBe(harmless.split("<").length)
    expect(page).toContain("&lt;script&gt;window.__pwned = 1&lt;/script&gt;")
    expect(page).not.toContain("\u0000")
  })

  it("escapes the five markup characters and shows control characters", () => {
    expect(Html.escapeHtml("<a href=\"x\" title='y'>&amp;</a>")).toBe("&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;")
    expect(Html.escapeHtml("a\u0000b\u0007c\u007f\td\ne\rf")).toBe("a\u2400b\u2407c\u2421\td\ne\rf")
    expect(Html.escapeHtml("\u2028\u2029 {{x}} `y`")).toBe("\u2028\u2029 {{x}} `y`")
  })

  it("marks the active path, lays out every entry once, and fails on an unknown leaf", async () => {
    const session = await demo()
    const page = await render(session)
    expect(page.match(/<button type="button" class="row /g)).toHaveLength(6)
    expect(page.match(/<article class="msg /g)).toHaveLength(6)
    expect([...page.matchAll(/class="row [^"]*\bact\b[^"]*" id="r(\d+)"/g)].map((m) => Number(m[1]))).toEqual([0, 4, 5])
    const chosen = await render(session, { leaf: "entry-003", title: "A <chosen> title" })
    expect([...chosen.matchAll(/class="row [^"]*\bact\b[^"]*" id="r(\d+)"/g)].map((m) => Number(m[1]))).toEqual([0, 1, 2])
    expect(chosen).toContain("<title>A &lt;chosen&gt; title</title>")
    expect(chosen).toContain("(chosen)")
    const error = await Effect.runPromise(Effect.flip(Html.render(session.header, session.entries, { leaf: "nope" })))
    expect(error.code).toBe("SESSION_UNKNOWN_ENTRY")
    const none = await render(session, { leaf: null })
    expect(none).not.toMatch(/class="row [^"]*\bact\b/)
    expect(none).toContain("data-leaf=\"-1\"")
    const empty = await render(await build(() => Effect.void, { id: "empty" }))
    expect(empty).toContain("<h2>0 entries in 0 branches</h2>")
    expect(empty).toContain("<title>Session empty</title>")
    // The default title is the session's title as `list` shows it: the first user message, its first 80 characters.
    expect(page).toContain("<title>What is in /project?</title>")
    const long = await render(await build((tree) => tree.append({ role: "user", id: "m", content: `${"é".repeat(79)}\u{1F600}tail` }), { id: "long" }))
    expect(long).toContain(`<title>${"é".repeat(79)}\u{1F600}</title>`)
    const blank = await render(await build((tree) => tree.append({ role: "user", id: "m", content: " \n " }), { id: "blank" }))
    expect(blank).toContain("<title>Session blank</title>")
    expect(empty).not.toContain("<button type=\"button\" class=\"row")
  })

  it("renders the largest session (4,096 entries) quickly and folds it", async () => {
    const session = await big()
    expect(session.entries).toHaveLength(4_096)
    const started = performance.now()
    const page = await render(session)
    const ms = performance.now() - started
    console.log(`Html.render of ${session.entries.length} entries: ${ms.toFixed(0)} ms, ${(page.length / 1e6).toFixed(2)} MB`)
    expect(ms).toBeLessThan(2_000)
    expect(page.match(/<button type="button" class="row /g)).toHaveLength(4_096)
    expect(page.match(/<details class="run/g)!.length).toBeGreaterThan(10)
    expect(page.match(/<details class="long"/g)!.length).toBeGreaterThan(10)
  })
})

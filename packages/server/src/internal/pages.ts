/**
 * The pages, laid out on the server with every value from a session or a
 * request escaped as text: the shell every page shares, the list of sessions,
 * a session, the search, usage, and the pages that say what went wrong.
 */
import type { Hit, SearchResult } from "@session-tree/core/Search"
import type { Listed, Unreadable } from "@session-tree/core/Sessions"
import * as Sessions from "@session-tree/core/Sessions"
import type { StatsResult, StatsRow, Totals } from "@session-tree/core/Stats"
import { escapeHtml as e } from "@session-tree/view/Html"
import * as HtmlParts from "@session-tree/view/HtmlParts"
import { SCRIPT, STYLE } from "./client.js"
import type { Link } from "./links.js"

/** Whole numbers as people read them. */
const n = (value: number): string => value.toLocaleString("en-US")

const href = (path: string, params: Readonly<Record<string, string | number | undefined>>): string => {
  const query = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") query.set(k, String(v))
  const q = query.toString()
  return e(q === "" ? path : `${path}?${q}`)
}

export const sessionHref = (key: string, params: Readonly<Record<string, string | number | undefined>> = {}) =>
  href(`/s/${encodeURIComponent(key)}`, params)

/** The document every page is: the site's bar, the page's own body, the one style and script. */
export const shell = (options: { readonly title: string; readonly page: string; readonly query?: string | undefined; readonly body: string }): string =>
  `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(options.title)}</title>
<style>${STYLE}</style>
</head>
<body data-page="${e(options.page)}">
<header class="site"><a href="/">Sessions</a><a href="/stats">Usage</a>` +
  `<form action="/search" method="get" role="search"><input type="search" name="q" value="${e(options.query ?? "")}" placeholder="Search every session" aria-label="Search every session"><button type="submit">Search</button></form>` +
  `${options.page === "list" || options.page === "session" ? `<span id="live" class="live">not live</span>` : ""}</header>
${options.body}
<script>${SCRIPT}</script>
</body>
</html>
`

/** A page that says what went wrong, with nothing of the request but what is escaped. */
export const problemPage = (title: string, detail: string): string =>
  shell({ title, page: "problem", body: `<main class="doc"><h1>${e(title)}</h1><p>${e(detail)}</p><p><a href="/">All sessions</a></p></main>` })

// ---- The list ---------------------------------------------------------------------------------

export const SORTS = ["changed", "oldest", "title", "entries", "tokens"] as const
export type Sort = (typeof SORTS)[number]

const SORT_NAMES: Record<Sort, string> = {
  changed: "last change, newest first",
  oldest: "last change, oldest first",
  title: "title",
  entries: "entries, most first",
  tokens: "tokens, most first"
}

export interface ListRow {
  readonly key: string
  readonly listed: Listed
  readonly version: string
  /** When it last changed, as the catalog says (epoch milliseconds). */
  readonly changed: number | undefined
  readonly usage: StatsRow | undefined
}

const time = (ms: number | undefined): string => (ms === undefined ? "" : `<span class="ts">${e(new Date(ms).toISOString().replace("T", " ").slice(0, 19))}</span>`)

const money = (totals: Pick<Totals, "cost" | "costed">): string => (totals.costed === 0 ? "" : `$${totals.cost.toFixed(totals.cost < 1 ? 4 : 2)}`)

const listRow = (row: ListRow): string => {
  const listed = row.listed
  const attrs = `data-k="${e(row.key)}" data-v="${e(row.version)}"`
  const location = `<td class="loc">${e(row.key)}</td>`
  if (Sessions.isUnreadable(listed)) {
    return `<tr class="bad" ${attrs}><td class="t"><a href="${sessionHref(row.key)}"><span class="err">${e(listed.error.code)}</span></a> ${e(listed.error.message)}</td>` +
      `<td>${time(row.changed)}</td><td class="n"></td><td class="n"></td><td class="m"></td><td class="n"></td><td class="n"></td><td class="n"></td>${location}</tr>`
  }
  const usage = row.usage
  return `<tr ${attrs}><td class="t"><a href="${sessionHref(row.key)}">${listed.title.trim() === "" ? `<em>Session ${e(listed.id)}</em>` : e(listed.title)}</a></td>` +
    `<td>${time(row.changed)}</td><td class="n">${n(listed.entries)}</td><td class="n">${usage?.branches === undefined ? "" : n(usage.branches)}</td>` +
    `<td class="m">${e((usage?.models ?? []).join(", "))}</td>` +
    `<td class="n">${usage === undefined || usage.messages === 0 ? "" : n(usage.inputTokens)}</td><td class="n">${usage === undefined || usage.messages === 0 ? "" : n(usage.outputTokens)}</td>` +
    `<td class="n">${usage === undefined ? "" : money(usage)}</td>${location}</tr>`
}

export interface ListPage {
  readonly rows: ReadonlyArray<ListRow>
  readonly total: number
  readonly offset: number
  readonly pageSize: number
  readonly page: number
  readonly sort: Sort
  readonly filter: string
  readonly unreadable: number
}

const totalsLine = (list: ListPage): string => {
  const first = list.rows.length === 0 ? 0 : list.offset + 1
  return `<p class="totals">${list.total === 0 ? "No sessions" : `${n(first)}–${n(list.offset + list.rows.length)} of ${n(list.total)} sessions`}` +
    `${list.filter === "" ? "" : ` matching “${e(list.filter)}”`} · ${SORT_NAMES[list.sort]}` +
    `${list.unreadable === 0 ? "" : ` · <span class="err">${n(list.unreadable)} on this page do not load</span>`}</p>`
}

/** The rows alone, for a live page to lay in place of its own. */
export const listFragment = (list: ListPage): string =>
  `<table><tbody>${list.rows.map(listRow).join("\n")}</tbody></table>${totalsLine(list)}`

export const listPage = (list: ListPage, where: string): string => {
  const pages = Math.max(1, Math.ceil(list.total / list.pageSize))
  const pager = `<div class="pager">` +
    (list.page > 0 ? `<a href="${href("/", { page: list.page - 1, sort: list.sort === "changed" ? undefined : list.sort, q: list.filter })}" rel="prev">← newer page</a>` : "") +
    `<span>page ${n(list.page + 1)} of ${n(pages)}</span>` +
    (list.page + 1 < pages ? `<a href="${href("/", { page: list.page + 1, sort: list.sort === "changed" ? undefined : list.sort, q: list.filter })}" rel="next">next page →</a>` : "") +
    `</div>`
  const options = SORTS.map((s) => `<option value="${s}"${s === list.sort ? " selected" : ""}>${e(SORT_NAMES[s])}</option>`).join("")
  const body = `<main class="doc">
<h1>Sessions</h1>
<div class="bar"><span class="loc">${e(where)}</span><form action="/" method="get"><input type="search" name="q" value="${e(list.filter)}" placeholder="Filter by title, ID or name" aria-label="Filter sessions">` +
    `<select name="sort" aria-label="Sort">${options}</select><button type="submit" class="btn">Apply</button></form></div>
${totalsLine(list)}
<table class="sessions"><thead><tr><th>Title</th><th>Last change (UTC)</th><th class="n">Entries</th><th class="n">Branches</th><th>Models</th><th class="n">Tokens in</th><th class="n">Tokens out</th><th class="n">Cost</th><th>Session</th></tr></thead>
<tbody id="rows">${list.rows.map(listRow).join("\n")}</tbody></table>
${list.rows.length === 0 ? `<p class="empty-list">${list.filter === "" ? "No session is here yet." : "No session matches."}</p>` : ""}
${pager}
</main>`
  return shell({ title: "Sessions", page: "list", body })
}

// ---- A session ----------------------------------------------------------------------------------


export interface SessionView {
  readonly key: string
  readonly version: string
  readonly layout: HtmlParts.Layout
  /**
   * The layout's tree, facts and tree heading, made once per layout; undefined when the page goes
   * out before them (a large session opened cold) and asks for them at once (`/since`).
   */
  readonly rest: { readonly rows: ReadonlyArray<string>; readonly facts: string; readonly treeHeading: string } | undefined
  readonly links: ReadonlyArray<Link>
  readonly path: ReadonlyArray<number>
  readonly leaf: number
  readonly focus: number
  readonly from: number
  readonly to: number
  readonly cards: string
}

/** A path's indices as ranges, `0-99,120,130-131`: a linear session's path of 100,000 is one range. */
export const rangesOf = (path: ReadonlyArray<number>): string => {
  const out: Array<string> = []
  for (let i = 0; i < path.length;) {
    let j = i
    while (j + 1 < path.length && path[j + 1] === path[j]! + 1) j++
    out.push(j === i ? String(path[i]) : `${path[i]}-${path[j]}`)
    i = j + 1
  }
  return out.join(",")
}

/**
 * What turns the rows `before` into `after`: `remove` rows from `at` replaced by `rows` (those
 * between the rows both start with and those both end with).
 */
export const rowsDelta = (
  before: ReadonlyArray<string>,
  after: ReadonlyArray<string>
): { readonly at: number; readonly remove: number; readonly rows: ReadonlyArray<string> } => {
  let at = 0
  while (at < before.length && at < after.length && before[at] === after[at]) at++
  let end = 0
  while (end < before.length - at && end < after.length - at && before[before.length - 1 - end] === after[after.length - 1 - end]) end++
  return { at, remove: before.length - at - end, rows: after.slice(at, after.length - end) }
}

const linkHtml = (link: Link): string =>
  link.session !== undefined
    ? `<span>${e(link.label)} <a href="${href(`/id/${encodeURIComponent(link.session)}`, { entry: link.entry })}">${e(link.session)}</a>${link.entry === undefined ? "" : ` at <span class="id">${e(link.entry)}</span>`}</span>`
    : `<span>${e(link.label)} <span class="id">${e(link.text ?? "")}</span></span>`

export const sessionPage = (view: SessionView): string => {
  const { layout } = view
  const leafId = view.leaf >= 0 ? layout.entries[view.leaf]!.id : ""
  const body = `<header class="top">
<h1>${e(layout.heading)}</h1>
<div id="facts">${view.rest?.facts ?? ""}</div>
${view.links.length === 0 ? "" : `<div class="links">${view.links.map(linkHtml).join("")}</div>`}
<div class="legend"><span>● selected path · ○ other branches</span><button type="button" class="btn" id="toleaf">Show the newest entry</button></div>
</header>
<main id="session" data-key="${e(view.key)}" data-version="${e(view.version)}" data-n="${layout.entries.length}" data-leaf="${view.leaf}" data-leaf-id="${e(leafId)}"` +
    ` data-focus="${view.focus}" data-path="${rangesOf(view.path)}" data-from="${view.from}" data-to="${view.to}"${view.rest === undefined ? ` data-rest="later"` : ""}>
<nav class="pane" id="tree" aria-label="Session tree"><h2 id="th">${view.rest === undefined ? "Drawing the tree\u2026" : e(view.rest.treeHeading)}</h2>
${view.rest?.rows.join("\n") ?? ""}
</nav>
<section class="pane" id="panel" aria-live="polite">
<h2><span id="pk">Path to</span> <span class="id" id="pid">${e(leafId)}</span> · <span id="pn"></span></h2>
<div id="notice" class="notice" hidden></div>
<div id="earlier" class="more" hidden><button type="button" class="btn"></button></div>
<div id="cards">${view.cards}</div>
<div id="later" class="more" hidden><button type="button" class="btn"></button></div>
</section>
</main>`
  return shell({ title: layout.heading, page: "session", body })
}

// ---- Search -------------------------------------------------------------------------------------

export interface SearchForm {
  readonly q: string
  readonly role: string
  readonly model: string
  readonly since: string
  readonly until: string
  readonly session: string
  readonly page: number
}

const ROLES = ["", "user", "assistant", "tool", "system", "compaction", "title"]

const ROLE_CLASS: Readonly<Record<string, string>> = { user: "u", assistant: "a", tool: "t", system: "s", compaction: "cp", title: "ti" }

/** An excerpt with its marks as `<mark>`, everything else escaped. */
const snippetHtml = (snippet: Hit["snippets"][number]): string => {
  let out = snippet.before ? "…" : ""
  let at = 0
  for (const [start, end] of snippet.marks) {
    if (start < at) continue
    out += e(snippet.text.slice(at, start)) + `<mark>${e(snippet.text.slice(start, end))}</mark>`
    at = end
  }
  return `${out}${e(snippet.text.slice(at))}${snippet.after ? "…" : ""}`
}

export interface ShownHit {
  readonly hit: Hit
  readonly key: string
  readonly title: string
}

const hitHtml = ({ hit, key, title }: ShownHit): string =>
  `<li class="hit ${ROLE_CLASS[hit.role] ?? ""}"><div class="hh"><a href="${sessionHref(key, { entry: hit.entry })}">${title.trim() === "" ? `Session ${e(hit.session)}` : e(title)}</a>` +
  `<span class="k">${e(hit.role)}</span><span class="ts">${e(hit.timestamp)}</span>${hit.model === undefined ? "" : `<span class="tn">${e(hit.model)}</span>`}` +
  `<span class="loc">${e(key)} · entry ${e(hit.entry)}</span></div>` +
  hit.snippets.map((s) => `<div class="sn">${snippetHtml(s)}</div>`).join("") + `</li>`

const unreadableHtml = (list: ReadonlyArray<Unreadable>, keyOf: (location: string) => string): string =>
  list.length === 0 ? "" : `<h2>Could not be searched</h2><ul>${
    list.map((u) => `<li><span class="loc">${e(keyOf(u.location))}</span> <span class="err">${e(u.error.code)}</span> ${e(u.error.message)}</li>`).join("")
  }</ul>`

export const PAGE_HITS = 50

export const searchPage = (
  form: SearchForm,
  outcome: { readonly result: SearchResult; readonly hits: ReadonlyArray<ShownHit> } | { readonly problem: string } | undefined,
  keyOf: (location: string) => string
): string => {
  const roles = ROLES.map((r) => `<option value="${r}"${r === form.role ? " selected" : ""}>${r === "" ? "any role" : r}</option>`).join("")
  const fields = `<form class="bar" action="/search" method="get"><input type="search" name="q" value="${e(form.q)}" placeholder="words or &quot;a phrase&quot;" aria-label="Words">` +
    `<select name="role" aria-label="Role">${roles}</select>` +
    `<input name="model" value="${e(form.model)}" placeholder="model" aria-label="Model">` +
    `<input type="date" name="since" value="${e(form.since)}" aria-label="Since"><input type="date" name="until" value="${e(form.until)}" aria-label="Until">` +
    `<input name="session" value="${e(form.session)}" placeholder="session" aria-label="Session">` +
    `<button type="submit" class="btn">Search</button></form>`
  let results = ""
  if (outcome !== undefined && "problem" in outcome) results = `<p class="err">${e(outcome.problem)}</p>`
  else if (outcome !== undefined) {
    const { hits, result } = outcome
    const first = form.page * PAGE_HITS
    const params = { q: form.q, role: form.role, model: form.model, since: form.since, until: form.until, session: form.session }
    results = `<p class="totals">${result.total === 0 ? "No entry matches" : `${n(first + 1)}–${n(first + hits.length)} of ${n(result.total)} matching entries`}` +
      ` · ${n(result.searched)} sessions looked at</p>` +
      `<ol class="hits">${hits.map(hitHtml).join("\n")}</ol>` +
      `<div class="pager">${form.page > 0 ? `<a href="${href("/search", { ...params, page: form.page - 1 })}" rel="prev">← previous</a>` : ""}` +
      `${first + hits.length < result.total ? `<a href="${href("/search", { ...params, page: form.page + 1 })}" rel="next">next →</a>` : ""}</div>` +
      unreadableHtml(result.unreadable, keyOf)
  }
  return shell({ title: form.q === "" ? "Search" : `Search: ${form.q}`, page: "search", query: form.q, body: `<main class="doc"><h1>Search</h1>${fields}${results}</main>` })
}

// ---- Usage --------------------------------------------------------------------------------------

export const statsPage = (by: string, since: string, until: string, result: StatsResult, keyOf: (location: string) => string): string => {
  const choices = ["day", "model", "session"].map((b) => `<option value="${b}"${b === by ? " selected" : ""}>by ${b}</option>`).join("")
  const cells = (t: Totals) =>
    `<td class="n">${n(t.messages)}</td><td class="n">${n(t.inputTokens)}</td><td class="n">${n(t.cachedInputTokens)}</td><td class="n">${n(t.cacheWriteTokens)}</td>` +
    `<td class="n">${n(t.outputTokens)}</td><td class="n">${n(t.reasoningTokens)}</td><td class="n">${money(t)}</td>`
  const rows = result.rows.map((row) =>
    `<tr><td class="t">${by === "session" ? `<a href="${sessionHref(keyOf(row.key))}">${e(keyOf(row.key))}</a>` : e(row.key)}</td><td class="n">${n(row.sessions)}</td>${cells(row)}</tr>`
  ).join("\n")
  const body = `<main class="doc"><h1>Usage</h1>
<form class="bar" action="/stats" method="get"><select name="by" aria-label="Group">${choices}</select>` +
    `<input type="date" name="since" value="${e(since)}" aria-label="Since"><input type="date" name="until" value="${e(until)}" aria-label="Until"><button type="submit" class="btn">Show</button></form>
<p class="totals">${n(result.total.sessions)} sessions with usage · ${n(result.total.messages)} messages · ${n(result.total.inputTokens)} tokens in, ${n(result.total.outputTokens)} out` +
    `${result.total.costed === 0 ? "" : ` · ${money(result.total)} where the usage carries a cost (${n(result.total.costed)} messages)`}</p>
<table class="sessions"><thead><tr><th>${e(by)}</th><th class="n">Sessions</th><th class="n">Messages</th><th class="n">Input</th><th class="n">Cached input</th><th class="n">Cache writes</th><th class="n">Output</th><th class="n">Reasoning</th><th class="n">Cost</th></tr></thead>
<tbody>${rows}<tr><td class="t"><strong>Total</strong></td><td class="n">${n(result.total.sessions)}</td>${cells(result.total)}</tr></tbody></table>
${unreadableHtml(result.unreadable, keyOf)}
</main>`
  return shell({ title: "Usage", page: "stats", body })
}

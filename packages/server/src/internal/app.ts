/**
 * The routes, and the one middleware every request goes through first (who may
 * ask, what every answer says about itself). Read-only: every route is a GET;
 * nothing a request names is ever used as a path (a session is found only among
 * the keys the catalog lists, a blob only among those its session refers to).
 */
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpRouter from "@effect/platform/HttpRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as RecordV2 from "@session-tree/core/RecordV2"
import type { SearchRole } from "@session-tree/core/Search"
import { isSessionError, type SessionError } from "@session-tree/core/SessionError"
import type { Listed, SessionsService } from "@session-tree/core/Sessions"
import * as Sessions from "@session-tree/core/Sessions"
import type { StatsBy, StatsRow } from "@session-tree/core/Stats"
import * as HtmlParts from "@session-tree/view/HtmlParts"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Pages from "./pages.js"
import { COMMON_HEADERS, COOKIE, INERT_POLICY, PAGE_HEADERS, sameToken, tokenOf } from "./security.js"
import type { Opened, State } from "./state.js"

export interface AppOptions {
  readonly state: State
  readonly sessions: SessionsService
  /** The token every request must carry; none for a loopback server. */
  readonly token: string | undefined
  /** The `Host` headers a loopback server answers. */
  readonly hosts: ReadonlySet<string> | undefined
  /** What the list page says it serves: a directory, a database. */
  readonly where: string
  /** The directory of session files (undefined for a database). */
  readonly directory: string | undefined
  /** Completed when the server stops: live streams end then, so that it can close. */
  readonly stopping: Deferred.Deferred<void>
}

/** Sessions per list page: a few hundred, so that 100,000 are as quick to list as 100. */
export const PAGE_SIZE = 200
/** Cards per window of a path. */
export const WINDOW = 200
/**
 * The most entries of a session whose page goes out whole the first time: a larger one's page goes
 * out with its first screen (the path's newest cards) before its tree and facts are drawn.
 */
export const DRAWN_AT_ONCE = 5_000
/** The most of a query string read as text (a filter, a search). */
const MAX_TEXT = 1_000

const page = (status: number, html: string) => HttpServerResponse.text(html, { status, contentType: "text/html; charset=utf-8", headers: PAGE_HEADERS })
const problem = (status: number, title: string, detail: string) => page(status, Pages.problemPage(title, detail))
const json = (value: unknown) =>
  HttpServerResponse.text(JSON.stringify(value), { contentType: "application/json; charset=utf-8", headers: { ...COMMON_HEADERS, "content-security-policy": INERT_POLICY } })
const fragment = (html: string) =>
  HttpServerResponse.text(html, { contentType: "text/html; charset=utf-8", headers: { ...COMMON_HEADERS, "content-security-policy": INERT_POLICY } })

/** A whole number from a query parameter, within [0, max]; undefined when absent or anything else. */
const whole = (value: string | null, max = 1_000_000_000): number | undefined =>
  value !== null && /^\d{1,10}$/.test(value) && Number(value) <= max ? Number(value) : undefined

const textParam = (url: URL, name: string): string => (url.searchParams.get(name) ?? "").slice(0, MAX_TEXT).trim()

/**
 * The request's URL, read only from a path (a request for `http://elsewhere/…` is not ours), and
 * only one whose path names no other host once parsed (`/\\elsewhere` reads as `//elsewhere`, which a
 * redirect to it would send a browser to).
 */
const requestUrl = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
  if (!request.url.startsWith("/") || request.url.startsWith("//")) return undefined
  const url = new URL(`http://server${request.url}`)
  return url.host === "server" && !url.pathname.startsWith("//") ? url : undefined
})

/** A session error in a page: its code and message, nothing more (no path, no cause). */
const errorPage = (error: SessionError) =>
  problem(error.code === "SESSION_NOT_FOUND" ? 404 : error.code === "SESSION_INVALID_OPTIONS" ? 400 : 500, error.code, error.reason)

/** The blob `hash` as the session refers to it: its media type, or undefined when no entry does. */
const blobRefOf = (opened: Opened, hash: string): string | undefined => {
  const ref = `sha256:${hash}`
  for (const entry of opened.loaded.entries) {
    if (entry.version !== 2 || entry.kind !== "message" || entry.message.role === "system") continue
    for (const part of entry.message.content) {
      if (part.type === "file" && "blob" in part.data && part.data.blob === ref) return part.mediaType
    }
  }
  return undefined
}

const RASTER = /^image\/(?:png|jpeg|gif|webp|avif|bmp)$/

export const make = (options: AppOptions) => {
  const { sessions, state } = options
  const blobSrc = (key: string) => (ref: string) => `/s/${encodeURIComponent(key)}/blob/${RecordV2.hashOf(ref)}`

  /** The session a key names, laid out; a key the catalog does not list is not found. */
  const opened = (key: string | undefined): Effect.Effect<Opened & { readonly key: string; readonly location: string }, "missing" | SessionError> =>
    Effect.suspend((): Effect.Effect<Opened & { readonly key: string; readonly location: string }, "missing" | SessionError> => {
      const location = key === undefined ? undefined : state.locationOf(key)
      if (location === undefined) return Effect.fail("missing" as const)
      return Effect.map(state.open(location, blobSrc), (o) => ({ ...o, key: key!, location }))
    })

  const keyParam = Effect.map(HttpRouter.params, (params) => params["key"])

  /** The cards of `path` from position `from` up to `to`. */
  const cardsOf = (layout: HtmlParts.Layout, path: ReadonlyArray<number>, from: number, to: number) =>
    path.slice(from, to).map((i) => HtmlParts.cardHtml(layout, i)).join("\n")

  /** The window of `path` to show first: around `focus` when it is on the path, else its end. */
  const windowOf = (path: ReadonlyArray<number>, focus: number) => {
    const at = focus >= 0 ? path.indexOf(focus) : -1
    const from = at < 0 ? Math.max(0, path.length - WINDOW) : Math.max(0, at - 50)
    return { from, to: Math.min(path.length, from + WINDOW) }
  }

  /** The newest leaf under `index`: the newest entry whose path goes through it. */
  const newestUnder = (layout: HtmlParts.Layout, index: number): number => {
    for (let i = layout.entries.length - 1; i > index; i--) {
      if (HtmlParts.pathOf(layout, i).includes(index)) return i
    }
    return index
  }

  // ---- The list ---------------------------------------------------------------------------

  const usageOf = (locations: ReadonlyArray<string>) =>
    Effect.map(sessions.stats({ by: "session", sessions: locations }), (result) => new Map<string, StatsRow>(result.rows.map((row) => [row.key, row])))

  const listRoute = Effect.gen(function*() {
    const url = yield* requestUrl
    if (url === undefined) return yield* problem(400, "Bad request", "The request names no path of this server.")
    const filter = textParam(url, "q").slice(0, 200)
    const sortParam = url.searchParams.get("sort") ?? "changed"
    const sort: Pages.Sort = (Pages.SORTS as ReadonlyArray<string>).includes(sortParam) ? sortParam as Pages.Sort : "changed"
    const pageNo = whole(url.searchParams.get("page"), 10_000_000) ?? 0
    let listed: ReadonlyArray<Listed>
    let total: number
    let offset = pageNo * PAGE_SIZE
    let usage: Map<string, StatsRow>
    if (filter === "" && (sort === "changed" || sort === "oldest")) {
      // Newest change first is the catalog's own order: only the page's sessions are read.
      if (sort === "changed") {
        const listing = yield* sessions.list({ offset, limit: PAGE_SIZE })
        listed = listing.sessions
        total = listing.total
      } else {
        total = (yield* sessions.list({ limit: 0 })).total
        const end = Math.max(0, total - offset)
        const listing = yield* sessions.list({ offset: Math.max(0, end - PAGE_SIZE), limit: Math.min(PAGE_SIZE, end) })
        listed = [...listing.sessions].reverse()
      }
      usage = yield* usageOf(listed.map((l) => l.location))
    } else {
      // Any other order or a filter needs every session's listing (each read once per version, then kept).
      const all = (yield* sessions.list()).sessions
      const needle = filter.toLowerCase()
      const matching = needle === ""
        ? all
        : all.filter((l) =>
          state.keyOf(l.location).toLowerCase().includes(needle) ||
          (!Sessions.isUnreadable(l) && (l.title.toLowerCase().includes(needle) || l.id.toLowerCase().includes(needle))))
      usage = sort === "tokens" ? yield* usageOf(matching.map((l) => l.location)) : new Map()
      const title = (l: Listed) => (Sessions.isUnreadable(l) ? "\uffff" : l.title.toLowerCase())
      const changedOf = (l: Listed) => state.entryOf(l.location)?.changed ?? 0
      const tokens = (l: Listed) => {
        const u = usage.get(l.location)
        return u === undefined ? -1 : u.inputTokens + u.outputTokens
      }
      const ordered = [...matching].sort((a, b) => {
        switch (sort) {
          case "title":
            return title(a) < title(b) ? -1 : title(a) > title(b) ? 1 : 0
          case "entries":
            return (Sessions.isUnreadable(b) ? -1 : b.entries) - (Sessions.isUnreadable(a) ? -1 : a.entries)
          case "tokens":
            return tokens(b) - tokens(a)
          case "oldest":
            return changedOf(a) - changedOf(b)
          default:
            return changedOf(b) - changedOf(a)
        }
      })
      total = ordered.length
      listed = ordered.slice(offset, offset + PAGE_SIZE)
      if (sort !== "tokens") usage = yield* usageOf(listed.map((l) => l.location))
    }
    if (offset > total) offset = total
    state.rememberTitles(listed)
    const rows: Array<Pages.ListRow> = listed.map((l) => {
      const entry = state.entryOf(l.location)
      return { key: state.keyOf(l.location), listed: l, version: entry?.version ?? "", changed: entry?.changed, usage: usage.get(l.location) }
    })
    const list: Pages.ListPage = {
      rows,
      total,
      offset,
      pageSize: PAGE_SIZE,
      page: pageNo,
      sort,
      filter,
      unreadable: rows.filter((r) => Sessions.isUnreadable(r.listed)).length
    }
    return url.searchParams.get("fragment") === "1" ? yield* fragment(Pages.listFragment(list)) : yield* page(200, Pages.listPage(list, options.where))
  })

  // ---- A session ------------------------------------------------------------------------------

  const sessionRoute = Effect.gen(function*() {
    const url = yield* requestUrl
    const key = yield* keyParam
    if (url === undefined) return yield* problem(400, "Bad request", "The request names no path of this server.")
    const o = yield* opened(key)
    const layout = o.layout
    const entry = url.searchParams.get("entry")
    const leafParam = url.searchParams.get("leaf")
    const focus = entry === null ? -1 : HtmlParts.indexOf(layout, entry) ?? -2
    const chosen = leafParam === null ? undefined : HtmlParts.indexOf(layout, leafParam)
    if (focus === -2 || (leafParam !== null && chosen === undefined)) {
      return yield* problem(404, "No such entry", `This session holds no entry ${JSON.stringify(entry ?? leafParam)}.`)
    }
    // An entry asked for is shown on its branch: the path to the newest leaf under it.
    const leaf = chosen ?? (focus >= 0 ? newestUnder(layout, focus) : layout.entries.length - 1)
    const path = leaf < 0 ? [] : leaf === layout.entries.length - 1 ? o.newestPath() : HtmlParts.pathOf(layout, leaf)
    const { from, to } = windowOf(path, focus)
    return yield* page(200, Pages.sessionPage({
      key: o.key,
      version: o.version,
      layout,
      // A large session not drawn yet goes out with its first screen; the page asks for its tree at once.
      rest: o.restReady() || layout.entries.length <= DRAWN_AT_ONCE ? o.rest() : undefined,
      links: o.links,
      path,
      leaf,
      focus,
      from,
      to,
      cards: cardsOf(layout, path, from, to)
    }))
  })

  const pathRoute = Effect.gen(function*() {
    const url = (yield* requestUrl)!
    const o = yield* opened(yield* keyParam)
    const n = o.layout.entries.length
    const to = whole(url.searchParams.get("to"), n - 1)
    if (to === undefined) return yield* problem(400, "Bad request", "to names no entry of the session.")
    const focus = whole(url.searchParams.get("focus"), n - 1) ?? -1
    const path = HtmlParts.pathOf(o.layout, to)
    const window = windowOf(path, focus)
    return yield* json({
      version: o.version,
      path: Pages.rangesOf(path),
      leaf: to,
      leafId: o.layout.entries[to]!.id,
      from: window.from,
      to: window.to,
      cards: cardsOf(o.layout, path, window.from, window.to)
    })
  })

  const cardsRoute = Effect.gen(function*() {
    const url = (yield* requestUrl)!
    const o = yield* opened(yield* keyParam)
    const n = o.layout.entries.length
    const to = whole(url.searchParams.get("to"), n - 1)
    const from = whole(url.searchParams.get("from"))
    const until = whole(url.searchParams.get("until"))
    if (to === undefined || from === undefined || until === undefined || until < from || until - from > WINDOW) {
      return yield* problem(400, "Bad request", "to, from and until name no window of the session.")
    }
    const path = HtmlParts.pathOf(o.layout, to)
    return yield* json({ version: o.version, cards: cardsOf(o.layout, path, Math.min(from, path.length), Math.min(until, path.length)) })
  })

  /** Rows of a folded run sent at a time: a run of a linear session of 100,000 entries is sent in pages. */
  const RUN_PAGE = 500

  const runRoute = Effect.gen(function*() {
    const url = (yield* requestUrl)!
    const o = yield* opened(yield* keyParam)
    const start = whole(url.searchParams.get("start"), o.layout.entries.length - 1)
    const count = whole(url.searchParams.get("n"), o.layout.entries.length)
    const level = whole(url.searchParams.get("level"), 1_000)
    if (start === undefined || count === undefined || level === undefined) return yield* problem(400, "Bad request", "start, n and level name no run.")
    const page = HtmlParts.runPage(o.layout, start, Math.min(count, RUN_PAGE), level)
    return yield* json({ version: o.version, rows: page.html, next: page.next })
  })

  const sinceRoute = Effect.gen(function*() {
    const url = (yield* requestUrl)!
    const key = yield* keyParam
    const was = url.searchParams.get("v") ?? ""
    // The version of the tree's rows the page holds, if any: the rows are then sent as changes to those.
    const rowsOf = url.searchParams.get("r") ?? ""
    const known = whole(url.searchParams.get("n")) ?? 0
    const leaf = whole(url.searchParams.get("leaf")) ?? -1
    const found = yield* Effect.either(opened(key))
    if (found._tag === "Left") {
      if (found.left === "missing") return yield* json({ gone: true })
      return yield* Effect.fail(found.left)
    }
    const o = found.right
    if (o.version === was) return yield* json({ version: o.version })
    const layout = o.layout
    const n = layout.entries.length
    // The reader's path goes on when the newest entry descends from its leaf: the new cards follow it.
    let extend: { readonly path: string; readonly leaf: number; readonly leafId: string; readonly cards: string } | undefined
    if (leaf >= 0 && leaf < n && n > known) {
      const newest = n - 1
      const path = o.newestPath()
      const at = path.indexOf(leaf)
      if (at >= 0) extend = { path: Pages.rangesOf(path), leaf: newest, leafId: layout.entries[newest]!.id, cards: cardsOf(layout, path, at + 1, path.length) }
    }
    const rest = o.rest()
    const before = o.since !== undefined && o.since.version === rowsOf ? o.since.rows : undefined
    return yield* json({
      version: o.version,
      n,
      added: Math.max(0, n - known),
      facts: rest.facts,
      treeHeading: rest.treeHeading,
      ...(before === undefined ? { rows: rest.rows } : { treeDelta: Pages.rowsDelta(before, rest.rows) }),
      ...(extend === undefined ? {} : { extend })
    })
  })

  const blobRoute = Effect.gen(function*() {
    const params = yield* HttpRouter.params
    const hash = params["hash"] ?? ""
    if (!/^[0-9a-f]{64}$/.test(hash)) return yield* problem(404, "Not found", "No such blob.")
    const o = yield* opened(params["key"])
    const mediaType = blobRefOf(o, hash)
    if (mediaType === undefined) return yield* problem(404, "Not found", "This session refers to no such blob.")
    const bytes = yield* o.loaded.blob(`sha256:${hash}`)
    // Only a raster image is sent as what it is; anything else is a download that cannot run here.
    const raster = RASTER.test(mediaType)
    return HttpServerResponse.uint8Array(bytes, {
      contentType: raster ? mediaType : "application/octet-stream",
      headers: { ...COMMON_HEADERS, "content-security-policy": INERT_POLICY, ...(raster ? {} : { "content-disposition": `attachment; filename="${hash}"` }) }
    })
  })

  const idRoute = Effect.gen(function*() {
    const url = (yield* requestUrl)!
    const id = (yield* HttpRouter.params)["id"] ?? ""
    const entry = url.searchParams.get("entry")
    // A database's key is the ID; in a directory, the session whose header names it.
    let key: string | undefined = state.locationOf(id) !== undefined ? id : undefined
    if (key === undefined) {
      const all = (yield* sessions.list()).sessions
      const found = all.find((l) => !Sessions.isUnreadable(l) && l.id === id)
      key = found === undefined ? undefined : state.keyOf(found.location)
    }
    if (key === undefined) return yield* problem(404, "Not found", `No session here has the ID ${JSON.stringify(id)}.`)
    return HttpServerResponse.empty({ status: 303, headers: { ...COMMON_HEADERS, location: `/s/${encodeURIComponent(key)}${entry === null ? "" : `?entry=${encodeURIComponent(entry)}`}` } })
  })

  // ---- Search and usage -------------------------------------------------------------------------

  const searchRoute = Effect.gen(function*() {
    const url = yield* requestUrl
    if (url === undefined) return yield* problem(400, "Bad request", "The request names no path of this server.")
    const form: Pages.SearchForm = {
      q: textParam(url, "q"),
      role: textParam(url, "role"),
      model: textParam(url, "model"),
      since: textParam(url, "since"),
      until: textParam(url, "until"),
      session: textParam(url, "session"),
      page: whole(url.searchParams.get("page"), 100_000) ?? 0
    }
    if (form.q === "") return yield* page(200, Pages.searchPage(form, undefined, state.keyOf))
    const session = form.session === "" ? undefined : state.locationOf(form.session) ?? form.session
    const result = yield* Effect.either(sessions.search({
      query: form.q,
      directory: options.directory,
      roles: form.role === "" ? undefined : [form.role as SearchRole],
      models: form.model === "" ? undefined : [form.model],
      since: form.since === "" ? undefined : form.since,
      until: form.until === "" ? undefined : form.until,
      sessions: session === undefined ? undefined : [session],
      offset: form.page * Pages.PAGE_HITS,
      limit: Pages.PAGE_HITS
    }))
    if (result._tag === "Left") {
      if (result.left.code !== "SESSION_INVALID_OPTIONS") return yield* Effect.fail(result.left)
      return yield* page(400, Pages.searchPage(form, { problem: `${result.left.code}: ${result.left.reason}` }, state.keyOf))
    }
    const hits = yield* Effect.forEach(result.right.hits, (hit) =>
      Effect.map(state.titleOf(hit.location), (title) => ({ hit, key: state.keyOf(hit.location), title })))
    return yield* page(200, Pages.searchPage(form, { result: result.right, hits }, state.keyOf))
  })

  const statsRoute = Effect.gen(function*() {
    const url = yield* requestUrl
    if (url === undefined) return yield* problem(400, "Bad request", "The request names no path of this server.")
    const byParam = url.searchParams.get("by") ?? "model"
    const by: StatsBy = byParam === "day" || byParam === "session" ? byParam : "model"
    const since = textParam(url, "since")
    const until = textParam(url, "until")
    const result = yield* Effect.either(sessions.stats({ by, since: since === "" ? undefined : since, until: until === "" ? undefined : until }))
    if (result._tag === "Left") {
      if (result.left.code !== "SESSION_INVALID_OPTIONS") return yield* Effect.fail(result.left)
      return yield* problem(400, result.left.code, result.left.reason)
    }
    return yield* page(200, Pages.statsPage(by, since, until, result.right, state.keyOf))
  })

  // ---- Live -----------------------------------------------------------------------------------

  const encoder = new TextEncoder()
  const eventsRoute = Effect.gen(function*() {
    const url = (yield* requestUrl)!
    const only = url.searchParams.get("s")
    if (only !== null && state.locationOf(only) === undefined) return yield* problem(404, "Not found", "No such session.")
    const heard = Stream.fromPubSub(state.hub, { scoped: false }).pipe(
      Stream.filter((h) => only === null || h.all || h.keys.includes(only)),
      Stream.map((h) => `event: change\ndata: ${JSON.stringify({ keys: only === null ? h.keys : [only], all: h.all })}\n\n`)
    )
    // A comment now and then: a connection whose reader went away is noticed, and proxies keep it open.
    const pings = Stream.repeatEffectWithSchedule(Effect.succeed(": ping\n\n"), Schedule.spaced("15 seconds"))
    const events = Stream.concat(Stream.make("retry: 1000\n: live\n\n"), Stream.merge(heard, pings)).pipe(
      Stream.map((text) => encoder.encode(text)),
      Stream.interruptWhen(Deferred.await(options.stopping))
    )
    return HttpServerResponse.stream(events, {
      contentType: "text/event-stream",
      headers: { ...COMMON_HEADERS, "content-security-policy": INERT_POLICY, "x-accel-buffering": "no" }
    })
  })

  const router = HttpRouter.empty.pipe(
    HttpRouter.get("/", listRoute),
    HttpRouter.get("/search", searchRoute),
    HttpRouter.get("/stats", statsRoute),
    HttpRouter.get("/events", eventsRoute),
    HttpRouter.get("/id/:id", idRoute),
    HttpRouter.get("/s/:key", sessionRoute),
    HttpRouter.get("/s/:key/path", pathRoute),
    HttpRouter.get("/s/:key/cards", cardsRoute),
    HttpRouter.get("/s/:key/run", runRoute),
    HttpRouter.get("/s/:key/since", sinceRoute),
    HttpRouter.get("/s/:key/blob/:hash", blobRoute),
    // Browsers ask for an icon unbidden; there is none.
    HttpRouter.get("/favicon.ico", HttpServerResponse.empty({ status: 204, headers: COMMON_HEADERS }))
  )

  // Failures become pages: a key the catalog does not list is not found; a session that does not
  // load says why (its code and message); nothing else of a failure reaches the answer.
  const app = router.pipe(
    Effect.catchAll((error: unknown) => {
      if (error === "missing") return problem(404, "Not found", "No session here has this name.")
      if (isSessionError(error)) return errorPage(error)
      if (typeof error === "object" && error !== null && (error as { _tag?: unknown })._tag === "RouteNotFound") {
        return problem(404, "Not found", "This server has no such page.")
      }
      return problem(500, "Server error", "The server could not answer this request.")
    }),
    Effect.catchAllDefect(() => problem(500, "Server error", "The server could not answer this request."))
  )

  /** Who may ask: the method, the Host header (loopback), the token (elsewhere). */
  const guard = HttpMiddleware.make((inner) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (request.method !== "GET") {
        return yield* HttpServerResponse.text("Only GET requests are answered.\n", { status: 405, headers: { ...COMMON_HEADERS, allow: "GET" } })
      }
      const url = yield* requestUrl
      if (url === undefined) return yield* HttpServerResponse.text("Bad request.\n", { status: 400, headers: COMMON_HEADERS })
      const headers = request.headers as Readonly<Record<string, string | undefined>>
      if (options.hosts !== undefined && !options.hosts.has((headers["host"] ?? "").toLowerCase())) {
        return yield* HttpServerResponse.text("This server answers requests for its own address only.\n", { status: 421, headers: COMMON_HEADERS })
      }
      if (options.token !== undefined) {
        const given = tokenOf(headers, url)
        if (!sameToken(options.token, given.value)) {
          return yield* HttpServerResponse.text("A valid token is required: open the address the server printed.\n", {
            status: 401,
            headers: { ...COMMON_HEADERS, "www-authenticate": "Bearer" }
          })
        }
        if (given.inUrl) {
          url.searchParams.delete("token")
          return yield* HttpServerResponse.empty({
            status: 303,
            headers: {
              ...COMMON_HEADERS,
              location: `${url.pathname}${url.search}`,
              "set-cookie": `${COOKIE}=${options.token}; Path=/; HttpOnly; SameSite=Strict`
            }
          })
        }
      }
      return yield* inner
    }))

  return { app, guard, warmUp: (count: number) => state.warmUp(blobSrc, count) }
}


/**
 * The server at the HTTP level: what it answers and what it refuses, without a
 * browser. Requests are sent raw (node:http with the path exactly as written,
 * or bytes on a socket), so nothing on the way normalizes `..` or decodes a
 * separator before the server sees it.
 *
 * - Pages, and the headers every answer carries (the policy names exactly the
 *   page's own script and style by hash).
 * - Nothing outside the served directory: `..`, encoded separators, a NUL, a link
 *   in the directory pointing out of it, a session beside the directory; a blob
 *   the session does not refer to.
 * - Malformed, oversized and unexpected requests get 4xx, and the server goes on.
 * - A loopback server answers requests for its own address only; any other
 *   needs the token (401 without it, wrong or short; a cookie set from the
 *   address; a bearer header).
 * - Stopping with a live stream open completes at once.
 */
import { createHash } from "node:crypto"
import * as Http from "node:http"
import * as Net from "node:net"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { serveFiles, type Served, tempDir, writeCorpus } from "./support/serve.js"

interface Answer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
}

/** A GET of `path` exactly as written. */
const get = (served: { readonly port: number }, path: string, headers: Record<string, string> = {}, method = "GET"): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const request = Http.request({ host: "127.0.0.1", port: served.port, path, method, headers, agent: false }, (response) => {
      let body = ""
      response.setEncoding("utf8")
      response.on("data", (chunk: string) => (body += chunk))
      response.on("end", () => resolve({ status: response.statusCode!, headers: response.headers, body }))
    })
    request.on("error", reject)
    request.end()
  })

/** Bytes on a socket, and what comes back before the server closes it (or a second passes). */
const raw = (port: number, bytes: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = Net.connect({ host: "127.0.0.1", port })
    let got = ""
    socket.setEncoding("utf8")
    socket.on("data", (chunk: string) => (got += chunk))
    socket.on("error", (error) => (got === "" ? reject(error) : resolve(got)))
    socket.on("close", () => resolve(got))
    socket.setTimeout(2_000, () => {
      socket.destroy()
      resolve(got)
    })
    socket.write(bytes)
  })

const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`

describe("the server over files, at the HTTP level", () => {
  let root = ""
  let dir = ""
  let served: Served
  beforeAll(async () => {
    root = tempDir("http")
    dir = Path.join(root, "served")
    NFS.mkdirSync(dir)
    writeCorpus(dir)
    // A session beside the served directory, and a link in it that points there.
    NFS.writeFileSync(Path.join(root, "outside.jsonl"), NFS.readFileSync(Path.join(dir, "pooling.jsonl"), "utf8").replace("saturated", "quokka"))
    NFS.symlinkSync(Path.join(root, "outside.jsonl"), Path.join(dir, "link.jsonl"))
    served = await serveFiles(dir, { port: 0 })
  })
  afterAll(async () => {
    await served?.stop()
    if (root !== "") NFS.rmSync(root, { recursive: true, force: true })
  })

  it("answers its pages, each with a policy that names its own script and style", async () => {
    for (const path of ["/", "/s/incident.jsonl", "/search?q=refused", "/stats?by=day"]) {
      const answer = await get(served, path)
      expect(answer.status, path).toBe(200)
      expect(answer.headers["content-type"]).toBe("text/html; charset=utf-8")
      const script = /<script>([\s\S]*?)<\/script>/.exec(answer.body)![1]!
      const style = /<style>([\s\S]*?)<\/style>/.exec(answer.body)![1]!
      expect(answer.body.match(/<script/g)).toHaveLength(1)
      // The one script is JavaScript that parses (a page whose script does not would be dead).
      expect(() => new Function(script)).not.toThrow()
      expect(answer.body.match(/<style/g)).toHaveLength(1)
      expect(answer.headers["content-security-policy"]).toBe(
        `default-src 'none'; script-src ${sha256(script)}; style-src ${sha256(style)}; img-src 'self' data:; connect-src 'self'; ` +
          `font-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; worker-src 'none'; manifest-src 'none'; ` +
          `base-uri 'none'; form-action 'self'; frame-ancestors 'none'`
      )
      expect(answer.headers).toMatchObject({ "x-content-type-options": "nosniff", "x-frame-options": "DENY", "referrer-policy": "no-referrer", "cache-control": "no-store" })
    }
    const list = (await get(served, "/")).body
    for (const name of ["incident", "pooling", "notes", "unicode"]) expect(list).toContain(`href="/s/${name}.jsonl"`)
    expect(list).toContain("Why does the API say Connection refused after the deploy?")
    // The link in the directory is listed, with why it does not load; its target's content never shows.
    expect(list).toMatch(/SESSION_NOT_REGULAR_FILE/)
    expect(list).not.toContain("quokka")
    const search = (await get(served, "/search?q=refused")).body
    expect(search).toContain("1–3 of 3 matching entries")
    expect(search).toContain(`<mark>refused</mark>`)
  })

  it("reaches nothing outside the served directory", async () => {
    const refused = [
      "/s/..",
      "/s/.",
      "/s/../outside.jsonl",
      "/s/..%2Foutside.jsonl",
      "/s/%2e%2e%2foutside.jsonl",
      "/s/%2E%2E/outside.jsonl",
      "/s/..%5Coutside.jsonl",
      "/s/incident.jsonl%00",
      "/s/%00",
      "/s/served%2Fincident.jsonl",
      `/s/${encodeURIComponent(Path.join(root, "outside.jsonl"))}`,
      "/s/incident.jsonl.blobs",
      "/s/incident.jsonl/blob/..%2F..%2Foutside.jsonl",
      `/s/incident.jsonl/blob/${"0".repeat(64)}`,
      "/s/incident.jsonl/run?start=../../etc&n=1&level=0",
      "/id/..%2Foutside",
      "/../outside.jsonl",
      "/%2e%2e/outside.jsonl"
    ]
    for (const path of refused) {
      const answer = await get(served, path)
      expect([path, answer.status >= 400 && answer.status < 500]).toEqual([path, true])
      expect(answer.body).not.toContain("quokka")
    }
    // The link's page says what it is, never what it points at.
    const link = await get(served, "/s/link.jsonl")
    expect(link.status).toBe(500)
    expect(link.body).toContain("SESSION_NOT_REGULAR_FILE")
    expect(link.body).not.toContain("quokka")
    // Search reads the link as what it is too, and never a session outside.
    const searched = await get(served, `/search?q=quokka&session=${encodeURIComponent("../outside.jsonl")}`)
    expect(searched.body).not.toContain("<mark>quokka</mark>")
    expect((await get(served, "/search?q=quokka")).body).toContain("SESSION_NOT_REGULAR_FILE")
  })

  it("answers malformed, oversized and unexpected requests with 4xx, and goes on answering", async () => {
    expect((await get(served, "/", {}, "POST")).status).toBe(405)
    expect((await get(served, "/", {}, "PUT")).status).toBe(405)
    expect((await get(served, "/", {}, "HEAD")).status).toBe(405)
    expect((await get(served, "/", {}, "DELETE")).status).toBe(405)
    expect((await get(served, "/s/%E0%A4%A")).status).toBe(404)
    expect((await get(served, "/search?q=%E0%A4%A")).status).toBe(200)
    expect((await get(served, "/s/incident.jsonl/path?to=x")).status).toBe(400)
    expect((await get(served, "/s/incident.jsonl/path?to=99999999999")).status).toBe(400)
    expect((await get(served, "/s/incident.jsonl/cards?to=3&from=0&until=5000")).status).toBe(400)
    expect((await get(served, "/s/incident.jsonl?leaf=nope")).status).toBe(404)
    expect((await get(served, `/search?q=${"a%20".repeat(40)}`)).status).toBe(400)
    expect((await get(served, "/nowhere")).status).toBe(404)
    // Over the header limit: the address, a header.
    expect((await raw(served.port, `GET /?q=${"x".repeat(20_000)} HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\n\r\n`)).slice(0, 12)).toBe("HTTP/1.1 431")
    expect((await raw(served.port, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\nX-Big: ${"y".repeat(20_000)}\r\n\r\n`)).slice(0, 12)).toBe("HTTP/1.1 431")
    // Not HTTP, a target that is not a path, a request without a Host.
    expect((await raw(served.port, "GARBAGE\r\n\r\n")).slice(0, 12)).toBe("HTTP/1.1 400")
    expect((await raw(served.port, `GET http://elsewhere.example/ HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\n\r\n`)).slice(0, 12)).toBe("HTTP/1.1 400")
    // A path that parses as another host's (a backslash reads as a slash) is no path of this server.
    expect((await get(served, "/\\elsewhere.example/")).status).toBe(400)
    expect((await get(served, "/\\elsewhere.example/?token=x")).status).toBe(400)
    expect((await raw(served.port, "GET / HTTP/1.0\r\n\r\n")).slice(0, 12)).toBe("HTTP/1.1 421")
    expect((await raw(served.port, `GET / HTTP/1.1\r\nHost: 127.0.0.1:${served.port}\r\nContent-Length: -1\r\n\r\n`)).slice(0, 12)).toBe("HTTP/1.1 400")
    expect((await get(served, "/")).status).toBe(200)
  })

  it("answers requests for its own address only (a page elsewhere whose name resolves here gets nothing)", async () => {
    expect((await get(served, "/", { host: `127.0.0.1:${served.port}` })).status).toBe(200)
    expect((await get(served, "/", { host: `localhost:${served.port}` })).status).toBe(200)
    for (const host of [`evil.example:${served.port}`, "127.0.0.1", `127.0.0.1:${served.port + 1}`, `localhost.evil.example:${served.port}`]) {
      const answer = await get(served, "/", { host })
      expect([host, answer.status]).toEqual([host, 421])
      expect(answer.body).not.toContain("Connection refused")
    }
  })

  it("serves a blob the session refers to, as an image only when it is a raster image", async () => {
    // A session with an image blob and a blob that says it is HTML.
    const png = Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==", "base64")
    const html = Buffer.from("<script>alert(1)</script>")
    const hash = (b: Buffer) => createHash("sha256").update(b).digest("hex")
    const blobs = Path.join(dir, "pictures.jsonl.blobs")
    NFS.mkdirSync(blobs)
    NFS.writeFileSync(Path.join(blobs, hash(png)), png)
    NFS.writeFileSync(Path.join(blobs, hash(html)), html)
    const file = (mediaType: string, b: Buffer) => ({ type: "file", mediaType, data: { blob: `sha256:${hash(b)}`, size: b.length } })
    const lines = [
      JSON.stringify({ type: "session", version: 2, id: "pics", timestamp: "2026-01-01T00:00:00.000Z" }),
      JSON.stringify({ type: "entry", version: 2, id: "e1", parentId: null, timestamp: "2026-01-01T00:00:01.000Z", kind: "message", message: { role: "user", id: "u1", content: [file("image/png", png), file("text/html", html)] } })
    ]
    NFS.writeFileSync(Path.join(dir, "pictures.jsonl"), lines.map((l) => `${l}\n`).join(""))
    await new Promise((resolve) => setTimeout(resolve, 500))
    const page = await get(served, "/s/pictures.jsonl")
    expect(page.status).toBe(200)
    expect(page.body).toContain(`src="/s/pictures.jsonl/blob/${hash(png)}"`)
    const image = await get(served, `/s/pictures.jsonl/blob/${hash(png)}`)
    expect(image.status).toBe(200)
    expect(image.headers["content-type"]).toBe("image/png")
    expect(image.headers["content-security-policy"]).toContain("sandbox")
    const other = await get(served, `/s/pictures.jsonl/blob/${hash(html)}`)
    expect(other.headers["content-type"]).toBe("application/octet-stream")
    expect(other.headers["content-disposition"]).toMatch(/^attachment/)
    // A blob of another session, asked for through this one, is not found.
    expect((await get(served, `/s/incident.jsonl/blob/${hash(png)}`)).status).toBe(404)
  })
})

describe("a server on another address", () => {
  let dir = ""
  let served: Served
  beforeAll(async () => {
    dir = tempDir("token")
    writeCorpus(dir)
    served = await serveFiles(dir, { port: 0, host: "0.0.0.0" })
  })
  afterAll(async () => {
    await served?.stop()
    if (dir !== "") NFS.rmSync(dir, { recursive: true, force: true })
  })

  it("prints an address with a random token, and refuses every request without it", async () => {
    const token = served.token!
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(served.url).toBe(`http://0.0.0.0:${served.port}/?token=${token}`)
    const wrong = token.slice(0, -1) + (token.endsWith("A") ? "B" : "A")
    for (const headers of [{}, { cookie: `session_tree_token=${wrong}` }, { cookie: "session_tree_token=" }, { authorization: `Bearer ${token.slice(0, 10)}` }, { authorization: `Basic ${token}` }]) {
      for (const path of ["/", "/s/incident.jsonl", "/events", "/search?q=refused", `/s/incident.jsonl/blob/${"0".repeat(64)}`]) {
        const answer = await get(served, path, headers)
        expect([path, JSON.stringify(headers), answer.status]).toEqual([path, JSON.stringify(headers), 401])
        expect(answer.body).not.toContain("Connection refused")
        expect(answer.body).not.toContain(token)
      }
    }
    expect((await get(served, `/?token=${wrong}`)).status).toBe(401)
  })

  it("takes the token from the address once (setting a cookie), then from the cookie or a bearer header", async () => {
    const token = served.token!
    const first = await get(served, `/search?q=refused&token=${token}`)
    expect(first.status).toBe(303)
    expect(first.headers.location).toBe("/search?q=refused")
    expect(first.headers["set-cookie"]).toEqual([`session_tree_token=${token}; Path=/; HttpOnly; SameSite=Strict`])
    const withCookie = await get(served, "/search?q=refused", { cookie: `other=1; session_tree_token=${token}` })
    expect(withCookie.status).toBe(200)
    expect(withCookie.body).toContain("<mark>refused</mark>")
    expect((await get(served, "/", { authorization: `Bearer ${token}` })).status).toBe(200)
    // Any Host: the token is what protects this server.
    expect((await get(served, "/", { authorization: `Bearer ${token}`, host: "somewhere.example" })).status).toBe(200)
  })
})

describe("stopping", () => {
  it("completes at once with a live stream open, and the port is closed", async () => {
    const dir = tempDir("stop")
    try {
      writeCorpus(dir)
      const served = await serveFiles(dir, { port: 0 })
      const events = await new Promise<Http.IncomingMessage>((resolve, reject) => {
        Http.get({ host: "127.0.0.1", port: served.port, path: "/events", agent: false }, resolve).on("error", reject)
      })
      expect(events.statusCode).toBe(200)
      expect(events.headers["content-type"]).toBe("text/event-stream")
      // Read as it comes, as a page's EventSource does, so that its end is seen.
      events.resume()
      const ended = new Promise<void>((resolve) => events.on("close", () => resolve()))
      const started = performance.now()
      await served.stop()
      await ended
      expect(performance.now() - started).toBeLessThan(2_000)
      await expect(get(served, "/")).rejects.toMatchObject({ code: "ECONNREFUSED" })
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

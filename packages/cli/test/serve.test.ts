/**
 * `session-tree search`, `stats` and `serve` as a user runs them, on files and
 * with `--db`: the same answers as the Effect API, the error code first and exit
 * 1 for what could not be read, exit 2 for wrong usage; `serve` prints its URL on
 * its first line (`--port 0` the port it got), needs the token away from
 * loopback, and stops cleanly on SIGINT and SIGTERM.
 */
import * as Codec from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import type { SearchIndex } from "@session-tree/core/Search"
import type { SessionCatalog } from "@session-tree/core/SessionCatalog"
import type { SessionError } from "@session-tree/core/SessionError"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as PgJournal from "@session-tree/pg/PgJournal"
import * as Corpus from "@session-tree/testing/Corpus"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import * as Exit from "effect/Exit"
import { type ChildProcess, spawn } from "node:child_process"
import { track } from "@session-tree/testing/Children"
import * as Net from "node:net"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { bin, firstWord, removeTempDirs, runCli, tempDir } from "./support.js"

let dir = ""
let dbUrl = ""
const scope = Effect.runSync(Scope.make())

const effectApi = <A>(f: (s: Sessions.SessionsService) => Effect.Effect<A, unknown>, db?: string) => {
  const backend: Layer.Layer<SessionJournal | SessionCatalog | SearchIndex, SessionError> = db === undefined ? FileJournal.layerWithFs() : PgJournal.layerUrl(db)
  return Effect.runPromise(Effect.flatMap(Sessions.Sessions, f).pipe(Effect.provide(Layer.provideMerge(Sessions.layer, Layer.merge(backend, Ids.layerRandom)))))
}

beforeAll(async () => {
  dir = tempDir()
  for (const session of Corpus.corpus) NFS.writeFileSync(Path.join(dir, `${session.name}.jsonl`), Corpus.fileText(session))
  dbUrl = await Effect.runPromise(freshDatabase("cli_serve").pipe(Scope.extend(scope)))
  expect((await runCli("migrate", "--db", dbUrl)).code).toBe(0)
  await effectApi((s) =>
    Effect.forEach(Corpus.corpus, (session) => {
      const decoded = Codec.decodeLines({ lines: session.lines, sizes: session.lines.map(Codec.utf8Length), tail: "none" })
      return decoded._tag === "Left" ? Effect.fail(decoded.left) : s.import({ header: decoded.right.header, entries: decoded.right.history.entries })
    }), dbUrl)
})
afterAll(async () => {
  await Effect.runPromise(Scope.close(scope, Exit.void))
  removeTempDirs()
})

describe("session-tree search", () => {
  it("prints the hits newest first with their excerpts, and as JSON the Effect API's answer", async () => {
    const text = await runCli("search", "refused", "--dir", dir)
    expect(text.code).toBe(0)
    expect(text.stdout.split("\n").filter((l) => !l.startsWith(" "))).toEqual([
      `${Path.join(dir, "notes.jsonl")}  n3  compaction  2026-01-04T09:00:00.000Z`,
      `${Path.join(dir, "incident.jsonl")}  i4  assistant  2026-01-02T10:04:00.000Z  gpt-5`,
      `${Path.join(dir, "incident.jsonl")}  i1  user  2026-01-02T10:01:00.000Z`,
      "1–3 of 3 matching entries (4 sessions looked at)",
      ""
    ])
    expect(text.stdout).toContain("    A refused connection after a deploy usually means the service did not start.")
    // The commands run side by side (each is mostly its own start-up), then each answer is checked.
    const cases = [["refused"], ["connection", "--role", "user"], [`"service did not"`, "--limit", "1"], ["connection", "--model", "claude-opus-4"], ["refused", "--since", "2026-01-03"]]
    const answers = await Promise.all(cases.map((args) => runCli("search", ...args, "--dir", dir, "--json")))
    for (const [i, args] of cases.entries()) {
      const json = answers[i]!
      expect(json.code, args.join(" ")).toBe(0)
      const roles = args.flatMap((a, i) => (args[i - 1] === "--role" ? [a] : [])) as Array<"user" | "assistant">
      const models = args.flatMap((a, i) => (args[i - 1] === "--model" ? [a] : []))
      const since = args[args.indexOf("--since") + 1]
      expect(JSON.parse(json.stdout)).toEqual(await effectApi((s) =>
        s.search({
          query: args[0]!,
          directory: dir,
          limit: args.includes("--limit") ? 1 : 20,
          ...(roles.length === 0 ? {} : { roles }),
          ...(models.length === 0 ? {} : { models }),
          ...(args.includes("--since") ? { since } : {})
        })))
    }
  })

  it("gives the same hits with --db, its sessions named by ID", async () => {
    const files = JSON.parse((await runCli("search", "connection", "--dir", dir, "--json")).stdout) as { hits: Array<{ location: string }> }
    const db = await runCli("search", "connection", "--db", dbUrl, "--json")
    expect(db.code).toBe(0)
    const fromDb = JSON.parse(db.stdout) as { hits: Array<{ location: string; session: string }> }
    expect(fromDb.hits.map((h) => ({ ...h, location: undefined }))).toEqual(files.hits.map((h) => ({ ...h, location: undefined })))
    expect(fromDb.hits.map((h) => h.location)).toEqual(fromDb.hits.map((h) => h.session))
  })

  it("exits 1 naming what could not be searched, and 2 for wrong usage", async () => {
    const noWord = await runCli("search", "?! …", "--dir", dir)
    expect([noWord.code, firstWord(noWord.stderr)]).toEqual([1, "SESSION_INVALID_OPTIONS"])
    const damaged = tempDir()
    NFS.writeFileSync(Path.join(damaged, "a.jsonl"), Corpus.fileText(Corpus.pooling))
    NFS.writeFileSync(Path.join(damaged, "b.jsonl"), Corpus.fileText(Corpus.pooling).replace(`"toolName":"run_tests","content"`, `"toolName":"run_tests","extra":1,"content"`))
    const partial = await runCli("search", "saturated", "--dir", damaged)
    expect(partial.code).toBe(1)
    expect(partial.stdout).toContain(`${Path.join(damaged, "a.jsonl")}  p3  tool`)
    expect(partial.stderr).toContain(`${Path.join(damaged, "b.jsonl")}: SESSION_INVALID_MESSAGE`)
    expect(firstWord(partial.stderr.split("\n").find((l) => !l.startsWith(" "))!)).toBe("SESSION_INVALID_MESSAGE")
    const [both, robot, none, missing] = await Promise.all([
      runCli("search", "x", "--dir", dir, "--db", dbUrl),
      runCli("search", "x", "--role", "robot", "--dir", dir),
      runCli("search", "--dir", dir),
      runCli("search", "x", "--dir", Path.join(dir, "nope"))
    ])
    expect([both.code, robot.code, none.code]).toEqual([2, 2, 2])
    expect([missing.code, firstWord(missing.stderr)]).toEqual([1, "SESSION_NOT_FOUND"])
  })
})

describe("session-tree stats", () => {
  it("sums usage as the Effect API does, as a table or JSON, on files and with --db", async () => {
    const table = await runCli("stats", "--dir", dir, "--by", "model")
    expect(table.code).toBe(0)
    expect(table.stdout.split("\n")).toEqual([
      "model            sessions  messages  input  cached  cache write  output  reasoning     cost",
      "claude-sonnet-4         1         1  1,200   1,000          200      80          0  $0.0059",
      "gpt-5                   1         1    900       0            0      40         12",
      "claude-opus-4           1         1    300       0            0      60          0",
      "total                   2         3  2,400   1,000          200     180         12  $0.0059",
      ""
    ])
    const cases = [[], ["--by", "day"], ["--by", "session"], ["--by", "model", "--since", "2026-01-05"]]
    const answers = await Promise.all(cases.map((by) => runCli("stats", "--dir", dir, ...by, "--json")))
    for (const [i, by] of cases.entries()) {
      const json = answers[i]!
      expect(json.code).toBe(0)
      const options = { directory: dir, by: by[1] as "day" | undefined, ...(by.includes("--since") ? { since: "2026-01-05" } : {}) }
      expect(JSON.parse(json.stdout)).toEqual(await effectApi((s) => s.stats(options)))
    }
    const [onFiles, onDb, week, bad] = await Promise.all([
      runCli("stats", "--dir", dir, "--by", "model", "--json"),
      runCli("stats", "--db", dbUrl, "--by", "model", "--json"),
      runCli("stats", "--by", "week", "--dir", dir),
      runCli("stats", "--since", "tomorrow", "--dir", dir)
    ])
    expect(JSON.parse(onDb.stdout)).toEqual(JSON.parse(onFiles.stdout))
    expect(week.code).toBe(2)
    expect([bad.code, firstWord(bad.stderr)]).toEqual([1, "SESSION_INVALID_OPTIONS"])
  })
})

describe("session-tree serve", () => {
  const started: Array<ChildProcess> = []
  afterEach(async () => {
    for (const child of started.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGKILL")
        await new Promise((resolve) => child.once("close", resolve))
      }
    }
  })

  /** Starts `session-tree serve …args`; resolves with its first line and what it printed after. */
  const serve = (...args: ReadonlyArray<string>) =>
    new Promise<{ readonly child: ChildProcess; readonly first: string; readonly stderr: () => string; readonly closed: Promise<{ code: number | null; signal: string | null }> }>((resolve, reject) => {
      const child = track(spawn(process.execPath, [bin, "serve", ...args], { env: { ...process.env, SESSION_TREE_DB: "", NO_COLOR: "1" } }), [bin, "serve", ...args])
      started.push(child)
      let out = ""
      let err = ""
      const closed = new Promise<{ code: number | null; signal: string | null }>((done) => child.once("close", (code, signal) => done({ code, signal })))
      child.stdout!.setEncoding("utf8")
      child.stderr!.setEncoding("utf8")
      child.stderr!.on("data", (chunk: string) => (err += chunk))
      child.stdout!.on("data", (chunk: string) => {
        out += chunk
        const nl = out.indexOf("\n")
        if (nl >= 0) resolve({ child, first: out.slice(0, nl), stderr: () => err, closed })
      })
      void closed.then(({ code }) => reject(new Error(`serve exited ${code} before printing a URL: ${err}`)))
    })

  const portFree = (port: number) =>
    new Promise<boolean>((resolve) => {
      const socket = Net.connect({ host: "127.0.0.1", port })
      socket.on("connect", () => (socket.destroy(), resolve(false)))
      socket.on("error", () => resolve(true))
    })

  it("prints the address it got with --port 0 on its first line, serves it, and stops cleanly on SIGINT and on SIGTERM", async () => {
    for (const signal of ["SIGINT", "SIGTERM"] as const) {
      const { child, closed, first } = await serve("--dir", dir, "--port", "0")
      expect(first).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
      const port = Number(new URL(first).port)
      expect(port).toBeGreaterThan(0)
      const page = await fetch(first)
      expect(page.status).toBe(200)
      expect(await page.text()).toContain("Why does the API say Connection refused after the deploy?")
      // A live page's stream stays open while the server stops.
      const events = await fetch(`${first}events`)
      expect(events.headers.get("content-type")).toBe("text/event-stream")
      const stoppedAt = performance.now()
      child.kill(signal)
      const exit = await closed
      // Interrupted, it ends itself (no kill needed), with the shell's code for an interrupted command.
      expect(exit).toEqual({ code: 130, signal: null })
      expect(performance.now() - stoppedAt).toBeLessThan(5_000)
      expect(await portFree(port)).toBe(true)
      await events.body?.cancel().catch(() => {})
    }
  })

  it("serves a database with --db, and needs the printed token on another address", async () => {
    const db = await serve("--db", dbUrl, "--port", "0")
    expect((await (await fetch(db.first)).text())).toContain("Deploy checklist notes")
    db.child.kill("SIGTERM")
    expect((await db.closed).code).toBe(130)
    const open = await serve("--dir", dir, "--port", "0", "--host", "0.0.0.0")
    expect(open.first).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/\?token=[A-Za-z0-9_-]{43}$/)
    for (let waited = 0; !open.stderr().includes("needs the token") && waited < 5_000; waited += 50) await new Promise((r) => setTimeout(r, 50))
    expect(open.stderr()).toContain("needs the token")
    const port = new URL(open.first).port
    expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(401)
    // As a browser opens it: the token once in the address, then in the cookie it is given.
    const withToken = await fetch(`http://127.0.0.1:${port}/${new URL(open.first).search}`, { redirect: "manual" })
    expect(withToken.status).toBe(303)
    const cookie = withToken.headers.get("set-cookie")!.split(";")[0]!
    expect((await fetch(`http://127.0.0.1:${port}/`, { headers: { cookie } })).status).toBe(200)
    open.child.kill("SIGINT")
    await open.closed
  })

  it("exits 2 for wrong usage and 1 with the code first when it cannot serve", async () => {
    expect((await runCli("serve", "--port", "70000", "--dir", dir)).code).toBe(2)
    expect((await runCli("serve", "--dir", dir, "--db", dbUrl)).code).toBe(2)
    const missing = await runCli("serve", "--dir", Path.join(dir, "nope"), "--port", "0")
    expect([missing.code, firstWord(missing.stderr)]).toEqual([1, "SESSION_NOT_FOUND"])
    const busy = Net.createServer()
    await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve))
    try {
      const taken = await runCli("serve", "--dir", dir, "--port", String((busy.address() as Net.AddressInfo).port))
      expect([taken.code, firstWord(taken.stderr)]).toEqual([1, "SESSION_IO"])
      expect(taken.stderr).toContain("EADDRINUSE")
    } finally {
      busy.close()
    }
  })
})

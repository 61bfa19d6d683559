/**
 * A connection cut in the middle of a commit (SPEC C2: "when the outcome of a
 * commit is unknown … the append fails with SESSION_IO saying so, and a reload
 * shows either the whole batch or none of it"). The journal talks to the server
 * through a TCP proxy written here, which drops both sockets at one chosen
 * moment of the protocol:
 * - after COMMIT: the COMMIT message is passed on, then the client's socket is
 *   dropped before any answer can reach it. The server commits; the caller
 *   cannot know, so it sees SESSION_IO saying the outcome is unknown; the same
 *   store's next append is SESSION_REPLACED; a reload shows the batch whole.
 * - before COMMIT: the sockets are dropped instead of passing COMMIT on. The
 *   server rolls back; the caller sees the same SESSION_IO; nothing is stored,
 *   and the same store's next append succeeds.
 * - in the statement: the sockets are dropped instead of passing on the
 *   message that carries the compare-and-set statement, so the server never
 *   sees it and rolls back the transaction it had begun; the caller sees
 *   SESSION_IO saying nothing was committed; nothing is stored; the next
 *   append succeeds.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { Ids } from "@session-tree/core/Ids"
import type { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Net from "node:net"
import { afterAll, beforeAll, expect, inject, it } from "vitest"
import * as PgJournal from "../src/PgJournal.js"
import { counterIds, layer, TestDatabase, user } from "./support/database.js"
import { messageOf } from "@session-tree/core/Record"

type Cut = "after-commit" | "before-commit" | "in-statement"

/** What the client sends for `COMMIT` in the simple query protocol: 'Q', its length, the text and a NUL. */
const COMMIT = Buffer.concat([Buffer.from("Q"), Buffer.from([0, 0, 0, 11]), Buffer.from("COMMIT\0")])
/** A fragment of the text of the append's compare-and-set statement, sent in a Parse message. */
const CAS = Buffer.from("UPDATE session_tree_sessions")

interface Proxy {
  readonly port: number
  /** Cuts the next connection that reaches `cut`; resolves once it has done so. */
  readonly arm: (cut: Cut) => Promise<void>
  readonly close: () => Promise<void>
}

const startProxy = (target: { readonly host: string; readonly port: number }): Promise<Proxy> =>
  new Promise((resolve) => {
    let armed: { readonly cut: Cut; readonly done: () => void } | undefined
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((client) => {
      const upstream = Net.connect(target.port, target.host)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on("close", () => sockets.delete(s))
        // A dropped socket errors on the other side; that is the point here.
        s.on("error", () => {
          client.destroy()
          upstream.destroy()
        })
      }
      upstream.on("data", (chunk: Buffer) => client.write(chunk))
      upstream.on("end", () => client.end())
      client.on("end", () => upstream.end())
      client.on("data", (chunk: Buffer) => {
        const cut = armed?.cut
        const hit = cut === "in-statement" ? chunk.includes(CAS) : cut !== undefined && chunk.includes(COMMIT)
        if (!hit) {
          upstream.write(chunk)
          return
        }
        const done = armed!.done
        armed = undefined
        if (cut === "after-commit") {
          // The server gets COMMIT and then the end of the stream; the client never hears back. The cut
          // is done once the server has answered (or closed): it has then carried the COMMIT out.
          client.destroy()
          upstream.removeAllListeners("data")
          upstream.once("data", () => done())
          upstream.once("close", () => done())
          upstream.write(chunk, () => upstream.end())
        } else {
          client.destroy()
          upstream.destroy()
          done()
        }
      })
    })
    server.listen(0, "127.0.0.1", () =>
      resolve({
        port: (server.address() as Net.AddressInfo).port,
        arm: (cut) => new Promise((done) => (armed = { cut, done })),
        close: () =>
          new Promise((closed) => {
            for (const s of sockets) s.destroy()
            server.close(() => closed())
          })
      }))
  })

const direct = ManagedRuntime.make(layer("proxy"))
let proxy: Proxy
let journal: Layer.Layer<PgJournal.Services | Ids, SessionError>
beforeAll(async () => {
  const { url } = await direct.runPromise(TestDatabase)
  const target = new URL(inject("pgUrl"))
  proxy = await startProxy({ host: target.hostname, port: Number(target.port) })
  const through = new URL(url)
  through.port = String(proxy.port)
  journal = Layer.merge(
    PgJournal.layerUrl(through.toString()),
    Layer.sync(Ids, () => counterIds("p"))
  )
})
afterAll(async () => {
  await proxy?.close()
  await direct.dispose()
})

/** Entry rows of `session`, read past the proxy. */
const rowsOf = (session: string) =>
  direct.runPromise(Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ entry_id: string }>`SELECT entry_id FROM session_tree_entries WHERE session_id = ${session} ORDER BY seq`))

const results: Array<Record<string, unknown>> = []
afterAll(() => console.log(`[pg:proxy] ${JSON.stringify(results)}`))

for (const cut of ["after-commit", "before-commit", "in-statement"] as const) {
  it(`a connection cut ${cut.replace("-", " ")}: SESSION_IO, and a reload shows all of the batch or none`, async () => {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(journal)
      const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, context)
      const session = `cut-${cut}`
      const store = yield* provide(SessionStore.create(session))
      const root = yield* store.append(null, user("root", "root"))
      const armed = proxy.arm(cut)
      // Three appends started together: one batch, one transaction.
      const outcomes = yield* Effect.all(
        [1, 2, 3].map((i) => Effect.either(store.append(root.id, user(`b${i}`, `batch ${i}`)))),
        { concurrency: "unbounded" }
      )
      yield* Effect.promise(() => armed)
      const errors = outcomes.map((o) => (o._tag === "Left" ? o.left : undefined))
      expect(errors.map((e) => e?.code)).toEqual(["SESSION_IO", "SESSION_IO", "SESSION_IO"])
      const error = errors[0] as SessionError
      expect(error.message).toMatch(cut === "in-statement" ? /nothing was committed/ : /whether it committed is unknown/)
      expect(store.entries).toEqual([root])

      const rows = (yield* Effect.promise(() => rowsOf(session))).map((r) => r.entry_id)
      const batch = rows.slice(1)
      expect(rows[0]).toBe(root.id)
      // All of the batch or none of it.
      expect([0, 3]).toContain(batch.length)
      const committed = batch.length === 3
      // The server got COMMIT only when the cut came after it.
      expect(committed).toBe(cut === "after-commit")

      // The same store: it does not know what happened, so it tries from what it saw.
      const next = yield* Effect.either(store.append(root.id, user("next", "next")))
      expect(next._tag === "Left" ? next.left.code : "ok").toBe(committed ? "SESSION_REPLACED" : "ok")
      let reloaded = (yield* provide(SessionStore.read(session))).entries
      if (committed) {
        expect(reloaded.map((e) => messageOf(e)!.id)).toEqual(["root", "b1", "b2", "b3"])
        const again = yield* provide(SessionStore.load(session))
        yield* again.append(root.id, user("next", "next"))
        reloaded = (yield* provide(SessionStore.read(session))).entries
      }
      expect(reloaded.map((e) => messageOf(e)!.id)).toEqual(committed ? ["root", "b1", "b2", "b3", "next"] : ["root", "next"])
      results.push({ cut, error: error.code, message: error.reason, stored: committed ? "whole batch" : "nothing", next: next._tag === "Left" ? next.left.code : "ok" })
    })))
  })
}

it("a connection cut after the COMMIT of a create: SESSION_IO with an unknown outcome; the session is there whole, so a second create is SESSION_EXISTS", async () => {
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const context = yield* Layer.build(journal)
    const armed = proxy.arm("after-commit")
    const created = yield* Effect.either(Effect.provide(SessionStore.create("cut-create"), context))
    yield* Effect.promise(() => armed)
    expect(created._tag === "Left" && [created.left.code, /unknown/.test(created.left.message)]).toEqual(["SESSION_IO", true])
    const again = yield* Effect.either(Effect.provide(SessionStore.create("cut-create"), context))
    expect(again._tag === "Left" && again.left.code).toBe("SESSION_EXISTS")
    const loaded = yield* Effect.provide(SessionStore.read("cut-create"), context)
    expect([loaded.header.id, loaded.entries]).toEqual(["cut-create", []])
  })))
})

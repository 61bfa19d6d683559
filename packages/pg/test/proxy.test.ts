/**
 * A connection cut in the middle of a commit (SPEC C2: "when the outcome of a
 * commit is unknown … the append fails with SESSION_IO saying so, and a reload
 * shows either the whole batch or none of it"). The journal talks to the server
 * through a TCP proxy written here, which drops both sockets at one chosen
 * moment of the protocol.
 *
 * A batch without blobs is one statement, its own transaction:
 * - in the statement: the message that carries it is dropped, so the server
 *   never sees it; the caller cannot know that, so it sees SESSION_IO saying
 *   the outcome is unknown; nothing is stored; the same store's next append
 *   succeeds.
 * - after the statement: the statement reaches the server whole (up to its Sync,
 *   where it commits) and the client's socket is dropped before any answer: the
 *   server commits, the caller sees the same SESSION_IO, the same store's next
 *   append is SESSION_REPLACED and a reload shows the batch whole.
 *
 * A batch with a blob is a transaction (BEGIN, the statement, the blob, COMMIT):
 * - after COMMIT: the COMMIT message is passed on, then the client's socket is
 *   dropped: committed, SESSION_IO with an unknown outcome, next append
 *   SESSION_REPLACED, the batch whole on reload.
 * - before COMMIT: the sockets are dropped instead of passing COMMIT on. The
 *   server rolls back; the caller sees the same SESSION_IO; nothing is stored,
 *   and the same store's next append succeeds.
 * - in the statement: the statement's message is dropped inside the open
 *   transaction, which the server then rolls back: SESSION_IO saying nothing was
 *   committed; nothing is stored; the next append succeeds.
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

type Cut = "after-commit" | "before-commit" | "in-statement" | "after-statement"

/** What the client sends for `COMMIT` in the simple query protocol: 'Q', its length, the text and a NUL. */
const COMMIT = Buffer.concat([Buffer.from("Q"), Buffer.from([0, 0, 0, 11]), Buffer.from("COMMIT\0")])
/** A fragment of the text of the append's compare-and-set statement, sent in a Parse message. */
const CAS = Buffer.from("UPDATE session_tree_sessions")
/** The Sync message of the extended protocol: 'S' and its length; a statement outside a transaction commits there. */
const SYNC = Buffer.from([0x53, 0, 0, 0, 4])

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
      let draining: (() => void) | undefined
      client.on("data", (chunk: Buffer) => {
        if (draining !== undefined) {
          // After the statement: pass everything on up to its Sync, then drop the client.
          upstream.write(chunk)
          if (chunk.includes(SYNC)) draining()
          return
        }
        const cut = armed?.cut
        const hit = cut === "in-statement" || cut === "after-statement" ? chunk.includes(CAS) : cut !== undefined && chunk.includes(COMMIT)
        if (!hit) {
          upstream.write(chunk)
          return
        }
        const done = armed!.done
        armed = undefined
        if (cut === "after-statement") {
          // The statement reaches the server whole; the client never hears back. The cut is done
          // once the server has answered (or closed): it has then run and committed the statement.
          const drop = () => {
            draining = undefined
            client.destroy()
            upstream.removeAllListeners("data")
            upstream.once("data", () => done())
            upstream.once("close", () => done())
            upstream.end()
          }
          upstream.write(chunk)
          if (chunk.includes(SYNC)) drop()
          else draining = drop
        } else if (cut === "after-commit") {
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

/** A file part whose data (over 64 KiB) the store keeps as a blob: the append is then a transaction. */
const IMAGE = Uint8Array.from({ length: 70_000 }, (_, i) => (i * 7919) & 0xff)
const message = (id: string, text: string, blob: boolean) =>
  blob ? { role: "user" as const, id, content: [{ type: "text", text }, { type: "file", mediaType: "image/png", data: IMAGE }] } : user(id, text)

const cases = [
  { cut: "in-statement", blob: false, committed: false, said: /whether it committed is unknown/ },
  { cut: "after-statement", blob: false, committed: true, said: /whether it committed is unknown/ },
  { cut: "after-commit", blob: true, committed: true, said: /whether it committed is unknown/ },
  { cut: "before-commit", blob: true, committed: false, said: /whether it committed is unknown/ },
  { cut: "in-statement", blob: true, committed: false, said: /nothing was committed/ }
] as const

for (const { blob, committed, cut, said } of cases) {
  it(`a connection cut ${cut.replace("-", " ")} of ${blob ? "a transaction (a batch with a blob)" : "a one-statement append"}: SESSION_IO, and a reload shows all of the batch or none`, async () => {
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const context = yield* Layer.build(journal)
      const provide = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, context)
      const session = `cut-${cut}-${blob ? "blob" : "plain"}`
      const store = yield* provide(SessionStore.create(session))
      const root = yield* store.append(null, user("root", "root"))
      const armed = proxy.arm(cut)
      // Three appends started together: one batch, one commit.
      const outcomes = yield* Effect.all(
        [1, 2, 3].map((i) => Effect.either(store.append(root.id, message(`b${i}`, `batch ${i}`, blob)))),
        { concurrency: "unbounded" }
      )
      yield* Effect.promise(() => armed)
      const errors = outcomes.map((o) => (o._tag === "Left" ? o.left : undefined))
      expect(errors.map((e) => e?.code)).toEqual(["SESSION_IO", "SESSION_IO", "SESSION_IO"])
      const error = errors[0] as SessionError
      expect(error.message).toMatch(said)
      expect(store.entries).toEqual([root])

      const rows = (yield* Effect.promise(() => rowsOf(session))).map((r) => r.entry_id)
      const batch = rows.slice(1)
      expect(rows[0]).toBe(root.id)
      // All of the batch or none of it, as the cut decides.
      expect(batch.length).toBe(committed ? 3 : 0)

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
      results.push({ cut, blob, error: error.code, message: error.reason, stored: committed ? "whole batch" : "nothing", next: next._tag === "Left" ? next.left.code : "ok" })
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

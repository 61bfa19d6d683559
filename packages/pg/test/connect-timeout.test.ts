/**
 * A database URL's `connect_timeout` (libpq's parameter, in whole seconds) bounds the wait for a
 * connection of `PgJournal.layerUrl`, whose default is 5 seconds; one that is not a whole number of
 * seconds is SESSION_INVALID_OPTIONS, with no part of the URL (which may hold a password) in it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as NET from "node:net"
import * as PgJournal from "../src/PgJournal.js"

/** A server that takes connections and never answers: a database that does not come. */
const silent = Effect.acquireRelease(
  Effect.async<{ readonly port: number; readonly server: NET.Server }>((resume) => {
    const sockets = new Set<NET.Socket>()
    const server = NET.createServer((socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    })
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed({ port: (server.address() as NET.AddressInfo).port, server })))
    server.on("close", () => sockets.forEach((s) => s.destroy()))
  }),
  ({ server }) => Effect.async<void>((resume) => {
    server.close(() => resume(Effect.void))
    server.emit("close")
  })
)

const built = (url: string) => Effect.either(Layer.build(PgJournal.layerUrl(url)))

describe("PgJournal.layerUrl's connect_timeout", () => {
  it.live("bounds the wait for a connection by the URL's seconds, not the default 5", () =>
    Effect.gen(function*() {
      const { port } = yield* silent
      const started = performance.now()
      const result = yield* built(`postgres://u:secret@127.0.0.1:${port}/db?connect_timeout=2`)
      const waited = performance.now() - started
      expect(Either.isLeft(result) && result.left.code).toBe("SESSION_IO")
      expect(waited).toBeGreaterThanOrEqual(1_900)
      expect(waited).toBeLessThan(4_500)
    }).pipe(Effect.scoped), 20_000)

  it.live("refuses one that is not a whole number of seconds, at least 1, naming no part of the URL", () =>
    Effect.gen(function*() {
      for (const value of ["0", "-1", "1.5", "abc", "", "9999999"]) {
        const result = yield* built(`postgres://u:secret@127.0.0.1:1/db?connect_timeout=${value}`)
        expect(Either.isLeft(result) && result.left.code, value).toBe("SESSION_INVALID_OPTIONS")
        expect(Either.isLeft(result) && JSON.stringify({ ...result.left, message: result.left.message })).not.toMatch(/secret|127\.0\.0\.1/)
      }
    }).pipe(Effect.scoped))
})

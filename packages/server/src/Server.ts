/**
 * `session-tree serve` as a library: an HTTP server on `@effect/platform`'s
 * `HttpServer` and `HttpRouter` (Node's server underneath, `@effect/platform-node`)
 * that shows the sessions of the backend in context, read-only, in a browser:
 * the list, a session (its tree beside the selected path, parts loaded as they
 * are needed), search, usage, and every page following commits as they happen
 * (server-sent events fed by the backend's `SessionChanges`). See `docs/serve.md`.
 *
 * Safe by default: bound to 127.0.0.1 (and then answering requests for its own
 * address only); bound anywhere else, every request needs the random token
 * `serve` returns, compared in constant time. No request names a path (sessions
 * are found among those the catalog lists, blobs among those a session refers
 * to); every page runs only its own hashed script and asks nothing of any other
 * server; stored content is escaped, never run.
 *
 * @since 0.2.0
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import type { ServeError } from "@effect/platform/HttpServerError"
import type { Ids } from "@session-tree/core/Ids"
import type { SearchIndex } from "@session-tree/core/Search"
import { type ScanError, SessionCatalog } from "@session-tree/core/SessionCatalog"
import { SessionChanges } from "@session-tree/core/SessionChanges"
import { sessionError } from "@session-tree/core/SessionError"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as Sessions from "@session-tree/core/Sessions"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Http from "node:http"
import * as Path from "node:path"
import * as App from "./internal/app.js"
import { allowedHosts, isLoopback, newToken } from "./internal/security.js"
import * as State from "./internal/state.js"

/**
 * Where and what the server serves.
 * @since 0.2.0
 * @category models
 */
export interface Options {
  /** The address to listen on: `127.0.0.1` by default. Any other address requires a token. */
  readonly host?: string | undefined
  /** The port: 0 (the default) takes any free one. */
  readonly port?: number | undefined
  /** The directory of session files (files only; the current one by default). */
  readonly directory?: string | undefined
  /** Whether locations are files (keys are their names in the directory) or a database's IDs. */
  readonly backend: "files" | "database"
  /** What the list page says it serves (a directory, a database without its password). */
  readonly describe?: string | undefined
  /** The token to require instead of a random one (tests); ignored on a loopback address. */
  readonly token?: string | undefined
  /**
   * How many of the most recently changed sessions are laid out at start, ahead of their first
   * request: 4 by default (as many as the server keeps laid out), 0 for none.
   */
  readonly ahead?: number | undefined
}

/**
 * A running server: its address, the URL to open (with the token where one is needed), the token.
 * @since 0.2.0
 * @category models
 */
export interface Running {
  readonly host: string
  readonly port: number
  /** What to open: `http://HOST:PORT/`, and `?token=…` when the server requires one. */
  readonly url: string
  readonly token: string | undefined
}

/** A host as it goes in a URL: an IPv6 address in brackets. */
const urlHost = (host: string): string => (host.includes(":") ? `[${host}]` : host)

/**
 * Starts the server in the current scope and returns once it is listening (its first scan of the
 * sessions done); closing the scope stops it: live streams end, then the server closes with its
 * connections. Fails with SESSION_IO when the address cannot be listened on, and with the
 * catalog's error when the sessions cannot be scanned or watched.
 * @since 0.2.0
 * @category constructors
 */
export const serve = (
  options: Options
): Effect.Effect<Running, ScanError, Scope.Scope | SessionJournal | SessionCatalog | SessionChanges | SearchIndex | Ids> =>
  Effect.gen(function*() {
    const host = options.host ?? "127.0.0.1"
    const files = options.backend === "files"
    const directory = files ? Path.resolve(options.directory ?? ".") : undefined
    const catalog = yield* SessionCatalog
    const changes = yield* SessionChanges
    let sessions: Sessions.SessionsService | undefined
    const journal = yield* SessionJournal
    const state = yield* State.make({ directory, files, catalog, changes, journal, sessions: () => sessions!, basename: (location) => Path.basename(location) })
    // The server's own Sessions: its listing reads the catalog the server keeps, from memory.
    sessions = yield* Sessions.make.pipe(Effect.provideService(SessionCatalog, state.catalog))
    const loopback = isLoopback(host)
    const token = loopback ? undefined : options.token ?? newToken()
    const stopping = yield* Deferred.make<void>()
    const node = Http.createServer({ requestTimeout: 30_000, headersTimeout: 15_000, maxHeaderSize: 16 * 1024 })
    const server = yield* NodeHttpServer.make(() => node, { host, port: options.port ?? 0 }).pipe(
      Effect.mapError((error: ServeError) =>
        sessionError("SESSION_IO", `listening on ${urlHost(host)}:${options.port ?? 0} failed: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}`, { cause: error }))
    )
    const address = server.address
    const port = address._tag === "TcpAddress" ? address.port : 0
    const { app, guard, warmUp } = App.make({
      state,
      sessions,
      token,
      hosts: loopback ? allowedHosts(host, port) : undefined,
      where: files ? directory! : options.describe ?? "the database",
      directory,
      stopping
    })
    yield* server.serve(app, guard)
    // The most recently changed sessions are laid out while nobody asks yet (requests share the work).
    yield* Effect.forkScoped(warmUp(options.ahead ?? State.OPENED))
    // Runs before the server's own close: live streams end, idle connections go, so the close completes.
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(Deferred.succeed(stopping, undefined), Effect.sync(() => node.closeIdleConnections())))
    const base = `http://${urlHost(host)}:${port}/`
    return { host, port, url: token === undefined ? base : `${base}?token=${token}`, token }
  })

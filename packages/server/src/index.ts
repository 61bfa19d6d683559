/**
 * `session-tree serve` as a library: an HTTP server on `@effect/platform`'s `HttpServer` and
 * `HttpRouter` (Node's server underneath, `@effect/platform-node`) that shows the sessions of the
 * backend in context, read-only, in a browser: the list, a session (its tree beside the selected
 * path, parts loaded as they are needed), search, usage, and every page following commits as they
 * happen (server-sent events fed by the backend's `SessionChanges`).
 *
 * @since 0.2.0
 * @category modules
 */
export * as Server from "./Server.js"

/**
 * Who may ask, and what every answer says about itself (`docs/serve.md`,
 * "Safe by default").
 *
 * - Bound to a loopback address, a request must name that address (or
 *   `localhost`) and the port in its `Host` header: a page elsewhere cannot
 *   reach the server through a name of its own that resolves to 127.0.0.1 (DNS
 *   rebinding).
 * - Bound to any other address, every request must carry the server's token: in
 *   a cookie the server set, an `Authorization: Bearer` header, or `?token=` (a
 *   page asked with the token in its address is answered with a redirect to the
 *   same address without it, setting the cookie, so the token does not stay in
 *   the address bar or the history). Tokens are compared in constant time, as
 *   SHA-256 digests of equal length.
 * - Every answer forbids framing, sniffing, referrers and caching, and a page's
 *   policy allows its own hashed style and script and requests to this server only.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { CONTENT_SECURITY_POLICY } from "./client.js"

/** 32 random bytes, base64url: what a non-loopback server asks for. */
export const newToken = (): string => randomBytes(32).toString("base64url")

const digest = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest()

/** Whether `given` is `token`, in time that does not depend on where they differ. */
export const sameToken = (token: string, given: string | undefined): boolean =>
  given !== undefined && timingSafeEqual(digest(token), digest(given))

export const COOKIE = "session_tree_token"

/** The token a request carries: its cookie, its bearer header, or its `token` parameter. */
export const tokenOf = (headers: { readonly [key: string]: string | undefined }, url: URL): { readonly value: string | undefined; readonly inUrl: boolean } => {
  const fromUrl = url.searchParams.get("token")
  if (fromUrl !== null) return { value: fromUrl, inUrl: true }
  const auth = headers["authorization"]
  if (auth !== undefined && auth.startsWith("Bearer ")) return { value: auth.slice(7), inUrl: false }
  const cookie = headers["cookie"]
  if (cookie !== undefined) {
    for (const part of cookie.split(";")) {
      const eq = part.indexOf("=")
      if (eq > 0 && part.slice(0, eq).trim() === COOKIE) return { value: part.slice(eq + 1).trim(), inUrl: false }
    }
  }
  return { value: undefined, inUrl: false }
}

/** Whether `host` names a loopback address, so that no token is asked for. */
export const isLoopback = (host: string): boolean => host === "127.0.0.1" || host === "::1" || host === "localhost" || /^127\.\d+\.\d+\.\d+$/.test(host)

/** The `Host` headers a loopback server answers: its address or `localhost` (and what that names), with its port. */
export const allowedHosts = (host: string, port: number): ReadonlySet<string> => {
  const names = host === "localhost" ? ["localhost", "127.0.0.1", "[::1]"] : [host.includes(":") ? `[${host}]` : host, "localhost"]
  return new Set(names.map((name) => `${name}:${port}`))
}

/** The headers of every answer. */
export const COMMON_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "cache-control": "no-store",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), interest-cohort=()"
}

/** The headers of a page: the common ones and its policy. */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  ...COMMON_HEADERS,
  "content-security-policy": CONTENT_SECURITY_POLICY
}

/** The policy of anything that is not a page (fragments, blobs): nothing runs, nothing loads. */
export const INERT_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"

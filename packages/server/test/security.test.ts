/**
 * The token check on its own: equal tokens only, whatever their lengths, and
 * never an exception (Node's `timingSafeEqual` throws on buffers of unequal
 * lengths, which is why both sides are compared as SHA-256 digests); and the
 * token a request carries, from its address, bearer header or cookie.
 */
import { describe, expect, it } from "vitest"
import { newToken, sameToken, tokenOf } from "../src/internal/security.js"

describe("the token", () => {
  it("is 32 random bytes in base64url, new every time", () => {
    const tokens = new Set(Array.from({ length: 100 }, newToken))
    expect(tokens.size).toBe(100)
    for (const token of tokens) expect(Buffer.from(token, "base64url")).toHaveLength(32)
  })

  it("matches itself only: not a prefix, an extension, one character changed at either end, or nothing", () => {
    const token = newToken()
    expect(sameToken(token, token)).toBe(true)
    for (const other of [token.slice(0, -1), `${token}A`, `X${token.slice(1)}`, `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`, "", " ", token.toUpperCase() === token ? token.toLowerCase() : token.toUpperCase(), undefined]) {
      expect([other, sameToken(token, other)]).toEqual([other, false])
    }
  })

  it("is read from the address first, then a bearer header, then the cookie", () => {
    const url = (search: string) => new URL(`http://h/x${search}`)
    expect(tokenOf({}, url("?token=a"))).toEqual({ value: "a", inUrl: true })
    expect(tokenOf({ authorization: "Bearer b", cookie: "session_tree_token=c" }, url(""))).toEqual({ value: "b", inUrl: false })
    expect(tokenOf({ authorization: "Basic b", cookie: "x=1; session_tree_token=c ; y=2" }, url(""))).toEqual({ value: "c", inUrl: false })
    expect(tokenOf({ cookie: "session_tree_tokens=c" }, url(""))).toEqual({ value: undefined, inUrl: false })
  })
})

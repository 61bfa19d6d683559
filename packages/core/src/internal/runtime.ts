/**
 * What the core needs of its platform that plain JavaScript cannot give: whether a
 * caller's value is a Proxy, whose every inspection runs the caller's traps
 * (snapshots and options refuse one before touching it), and the platform's
 * SHA-256, faster than the core's own.
 *
 * The core imports no platform module, so that it runs wherever Effect does.
 * Node, Deno and Bun answer through `process.getBuiltinModule` (the API meant
 * for code that must not import a built-in statically), this module's one lookup;
 * elsewhere no Proxy check is available (a Proxy is read like any object, its
 * traps included) and the core hashes with its own SHA-256.
 */
type IsProxy = (value: object) => boolean

/** A built-in module of the platform, where the runtime offers the lookup. */
const builtin = (id: string): unknown => {
  const lookup = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule
  return typeof lookup === "function" ? lookup(id) : undefined
}

const detect = (): IsProxy => {
  const util = builtin("node:util") as { types?: { isProxy?: IsProxy } } | undefined
  const isProxy = util?.types?.isProxy
  return typeof isProxy === "function" ? isProxy : () => false
}

export const isProxy: IsProxy = detect()

type Hash = { update(bytes: Uint8Array): Hash; digest(encoding: "hex"): string }

/** The platform's SHA-256 as 64 lowercase hexadecimal digits, or undefined where there is none. */
export const platformSha256: ((bytes: Uint8Array) => string) | undefined = (() => {
  const crypto = builtin("node:crypto") as { createHash?: (name: string) => Hash } | undefined
  const createHash = crypto?.createHash
  return typeof createHash === "function" ? (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex") : undefined
})()

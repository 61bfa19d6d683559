/**
 * What the core needs to know about a caller's value that plain JavaScript
 * cannot tell: whether it is a Proxy, whose every inspection runs the caller's
 * traps. Snapshots and options refuse one before touching it.
 *
 * The core imports no platform module, so that it runs wherever Effect does.
 * Node, Deno and Bun answer through `process.getBuiltinModule` (the API meant
 * for code that must not import a built-in statically); elsewhere no check is
 * available and a Proxy is read like any object, its traps included.
 */
type IsProxy = (value: object) => boolean

const detect = (): IsProxy => {
  const lookup = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule
  const util = typeof lookup === "function" ? (lookup("node:util") as { types?: { isProxy?: IsProxy } } | undefined) : undefined
  const isProxy = util?.types?.isProxy
  return typeof isProxy === "function" ? isProxy : () => false
}

export const isProxy: IsProxy = detect()

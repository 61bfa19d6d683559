/**
 * Plain JSON values built by the decoders: own keys read safely, fresh copies,
 * deep freezing. Shared by the decoders of both format versions.
 */
/** An own property only: a key missing from parsed JSON must not be looked up on the prototype chain. */
export const own = (record: { readonly [key: string]: unknown }, key: string): unknown =>
  Object.prototype.hasOwnProperty.call(record, key) ? record[key] : undefined

/** Deep-freezes a value built by the decoders (plain objects and arrays only), without recursion. */
export const deepFreeze = <A>(value: A): A => {
  const stack: Array<unknown> = [value]
  while (stack.length > 0) {
    const v = stack.pop()
    if (typeof v === "object" && v !== null && !Object.isFrozen(v)) {
      Object.freeze(v)
      for (const key of Object.keys(v)) stack.push((v as Record<string, unknown>)[key])
    }
  }
  return value
}

/**
 * A fresh copy of JSON data (plain objects and arrays), without recursion, or
 * undefined when it holds a number JSON cannot write back (`1e400` parses to
 * Infinity, which `JSON.stringify` would turn into `null` on the next commit).
 * Tool-call arguments decode as `Unknown` values, which the schema passes
 * through by reference; copying them means no record shares an object with the
 * parsed line (or with an append's input). `-0` becomes `0`, as the append
 * snapshot does, since that is what a commit writes. A `__proto__` key (refused
 * earlier, on both paths) would be defined, never assigned, so it stays a key.
 */
export const copyJson = (value: object): object | undefined => {
  const fresh = (source: object): Record<string, unknown> | Array<unknown> =>
    Array.isArray(source) ? new Array<unknown>(source.length) : {}
  const root = fresh(value)
  const stack: Array<readonly [object, Record<string, unknown> | Array<unknown>]> = [[value, root]]
  while (stack.length > 0) {
    const [source, target] = stack.pop()!
    for (const key of Object.keys(source)) {
      let child: unknown = (source as Record<string, unknown>)[key]
      if (typeof child === "object" && child !== null) {
        const copy = fresh(child)
        stack.push([child, copy])
        child = copy
      } else if (typeof child === "number") {
        if (!Number.isFinite(child)) return undefined
        if (child === 0) child = 0
      }
      if (key === "__proto__") Object.defineProperty(target, key, { value: child, writable: true, enumerable: true, configurable: true })
      else (target as Record<string, unknown>)[key] = child
    }
  }
  return root
}

/** Whether `String(value)` gives a text; it throws for JSON data that holds a key `toString` or `valueOf`. */
export const hasText = (value: object): boolean => {
  try {
    String(value)
    return true
  } catch {
    return false
  }
}

/**
 * Plain JSON values built by the decoders: own keys read safely, fresh copies,
 * deep freezing. Shared by the decoders of both format versions.
 */
import { MAX_DEPTH } from "../Json.js"
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

/** What `copyJson` counted of the values it copied. */
export interface Tally {
  /** Own keys of every object copied. */
  keys: number
  /** Whether any number was copied (a zero too: `2e-324` reads as 0). */
  numbers: boolean
  /** Whether a number sits in an array, where a line's count of its keys does not see it. */
  listed: boolean
}

/** A tally with nothing counted yet. */
export const tally = (): Tally => ({ keys: 0, numbers: false, listed: false })

type Container = { [key: string]: unknown } | Array<unknown>

/**
 * A fresh, deeply frozen copy of the JSON value `value`, whose root sits at nesting depth `depth`
 * of its record, `-0` written as `0` as a commit writes it; undefined for what a commit could not
 * write back or the caller must judge on a slower path: a `__proto__` key, nesting beyond
 * MAX_DEPTH, a non-finite number (`1e400` parses to Infinity, which `JSON.stringify` would turn
 * into `null`), anything that is not JSON. Without recursion, so no nesting can overflow the
 * stack: one array holds, for each container still to fill, its source, its copy and its depth.
 * Decoded values are copied so that no record shares an object with the parsed line (or with an
 * append's input): the direct decoders copy what they accept, the Schema path what it passes
 * through by reference (tool-call arguments, results, options). `counted` tallies what was copied.
 */
export const copyJson = (value: unknown, depth = 0, counted: Tally = tally()): unknown => {
  if (typeof value !== "object" || value === null) return copyScalar(value, counted)
  if (depth > MAX_DEPTH) return undefined
  const root: Container = Array.isArray(value) ? [] : {}
  const pending: Array<unknown> = [value, root, depth]
  while (pending.length > 0) {
    const childDepth = (pending.pop() as number) + 1
    const target = pending.pop() as Container
    const source = pending.pop() as object
    if (Array.isArray(source)) {
      for (let i = 0; i < source.length; i++) {
        let child: unknown = source[i]
        if (typeof child === "object" && child !== null) {
          if (childDepth > MAX_DEPTH) return undefined
          const copy: Container = Array.isArray(child) ? [] : {}
          pending.push(child, copy, childDepth)
          child = copy
        } else {
          if (typeof child === "number") counted.listed = true
          if ((child = copyScalar(child, counted)) === undefined) return undefined
        }
        ;(target as Array<unknown>).push(child)
      }
    } else {
      for (const key in source) {
        // for-in lists inherited enumerable keys too: only own ones are JSON.
        if (!hasOwn.call(source, key) || key === "__proto__") return undefined
        counted.keys++
        let child: unknown = (source as { readonly [key: string]: unknown })[key]
        if (typeof child === "object" && child !== null) {
          if (childDepth > MAX_DEPTH) return undefined
          const copy: Container = Array.isArray(child) ? [] : {}
          pending.push(child, copy, childDepth)
          child = copy
        } else if ((child = copyScalar(child, counted)) === undefined) return undefined
        ;(target as { [key: string]: unknown })[key] = child
      }
    }
    // Its children are filled later, each frozen in turn: freezing a container does not touch them.
    Object.freeze(target)
  }
  return root
}

/**
 * `copyJson` without the copy, for a value its caller owns (what `JSON.parse` just returned, which
 * nothing else holds): the same checks, the same tally and the same answer, `value` itself deeply
 * frozen, with each `-0` below it written as `0` in place. A scalar root comes back as `copyJson`
 * gives it (`-0` as `0`), for the caller to put in place. When it answers undefined it may have
 * frozen, and written `0` over `-0` in, some of `value`, which the checks of JSON data (and
 * `copyJson`) see as they saw it before. Saves a load an object per container of every entry.
 */
export const freezeJson = (value: unknown, depth = 0, counted: Tally = tally()): unknown => {
  if (typeof value !== "object" || value === null) return copyScalar(value, counted)
  if (depth > MAX_DEPTH) return undefined
  const pending: Array<unknown> = [value, depth]
  while (pending.length > 0) {
    const childDepth = (pending.pop() as number) + 1
    const source = pending.pop() as Container
    if (Array.isArray(source)) {
      for (let i = 0; i < source.length; i++) {
        const child: unknown = source[i]
        if (typeof child === "object" && child !== null) {
          if (childDepth > MAX_DEPTH) return undefined
          pending.push(child, childDepth)
        } else {
          if (typeof child === "number") counted.listed = true
          const scalar = copyScalar(child, counted)
          if (scalar === undefined) return undefined
          // -0 === 0: the write of a zero turns -0 into 0.
          if (scalar === 0) source[i] = 0
        }
      }
    } else {
      for (const key in source) {
        if (!hasOwn.call(source, key) || key === "__proto__") return undefined
        counted.keys++
        const child: unknown = source[key]
        if (typeof child === "object" && child !== null) {
          if (childDepth > MAX_DEPTH) return undefined
          pending.push(child, childDepth)
        } else {
          const scalar = copyScalar(child, counted)
          if (scalar === undefined) return undefined
          if (scalar === 0) source[key] = 0
        }
      }
    }
    // Its children are checked later, each frozen in turn: freezing a container does not touch them.
    Object.freeze(source)
  }
  return value
}

const hasOwn = Object.prototype.hasOwnProperty

/** A JSON scalar as a commit writes it, or undefined for what is not one. */
const copyScalar = (value: unknown, counted: Tally): unknown => {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value
    case "number":
      if (!Number.isFinite(value)) return undefined
      counted.numbers = true
      return value === 0 ? 0 : value
    case "object":
      return value === null ? null : undefined
    default:
      return undefined
  }
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

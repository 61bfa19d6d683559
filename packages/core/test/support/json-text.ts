/**
 * Oracles and generators of JSON text, shared by the tests of the line parser
 * (core) and of the tail recogniser (file backend).
 */
import { FastCheck as fc } from "effect"

/** What the loader would accept syntactically: JSON.parse yields a plain object. */
export const isObjectText = (s: string): boolean => {
  try {
    const v: unknown = JSON.parse(s)
    return typeof v === "object" && v !== null && !Array.isArray(v)
  } catch {
    return false
  }
}

/** Containers of a parsed value, with their depth (the value itself is depth 1). */
export const containers = (root: unknown): Array<{ node: object; depth: number }> => {
  const out: Array<{ node: object; depth: number }> = []
  const todo: Array<{ node: unknown; depth: number }> = [{ node: root, depth: 1 }]
  while (todo.length > 0) {
    const { depth, node } = todo.pop()!
    if (typeof node !== "object" || node === null) continue
    out.push({ node, depth })
    for (const child of Object.values(node)) todo.push({ node: child, depth: depth + 1 })
  }
  return out
}
export const hasProtoKey = (v: unknown): boolean =>
  containers(v).some(({ node }) => !Array.isArray(node) && Object.hasOwn(node, "__proto__"))
export const maxDepth = (v: unknown): number => Math.max(0, ...containers(v).map((c) => c.depth))

export const WS = ["", " ", "\t", "\n", "\r", "  ", "\r\n"] as const

/**
 * JSON text of `value` with whitespace taken in turn from `ws` between tokens.
 * With `inject`, the `at`-th non-empty object (in text order) gets one of its
 * keys repeated, spelled by `spell`.
 */
export const render = (
  value: unknown,
  ws: ReadonlyArray<string>,
  inject?: { readonly at: number; readonly pick: number; readonly spell: (key: string) => string }
): { text: string; objects: number; injected: string | undefined } => {
  let w = 0
  const sp = () => (ws.length === 0 ? "" : ws[w++ % ws.length]!)
  let objects = 0
  let injected: string | undefined
  const go = (x: unknown): string => {
    if (Array.isArray(x)) return `[${sp()}${x.map(go).join(`${sp()},${sp()}`)}${sp()}]`
    if (typeof x === "object" && x !== null) {
      const keys = Object.keys(x)
      const members = keys.map((k) => `${JSON.stringify(k)}${sp()}:${sp()}${go((x as Record<string, unknown>)[k])}`)
      if (keys.length > 0) {
        if (inject !== undefined && inject.at === objects) {
          injected = keys[inject.pick % keys.length]!
          members.splice(inject.pick % (members.length + 1), 0, `${inject.spell(injected)}${sp()}:${sp()}0`)
        }
        objects++
      }
      return `{${sp()}${members.join(`${sp()},${sp()}`)}${sp()}}`
    }
    return JSON.stringify(x)
  }
  const text = `${sp()}${go(value)}${sp()}`
  return { text, objects, injected }
}

/** Key spellings that JSON.parse decodes to the same string. */
export const spellings: ReadonlyArray<(key: string) => string> = [
  (k) => JSON.stringify(k),
  (k) =>
    k.length === 0
      ? "\"\""
      : `"\\u${k.charCodeAt(0).toString(16).padStart(4, "0")}${JSON.stringify(k.slice(1)).slice(1)}`,
  (k) => `"${JSON.stringify(k).slice(1, -1).replaceAll("/", "\\/")}"`
]

/** Plain JSON objects; fc.object may hold values JSON cannot carry, so round-trip it. */
export const record: fc.Arbitrary<Record<string, unknown>> = fc.oneof(
  fc.dictionary(fc.fullUnicodeString({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 }),
  fc.object({ maxDepth: 2, maxKeys: 4 }).map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>),
  fc.jsonValue({ maxDepth: 4 }).map((v) => ({ type: "entry", id: "e-1", v }))
)
export const wsList = fc.array(fc.constantFrom(...WS), { maxLength: 5 })
export const objectText = fc.tuple(record, wsList).map(([v, ws]) => render(v, ws).text)

export const JSON_CHARS = [..."{}[]\":,.-+eE0123456789 \t\r\ntrufalsn\\/bu", "x", "\u0001", "é", "😀"]
export const jsonish = fc.array(fc.constantFrom(...JSON_CHARS), { maxLength: 30 }).map((a) => a.join(""))
export const mutation = fc.tuple(fc.constantFrom("delete", "insert", "replace", "truncate"), fc.nat(), fc.constantFrom(...JSON_CHARS))
/** Valid object texts with a few random edits: mostly near-misses of the grammar. */
export const mutated = fc.tuple(objectText, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([text, edits]) => {
  let s = text
  for (const [op, n, c] of edits) {
    const i = s.length === 0 ? 0 : n % (s.length + 1)
    if (op === "delete") s = s.slice(0, i) + s.slice(i + 1)
    else if (op === "insert") s = s.slice(0, i) + c + s.slice(i)
    else if (op === "replace") s = s.slice(0, i) + c + s.slice(i + 1)
    else s = s.slice(0, i)
  }
  return s
})
export const anyCodeUnits = fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((u) => String.fromCharCode(u)) })
export const anyText = fc.oneof(fc.string(), fc.fullUnicodeString(), anyCodeUnits, jsonish, mutated, objectText)

// ---------------------------------------------------------------------------


/**
 * `History.checkAndAdd`, the loader's step (it finds the parent once, and the
 * entry just before first), against `check` followed by `add`: the same
 * verdict (code and reason) for every entry of generated sequences, and the
 * same history afterwards; repeated IDs and unknown parents also against a
 * plain set of the IDs accepted so far. The sequences favour what the shortcut touches:
 * parents that are the entry just before, an earlier entry, unknown, or the
 * entry itself, and repeated IDs; in version 2 also compactions and labels
 * that refer to the entry before, an earlier one, an unknown one or themselves
 * (`checkAndAdd` indexes an entry's ID before it checks the entry).
 */
import { describe, expect, it } from "@effect/vitest"
import { FastCheck as fc } from "effect"
import { History } from "../src/History.js"
import type { Entry, SessionEntry } from "../src/Record.js"

const IDS = ["a", "b", "c", "d", "e", "f"]
const CALLS = ["c1", "c2", "c3"]

const step = fc.record({
  id: fc.constantFrom(...IDS),
  parent: fc.constantFrom("none", "previous", "previous", "earlier", "unknown", "self"),
  pick: fc.nat(),
  kind: fc.constantFrom("user", "assistant", "tool", "compaction", "label"),
  ref: fc.constantFrom("none", "previous", "earlier", "unknown", "self"),
  calls: fc.uniqueArray(fc.constantFrom(...CALLS), { maxLength: 2 }),
  callId: fc.constantFrom(...CALLS),
  name: fc.constantFrom("read", "bash")
})

type Step = typeof step extends fc.Arbitrary<infer A> ? A : never

/** The entry of step `i`, in `version`, after the `entries` accepted so far. */
const entryOf = (s: Step, i: number, version: 1 | 2, entries: ReadonlyArray<Entry>): Entry => {
  const refer = (how: string): string | null =>
    how === "none"
      ? null
      : how === "previous"
      ? entries.at(-1)?.id ?? null
      : how === "earlier"
      ? entries.length === 0 ? null : entries[s.pick % entries.length]!.id
      : how === "unknown"
      ? "zz"
      : s.id
  const parentId = refer(s.parent)
  const timestamp = "2026-01-02T03:04:05.006Z"
  if (version === 1) {
    const message: SessionEntry["message"] = s.kind === "user" || s.kind === "compaction" || s.kind === "label"
      ? { role: "user", id: `m${i}`, content: "" }
      : s.kind === "assistant"
      ? { role: "assistant", id: `m${i}`, content: "", toolCalls: s.calls.map((id) => ({ id, name: s.name, arguments: {} })) }
      : { role: "tool", id: `m${i}`, toolCallId: s.callId, toolName: s.name, content: "", isError: false }
    return { type: "entry", version: 1, id: s.id, parentId, timestamp, message }
  }
  const envelope = { type: "entry", version: 2, id: s.id, parentId, timestamp } as const
  switch (s.kind) {
    case "compaction":
      return { ...envelope, kind: "compaction", summary: "", firstKeptEntryId: refer(s.ref) }
    case "label":
      return { ...envelope, kind: "label", targetId: refer(s.ref) ?? "zz", label: null }
    case "user":
      return { ...envelope, kind: "message", message: { role: "user", id: `m${i}`, content: [{ type: "text", text: "" }] } }
    case "assistant":
      return {
        ...envelope,
        kind: "message",
        message: { role: "assistant", id: `m${i}`, content: s.calls.map((id) => ({ type: "tool-call", id, name: s.name, arguments: {} })) }
      }
    default:
      return { ...envelope, kind: "message", message: { role: "tool", id: `m${i}`, toolCallId: s.callId, toolName: s.name, isError: false, content: [] } }
  }
}

describe("History.checkAndAdd", () => {
  it("gives the verdict of check, then add, for every entry", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 24 }), fc.constantFrom(1 as const, 2 as const), (steps, version) => {
        const one = new History()
        const two = new History()
        for (const [i, s] of steps.entries()) {
          const entry = entryOf(s, i, version, one.entries)
          const parentId = entry.parentId
          // Independently of History: a repeated ID first, then a parent that is not an earlier entry.
          const earlier = new Set(one.entries.map((e) => e.id))
          const idCode = earlier.has(s.id)
            ? "SESSION_DUPLICATE_ID"
            : parentId !== null && !earlier.has(parentId)
            ? "SESSION_UNKNOWN_PARENT"
            : undefined
          const expected = one.check(entry, i + 2)
          if (idCode !== undefined) expect(expected?.code).toBe(idCode)
          else expect(["SESSION_DUPLICATE_ID", "SESSION_UNKNOWN_PARENT"]).not.toContain(expected?.code)
          if (expected === undefined) one.add(entry)
          const got = two.checkAndAdd(entry, i + 2)
          expect(got === undefined ? undefined : [got.code, got.reason, got.line]).toEqual(
            expected === undefined ? undefined : [expected.code, expected.reason, expected.line]
          )
          expect(two.entries).toEqual(one.entries)
          expect(two.size).toBe(one.size)
          // A refused entry leaves no trace: its ID is not indexed, whatever refused it.
          for (const id of [...IDS, "zz"]) {
            expect(two.get(id)).toBe(one.get(id))
            expect(two.has(id)).toBe(one.has(id))
          }
        }
      }),
      { numRuns: 4_000 }
    )
  })
})

describe("History.truncate", () => {
  // A call ID held by one entry is stored as a number, by several (on different branches) as an
  // array; truncating must give back exactly the history of the entries kept.
  it("gives a history that judges every next entry as one rebuilt from the entries kept", () => {
    const entryOf = (i: number, parentId: string | null, kind: string, call: string, calls: ReadonlyArray<string>): SessionEntry => ({
      type: "entry",
      version: 1,
      id: `e${i}`,
      parentId,
      timestamp: "2026-01-02T03:04:05.006Z",
      message: kind === "user"
        ? { role: "user", id: `m${i}`, content: "" }
        : kind === "assistant"
        ? { role: "assistant", id: `m${i}`, content: "", toolCalls: calls.map((id) => ({ id, name: "read", arguments: {} })) }
        : { role: "tool", id: `m${i}`, toolCallId: call, toolName: "read", content: "", isError: false }
    })
    const probes = (history: History): Array<SessionEntry> =>
      [null, ...history.entries.map((e) => e.id)].flatMap((parentId) =>
        CALLS.flatMap((call) => [
          entryOf(99, parentId, "tool", call, []),
          entryOf(99, parentId, "assistant", call, [call])
        ])
      )
    const verdicts = (history: History) =>
      probes(history).map((p) => {
        const e = history.check(p)
        return e === undefined ? "ok" : `${e.code} ${e.reason}`
      })
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), fc.nat(), fc.array(step, { maxLength: 8 }), (steps, cutPick, after) => {
        const full = new History()
        const grow = (histories: ReadonlyArray<History>, more: ReadonlyArray<typeof steps[number]>, from: number) => {
          for (const [j, s] of more.entries()) {
            const h = histories[0]!
            const parentId = h.size === 0 || s.parent === "none" ? null : h.entries[s.pick % h.size]!.id
            const entry = entryOf(from + j, parentId, s.kind, s.callId, s.calls)
            const verdict = h.check(entry)
            for (const other of histories) expect(other.check(entry)?.reason).toBe(verdict?.reason)
            if (verdict === undefined) for (const other of histories) other.add(entry)
          }
        }
        grow([full], steps, 0)
        const cut = cutPick % (full.size + 1)
        const kept = full.entries.slice(0, cut)
        const rebuilt = new History()
        for (const e of kept) rebuilt.add(e)
        full.truncate(cut)
        expect(full.entries).toEqual(kept)
        expect(verdicts(full)).toEqual(verdicts(rebuilt))
        // Entries added after the cut take the indexes of those removed.
        grow([rebuilt, full], after, 50)
        expect(verdicts(full)).toEqual(verdicts(rebuilt))
      }),
      { numRuns: 1_500 }
    )
  })
})

/**
 * Conversation on generated branches: system, user and assistant messages,
 * tool answers that come at once or after later messages (or never), labels,
 * model changes, usage, and compactions whose kept entry is anywhere before
 * them (inside a group too, or null). Checked against what the entries alone
 * say: no group and no built context separates a call from any of its
 * answers; the kept messages are a suffix of complete groups; a budget is met
 * whenever it can be, by dropping no more than needed; the newest compaction
 * is honoured; and a compaction at `compactionPoint` builds exactly the point's
 * summary and kept messages.
 */
import { describe, expect, it } from "@effect/vitest"
import * as FastCheck from "effect/FastCheck"
import * as Option from "effect/Option"
import * as Conversation from "../src/Conversation.js"
import type * as RecordV2 from "../src/RecordV2.js"
import { assistant, type Body, branch, compaction, label, system, tool, user } from "./support/branch.js"

const step = FastCheck.record({
  kind: FastCheck.constantFrom(
    "system",
    "user",
    "user",
    "assistant",
    "assistant",
    "answer",
    "answer",
    "answer",
    "label",
    "model",
    "compaction"
  ),
  calls: FastCheck.nat({ max: 3 }),
  pick: FastCheck.nat(),
  size: FastCheck.nat({ max: 200 }),
  usage: FastCheck.option(FastCheck.nat({ max: 2_000 }), { nil: undefined }),
  keepNothing: FastCheck.boolean()
})

/** A valid branch from the steps: an answer picks a pending call, a compaction keeps any earlier entry. */
const toBranch = (steps: ReadonlyArray<typeof step extends FastCheck.Arbitrary<infer A> ? A : never>) => {
  const bodies: Array<Body> = []
  const pending: Array<string> = []
  let calls = 0
  for (const [i, s] of steps.entries()) {
    const id = `m${i + 1}`
    const text = "x".repeat(s.size)
    switch (s.kind) {
      case "system":
        bodies.push(system(id, text))
        break
      case "user":
        bodies.push(user(id, text))
        break
      case "assistant": {
        const made = Array.from({ length: s.calls }, () => `c${++calls}`)
        pending.push(...made)
        bodies.push(assistant(id, made, s.usage === undefined ? undefined : { usage: { inputTokens: s.usage, outputTokens: 5 } }, text))
        break
      }
      case "answer": {
        if (pending.length === 0) break
        const [call] = pending.splice(s.pick % pending.length, 1)
        bodies.push(tool(id, call!, text))
        break
      }
      case "label":
        if (bodies.length > 0) bodies.push(label(entryId(bodies, s.pick % bodies.length), "mark"))
        break
      case "model":
        bodies.push({ kind: "model", provider: "p", model: `model-${i}` })
        break
      case "compaction":
        if (bodies.length === 0) break
        bodies.push(compaction(`summary ${i}`, s.keepNothing ? null : entryId(bodies, s.pick % bodies.length)))
        break
    }
  }
  return branch(bodies)
}

const entryId = (bodies: ReadonlyArray<Body>, i: number): string => {
  const body = bodies[i]!
  return body.kind === "message" ? body.message.id : `e${i + 1}`
}

const steps = FastCheck.array(step, { maxLength: 40 })
const branches = steps.map(toBranch)

/** For every call ID, the IDs of the messages that make it or answer it, from the entries alone. */
const links = (entries: ReadonlyArray<RecordV2.SessionEntry>): Map<string, Array<string>> => {
  const byCall = new Map<string, Array<string>>()
  for (const entry of entries) {
    if (entry.kind !== "message") continue
    const message = entry.message
    const calls = message.role === "assistant"
      ? message.content.flatMap((part) => part.type === "tool-call" ? [part.id] : [])
      : message.role === "tool"
      ? [message.toolCallId]
      : []
    for (const call of calls) byCall.set(call, [...(byCall.get(call) ?? []), message.id])
  }
  return byCall
}

/** Whether a set of message IDs holds, for every call, all of its linked messages or none. */
const linksWhole = (entries: ReadonlyArray<RecordV2.SessionEntry>, held: ReadonlySet<string>): boolean =>
  [...links(entries).values()].every((ids) => ids.every((id) => held.has(id)) || ids.every((id) => !held.has(id)))

const messagesOf = (entries: ReadonlyArray<RecordV2.SessionEntry>) =>
  entries.flatMap((entry) => entry.kind === "message" ? [entry.message] : [])

/** The opening system messages, the summary (if any) and the rest of a built context. */
const parts = (entries: ReadonlyArray<RecordV2.SessionEntry>, built: ReadonlyArray<RecordV2.Message>) => {
  const messages = messagesOf(entries)
  let leading = 0
  while (leading < messages.length && messages[leading]!.role === "system") leading++
  const compactions = entries.filter((e): e is RecordV2.CompactionEntry => e.kind === "compaction")
  const newest = compactions.at(-1)
  const head = built.slice(0, leading + (newest === undefined ? 0 : 1))
  return { leading: messages.slice(0, leading), newest, head, rest: built.slice(head.length) }
}

/** The position of the first group of `groups` whose concatenation from there is `rest`, or -1. */
const suffixAt = (groups: ReadonlyArray<Conversation.Group>, rest: ReadonlyArray<RecordV2.Message>): number => {
  for (let g = groups.length; g >= 0; g--) {
    const tail = groups.slice(g).flatMap((group) => group.messages)
    if (tail.length === rest.length && tail.every((m, i) => m === rest[i])) return g
  }
  return -1
}

describe("Conversation on generated branches", () => {
  it("splits the messages into complete groups, in order, never separating a call from an answer", () => {
    FastCheck.assert(
      FastCheck.property(branches, (entries) => {
        const groups = Conversation.groups(entries)
        expect(groups.flatMap((g) => g.messages)).toEqual(messagesOf(entries))
        for (const group of groups) {
          expect(group.messages[0]!.role).toBe(group.role)
          expect(group.entries.map((e) => e.message)).toEqual(group.messages)
          // A group stands alone when the set of its message IDs keeps every link whole.
          expect(linksWhole(entries, new Set(group.messages.map((m) => m.id)))).toBe(true)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("builds the opening system messages, the newest summary, and a suffix of complete groups that honours the compaction", () => {
    FastCheck.assert(
      FastCheck.property(branches, (entries) => {
        const built = Conversation.build(entries)
        const { head, leading, newest, rest } = parts(entries, built)
        expect(head.slice(0, leading.length)).toEqual(leading)
        if (newest !== undefined) expect(head.at(-1)).toEqual(Conversation.summaryMessage(newest))
        const groups = Conversation.groups(entries).slice(leading.length)
        const at = suffixAt(groups, rest)
        expect(at).toBeGreaterThanOrEqual(0)
        expect(linksWhole(entries, new Set(rest.map((m) => m.id)))).toBe(true)
        const position = new Map(entries.map((e, i) => [e.id, i]))
        if (newest === undefined) {
          expect(at).toBe(0)
        } else {
          // Everything from the cut on is kept, and the first kept group reaches the cut.
          const compactedAt = position.get(newest.id)!
          const kept = newest.firstKeptEntryId === null ? undefined : position.get(newest.firstKeptEntryId)
          const cut = kept !== undefined && kept < compactedAt ? kept : compactedAt + 1
          const after = new Set(rest.map((m) => m.id))
          for (const group of groups) {
            for (const entry of group.entries) if (position.get(entry.id)! >= cut) expect(after.has(entry.id)).toBe(true)
          }
          if (rest.length > 0) expect(position.get(groups[at]!.entries.at(-1)!.id)!).toBeGreaterThanOrEqual(cut)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("opens a budgeted context on a user message, meets the budget whenever the newest turn allows it, and drops no more than needed", () => {
    const estimates: ReadonlyArray<[string, Conversation.Estimate | undefined]> = [
      ["default", undefined],
      ["approximate", (messages) => messages.reduce((n, m) => n + Conversation.approximateTokens(m), 0)],
      ["count", (messages) => messages.length * 7]
    ]
    FastCheck.assert(
      FastCheck.property(steps, FastCheck.nat({ max: 400 }), FastCheck.nat({ max: 2 }), (generated, budget, which) => {
        const [name, estimate] = estimates[which]!
        // Without usage, the default estimate is the approximate sum, which the check can recompute.
        const measure = estimate ?? estimates[1]![1]!
        const entries = toBranch(name === "default" ? generated.map((s) => ({ ...s, usage: undefined })) : generated)
        const full = Conversation.build(entries)
        const built = Conversation.build(entries, { budget, estimate })
        const { head, leading, newest, rest } = parts(entries, built)
        const whole = parts(entries, full)
        expect(head).toEqual(whole.head)
        const groups = Conversation.groups(entries).slice(leading.length)
        const from = suffixAt(groups, whole.rest)
        const at = suffixAt(groups, rest)
        expect(at).toBeGreaterThanOrEqual(from)
        expect(linksWhole(entries, new Set(rest.map((m) => m.id)))).toBe(true)
        // Where a budget may cut: before a user message, or at the first kept group after a summary.
        const cuts: Array<number> = []
        for (let g = from; g < groups.length; g++) {
          if (groups[g]!.role === "user" || (g === from && newest !== undefined)) cuts.push(g)
        }
        if (cuts.length === 0) {
          expect(at).toBe(from)
          return
        }
        expect(cuts).toContain(at)
        // The context opens (after the system messages) on a user message: the summary or the first kept group.
        expect(head.length > leading.length || rest[0]?.role === "user").toBe(true)
        if (measure(built) > budget) expect(at).toBe(cuts.at(-1))
        const previous = cuts.indexOf(at) - 1
        if (previous >= 0) {
          const oneMore = [...head, ...groups.slice(cuts[previous]).flatMap((g) => g.messages)]
          expect(measure(oneMore)).toBeGreaterThan(budget)
        }
      }),
      { numRuns: 400 }
    )
  })

  it("places a compaction where it keeps complete groups within the allowance, and such a compaction builds the point", () => {
    FastCheck.assert(
      FastCheck.property(branches, FastCheck.nat({ max: 300 }), (entries, keep) => {
        const point = Conversation.compactionPoint(entries, keep)
        const before = parts(entries, Conversation.build(entries))
        const groups = Conversation.groups(entries).slice(before.leading.length)
        if (Option.isNone(point)) {
          expect(before.rest.reduce((n, m) => n + Conversation.approximateTokens(m), 0)).toBeLessThanOrEqual(keep)
          return
        }
        const { firstKeptEntryId, kept, summarised } = point.value
        expect([...summarised, ...kept]).toEqual(before.head.slice(before.leading.length).concat(before.rest))
        expect(kept.reduce((n, m) => n + Conversation.approximateTokens(m), 0)).toBeLessThanOrEqual(keep)
        expect(summarised.length).toBeGreaterThan(0)
        const at = suffixAt(groups, kept)
        expect(at).toBeGreaterThanOrEqual(0)
        if (firstKeptEntryId === null) expect(kept).toEqual([])
        else expect(groups[at]!.entries[0]!.id).toBe(firstKeptEntryId)
        const withOneMore = groups.slice(at - 1).flatMap((g) => g.messages)
        if (suffixAt(groups, before.rest) < at) {
          expect(withOneMore.reduce((n, m) => n + Conversation.approximateTokens(m), 0)).toBeGreaterThan(keep)
        }
        // Appended at the leaf, the compaction gives its summary followed by exactly the kept messages.
        const bodies = entries.map((entry): Body => {
          const { id: _id, parentId: _parentId, timestamp: _timestamp, type: _type, version: _version, ...body } = entry
          return body as Body
        })
        const compacted = branch([...bodies, compaction("new", firstKeptEntryId)])
        const after = parts(compacted, Conversation.build(compacted))
        expect(after.head.at(-1)).toEqual(Conversation.summaryMessage(after.newest!))
        expect(after.rest).toEqual(kept)
      }),
      { numRuns: 300 }
    )
  })
})

/**
 * Conversation on hand-made branches: the groups (an answer that comes after a
 * later user message stretches its group), the summary that stands for a
 * compaction, a kept entry inside a group, the budget with the default
 * estimate anchored on usage and with a caller's estimate, the model in
 * effect, and where a compaction may start.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Option from "effect/Option"
import * as Conversation from "../src/Conversation.js"
import type * as RecordV2 from "../src/RecordV2.js"
import { assistant, branch, compaction, ids, label, system, tool, user } from "./support/branch.js"

const groupIds = (groups: ReadonlyArray<Conversation.Group>) => groups.map((g) => ids(g.messages))

describe("Conversation.groups", () => {
  it("keeps system and user messages alone and an assistant with the answers to its calls", () => {
    const entries = branch([
      system("s"),
      user("u1"),
      assistant("a1", ["c1", "c2"]),
      tool("t1", "c1"),
      label("a1", "look"),
      tool("t2", "c2"),
      assistant("a2"),
      user("u2")
    ])
    const groups = Conversation.groups(entries)
    expect(groupIds(groups)).toEqual([["s"], ["u1"], ["a1", "t1", "t2"], ["a2"], ["u2"]])
    expect(groups.map((g) => g.role)).toEqual(["system", "user", "assistant", "assistant", "user"])
    expect(groups[2]!.entries.map((e) => e.id)).toEqual(["a1", "t1", "t2"])
  })

  it("stretches a group to an answer that comes after a later message, and the messages in between with it", () => {
    const entries = branch([
      user("u1"),
      assistant("a1", ["c1"]),
      user("u2"),
      assistant("a2", ["c2"]),
      tool("t1", "c1"),
      tool("t2", "c2"),
      user("u3")
    ])
    expect(groupIds(Conversation.groups(entries))).toEqual([["u1"], ["a1", "u2", "a2", "t1", "t2"], ["u3"]])
  })

  it("leaves an unanswered call in its assistant's group and a tool message without its call alone", () => {
    const entries = branch([user("u1"), assistant("a1", ["c1"]), user("u2"), tool("t9", "c9")])
    expect(groupIds(Conversation.groups(entries))).toEqual([["u1"], ["a1"], ["u2"], ["t9"]])
  })
})

describe("Conversation.build", () => {
  const conversation = [
    system("s"),
    user("u1"),
    assistant("a1", ["c1"]),
    tool("t1", "c1"),
    assistant("a2"),
    user("u2"),
    assistant("a3")
  ]

  it("gives every message of the branch when there is no compaction and no budget", () => {
    const entries = branch([...conversation, label("u2", "here")])
    expect(Conversation.build(entries)).toEqual(entries.flatMap((e) => e.kind === "message" ? [e.message] : []))
  })

  it("replaces what precedes the newest compaction's kept entry by its summary, after the opening system message", () => {
    const entries = branch([...conversation, compaction("old", "a1"), user("u3"), compaction("we read c1", "u2"), user("u4")])
    const built = Conversation.build(entries)
    expect(ids(built)).toEqual(["s", "e10", "u2", "a3", "u3", "u4"])
    const summary = built[1]!
    expect(Conversation.isSummary(summary)).toBe(true)
    expect(summary).toEqual({
      role: "user",
      id: "e10",
      content: [{ type: "text", text: `${Conversation.SUMMARY_PREFIX}we read c1${Conversation.SUMMARY_SUFFIX}` }]
    })
    expect(built.filter(Conversation.isSummary)).toHaveLength(1)
  })

  it("keeps the whole group of a kept entry inside it, so that no answer loses its call", () => {
    const entries = branch([...conversation, compaction("summary", "t1")])
    expect(ids(Conversation.build(entries))).toEqual(["s", "e8", "a1", "t1", "a2", "u2", "a3"])
  })

  it("keeps only what follows a compaction that keeps nothing, except the group of a call answered after it", () => {
    expect(ids(Conversation.build(branch([...conversation, compaction("all", null), user("u3")])))).toEqual(["s", "e8", "u3"])
    const pending = branch([user("u1"), assistant("a1", ["c1"]), compaction("all", null), tool("t1", "c1")])
    expect(ids(Conversation.build(pending))).toEqual(["e3", "a1", "t1"])
  })

  it("drops the oldest groups until the rest fits, measured from the newest usage onwards", () => {
    const usage = (inputTokens: number): RecordV2.Meta => ({ usage: { inputTokens, outputTokens: 10 } })
    const entries = branch([
      system("s", "x".repeat(40)),
      user("u1", "x".repeat(400)),
      assistant("a1", [], usage(200), "x".repeat(40)),
      user("u2", "x".repeat(400)),
      assistant("a2", [], usage(330), "x".repeat(40)),
      user("u3", "x".repeat(40))
    ])
    // The whole: a2's 340 tokens plus u3's 10; each dropped group's approximate tokens come off that.
    expect(Conversation.estimate(Conversation.build(entries))).toBe(350)
    expect(ids(Conversation.build(entries, { budget: 350 }))).toEqual(["s", "u1", "a1", "u2", "a2", "u3"])
    // A cut falls only before a user message: dropping u1 drops its answer a1 with it.
    expect(ids(Conversation.build(entries, { budget: 349 }))).toEqual(["s", "u2", "a2", "u3"])
    expect(ids(Conversation.build(entries, { budget: 240 }))).toEqual(["s", "u2", "a2", "u3"])
    expect(ids(Conversation.build(entries, { budget: 239 }))).toEqual(["s", "u3"])
    expect(ids(Conversation.build(entries, { budget: 1 }))).toEqual(["s", "u3"])
  })

  it("asks a caller's estimate about the candidates and never drops the summary", () => {
    const entries = branch([...conversation, compaction("sum", "u1"), user("u3")])
    const count: Conversation.Estimate = (messages) => messages.length
    expect(ids(Conversation.build(entries, { budget: 9, estimate: count }))).toEqual(["s", "e8", "u1", "a1", "t1", "a2", "u2", "a3", "u3"])
    expect(ids(Conversation.build(entries, { budget: 8, estimate: count }))).toEqual(["s", "e8", "u2", "a3", "u3"])
    expect(ids(Conversation.build(entries, { budget: 0, estimate: count }))).toEqual(["s", "e8", "u3"])
  })

  it("never opens a budgeted context on an answer whose question was dropped, and never splits a turn's tool group", () => {
    // A turn of tool calls: the question, two steps of calls and results, the answer; then a second question.
    const turn = branch([
      system("s"),
      user("u1", "x".repeat(400)),
      assistant("a1", ["c1"], undefined, "x".repeat(400)),
      tool("t1", "c1", "x".repeat(400)),
      assistant("a2", ["c2"], undefined, "x".repeat(400)),
      tool("t2", "c2", "x".repeat(400)),
      assistant("a3", [], undefined, "x".repeat(40)),
      user("u2", "x".repeat(40))
    ])
    const all = ["s", "u1", "a1", "t1", "a2", "t2", "a3", "u2"]
    expect(ids(Conversation.build(turn, { budget: 534 }))).toEqual(all)
    // Every budget below the whole drops the first turn whole, never only its question or its first steps.
    for (const budget of [533, 400, 200, 30, 0]) expect(ids(Conversation.build(turn, { budget }))).toEqual(["s", "u2"])
    const count: Conversation.Estimate = (messages) => messages.length
    for (const budget of [7, 3, 0]) expect(ids(Conversation.build(turn, { budget, estimate: count }))).toEqual(["s", "u2"])
    // A branch that opens on an answer (an imported one) opens on its first question once budgeted.
    const answerFirst = branch([assistant("a0"), user("u1"), assistant("a1")])
    expect(ids(Conversation.build(answerFirst))).toEqual(["a0", "u1", "a1"])
    expect(ids(Conversation.build(answerFirst, { budget: 10_000 }))).toEqual(["u1", "a1"])
    // Without any question to open on, nothing is dropped.
    const noQuestion = branch([system("s"), assistant("a0", [], undefined, "x".repeat(400)), assistant("a1")])
    expect(ids(Conversation.build(noQuestion, { budget: 1 }))).toEqual(["s", "a0", "a1"])
  })
})

describe("Conversation.model", () => {
  it("is the newest model entry, else the newest assistant meta naming a model, else none", () => {
    expect(Conversation.model(branch([user("u1"), assistant("a1", [], { stopReason: "stop" })]))).toEqual(Option.none())
    const metas = branch([
      assistant("a1", [], { provider: "openai", model: "gpt" }),
      assistant("a2", [], { model: "claude" }),
      assistant("a3", [], { stopReason: "stop" })
    ])
    expect(Conversation.model(metas)).toEqual(Option.some({ model: "claude" }))
    const entries = branch([
      { kind: "model", provider: "anthropic", model: "opus", thinking: "high" },
      assistant("a1", [], { provider: "openai", model: "gpt" })
    ])
    expect(Conversation.model(entries)).toEqual(Option.some({ provider: "anthropic", model: "opus", thinking: "high" }))
  })
})

describe("Conversation.compactionPoint", () => {
  const bodies = [
    system("s"),
    user("u1", "x".repeat(40)),
    assistant("a1", ["c1"], undefined, "x".repeat(40)),
    tool("t1", "c1", "x".repeat(40)),
    user("u2", "x".repeat(40)),
    assistant("a2", [], undefined, "x".repeat(40))
  ]
  const entries = branch(bodies)
  const cost = (id: string) => {
    const entry = entries.find((e) => e.id === id)
    return entry?.kind === "message" ? Conversation.approximateTokens(entry.message) : Number.NaN
  }

  it("starts at the oldest complete group from which the rest fits", () => {
    const tail = cost("u2") + cost("a2")
    const point = Option.getOrThrow(Conversation.compactionPoint(entries, tail + cost("t1")))
    expect(point.firstKeptEntryId).toBe("u2")
    expect(ids(point.summarised)).toEqual(["u1", "a1", "t1"])
    expect(ids(point.kept)).toEqual(["u2", "a2"])
    expect(Option.getOrThrow(Conversation.compactionPoint(entries, 0)).firstKeptEntryId).toBe(null)
    expect(Conversation.compactionPoint(entries, 10_000)).toEqual(Option.none())
  })

  it("summarises the current summary with what follows it, and a compaction there is honoured", () => {
    const compacted = [...bodies, compaction("first", "a1"), user("u3")]
    const point = Option.getOrThrow(Conversation.compactionPoint(branch(compacted), cost("u2") + cost("a2") + 10))
    expect(ids(point.summarised)).toEqual(["e7", "a1", "t1"])
    expect(point.firstKeptEntryId).toBe("u2")
    expect(ids(point.kept)).toEqual(["u2", "a2", "u3"])
    const next = branch([...compacted, compaction("second", point.firstKeptEntryId)])
    expect(ids(Conversation.build(next))).toEqual(["s", "e9", "u2", "a2", "u3"])
  })
})

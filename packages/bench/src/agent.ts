/**
 * The agent's costs (`@session-tree/ai`), as ratios measured in one run:
 *
 * 1. One agent step on a 10,000-entry session, sent and streamed, against the
 *    same step with no persistence (suites/agent-step.ts).
 * 2. `Conversation.build` of a 100,000-entry branch, against one pass over the
 *    entries that collects their messages.
 *
 *   npx tsx --conditions=@session-tree/source packages/bench/src/agent.ts [--rounds N] [--entries N] [--build-rounds N]
 */
import * as Conversation from "@session-tree/core/Conversation"
import type * as RecordV2 from "@session-tree/core/RecordV2"
import { arg } from "./args.js"
import { loadAverage, machine, rounds, summarize, table, tempDir } from "./harness.js"
import { benchAgentStep } from "./suites/agent-step.js"

const BRANCH = 100_000
const TEXT = "The quick brown fox jumps over the lazy dog. ".repeat(5)

const message = (i: number): RecordV2.Message =>
  i % 2 === 0
    ? { role: "user", id: `m${i}`, content: [{ type: "text", text: `${i}: ${TEXT}` }] }
    : { role: "assistant", id: `m${i}`, content: [{ type: "text", text: `${i}: ${TEXT}` }] }

const stepRows = async (count: number, entries: number) => {
  const temp = tempDir()
  try {
    return await benchAgentStep({ rounds: count, warmup: 5, entries }, temp.dir)
  } finally {
    temp.remove()
  }
}

const buildRows = async (count: number) => {
  const entries: Array<RecordV2.SessionEntry> = []
  const timestamp = "2026-01-02T03:04:05.006Z"
  for (let i = 0; i < BRANCH; i++) {
    const m: RecordV2.Message = i % 4 === 1
      ? { role: "assistant", id: `m${i}`, content: [{ type: "tool-call", id: `c${i}`, name: "read", arguments: { i } }] }
      : i % 4 === 2
      ? { role: "tool", id: `m${i}`, toolCallId: `c${i - 1}`, toolName: "read", isError: false, content: [{ type: "text", text: TEXT }] }
      : message(i)
    entries.push({ type: "entry", version: 2, id: `e${i}`, parentId: i === 0 ? null : `e${i - 1}`, timestamp, kind: "message", message: m })
  }
  let sink = 0
  const samples = await rounds([
    { name: "Conversation.build", run: () => void (sink += Conversation.build(entries).length) },
    { name: "Conversation.build, budget 50,000 tokens", run: () => void (sink += Conversation.build(entries, { budget: 50_000 }).length) },
    {
      name: "one pass collecting the messages",
      run: () => {
        const out: Array<RecordV2.Message> = []
        for (const entry of entries) if (entry.kind === "message") out.push(entry.message)
        sink += out.length
      }
    }
  ], { rounds: count, warmup: 3 })
  if (sink === 0) throw new Error("nothing built")
  return summarize(`context of a ${BRANCH.toLocaleString("en")}-entry branch`, samples, "one pass collecting the messages")
}

console.log(machine())
console.log(`load average before: ${loadAverage()}\n`)
console.log(table("The agent step (ratio to the same step with no persistence)", await stepRows(arg("rounds", 30), arg("entries", 10_000))))
console.log(table("Conversation.build (ratio to one pass over the entries)", await buildRows(arg("build-rounds", 15))))
console.log(`load average after: ${loadAverage()}`)

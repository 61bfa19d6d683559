/**
 * The agent loop on a memory session with a scripted model, deterministic IDs
 * and the TestClock: a turn with a tool call commits each step as one chain and
 * sends reasoning back with its signature; a failing model, a failing tool, an
 * interruption and the step limit leave the session at its last committed
 * entry and `send` continues; `regenerate` and `edit` branch; `compact`
 * appends a compaction whose summary opens the next prompt.
 */
import { describe, expect, it } from "@effect/vitest"
import { Conversation, Ids, MemoryJournal, type Record, type RecordV2, SessionStore, SessionTree } from "@session-tree/core"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import { Agent } from "../src/index.js"
import {
  type Answer,
  callTool,
  finish,
  handlers,
  modelFailure,
  scripted,
  shape,
  SIGNATURE,
  text,
  tools
} from "./support/scripted.js"

const FILES = { "/project": ["README.md", "src/"] }

/** A version-2 memory session with its tree, the scripted model and the toolkit's handlers. */
const setup = (answers: ReadonlyArray<Answer>) => {
  const script = scripted(answers)
  const session = SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerCreate("s")),
    Layer.provide(MemoryJournal.layer),
    Layer.provideMerge(Ids.layerDeterministic),
    Layer.orDie
  )
  return { script, layer: Layer.mergeAll(session, script.layer, handlers(FILES)) }
}

const messageOf = (entry: Record.Entry): RecordV2.Message => (entry as RecordV2.MessageEntry).message
const roles = (entries: ReadonlyArray<Record.Entry>) => entries.map((entry) => messageOf(entry).role)

const toolTurn: ReadonlyArray<Answer> = [
  [
    { type: "reasoning", text: "I should look at the directory.", metadata: SIGNATURE },
    callTool("call-1", "list_dir", { path: "/project" }),
    { type: "finish", reason: "tool-calls", usage: { inputTokens: 20, outputTokens: 8, totalTokens: 28 } }
  ],
  text("It holds README.md and src/.")
]

describe("Agent.send", () => {
  it.effect("commits the user message, then each step as one chain, and sends the signature back", () => {
    const { layer, script } = setup([...toolTurn, text("You are welcome.")])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ system: "Be brief.", toolkit: tools })
      const entries = yield* agent.send("What is in /project?")
      expect(roles(entries)).toEqual(["system", "user", "assistant", "tool", "assistant"])
      expect(tree.entries.map((entry) => entry.id)).toEqual(entries.map((entry) => entry.id))
      expect(tree.activeLeafId).toBe(entries[4]!.id)
      const tool = messageOf(entries[3]!) as RecordV2.ToolMessage
      expect(tool).toMatchObject({ toolCallId: "call-1", toolName: "list_dir", isError: false, result: ["README.md", "src/"] })
      expect(messageOf(entries[2]!).content).toContainEqual({
        type: "reasoning",
        text: "I should look at the directory.",
        options: SIGNATURE
      })
      // The second step's prompt holds the first step's answer, reasoning signature included.
      expect(shape(script.prompts[1]!)).toEqual([
        { role: "system", parts: [{ type: "text", text: "Be brief." }] },
        { role: "user", parts: [{ type: "text", text: "What is in /project?" }] },
        {
          role: "assistant",
          parts: [
            { type: "reasoning", text: "I should look at the directory.", anthropic: SIGNATURE.anthropic },
            { type: "tool-call" }
          ]
        },
        { role: "tool", parts: [{ type: "tool-result" }] }
      ])
      // A second turn: the system message is not repeated.
      const next = yield* agent.send([{ type: "text", text: "Thanks." }])
      expect(roles(next)).toEqual(["user", "assistant"])
      expect(shape(script.prompts[2]!).map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"])
      expect(shape(script.prompts[2]!)[2]!.parts[0]).toEqual({
        type: "reasoning",
        text: "I should look at the directory.",
        anthropic: SIGNATURE.anthropic
      })
    }).pipe(Effect.provide(layer))
  })

  it.effect("a failing model call leaves the session at its last committed step; send continues", () => {
    const { layer, script } = setup([toolTurn[0]!, modelFailure, text("Done.")])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ toolkit: tools })
      const error = yield* Effect.flip(agent.send("What is in /project?"))
      expect(error._tag).toBe("ModelError")
      expect(error.message).toContain("the provider is down")
      // The first step (assistant + tool result) was committed; nothing of the second.
      expect(roles(tree.entries)).toEqual(["user", "assistant", "tool"])
      expect(tree.activeLeafId).toBe(tree.entries[2]!.id)
      const entries = yield* agent.send("Go on.")
      expect(roles(entries)).toEqual(["user", "assistant"])
      expect(entries[0]!.parentId).toBe(tree.entries[2]!.id)
      expect(shape(script.prompts[2]!).map((m) => m.role)).toEqual(["user", "assistant", "tool", "user"])
    }).pipe(Effect.provide(layer))
  })

  it.effect("a failing tool commits nothing of its step and is a ToolError naming it; send continues", () => {
    const { layer } = setup([
      [callTool("call-9", "list_dir", { path: "/missing" }), finish()],
      text("Sorry.")
    ])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ toolkit: tools })
      const error = yield* Effect.flip(agent.send("What is in /missing?"))
      expect(error).toMatchObject({ _tag: "ToolError", toolName: "list_dir", toolCallId: "call-9" })
      expect(error.message).toContain("no such directory: /missing")
      expect(roles(tree.entries)).toEqual(["user"])
      expect(tree.activeLeafId).toBe(tree.entries[0]!.id)
      expect(roles(yield* agent.send("Never mind."))).toEqual(["user", "assistant"])
    }).pipe(Effect.provide(layer))
  })

  it.effect("an interrupted model call commits nothing; send continues", () => {
    const started = Deferred.unsafeMake<void>(undefined as never)
    const { layer } = setup([
      toolTurn[0]!,
      Effect.zipRight(Deferred.succeed(started, undefined), Effect.never),
      text("Here again.")
    ])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ toolkit: tools })
      const fiber = yield* Effect.fork(agent.send("What is in /project?"))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(roles(tree.entries)).toEqual(["user", "assistant", "tool"])
      const entries = yield* agent.send("Still there?")
      expect(roles(entries)).toEqual(["user", "assistant"])
      expect(entries[0]!.parentId).toBe(tree.entries[2]!.id)
    }).pipe(Effect.provide(layer))
  })

  it.effect("an interrupted tool commits nothing of its step; send continues", () => {
    const started = Deferred.unsafeMake<void>(undefined as never)
    const script = scripted([toolTurn[0]!, text("Here again.")])
    const session = SessionTree.layer.pipe(
      Layer.provideMerge(SessionStore.layerCreate("s")),
      Layer.provide(MemoryJournal.layer),
      Layer.provideMerge(Ids.layerDeterministic),
      Layer.orDie
    )
    // A tool that never finishes once it has started.
    const hanging = tools.toLayer({ list_dir: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never) })
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ toolkit: tools })
      const fiber = yield* Effect.fork(agent.send("What is in /project?"))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      expect(roles(tree.entries)).toEqual(["user"])
      expect(tree.activeLeafId).toBe(tree.entries[0]!.id)
      const entries = yield* agent.send("Just answer.")
      expect(roles(entries)).toEqual(["user", "assistant"])
      expect(entries[0]!.parentId).toBe(tree.entries[0]!.id)
    }).pipe(Effect.provide(Layer.mergeAll(session, script.layer, hanging)))
  })

  it.effect("stops at the step limit with every step committed", () => {
    const call = (n: number): Answer => [callTool(`call-${n}`, "list_dir", { path: "/project" }), finish()]
    const { layer } = setup([call(1), call(2), call(3)])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ toolkit: tools, maxSteps: 2 })
      const error = yield* Effect.flip(agent.send("Loop."))
      expect(error._tag).toBe("StepLimitError")
      expect(error).toMatchObject({ maxSteps: 2, entryIds: tree.entries.map((entry) => entry.id) })
      expect(roles(tree.entries)).toEqual(["user", "assistant", "tool", "assistant", "tool"])
    }).pipe(Effect.provide(layer))
  })
})

describe("Agent.regenerate, Agent.edit", () => {
  it.effect("regenerate answers the same user message again on a new branch; nothing is deleted", () => {
    const { layer, script } = setup([text("First answer."), text("Second answer.")])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ system: "Be brief." })
      const [, user, first] = yield* agent.send("Hello?")
      const again = yield* agent.regenerate(first!.id)
      expect(roles(again)).toEqual(["assistant"])
      expect(again[0]!.parentId).toBe(user!.id)
      expect(tree.children(user!.id).map((entry) => entry.id)).toEqual([first!.id, again[0]!.id])
      expect(tree.activeEntries.map((entry) => entry.id)).toEqual([tree.entries[0]!.id, user!.id, again[0]!.id])
      // The same context was sent both times.
      expect(shape(script.prompts[1]!)).toEqual(shape(script.prompts[0]!))
      const refused = yield* Effect.flip(agent.regenerate(user!.id))
      expect(refused).toMatchObject({ code: "SESSION_INVALID_MESSAGE" })
      expect(yield* Effect.flip(agent.regenerate("nope"))).toMatchObject({ code: "SESSION_UNKNOWN_ENTRY" })
    }).pipe(Effect.provide(layer))
  })

  it.effect("regenerate of a later step's answer runs the whole turn again from its user message", () => {
    const { layer, script } = setup([...toolTurn, [callTool("call-2", "list_dir", { path: "/project" }), finish()], text("Two entries.")])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ toolkit: tools })
      const [user, , , answer] = yield* agent.send("What is in /project?")
      const again = yield* agent.regenerate(answer!.id)
      expect(roles(again)).toEqual(["assistant", "tool", "assistant"])
      expect(again[0]!.parentId).toBe(user!.id)
      expect(tree.children(user!.id)).toHaveLength(2)
      expect(tree.entries).toHaveLength(7)
      expect(shape(script.prompts[2]!)).toEqual(shape(script.prompts[0]!))
    }).pipe(Effect.provide(layer))
  })

  it.effect("edit commits the new user message beside the old one and answers it", () => {
    const { layer, script } = setup([text("Paris."), text("Rome.")])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ system: "Be brief." })
      const [system, user] = yield* agent.send("Capital of France?")
      const edited = yield* agent.edit(user!.id, "Capital of Italy?")
      expect(roles(edited)).toEqual(["user", "assistant"])
      expect(edited[0]!.parentId).toBe(system!.id)
      expect(tree.children(system!.id)).toHaveLength(2)
      expect(tree.entries).toHaveLength(5)
      expect(shape(script.prompts[1]!)).toEqual([
        { role: "system", parts: [{ type: "text", text: "Be brief." }] },
        { role: "user", parts: [{ type: "text", text: "Capital of Italy?" }] }
      ])
    }).pipe(Effect.provide(layer))
  })
})

describe("Agent.compact", () => {
  it.effect("summarises the oldest groups with the model; the next prompt starts with the summary", () => {
    const { layer, script } = setup([
      text("Paris."),
      text("Rome."),
      text("The user asked for two capitals: Paris, then Rome."),
      text("Berlin.")
    ])
    return Effect.gen(function*() {
      const tree = yield* SessionTree.SessionTree
      const agent = yield* Agent.make({ system: "Be brief." })
      yield* agent.send("Capital of France?")
      yield* agent.send("Capital of Italy?")
      const before = tree.activeMessages.length
      const [compaction] = yield* agent.compact()
      expect(compaction).toMatchObject({
        kind: "compaction",
        summary: "The user asked for two capitals: Paris, then Rome.",
        firstKeptEntryId: null
      })
      // The summariser saw the system prompt (kept, not summarised), the conversation and the instruction.
      expect(shape(script.prompts[2]!).map((m) => m.role)).toEqual(["system", "user", "assistant", "user", "assistant", "user"])
      expect(shape(script.prompts[2]!).at(-1)!.parts[0]!.text).toBe(Agent.SUMMARY_INSTRUCTION)
      expect(tree.activeMessages).toHaveLength(before)
      yield* agent.send("And Germany?")
      const sent = shape(script.prompts[3]!)
      expect(sent.map((m) => m.role)).toEqual(["system", "user", "user"])
      expect(sent[1]!.parts[0]!.text).toBe(
        Conversation.SUMMARY_PREFIX + "The user asked for two capitals: Paris, then Rome." + Conversation.SUMMARY_SUFFIX
      )
      expect(sent[2]!.parts[0]!.text).toBe("And Germany?")
      // Nothing left to summarise: no model call, nothing appended.
      const count = tree.entries.length
      expect(yield* agent.compact({ keep: 1_000_000 })).toEqual([])
      expect(tree.entries).toHaveLength(count)
    }).pipe(Effect.provide(layer))
  })
})

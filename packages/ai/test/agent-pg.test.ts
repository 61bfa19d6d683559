/**
 * The agent on PostgreSQL: a turn with a tool call commits each step as one
 * chain; a failing tool leaves the last committed step; a new store over the
 * same session sends the earlier reasoning back with its signature.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Record, type RecordV2, SessionStore, SessionTree } from "@session-tree/core"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Database from "../../pg/test/support/database.js"
import { Agent } from "../src/index.js"
import { callTool, finish, handlers, scripted, shape, SIGNATURE, text, tools } from "./support/scripted.js"

const roles = (entries: ReadonlyArray<Record.Entry>) => entries.map((entry) => (entry as RecordV2.MessageEntry).message.role)

describe("the agent on PostgreSQL", () => {
  it.live("commits steps, survives a failing tool and a reload, and keeps the signature", () => {
    const first = scripted([
      [
        { type: "reasoning", text: "Look first.", metadata: SIGNATURE },
        callTool("call-1", "list_dir", { path: "/project" }),
        finish()
      ],
      text("README.md and src/."),
      [callTool("call-2", "list_dir", { path: "/missing" }), finish()]
    ])
    const second = scripted([text("Yes.")])
    const withTools = handlers({ "/project": ["README.md", "src/"] })
    const session = (open: typeof SessionStore.layerOpen) =>
      SessionTree.layer.pipe(Layer.provideMerge(open("agent")), Layer.orDie)
    return Effect.gen(function*() {
      const tree = yield* Effect.gen(function*() {
        const tree = yield* SessionTree.SessionTree
        const agent = yield* Agent.make({ system: "Be brief.", toolkit: tools })
        expect(roles(yield* agent.send("What is in /project?"))).toEqual(["system", "user", "assistant", "tool", "assistant"])
        const error = yield* Effect.flip(agent.send("And /missing?"))
        expect(error).toMatchObject({ _tag: "ToolError", toolName: "list_dir" })
        return tree
      }).pipe(Effect.provide(Layer.mergeAll(session(SessionStore.layerOpen), first.layer, withTools)))
      expect(roles(tree.entries)).toEqual(["system", "user", "assistant", "tool", "assistant", "user"])

      const entries = yield* Effect.gen(function*() {
        const reloaded = yield* SessionTree.SessionTree
        expect(reloaded.entries.map((e) => e.id)).toEqual(tree.entries.map((e) => e.id))
        const agent = yield* Agent.make({ system: "Be brief.", toolkit: tools })
        return yield* agent.send("Sure?")
      }).pipe(Effect.provide(Layer.mergeAll(session(SessionStore.layerOpen), second.layer, withTools)))
      expect(roles(entries)).toEqual(["user", "assistant"])
      expect(entries[0]!.parentId).toBe(tree.entries[5]!.id)
      expect(shape(second.prompts[0]!)[2]!.parts[0]).toEqual({ type: "reasoning", text: "Look first.", anthropic: SIGNATURE.anthropic })
    }).pipe(Effect.provide(Layer.orDie(Database.layer("agent"))))
  })
})

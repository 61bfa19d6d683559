/**
 * The agent on session files: a reload (in this process and in a new one)
 * sends the reasoning of an earlier step back with its signature intact; a
 * process killed with SIGKILL in the middle of a step leaves the session at
 * its last committed step, and `send` in a new process continues from there.
 */
import { describe, expect, it } from "@effect/vitest"
import { Ids, type Record, type RecordV2, SessionStore, SessionTree } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { type Child, prepareChild, spawnChild } from "@session-tree/testing/Children"
import { isAlive, startTime } from "@session-tree/testing/Tracked"
import { Agent } from "../src/index.js"
import { callTool, finish, handlers, scripted, shape, SIGNATURE, text, tools } from "./support/scripted.js"

const here = Path.dirname(fileURLToPath(import.meta.url))
const child = Path.join(here, "children/agent.ts")

const tempDir = () => NFS.mkdtempSync(Path.join(OS.tmpdir(), "st-agent-"))

const sessionLayer = (file: string) =>
  SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerOpen(file)),
    Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)),
    Layer.orDie
  )

const roles = (entries: ReadonlyArray<Record.Entry>) =>
  entries.map((entry) => (entry as RecordV2.MessageEntry).message?.role ?? (entry as RecordV2.SessionEntry).kind)

/** The session's entries as a fresh load reads them. */
const readEntries = (file: string) =>
  Effect.runPromise(Effect.map(SessionStore.read(file), (loaded) => loaded.entries).pipe(Effect.provide(FileJournal.layerWithFs())))

/**
 * Starts the agent as a child of this process (Node itself, running the child program bundled
 * once, as every child of the suites), so that a kill reaches the process that works.
 */
const run = async (file: string, scenario: string): Promise<Child> => spawnChild(await prepareChild(child), [file, scenario])

describe("the agent on a session file", () => {
  it.live("a reload in this process sends the reasoning back with its signature", () => {
    const dir = tempDir()
    const file = Path.join(dir, "s.jsonl")
    const first = scripted([
      [
        { type: "reasoning", text: "Look first.", metadata: SIGNATURE },
        callTool("call-1", "list_dir", { path: "/project" }),
        finish()
      ],
      text("README.md and src/.")
    ])
    const second = scripted([text("Yes.")])
    const withTools = handlers({ "/project": ["README.md", "src/"] })
    return Effect.gen(function*() {
      yield* Effect.scoped(Effect.flatMap(Agent.make({ toolkit: tools }), (agent) => agent.send("What is in /project?"))).pipe(
        Effect.provide(Layer.mergeAll(sessionLayer(file), first.layer, withTools))
      )
      const entries = yield* Effect.flatMap(Agent.make({ toolkit: tools }), (agent) => agent.send("Sure?")).pipe(
        Effect.provide(Layer.mergeAll(sessionLayer(file), second.layer, withTools))
      )
      expect(roles(entries)).toEqual(["user", "assistant"])
      expect(shape(second.prompts[0]!)[1]!.parts[0]).toEqual({ type: "reasoning", text: "Look first.", anthropic: SIGNATURE.anthropic })
      const stored = yield* Effect.promise(() => readEntries(file))
      expect(roles(stored)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"])
    }).pipe(Effect.ensuring(Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))))
  })

  it("a new process sends the signature back; a SIGKILL mid-step leaves the last committed step", async () => {
    const dir = tempDir()
    const file = Path.join(dir, "s.jsonl")
    try {
      const tools = await run(file, "tools")
      expect((await tools.exited).code, tools.stderr()).toBe(0)
      expect(tools.lines).toEqual(["done 5"])
      expect(roles(await readEntries(file))).toEqual(["system", "user", "assistant", "tool", "assistant"])

      // The second turn commits its user message and its first step, then dies waiting for the model.
      const hang = await run(file, "hang")
      const agentPid = Number((await hang.waitFor("calling ")).slice("calling ".length))
      const agent = { pid: agentPid, start: startTime(agentPid) }
      hang.proc.kill("SIGKILL")
      expect((await hang.exited).signal).toBe("SIGKILL")
      // The process that was working is gone, not only the one the test started.
      expect(isAlive(agent), `the agent (pid ${agentPid}) outlived its kill`).toBe(false)
      const afterKill = await readEntries(file)
      expect(roles(afterKill)).toEqual(["system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool"])

      // A second process appends to the session: no living writer holds it (no SESSION_BUSY).
      const resume = await run(file, "resume")
      const exit = await resume.exited
      expect(exit.code, resume.stderr()).toBe(0)
      expect(resume.lines.at(-1)).toBe("done 10")
      const prompt = JSON.parse(resume.lines[0]!) as ReturnType<typeof shape>
      expect(prompt.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool", "user"])
      // The reasoning of the first process's step, read back by the third, with its signature.
      expect(prompt[2]!.parts[0]).toEqual({ type: "reasoning", text: "I should look at the directory.", anthropic: SIGNATURE.anthropic })
      const final = await readEntries(file)
      expect(final.slice(0, 8).map((entry) => entry.id)).toEqual(afterKill.map((entry) => entry.id))
      expect(final[8]!.parentId).toBe(afterKill[7]!.id)
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  }, 180_000)
})

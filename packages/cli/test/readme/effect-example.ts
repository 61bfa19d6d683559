import { Ids, Record, SessionStore, SessionTree } from "@session-tree/core"
import { FileJournal } from "@session-tree/file"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const path = join(mkdtempSync(join(tmpdir(), "chat-")), "chat.jsonl")

const program = Effect.gen(function*() {
  const tree = yield* SessionTree.SessionTree
  yield* tree.setModel({ provider: "openai", model: "gpt-5", thinking: "low" })
  const root = yield* tree.append({ role: "user", id: "m1", content: [{ type: "text", text: "What is in /project?" }] })
  yield* tree.append({
    role: "assistant",
    id: "m2",
    content: [
      { type: "text", text: "Let me look." },
      { type: "tool-call", id: "call-1", name: "list_dir", arguments: { path: "/project" } }
    ],
    meta: { model: "gpt-5", usage: { inputTokens: 31, outputTokens: 12 }, stopReason: "tool-calls" }
  })
  yield* tree.append({
    role: "tool",
    id: "m3",
    toolCallId: "call-1",
    toolName: "list_dir",
    isError: false,
    content: [{ type: "text", text: "src/" }],
    result: { entries: ["src/"] }
  })
  console.log(tree.activeMessages.map(Record.textOf)) // [ 'What is in /project?', 'Let me look.', 'src/' ]

  // Branch: go back to the question and continue differently. Nothing is deleted.
  yield* tree.moveTo(root.id)
  yield* tree.append({ role: "assistant", id: "m4", content: [{ type: "text", text: "Which project?" }] })
  yield* tree.label(root.id, "the question")
  console.log(tree.activeMessages.map(Record.textOf)) // [ 'What is in /project?', 'Which project?' ]
  console.log(tree.entries.length, tree.activeEntries.length) // 6 4

  // Failures are typed SessionErrors with a stable code.
  const orphan = { role: "tool", id: "m5", toolCallId: "call-1", toolName: "list_dir", isError: false, content: [] }
  const error = yield* Effect.flip(tree.append(orphan)) // call-1 was made on the other branch
  console.log(error.code) // SESSION_TOOL_LINK
})

// The store layer creates the file (layerLoad / layerOpen load an existing one; `{ version: 1 }`
// makes the course format); the tree layer sits on the store; the file journal (on the real
// filesystem) and random UUIDs sit under both.
const SessionLive = SessionTree.layer.pipe(
  Layer.provideMerge(SessionStore.layerCreate(path)),
  Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
)

await Effect.runPromise(program.pipe(Effect.provide(SessionLive)))

// Read-only: load without holding anything open, e.g. for a viewer.
const loaded = await Effect.runPromise(SessionStore.read(path).pipe(Effect.provide(FileJournal.layerWithFs())))
console.log(loaded.header.version, loaded.entries.length, loaded.tail) // 2 6 none

import { Ids, SessionStore, SessionTree } from "@session-tree/core"
import { FileJournal } from "@session-tree/file"
import { Effect, Layer } from "effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const path = join(mkdtempSync(join(tmpdir(), "chat-")), "chat.jsonl")

const program = Effect.gen(function*() {
  const tree = yield* SessionTree.SessionTree
  const root = yield* tree.append({ role: "user", id: "m1", content: "What is in /project?" })
  yield* tree.append({
    role: "assistant",
    id: "m2",
    content: "Let me look.",
    toolCalls: [{ id: "call-1", name: "list_dir", arguments: { path: "/project" } }]
  })
  yield* tree.append({ role: "tool", id: "m3", toolCallId: "call-1", toolName: "list_dir", content: "src/", isError: false })

  // Branch: go back to the question and continue differently. Nothing is deleted.
  yield* tree.moveTo(root.id)
  yield* tree.append({ role: "assistant", id: "m4", content: "Which project?", toolCalls: [] })
  console.log(tree.activeMessages.map((m) => m.content)) // [ 'What is in /project?', 'Which project?' ]
  console.log(tree.entries.length) // 4

  // Failures are typed SessionErrors with a stable code.
  const orphan = { role: "tool", id: "m5", toolCallId: "call-1", toolName: "list_dir", content: "?", isError: false }
  const error = yield* Effect.flip(tree.append(orphan)) // call-1 was made on the other branch
  console.log(error.code) // SESSION_TOOL_LINK
})

// The store layer creates the file (layerLoad / layerOpen load an existing one);
// the tree layer sits on the store; the file journal (on the real filesystem) and
// random UUIDs sit under both.
const SessionLive = SessionTree.layer.pipe(
  Layer.provideMerge(SessionStore.layerCreate(path)),
  Layer.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
)

await Effect.runPromise(program.pipe(Effect.provide(SessionLive)))

// Read-only: load without holding anything open, e.g. for a viewer.
const loaded = await Effect.runPromise(SessionStore.read(path).pipe(Effect.provide(FileJournal.layerWithFs())))
console.log(loaded.entries.length, loaded.tail) // 4 none

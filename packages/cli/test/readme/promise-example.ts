import { SessionError, SessionStore, SessionTree } from "@session-tree/file/Promise"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "chat-"))
const path = join(dir, "chat.jsonl")

const store = await SessionStore.create(path)
const tree = new SessionTree(store)
const root = await tree.append({ role: "user", id: "m1", content: "root" })
await tree.append({ role: "user", id: "m2", content: "old branch" })
await tree.moveTo(root.id)
const leaf = await tree.append({ role: "user", id: "m3", content: "new branch" })
console.log(tree.activeMessages.map((m) => m.content)) // [ 'root', 'new branch' ]
await store.close()

// Reloading starts at the newest entry; the old branch is still there.
const reloaded = await SessionStore.load(path)
const again = new SessionTree(reloaded)
console.log(again.activeLeafId === leaf.id, again.entries.length) // true 3
await reloaded.close()

try {
  await SessionStore.load(join(dir, "missing.jsonl"))
} catch (error) {
  if (error instanceof SessionError) console.log(error.code) // SESSION_NOT_FOUND
}

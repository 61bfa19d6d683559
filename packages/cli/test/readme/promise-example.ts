import { isUnreadable, SessionError, Sessions, SessionStore, SessionTree } from "@session-tree/file/Promise"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "chat-"))
const path = join(dir, "chat.jsonl")

const store = await SessionStore.create(path, { id: "chat-1" })
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

// The sessions of a directory: fork a branch into a new file, list, export, import.
const sessions = new Sessions()
const forked = await sessions.fork(path, leaf.id, join(dir, "branch.jsonl"), { id: "chat-2" })
console.log(forked.id, forked.entries, forked.title) // chat-2 2 root
const listing = await sessions.list({ scope: dir })
console.log(listing.sessions.map((s) => (isUnreadable(s) ? s.error.code : `${s.id} ${s.entries}`)).sort()) // [ 'chat-1 3', 'chat-2 2' ]
const jsonl = await sessions.exportJsonl(path)
console.log(jsonl.split("\n").length - 1) // 4
const copy = await sessions.import(path, join(dir, "copy.jsonl"))
console.log(copy.session.id, (await SessionStore.read(copy.session.location)).entries.length) // chat-1 3

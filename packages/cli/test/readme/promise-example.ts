import { messageOf, textOf } from "@session-tree/core/Record"
import { isUnreadable, SessionError, Sessions, SessionStore, SessionTree } from "@session-tree/file/Promise"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

const dir = mkdtempSync(join(tmpdir(), "chat-"))
const path = join(dir, "chat.jsonl")

// A new session is version 2, the agent format ({ version: 1 }: the course format).
const store = await SessionStore.create(path, { id: "chat-1" })
const tree = new SessionTree(store)
await tree.append({ role: "system", id: "s1", content: "Answer briefly." })
const question = await tree.append({ role: "user", id: "m1", content: [{ type: "text", text: "What is 2 + 2?" }] })
const answer = await tree.append({
  role: "assistant",
  id: "m2",
  content: [
    // The provider's signature is stored exactly, so the next request can send the reasoning back.
    { type: "reasoning", text: "Simple arithmetic.", options: { anthropic: { signature: "c2lnbmF0dXJl" } } },
    { type: "text", text: "4" }
  ],
  meta: { provider: "anthropic", model: "claude-sonnet-4-5", usage: { inputTokens: 12, outputTokens: 9 } }
})
await tree.setTitle("Arithmetic")
await tree.label(question.id, "first question")
console.log(tree.activeMessages.map(textOf)) // [ 'Answer briefly.', 'What is 2 + 2?', '4' ]
console.log(tree.activeEntries.length, tree.activeMessages.length) // 5 3

// Branch: go back to the question and answer differently. Nothing is deleted.
await tree.moveTo(question.id)
const leaf = await tree.append({ role: "assistant", id: "m3", content: [{ type: "text", text: "Four." }] })
console.log(tree.activeMessages.map(textOf)) // [ 'Answer briefly.', 'What is 2 + 2?', 'Four.' ]
await store.close()

// Reloading starts at the newest entry; the old branch is still there, its signature intact.
const reloaded = await SessionStore.load(path)
const again = new SessionTree(reloaded)
console.log(again.activeLeafId === leaf.id, again.entries.length) // true 6
const stored = messageOf(reloaded.get(answer.id)!)
if (stored?.role === "assistant" && typeof stored.content !== "string") console.log(JSON.stringify(stored.content[0])) // {"type":"reasoning","text":"Simple arithmetic.","options":{"anthropic":{"signature":"c2lnbmF0dXJl"}}}
await reloaded.close()

try {
  await SessionStore.load(join(dir, "missing.jsonl"))
} catch (error) {
  if (error instanceof SessionError) console.log(error.code) // SESSION_NOT_FOUND
}

// The sessions of a directory: list (with titles), fork a branch into a new file, export, import.
const sessions = new Sessions()
const forked = await sessions.fork(path, leaf.id, join(dir, "branch.jsonl"), { id: "chat-2" })
console.log(forked.id, forked.entries, forked.title) // chat-2 3 What is 2 + 2?
const listing = await sessions.list({ directory: dir })
console.log(listing.sessions.map((s) => (isUnreadable(s) ? s.error.code : `${s.id} ${s.entries} ${s.title}`)).sort()) // [ 'chat-1 6 Arithmetic', 'chat-2 3 What is 2 + 2?' ]
const branch = await SessionStore.read(forked.location)
console.log(branch.header.version === 2 && branch.header.forkedFrom?.session) // chat-1
const jsonl = await sessions.exportJsonl(path)
console.log(jsonl.split("\n").length - 1) // 7
const copy = await sessions.import(path, join(dir, "copy.jsonl"))
console.log(copy.session.id, (await SessionStore.read(copy.session.location)).entries.length) // chat-1 6

/**
 * `npm start`: a tour of the library through its Effect API, printed for a person.
 *
 * It builds a small agent conversation with a tool call, branches it, shows the
 * tree and the active path, then damages copies of the file to show the one kind
 * of damage the loader recovers (a torn final line) and the kind it refuses
 * (corruption in the middle). Every claim it prints is checked; a failed check
 * exits 1. Everything happens in a fresh temp directory that is removed at the end,
 * but for the HTML page of the session, which it leaves in the system's temp
 * directory (`os.tmpdir()`) for a browser to open.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { encodeLine } from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import type { Entry, SessionEntry, SessionHeader } from "@session-tree/core/Record"
import { isSessionError, type SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Files from "@session-tree/file/Files"
import * as Html from "@session-tree/view/Html"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { describeMessage, formatError, renderLog, renderTree } from "@session-tree/view/Text"

/** Stops the demo (exit 1) when what it is about to print is not what happened. */
const check = (holds: boolean, claim: string): Effect.Effect<void> =>
  holds ? Effect.void : Effect.dieMessage(`demo check failed: ${claim}`)

const heading = (text: string) => Console.log(`\n== ${text}`)
const say = (text: string) => Console.log(`   ${text}`)
const added = (entry: Entry) => say(`+ ${entry.id}  ${describeMessage((entry as SessionEntry).message)}`)

/** The failure of `effect`, which must fail with a SessionError. */
const refusal = <A, R>(effect: Effect.Effect<A, SessionError, R>, claim: string): Effect.Effect<SessionError, never, R> =>
  effect.pipe(
    Effect.flip,
    Effect.catchAll(() => Effect.dieMessage(`demo check failed: ${claim} succeeded`)),
    Effect.tap((error) => check(isSessionError(error), claim))
  )

const indent = (lines: ReadonlyArray<string>) => Effect.forEach(lines, (line) => say(line), { discard: true })

/** Part 1: a conversation in one session file, through the SessionTree service. */
const conversation = Effect.gen(function*() {
  const tree = yield* SessionTree.SessionTree
  const store = tree.store
  // The demo's session is created in version 1 (see `main`), so its records are version-1 values.
  const header = store.header as SessionHeader
  const entries = () => tree.entries as ReadonlyArray<SessionEntry>

  yield* heading(`A new session: ${store.header.id}`)
  yield* say(`file ${store.location}`)
  yield* say("one header line, created exclusively, fsynced, directory fsynced")

  yield* heading("A conversation with a tool call (each append is durable when it resolves)")
  const root = yield* tree.append({ role: "user", id: "msg-1", content: "What is in /project?" })
  yield* added(root)
  const call = yield* tree.append({
    role: "assistant",
    id: "msg-2",
    content: "Let me look.",
    toolCalls: [{ id: "call-1", name: "list_dir", arguments: { path: "/project" } }]
  })
  yield* added(call)
  yield* added(
    yield* tree.append({ role: "tool", id: "msg-3", toolCallId: "call-1", toolName: "list_dir", content: "README.md\nsrc/", isError: false })
  )
  const answer = yield* tree.append({ role: "assistant", id: "msg-4", content: "It holds README.md and src/.", toolCalls: [] })
  yield* added(answer)

  yield* heading(`Branching: moveTo(${root.id}), then a different continuation`)
  yield* tree.moveTo(root.id)
  yield* say(`the leaf is now ${tree.activeLeafId}; no byte of the file changed`)
  yield* added(yield* tree.append({ role: "assistant", id: "msg-5", content: "Shall I list it recursively?", toolCalls: [] }))
  const leaf = yield* tree.append({ role: "user", id: "msg-6", content: "Yes, please." })
  yield* added(leaf)
  yield* check(tree.entries.length === 6 && tree.activeEntries.length === 3, "6 entries stored, 3 on the active path")
  yield* say(`${tree.entries.length} entries stored, ${tree.activeEntries.length} on the active path; the old branch is kept`)

  yield* heading("Tool links are checked against the branch, not the file")
  const bytesBefore = NFS.readFileSync(store.location)
  const linkError = yield* refusal(
    tree.append({ role: "tool", id: "msg-7", toolCallId: "call-1", toolName: "list_dir", content: "again", isError: false }),
    "a tool result whose call is on another branch"
  )
  yield* check(linkError.code === "SESSION_TOOL_LINK", "the result was refused with SESSION_TOOL_LINK")
  yield* check(NFS.readFileSync(store.location).equals(bytesBefore), "the refused append wrote nothing")
  yield* say(`a result for call-1 on the new branch (the call is on the old one) is refused:`)
  yield* say(`  ${formatError(linkError)}`)
  yield* say("the file and the tree are unchanged")

  yield* heading("The tree (● active path, ○ kept branches)")
  yield* indent(yield* renderTree(header, entries(), { leaf: tree.activeLeafId }))

  yield* heading("The active path, root → leaf (what the model is shown)")
  yield* indent(yield* renderLog(entries(), { leaf: tree.activeLeafId }))

  yield* heading("A picture of the conversation")
  const page = yield* Html.render(header, entries(), { leaf: tree.activeLeafId })
  yield* Files.writeFile(PAGE, page)
  yield* check(NFS.readFileSync(PAGE, "utf8") === page, "the page was written whole")
  yield* say(`every branch, the active path marked, any entry selectable; one file, no network request:`)
  yield* say(`open file://${PAGE} in a browser`)
  return store.location
})

/** Where the demo leaves its session's page (the rest of its files are removed at the end). */
const PAGE = Path.join(OS.tmpdir(), "session-tree-demo.html")

/** Part 2: damage copies of the file. */
const damage = (dir: string, original: string) =>
  Effect.gen(function*() {
    const canonical = NFS.readFileSync(original, "utf8")

    yield* heading("A torn final line (a crash in the middle of a write) is recovered")
    const torn = Path.join(dir, "torn.jsonl")
    NFS.writeFileSync(torn, `${canonical}{"type":"entry","id":"cut`)
    yield* say(`torn.jsonl = the session + an unfinished last line: {"type":"entry","id":"cut`)
    yield* Effect.scoped(Effect.gen(function*() {
      const store = yield* SessionStore.load(torn)
      yield* check(store.tail === "incomplete" && store.entries.length === 6, "load skips the incomplete tail")
      yield* check(NFS.readFileSync(torn, "utf8").endsWith("\"cut"), "loading wrote nothing")
      yield* say(`load: ${store.entries.length} entries, tail "${store.tail}"; the cut bytes are still on disk (load never writes)`)
      const tree = yield* SessionTree.make(store)
      const entry = yield* tree.append({ role: "assistant", id: "msg-8", content: "Here is the full listing.", toolCalls: [] })
      const expected = [store.header, ...store.entries].map(encodeLine).join("")
      const onDisk = NFS.readFileSync(torn, "utf8")
      yield* check(onDisk === expected, "the next commit wrote the canonical generation")
      yield* say(`append ${entry.id}: the new generation is the canonical file of ${store.entries.length} entries`)
      yield* say(`ends with a newline: ${onDisk.endsWith("\n")}; the abandoned tail is gone: ${!onDisk.includes("\"cut")}`)
    }))

    yield* heading("Corruption is rejected, never skipped")
    const corrupt = Path.join(dir, "corrupt.jsonl")
    const [header, ...rest] = canonical.split("\n")
    NFS.writeFileSync(corrupt, [header, "not-json", ...rest].join("\n"))
    yield* say("corrupt.jsonl = the header, then a line `not-json`, then the entries")
    const error = yield* refusal(SessionStore.read(corrupt), "loading a file with a corrupt middle line")
    yield* check(error.code === "SESSION_INVALID_JSON" && error.line === 2, "SESSION_INVALID_JSON at line 2")
    yield* say(formatError(error))
    yield* say("the whole session is refused: every later parent and tool link would rest on a guess")
  })

const program = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-demo-"))),
    (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
  )
  yield* Console.log(`session-tree demo, working in ${dir}`)
  const path = Path.join(dir, "session.jsonl")

  // The Layers: a store created at `path`, the tree over it, the real filesystem and readable IDs.
  const StoreLive = SessionStore.layerCreate(path, { id: "demo-session", version: 1 })
  const TreeLive = SessionTree.layer.pipe(Layer.provideMerge(StoreLive))
  yield* conversation.pipe(Effect.provide(TreeLive))

  yield* damage(dir, path)
  yield* Console.log(`\nDone. Removing ${dir}.`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic))
)

NodeRuntime.runMain(program)

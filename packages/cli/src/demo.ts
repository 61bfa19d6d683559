/**
 * `npm start`: a tour of the library through its Effect API, printed for a person.
 *
 * It builds a small conversation with a tool call, branches it, shows the tree
 * and the active path, then damages copies of the file to show the one kind of
 * damage the loader recovers (a torn final line) and the kind it refuses
 * (corruption in the middle). Last, an agent (`@session-tree/ai`) holds a short
 * conversation with a scripted model, so that it runs offline and the same way
 * every time: a tool call, reasoning with a signature sent back to the model, a
 * regenerated answer on a new branch and a compaction. Every claim it prints is
 * checked; a failed check exits 1. Everything happens in a fresh temp directory
 * that is removed at the end, but for the HTML pages of the sessions, which it
 * leaves in the system's temp directory (`os.tmpdir()`) for a browser to open,
 * and a directory of its sessions (the corrupt copy among them) for
 * `session-tree serve --dir` to serve.
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { encodeLine } from "@session-tree/core/Codec"
import * as Ids from "@session-tree/core/Ids"
import * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import type * as Response from "@effect/ai/Response"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Agent } from "@session-tree/ai"
import * as Conversation from "@session-tree/core/Conversation"
import type { Entry } from "@session-tree/core/Record"
import type * as RecordV2 from "@session-tree/core/RecordV2"
import { isSessionError, type SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Files from "@session-tree/file/Files"
import * as Html from "@session-tree/view/Html"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { describeEntry, formatError, renderLog, renderTree } from "@session-tree/view/Text"

/** Stops the demo (exit 1) when what it is about to print is not what happened. */
const check = (holds: boolean, claim: string): Effect.Effect<void> =>
  holds ? Effect.void : Effect.dieMessage(`demo check failed: ${claim}`)

const heading = (text: string) => Console.log(`\n== ${text}`)
const say = (text: string) => Console.log(`   ${text}`)
const added = (entry: Entry) => say(`+ ${entry.id}  ${describeEntry(entry as RecordV2.SessionEntry)}`)

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
  const header = store.header
  const entries = () => tree.entries

  yield* heading(`A new session: ${store.header.id}`)
  yield* say(`file ${store.location}`)
  yield* say("one header line, created exclusively, fsynced, directory fsynced")

  yield* heading("A conversation with a tool call (each append is durable when it resolves)")
  const root = yield* tree.append({ role: "user", id: "msg-1", content: [{ type: "text", text: "What is in /project?" }] })
  yield* added(root)
  const call = yield* tree.append({
    role: "assistant",
    id: "msg-2",
    content: [
      { type: "text", text: "Let me look." },
      { type: "tool-call", id: "call-1", name: "list_dir", arguments: { path: "/project" } }
    ]
  })
  yield* added(call)
  yield* added(
    yield* tree.append({
      role: "tool",
      id: "msg-3",
      toolCallId: "call-1",
      toolName: "list_dir",
      isError: false,
      content: [{ type: "text", text: "README.md\nsrc/" }]
    })
  )
  const answer = yield* tree.append({ role: "assistant", id: "msg-4", content: [{ type: "text", text: "It holds README.md and src/." }] })
  yield* added(answer)

  yield* heading(`Branching: moveTo(${root.id}), then a different continuation`)
  yield* tree.moveTo(root.id)
  yield* say(`the leaf is now ${tree.activeLeafId}; no byte of the file changed`)
  yield* added(yield* tree.append({ role: "assistant", id: "msg-5", content: [{ type: "text", text: "Shall I list it recursively?" }] }))
  const leaf = yield* tree.append({ role: "user", id: "msg-6", content: [{ type: "text", text: "Yes, please." }] })
  yield* added(leaf)
  yield* check(tree.entries.length === 6 && tree.activeEntries.length === 3, "6 entries stored, 3 on the active path")
  yield* say(`${tree.entries.length} entries stored, ${tree.activeEntries.length} on the active path; the old branch is kept`)

  yield* heading("Tool links are checked against the branch, not the file")
  const bytesBefore = NFS.readFileSync(store.location)
  const linkError = yield* refusal(
    tree.append({
      role: "tool",
      id: "msg-7",
      toolCallId: "call-1",
      toolName: "list_dir",
      isError: false,
      content: [{ type: "text", text: "again" }]
    }),
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

/** Where the demo leaves its sessions for `session-tree serve --dir` (replaced by every run). */
const SERVED = Path.join(OS.tmpdir(), "session-tree-demo-sessions")

/** Part 4: the sessions left to browse, one that does not load among them. */
const leaveToServe = (dir: string) =>
  Effect.gen(function*() {
    yield* heading("Sessions to browse")
    NFS.rmSync(SERVED, { recursive: true, force: true })
    NFS.mkdirSync(SERVED)
    for (const name of ["session.jsonl", "agent.jsonl", "corrupt.jsonl"]) NFS.copyFileSync(Path.join(dir, name), Path.join(SERVED, name))
    yield* check(NFS.readdirSync(SERVED).length === 3, "the sessions were left to serve")
    yield* say(`three sessions (one of them corrupt) left in ${SERVED}; browse, search and follow them with:`)
    yield* say(`npx session-tree serve --dir ${SERVED}`)
  })

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
      const entry = yield* tree.append({ role: "assistant", id: "msg-8", content: [{ type: "text", text: "Here is the full listing." }] })
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

/** Where the demo leaves the agent session's page. */
const AGENT_PAGE = Path.join(OS.tmpdir(), "session-tree-demo-agent.html")

/** The signature a provider attaches to its reasoning, which must reach it again unchanged. */
const SIGNATURE = { anthropic: { type: "thinking" as const, signature: "EqQBCkYIBxgCKkB0c2lnbmF0dXJl" } }

const finish = (reason: "stop" | "tool-calls", inputTokens: number, outputTokens: number): Response.PartEncoded => ({
  type: "finish",
  reason,
  usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens }
})

/** The model's answers, in the order it is asked; the demo runs offline and the same way every time. */
const SCRIPT: ReadonlyArray<ReadonlyArray<Response.PartEncoded>> = [
  [
    { type: "reasoning", text: "The user wants the contents of /project; I should list it.", metadata: SIGNATURE },
    { type: "tool-call", id: "call-7", name: "list_dir", params: { path: "/project" } },
    finish("tool-calls", 42, 18)
  ],
  [{ type: "text", text: "It holds README.md and src/." }, finish("stop", 90, 9)],
  [
    { type: "tool-call", id: "call-8", name: "list_dir", params: { path: "/project" } },
    finish("tool-calls", 42, 12)
  ],
  [{ type: "text", text: "Two entries: a README.md file and a src/ directory." }, finish("stop", 90, 12)],
  [{ type: "text", text: "Start with README.md." }, finish("stop", 120, 6)],
  [{ type: "text", text: "The user asked what /project holds: README.md and src/; start with README.md." }, finish("stop", 150, 20)],
  [{ type: "text", text: "src/ holds the code." }, finish("stop", 60, 6)]
]

/** A `LanguageModel` that plays `SCRIPT` and keeps every prompt it is given. */
const scriptedModel = (prompts: Array<Prompt.Prompt>) =>
  LanguageModel.make({
    generateText: (options) =>
      Effect.suspend(() => {
        prompts.push(options.prompt)
        const answer = SCRIPT[prompts.length - 1]
        return answer === undefined
          ? Effect.fail(new AiError.UnknownError({ module: "demo", method: "generateText", description: "the script has ended" }))
          : Effect.succeed([...answer])
      }),
    streamText: () => Effect.dieMessage("the demo does not stream")
  })

const ListDir = Tool.make("list_dir", {
  description: "Lists a directory",
  parameters: { path: Schema.String },
  success: Schema.Array(Schema.String)
})
const DemoTools = Toolkit.make(ListDir)
const DemoHandlers = DemoTools.toLayer({ list_dir: ({ path }) => Effect.succeed(path === "/project" ? ["README.md", "src/"] : []) })

/** Part 3: an agent whose memory is a session file, on a scripted model. */
const agentConversation = Effect.gen(function*() {
  const tree = yield* SessionTree.SessionTree
  const prompts: Array<Prompt.Prompt> = []
  const model = yield* scriptedModel(prompts)
  const agent = yield* Agent.make({ system: "You are a careful assistant.", toolkit: DemoTools }).pipe(
    Effect.provideService(LanguageModel.LanguageModel, model)
  )
  const show = (entries: ReadonlyArray<Entry>) => Effect.forEach(entries, added, { discard: true })

  yield* heading(`An agent whose memory is a session: ${tree.store.header.id} (a scripted model, offline)`)
  yield* say(`file ${tree.store.location}`)
  yield* say("each step (the model's answer and its tool results) is committed in one batch, all or none")
  const turn = yield* agent.send("What is in /project?")
  yield* show(turn)
  yield* check(turn.length === 5 && prompts.length === 2, "one turn: system, user, then two steps of the model")
  const sent = prompts[1]!.content[2]
  const reasoning = sent?.role === "assistant" ? sent.content.find((part) => part.type === "reasoning") : undefined
  yield* check(
    JSON.stringify(reasoning?.options.anthropic) === JSON.stringify(SIGNATURE.anthropic),
    "the second step's prompt sent the reasoning back with its signature"
  )
  yield* say(`the reasoning's signature went back to the model with the next step: ${SIGNATURE.anthropic.signature}`)

  const first = turn[turn.length - 1]!
  yield* heading(`Regenerate ${first.id}: the turn runs again on a new branch, nothing deleted`)
  const again = yield* agent.regenerate(first.id)
  yield* show(again)
  const asked = turn[1]!
  yield* check(again[0]!.parentId === asked.id && tree.children(asked.id).length === 2, "two answers to one user message")
  yield* show(yield* agent.send("Which one should I read first?"))

  yield* heading("Compaction: the model summarises the oldest messages; nothing is deleted")
  const before = tree.activeMessages.length
  const [compaction] = yield* agent.compact({ keep: 20 })
  yield* check(compaction !== undefined, "a compaction was appended")
  yield* show([compaction!])
  yield* check(tree.activeMessages.length === before, "every message is still on the branch")
  yield* show(yield* agent.send("And src/?"))
  const next = prompts[prompts.length - 1]!.content
  const summary = next[1]
  yield* check(
    summary?.role === "user" && summary.content[0]?.type === "text" &&
      summary.content[0].text.startsWith(Conversation.SUMMARY_PREFIX),
    "the next prompt opens with the summary"
  )
  yield* say(`the next prompt sent ${next.length} messages: the system message, the summary, then what came after it`)

  yield* heading("The agent's tree")
  const page = yield* Html.render(tree.store.header, tree.entries, { leaf: tree.activeLeafId })
  yield* indent(yield* renderTree(tree.store.header, tree.entries, { leaf: tree.activeLeafId }))
  yield* Files.writeFile(AGENT_PAGE, page)
  yield* check(NFS.readFileSync(AGENT_PAGE, "utf8") === page, "the page was written whole")
  yield* say(`open file://${AGENT_PAGE} in a browser`)
})

const program = Effect.gen(function*() {
  const dir = yield* Effect.acquireRelease(
    Effect.sync(() => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-demo-"))),
    (dir) => Effect.sync(() => NFS.rmSync(dir, { recursive: true, force: true }))
  )
  yield* Console.log(`session-tree demo, working in ${dir}`)
  const path = Path.join(dir, "session.jsonl")

  // The Layers: a store created at `path`, the tree over it, the real filesystem and readable IDs.
  const StoreLive = SessionStore.layerCreate(path, { id: "demo-session" })
  const TreeLive = SessionTree.layer.pipe(Layer.provideMerge(StoreLive))
  yield* conversation.pipe(Effect.provide(TreeLive))

  yield* damage(dir, path)

  const AgentLive = SessionTree.layer.pipe(
    Layer.provideMerge(SessionStore.layerCreate(Path.join(dir, "agent.jsonl"), { id: "demo-agent" }))
  )
  yield* agentConversation.pipe(Effect.provide(Layer.merge(AgentLive, DemoHandlers)))
  yield* leaveToServe(dir)
  yield* Console.log(`\nDone. Removing ${dir}.`)
}).pipe(
  Effect.scoped,
  Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic))
)

NodeRuntime.runMain(program)

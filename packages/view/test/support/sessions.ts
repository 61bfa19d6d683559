/**
 * Sessions for the view tests, built through the library's own Effect API
 * (SessionStore and SessionTree over MemoryJournal), so every record is one the
 * core accepted: tool links, caps and IDs included. A fixed clock makes the
 * timestamps, and so the pages, the same on every run.
 */
import * as Ids from "@session-tree/core/Ids"
import * as MemoryJournal from "@session-tree/core/MemoryJournal"
import * as Options from "@session-tree/core/Options"
import type { SessionEntry, SessionHeader } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as SessionTree from "@session-tree/core/SessionTree"
import * as V1 from "@session-tree/testing/Version1"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

export interface Session {
  readonly header: SessionHeader
  readonly entries: ReadonlyArray<SessionEntry>
}

/** 2026-03-02T09:00:00.000Z */
const START = Date.UTC(2026, 2, 2, 9, 0, 0)

/**
 * Runs `script` against a new in-memory session and returns its records.
 * Timestamps start at START and advance by `stepMs` per record; entry IDs come
 * from `entryIds` (default `entry-001`, `entry-002`, …).
 */
export const build = (
  script: (tree: SessionTree.SessionTree) => Effect.Effect<unknown, SessionError>,
  options: { readonly id: string; readonly entryIds?: () => string; readonly stepMs?: number }
): Promise<Session> => {
  let time = START
  const step = options.stepMs ?? 7_000
  const clock = Options.clockFrom(() => (time += step) - step)
  const ids = options.entryIds === undefined
    ? Ids.layerDeterministic
    : Layer.succeed(Ids.Ids, { sessionId: Effect.succeed(options.id), entryId: Effect.sync(options.entryIds) })
  const program = Effect.gen(function*() {
    const store = yield* SessionStore.create("session", { id: options.id, version: 1 })
    const tree = yield* SessionTree.make(store)
    yield* script(tree)
    return { header: V1.header(store.header), entries: V1.entries(store.entries) }
  })
  return Effect.runPromise(
    program.pipe(
      Effect.scoped,
      Effect.provideService(Options.CallerClock, clock),
      Effect.provide(Layer.merge(MemoryJournal.layer, ids))
    )
  )
}

/**
 * The conversation of the project's demo (`npm start`): a question, a tool
 * call `list_dir` with its result, an answer; then a branch from the root with
 * a different continuation, which is the active path.
 */
export const demo = (): Promise<Session> =>
  build((tree) =>
    Effect.gen(function*() {
      const root = yield* tree.append({ role: "user", id: "msg-1", content: "What is in /project?" })
      yield* tree.append({
        role: "assistant",
        id: "msg-2",
        content: "Let me look.",
        toolCalls: [{ id: "call-1", name: "list_dir", arguments: { path: "/project" } }]
      })
      yield* tree.append({ role: "tool", id: "msg-3", toolCallId: "call-1", toolName: "list_dir", content: "README.md\nsrc/", isError: false })
      yield* tree.append({ role: "assistant", id: "msg-4", content: "It holds README.md and src/.", toolCalls: [] })
      yield* tree.moveTo(root.id)
      yield* tree.append({ role: "assistant", id: "msg-5", content: "Shall I list it recursively?", toolCalls: [] })
      yield* tree.append({ role: "user", id: "msg-6", content: "Yes, please." })
    }), { id: "demo-session" })

/** Texts that would run script, add markup, load a resource or break out of a context if they were not escaped. */
export const HOSTILE = [
  "<script>window.__pwned = 1</script>",
  "</script><script>window.__pwned = 2</script>",
  "<img src=x onerror=\"window.__pwned = 3\">",
  "<a href=\"javascript:window.__pwned = 4\">click</a> javascript:window.__pwned = 5",
  "{{constructor.constructor('window.__pwned = 6')()}} ${window.__pwned = 7}",
  "line\u2028separator\u2029paragraph",
  "</style><style>body { display: none }</style>",
  "quotes \" ' ` \u201c \u2018 &quot; &#39; &lt;b&gt; &amp;",
  "<svg onload=\"window.__pwned = 8\"><iframe src=\"data:text/html,<script>parent.__pwned = 9</script>\"></iframe>",
  "<link rel=\"stylesheet\" href=\"http://example.invalid/x.css\"><meta http-equiv=\"refresh\" content=\"0;url=http://example.invalid/\">",
  "<base href=\"http://example.invalid/\"></title></textarea></noscript><!-- --> ]]>",
  "</details><details open><summary>x</summary>",
  "\u202eevil\u202c and a NUL \u0000 and a bell \u0007"
]

/**
 * A session in which every value the views show is hostile: the session ID,
 * entry IDs, message IDs, content, tool names, tool-call IDs, argument keys and
 * values. It branches and answers calls, so links and markers are exercised.
 */
export const hostile = (): Promise<Session> => {
  let n = 0
  const pick = (k: number) => HOSTILE[k % HOSTILE.length]!
  return build((tree) =>
    Effect.gen(function*() {
      const root = yield* tree.append({ role: "user", id: pick(0), content: HOSTILE.join("\n") })
      for (let k = 0; k < HOSTILE.length; k++) {
        const callId = `${pick(k + 1)}#${k}`
        const name = `${pick(k + 2)}`
        yield* tree.append({
          role: "assistant",
          id: `${pick(k)}·a`,
          content: pick(k),
          toolCalls: [{ id: callId, name, arguments: { [pick(k + 3)]: pick(k + 4), nested: { [pick(k + 5)]: [pick(k + 6), 1, null] } } }]
        })
        yield* tree.append({ role: "tool", id: `${pick(k)}·t`, toolCallId: callId, toolName: name, content: pick(k + 7), isError: k % 2 === 0 })
        if (k === 4) yield* tree.moveTo(root.id)
      }
    }), { id: `session ${HOSTILE.join(" ")}`, entryIds: () => `${HOSTILE[n % HOSTILE.length]}#${++n}` })
}

// ---------------------------------------------------------------------------------------------
// A large, realistic conversation.

/** A small deterministic PRNG (mulberry32), so the big session is the same on every run. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const WORDS = (
  "the a of to and in that is for it with as on this be are by from at which or an not have can all file " +
  "function test session entry branch leaf parent record commit store tree path error value type module " +
  "config build run check read write append load import export return null string number array object " +
  "should would could please also then first next because however update change fix add remove rename"
).split(" ")
const FILES = ["src/index.ts", "src/Store.ts", "src/tree/walk.ts", "test/store.test.ts", "package.json", "README.md", "docs/design.md"]
const TOOLS = ["read_file", "list_dir", "grep", "run_tests", "edit_file"]

/**
 * A conversation of exactly `total` entries like an agent's: user turns, tool
 * calls with results (some long, a few errors), answers with code, occasional
 * retries from an earlier point (a short abandoned branch) and now and then a
 * return to an abandoned branch. Sized to stay under the 4 MB file cap.
 */
export const big = (total = 4_096, seed = 7): Promise<Session> => {
  const random = prng(seed)
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1))
  const of = <A>(list: ReadonlyArray<A>): A => list[Math.floor(random() * list.length)]!
  const sentence = () => {
    const words = Array.from({ length: int(5, 16) }, () => of(WORDS))
    return `${words.join(" ").replace(/^./, (c) => c.toUpperCase())}.`
  }
  const prose = (sentences: number) => Array.from({ length: sentences }, sentence).join(" ")
  const code = (lines: number) =>
    "```ts\n" + Array.from({ length: lines }, (_, i) => `  const ${of(WORDS)}${i} = ${of(WORDS)}(${int(0, 99)}) // ${of(WORDS)}`).join("\n") + "\n```"
  const output = (tool: string, long: boolean) => {
    const lines = long ? int(80, 160) : int(3, 24)
    switch (tool) {
      case "list_dir":
        return Array.from({ length: lines }, () => of(FILES)).join("\n")
      case "grep":
        return Array.from({ length: lines }, () => `${of(FILES)}:${int(1, 400)}: ${sentence()}`).join("\n")
      case "run_tests":
        return Array.from({ length: lines }, (_, i) => `${i % 9 === 8 ? "✗" : "✓"} ${sentence()} (${int(1, 90)} ms)`).join("\n")
      default:
        return Array.from({ length: lines }, (_, i) => `${String(i + 1).padStart(4)}  ${of(WORDS)}(${of(WORDS)}, ${int(0, 9)})`).join("\n")
    }
  }
  let messages = 0
  let calls = 0
  const id = () => `msg-${++messages}`

  return build((tree) =>
    Effect.gen(function*() {
      const room = () => total - tree.entries.length
      while (room() > 0) {
        const path = tree.activeEntries
        const r = random()
        if (path.length > 8 && r < 0.05) {
          // A retry: go back a few entries and take the conversation another way.
          yield* tree.moveTo(path[path.length - int(2, Math.min(30, path.length - 1))]!.id)
        } else if (r < 0.06) {
          const leaves = tree.leaves
          if (leaves.length > 1) yield* tree.moveTo(of(leaves).id)
        }
        yield* tree.append({ role: "user", id: id(), content: random() < 0.2 ? `${prose(int(1, 3))}\n\n${code(int(3, 10))}` : prose(int(1, 3)) })
        if (room() === 0) break
        if (random() < 0.6) {
          const count = int(1, random() < 0.8 ? 1 : 3)
          const made = Array.from({ length: count }, () => {
            const name = of(TOOLS)
            return { id: `call-${++calls}`, name, arguments: name === "grep" ? { pattern: of(WORDS), path: of(FILES) } : { path: of(FILES) } }
          })
          yield* tree.append({ role: "assistant", id: id(), content: random() < 0.5 ? prose(1) : "", toolCalls: made })
          for (const call of made) {
            if (room() === 0) break
            const failed = random() < 0.05
            yield* tree.append({
              role: "tool",
              id: id(),
              toolCallId: call.id,
              toolName: call.name,
              content: failed ? `Error: ENOENT: no such file or directory, open '${of(FILES)}'` : output(call.name, random() < 0.03),
              isError: failed
            })
          }
          if (room() === 0) break
        }
        const answer = random() < 0.3 ? `${prose(int(2, 5))}\n\n${code(int(4, 14))}\n\n${prose(int(1, 3))}` : prose(int(1, 6))
        yield* tree.append({ role: "assistant", id: id(), content: answer, toolCalls: [] })
      }
    }), { id: "session-large", stepMs: 3_000 })
}

/**
 * The same session with every value made harmless: IDs and names renamed
 * consistently (so parents and tool links still match), texts replaced letter
 * for letter (so lengths and line counts, which decide what is folded, stay).
 * Its page must have exactly the elements and attributes of the original's:
 * whatever the content, it only ever becomes text.
 */
export const twin = (session: Session): Session => {
  const names = new Map<string, string>()
  const name = (value: string): string => {
    let renamed = names.get(value)
    if (renamed === undefined) names.set(value, renamed = `v${names.size}`)
    return renamed
  }
  const text = (value: string): string => value.replace(/[^\n]/g, "a")
  const json = (value: unknown): unknown =>
    typeof value === "string"
      ? text(value)
      : Array.isArray(value)
      ? value.map(json)
      : typeof value === "object" && value !== null
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [name(k), json(v)]))
      : value
  const entries = session.entries.map((entry): SessionEntry => {
    const m = entry.message
    const message = m.role === "user"
      ? { ...m, id: name(m.id), content: text(m.content) }
      : m.role === "tool"
      ? { ...m, id: name(m.id), toolCallId: name(m.toolCallId), toolName: name(m.toolName), content: text(m.content) }
      : {
        ...m,
        id: name(m.id),
        content: text(m.content),
        toolCalls: m.toolCalls.map((call) => ({ id: name(call.id), name: name(call.name), arguments: json(call.arguments) as Record<string, unknown> }))
      }
    return { ...entry, id: name(entry.id), parentId: entry.parentId === null ? null : name(entry.parentId), message }
  })
  return { header: { ...session.header, id: name(session.header.id) }, entries }
}

/**
 * A reader that goes away ends the command quietly: `session-tree … | head -1` prints the
 * first line and the command exits 0, without an `EPIPE` error or a stack trace, as `cat` and
 * `git` do. Each output is more than a pipe holds (64 KiB), so the command is still writing
 * when `head` exits; `cmp -` that stops at the first difference leaves it writing as well.
 */
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import { runCommand } from "@session-tree/testing/Children"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { bin, removeTempDirs, runCli, tempDir } from "./support.js"

afterAll(removeTempDirs)

/** More than a pipe's buffer, so that the command blocks on a full pipe while `head` exits. */
const MORE_THAN_A_PIPE = 2 * 65_536

let session = ""
let many = ""

beforeAll(async () => {
  const dir = tempDir()
  session = Path.join(dir, "s.jsonl")
  // 2,000 messages in one commit: every view of it is far larger than a pipe holds.
  await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(session, { id: "piped" })
    const bodies = Array.from({ length: 2000 }, (_, i) => ({ kind: "message", message: { role: "user", id: `m-${i}`, content: `message ${i} `.repeat(20) } }))
    yield* store.appendChain(null, bodies)
  })).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))))
  many = Path.join(dir, "many")
  NFS.mkdirSync(many)
  for (let i = 0; i < 1500; i++) {
    const id = `session-${String(i).padStart(4, "0")}`
    NFS.writeFileSync(Path.join(many, `${id}.jsonl`), `{"type":"session","version":2,"id":"${id}","timestamp":"2026-01-02T03:04:05.006Z"}\n`)
  }
}, 180_000)

/** A word of a bash command line, quoted. */
const quoted = (word: string) => `'${word.replaceAll("'", "'\\''")}'`

describe("session-tree … | head -1", { timeout: 180_000 }, () => {
  const cases: ReadonlyArray<readonly [string, () => ReadonlyArray<string>]> = [
    ["export (jsonl)", () => ["export", session]],
    ["export --format markdown", () => ["export", session, "--format", "markdown"]],
    ["log", () => ["log", session]],
    ["list", () => ["list", many]]
  ]
  it.concurrent.for(cases)("%s prints the first line and exits 0, quietly", async ([, args], { expect }) => {
    const whole = await runCli(...args())
    expect(whole.code, whole.stderr).toBe(0)
    expect(whole.stdout.length).toBeGreaterThan(MORE_THAN_A_PIPE)
    const stderrFile = Path.join(tempDir(), "stderr")
    const words = [process.execPath, bin, ...args()].map(quoted).join(" ")
    const piped = await runCommand("bash", ["-c", `${words} 2>${quoted(stderrFile)} | head -1; echo "\${PIPESTATUS[0]}" >${quoted(`${stderrFile}.status`)}`], {
      env: { ...process.env, SESSION_TREE_DB: "", NO_COLOR: "1" }
    })
    expect(piped.code).toBe(0)
    expect(piped.stdout).toBe(`${whole.stdout.split("\n")[0]}\n`)
    const stderr = NFS.readFileSync(stderrFile, "utf8")
    expect(stderr).not.toMatch(/EPIPE|Unhandled|\n\s+at /)
    expect(stderr).toBe("")
    expect(NFS.readFileSync(`${stderrFile}.status`, "utf8").trim()).toBe("0")
  })
})

describe("session-tree export … | cmp - OTHER", { timeout: 180_000 }, () => {
  // `cmp` stops reading at the first byte that differs: the command is left writing to a pipe
  // nobody reads, as under `head`, and must end as quietly.
  const cases: ReadonlyArray<readonly [string, () => ReadonlyArray<string>]> = [
    ["export (jsonl)", () => ["export", session]],
    ["export --format markdown", () => ["export", session, "--format", "markdown"]]
  ]
  it.concurrent.for(cases)("%s exits 0, quietly, when cmp stops at the first difference", async ([, args], { expect }) => {
    const dir = tempDir()
    const other = Path.join(dir, "other")
    NFS.writeFileSync(other, "a file that differs from the first byte on\n")
    const stderrFile = Path.join(dir, "stderr")
    const words = [process.execPath, bin, ...args()].map(quoted).join(" ")
    const piped = await runCommand("bash", ["-c", `${words} 2>${quoted(stderrFile)} | cmp - ${quoted(other)}; echo "\${PIPESTATUS[*]}" >${quoted(`${stderrFile}.status`)}`], {
      env: { ...process.env, SESSION_TREE_DB: "", NO_COLOR: "1" }
    })
    expect(piped.stdout).toMatch(/^- .*other differ: (char|byte) 1, line 1\n$/)
    expect(NFS.readFileSync(stderrFile, "utf8")).toBe("")
    // The command's status, then cmp's (1: the inputs differ).
    expect(NFS.readFileSync(`${stderrFile}.status`, "utf8").trim()).toBe("0 1")
  })
})

/**
 * 9. A second sync over unchanged transcripts: `Sync.sync` of 1,000 Claude Code transcripts (20
 * project directories of 50, as `~/.claude/projects` holds them) already synced into a directory,
 * against a bare walk that only `lstat`s the same files (recursive `readdir` and one `lstat` per
 * name, `node:fs` synchronous calls, no Effect). The goal: at most 2× the bare walk. The first
 * sync of the same tree is shown too, for scale.
 */
import * as Ids from "@session-tree/core/Ids"
import * as Sessions from "@session-tree/core/Sessions"
import * as Sync from "@session-tree/core/Sync"
import * as FileJournal from "@session-tree/file/FileJournal"
import { Fs } from "@session-tree/file/Fs"
import * as SyncFiles from "@session-tree/file/SyncFiles"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { now, rounds, type Row, summarize } from "../harness.js"

export interface SyncBenchOptions {
  readonly rounds: number
  readonly warmup: number
  readonly transcripts?: number
}

const ts = (n: number) => new Date(Date.UTC(2026, 0, 2, 3, 0, 0) + n * 1000).toISOString()

/** A Claude Code transcript of `turns` prompts and answers. */
const transcript = (session: string, turns: number): string => {
  let text = ""
  let parent: string | null = null
  for (let i = 0; i < turns; i++) {
    const u = `u${i}`
    const a = `a${i}`
    text += JSON.stringify({ parentUuid: parent, isSidechain: false, sessionId: session, type: "user", message: { role: "user", content: `question ${i}` }, uuid: u, timestamp: ts(2 * i) }) + "\n"
    text += JSON.stringify({
      parentUuid: u,
      isSidechain: false,
      sessionId: session,
      type: "assistant",
      message: { id: `msg_${session}_${i}`, role: "assistant", model: "m", content: [{ type: "text", text: `answer ${i} `.repeat(20) }], stop_reason: "end_turn" },
      uuid: a,
      timestamp: ts(2 * i + 1)
    }) + "\n"
    parent = a
  }
  return text
}

/** The bare walk: every name under `dir` `lstat`ed once, directories recursed into. */
const statWalk = (dir: string): number => {
  let files = 0
  const stack = [dir]
  while (stack.length > 0) {
    const at = stack.pop()!
    for (const name of NFS.readdirSync(at)) {
      const path = Path.join(at, name)
      const stat = NFS.lstatSync(path)
      if (stat.isDirectory()) stack.push(path)
      else if (stat.isFile() && name.endsWith(".jsonl")) files++
    }
  }
  return files
}

export const benchSync = async (options: SyncBenchOptions, dir: string): Promise<{ readonly rows: Array<Row>; readonly note: string }> => {
  const count = options.transcripts ?? 1_000
  const sources = Path.join(dir, "projects")
  const target = Path.join(dir, "mirror")
  NFS.mkdirSync(target)
  let bytes = 0
  for (let i = 0; i < count; i++) {
    const project = Path.join(sources, `-home-user-project-${i % 20}`)
    if (i < 20) NFS.mkdirSync(project, { recursive: true })
    const session = `b0000000-0000-4000-8000-${String(i).padStart(12, "0")}`
    const text = transcript(session, 10)
    bytes += text.length
    NFS.writeFileSync(Path.join(project, `${session}.jsonl`), text)
  }
  const live = Layer.mergeAll(
    Layer.provideMerge(Sessions.layer, Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom)),
    Layer.effect(Sync.SyncFiles, Effect.map(Fs, (fs) => SyncFiles.make(fs, { state: Path.join(target, SyncFiles.STATE_FILE) }))).pipe(
      Layer.provide(FileJournal.layerWithFs())
    )
  )
  const options_: Sync.SyncOptions = { locate: (id) => Path.join(target, Sync.fileName(id)), exclude: [target] }
  // The services made once, as a process that syncs (the command, a watch) makes them once.
  const runtime = ManagedRuntime.make(live)
  const sync = () => runtime.runPromise(Sync.sync([sources], options_))
  const began = now()
  const first = await sync()
  const firstMs = now() - began
  if (first.sources.filter((s) => s.status === "synced").length !== count) throw new Error("the first sync did not sync every transcript")
  const samples = await rounds([
    {
      name: "bare stat walk (readdir + lstat, node:fs)",
      run: () => {
        if (statWalk(sources) !== count) throw new Error("the walk missed files")
      }
    },
    {
      name: "ours: Sync.sync, every source unchanged",
      run: async () => {
        const report = await sync()
        if (report.sources.some((s) => s.status !== "unchanged")) throw new Error("a source was read again")
      }
    }
  ], options)
  await runtime.dispose()
  // The fastest round of each too: on a busy machine a longer call is interrupted more often, which the medians show as a larger ratio.
  const best = samples.map((s) => Math.min(...s.ms))
  const rows = summarize(`${count} transcripts, ${(bytes / 1e6).toFixed(1)} MB`, samples, "bare stat walk (readdir + lstat, node:fs)", {
    [samples[1]!.name]: `fastest rounds: ${best[1]!.toFixed(2)} ms / ${best[0]!.toFixed(2)} ms = ${(best[1]! / best[0]!).toFixed(2)}×`
  })
  return { rows, note: `the first sync of the same tree took ${(firstMs / 1000).toFixed(1)} s` }
}

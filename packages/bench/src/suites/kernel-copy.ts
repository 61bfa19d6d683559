/**
 * 5. The kernel copy. For a canonical file of at least KERNEL_COPY_MIN_BYTES,
 * a commit copies the current generation with `copyFile` (reflink where the
 * filesystem can, copy_file_range otherwise) and writes only the new lines;
 * below it, the whole generation is written from memory. The threshold is a
 * constant, so both ways are measured by calling the commit
 * (`internal/generation.ts`) directly, with and without `copyPrefix`, on two
 * copies of the same file; and once more with bare node:fs.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Fs from "@session-tree/core/Fs"
import * as Generation from "@session-tree/core/internal/generation"
import { closeQuietly } from "@session-tree/core/internal/io"
import * as Paths from "@session-tree/core/internal/paths"
import { KERNEL_COPY_MIN_BYTES } from "@session-tree/core/SessionStore"
import { conversation, ourFile, prefixOfSize, userMessage } from "../data.js"
import { Bytes, ProtocolFloor } from "../floor.js"
import { rounds, type Row, summarize } from "../harness.js"
import { entryLine } from "./append.js"

export interface KernelCopyOptions {
  readonly rounds: number
  readonly warmup: number
  readonly sizes?: ReadonlyArray<number>
}

const run = <A, E>(effect: Effect.Effect<A, E, Fs.Fs>) => Effect.runPromise(Effect.provideService(effect, Fs.Fs, Fs.make))

/** A generation held open and committed to directly, as the store does it. */
class Committer {
  private readonly paths: Paths.SessionPaths
  private base!: Generation.Held
  private dirHandle!: Fs.Handle
  private dirId!: Fs.FileId
  readonly bytes: Bytes
  private constructor(path: string, initial: Uint8Array) {
    this.paths = Paths.make(path)
    this.bytes = new Bytes(initial)
  }
  static async open(path: string): Promise<Committer> {
    const c = new Committer(path, NFS.readFileSync(path))
    const opened = await run(Generation.open(c.paths))
    c.base = opened.held
    c.dirId = opened.dir
    c.dirHandle = await run(Generation.openDirectory(c.paths, opened.dir))
    return c
  }
  async commit(line: Uint8Array, kernelCopy: boolean): Promise<void> {
    const prefix = this.bytes.length
    this.bytes.append(line)
    const result = await run(Generation.commit(Fs.make, {
      paths: this.paths,
      dirHandle: this.dirHandle,
      dirId: this.dirId,
      base: this.base,
      bytes: this.bytes.view(),
      copyPrefix: kernelCopy ? prefix : 0
    }))
    if (result._tag !== "Committed") throw result.error
    await run(closeQuietly(this.base.handle))
    this.base = result.held
  }
  async close(): Promise<void> {
    await run(closeQuietly(this.base.handle))
    await run(closeQuietly(this.dirHandle))
  }
}

export const benchKernelCopy = async (options: KernelCopyOptions, dir: string): Promise<Array<Row>> => {
  const full = conversation({ entries: 4_096 })
  const rows: Array<Row> = []
  for (const size of options.sizes ?? [KERNEL_COPY_MIN_BYTES, 1024 * 1024, 4_000_000]) {
    const start = ourFile(prefixOfSize(full, size))
    const names = ["copy", "write", "floor-copy", "floor-write"].map((n) => Path.join(dir, `kc-${size}-${n}.jsonl`))
    for (const name of names) NFS.writeFileSync(name, start)
    const copy = await Committer.open(names[0]!)
    const write = await Committer.open(names[1]!)
    const floorCopy = new ProtocolFloor(names[2]!)
    const floorWrite = new ProtocolFloor(names[3]!)
    const parent = full.entries[0]!.id
    let i = 0
    try {
      const samples = await rounds([
        { name: "commit with kernel copy", run: () => copy.commit(entryLine(parent, userMessage(++i)), true) },
        { name: "commit writing everything", run: () => write.commit(entryLine(parent, userMessage(++i)), false) },
        { name: "bare node:fs, copyFile + write", run: () => floorCopy.append(entryLine(parent, userMessage(++i)), true) },
        { name: "bare node:fs, write everything", run: () => floorWrite.append(entryLine(parent, userMessage(++i)), false) }
      ], options)
      const label = start.length >= 1e6 ? `${(start.length / 1e6).toFixed(1)} MB` : `${Math.round(start.length / 1024)} KB`
      rows.push(...summarize(`commit at ${label}`, samples, "commit writing everything"))
    } finally {
      await copy.close()
      await write.close()
      floorCopy.close()
      floorWrite.close()
    }
    for (const name of names) NFS.unlinkSync(name)
  }
  return rows
}

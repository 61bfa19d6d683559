/**
 * 5. The kernel copy. For a canonical file of at least KERNEL_COPY_MIN_BYTES,
 * a commit copies the current generation with `copyFile` (reflink where the
 * filesystem can, copy_file_range otherwise) and writes only the new lines;
 * below it, the whole generation is written from memory. Both ways are
 * measured as `store.append` on two copies of the same file, one store with
 * the default threshold and one with `kernelCopyFrom: Infinity`; and once
 * more with bare node:fs.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { KERNEL_COPY_MIN_BYTES } from "@session-tree/file/FileJournal"
import { conversation, ourFile, prefixOfSize, userMessage } from "../data.js"
import { ProtocolFloor } from "../floor.js"
import { rounds, type Row, summarize } from "../harness.js"
import * as Ours from "../ours.js"
import { entryLine } from "./append.js"

export interface KernelCopyOptions {
  readonly rounds: number
  readonly warmup: number
  readonly sizes?: ReadonlyArray<number>
}

export const benchKernelCopy = async (options: KernelCopyOptions, dir: string): Promise<Array<Row>> => {
  const full = conversation({ entries: 4_096 })
  const rows: Array<Row> = []
  for (const size of options.sizes ?? [KERNEL_COPY_MIN_BYTES, 1024 * 1024, 4_000_000]) {
    const start = ourFile(prefixOfSize(full, size))
    const names = ["copy", "write", "floor-copy", "floor-write"].map((n) => Path.join(dir, `kc-${size}-${n}.jsonl`))
    for (const name of names) NFS.writeFileSync(name, start)
    const copy = await Ours.load(names[0]!)
    const write = await Ours.load(names[1]!, undefined, { kernelCopyFrom: Infinity })
    const floorCopy = new ProtocolFloor(names[2]!)
    const floorWrite = new ProtocolFloor(names[3]!)
    const parent = full.entries[0]!.id
    let i = 0
    try {
      const samples = await rounds([
        { name: "commit with kernel copy", run: () => Ours.append(copy.store, parent, userMessage(++i)) },
        { name: "commit writing everything", run: () => Ours.append(write.store, parent, userMessage(++i)) },
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

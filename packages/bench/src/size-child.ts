/**
 * One load in a process of its own, for the memory it takes: started by the
 * load part of `npm run bench:size`, one process per loader, so that what one
 * loader leaves on the heap does not count against another.
 *
 *   size-child.ts floor|read|load|pi PATH
 *
 * Prints one JSON object: the load's time, the resident set before it and at
 * its peak (the kernel's high-water mark), and the heap right after it and
 * after a full GC with the result still held.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { getHeapStatistics, setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import * as Ours from "./ours.js"
import { pi } from "./pi.js"
import { floorLoad } from "./suites/load.js"

setFlagsFromString("--expose-gc")
const gc = runInNewContext("gc") as () => void

const [variant, path] = process.argv.slice(2)
if (path === undefined) throw new Error("usage: size-child.ts floor|read|load|pi PATH")

// Every module a loader needs is in memory before the baseline is taken; Pi's (its whole agent) only in Pi's process.
const piModule = variant === "pi" ? await pi() : undefined

/** Runs the loader; returns what it loaded (held until the heap is measured) and its entry count. */
const load = async (): Promise<{ readonly held: unknown; readonly entries: number }> => {
  switch (variant) {
    case "floor": {
      const records = floorLoad(path)
      return { held: records, entries: records.length - 1 }
    }
    case "read": {
      const loaded = await Ours.read(path)
      return { held: loaded, entries: loaded.entries.length }
    }
    case "load": {
      const open = await Ours.load(path)
      const entries = open.store.entries
      await open.close()
      return { held: entries, entries: entries.length }
    }
    case "pi": {
      const sm = piModule!.SessionManager.open(path, Path.dirname(path))
      return { held: sm, entries: sm.getEntries().length }
    }
    default:
      throw new Error(`no loader ${variant}`)
  }
}

gc()
const rssBefore = process.memoryUsage().rss
const heapBefore = getHeapStatistics().used_heap_size
const start = performance.now()
const { entries, held } = await load()
const ms = performance.now() - start
const afterLoad = getHeapStatistics()
const external = process.memoryUsage().external
gc()
const afterGc = getHeapStatistics()
const peakRss = process.resourceUsage().maxRSS * 1024
NFS.writeSync(1, JSON.stringify({
  variant,
  ms,
  entries,
  rssBefore,
  peakRss,
  heapBefore,
  heapUsedAfterLoad: afterLoad.used_heap_size,
  heapTotalAfterLoad: afterLoad.total_heap_size,
  heapHeld: afterGc.used_heap_size,
  external,
  held: held !== undefined
}) + "\n")

/**
 * Shared knobs of the reliability suite: `npm test` runs every file with small
 * counts; `RELIABILITY=long` (npm run test:reliability) runs the full counts.
 */
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"

export const LONG = process.env["RELIABILITY"] === "long"

/** The count for this run: `fast` inside `npm test`, `long` for the long run. */
export const count = (fast: number, long: number): number => (LONG ? long : fast)

/** Prints one figure of the run so it shows in the vitest output and in the long-run log. */
export const report = (suite: string, figures: Record<string, unknown>): void => {
  console.log(`[reliability:${suite}] ${LONG ? "long" : "fast"} ${JSON.stringify(figures)}`)
}

/**
 * Scratch directories for states that are created and thrown away by the thousand:
 * tmpfs (/dev/shm) when there is one, so directory fsyncs cost nothing; the
 * protocol's behaviour does not depend on the filesystem type.
 */
const scratchRoot = (() => {
  try {
    const probe = NFS.mkdtempSync("/dev/shm/st-probe-")
    NFS.rmSync(probe, { recursive: true })
    return "/dev/shm"
  } catch {
    return OS.tmpdir()
  }
})()

export const fastTempDir = (prefix: string): string => NFS.mkdtempSync(Path.join(scratchRoot, `st-${prefix}-`))

/** A directory on the ordinary temp filesystem (real fsync costs, real kernel behaviour). */
export const diskTempDir = (prefix: string): string => NFS.mkdtempSync(Path.join(OS.tmpdir(), `st-${prefix}-`))

export const removeDir = (dir: string): void => NFS.rmSync(dir, { recursive: true, force: true })

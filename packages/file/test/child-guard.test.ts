/**
 * The guard of the test runs (`@session-tree/testing/ChildGuard`): a child a test started and
 * left running fails the run with its command, and so does a grandchild that outlived the
 * wrapper that started it (the `tsx` command's way); children that are gone pass.
 */
import { check } from "@session-tree/testing/ChildGuard"
import { runNode, spawnChild } from "@session-tree/testing/Children"
import { isAlive, REGISTRY, startTime, type Tracked } from "@session-tree/testing/Tracked"
import { spawn } from "node:child_process"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const SLEEPER = "setInterval(() => {}, 1000)"

/** A registry of its own, apart from the run's. */
const registry = () => NFS.mkdtempSync(Path.join(OS.tmpdir(), "session-tree-guard-"))

const write = (dir: string, tracked: Tracked) => NFS.appendFileSync(Path.join(dir, "test.jsonl"), `${JSON.stringify(tracked)}\n`)

describe("the guard of a test run", () => {
  it("fails naming a tracked child still alive, and kills it", async () => {
    const dir = registry()
    const child = spawnChild(["-e", SLEEPER], ["left-running"])
    const pid = child.proc.pid!
    write(dir, { pid, start: startTime(pid), command: [process.execPath, "-e", SLEEPER, "left-running"] })
    await expect(check(dir, { graceMs: 200 })).rejects.toThrow(new RegExp(`pid ${pid}: .*left-running`))
    expect((await child.exited).signal).toBe("SIGKILL")
    expect(NFS.existsSync(dir)).toBe(false)
  })

  it("fails naming a grandchild that outlived the wrapper that started it", async () => {
    const dir = registry()
    // The wrapper starts the worker in the background, prints its PID, and is killed.
    const wrapper = spawn("sh", ["-c", `"${process.execPath}" -e "${SLEEPER}" orphan >/dev/null & echo $!; wait`], {
      env: { ...process.env, [REGISTRY]: dir },
      stdio: ["ignore", "pipe", "ignore"]
    })
    const pid = await new Promise<number>((resolve) => wrapper.stdout.once("data", (chunk: Buffer) => resolve(Number(String(chunk).trim()))))
    const orphan = { pid, start: startTime(pid) }
    try {
      wrapper.kill("SIGKILL")
      await new Promise((resolve) => wrapper.once("exit", resolve))
      expect(isAlive(orphan)).toBe(true)
      await expect(check(dir, { graceMs: 200 })).rejects.toThrow(new RegExp(`pid ${pid}: .*orphan`))
      for (let i = 0; i < 50 && isAlive(orphan); i++) await new Promise((resolve) => setTimeout(resolve, 100))
      expect(isAlive(orphan)).toBe(false)
    } finally {
      // Its environment names this test's registry, not the run's: the run's guard would not see it.
      if (isAlive(orphan)) process.kill(pid, "SIGKILL")
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("passes when every child is gone", async () => {
    const dir = registry()
    const ran = await runNode(["-e", "process.stdout.write(String(process.pid))"])
    write(dir, { pid: Number(ran.stdout), start: undefined, command: [process.execPath, "-e", "…"] })
    await expect(check(dir, { graceMs: 200 })).resolves.toBeUndefined()
  })
})

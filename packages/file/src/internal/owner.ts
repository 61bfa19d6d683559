/**
 * Who is committing: each commit names its temp files after the writer's boot,
 * pid and process start time, so `recover` can prove that the writer of a left
 * over marker is gone (another boot, no such pid, or a pid reused by a process
 * that started later) before it touches anything. These reads are of /proc, not
 * of session data, so they do not go through the filesystem service.
 */
import { globalValue } from "effect/GlobalValue"
import * as NFS from "node:fs"

const readOr = (path: string, fallback: string): string => {
  try {
    return NFS.readFileSync(path, "utf8")
  } catch {
    return fallback
  }
}

/** The start time of `pid` in clock ticks since boot (field 22 of /proc/PID/stat), or undefined. */
const startTimeOf = (pid: number): string | undefined => {
  const stat = readOr(`/proc/${pid}/stat`, "")
  if (stat === "") return undefined
  // The command name (field 2) may hold spaces and parentheses: split after its closing one.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return fields[19]
}

export interface Owner {
  readonly boot: string
  readonly pid: number
  readonly start: string
}

export const format = (owner: Owner): string => `${owner.boot}-${owner.pid}-${owner.start}`

/**
 * This process as its names show it, and the sequence that makes each name it makes unique: one
 * per process, however many journals it builds (names of two journals beside one file must differ),
 * read from /proc when first asked for, not when the module loads.
 */
interface Identity {
  readonly owner: Owner
  /** `format(owner)`, as every name of this process holds it. */
  readonly name: string
  seq: number
}

const identity = (): Identity =>
  globalValue(Symbol.for("@session-tree/file/Owner"), () => {
    const boot = readOr("/proc/sys/kernel/random/boot_id", "00000000").replace(/-/g, "").slice(0, 8)
    const owner: Owner = { boot, pid: process.pid, start: startTimeOf(process.pid) ?? "0" }
    return { owner, name: format(owner), seq: 0 }
  })

/** This process, as the names it makes show it. */
export const self = (): Owner => identity().owner

/** `format(self())`. */
export const selfName = (): string => identity().name

/** A number no earlier call in this process returned: with `selfName`, a name no other writer makes. */
export const nextSeq = (): number => ++identity().seq

const OWNER = /^([0-9a-f]{8})-(\d+)-(\d+)$/

export const parse = (text: string): Owner | undefined => {
  const m = OWNER.exec(text)
  return m === null ? undefined : { boot: m[1]!, pid: Number(m[2]), start: m[3]! }
}

/**
 * Whether the owner may still be running. This process counts as gone: callers
 * hold the in-process path lock, so none of its own commits is in flight.
 */
export const isAlive = (owner: Owner): boolean => {
  const me = self()
  if (owner.boot !== me.boot) return false
  if (owner.pid === me.pid) return false
  const start = startTimeOf(owner.pid)
  if (start !== undefined) return start === owner.start
  if (me.start !== "0") return false // /proc works here and has no such pid
  try {
    process.kill(owner.pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM"
  }
}

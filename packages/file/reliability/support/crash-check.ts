/**
 * Replays a recorded trace into the crash model and checks every crash state
 * against the durability promises (SPEC B5): each state is materialised into a
 * real directory, `Recovery.recover` runs when anything besides the file is
 * there, then `SessionStore.read` must find exactly one of the generations the
 * trace installed and that a crash at that point may still show.
 */
import * as Effect from "effect/Effect"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { decode as decodeSession } from "../../src/Jsonl.js"
import * as Recovery from "../../src/Recovery.js"
import * as Either from "effect/Either"
import * as SessionStore from "@session-tree/core/SessionStore"
import { fastTempDir, removeDir } from "./config.js"
import { type CrashState, type CutMode, digest, Model } from "./posix-model.js"
import { attempt, codeOf, prefixedIds, user } from "./run.js"
import { describe as describeEvent, type TraceEvent } from "./trace.js"

export interface TraceCheck {
  readonly name: string
  /** Where the trace was recorded; the session file is `dir/base`. */
  readonly dir: string
  readonly base: string
  /** The model of `dir` before the first event. */
  readonly initial: Model
  readonly events: ReadonlyArray<TraceEvent>
  /** Crash states are enumerated from this step on; earlier events (the setup) are only replayed. */
  readonly from?: number
  readonly mode: CutMode
  /** After recovery, also load the file and append one entry (the file is usable again): for every state, or every n-th. */
  readonly appendAfter: boolean | number
}

export interface TraceReport {
  readonly name: string
  readonly steps: number
  /** Trace positions (prefixes) whose crash states were enumerated: those after a step that changed the model. */
  readonly prefixes: number
  /** Crash states enumerated, summed over those prefixes. */
  readonly states: number
  /** Distinct on-disk states among them, each materialised and checked once. */
  readonly distinct: number
  /** How many crash states ended at each outcome: "G<i>" (the i-th distinct generation; G0 is the initial one, maybe no file). */
  readonly outcomes: Record<string, number>
  /** The first step after which some crash state shows a generation newer than the initial one. */
  readonly firstVisible: string
  /** The step from which on every crash state shows the final generation. */
  readonly durableFrom: string
  readonly violations: ReadonlyArray<string>
}

interface Generation {
  readonly bytes: Uint8Array | undefined
  readonly ids: ReadonlyArray<string> | undefined
}

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array | undefined): boolean =>
  a === undefined || b === undefined ? a === b : a.length === b.length && Buffer.compare(a, b) === 0

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/** The names a commit may leave beside the file, written down independently of `paths.ts`. */
export const leftoverPattern = (base: string): RegExp =>
  new RegExp(`^${escapeRe(base)}\\.(marker|(tmp|next|rollback)-[0-9a-f]{8}-\\d+-\\d+-\\d+)$`)

const stateKey = (state: CrashState): string =>
  state.files
    .map((f) => `${f.names.join("+")}${f.symlink === true ? "@" : "="}${digest(f.bytes)}`)
    .sort()
    .join("|")

/** Runs `task`s at most `n` at a time: each check waits mostly on filesystem round trips. */
const limiter = (n: number) => {
  let active = 0
  const queue: Array<() => void> = []
  return <A>(task: () => Promise<A>): Promise<A> =>
    new Promise<A>((resolve, reject) => {
      const start = () => {
        active++
        task().then(resolve, reject).finally(() => {
          active--
          queue.shift()?.()
        })
      }
      if (active < n) start()
      else queue.push(start)
    })
}

const materialise = (dir: string, state: CrashState): void => {
  for (const file of state.files) {
    const [first, ...others] = file.names
    if (file.symlink === true) {
      NFS.symlinkSync(Buffer.from(file.bytes).toString("utf8"), Path.join(dir, first!))
      continue
    }
    NFS.writeFileSync(Path.join(dir, first!), file.bytes)
    for (const other of others) NFS.linkSync(Path.join(dir, first!), Path.join(dir, other))
  }
}

/** A name's content: a symbolic link's text, else the file's bytes. */
const entryDigest = (path: string): string =>
  NFS.lstatSync(path).isSymbolicLink() ? `link:${NFS.readlinkSync(path)}` : digest(NFS.readFileSync(path))

const describeState = (state: CrashState): string =>
  `survived [${state.survived.join("; ")}] files [${state.files.map((f) => `${f.names.join("+")}:${f.data}(${f.bytes.length}B)`).join(", ")}]`

export const checkTrace = async (input: TraceCheck): Promise<TraceReport> => {
  const { base, events } = input
  const leftover = leftoverPattern(base)

  // Pass 1: which generations the path holds, in install order, and where promises were made.
  const generations: Array<Generation> = []
  const genIndex = (bytes: Uint8Array | undefined): number => {
    const i = generations.findIndex((g) => sameBytes(g.bytes, bytes))
    if (i >= 0) return i
    let ids: ReadonlyArray<string> | undefined
    if (bytes !== undefined) {
      const decoded = decodeSession(bytes)
      ids = Either.isLeft(decoded) ? undefined : decoded.right.history.entries.map((e) => e.id)
    }
    generations.push({ bytes, ids })
    return generations.length - 1
  }
  const installs: Array<number> = []
  /** floors[k]: index into `installs` of the oldest generation a crash after k steps may still show. */
  const floors: Array<number> = []
  {
    const model = input.initial.clone()
    installs.push(genIndex(model.current(base)))
    let floor = 0
    floors.push(floor)
    for (const event of events) {
      model.apply(event)
      const now = genIndex(model.current(base))
      if (now !== installs[installs.length - 1]) installs.push(now)
      if (event.op === "settled") floor = installs.length - 1
      floors.push(floor)
    }
  }
  const allowedFrom = (floor: number) => new Set(installs.slice(floor))
  const finalGen = installs[installs.length - 1]!

  // Pass 2: crash states after every prefix.
  const root = fastTempDir(`crash-${input.name.replace(/\W+/g, "-")}`)
  const outcomes: Record<string, number> = {}
  const violations: Array<string> = []
  const prefixOutcomes: Array<Set<string> | undefined> = []
  let states = 0
  let prefixes = 0
  let materialised = 0
  const model = input.initial.clone()
  const label = (k: number) => (k === 0 ? "(before the first step)" : `step ${k}: ${describeEvent(events[k - 1]!, input.dir)}`)

  const classify = async (state: CrashState): Promise<string> => {
    const index = materialised++
    const dir = Path.join(root, String(index))
    NFS.mkdirSync(dir)
    try {
      materialise(dir, state)
      const path = Path.join(dir, base)
      const before = NFS.readdirSync(dir)
      const strange = before.filter((n) => n !== base && !leftover.test(n))
      if (strange.length > 0) return `unrecognisable names ${strange.join(", ")}`
      // A load before recovery never writes, and never shows what recovery would not keep (part of a batch).
      let early: ReadonlyArray<string> | undefined
      if (before.some((n) => n !== base)) {
        const snapshot = before.map((n) => `${n}:${entryDigest(Path.join(dir, n))}`).join("|")
        const read = await attempt(SessionStore.read(path))
        if (read._tag === "Right") early = read.right.entries.map((e) => e.id)
        const now = NFS.readdirSync(dir).map((n) => `${n}:${entryDigest(Path.join(dir, n))}`).join("|")
        if (now !== snapshot) return "a load before recovery changed the directory"
        const recovered = await attempt(Recovery.recover(path))
        if (recovered._tag === "Left") return `recover failed: ${recovered.left.message}`
      }
      const after = NFS.readdirSync(dir).filter((n) => n !== base)
      if (after.length > 0) return `left beside the file after recover: ${after.join(", ")}`
      const bytes = NFS.existsSync(path) ? NFS.readFileSync(path) : undefined
      const g = generations.findIndex((gen) => sameBytes(gen.bytes, bytes))
      const loaded = await attempt(SessionStore.read(path))
      if (bytes === undefined) {
        if (loaded._tag === "Right" || loaded.left.code !== "SESSION_NOT_FOUND") return `no file, but read gave ${loaded._tag === "Right" ? "a session" : loaded.left.code}`
        if (g < 0) return "no file"
      } else {
        if (g < 0) return `the file is no generation of the trace (${bytes.length} bytes; read: ${loaded._tag === "Right" ? `${loaded.right.entries.length} entries` : loaded.left.code})`
        if (loaded._tag === "Left") return `generation G${g} fails to load: ${loaded.left.message}`
        const ids = loaded.right.entries.map((e) => e.id)
        if (JSON.stringify(ids) !== JSON.stringify(generations[g]!.ids)) return `generation G${g} loads other entries`
        if (early !== undefined && JSON.stringify(early) !== JSON.stringify(ids)) {
          return `a load before recovery showed ${early.length} entries, recovery kept G${g} (${ids.length})`
        }
        if (input.appendAfter === true || (typeof input.appendAfter === "number" && index % input.appendAfter === 0)) {
          const appended = await attempt(Effect.gen(function*() {
            const store = yield* SessionStore.load(path)
            const last = store.entries[store.entries.length - 1]
            return yield* store.append(last?.id ?? null, user("after-crash", "after crash"))
          }), undefined, prefixedIds(`after-crash-${index}`))
          if (appended._tag === "Left") return `G${g}: append after recovery failed: ${codeOf(appended.left)} ${appended.left.message}`
          const rest = NFS.readdirSync(dir).filter((n) => n !== base)
          if (rest.length > 0) return `G${g}: append after recovery left ${rest.join(", ")}`
        }
      }
      return `G${g}`
    } finally {
      removeDir(dir)
    }
  }

  // Every distinct state is checked once, several at a time; the verdicts are read in trace order after.
  const limit = limiter(12)
  const cache = new Map<string, Promise<string>>()
  const visited: Array<{ readonly k: number; readonly allowed: Set<number>; readonly states: Array<{ readonly key: string; readonly state: CrashState }> } | undefined> = []
  try {
    const from = input.from ?? 0
    for (let k = 0; k <= events.length; k++) {
      const changed = k === 0 ? true : model.apply(events[k - 1]!)
      const floorChanged = k > 0 && floors[k] !== floors[k - 1]
      if (k < from || (!changed && !floorChanged && k > from)) {
        visited.push(undefined)
        continue
      }
      prefixes++
      const list: Array<{ readonly key: string; readonly state: CrashState }> = []
      for (const state of model.crashStates(input.mode)) {
        states++
        const key = stateKey(state)
        if (!cache.has(key)) cache.set(key, limit(() => classify(state)))
        list.push({ key, state })
      }
      visited.push({ k, allowed: allowedFrom(floors[k]!), states: list })
    }
    let last: Set<string> | undefined
    for (const v of visited) {
      if (v === undefined) {
        prefixOutcomes.push(last)
        continue
      }
      const seen = new Set<string>()
      for (const { key, state } of v.states) {
        const outcome = await cache.get(key)!
        seen.add(outcome)
        const g = /^G\d+$/.test(outcome) ? Number(outcome.slice(1)) : -1
        const bucket = g >= 0 ? outcome : "violation"
        outcomes[bucket] = (outcomes[bucket] ?? 0) + 1
        if ((g < 0 || !v.allowed.has(g)) && violations.length < 20) {
          violations.push(
            `${input.name}: crash after ${label(v.k)}: ${outcome}${g >= 0 ? ` (allowed here: ${[...v.allowed].map((a) => `G${a}`).join(", ")})` : ""}; ${describeState(state)}`
          )
        }
      }
      prefixOutcomes.push(seen)
      last = seen
    }
  } finally {
    await Promise.allSettled(cache.values())
    removeDir(root)
  }

  const finalLabel = `G${finalGen}`
  // The first prefix from which every crash state shows the final generation.
  let durable = events.length + 1
  while (durable > 0) {
    const o = prefixOutcomes[durable - 1]
    if (o === undefined || o.size !== 1 || !o.has(finalLabel)) break
    durable--
  }
  const initialLabel = `G${installs[floors[input.from ?? 0]!]}`
  const visible = prefixOutcomes.findIndex((o) => o !== undefined && [...o].some((x) => x !== initialLabel))
  return {
    name: input.name,
    steps: events.slice(input.from ?? 0).filter((e) => e.op !== "settled").length,
    prefixes,
    states,
    distinct: cache.size,
    outcomes,
    firstVisible: visible < 0 ? "(never)" : label(visible),
    durableFrom: durable > events.length ? "(never)" : label(durable),
    violations
  }
}

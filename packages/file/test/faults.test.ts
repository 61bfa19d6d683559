/**
 * Fault injection at every filesystem step of `create` and `append` (SPEC Part A
 * "atomic commit", B5). A clean run records the steps; then every step is failed
 * once with every kind. Whatever fails, memory keeps the old generation, the file
 * holds the old or (only once the commit is finalised) the new generation, the
 * next commit leaves no name of ours behind and is durable. A second fault in the
 * rollback reaches SESSION_ROLLBACK_FAILED, and only there; `recover` resolves it.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Scope from "effect/Scope"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { encodeLine } from "@session-tree/core/Codec"
import type { Step } from "../src/Fs.js"
import type { SessionJournal } from "@session-tree/core/SessionJournal"
import type { Fs } from "../src/Fs.js"
import type { Ids } from "@session-tree/core/Ids"
import type { Entry, SessionEntry, SessionHeader } from "@session-tree/core/Record"
import * as Recovery from "../src/Recovery.js"
import { isSessionError, type SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import { KERNEL_COPY_MIN_BYTES } from "../src/FileJournal.js"
import {
  bytesDiffer,
  canonical,
  describeStep,
  ERRNO_KINDS,
  type FaultKind,
  type Injector,
  kindsFor,
  layerWith,
  listing,
  makeInjector,
  openFds,
  tempDir,
  user
} from "./fixtures/helpers.js"

const NAME = "s.jsonl"
const TS = "2026-01-02T03:04:05.006Z"

const header: SessionHeader = { type: "session", version: 1, id: "sess", timestamp: TS }
const entry = (id: string, parentId: string | null, content: string): SessionEntry => ({
  type: "entry",
  version: 1,
  id,
  parentId,
  timestamp: TS,
  message: { role: "user", id: `m-${id}`, content }
})

interface Scenario {
  readonly name: string
  /** Builds the store the faulted append runs on; nothing is recorded meanwhile. */
  readonly setup: (path: string) => Effect.Effect<SessionStore.SessionStore, SessionError, Fs | SessionJournal | Ids | Scope.Scope>
}

/** A store after three appends. */
const later = (version: 1 | 2) => (path: string) =>
  Effect.gen(function*() {
    const store = yield* SessionStore.create(path, { version })
    let parent: string | null = null
    for (let i = 0; i < 3; i++) parent = (yield* store.append(parent, user(`u${i}`, `before ${i}`))).id
    return store
  })

const scenarios: ReadonlyArray<Scenario> = [
  { name: "the first generation", setup: (path) => SessionStore.create(path, { version: 1 }) },
  { name: "a later generation", setup: later(1) },
  {
    name: "the first append after loading a recovered incomplete tail",
    setup: (path) =>
      Effect.suspend(() => {
        const lines = [header, entry("e1", null, "one"), entry("e2", "e1", "two")].map(encodeLine).join("")
        NFS.writeFileSync(path, `${lines}{"type":"entry","id":"cut`)
        return SessionStore.load(path)
      })
  },
  {
    name: "a kernel-copied generation (canonical file above the copy threshold)",
    setup: (path) =>
      Effect.suspend(() => {
        const records: Array<SessionHeader | SessionEntry> = [header]
        const filler = "x".repeat(60_000)
        let size = encodeLine(header).length
        for (let i = 0; size < KERNEL_COPY_MIN_BYTES + 1000; i++) {
          const e = entry(`e${i}`, i === 0 ? null : `e${i - 1}`, filler)
          records.push(e)
          size += encodeLine(e).length
        }
        NFS.writeFileSync(path, records.map(encodeLine).join(""))
        return SessionStore.load(path)
      })
  },
  // Version 2 appends in place behind an intent (see `docs/format.md`); its first commit after a
  // skipped tail still writes the canonical generation whole.
  { name: "version 2: the first append", setup: (path) => SessionStore.create(path) },
  { name: "version 2: a later append", setup: later(2) },
  {
    name: "version 2: the first append after loading a recovered incomplete tail",
    setup: (path) =>
      Effect.gen(function*() {
        yield* Effect.scoped(later(2)(path))
        NFS.appendFileSync(path, `{"type":"entry","id":"cut`)
        return yield* SessionStore.load(path)
      })
  }
]

/** A second fault goes into these: one of each protocol, and the kernel copy. */
const rollbackScenarios = scenarios.filter((s) => ["a later generation", "a kernel-copied generation (canonical file above the copy threshold)", "version 2: a later append"].includes(s.name))

/** The parent the faulted append uses: the newest entry. */
const leafOf = (store: SessionStore.SessionStore) => store.entries.at(-1)?.id ?? null

const isRenameOntoPath = (step: Step) => step.op === "rename" && step.target !== undefined && Path.basename(step.target) === NAME

/**
 * The step that commits: the rename of a generation onto the path, or the data sync of a batch
 * appended in place. A fault after it cannot fail the append.
 */
const commitIndex = (steps: ReadonlyArray<Step>): number => {
  const rename = steps.findIndex(isRenameOntoPath)
  return rename >= 0 ? rename : steps.findIndex((s) => s.op === "fdatasync" && Path.basename(s.path) === NAME)
}

/** Cleanup of the commit's own temp names and descriptors: failing there must never lock the store. */
const isOwnNameCleanup = (step: Step) =>
  step.op === "close" || (step.op === "unlink" && /\.(tmp|next)-/.test(Path.basename(step.path)))

interface Outcome {
  readonly result: Either.Either<Entry, SessionError>
  readonly steps: ReadonlyArray<Step>
}

/** Appends once more without faults and checks that it is durable and that only the session file remains. */
const appendCleanly = (store: SessionStore.SessionStore, dir: string, path: string) =>
  Effect.gen(function*() {
    const added = yield* store.append(leafOf(store), user("m-next", "after the fault"))
    expect(store.entries.at(-1)).toBe(added)
    expect(bytesDiffer(NFS.readFileSync(path), canonical(store.header, store.entries))).toBeUndefined()
    expect(listing(dir)).toEqual([NAME])
    const reread = yield* SessionStore.read(path)
    expect(reread.entries.map((e) => e.id)).toEqual(store.entries.map((e) => e.id))
  })

/**
 * Runs one scenario with `plan` injected into its append, checks the single-fault
 * invariants (or, with `locking`, the locked state) and returns what happened.
 */
const runAppend = (
  scenario: Scenario,
  plan: ReadonlyMap<number, FaultKind>,
  check: (ctx: {
    readonly outcome: Outcome
    readonly store: SessionStore.SessionStore
    readonly dir: string
    readonly path: string
    readonly before: { readonly bytes: Buffer; readonly entries: ReadonlyArray<Entry> }
    readonly injector: Injector
  }) => Effect.Effect<void, SessionError, Fs | SessionJournal | Ids | Scope.Scope>
): Effect.Effect<Outcome, SessionError> =>
  Effect.scoped(Effect.gen(function*() {
    const dir = yield* tempDir
    const path = Path.join(dir, NAME)
    const injector = makeInjector()
    return yield* Effect.gen(function*() {
      const store = yield* scenario.setup(path)
      const before = { bytes: NFS.readFileSync(path), entries: store.entries }
      injector.start(plan)
      const result = yield* Effect.either(store.append(leafOf(store), user("m-fault", "the faulted append")))
      const steps = injector.stop()
      expect(injector.injected.map((i) => i.index)).toEqual([...plan.keys()].filter((k) => k < steps.length))
      const outcome = { result, steps }
      yield* check({ outcome, store, dir, path, before, injector })
      return outcome
    }).pipe(Effect.provide(layerWith(injector)))
  }))

/** Single fault: old generation everywhere, or the new one only once the rename is behind. */
const checkSingle = (renameIndex: number, k: number, isClose = false) =>
({ before, dir, outcome, path, store }: Parameters<Parameters<typeof runAppend>[2]>[0]) =>
  Effect.gen(function*() {
    if (Either.isLeft(outcome.result)) {
      const error = outcome.result.left
      expect(isSessionError(error)).toBe(true)
      expect(["SESSION_IO", "SESSION_BUSY", "SESSION_REPLACED"]).toContain(error.code)
      expect(store.entries).toBe(before.entries)
      expect(bytesDiffer(NFS.readFileSync(path), before.bytes)).toBeUndefined()
      const reread = yield* SessionStore.read(path)
      expect(reread.entries.map((e) => e.id)).toEqual(before.entries.map((e) => e.id))
    } else {
      // Accepted only when the fault hit a step after the commit (final temp or intent unlink, closing the old
      // handle), or a close, which releases the descriptor even when it fails (the intent's, before the batch).
      if (!isClose) expect(k).toBeGreaterThan(renameIndex)
      expect(store.entries.at(-1)).toBe(outcome.result.right)
      expect(bytesDiffer(NFS.readFileSync(path), canonical(store.header, store.entries))).toBeUndefined()
    }
    yield* appendCleanly(store, dir, path)
  })

const cleanSteps = (scenario: Scenario) =>
  Effect.runPromise(runAppend(scenario, new Map(), ({ dir, outcome, path, store }) =>
    Effect.gen(function*() {
      expect(Either.isRight(outcome.result)).toBe(true)
      yield* appendCleanly(store, dir, path)
    })).pipe(Effect.map((o) => o.steps)))

describe("append: one fault at every step", () => {
  for (const scenario of scenarios) {
    it(scenario.name, async () => {
      const fdsBefore = openFds()
      const steps = await cleanSteps(scenario)
      const renameIndex = commitIndex(steps)
      expect(renameIndex).toBeGreaterThan(0)
      if (scenario.name === "version 2: a later append") expect(steps.some(isRenameOntoPath)).toBe(false)
      if (scenario.name.includes("incomplete tail")) expect(steps.some(isRenameOntoPath)).toBe(true)
      if (scenario.name.startsWith("a kernel-copied")) expect(steps.some((s) => s.op === "copyFile")).toBe(true)
      let failed = 0
      let succeeded = 0
      for (let k = 0; k < steps.length; k++) {
        for (const kind of kindsFor(steps[k]!)) {
          const outcome = await Effect.runPromise(
            runAppend(scenario, new Map([[k, kind]]), checkSingle(renameIndex, k, steps[k]!.op === "close"))
          ).catch((e) => {
            throw new Error(`fault ${kind} at step ${k} (${describeStep(steps[k]!)}): ${String(e)}`)
          })
          // The steps before the fault are those of the clean run.
          expect(outcome.steps.slice(0, k + 1).map((s) => s.op)).toEqual(steps.slice(0, k + 1).map((s) => s.op))
          if (Either.isLeft(outcome.result)) failed++
          else succeeded++
        }
      }
      // Every step before the install can fail the append; only finalisation may be absorbed.
      expect(failed).toBeGreaterThanOrEqual(renameIndex * ERRNO_KINDS.length)
      expect(succeeded).toBeGreaterThan(0)
      console.log(`${scenario.name}: ${steps.length} steps, ${failed + succeeded} faults, ${failed} failed the append, ${succeeded} after the install`)
      expect(openFds()).toBe(fdsBefore)
    })
  }
})

describe("append: a second fault in rollback or cleanup", () => {
  for (const scenario of rollbackScenarios) {
    it(`locks only when the rollback fails (${scenario.name})`, async () => {
      const fdsBefore = openFds()
      const steps = await cleanSteps(scenario)
      let locked = 0
      let unlocked = 0
      // Up to the kernel copy, a copied commit takes the steps of a written one: start where they differ.
      const from = Math.max(0, steps.findIndex((s) => s.op === "copyFile"))
      for (let k1 = from; k1 < steps.length; k1++) {
        // The steps a failure at k1 leads to; a second fault goes at each of them.
        const first = await Effect.runPromise(runAppend(scenario, new Map([[k1, "EIO"]]), () => Effect.void))
        if (Either.isRight(first.result)) continue
        for (let j = k1 + 1; j < first.steps.length; j++) {
          const critical = !isOwnNameCleanup(first.steps[j]!)
          const label = `EIO at ${k1} (${describeStep(steps[k1]!)}) then at ${j} (${describeStep(first.steps[j]!)})`
          await Effect.runPromise(runAppend(scenario, new Map([[k1, "EIO"], [j, "EIO"]]), ({ before, dir, outcome, path, store }) =>
            Effect.gen(function*() {
              expect(Either.isLeft(outcome.result), label).toBe(true)
              const error = (outcome.result as Either.Left<SessionError, Entry>).left
              expect(store.entries).toBe(before.entries)
              if (!critical) {
                expect(error.code, label).not.toBe("SESSION_ROLLBACK_FAILED")
                expect(bytesDiffer(NFS.readFileSync(path), before.bytes)).toBeUndefined()
                unlocked++
                return yield* appendCleanly(store, dir, path)
              }
              locked++
              expect(error.code, label).toBe("SESSION_ROLLBACK_FAILED")
              // The marker is kept, and nothing else of ours.
              expect(listing(dir), label).toEqual([NAME, `${NAME}.marker`])
              const again = yield* Effect.either(store.append(null, user("m-locked", "refused")))
              expect(again).toEqual(Either.left(error))
              expect(yield* Effect.either(store.flush)).toEqual(Either.left(error))
              expect(store.entries).toBe(before.entries)
              // An explicit recovery resolves it; a reloaded store has every acknowledged entry and appends again.
              const report = yield* Recovery.recover(path)
              expect(["removed", "restored"]).toContain(report.marker)
              expect(listing(dir)).toEqual([NAME])
              const reloaded = yield* SessionStore.load(path)
              const ids = reloaded.entries.map((e) => e.id)
              for (const e of before.entries) expect(ids).toContain(e.id)
              for (const e of before.entries) expect(reloaded.get(e.id)).toEqual(e)
              yield* appendCleanly(reloaded, dir, path)
            })))
            .catch((e) => {
              throw new Error(`${label}: ${String(e)}`)
            })
        }
      }
      expect(locked).toBeGreaterThan(0)
      // A failed version-2 append has no names of its own to clean up besides its intent, whose removal is critical.
      if (!scenario.name.startsWith("version 2")) expect(unlocked).toBeGreaterThan(0)
      console.log(`${scenario.name}: ${locked + unlocked} double faults, ${locked} locked and recovered, ${unlocked} cleanup-only`)
      expect(openFds()).toBe(fdsBefore)
    })
  }
})

describe("create: one fault at every step", () => {
  it("leaves no file or the whole header, and the next create or append works", async () => {
    const fdsBefore = openFds()
    const attempt = (plan: ReadonlyMap<number, FaultKind>) =>
      Effect.scoped(Effect.gen(function*() {
        const dir = yield* tempDir
        const path = Path.join(dir, NAME)
        const injector = makeInjector()
        return yield* Effect.gen(function*() {
          injector.start(plan)
          const result = yield* Effect.either(SessionStore.create(path, { id: "sess" }))
          const steps = injector.stop()
          if (Either.isLeft(result)) {
            expect(isSessionError(result.left)).toBe(true)
            expect(["SESSION_IO", "SESSION_EXISTS", "SESSION_REPLACED", "SESSION_NOT_FOUND"]).toContain(result.left.code)
            expect(listing(dir)).toEqual([])
            const store = yield* SessionStore.create(path, { id: "sess" })
            yield* appendCleanly(store, dir, path)
          } else {
            const store = result.right
            expect(bytesDiffer(NFS.readFileSync(path), canonical(store.header, []))).toBeUndefined()
            yield* appendCleanly(store, dir, path)
          }
          return { result, steps }
        }).pipe(Effect.provide(layerWith(injector)))
      }))
    const clean = await Effect.runPromise(attempt(new Map()))
    expect(Either.isRight(clean.result)).toBe(true)
    const linkIndex = clean.steps.findIndex((s) => s.op === "link")
    expect(linkIndex).toBeGreaterThan(0)
    let failed = 0
    for (let k = 0; k < clean.steps.length; k++) {
      for (const kind of kindsFor(clean.steps[k]!)) {
        const label = `fault ${kind} at step ${k} (${describeStep(clean.steps[k]!)})`
        const outcome = await Effect.runPromise(attempt(new Map([[k, kind]]))).catch((e) => {
          throw new Error(`${label}: ${String(e)}`)
        })
        if (Either.isLeft(outcome.result)) failed++
        // A create may only succeed past a fault after the file is durable, or where ENOENT means "nothing there".
        else if (!(k > linkIndex || (kind === "ENOENT" && clean.steps[k]!.op === "lstat" && Path.basename(clean.steps[k]!.path) === NAME))) {
          throw new Error(`${label}: create succeeded`)
        }
      }
    }
    expect(failed).toBeGreaterThan(linkIndex * 3)
    console.log(`create: ${clean.steps.length} steps, ${failed} of the faults failed the create`)
    expect(openFds()).toBe(fdsBefore)
  })
})

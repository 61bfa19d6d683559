/**
 * The write path of one process on files: byte-exact generations, two stores
 * on one path, hostile paths, and descriptors that are all released. What an
 * append does before it reaches a backend (snapshots, group commit, memory that
 * changes only after the commit) is tested in the core, over the memory journal.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as FiberId from "effect/FiberId"
import * as Layer from "effect/Layer"
import * as TestClock from "effect/TestClock"
import * as NFS from "node:fs"
import * as OS from "node:os"
import * as Path from "node:path"
import * as FileJournal from "../src/FileJournal.js"
import * as Fs from "../src/Fs.js"
import { KERNEL_COPY_MIN_BYTES } from "../src/FileJournal.js"
import * as Ids from "@session-tree/core/Ids"
import type { Entry } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import * as SessionStore from "@session-tree/core/SessionStore"
import {
  bytesDiffer,
  hashDir,
  layerReal,
  layerWith,
  listing,
  makeInjector,
  openFds,
  tempDir,
  tempDirAt,
  user
} from "./fixtures/helpers.js"

const NAME = "s.jsonl"
const T = "2026-01-02T03:04:05.006Z"
const atT = TestClock.setTime(Date.parse(T))

// Canonical lines written out by hand (SPEC B1), so the tests do not trust the encoder they check.
const headerLine = (id: string) => `{"type":"session","version":1,"id":"${id}","timestamp":"${T}"}\n`
const userLine = (id: string, parentId: string | null, messageId: string, content: string) =>
  `{"type":"entry","version":1,"id":"${id}","parentId":${parentId === null ? "null" : `"${parentId}"`},"timestamp":"${T}",` +
  `"message":{"role":"user","id":"${messageId}","content":"${content}"}}\n`

const codeOf = <A>(result: Either.Either<A, SessionError>) => (Either.isLeft(result) ? result.left.code : "ok")

describe("create", () => {
  it.scoped("writes exactly one frozen header and refuses an existing path", () =>
    Effect.gen(function*() {
      yield* atT
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const store = yield* SessionStore.create(path, { version: 1 })
      expect(NFS.readFileSync(path, "utf8")).toBe(headerLine("session-001"))
      expect(Object.isFrozen(store.header)).toBe(true)
      expect(store.entries).toEqual([])
      expect(listing(dir)).toEqual([NAME])
      const again = yield* Effect.either(SessionStore.create(path, { version: 1 }))
      expect(codeOf(again)).toBe("SESSION_EXISTS")
      expect(NFS.readFileSync(path, "utf8")).toBe(headerLine("session-001"))
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("round-trips on the real disk (not tmpfs)", () =>
    Effect.gen(function*() {
      yield* atT
      const dir = yield* tempDirAt(OS.tmpdir())
      const path = Path.join(dir, NAME)
      const store = yield* SessionStore.create(path, { id: "disk", version: 1 })
      const a = yield* store.append(null, user("m1", "one"))
      const b = yield* store.append(a.id, user("m2", "two"))
      expect(NFS.readFileSync(path, "utf8")).toBe(
        headerLine("disk") + userLine(a.id, null, "m1", "one") + userLine(b.id, a.id, "m2", "two")
      )
      const loaded = yield* SessionStore.read(path)
      expect(loaded.entries).toEqual([a, b])
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))
})

/** Counts the commits that reached the install: renames onto the session path. */
const renamesOntoPath = (steps: ReadonlyArray<Fs.Step>) =>
  steps.filter((s) => s.op === "rename" && s.target !== undefined && Path.basename(s.target) === NAME).length

describe("concurrency in one process", () => {
  it.scoped("two stores on one path commit one at a time; the loser gets SESSION_REPLACED and keeps its memory", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const injector = makeInjector()
      yield* Effect.gen(function*() {
        yield* SessionStore.create(path, { version: 1 }).pipe(Effect.scoped)
        const a = yield* SessionStore.load(path)
        const b = yield* SessionStore.load(path)
        const before = { a: a.entries, b: b.entries }
        injector.start()
        const appends = Array.from({ length: 40 }, (_, i) =>
          Effect.either((i % 2 === 0 ? a : b).append(null, user(`m${i}`, `message ${i}`))).pipe(
            Effect.map((result) => ({ store: i % 2 === 0 ? "a" : "b", result }))
          ))
        const results = yield* Effect.all(appends, { concurrency: "unbounded" })
        const steps = injector.stop()
        // Commits never overlap: each marker link is followed by its unlink before the next link.
        let held = false
        for (const s of steps) {
          if (s.op === "link" && Path.basename(s.target ?? "") === `${NAME}.marker`) {
            expect(held).toBe(false)
            held = true
          }
          if (s.op === "unlink" && Path.basename(s.path) === `${NAME}.marker`) held = false
        }
        const failures = results.filter((r) => Either.isLeft(r.result))
        for (const f of failures) expect(codeOf(f.result)).toBe("SESSION_REPLACED")
        // One store won every commit; the other lost every one and kept its memory.
        const winner = results[0]!.result._tag === "Right" ? "a" : "b"
        const [won, lost] = winner === "a" ? [a, b] : [b, a]
        for (const r of results) expect(r.result._tag).toBe(r.store === winner ? "Right" : "Left")
        expect(lost.entries).toBe(winner === "a" ? before.b : before.a)
        expect(won.entries.length).toBe(20)
        const acked = results.flatMap((r) => (Either.isRight(r.result) ? [r.result.right.id] : []))
        const onDisk = (yield* SessionStore.read(path)).entries.map((e) => e.id)
        expect(onDisk).toEqual(acked.length === 20 ? won.entries.map((e) => e.id) : [])
        expect(new Set(onDisk)).toEqual(new Set(acked))
        // After a reload the loser appends again, on top of everything acknowledged.
        const reloaded = yield* SessionStore.load(path)
        const extra = yield* reloaded.append(null, user("late", "late"))
        expect((yield* SessionStore.read(path)).entries.map((e) => e.id)).toEqual([...onDisk, extra.id])
        expect(listing(dir)).toEqual([NAME])
      }).pipe(Effect.provide(layerWith(injector)))
    }))
})

describe("append cost does not grow with the history", () => {
  it.scoped("an append to 2,000 entries encodes one line, parses nothing, and writes only that line past the copy size", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      let text = headerLine("s1")
      let parent: string | null = null
      for (let i = 0; i < 2_000; i++) {
        text += userLine(`e${i}`, parent, `m${i}`, "x".repeat(120))
        parent = `e${i}`
      }
      NFS.writeFileSync(path, text)
      const injector = makeInjector()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.load(path)
        // The first commit of a loaded file checks that it is canonical (once); measure the ones after it.
        parent = (yield* store.append(parent, user("w", "warm"))).id
        const stringify = JSON.stringify
        const parse = JSON.parse
        let encoded = 0
        let parsed = 0
        JSON.stringify = ((...args: Parameters<typeof stringify>) => (encoded++, stringify(...args))) as typeof stringify
        JSON.parse = ((...args: Parameters<typeof parse>) => (parsed++, parse(...args))) as typeof parse
        const written: Array<number> = []
        injector.start()
        try {
          for (let i = 0; i < 5; i++) parent = (yield* store.append(parent, user(`n${i}`, "new"))).id
        } finally {
          JSON.stringify = stringify
          JSON.parse = parse
          for (const step of injector.stop()) if (step.op === "write") written.push(step.length!)
        }
        expect(encoded).toBe(5)
        expect(parsed).toBe(0)
        expect(written).toHaveLength(5)
        const lineBytes = Buffer.byteLength(userLine("e2005", "e2004", "n4", "new"))
        for (const n of written) expect(n).toBeLessThan(lineBytes + 64)
        expect(store.entries).toHaveLength(2_006)
        expect(NFS.readFileSync(path, "utf8").startsWith(text)).toBe(true)
      }).pipe(Effect.provide(layerWith(injector)))
    }))
})

describe("canonical generations", () => {
  it.scoped("the append after a recovered tail writes the canonical generation with a final newline", () =>
    Effect.gen(function*() {
      yield* atT
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const head = headerLine("s1") + userLine("e1", null, "m1", "one")
      NFS.writeFileSync(path, `${head}{"type":"entry","id":"cut`)
      const store = yield* SessionStore.load(path)
      expect(store.tail).toBe("incomplete")
      expect(store.entries.map((e) => e.id)).toEqual(["e1"])
      const added = yield* store.append("e1", user("m2", "two"))
      expect(NFS.readFileSync(path, "utf8")).toBe(head + userLine(added.id, "e1", "m2", "two"))
      expect(store.tail).toBe("none")
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("flush rewrites CRLF lines and a missing final newline once, then does nothing", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const lines = [headerLine("s1"), userLine("e1", null, "m1", "one"), userLine("e2", "e1", "m2", "two")]
      NFS.writeFileSync(path, lines.map((l) => l.slice(0, -1)).join("\r\n"))
      const injector = makeInjector()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.load(path)
        const before = store.entries
        injector.start()
        yield* store.flush
        expect(renamesOntoPath(injector.stop())).toBe(1)
        expect(NFS.readFileSync(path, "utf8")).toBe(lines.join(""))
        expect(store.entries).toBe(before)
        injector.start()
        yield* store.flush
        expect(injector.stop()).toEqual([])
        expect(listing(dir)).toEqual([NAME])
      }).pipe(Effect.provide(layerWith(injector)))
    }))

  it.scoped("flush removes a recovered tail, and is a no-op on a canonical or a new file", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const head = headerLine("s1") + userLine("e1", null, "m1", "one")
      NFS.writeFileSync(path, `${head}{"type":"ent`)
      const injector = makeInjector()
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.load(path)
        injector.start()
        yield* store.flush
        expect(renamesOntoPath(injector.stop())).toBe(1)
        expect(NFS.readFileSync(path, "utf8")).toBe(head)
        expect(store.tail).toBe("none")
        const canonicalStore = yield* SessionStore.load(path)
        // The generation the first flush replaced is closed in the background: a turn of the event
        // loop lets that close start before the steps of the next flush are recorded.
        yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1)))
        injector.start()
        yield* canonicalStore.flush
        expect(injector.stop()).toEqual([])
        const fresh = yield* SessionStore.create(Path.join(dir, "new.jsonl"), { version: 1 })
        injector.start()
        yield* fresh.flush
        expect(injector.stop()).toEqual([])
        expect(NFS.readFileSync(path, "utf8")).toBe(head)
      }).pipe(Effect.provide(layerWith(injector)))
    }))
})

describe("hostile paths", () => {
  const setup = Effect.gen(function*() {
    const dir = yield* tempDir
    const path = Path.join(dir, NAME)
    const store = yield* SessionStore.create(path, { version: 1 })
    const first = yield* store.append(null, user("m1", "one"))
    return { dir, path, store, first, entries: store.entries }
  })
  const expectReplaced = (store: SessionStore.SessionStore, entries: ReadonlyArray<Entry>, parent: string) =>
    Effect.gen(function*() {
      const result = yield* Effect.either(store.append(parent, user("m2", "two")))
      expect(codeOf(result)).toBe("SESSION_REPLACED")
      expect(store.entries).toBe(entries)
    })

  it.scoped("the file replaced by another file", () =>
    Effect.gen(function*() {
      const { dir, entries, first, path, store } = yield* setup
      NFS.writeFileSync(Path.join(dir, "other"), "someone else's bytes\n")
      NFS.renameSync(Path.join(dir, "other"), path)
      yield* expectReplaced(store, entries, first.id)
      expect(NFS.readFileSync(path, "utf8")).toBe("someone else's bytes\n")
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("the file replaced by a symlink, to elsewhere or to its own generation", () =>
    Effect.gen(function*() {
      const { dir, entries, first, path, store } = yield* setup
      const elsewhere = yield* tempDir
      const target = Path.join(elsewhere, "target")
      NFS.writeFileSync(target, "target bytes\n")
      const own = Path.join(dir, "real")
      NFS.renameSync(path, own)
      const ownBytes = NFS.readFileSync(own)
      for (const to of [target, own]) {
        NFS.rmSync(path, { force: true })
        NFS.symlinkSync(to, path)
        yield* expectReplaced(store, entries, first.id)
        expect(NFS.lstatSync(path).isSymbolicLink()).toBe(true)
        expect(NFS.readlinkSync(path)).toBe(to)
      }
      expect(NFS.readFileSync(target, "utf8")).toBe("target bytes\n")
      expect(bytesDiffer(NFS.readFileSync(own), ownBytes)).toBeUndefined()
      expect(listing(dir)).toEqual(["real", NAME])
      expect(listing(elsewhere)).toEqual(["target"])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("the directory moved away and another put at its path, even holding a copy of the file", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const dir = Path.join(root, "sessions")
      NFS.mkdirSync(dir)
      const path = Path.join(dir, NAME)
      const store = yield* SessionStore.create(path, { version: 1 })
      const first = yield* store.append(null, user("m1", "one"))
      const entries = store.entries
      const away = Path.join(root, "moved")
      NFS.renameSync(dir, away)
      NFS.mkdirSync(dir)
      NFS.copyFileSync(Path.join(away, NAME), path)
      const hashes = { away: hashDir(away), dir: hashDir(dir) }
      yield* expectReplaced(store, entries, first.id)
      expect(hashDir(away)).toBe(hashes.away)
      expect(hashDir(dir)).toBe(hashes.dir)
    }).pipe(Effect.provide(layerReal)))

  it.scoped("the directory swapped at the very moment of the rename: the append is not acknowledged", () =>
    Effect.gen(function*() {
      const root = yield* tempDir
      const dir = Path.join(root, "sessions")
      const away = Path.join(root, "moved")
      NFS.mkdirSync(dir)
      const path = Path.join(dir, NAME)
      let swap = false
      // Just before the install, the directory is moved away and a look-alike (with our next name and marker) put in its place.
      const fsLayer = FileJournal.layerIntercepted((step, run) =>
        Effect.zipRight(
          Effect.sync(() => {
            if (swap && step.op === "rename" && Path.basename(step.target ?? "") === NAME) {
              swap = false
              NFS.renameSync(dir, away)
              NFS.mkdirSync(dir)
              NFS.copyFileSync(Path.join(away, NAME), path)
              NFS.linkSync(Path.join(away, Path.basename(step.path)), step.path)
              NFS.linkSync(Path.join(away, `${NAME}.marker`), `${path}.marker`)
            }
          }),
          run
        )
      )
      yield* Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        const first = yield* store.append(null, user("m1", "one"))
        const entries = store.entries
        swap = true
        const result = yield* Effect.either(store.append(first.id, user("m2", "two")))
        expect(Either.isLeft(result)).toBe(true)
        expect(store.entries).toBe(entries)
        // The store's own directory still holds the old generation; the store refuses further work.
        expect((yield* SessionStore.read(Path.join(away, NAME))).entries.map((e) => e.id)).toEqual([first.id])
        expect(Either.isLeft(yield* Effect.either(store.append(first.id, user("m3", "three"))))).toBe(true)
      }).pipe(Effect.provide(Layer.merge(fsLayer, Ids.layerDeterministic)))
    }))

  it.scoped("a same-size write in place is refused, also where the commit would copy the file in the kernel", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      const store = yield* SessionStore.create(path, { version: 1 })
      let parent: string | null = null
      // Five ~60 KB entries take the file past KERNEL_COPY_MIN_BYTES, so the next commit would copy it.
      for (let i = 0; i < 5; i++) parent = (yield* store.append(parent, user(`m${i}`, "x".repeat(60_000)))).id
      expect(NFS.statSync(path).size).toBeGreaterThan(KERNEL_COPY_MIN_BYTES)
      const entries = store.entries
      // File times tick with the kernel's coarse clock: let one tick pass so the edit changes mtime.
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 20)))
      const fd = NFS.openSync(path, "r+")
      NFS.writeSync(fd, "y", NFS.statSync(path).size - 10)
      NFS.closeSync(fd)
      const edited = NFS.readFileSync(path)
      yield* expectReplaced(store, entries, parent!)
      expect(bytesDiffer(NFS.readFileSync(path), edited)).toBeUndefined()
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal)))

  it.scoped("the file deleted, or written in place by someone else", () =>
    Effect.gen(function*() {
      const { dir, entries, first, path, store } = yield* setup
      NFS.appendFileSync(path, "foreign line\n")
      const grown = NFS.readFileSync(path)
      yield* expectReplaced(store, entries, first.id)
      expect(bytesDiffer(NFS.readFileSync(path), grown)).toBeUndefined()
      NFS.unlinkSync(path)
      yield* expectReplaced(store, entries, first.id)
      expect(listing(dir)).toEqual([])
    }).pipe(Effect.provide(layerReal)))
})

describe("filesystem services", () => {
  it.scoped("the thread-pool service takes the same steps and writes the same bytes as the default one", () =>
    Effect.gen(function*() {
      yield* atT
      const run = (service: Fs.FsService) =>
        Effect.gen(function*() {
          const dir = yield* tempDir
          const path = Path.join(dir, NAME)
          const steps: Array<string> = []
          const fs = Fs.intercept(service, (step, effect) =>
            Effect.zipRight(Effect.sync(() => steps.push(`${step.op} ${Path.basename(step.path).replace(/-.*$/, "")}`)), effect))
          yield* Effect.scoped(Effect.gen(function*() {
            const store = yield* SessionStore.create(path, { version: 1 })
            let parent: string | null = null
            // Past the kernel-copy size, so both the written and the copied commit are taken.
            for (let i = 0; i < 8; i++) parent = (yield* store.append(parent, user(`m${i}`, "x".repeat(40_000)))).id
            yield* store.flush
            yield* SessionStore.read(path)
          })).pipe(Effect.provide(FileJournal.layerWithFs(fs)), Effect.provide(Ids.layerDeterministic))
          return { steps, bytes: NFS.readFileSync(path), names: listing(dir) }
        })
      const sync = yield* run(Fs.node)
      const pooled = yield* run(Fs.threadPool)
      expect(sync.steps).toContain("copyFile s.jsonl.marker")
      // Replaced generations are closed in the background, whenever the event loop turns: the
      // closes are the same, the other steps the same in the same order.
      const ordered = (steps: ReadonlyArray<string>) => steps.filter((s) => !s.startsWith("close "))
      const closes = (steps: ReadonlyArray<string>) => steps.filter((s) => s.startsWith("close ")).sort()
      expect(ordered(pooled.steps)).toEqual(ordered(sync.steps))
      expect(closes(pooled.steps)).toEqual(closes(sync.steps))
      expect(closes(sync.steps).length).toBeGreaterThanOrEqual(10)
      expect(bytesDiffer(pooled.bytes, sync.bytes)).toBeUndefined()
      expect(pooled.names).toEqual([NAME])
      expect(sync.names).toEqual([NAME])
    }))
})

describe("plain steps", () => {
  // A step replaced in a service (a plain call that fails inside `Fs.node`'s step) and a step failed by
  // an interceptor must mean the same.
  const fault = (op: "rename" | "fsync" | "link" | "copyFile" | "unlink", nth: number) => {
    let seen = 0
    return (path: string) => {
      if (++seen === nth) throw new Fs.FsError({ op, path, errno: "EIO" })
    }
  }
  const cases = [
    { op: "link" as const, nth: 1 },
    { op: "copyFile" as const, nth: 1 },
    { op: "fsync" as const, nth: 1 },
    { op: "rename" as const, nth: 1 },
    { op: "fsync" as const, nth: 2 },
    { op: "unlink" as const, nth: 1 }
  ]
  for (const { nth, op } of cases) {
    it.scoped(`a failed ${op} (call ${nth} of a commit) means the same as plain call and as Effect`, () =>
      Effect.gen(function*() {
        yield* atT
        const run = (service: (failing: (path: string) => void) => Fs.FsService) =>
          Effect.gen(function*() {
            const dir = yield* tempDir
            const path = Path.join(dir, NAME)
            let armed = false
            const failing = fault(op, nth)
            const maybe = (p: string) => {
              if (armed) failing(p)
            }
            return yield* Effect.scoped(Effect.gen(function*() {
              const store = yield* SessionStore.create(path, { version: 1 })
              let parent: string | null = null
              // Past the kernel-copy size, so the commit under test copies.
              for (let i = 0; i < 8; i++) parent = (yield* store.append(parent, user(`m${i}`, "x".repeat(40_000)))).id
              armed = true
              const failed = yield* Effect.either(store.append(parent, user("f", "fails")))
              armed = false
              return {
                code: codeOf(failed),
                message: Either.isLeft(failed) ? failed.left.message.replaceAll(dir, "<dir>").replace(/-[0-9a-f]{8}-\d+-\d+-\d+/g, "") : "",
                entries: store.entries.map((e) => e.id),
                names: listing(dir),
                bytes: NFS.readFileSync(path)
              }
            })).pipe(Effect.provide(FileJournal.layerWithFs(service(maybe))), Effect.provide(Ids.layerDeterministic))
          })
        const plain = yield* run((maybe) => {
          const target = (args: ReadonlyArray<unknown>) => {
            const last = args[op === "fsync" ? 0 : args.length - 1]
            return typeof last === "string" ? last : (last as Fs.Handle).path
          }
          const real = Fs.node[op] as (...a: Array<never>) => Effect.Effect<unknown, Fs.FsError>
          return {
            ...Fs.node,
            [op]: (...args: Array<never>) =>
              Effect.zipRight(Effect.try({ try: () => maybe(target(args)), catch: (e) => e as Fs.FsError }), real(...args))
          } as Fs.FsService
        })
        const stepwise = yield* run((maybe) =>
          Fs.intercept(Fs.node, (step, effect) =>
            step.op === op ? Effect.zipRight(Effect.try({ try: () => maybe(step.target ?? step.path), catch: (e) => e as Fs.FsError }), effect) : effect))
        const { bytes: plainBytes, ...plainRest } = plain
        const { bytes: stepwiseBytes, ...stepwiseRest } = stepwise
        expect(plain.code).not.toBe("ok")
        expect(plainRest).toEqual(stepwiseRest)
        expect(bytesDiffer(plainBytes, stepwiseBytes)).toBeUndefined()
      }))
  }

  it.scoped("appends started together share commits when every step is a plain call", () =>
    Effect.gen(function*() {
      yield* atT
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      let renames = 0
      // The node service with a counting rename: every step still a plain call.
      const counting: Fs.FsService = { ...Fs.node, rename: (from, to) => Effect.zipRight(Effect.sync(() => renames++), Fs.node.rename(from, to)) }
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        const root = yield* store.append(null, user("root", "root"))
        renames = 0
        const results = yield* Effect.all(
          Array.from({ length: 50 }, (_, i) => store.append(root.id, user(`m${i}`, `message ${i}`))),
          { concurrency: "unbounded" }
        )
        // The caller that commits yields once first, so every append started with it joins its commit.
        expect(renames).toBe(1)
        expect((yield* SessionStore.read(path)).entries.slice(1)).toEqual(results)
      })).pipe(Effect.provide(FileJournal.layerWithFs(counting)), Effect.provide(Ids.layerDeterministic))
    }))

  it.scoped("a service made from another with one step replaced goes through the replacement, in either form", () =>
    Effect.gen(function*() {
      yield* atT
      let renames = 0
      const services: ReadonlyArray<Fs.FsService> = [
        { ...Fs.node, rename: (from, to) => Effect.zipRight(Effect.sync(() => renames++), Fs.node.rename(from, to)) },
        { ...Fs.threadPool, rename: (from, to) => Effect.zipRight(Effect.sync(() => renames++), Fs.threadPool.rename(from, to)) }
      ]
      for (const service of services) {
        renames = 0
        const dir = yield* tempDir
        const path = Path.join(dir, NAME)
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* SessionStore.create(path, { version: 1 })
          yield* store.append(null, user("m1", "one"))
          yield* store.append(null, user("m2", "two"))
        })).pipe(Effect.provide(FileJournal.layerWithFs(service)), Effect.provide(Ids.layerDeterministic))
        expect(renames).toBe(2)
      }
    }))
})

/** Waits (up to 5 s) until the process holds `n` descriptors: closes in the background land on the event loop. */
const settledFds = (n: number) =>
  Effect.promise(async () => {
    for (let i = 0; i < 500 && openFds() !== n; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  })

describe("descriptors", () => {
  it.scopedLive("replaced generations are closed after their appends resolve, one running and one waiting at most, and before the scope ends", () =>
    Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      // Every close of a session-file descriptor waits at the gate while it is shut.
      let gate = Deferred.unsafeMake<void>(FiberId.none)
      let shut = false
      let waiting = 0
      const fs = Fs.intercept(Fs.node, (step, run) =>
        step.op === "close" && Path.basename(step.path).startsWith(NAME) && shut
          ? Effect.suspend(() => {
            waiting++
            return Effect.zipRight(Deferred.await(gate), run)
          })
          : run)
      const turn = Effect.sleep("20 millis")
      const closedAt = yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        const first = yield* store.append(null, user("m1", "one"))
        yield* turn
        shut = true
        // The append resolves before the close of the generation it replaced starts (on the event
        // loop's next turn), and that close then waits at the gate.
        const second = yield* store.append(first.id, user("m2", "two"))
        expect(waiting).toBe(0)
        yield* turn
        expect(waiting).toBe(1)
        expect(store.entries.map((e) => e.id)).toEqual([first.id, second.id])
        // The next append resolves too; the close of the generation it replaced waits to start.
        const third = yield* store.append(second.id, user("m3", "three"))
        yield* turn
        expect(waiting).toBe(1)
        // With one close running and one waiting, the next commit waits for the running one.
        const fourth = yield* Effect.fork(store.append(third.id, user("m4", "four")))
        yield* Effect.sleep("50 millis")
        expect(fourth.unsafePoll()).toBeNull()
        expect(waiting).toBe(1)
        yield* Deferred.succeed(gate, undefined)
        gate = Deferred.unsafeMake<void>(FiberId.none)
        yield* Fiber.join(fourth)
        // The end of the running close started the waiting one, now at the new gate.
        expect(waiting).toBe(2)
        // Closing the scope waits for the close at the gate and the one waiting behind it.
        const fdsBeforeRelease = openFds()
        yield* Effect.fork(Effect.zipRight(Effect.sleep("50 millis"), Deferred.succeed(gate, undefined)))
        return fdsBeforeRelease
      }).pipe(Effect.provide(FileJournal.layerWithFs(fs)), Effect.provide(Ids.layerDeterministic)))
      // The directory, the current generation and two replaced ones were still open before release.
      expect(closedAt - openFds()).toBe(4)
      expect(NFS.readFileSync(path, "utf8").split("\n").length).toBe(6)
    }))

  it("200 appends, loads, a lost race and a flush hold two descriptors per store and release all on close", async () => {
    const before = openFds()
    await Effect.runPromise(Effect.scoped(Effect.gen(function*() {
      const dir = yield* tempDir
      const path = Path.join(dir, NAME)
      yield* Effect.scoped(Effect.gen(function*() {
        const store = yield* SessionStore.create(path, { version: 1 })
        let parent: string | null = null
        let most = 0
        for (let i = 0; i < 150; i++) {
          parent = (yield* store.append(parent, user(`m${i}`, `n${i}`))).id
          most = Math.max(most, openFds() - before)
        }
        // Replaced generations are closed in the background, one at a time: besides the file and
        // its directory, at most two replaced generations are open when an append resolves (one
        // closing, one waiting for its close to start), even with no turn of the event loop between appends.
        expect(most).toBeGreaterThanOrEqual(2)
        expect(most).toBeLessThanOrEqual(4)
        yield* Effect.all(Array.from({ length: 50 }, (_, i) => store.append(parent, user(`c${i}`, `c${i}`))), {
          concurrency: "unbounded"
        })
        // The session file and its directory, nothing else, once the last close has landed.
        yield* settledFds(before + 2)
        expect(openFds() - before).toBe(2)
        const other = yield* SessionStore.load(path)
        yield* other.append(null, user("o", "other"))
        expect(codeOf(yield* Effect.either(store.append(null, user("x", "lost"))))).toBe("SESSION_REPLACED")
        yield* other.flush
        yield* SessionStore.read(path)
        yield* settledFds(before + 4)
        expect(openFds() - before).toBe(4)
        expect(store.entries.length).toBe(200)
      }))
      expect(openFds()).toBe(before)
      // A store whose scope has closed refuses to commit, with a typed error, and writes nothing.
      const closed = yield* Effect.scoped(SessionStore.load(path))
      const bytes = NFS.readFileSync(path)
      expect(codeOf(yield* Effect.either(closed.append(null, user("late", "late"))))).toBe("SESSION_IO")
      expect(codeOf(yield* Effect.either(closed.flush))).toBe("SESSION_IO")
      expect(bytesDiffer(NFS.readFileSync(path), bytes)).toBeUndefined()
      expect(listing(dir)).toEqual([NAME])
    }).pipe(Effect.provide(layerReal))))
    expect(openFds()).toBe(before)
  })
})

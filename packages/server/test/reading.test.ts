/**
 * How the server reads a session again after it changed (`internal/reading.ts`): only the lines
 * appended since, when every line read before is there unchanged; whole otherwise; and either way
 * with the answer of a whole load (`SessionStore.read`): the same entries, or the same error for a
 * session that does not load, nothing of what the earlier read kept changed by a failed one.
 */
import * as Ids from "@session-tree/core/Ids"
import { SessionJournal } from "@session-tree/core/SessionJournal"
import * as SessionStore from "@session-tree/core/SessionStore"
import { OUTCOME, SESSION } from "@session-tree/core/Tracing"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Reading from "../src/internal/reading.js"
import { tempDir } from "./support/serve.js"
import { recording } from "@session-tree/testing/Spans"

const runtime = ManagedRuntime.make(Layer.merge(FileJournal.layerWithFs(), Ids.layerRandom))
const dir = tempDir("reading")
afterAll(async () => {
  await runtime.dispose()
  NFS.rmSync(dir, { recursive: true, force: true })
})

const run = <A, E>(effect: Effect.Effect<A, E, SessionJournal | Ids.Ids>) => runtime.runPromise(effect)
const read = (location: string) => run(Effect.flatMap(SessionJournal, (journal) => Reading.read(journal, location)))
const readAgain = (location: string, before: Reading.Read) => run(Effect.flatMap(SessionJournal, (journal) => Reading.readAgain(journal, location, before)))
/** What a load answers: its entries, or its error's code and message. */
const loadOf = (location: string) =>
  run(Effect.match(SessionStore.read(location), { onFailure: (e) => ({ error: `${e.code}: ${e.reason}` }), onSuccess: (l) => ({ header: l.header, entries: l.entries }) }))
const outcome = (location: string, before: Reading.Read) =>
  runtime.runPromise(Effect.match(Effect.flatMap(SessionJournal, (journal) => Reading.readAgain(journal, location, before)), {
    onFailure: (e) => ({ error: `${e.code}: ${e.reason}` }),
    onSuccess: (r) => ({ header: r.loaded.header, entries: r.loaded.entries })
  }))

/** A version-2 session of `n` user messages in a chain, made through the store. */
const made = async (name: string, n: number) => {
  const location = Path.join(dir, `${name}.jsonl`)
  await run(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(location, { version: 2 })
    let parent: string | null = null
    for (let i = 0; i < n; i++) parent = (yield* store.append(parent, { role: "user", id: `m${i}`, content: [{ type: "text", text: `message ${i}` }] })).id
  })))
  return location
}
const append = (location: string, text: string) =>
  run(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.load(location)
    return yield* store.append(store.entries.at(-1)!.id, { role: "user", id: `m-${text}`, content: [{ type: "text", text }] })
  })))

/** The file at `location` replaced (renamed over) by a copy of itself: the same bytes, another file. */
const replaceByCopy = (location: string) => {
  const copy = `${location}.copy`
  NFS.copyFileSync(location, copy)
  NFS.renameSync(copy, location)
}

describe("reading a session again after a change", () => {
  it("reads only what was appended, with the entries a whole load gives, again and again", async () => {
    const location = await made("grows", 5)
    const first = await read(location)
    expect(first.how).toBe("whole")
    await append(location, "six")
    await append(location, "seven")
    const second = await readAgain(location, first)
    // Only the two lines appended were read from the file.
    expect(second.how).toBe("after")
    expect(second.linesRead).toBe(2)
    expect({ header: second.loaded.header, entries: second.loaded.entries }).toEqual(await loadOf(location))
    expect(second.loaded.entries).toHaveLength(7)
    // The first read's entries are as they were.
    expect(first.loaded.entries).toHaveLength(5)
    await append(location, "eight")
    const third = await readAgain(location, second)
    expect(third.how).toBe("after")
    expect(third.linesRead).toBe(1)
    expect(third.loaded.entries.map((e) => e.id)).toEqual((await read(location)).loaded.entries.map((e) => e.id))
    // A read another one started from already is not started from twice: that one is read whole.
    expect((await readAgain(location, first)).how).toBe("whole")
  })

  it("reads whole a session whose earlier lines changed, and answers as a load does", async () => {
    const location = await made("rewritten", 4)
    const first = await read(location)
    const lines = NFS.readFileSync(location, "utf8").split("\n")
    // Another text in the second entry, the record still valid: read whole, as it is now.
    lines[2] = lines[2]!.replace("message 1", "message one")
    NFS.writeFileSync(location, lines.join("\n"))
    const again = await readAgain(location, first)
    expect(again.how).toBe("whole")
    expect(again.loaded.entries[1]).toEqual((await loadOf(location) as { entries: ReadonlyArray<unknown> }).entries[1])
  })

  it("answers an appended line that does not check with the load's error, and keeps nothing of it", async () => {
    const location = await made("bad", 3)
    const first = await read(location)
    const good = NFS.readFileSync(location)
    // A valid record whose parent is no earlier entry, then a line that is not JSON.
    const record = JSON.parse(good.toString("utf8").split("\n")[3]!) as Record<string, unknown>
    const entry = (id: string, parentId: unknown) => JSON.stringify({ ...record, id, parentId, message: { ...(record["message"] as object), id: `m-${id}` } })
    NFS.appendFileSync(location, `${entry("x1", "nobody")}\n`)
    const unknownParent = await outcome(location, first)
    expect(unknownParent).toEqual(await loadOf(location))
    expect(unknownParent).toMatchObject({ error: expect.stringMatching(/^SESSION_UNKNOWN_PARENT/) })
    NFS.writeFileSync(location, good)
    NFS.appendFileSync(location, `${entry("x2", record["id"])}\n{"type":\n`)
    const notJson = await outcome(location, first)
    expect(notJson).toEqual(await loadOf(location))
    expect(notJson).toMatchObject({ error: expect.stringMatching(/^SESSION_INVALID_JSON/) })
    // Made whole again, the session reads from the first read: its history holds nothing of the failures.
    NFS.writeFileSync(location, good)
    NFS.appendFileSync(location, `${entry("x2", record["id"])}\n`)
    const fixed = await readAgain(location, first)
    expect(fixed.how).toBe("after")
    expect({ header: fixed.loaded.header, entries: fixed.loaded.entries }).toEqual(await loadOf(location))
  })

  it("reads whole a file that is another one now, or whose bytes before the old end changed, and shows it as it is", async () => {
    // Large enough that the first and last bytes a read keeps (4 KiB each) do not cover the file.
    const location = await made("replaced", 200)
    const first = await read(location)
    expect(NFS.statSync(location).size).toBeGreaterThan(3 * 4096)
    // The same bytes in another file: not provably the file read, so read whole, and right.
    replaceByCopy(location)
    await append(location, "after the copy")
    const again = await readAgain(location, first)
    // Every line read from the file again (those read before compared, the new one decoded).
    expect(again.how).toBe("compared")
    expect(again.linesRead).toBe(again.lines.length)
    expect({ header: again.loaded.header, entries: again.loaded.entries }).toEqual(await loadOf(location))
    // From that read on, only appends are read again.
    await append(location, "next")
    const next = await readAgain(location, again)
    expect(next.how).toBe("after")
    expect(next.linesRead).toBe(1)
    // An entry near the end changed in place (the same file, as long as before): read whole.
    const bytes = NFS.readFileSync(location, "utf8")
    NFS.writeFileSync(location, bytes.replace("message 199", "message 19x"))
    const changedLast = await readAgain(location, next)
    expect(changedLast.how).toBe("whole")
    expect(changedLast.loaded.entries.at(-3)!).toEqual((await loadOf(location) as { entries: ReadonlyArray<unknown> }).entries.at(-3))
    // An entry near the start changed in place, then an append: read whole.
    NFS.writeFileSync(location, NFS.readFileSync(location, "utf8").replace("message 2\"", "message x\""))
    await append(location, "after the change")
    const changedFirst = await readAgain(location, changedLast)
    expect(changedFirst.how).toBe("whole")
    expect({ header: changedFirst.loaded.header, entries: changedFirst.loaded.entries }).toEqual(await loadOf(location))
    // A file cut back to fewer bytes than were read: read whole.
    const lines = NFS.readFileSync(location, "utf8").split("\n")
    NFS.writeFileSync(location, lines.slice(0, 100).join("\n") + "\n")
    const shorter = await readAgain(location, changedFirst)
    expect(shorter.how).toBe("whole")
    expect(shorter.loaded.entries).toHaveLength(99)
  })

  it("reads whole a file whose read ended in an unfinished line, until it is whole again", async () => {
    const location = await made("torn", 3)
    NFS.appendFileSync(location, `{"type":"entry"`)
    const torn = await read(location)
    expect(torn.loaded.tail).toBe("incomplete")
    await append(location, "four")
    const again = await readAgain(location, torn)
    expect(again.how).toBe("whole")
    expect({ header: again.loaded.header, entries: again.loaded.entries }).toEqual(await loadOf(location))
  })

  it("runs each read in a span of its own, saying its session, how it was read and its outcome", async () => {
    const location = await made("spans", 3)
    const { layer, spans } = recording()
    const traced = <A, E>(effect: Effect.Effect<A, E, SessionJournal | Ids.Ids>) => run(Effect.provide(effect, layer))
    const first = await traced(Effect.flatMap(SessionJournal, (journal) => Reading.read(journal, location)))
    await append(location, "four")
    await traced(Effect.flatMap(SessionJournal, (journal) => Reading.readAgain(journal, location, first)))
    NFS.writeFileSync(location, "not a session\n")
    await traced(Effect.either(Effect.flatMap(SessionJournal, (journal) => Reading.read(journal, location))))
    const ours = spans.filter((s) => s.name.startsWith("Server.")).map((s) => ({
      name: s.name,
      session: s.attributes.get(SESSION),
      how: s.attributes.get(Reading.HOW),
      outcome: s.attributes.get(OUTCOME),
      ended: s.ended
    }))
    expect(ours).toEqual([
      { name: "Server.read", session: location, how: "whole", outcome: "success", ended: true },
      { name: "Server.readAgain", session: location, how: "after", outcome: "success", ended: true },
      { name: "Server.read", session: location, how: undefined, outcome: "SESSION_INVALID_JSON", ended: true }
    ])
    // The backend's read is a child of the server's.
    expect(spans.find((s) => s.name === "FileJournal.read")?.parent).toBe("Server.read")
  })
})

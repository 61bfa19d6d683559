/**
 * The Pi mapping against a recording of Pi itself, so that the check holds without Pi installed:
 * `fixtures/pi/everything.jsonl` is a session Pi's own SessionManager wrote (every entry kind and
 * content block, `support/piScenarios.ts`) and `everything.pi.json` what its SessionManager read
 * from it (`fixtures/pi/record.ts` made both, with the pinned Pi). Converted to version 2 and
 * mapped back to Pi's shape, the session must be what Pi read, field by field. With Pi
 * installed, the recording itself is checked against what Pi reads from the file today.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { PI_VERSION } from "@session-tree/testing/PiReference"
import { fromPiV2, SESSION_ENTRY } from "../src/PiSession.js"
import { loadPi, tempDir } from "./support/pi.js"
import { asWritten, brokenRule, toPi } from "./support/piInverse.js"
import { withoutPi } from "./support/piSkip.js"

const fixtures = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "fixtures", "pi")
const bytes = NFS.readFileSync(Path.join(fixtures, "everything.jsonl"))
const recording = JSON.parse(NFS.readFileSync(Path.join(fixtures, "everything.pi.json"), "utf8")) as {
  readonly pi: string
  readonly ids: Record<string, string>
  readonly header: Record<string, unknown>
  readonly entries: ReadonlyArray<Record<string, unknown>>
}

const converted = () => {
  const result = fromPiV2(bytes)
  if (Either.isLeft(result)) throw new Error(`expected a conversion, got ${result.left.message}`)
  return result.right
}

describe(`the Pi mapping against what Pi ${recording.pi} read (recorded, no install needed)`, () => {
  it("was recorded with the pinned version of Pi", () => {
    expect(recording.pi).toBe(PI_VERSION)
  })

  it("maps back to exactly what Pi's SessionManager read from the file, field by field", () => {
    const session = converted()
    expect(brokenRule(session.entries)).toBeUndefined()
    const back = toPi(session.header, session.entries)
    expect(back.header).toStrictEqual(recording.header)
    expect(back.entries).toStrictEqual(recording.entries)
  })

  it("keeps what Pi's entries hold where version 2 has a place for it", () => {
    const session = converted()
    const byId = new Map(session.entries.map((e) => [e.id, e]))
    expect(session.entries[0]).toMatchObject({ id: SESSION_ENTRY, kind: "custom", data: { cwd: "/home/user/project" } })
    expect(byId.get(recording.ids["a1"]!)).toMatchObject({ kind: "message", message: { role: "assistant", meta: { responseId: "msg_01" } } })
    expect(byId.get(recording.ids["compaction"]!)).toMatchObject({ kind: "compaction", firstKeptEntryId: recording.ids["u2"], tokensBefore: 12345 })
    expect(byId.get(recording.ids["label"]!)).toMatchObject({ kind: "label", targetId: recording.ids["a1"], label: "checkpoint" })
    // One entry per Pi entry, plus the root entry and the one compaction with fields of its own.
    expect(session.entries.length).toBe(recording.entries.length + 2)
  })

  const live = "the recording is what the installed Pi reads from the file today"
  it.skipIf(withoutPi(live))(live, async () => {
    const pi = await loadPi()
    const dir = tempDir()
    try {
      const file = Path.join(dir, "everything.jsonl")
      NFS.writeFileSync(file, bytes)
      const read = pi.SessionManager.open(file, dir, "/elsewhere")
      expect(asWritten(read.getHeader())).toStrictEqual(recording.header)
      expect(asWritten(read.getEntries())).toStrictEqual(recording.entries)
      // Reading did not rewrite it.
      expect(NFS.readFileSync(file).equals(bytes)).toBe(true)
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

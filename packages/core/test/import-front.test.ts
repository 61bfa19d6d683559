/**
 * Import's common front: detection from the content, a torn last line left out, damage refused
 * whole or (skipDamaged) recorded line by line in the session; on files written here and on every
 * real transcript of the shared collection (read in place), with truncated and glued variants.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import * as Import from "../src/Import.js"
import type { SessionError } from "../src/SessionError.js"
import * as Transcripts from "@session-tree/testing/Transcripts"
import { brokenRule } from "./support/piInverse.js"
import { leavesOf, type Obj, sourceLeaves } from "./support/claudeSource.js"

const SESSION = "6f1c1b8e-0000-4000-8000-000000000009"
const ts = (n: number) => `2026-01-02T03:04:${String(n).padStart(2, "0")}.000Z`
const userLine = (uuid: string, parentUuid: string | null, n: number, content: unknown) =>
  ({ parentUuid, isSidechain: false, sessionId: SESSION, type: "user", message: { role: "user", content }, uuid, timestamp: ts(n) })
const text = (...records: ReadonlyArray<unknown>) => records.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n") + "\n"
const bytes = (s: string) => new TextEncoder().encode(s)
const claude = () => [userLine("u1", null, 1, "one"), userLine("u2", "u1", 2, "two"), userLine("u3", "u2", 3, "three")]

const ok = (result: Either.Either<Import.Imported, SessionError>): Import.Imported => {
  if (Either.isLeft(result)) throw new Error(`expected an import, got ${result.left.message}`)
  return result.right
}

describe("detection from the content", () => {
  it("tells every format from its first lines, and names every format read when it is none of them", () => {
    const detect = (s: string) => Import.detect(bytes(s))
    expect(detect(text({ type: "session", version: 2, id: "s", timestamp: ts(1) }))).toEqual(Either.right("session-tree"))
    expect(detect(text({ type: "session", version: 1, id: "s", timestamp: ts(1) }))).toEqual(Either.right("session-tree"))
    expect(detect(text({ type: "session", version: 3, id: "s", timestamp: ts(1), cwd: "/" }))).toEqual(Either.right("pi"))
    // Pi's legacy format is Pi's still: its converter then says which version it reads.
    expect(detect(text({ type: "session", id: "s", timestamp: ts(1), cwd: "/", provider: "anthropic" }))).toEqual(Either.right("pi"))
    expect(detect(text(...claude()))).toEqual(Either.right("claude"))
    expect(detect(text({ type: "summary", summary: "x", leafUuid: "u" }, ...claude()))).toEqual(Either.right("claude"))
    expect(detect(text({ type: "file-history-snapshot", messageId: "m", snapshot: {} }, ...claude()))).toEqual(Either.right("claude"))
    expect(detect(text({ timestamp: ts(1), type: "session_meta", payload: { id: "x" } }))).toEqual(Either.right("codex"))
    expect(detect(text({ id: "x", timestamp: ts(1), instructions: null, git: {} }))).toEqual(Either.right("codex"))
    for (const unknown of [text({ hello: "world" }), "", "not json\n", text({ type: "message", role: "user" })]) {
      const result = detect(unknown)
      expect(Either.isLeft(result) && [result.left.code, result.left.line, result.left._tag]).toEqual(["SESSION_UNKNOWN_FORMAT", 1, "InputError"])
      expect(Either.isLeft(result) && result.left.reason).toMatch(/session-tree .*pi .*claude .*codex/)
    }
  })

  it.skipIf(Transcripts.files("claude").length === 0)("detects every real transcript as the format of its directory", () => {
    for (const kind of ["claude", "pi", "codex"] as const) {
      for (const name of Transcripts.files(kind)) {
        expect([name, Import.detect(NFS.readFileSync(Path.join(Transcripts.dir(kind), name)))]).toEqual([name, Either.right(kind)])
      }
    }
  })
})

describe("a source's lines", () => {
  it("a torn last line is left out and reported; a complete last line without its newline is a line", () => {
    const whole = text(...claude())
    const torn = ok(Import.convert(bytes(`${whole}{"parentUuid":"u3","type":"user","mess`)))
    expect(torn.sessions[0]!.entries.map((e) => e.id)).toEqual(["u1", "u2", "u3"])
    expect(torn.torn).toEqual({ line: 4, bytes: 38 })
    const unterminated = ok(Import.convert(bytes(whole.slice(0, -1))))
    expect([unterminated.sessions[0]!.entries.length, unterminated.torn]).toEqual([3, undefined])
    // Cut inside a character: torn too.
    const cut = Uint8Array.from([...bytes(`${whole}{"a":"`), 0xe2, 0x82])
    expect(ok(Import.convert(cut)).torn).toEqual({ line: 4, bytes: 8 })
  })

  it("damage elsewhere refuses the import whole, naming the line; --skip-damaged records each damaged line in the session and the result", () => {
    const [u1, u2, u3] = claude()
    const glued = `${JSON.stringify(u2)}${JSON.stringify({ type: "file-history-snapshot", messageId: "x" })}`
    const source = bytes(text(u1, glued, u3, "{\"not json", userLine("u4", "u3", 4, "four")))
    const refused = Import.convert(source)
    expect(Either.isLeft(refused) && [refused.left.code, refused.left.line]).toEqual(["SESSION_INVALID_JSON", 2])
    const skipped = ok(Import.convert(source, { skipDamaged: true }))
    expect(skipped.damaged.map((d) => [d.line, d.bytes, d.code])).toEqual([[2, bytes(glued).length, "SESSION_INVALID_JSON"], [4, 10, "SESSION_INVALID_JSON"]])
    const entries = skipped.sessions[0]!.entries
    // u3's parent was on the damaged line 2: it follows the file's order, after the damaged line's entry.
    expect(entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["damaged:2", "u1"], ["u3", "damaged:2"], ["damaged:4", "u3"], ["u4", "damaged:4"]])
    expect(entries[1]).toMatchObject({ kind: "custom", customType: Import.DAMAGED_LINE, data: { line: 2, code: "SESSION_INVALID_JSON", text: glued } })
    expect(brokenRule(entries)).toBeUndefined()
  })

  it("--skip-damaged leaves out a line the converter refuses too, and keeps what hangs from it", () => {
    const [u1, u2, u3] = claude()
    const source = bytes(text(u1, { ...u2, timestamp: "yesterday" }, u3))
    expect(Either.isLeft(Import.convert(source))).toBe(true)
    const skipped = ok(Import.convert(source, { skipDamaged: true }))
    expect(skipped.damaged.map((d) => [d.line, d.code])).toEqual([[2, "SESSION_INVALID_RECORD"]])
    expect(skipped.sessions[0]!.entries.map((e) => [e.id, e.parentId])).toEqual([["u1", null], ["damaged:2", "u1"], ["u3", "damaged:2"]])
    expect(skipped.sessions[0]!.entries[1]).toMatchObject({ data: { line: 2, text: JSON.stringify({ ...u2, timestamp: "yesterday" }) } })
    // Bytes that are not UTF-8 are kept as base64.
    const invalid = Uint8Array.from([...bytes(text(u1)), 0xff, 0x7b, 0x0a, ...bytes(text(u3))])
    const kept = ok(Import.convert(invalid, { skipDamaged: true }))
    expect(kept.sessions[0]!.entries[1]).toMatchObject({ data: { line: 2, code: "SESSION_INVALID_UTF8", base64: "/3s=" } })
  })

  it("a format forced with from, and what is not that format, refused naming the source's line", () => {
    const pi = bytes(text({ type: "session", version: 3, id: "s", timestamp: ts(1), cwd: "/" }))
    const asClaude = Import.convert(pi, { from: "claude" })
    expect(Either.isLeft(asClaude) && [asClaude.left.code, asClaude.left.line]).toEqual(["SESSION_INVALID_HEADER", 1])
    expect(ok(Import.convert(pi)).format).toBe("pi")
    const sessionTree = Import.convert(bytes(text({ type: "session", version: 2, id: "s", timestamp: ts(1) })))
    expect(Either.isLeft(sessionTree) && sessionTree.left.code).toBe("SESSION_INVALID_OPTIONS")
  })
})

const REAL = (["claude", "pi", "codex"] as const).flatMap((kind) => Transcripts.files(kind).map((name) => ({ kind, name, path: Path.join(Transcripts.dir(kind), name) })))
const lineEnds = (b: Uint8Array): Array<number> => {
  const ends: Array<number> = []
  for (let i = b.indexOf(0x0a); i >= 0; i = b.indexOf(0x0a, i + 1)) ends.push(i)
  return ends
}

describe.skipIf(REAL.length === 0)("the real transcripts, truncated and glued", () => {
  it.each(REAL)("$kind/$name: cut anywhere, the complete lines import as they would alone; two lines glued are refused at that line, or recorded", ({ path }) => {
    const source = NFS.readFileSync(path)
    const strict = Import.convert(source, { skipDamaged: true })
    if (Either.isLeft(strict)) {
      // The legacy Pi format: refused at its header whatever else it holds.
      expect([strict.left.code, strict.left.line]).toEqual(["SESSION_UNSUPPORTED_VERSION", 1])
      return
    }
    const ends = lineEnds(source)
    let seed = source.length
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (let k = 0; k < 2; k++) {
      // A cut inside a line after the first: the lines before it, alone, convert to the same sessions.
      const line = 2 + Math.floor(random() * (ends.length - 2))
      const from = ends[line - 1]! + 1
      const to = ends[line] ?? source.length
      if (to - from < 2) continue
      const cut = from + 1 + Math.floor(random() * (to - from - 1))
      const truncated = Import.convert(source.subarray(0, cut), { skipDamaged: true })
      const complete = Import.convert(source.subarray(0, from), { skipDamaged: true })
      expect(Either.isRight(truncated)).toBe(Either.isRight(complete))
      if (Either.isLeft(truncated) || Either.isLeft(complete)) continue
      expect(truncated.right.torn).toEqual({ line: line + 1, bytes: cut - from })
      expect(truncated.right.sessions).toEqual(complete.right.sessions)
      // Two lines glued (a newline lost in an interrupted append): refused at that line, or recorded there.
      const glued = Uint8Array.from([...source.subarray(0, ends[line - 1]!), ...source.subarray(ends[line - 1]! + 1)])
      const refused = Import.convert(glued)
      if (strict.right.damaged.length === 0) expect(Either.isLeft(refused) && [refused.left.code, refused.left.line]).toEqual(["SESSION_INVALID_JSON", line])
      const recorded = Import.convert(glued, { skipDamaged: true })
      if (Either.isLeft(recorded)) throw new Error(recorded.left.message)
      expect(recorded.right.damaged.some((d) => d.line === line && d.code === "SESSION_INVALID_JSON")).toBe(true)
      const main = recorded.right.sessions[0]!
      expect(main.entries.some((e) => e.kind === "custom" && e.customType === Import.DAMAGED_LINE && (e.data as { line: number }).line === line)).toBe(true)
      expect(brokenRule(main.entries)).toBeUndefined()
    }
  })

  it.skipIf(!Transcripts.files("claude").some((n) => n.startsWith("entireio__cli__5a")))("the transcript with two objects glued on line 115 imports with --skip-damaged, the line kept, one branch", () => {
    const source = NFS.readFileSync(Path.join(Transcripts.dir("claude"), Transcripts.files("claude").find((n) => n.startsWith("entireio__cli__5a"))!))
    const refused = Import.convert(source)
    expect(Either.isLeft(refused) && [refused.left.code, refused.left.line]).toEqual(["SESSION_INVALID_JSON", 115])
    const imported = ok(Import.convert(source, { skipDamaged: true }))
    expect(imported.damaged.map((d) => [d.line, d.code])).toEqual([[115, "SESSION_INVALID_JSON"]])
    const main = imported.sessions[0]!
    const kept = main.entries.find((e) => e.id === "damaged:115")
    const line115 = new TextDecoder().decode(source).split("\n")[114]
    expect(kept).toMatchObject({ kind: "custom", data: { line: 115, text: line115 } })
    const lines = new TextDecoder().decode(source).split("\n").filter((l, i) => l !== "" && i !== 114).map((l) => JSON.parse(l) as Obj)
    expect(leavesOf(main.entries)).toBe(sourceLeaves(lines))
  })
})

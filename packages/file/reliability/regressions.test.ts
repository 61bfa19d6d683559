/** The loader's permanent regression cases (regressions/*.json): each pinned outcome holds, and the reference agrees. */
import * as Either from "effect/Either"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { decode as decodeEither } from "../src/Jsonl.js"
import { isSessionError } from "@session-tree/core/SessionError"
import { judge } from "./support/judge.js"

/** `Jsonl.decode` with its Either merged: the session, or the error it fails with. */
const decodeSession = (bytes: Uint8Array) => Either.merge(decodeEither(bytes))

interface Case {
  readonly name: string
  readonly found: string
  readonly note: string
  readonly text?: string
  readonly base64?: string
  readonly expect: { readonly outcome: string; readonly line?: number; readonly entries?: number; readonly tail?: string }
}

const dir = Path.join(Path.dirname(fileURLToPath(import.meta.url)), "regressions")
const cases: Array<Case> = NFS.readdirSync(dir)
  .filter((n) => n.endsWith(".json"))
  .sort()
  .map((n) => JSON.parse(NFS.readFileSync(Path.join(dir, n), "utf8")) as Case)

describe("loader regression cases", () => {
  it("there are cases", () => expect(cases.length).toBeGreaterThan(0))
  for (const c of cases) {
    it(`${c.name}: ${c.note}`, () => {
      const bytes = c.base64 !== undefined ? Buffer.from(c.base64, "base64") : Buffer.from(c.text ?? "", "utf8")
      const decoded = decodeSession(bytes)
      const actual = isSessionError(decoded)
        ? { outcome: decoded.code, line: decoded.line }
        : { outcome: "accepted", entries: decoded.history.entries.length, tail: decoded.tail }
      expect(actual).toEqual(c.expect)
      // The reference models version 1 only: of a version-2 session it asks a typed answer or a version-2 result ("version-2").
      expect(["ok", "version-2"]).toContain(judge(bytes).kind)
      expect(({} as Record<string, unknown>)["polluted"]).toBeUndefined()
    })
  }
})

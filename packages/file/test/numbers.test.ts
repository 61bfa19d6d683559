/**
 * Numbers (`docs/format.md`, "Numbers"): a number the loader accepts is one a JavaScript number holds
 * exactly, so no rewrite can change an acknowledged value. An integer literal
 * beyond 2^53 that would change (`12345678901234567891` → `12345678901234567000`)
 * is refused; a literal that is only spelled differently (`1.0`, `1e0`, `0.10`)
 * loads and is rewritten in its canonical spelling with the same value. The
 * library is compared with the independent reference decoder of the reliability
 * suite on generated literals of every shape.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Ids from "@session-tree/core/Ids"
import * as SessionStore from "@session-tree/core/SessionStore"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Layer from "effect/Layer"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { referenceDecode } from "../reliability/support/oracle.js"
import * as FileJournal from "../src/FileJournal.js"
import { decode as decodeEither } from "../src/Jsonl.js"
import { makeTempDir } from "./fixtures/helpers.js"

/** `Jsonl.decode` with its Either merged: the session, or the error it fails with. */
const decode = (bytes: Uint8Array) => Either.merge(decodeEither(bytes))

const T = "2026-01-02T03:04:05.006Z"
const headerText = (version = "1") => `{"type":"session","version":${version},"id":"s","timestamp":"${T}"}`
const callText = (args: string, version = "1") =>
  `{"type":"entry","version":${version},"id":"e1","parentId":null,"timestamp":"${T}",` +
  `"message":{"role":"assistant","id":"m1","content":"","toolCalls":[{"id":"c1","name":"n","arguments":${args}}]}}`
const file = (...lines: ReadonlyArray<string>) => lines.map((line) => `${line}\n`).join("")
const bytes = (text: string) => new TextEncoder().encode(text)

const outcome = (text: string) => {
  const decoded = decode(bytes(text))
  return "code" in decoded ? { code: decoded.code, line: decoded.line } : "ok"
}
const reference = (text: string) => {
  const r = referenceDecode(bytes(text))
  return r.ok ? "ok" : { code: r.code, line: r.line }
}

/** Deep equality of JSON values with numbers compared by `===`. */
const sameNumbers = (a: unknown, b: unknown): boolean =>
  typeof a === "number" || typeof b === "number"
    ? a === b
    : typeof a !== "object" || a === null || typeof b !== "object" || b === null
    ? a === b
    : Object.keys(a).length === Object.keys(b).length &&
      Object.keys(a).every((k) => sameNumbers((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))

const live = Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic)

describe("numbers a rewrite would change", () => {
  it.scoped("the snowflake of the report: refused where it used to load and then change on disk", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(Effect.sync(() => makeTempDir()), (d) => Effect.sync(() => NFS.rmSync(d, { recursive: true })))
      const path = Path.join(dir, "s.jsonl")
      const line = callText(`{"snowflake":12345678901234567891}`)
      // What the next rewrite of an accepted record would have written: another value.
      expect(JSON.stringify(JSON.parse(line))).toContain(`"snowflake":12345678901234567000`)
      NFS.writeFileSync(path, file(headerText(), line))
      const before = NFS.readFileSync(path)
      const attempts = [
        yield* Effect.either(Effect.asVoid(SessionStore.read(path))),
        yield* Effect.either(Effect.asVoid(Effect.scoped(SessionStore.load(path))))
      ]
      for (const result of attempts) {
        expect(Either.isLeft(result) && [result.left.code, result.left.line, result.left.reason]).toEqual([
          "SESSION_INVALID_MESSAGE",
          2,
          "the number 12345678901234567891 cannot be held exactly: a rewrite would write 12345678901234567000"
        ])
      }
      expect(NFS.readFileSync(path).equals(before)).toBe(true)
    }).pipe(Effect.provide(live)))

  it.scoped("a literal only spelled differently loads, and the next commit writes the same value canonically", () =>
    Effect.gen(function*() {
      const dir = yield* Effect.acquireRelease(Effect.sync(() => makeTempDir()), (d) => Effect.sync(() => NFS.rmSync(d, { recursive: true })))
      const path = Path.join(dir, "s.jsonl")
      const args = `{"a":1.0,"b":1e0,"c":0.10,"d":-0,"e":9007199254740992,"f":1.5e300,"g":5e-324,"h":[0.30000000000000004]}`
      NFS.writeFileSync(path, file(headerText("1.0"), callText(args, "10e-1")))
      const store = yield* SessionStore.load(path)
      yield* store.flush
      const written = NFS.readFileSync(path, "utf8").split("\n")
      expect(written[0]).toBe(headerText())
      expect(written[1]).toBe(callText(`{"a":1,"b":1,"c":0.1,"d":0,"e":9007199254740992,"f":1.5e+300,"g":5e-324,"h":[0.30000000000000004]}`))
      const again = yield* SessionStore.read(path)
      expect(again.entries).toEqual(store.entries)
    }).pipe(Effect.provide(live)))

  it("outside the message the record, and in the header the header, is what is refused", () => {
    expect(outcome(file(headerText(), callText("{}", "1.00000000000000001")))).toEqual({ code: "SESSION_INVALID_RECORD", line: 2 })
    expect(outcome(file(headerText("1.00000000000000001")))).toEqual({ code: "SESSION_INVALID_HEADER", line: 1 })
    // A number inside a string is text, whatever its digits.
    expect(outcome(file(headerText(), callText(`{"id":"12345678901234567891"}`)))).toBe("ok")
  })

  it("the library and the reference decoder agree on literals of every shape, and what loads keeps its value", () => {
    const digits = (max: number) => FastCheck.stringMatching(new RegExp(`^[1-9][0-9]{0,${max}}$`))
    const literal = FastCheck.oneof(
      digits(30),
      FastCheck.tuple(digits(20), FastCheck.stringMatching(/^[0-9]{1,25}$/)).map(([i, f]) => `${i}.${f}`),
      FastCheck.tuple(digits(18), FastCheck.integer({ min: -330, max: 310 })).map(([m, e]) => `${m}e${e}`),
      FastCheck.tuple(digits(3), FastCheck.stringMatching(/^[0-9]{1,20}$/), FastCheck.integer({ min: -330, max: 310 }))
        .map(([i, f, e]) => `${i}.${f}e${e >= 0 ? "+" : ""}${e}`),
      FastCheck.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
      FastCheck.constantFrom("0", "-0", "0.0", "0e10", "1e-400", "2e-324", "9007199254740993", "-9007199254740993", "1.7976931348623157e308",
        // Found by the load property: a digit inserted into a canonical literal.
        "20.6485470437638025e+145")
    ).chain((l) => FastCheck.constantFrom(l, `-${l}`.replace(/^--/, "-")))
    let refused = 0
    let accepted = 0
    FastCheck.assert(
      FastCheck.property(literal, FastCheck.constantFrom("arguments", "nested", "version"), (lit, where) => {
        const text = where === "version"
          ? file(headerText(), callText("{}", lit))
          : file(headerText(), callText(where === "arguments" ? `{"x":${lit}}` : `{"x":[1,{"y":${lit}}]}`))
        const ours = outcome(text)
        expect(ours).toEqual(reference(text))
        if (ours === "ok") {
          accepted++
          const decoded = decode(bytes(text))
          if ("code" in decoded) throw decoded
          // What a rewrite writes reads back as the number the line was read as (-0 and 0 are one value).
          const rewritten = JSON.parse(JSON.stringify(decoded.history.entries[0])) as { message: { toolCalls: Array<{ arguments: unknown }> } }
          const original = JSON.parse(text.split("\n")[1]!) as typeof rewritten
          expect(sameNumbers(rewritten.message.toolCalls[0]!.arguments, original.message.toolCalls[0]!.arguments)).toBe(true)
        } else refused++
      }),
      { numRuns: 3_000 }
    )
    expect(refused).toBeGreaterThan(300)
    expect(accepted).toBeGreaterThan(300)
  })
})

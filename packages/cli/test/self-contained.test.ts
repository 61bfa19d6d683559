/**
 * The self-contained export and its import: `export --inline-blobs` writes the canonical lines
 * with every blob's bytes inline, and `import` of that file (on files and with --db) stores the
 * session again with its blobs, so that its `export --format jsonl` is byte for byte the
 * original's. A session with two images over 64 KiB, one sent twice.
 */
import { Ids, SessionStore } from "@session-tree/core"
import * as FileJournal from "@session-tree/file/FileJournal"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, it } from "vitest"
import { freshDatabase } from "../../pg/test/support/database.js"
import { removeTempDirs, runCli, tempDir } from "./support.js"

const A = Uint8Array.from({ length: 70_000 }, (_, i) => (Math.imul(i + 1, 2654435761) >>> 11) & 0xff)
const B = Uint8Array.from({ length: 90_000 }, (_, i) => (Math.imul(i + 7, 40503) >>> 5) & 0xff)
const refOf = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** A version-2 session file whose first message holds A and a small inline image, and whose third holds A again and B. */
const writeSession = (path: string) =>
  Effect.runPromise(Effect.scoped(Effect.gen(function*() {
    const store = yield* SessionStore.create(path, { id: "with-blobs" })
    const file = (name: string, bytes: Uint8Array) => ({ type: "file", mediaType: "image/png", name, data: bytes })
    const first = yield* store.append(null, {
      role: "user",
      id: "u1",
      content: [{ type: "text", text: "Look." }, file("a.png", A), file("small.png", new Uint8Array(100).fill(7))]
    })
    const answer = yield* store.append(first.id, { role: "assistant", id: "a1", content: [{ type: "text", text: "Again?" }] })
    yield* store.append(answer.id, { role: "user", id: "u2", content: [file("a.png", A), file("b.png", B)] })
  })).pipe(Effect.provide(Layer.merge(FileJournal.layerWithFs(), Ids.layerDeterministic))))

const ok = async (...args: ReadonlyArray<string>) => {
  const run = await runCli(...args)
  if (run.code !== 0) throw new Error(`${args.join(" ")}: ${run.stderr}`)
  return run.stdout
}

let scope: Scope.CloseableScope
let db: string

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  db = await Effect.runPromise(Scope.extend(freshDatabase("cli_blobs"), scope))
}, 60_000)
afterAll(async () => {
  removeTempDirs()
  await Effect.runPromise(Scope.close(scope, Exit.void))
})

describe("the self-contained export", { timeout: 180_000 }, () => {
  it("carries every blob inline; import stores them as blobs again, file → file and file → PostgreSQL → file, byte for byte", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    await writeSession(source)
    const canonical = await ok("export", source)
    // Plain export: the canonical file byte for byte, blob references as they are.
    expect(canonical).toBe(NFS.readFileSync(source, "utf8"))
    expect(canonical).toContain(`{"blob":"${refOf(A)}","size":70000}`)
    expect(canonical).not.toContain(b64(A).slice(0, 100))

    const packed = Path.join(dir, "packed.jsonl")
    await ok("export", source, "--inline-blobs", "--out", packed)
    const text = NFS.readFileSync(packed, "utf8")
    expect(text).not.toContain("\"blob\":")
    expect(text.split(`{"base64":"${b64(A)}"}`)).toHaveLength(3)
    expect(text.split(`{"base64":"${b64(B)}"}`)).toHaveLength(2)
    expect(text.split("\n")).toHaveLength(canonical.split("\n").length)

    // file → file: the new session has its own blobs and exports as the original.
    const copy = Path.join(dir, "copy.jsonl")
    await ok("import", packed, "--to", copy)
    expect(await ok("export", copy)).toBe(canonical)
    expect(NFS.readdirSync(`${copy}.blobs`).sort()).toEqual([refOf(A), refOf(B)].map((r) => r.slice(7)).sort())
    expect(await ok("export", copy, "--inline-blobs")).toBe(text)

    // file → PostgreSQL → file.
    await ok("migrate", "--db", db)
    expect((await ok("import", packed, "--db", db)).trim()).toBe("with-blobs")
    expect(await ok("export", "with-blobs", "--db", db)).toBe(canonical)
    const again = Path.join(dir, "again.jsonl")
    NFS.writeFileSync(again, await ok("export", "with-blobs", "--db", db, "--inline-blobs"))
    expect(NFS.readFileSync(again, "utf8")).toBe(text)
    const back = Path.join(dir, "back.jsonl")
    await ok("import", again, "--to", back)
    expect(await ok("export", back)).toBe(canonical)

    // A session file imports with the blobs beside it (FILE.blobs/), to files and to PostgreSQL.
    const direct = Path.join(dir, "direct.jsonl")
    await ok("import", source, "--to", direct)
    expect(await ok("export", direct)).toBe(canonical)
    expect(NFS.readdirSync(`${direct}.blobs`).sort()).toEqual([refOf(A), refOf(B)].map((r) => r.slice(7)).sort())
    await ok("delete", "with-blobs", "--db", db)
    expect((await ok("import", direct, "--db", db)).trim()).toBe("with-blobs")
    expect(await ok("export", "with-blobs", "--db", db, "--inline-blobs")).toBe(text)

    // The HTML page of the imported session draws both images from their bytes.
    const html = await ok("export", back, "--format", "html")
    expect(html).toContain(`src="data:image/png;base64,${b64(A)}"`)
    expect(html).toContain(`src="data:image/png;base64,${b64(B)}"`)
  })

  it("--inline-blobs is for jsonl only; a plain export, whose blobs stay behind, imports nothing", async ({ expect }) => {
    const dir = tempDir()
    const source = Path.join(dir, "s.jsonl")
    await writeSession(source)
    const wrong = await runCli("export", source, "--format", "markdown", "--inline-blobs")
    expect(wrong.code).toBe(2)
    // A plain export names blobs the file beside it does not carry: its import is refused whole.
    const plain = Path.join(dir, "plain.jsonl")
    NFS.writeFileSync(plain, await ok("export", source))
    const refused = await runCli("import", plain, "--to", Path.join(dir, "x.jsonl"))
    expect([refused.code, refused.stderr.split(" ")[0]]).toEqual([1, "SESSION_BLOB_MISSING"])
    expect(NFS.existsSync(Path.join(dir, "x.jsonl"))).toBe(false)
  })
})

/**
 * The core is backend-neutral: no module of it imports `node:fs`, `node:path` or
 * any other platform module, so it loads wherever Effect does. Checked twice:
 * by reading every import of every module, and by bundling the whole core for a
 * neutral platform, which fails on any built-in module that the first check
 * could have missed (a re-export, a computed specifier).
 */
import { describe, expect, it } from "@effect/vitest"
import { bundleNeutral, foreignImports, modulesOf, specifiers } from "@session-tree/testing/Boundary"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const src = fileURLToPath(new URL("../src/", import.meta.url))

describe("the core's imports", () => {
  it("name effect and the core's own modules only", () => {
    const modules = foreignImports(src, ["effect"])
    expect(modules.length).toBeGreaterThan(10)
    for (const m of modules) expect(m).toEqual({ module: m.module, foreign: [], builtins: [], require: false })
  })

  it("reach a platform's own modules only through the one documented lookup", () => {
    const lookups = modulesOf(src).filter((module) => NFS.readFileSync(Path.join(src, module), "utf8").includes("getBuiltinModule"))
    expect(lookups).toEqual([Path.join("internal", "runtime.ts")])
  })

  it("bundle for a neutral platform, with no built-in module", async () => {
    const bundle = await bundleNeutral(Path.join(src, "index.ts"), ["effect", "effect/*"])
    expect(bundle.errors).toEqual([])
    expect(bundle.imports.filter((path) => !path.startsWith("effect") && !path.startsWith("packages/core/src/"))).toEqual([])
  })

  it("the check itself catches a module that imports node:fs", async () => {
    const dir = NFS.mkdtempSync(Path.join(src, "..", "test", ".boundary-"))
    try {
      NFS.writeFileSync(Path.join(dir, "bad.ts"), `import { readFileSync } from "node:fs"\nexport const x = readFileSync\n`)
      expect(specifiers(NFS.readFileSync(Path.join(dir, "bad.ts"), "utf8"))).toEqual(["node:fs"])
      expect(foreignImports(dir, ["effect"])).toEqual([{ module: "bad.ts", foreign: ["node:fs"], builtins: ["node:fs"], require: false }])
      expect((await bundleNeutral(Path.join(dir, "bad.ts"), [])).errors).not.toEqual([])
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

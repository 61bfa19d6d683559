/**
 * The core is backend-neutral: no module of it imports `node:fs`, `node:path` or
 * any other platform module, so it loads wherever Effect does. Checked twice:
 * by reading every import of every module, and by bundling the whole core for a
 * neutral platform, which fails on any built-in module that the first check
 * could have missed (a re-export, a computed specifier).
 */
import { describe, expect, it } from "@effect/vitest"
import { bundleNeutral, foreignImports, specifiers } from "@session-tree/testing/Boundary"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const src = fileURLToPath(new URL("../src/", import.meta.url))

describe("the core's imports", () => {
  it("name effect and the core's own modules only", () => {
    const modules = foreignImports(src, ["effect"])
    expect(modules.length).toBeGreaterThan(10)
    for (const { module, foreign, builtins, require } of modules) expect({ module, foreign, builtins, require }).toEqual({ module, foreign: [], builtins: [], require: false })
  })

  it("reach a platform's own modules only through the one documented lookup", () => {
    const reaching = foreignImports(src, ["effect"]).filter((m) => m.reach.length > 0)
    expect(reaching).toEqual([expect.objectContaining({ module: Path.join("internal", "runtime.ts"), reach: ["getBuiltinModule", "process"] })])
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
      expect(foreignImports(dir, ["effect"])).toEqual([{ module: "bad.ts", foreign: ["node:fs"], builtins: ["node:fs"], require: false, reach: [] }])
      expect((await bundleNeutral(Path.join(dir, "bad.ts"), [])).errors).not.toEqual([])
      // A specifier made at run time, which no bundler sees: the reading reports it.
      NFS.writeFileSync(Path.join(dir, "bad.ts"), `export const x = () => import("node:" + "fs")\nexport const y = () => import(\`node:\${"path"}\`)\n`)
      expect((await bundleNeutral(Path.join(dir, "bad.ts"), [])).imports).toEqual([])
      expect(foreignImports(dir, ["effect"])).toEqual([{ module: "bad.ts", foreign: [], builtins: [], require: false, reach: ["import(computed)"] }])
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

/**
 * The views are pure: no module of `src/` imports `node:` or any other
 * platform module, so they render wherever Effect runs (a CLI, a server, a
 * browser). Checked by reading every import, and by bundling the package for a
 * neutral platform, which fails on a built-in module the first check missed;
 * no module computes a specifier or looks anything up through `process`.
 */
import { bundleNeutral, foreignImports } from "@session-tree/testing/Boundary"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const src = fileURLToPath(new URL("../src/", import.meta.url))

describe("the views' imports", () => {
  it("name effect, the core and their own modules only", () => {
    const modules = foreignImports(src, ["effect", "@session-tree/core"])
    expect(modules.map((m) => m.module)).toEqual(expect.arrayContaining(["Html.ts", "Markdown.ts", "Text.ts", "index.ts"]))
    for (const m of modules) expect(m).toEqual({ module: m.module, foreign: [], builtins: [], require: false, reach: [] })
  })

  it("bundle for a neutral platform with no built-in module", async () => {
    const bundle = await bundleNeutral(Path.join(src, "index.ts"), ["effect", "effect/*", "@session-tree/core/*"])
    expect(bundle.errors).toEqual([])
    expect(bundle.imports.filter((path) => !path.startsWith("effect") && !path.startsWith("@session-tree/core/") && !path.startsWith("packages/view/src/"))).toEqual([])
  })
})

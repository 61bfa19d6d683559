/**
 * The views are pure: no module of `src/` imports `node:` or any other
 * platform module, so they render wherever Effect runs (a CLI, a server, a
 * browser). Checked by reading every import, and by bundling the package for a
 * neutral platform, which fails on a built-in module the first check missed.
 */
import * as esbuild from "esbuild"
import { builtinModules } from "node:module"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const src = fileURLToPath(new URL("../src/", import.meta.url))
const modules = (NFS.readdirSync(src, { recursive: true }) as Array<string>).filter((f) => f.endsWith(".ts")).sort()
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)])

const specifiers = (text: string): Array<string> =>
  [
    ...text.matchAll(/^\s*(?:import|export)\b[^"'`;]*?from\s*["']([^"']+)["']/gm),
    ...text.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
    ...text.matchAll(/\bimport\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g),
    ...text.matchAll(/\brequire\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g)
  ].map((m) => m[1]!)

describe("the views' imports", () => {
  it("name effect, the core and their own modules only", () => {
    expect(modules).toEqual(expect.arrayContaining(["Html.ts", "Markdown.ts", "index.ts"]))
    for (const module of modules) {
      const names = specifiers(NFS.readFileSync(Path.join(src, module), "utf8"))
      const foreign = names.filter((name) =>
        !name.startsWith("./") && !name.startsWith("../") && name !== "effect" && !name.startsWith("effect/") && !name.startsWith("@session-tree/core/")
      )
      expect({ module, foreign, builtins: names.filter((name) => builtins.has(name)) }).toEqual({ module, foreign: [], builtins: [] })
    }
  })

  it("bundle for a neutral platform with no built-in module", async () => {
    const result = await esbuild.build({
      entryPoints: [Path.join(src, "index.ts")],
      bundle: true,
      write: false,
      platform: "neutral",
      format: "esm",
      external: ["effect", "effect/*", "@session-tree/core/*"],
      metafile: true,
      logLevel: "silent"
    })
    expect(result.errors).toEqual([])
    const imported = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path))
    expect(imported.filter((path) => !path.startsWith("effect") && !path.startsWith("@session-tree/core/") && !path.startsWith("packages/view/src/"))).toEqual([])
  })
})

/**
 * The core is backend-neutral: no module of it imports `node:fs`, `node:path` or
 * any other platform module, so it loads wherever Effect does. Checked twice:
 * by reading every import of every module, and by bundling the whole core for a
 * neutral platform, which fails on any built-in module that the first check
 * could have missed (a re-export, a computed specifier).
 */
import { describe, expect, it } from "@effect/vitest"
import * as esbuild from "esbuild"
import { builtinModules } from "node:module"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const src = fileURLToPath(new URL("../src/", import.meta.url))
const modules = (NFS.readdirSync(src, { recursive: true }) as Array<string>).filter((f) => f.endsWith(".ts")).sort()
const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)])

/** Every module specifier a source text names: static imports and exports, dynamic imports, requires. */
const specifiers = (text: string): Array<string> =>
  [
    ...text.matchAll(/^\s*(?:import|export)\b[^"'`;]*?from\s*["']([^"']+)["']/gm),
    ...text.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
    ...text.matchAll(/\bimport\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g),
    ...text.matchAll(/\brequire\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g)
  ].map((m) => m[1]!)

describe("the core's imports", () => {
  it("name effect and the core's own modules only", () => {
    expect(modules.length).toBeGreaterThan(10)
    for (const module of modules) {
      const text = NFS.readFileSync(Path.join(src, module), "utf8")
      const names = specifiers(text)
      const foreign = names.filter((name) => !name.startsWith("./") && !name.startsWith("../") && name !== "effect" && !name.startsWith("effect/"))
      expect({ module, foreign }).toEqual({ module, foreign: [] })
      expect({ module, builtins: names.filter((name) => builtins.has(name)) }).toEqual({ module, builtins: [] })
      expect({ module, require: /\brequire\s*\(/.test(text) }).toEqual({ module, require: false })
    }
  })

  it("reach a platform's own modules only through the one documented lookup", () => {
    const lookups = modules.filter((module) => NFS.readFileSync(Path.join(src, module), "utf8").includes("getBuiltinModule"))
    expect(lookups).toEqual([Path.join("internal", "runtime.ts")])
  })

  it("bundle for a neutral platform, with no built-in module", async () => {
    const result = await esbuild.build({
      entryPoints: [Path.join(src, "index.ts")],
      bundle: true,
      write: false,
      platform: "neutral",
      format: "esm",
      external: ["effect", "effect/*"],
      metafile: true,
      logLevel: "silent"
    })
    expect(result.errors).toEqual([])
    const imported = Object.values(result.metafile.inputs).flatMap((input) => input.imports.map((i) => i.path))
    expect(imported.filter((path) => !path.startsWith("effect") && !path.startsWith("packages/core/src/"))).toEqual([])
  })

  it("the check itself catches a module that imports node:fs", async () => {
    const dir = NFS.mkdtempSync(Path.join(src, "..", "test", ".boundary-"))
    try {
      NFS.writeFileSync(Path.join(dir, "bad.ts"), `import { readFileSync } from "node:fs"\nexport const x = readFileSync\n`)
      expect(specifiers(NFS.readFileSync(Path.join(dir, "bad.ts"), "utf8"))).toEqual(["node:fs"])
      const failed = await esbuild.build({
        entryPoints: [Path.join(dir, "bad.ts")],
        bundle: true,
        write: false,
        platform: "neutral",
        logLevel: "silent"
      }).then(() => false, () => true)
      expect(failed).toBe(true)
    } finally {
      NFS.rmSync(dir, { recursive: true, force: true })
    }
  })
})

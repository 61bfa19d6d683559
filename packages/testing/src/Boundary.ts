/**
 * The check that a package is pure: no module of its `src/` imports `node:` or
 * any other platform module, so it runs wherever Effect does. Done twice: by
 * reading every import of every module, and by bundling the package for a
 * neutral platform, which fails on a built-in module the first reading missed
 * (a re-export). What a bundler cannot see, a specifier computed at run time or
 * a module looked up through `process`, the reading reports as `reach`.
 */
import * as esbuild from "esbuild"
import { builtinModules } from "node:module"
import * as NFS from "node:fs"
import * as Path from "node:path"

const builtins = new Set([...builtinModules, ...builtinModules.map((m) => `node:${m}`)])

/** Every module specifier a source text names: static imports and exports, dynamic imports, requires. */
export const specifiers = (text: string): Array<string> =>
  [
    ...text.matchAll(/^\s*(?:import|export)\b[^"'`;]*?from\s*["']([^"']+)["']/gm),
    ...text.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
    ...text.matchAll(/\bimport\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g),
    ...text.matchAll(/\brequire\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g)
  ].map((m) => m[1]!)

/** The `.ts` modules under `src`, relative to it, sorted. */
const modulesOf = (src: string): Array<string> =>
  (NFS.readdirSync(src, { recursive: true }) as Array<string>).filter((f) => f.endsWith(".ts")).sort()

/** What each module of `src` imports that is neither its own package's nor one of `allowed` (prefixes). */
export const foreignImports = (
  src: string,
  allowed: ReadonlyArray<string>
): Array<{
  readonly module: string
  readonly foreign: ReadonlyArray<string>
  readonly builtins: ReadonlyArray<string>
  readonly require: boolean
  /** Ways past the imports: `import(…)` of a computed specifier, `getBuiltinModule`, `process`. */
  readonly reach: ReadonlyArray<string>
}> =>
  modulesOf(src).map((module) => {
    const text = NFS.readFileSync(Path.join(src, module), "utf8")
    const names = specifiers(text)
    return {
      module,
      foreign: names.filter((name) => !name.startsWith("./") && !name.startsWith("../") && !allowed.some((a) => name === a || name.startsWith(`${a}/`))),
      builtins: names.filter((name) => builtins.has(name)),
      require: /\brequire\s*\(/.test(text),
      reach: [
        ...(/\bimport\s*\(\s*(?!["'`][^"'`$]*["'`]\s*\))/.test(text) ? ["import(computed)"] : []),
        ...(/\bgetBuiltinModule\b/.test(text) ? ["getBuiltinModule"] : []),
        ...(/\bprocess\s*\??\./.test(text) ? ["process"] : [])
      ]
    }
  })

/**
 * Bundles `entry` for a neutral platform with `external` left out; the errors (an unresolved
 * built-in module among them) and every import path the bundle kept, for the caller to judge.
 */
export const bundleNeutral = async (
  entry: string,
  external: ReadonlyArray<string>
): Promise<{ readonly errors: ReadonlyArray<unknown>; readonly imports: ReadonlyArray<string> }> => {
  // Built synchronously, then esbuild's service stopped: it would otherwise live as long as the
  // test worker, which outlives a test file (and no other build can be under way meanwhile).
  const result = await Promise.resolve().then(() => esbuild.buildSync({
    entryPoints: [entry],
    bundle: true,
    write: false,
    platform: "neutral",
    format: "esm",
    external: [...external],
    metafile: true,
    logLevel: "silent"
  })).catch((error: { errors?: ReadonlyArray<unknown> }) => ({ errors: error.errors ?? [error], metafile: { inputs: {} } }))
  await esbuild.stop()
  const inputs = result.metafile?.inputs ?? {}
  return { errors: result.errors, imports: Object.values(inputs).flatMap((input) => input.imports.map((i) => i.path)) }
}

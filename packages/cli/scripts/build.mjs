/**
 * Builds the `session-tree` command: one bundle of the CLI and everything it
 * imports (the libraries from their TypeScript sources), minified, with a
 * source map. `bin/session-tree.cjs` loads it with V8's code cache, so a start
 * compiles almost nothing. Usage: node scripts/build.mjs [outdir]
 */
import * as esbuild from "esbuild"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const outdir = Path.resolve(process.argv[2] ?? Path.join(here, "..", "dist"))

NFS.mkdirSync(outdir, { recursive: true })
await esbuild.build({
  entryPoints: [Path.join(here, "..", "src", "main.ts")],
  outfile: Path.join(outdir, "session-tree.cjs"),
  bundle: true,
  // A script, not a module: only a script can be compiled with a code cache on Node 20.
  format: "cjs",
  platform: "node",
  target: "node20",
  minify: true,
  sourcemap: true,
  // The workspace's libraries are bundled from their TypeScript sources.
  conditions: ["@session-tree/source"],
  // node-postgres loads its optional native binding only when asked to; it never is.
  external: ["pg-native"],
  legalComments: "linked",
  logLevel: "warning"
})

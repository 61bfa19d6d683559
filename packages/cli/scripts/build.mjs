/**
 * Builds the `session-tree` command: one bundle of the CLI and everything it
 * imports (the libraries from their TypeScript sources), minified.
 * `bin/session-tree.cjs` loads it with V8's code cache, so a start compiles
 * almost nothing.
 *
 * Usage: node scripts/build.mjs [outdir] [--sourcemap] [--metafile] [--entry FILE]
 *
 * `--entry FILE` bundles FILE instead of the command, the same way: the start-up benchmark
 * measures the library alone with it, as the command's floor.
 *
 * `--metafile` writes esbuild's account of the bundle's inputs and their imports beside it
 * (`session-tree.meta.json`): the tests read from it what a start evaluates.
 *
 * A source map (`session-tree.cjs.map`, several megabytes) is written only with
 * `--sourcemap` or `SESSION_TREE_SOURCEMAP=1`, so the published package does not
 * carry it; a build without one removes the map an earlier build left.
 */
import * as esbuild from "esbuild"
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

const here = Path.dirname(fileURLToPath(import.meta.url))
const args = process.argv.slice(2)
const sourcemap = args.includes("--sourcemap") || process.env.SESSION_TREE_SOURCEMAP === "1"
const metafile = args.includes("--metafile")
const at = args.indexOf("--entry")
const entry = at >= 0 ? Path.resolve(args[at + 1]) : Path.join(here, "..", "src", "main.ts")
const [dir] = args.filter((a, i) => a !== "--sourcemap" && a !== "--metafile" && i !== at && (at < 0 || i !== at + 1))
const outdir = Path.resolve(dir ?? Path.join(here, "..", "dist"))
const outfile = Path.join(outdir, "session-tree.cjs")

NFS.mkdirSync(outdir, { recursive: true })
if (!sourcemap) NFS.rmSync(`${outfile}.map`, { force: true })
const built = await esbuild.build({
  entryPoints: [entry],
  outfile,
  bundle: true,
  // A script, not a module: only a script can be compiled with a code cache on Node 20.
  format: "cjs",
  platform: "node",
  target: "node20",
  minify: true,
  sourcemap,
  // The workspace's libraries are bundled from their TypeScript sources.
  conditions: ["@session-tree/source"],
  // node-postgres loads its optional native binding only when asked to; it never is.
  external: ["pg-native"],
  legalComments: "linked",
  logLevel: "warning",
  metafile
})
if (metafile) NFS.writeFileSync(Path.join(outdir, "session-tree.meta.json"), JSON.stringify(built.metafile))

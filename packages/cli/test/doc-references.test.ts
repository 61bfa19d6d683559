/**
 * A reference to a part of a document (`docs/files.md`, "The append intent") names a part that
 * exists: a heading that reads so (or begins so), or a paragraph that begins with it in bold.
 * Sources, tests, scripts and the documents themselves point readers there, and a section renamed
 * or moved must not leave them pointing nowhere.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** The files that may refer to a document: sources, tests, scripts and the documents. */
const referring = (dir: string): Array<string> =>
  NFS.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === "node_modules" || entry.name === "dist" || entry.name.startsWith(".")) return []
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return referring(path)
    return /\.(ts|mjs|md)$/.test(entry.name) ? [path] : []
  })

const REFERENCE = /`?((?:docs\/[a-z-]+|BENCHMARKS|README|RELIABILITY)\.md)`?,? "([^"\n]+)"/g

/** The parts of a document a reference may name: its headings, and its paragraphs' bold openings. */
const partsOf = (text: string): { readonly headings: Array<string>; readonly text: string } => ({
  headings: text.split("\n").filter((line) => line.startsWith("#")).map((line) => line.replace(/^#+\s*/, "").trim()),
  text
})

it("names, wherever a document's part is referred to, a part that exists", () => {
  const documents = new Map<string, ReturnType<typeof partsOf> | undefined>()
  const missing: Array<string> = []
  let seen = 0
  for (const file of [...referring(Path.join(root, "packages")), ...referring(Path.join(root, "scripts")), ...referring(Path.join(root, "docs")), ...NFS.readdirSync(root).filter((n) => n.endsWith(".md")).map((n) => Path.join(root, n))]) {
    for (const [, document, part] of NFS.readFileSync(file, "utf8").matchAll(REFERENCE)) {
      seen++
      if (!documents.has(document!)) {
        const path = Path.join(root, document!)
        documents.set(document!, NFS.existsSync(path) ? partsOf(NFS.readFileSync(path, "utf8")) : undefined)
      }
      const parts = documents.get(document!)
      const found = parts !== undefined && (parts.headings.some((h) => h.startsWith(part!)) || parts.text.includes(`**${part}`))
      if (!found) missing.push(`${Path.relative(root, file)}: ${document}, "${part}"`)
    }
  }
  // The references are many: a pattern that matched none would pass whatever they named.
  expect(seen).toBeGreaterThan(50)
  expect(missing).toEqual([])
})

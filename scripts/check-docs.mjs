#!/usr/bin/env node
/**
 * Checks that every export of the public modules (the modules of each published package's `src/`,
 * not `src/internal/`) carries a doc comment with `@since` and `@category`, as Effect's own modules
 * do. Part of `npm test`, so that an untagged export fails the run.
 *
 *   node scripts/check-docs.mjs                      every published package's public modules
 *   node scripts/check-docs.mjs FILE_OR_DIR ...      only those (a directory: its public modules)
 *
 * Prints each export that misses a tag and exits with 1 when any does. An export is a declaration
 * with the `export` keyword (a const, function, class, interface, type, enum or namespace), an
 * `export * as X from` or an `export { … }` of the module's own or another's names.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import ts from "typescript"

const root = Path.resolve(Path.dirname(new URL(import.meta.url).pathname), "..")

/** The public modules under `dir`: `.ts` files outside `internal/`, tests and declarations. */
const modulesIn = (dir) =>
  NFS.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "internal" ? [] : modulesIn(path)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : []
  })

/**
 * A package others use: one that is published (not private) or that exports its modules to the
 * others (`exports["."]`). The tests' kits and the benchmarks are neither.
 */
const isPublished = (name) => {
  const file = Path.join(root, "packages", name, "package.json")
  if (!NFS.existsSync(file)) return false
  const pkg = JSON.parse(NFS.readFileSync(file, "utf8"))
  return pkg.private !== true || (pkg.exports !== undefined && pkg.exports["."] !== undefined)
}

const targets = () => {
  const given = process.argv.slice(2)
  if (given.length === 0) {
    return NFS.readdirSync(Path.join(root, "packages"))
      .filter(isPublished)
      .map((name) => Path.join(root, "packages", name, "src"))
      .filter((src) => NFS.existsSync(src))
      .flatMap(modulesIn)
  }
  return given.flatMap((p) => {
    const path = Path.resolve(p)
    return NFS.statSync(path).isDirectory() ? modulesIn(path) : [path]
  })
}

/** The tags of the doc comments directly before `node`. */
const tagsOf = (node) => {
  const tags = new Set()
  for (const doc of ts.getJSDocCommentsAndTags(node)) {
    if (ts.isJSDoc(doc)) for (const tag of doc.tags ?? []) tags.add(tag.tagName.text)
    else if (doc.tagName !== undefined) tags.add(doc.tagName.text)
  }
  return tags
}

const isExported = (node) => ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export

/** Every export of `file`: its name, where it is, and the node its doc comment belongs to. */
const exportsOf = (source) => {
  const found = []
  for (const statement of source.statements) {
    const at = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1
    if (ts.isVariableStatement(statement) && isExported(statement)) {
      for (const d of statement.declarationList.declarations) found.push({ name: d.name.getText(source), line: at(d), node: statement })
    } else if (
      (ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement) ||
        ts.isTypeAliasDeclaration(statement) || ts.isEnumDeclaration(statement) || ts.isModuleDeclaration(statement)) &&
      isExported(statement) && statement.name !== undefined
    ) {
      found.push({ name: statement.name.getText(source), line: at(statement), node: statement })
    } else if (ts.isExportDeclaration(statement)) {
      const clause = statement.exportClause
      const name = clause === undefined ? "*" : ts.isNamespaceExport(clause) ? clause.name.text : clause.elements.map((e) => e.name.text).join(", ")
      found.push({ name, line: at(statement), node: statement })
    }
  }
  return found
}

let missing = 0
let checked = 0
for (const file of targets()) {
  const source = ts.createSourceFile(file, NFS.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true)
  for (const { line, name, node } of exportsOf(source)) {
    checked++
    const tags = tagsOf(node)
    const lacks = ["since", "category"].filter((tag) => !tags.has(tag))
    if (lacks.length > 0) {
      missing++
      console.log(`${Path.relative(root, file)}:${line}: ${name} has no ${lacks.map((t) => `@${t}`).join(" or ")}`)
    }
  }
}
console.log(`${checked} exports checked, ${missing} without @since and @category`)
process.exit(missing > 0 ? 1 : 0)

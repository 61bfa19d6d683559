/**
 * Every backend against the one conformance suite. The number of cases each
 * backend passed is printed, and must be all of them.
 */
import { describe, expect, inject, it } from "@effect/vitest"
import { SearchIndex } from "@session-tree/core/Search"
import * as FileSearch from "@session-tree/file/FileSearch"
import { node } from "@session-tree/file/Fs"
import * as Layer from "effect/Layer"
import * as Kit from "../src/Kit.js"
import { conformance } from "../src/suite.js"
import { conformanceSearch } from "../src/suiteSearch.js"
import { conformanceV2 } from "../src/suiteV2.js"

// The PostgreSQL server is the run's own (packages/pg/test/support/global-setup.ts), or SESSION_TREE_TEST_DB.
const backends = [Kit.memory, Kit.file, Kit.postgres(inject("pgUrl"))]
const suites = backends.map((backend) => [backend.name, conformance(backend)] as const)
const suitesV2 = backends.map((backend) => [`${backend.name} (version 2)`, conformanceV2(backend)] as const)
// Files searched through their index from the first search (by default a file changed in the last 2 s is
// scanned, and a session is indexed only by a search common in it).
const fileIndexed: Kit.Backend = {
  name: "file, indexed",
  layer: Layer.merge(Kit.file.layer, Layer.succeed(SearchIndex, FileSearch.make(node, { settleMs: 0, indexShare: 0 })))
}
const suitesSearch = [...backends, fileIndexed].map((backend) => [`${backend.name} (search and usage)`, conformanceSearch(backend)] as const)

describe("conformance", () => {
  // Runs after every backend's cases (tests of a file run in order): each case must have run to its end.
  it("ran every case against every backend", () => {
    console.log(`conformance cases per backend: ${[...suites, ...suitesV2, ...suitesSearch].map(([name, suite]) => `${name} ${suite.passed} of ${suite.cases}`).join(", ")}`)
    for (const [name, suite] of [...suites, ...suitesV2, ...suitesSearch]) expect([name, suite.passed]).toEqual([name, suite.cases])
    expect(suitesV2[0]![1].cases).toBeGreaterThan(80)
    expect(suites[0]![1].cases).toBeGreaterThan(40)
  })
})

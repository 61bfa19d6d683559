/**
 * Every backend against the one conformance suite. The number of cases per
 * backend is printed, and must be the same for all of them.
 */
import { describe, expect, inject, it } from "@effect/vitest"
import * as Kit from "../src/Kit.js"
import { conformance } from "../src/suite.js"

// The PostgreSQL server is the run's own (packages/pg/test/support/global-setup.ts), or SESSION_TREE_TEST_DB.
const backends = [Kit.memory, Kit.file, Kit.postgres(inject("pgUrl"))]
const suites = backends.map((backend) => [backend.name, conformance(backend)] as const)

describe("conformance", () => {
  it("runs the same cases against every backend", () => {
    const counts = suites.map(([name, suite]) => [name, suite.cases] as const)
    console.log(`conformance cases per backend: ${counts.map(([name, n]) => `${name} ${n}`).join(", ")}`)
    expect(new Set(counts.map(([, n]) => n)).size).toBe(1)
    expect(counts[0]![1]).toBeGreaterThan(40)
  })
})

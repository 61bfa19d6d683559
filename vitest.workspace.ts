import { defaultServerConditions } from "vite"
import { defineWorkspace } from "vitest/config"

// The workspace's packages resolve to their TypeScript sources (the `@session-tree/source` condition
// of their exports), so the tests need no build.
const conditions = ["@session-tree/source", ...defaultServerConditions]
const sources = { resolve: { conditions }, ssr: { resolve: { conditions, externalConditions: ["@session-tree/source"] } } }

// Every project starts with the guard that fails the run when a process a test started outlives it.
const guard = "packages/testing/src/ChildGuard.ts"

// The test files of a project share one worker and its loaded modules (no test changes the
// environment, the working directory or a module): loading Effect and the libraries anew for
// every file took a third of the run on two cores.
const isolate = false

// One project per package, as Effect's own v3 repository does. `reliability` runs a
// fast subset in `npm test`; `npm run test:reliability` sets RELIABILITY=long for the full counts.
export default defineWorkspace([
  {
    ...sources,
    test: {
      name: "core",
      isolate,
      globalSetup: [guard],
      include: ["packages/core/test/**/*.test.ts"],
      testTimeout: 60_000
    }
  },
  {
    ...sources,
    test: {
      name: "file",
      isolate,
      globalSetup: [guard],
      include: ["packages/file/test/**/*.test.ts"],
      testTimeout: 60_000
    }
  },
  {
    ...sources,
    test: {
      name: "pg",
      isolate,
      include: ["packages/pg/test/**/*.test.ts"],
      // One PostgreSQL server for the run, shared with the conformance and reliability projects.
      globalSetup: [guard, "packages/pg/test/support/global-setup.ts"],
      testTimeout: 120_000
    }
  },
  {
    ...sources,
    test: {
      name: "view",
      isolate,
      globalSetup: [guard],
      include: ["packages/view/test/**/*.test.ts"],
      testTimeout: 120_000,
      // Starting Chromium on a loaded 2-core machine can take longer than the default 10 s.
      hookTimeout: 120_000
    }
  },
  {
    ...sources,
    test: {
      name: "server",
      isolate,
      include: ["packages/server/test/**/*.test.ts"],
      // Its Chromium tests time what a reader sees (a first screen within a second): they run last,
      // one file at a time, once every other file is done, so no other test shares the cores with them.
      sequence: { groupOrder: 1 },
      poolOptions: { forks: { singleFork: true } },
      // Files and the run's PostgreSQL server; Chromium for the pages.
      globalSetup: [guard, "packages/pg/test/support/global-setup.ts"],
      testTimeout: 120_000,
      hookTimeout: 120_000
    }
  },
  {
    ...sources,
    test: {
      name: "ai",
      isolate,
      include: ["packages/ai/test/**/*.test.ts"],
      globalSetup: [guard, "packages/pg/test/support/global-setup.ts"],
      testTimeout: 60_000
    }
  },
  {
    ...sources,
    test: {
      name: "conformance",
      isolate,
      include: ["packages/conformance/test/**/*.test.ts"],
      globalSetup: [guard, "packages/pg/test/support/global-setup.ts"],
      testTimeout: 120_000
    }
  },
  {
    ...sources,
    test: {
      name: "reliability",
      isolate,
      include: ["packages/file/reliability/**/*.test.ts", "packages/pg/reliability/**/*.test.ts"],
      globalSetup: [guard, "packages/pg/test/support/global-setup.ts"],
      testTimeout: 3_600_000,
      hookTimeout: 600_000
    }
  },
  {
    ...sources,
    test: {
      name: "cli",
      isolate,
      include: ["packages/cli/test/**/*.test.ts"],
      // The tests run the command as built from the current sources; the database commands run
      // against the run's PostgreSQL server.
      globalSetup: [guard, "packages/cli/test/build.ts", "packages/pg/test/support/global-setup.ts"],
      testTimeout: 60_000
    }
  },
  {
    ...sources,
    test: {
      name: "course",
      isolate,
      globalSetup: [guard],
      include: ["course/test/**/*.test.ts"],
      testTimeout: 60_000
    }
  }
])

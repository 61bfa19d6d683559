/**
 * The PostgreSQL server of a test run: ONE server for every project that names
 * this file (pg, conformance, reliability), booted when the first of them starts
 * and stopped when the last one has finished. Tests get its URL with
 * `inject("pgUrl")` and make a fresh database of their own on it. With
 * `SESSION_TREE_TEST_DB` set (a URL whose user may create databases), that
 * server is used instead and nothing is booted.
 */
import type { TestProject } from "vitest/node"
import { bootServer, type Server } from "@session-tree/testing/Postgres"

declare module "vitest" {
  export interface ProvidedContext {
    /** A URL of the test server's `postgres` database, for creating and dropping the tests' own databases. */
    pgUrl: string
  }
}

// Every project loads this module anew, but all of them run in vitest's main process.
const KEY = Symbol.for("@session-tree/pg/test-server")
interface Shared {
  readonly server: Promise<Server>
  users: number
}
const registry = globalThis as { [KEY]?: Shared }

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const external = process.env["SESSION_TREE_TEST_DB"]
  if (external !== undefined && external !== "") {
    project.provide("pgUrl", external)
    return undefined
  }
  const shared = (registry[KEY] ??= { server: bootServer("run"), users: 0 })
  shared.users++
  const server = await shared.server
  project.provide("pgUrl", server.url())
  return async () => {
    if (--shared.users > 0) return
    delete registry[KEY]
    server.dispose()
  }
}

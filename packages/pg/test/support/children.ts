/**
 * Child processes of the PostgreSQL tests (see `@session-tree/testing/Children`),
 * each with connections of its own.
 */
import { type ChildCommand, prepareChild as prepare } from "@session-tree/testing/Children"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export { type Child, type ChildCommand, sleep, spawnChild } from "@session-tree/testing/Children"

const here = Path.dirname(fileURLToPath(import.meta.url))

/** The path of child program `name` in `packages/pg/test/children`. */
export const childPath = (name: string): string => Path.join(here, "..", "children", name)

/** The command that starts child program `name` of `packages/pg/test/children`. */
export const prepareChild = (name: string): Promise<ChildCommand> => prepare(childPath(name))

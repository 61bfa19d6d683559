/** Child processes of the reliability suite (see `@session-tree/testing/Children`). */
import { type ChildCommand, prepareChild as prepare } from "@session-tree/testing/Children"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

export { type Child, type ChildCommand, sleep, spawnChild } from "@session-tree/testing/Children"

const here = Path.dirname(fileURLToPath(import.meta.url))
export const childPath = (name: string): string => Path.join(here, "..", "children", name)

/** The command that starts child program `name` of `reliability/children`. */
export const prepareChild = (name: string): Promise<ChildCommand> => prepare(childPath(name))

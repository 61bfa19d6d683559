/**
 * The shared collection of real public transcripts, `../shared/data/transcripts` beside the
 * repository (`SOURCES.md` there says what each holds). Tests read them in place: they are other
 * people's data and never copied into the repository. A clone without the collection passes its
 * tests all the same; the tests that read it say they were skipped.
 */
import * as NFS from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"

/** This file is `packages/testing/src/Transcripts.ts`: the repository is three levels up. */
const repository = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..")

/** The collection's directory, or the directory of one kind of transcript in it. */
export const dir = (kind?: "claude" | "codex" | "pi"): string =>
  Path.join(repository, "..", "shared", "data", "transcripts", ...(kind === undefined ? [] : [kind]))

/** The `.jsonl` files of one kind, by name, sorted; none when the collection is absent. */
export const files = (kind: "claude" | "codex" | "pi"): ReadonlyArray<string> => {
  const at = dir(kind)
  return NFS.existsSync(at) ? NFS.readdirSync(at).filter((name) => name.endsWith(".jsonl")).sort() : []
}

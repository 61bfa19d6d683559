/**
 * Where a session came from and what it started, as the links its page's header
 * shows (`docs/serve.md`, "Links"): the header's fields (`forkedFrom`, and any
 * field naming sessions), the subagent links imports write as entries
 * (`session-tree:subagent-of`, `session-tree:subagent`), and what an imported
 * source says of its origin (a Codex thread's parent thread, a Pi session's
 * parent file and working directory).
 */
import type { Entry, Header } from "@session-tree/core/Record"
import * as Subagents from "@session-tree/core/Subagents"

/** A link a session's page shows: to another session (by ID, at an entry of it), or a fact to show as text. */
export interface Link {
  readonly label: string
  readonly session?: string | undefined
  readonly entry?: string | undefined
  readonly text?: string | undefined
}

/** The kept entries of an imported source's own header (`docs/import.md`). */
const CODEX_META = "codex:session_meta"
const PI_SESSION = "pi:session"
/** An import writes its source's header as the session's first entries: no need to look further. */
const SOURCE_ENTRIES = 4

const isObject = (v: unknown): v is { readonly [key: string]: unknown } => typeof v === "object" && v !== null && !Array.isArray(v)

/** What the header says: `forkedFrom`, any field naming sessions (`{ session, entry? }` or a list of them), text fields as text. */
export const headerLinks = (header: Header): ReadonlyArray<Link> => {
  const links: Array<Link> = []
  for (const [name, value] of Object.entries(header as unknown as Readonly<Record<string, unknown>>)) {
    if (["type", "version", "id", "timestamp"].includes(name)) continue
    // `subagentOf` reads "Subagent of".
    const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase()
    const label = words.charAt(0).toUpperCase() + words.slice(1)
    for (const item of Array.isArray(value) ? value : [value]) {
      if (isObject(item) && typeof item["session"] === "string") {
        const entry = item["entry"]
        links.push({ label, session: item["session"], entry: typeof entry === "string" ? entry : undefined })
      } else if (typeof item === "string" || typeof item === "number") {
        links.push({ label, text: String(item) })
      }
    }
  }
  return links
}

/** What an imported source's kept header says of where it came from. */
const sourceLinks = (entries: ReadonlyArray<Entry>): ReadonlyArray<Link> => {
  const links: Array<Link> = []
  for (const entry of entries.slice(0, SOURCE_ENTRIES)) {
    if (entry.version !== 2 || entry.kind !== "custom" || !isObject(entry.data)) continue
    const data = entry.data
    if (entry.customType === CODEX_META) {
      // A Codex sub-agent's rollout names its parent thread, whose session has the thread's ID.
      const source = data["source"]
      const spawn = isObject(source) && isObject(source["subagent"]) ? source["subagent"]["thread_spawn"] : undefined
      const parent = isObject(spawn) ? spawn["parent_thread_id"] : undefined
      if (typeof parent === "string" && parent !== "") links.push({ label: "Spawned by thread", session: parent })
    } else if (entry.customType === PI_SESSION) {
      // Pi names the file of the session it was forked from, which may be anywhere: shown, never followed.
      if (typeof data["parentSession"] === "string") links.push({ label: "Pi parent session", text: data["parentSession"] })
      if (typeof data["cwd"] === "string") links.push({ label: "Working directory", text: data["cwd"] })
    }
  }
  return links
}

/** Every link a session's page shows, from its header and its entries, each once. */
export const linksOf = (header: Header, entries: ReadonlyArray<Entry>): ReadonlyArray<Link> => {
  const links: Array<Link> = [...headerLinks(header)]
  const parent = Subagents.parentOf(entries)
  if (parent !== undefined) links.push({ label: "Subagent of", session: parent.session })
  links.push(...sourceLinks(entries))
  const seen = new Set<string>()
  for (const link of Subagents.subagentsOf(entries)) {
    if (seen.has(link.session)) continue
    seen.add(link.session)
    links.push({ label: "Subagent", session: link.session })
  }
  return links
}

/**
 * `linksOf(header, entries)` from `before`, the links of `entries`' first `old` entries: the
 * subagents the entries after those name, added; all of them again when the new entries could
 * change more than that (a session this one is a subagent of, the first entries' sources).
 */
export const linksAfter = (header: Header, entries: ReadonlyArray<Entry>, old: number, before: ReadonlyArray<Link>): ReadonlyArray<Link> => {
  const added = entries.slice(old)
  if (old < SOURCE_ENTRIES || Subagents.parentOf(added) !== undefined) return linksOf(header, entries)
  const subagents = Subagents.subagentsOf(added)
  if (subagents.length === 0) return before
  const links = [...before]
  const seen = new Set(before.filter((link) => link.label === "Subagent").map((link) => link.session))
  for (const link of subagents) {
    if (seen.has(link.session)) continue
    seen.add(link.session)
    links.push({ label: "Subagent", session: link.session })
  }
  return links
}

/** What a Claude Code transcript's own lines say, read without the converter: for tests that hold the converter to them. */
import type * as RecordV2 from "../../src/RecordV2.js"

export type Obj = Record<string, unknown>

export const contentOf = (l: Obj): unknown => (l.message as Obj | undefined)?.content
export const blocksOf = (l: Obj): Array<Obj> => Array.isArray(contentOf(l)) ? contentOf(l) as Array<Obj> : []
export const isPromptLine = (l: Obj) => l.type === "user" && (typeof contentOf(l) === "string" || blocksOf(l).some((b) => b.type !== "tool_result"))
export const leavesOf = (entries: ReadonlyArray<RecordV2.SessionEntry>): number => {
  const parents = new Set(entries.map((e) => e.parentId))
  return entries.filter((e) => !parents.has(e.id)).length
}

/**
 * The leaves a transcript's own conversation has, read from its lines alone: its roots, and one
 * more for each line from which more than one turn starts (a user's prompt, or a response other
 * than the one the line belongs to). Lines that are not the conversation's pass their children on,
 * and so do the later blocks of a response and the results of its calls: Claude Code forks there
 * only structurally.
 */
export const sourceLeaves = (lines: ReadonlyArray<Obj>): number => {
  const byUuid = new Map(lines.filter((l) => typeof l.uuid === "string").map((l) => [l.uuid as string, l]))
  const isTurn = (l: Obj) => l.type === "user" || l.type === "assistant"
  // The nearest conversation line above, and the response (message ID) a line belongs to.
  const above = (uuid: unknown): Obj | undefined => {
    for (let at = typeof uuid === "string" ? byUuid.get(uuid) : undefined; at !== undefined; at = byUuid.get(at.parentUuid as string)) {
      if (isTurn(at)) return at
    }
    return undefined
  }
  const responseOf = (l: Obj | undefined): unknown => {
    for (let at = l; at !== undefined; at = above(at.parentUuid)) {
      if (at.type === "assistant") return (at.message as Obj).id
      if (isPromptLine(at)) return undefined
    }
    return undefined
  }
  let roots = 0
  const turns = new Map<Obj, number>()
  for (const l of lines) {
    if (!isTurn(l) || l.isCompactSummary === true) continue
    const parent = above(l.parentUuid)
    if (parent === undefined) {
      roots++
      continue
    }
    const starts = isPromptLine(l) || (l.type === "assistant" && (l.message as Obj).id !== responseOf(parent))
    if (starts) turns.set(parent, (turns.get(parent) ?? 0) + 1)
  }
  return roots + [...turns.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0)
}


/**
 * History: the entries of one session in commit order, with the indexes that
 * check IDs, parents and tool links (`docs/format.md`, "Tool links") in time independent of the size
 * of the history for the usual shapes. Used by the loader (one entry at a time)
 * and by appends, which check a candidate, commit, then `add` it; `truncate`
 * undoes tentative additions exactly because history only grows.
 */
import type { Entry, ToolCall } from "./Record.js"
import type * as V2 from "./RecordV2.js"
import { type CorruptError, sessionError } from "./SessionError.js"

const NONE = -1

/**
 * The entries of one session in commit order, with the indexes that check IDs, parents and tool
 * links as entries are added.
 *
 * @since 0.1.0
 * @category models
 */
export class History {
  readonly entries: Array<Entry> = []
  private readonly indexById = new Map<string, number>()
  private readonly parents: Array<number> = []
  private readonly depths: Array<number> = []
  /**
   * Tool-call ID → index of the assistant entry that makes that call, or the indexes when several
   * branches make it. Almost every ID is used once: a number spares an array per call.
   */
  private readonly calls = new Map<string, Indexes>()
  /** Tool-call ID → index(es) of the tool entries that answer it, as in `calls`. */
  private readonly answers = new Map<string, Indexes>()

  get size(): number {
    return this.entries.length
  }

  has(id: string): boolean {
    return this.indexById.has(id)
  }

  /** The entry with this ID among the first `within` entries (all of them by default). */
  get(id: string, within: number = this.entries.length): Entry | undefined {
    const i = this.indexById.get(id)
    return i === undefined || i >= within ? undefined : this.entries[i]
  }

  /** Whether entry `a` is `b` or one of its ancestors (both indexes). */
  private isAncestorOrSelf(a: number, b: number): boolean {
    const target = this.depths[a]!
    let cur = b
    while (cur !== NONE && this.depths[cur]! > target) cur = this.parents[cur]!
    return cur === a
  }

  /** The index among `indexes` that lies on the branch ending at `leaf` (inclusive), or NONE. */
  private onBranch(indexes: Indexes | undefined, leaf: number): number {
    if (indexes === undefined || leaf === NONE) return NONE
    if (typeof indexes === "number") return this.isAncestorOrSelf(indexes, leaf) ? indexes : NONE
    for (const i of indexes) if (this.isAncestorOrSelf(i, leaf)) return i
    return NONE
  }

  /** Checks that `entry` may follow the current history; returns the error, or undefined. */
  check(entry: Entry, line?: number): CorruptError | undefined {
    const parent = this.parentOf(entry, line)
    return typeof parent === "number" ? this.checkLinks(entry, parent, line) : parent
  }

  /** Adds an entry that `check` accepted. */
  add(entry: Entry): void {
    this.insert(entry, entry.parentId === null ? NONE : this.indexById.get(entry.parentId)!)
  }

  /**
   * `check`, then `add` when it passes (the loader's step). The entry's ID is indexed first, and
   * the index's size tells a repeated ID: one hash lookup of a new ID instead of two (a lookup,
   * then the insertion), which is a load's largest cost here. Every lookup after it looks among
   * the entries before this one only (`indexOf`), and a refusal takes the ID out again.
   */
  checkAndAdd(entry: Entry, line?: number): CorruptError | undefined {
    const ids = this.indexById
    const index = this.entries.length
    const size = ids.size
    ids.set(entry.id, index)
    if (ids.size === size) {
      // A repeated ID: the index of the entry that has it goes back in place.
      ids.set(entry.id, this.entries.findIndex((earlier) => earlier.id === entry.id))
      return duplicateId(entry, line)
    }
    const parent = this.parentIndex(entry, line)
    const problem = typeof parent === "number" ? this.checkLinks(entry, parent, line) : parent
    if (problem !== undefined) {
      ids.delete(entry.id)
      return problem
    }
    this.place(entry, parent as number, index)
    return undefined
  }

  /** The index of the entry's parent (NONE for a root), or the error of a repeated ID or unknown parent. */
  private parentOf(entry: Entry, line: number | undefined): number | CorruptError {
    return this.indexById.has(entry.id) ? duplicateId(entry, line) : this.parentIndex(entry, line)
  }

  /** The index of the entry's parent among the entries (NONE for a root), or the error of an unknown parent. */
  private parentIndex(entry: Entry, line: number | undefined): number | CorruptError {
    if (entry.parentId === null) return NONE
    // Most entries follow the one before: a string comparison instead of a hash lookup.
    const last = this.entries.length - 1
    if (last >= 0 && this.entries[last]!.id === entry.parentId) return last
    const p = this.indexOf(entry.parentId)
    return p !== NONE
      ? p
      : sessionError("SESSION_UNKNOWN_PARENT", `parent "${entry.parentId}" is not an earlier entry`, { line })
  }

  /** The index of the entry with this ID, or NONE: never the entry `checkAndAdd` is adding, whose ID it indexes first. */
  private indexOf(id: string): number {
    const i = this.indexById.get(id)
    return i === undefined || i >= this.entries.length ? NONE : i
  }

  /** The tool-link rules for `entry` as a child of `parent`: a result answers an ancestor's call of the same name, once per branch; a call ID is made once per branch. */
  private checkLinks(entry: Entry, parent: number, line: number | undefined): CorruptError | undefined {
    if (entry.version === 2) return this.checkV2(entry, parent, line)
    const message = entry.message
    if (message.role === "assistant") {
      for (const call of message.toolCalls) {
        if (this.onBranch(this.calls.get(call.id), parent) !== NONE) {
          return sessionError("SESSION_TOOL_LINK", `tool call ID "${call.id}" is already used on this branch`, { line })
        }
      }
    } else if (message.role === "tool") {
      return this.checkAnswer(message.toolCallId, message.toolName, parent, line)
    }
    return undefined
  }

  /** The rules of a version-2 entry that need the history: tool links over parts, a compaction's kept entry, a label's target. */
  private checkV2(entry: V2.SessionEntry, parent: number, line: number | undefined): CorruptError | undefined {
    switch (entry.kind) {
      case "message": {
        const message = entry.message
        if (message.role === "assistant") {
          for (const part of message.content) {
            if (part.type === "tool-call" && this.onBranch(this.calls.get(part.id), parent) !== NONE) {
              return sessionError("SESSION_TOOL_LINK", `tool call ID "${part.id}" is already used on this branch`, { line })
            }
          }
        } else if (message.role === "tool") {
          return this.checkAnswer(message.toolCallId, message.toolName, parent, line)
        }
        return undefined
      }
      case "compaction": {
        const kept = entry.firstKeptEntryId
        if (kept === null) return undefined
        const index = this.indexOf(kept)
        return index !== NONE && parent !== NONE && this.isAncestorOrSelf(index, parent)
          ? undefined
          : sessionError("SESSION_INVALID_RECORD", `the compaction keeps from "${kept}", which is not an ancestor of it`, { line })
      }
      case "label":
        return this.indexOf(entry.targetId) !== NONE
          ? undefined
          : sessionError("SESSION_INVALID_RECORD", `the label's target "${entry.targetId}" is not an earlier entry`, { line })
      default:
        return undefined
    }
  }

  /** A tool message's link: it answers a call of an ancestor, by name, not provider-executed, once per branch. */
  private checkAnswer(callId: string, name: string, parent: number, line: number | undefined): CorruptError | undefined {
    const callIndex = this.onBranch(this.calls.get(callId), parent)
    if (callIndex === NONE) {
      return sessionError("SESSION_TOOL_LINK", `tool result answers call "${callId}", which no ancestor makes`, { line })
    }
    const call = callIn(this.entries[callIndex]!, callId)
    if (call !== undefined && "providerExecuted" in call) {
      return sessionError("SESSION_TOOL_LINK", `call "${callId}" is executed by the provider and answered in its own message`, { line })
    }
    if (call === undefined || call.name !== name) {
      return sessionError("SESSION_TOOL_LINK", `tool result names "${name}" but call "${callId}" is to "${call?.name}"`, { line })
    }
    if (this.onBranch(this.answers.get(callId), parent) !== NONE) {
      return sessionError("SESSION_TOOL_LINK", `call "${callId}" is already answered on this branch`, { line })
    }
    return undefined
  }

  private insert(entry: Entry, parent: number): void {
    const index = this.entries.length
    this.indexById.set(entry.id, index)
    this.place(entry, parent, index)
  }

  /** Adds an entry whose ID is indexed already, at `index` (the next). */
  private place(entry: Entry, parent: number, index: number): void {
    this.entries.push(entry)
    this.parents.push(parent)
    this.depths.push(parent === NONE ? 0 : this.depths[parent]! + 1)
    links(entry, index, this.calls, this.answers, push)
  }

  /** Removes every entry from index `size` on: the exact undo of the `add`s since then. */
  truncate(size: number): void {
    while (this.entries.length > size) {
      const entry = this.entries.pop()!
      const index = this.entries.length
      this.indexById.delete(entry.id)
      this.parents.pop()
      this.depths.pop()
      links(entry, index, this.calls, this.answers, pop)
    }
  }
}

type Indexes = number | Array<number>

/** The tool call with this ID that the entry makes, in either version's form. */
const callIn = (entry: Entry, id: string): ToolCall | V2.ToolCallPart | undefined => {
  if (entry.version === 1) {
    return entry.message.role === "assistant" ? entry.message.toolCalls.find((c) => c.id === id) : undefined
  }
  if (entry.kind !== "message" || entry.message.role !== "assistant") return undefined
  for (const part of entry.message.content) if (part.type === "tool-call" && part.id === id) return part
  return undefined
}

const duplicateId = (entry: Entry, line: number | undefined): CorruptError =>
  sessionError("SESSION_DUPLICATE_ID", `entry ID "${entry.id}" is already used`, { line })

/**
 * Applies `op` (`push` or `pop`) at `index` under each tool-call ID the entry makes, in `calls`,
 * and under the call a tool message answers, in `answers`. No closure per entry: a load adds
 * every entry through here.
 */
const links = (
  entry: Entry,
  index: number,
  calls: Map<string, Indexes>,
  answers: Map<string, Indexes>,
  op: (map: Map<string, Indexes>, key: string, index: number) => void
): void => {
  if (entry.version === 1) {
    const message = entry.message
    if (message.role === "assistant") for (const c of message.toolCalls) op(calls, c.id, index)
    else if (message.role === "tool") op(answers, message.toolCallId, index)
    return
  }
  if (entry.kind !== "message") return
  const message = entry.message
  if (message.role === "assistant") {
    for (const part of message.content) if (part.type === "tool-call") op(calls, part.id, index)
  } else if (message.role === "tool") op(answers, message.toolCallId, index)
}

const push = (map: Map<string, Indexes>, key: string, index: number): void => {
  const held = map.get(key)
  if (held === undefined) map.set(key, index)
  else if (typeof held === "number") map.set(key, [held, index])
  else held.push(index)
}

/** Undoes the last `push` of `index` under `key`. */
const pop = (map: Map<string, Indexes>, key: string, index: number): void => {
  const held = map.get(key)
  if (held === undefined) return
  if (typeof held === "number") {
    if (held === index) map.delete(key)
    return
  }
  if (held[held.length - 1] === index) held.pop()
  if (held.length === 0) map.delete(key)
}

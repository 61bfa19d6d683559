/**
 * The HTML page's layout (`Html.render`): a small description of the page built
 * once (`Page`), then the tree's rows, the transcript cards and the document
 * around them, each laid out by functions of it.
 */
import type { Entry, Header, Message, SessionEntry } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import type { Options } from "../Html.js"
import { MAX_LEVEL, SCRIPT, SCRIPT_HASH, STYLE, STYLE_HASH, STYLE_V2, STYLE_V2_HASH } from "./page.js"
import { type Counts, countsOf, isNewest, plural, resolve, settled, type Summary, summaryOf, truncate, updatedOf } from "./session.js"
import { blobsOf, inlineImage, isRasterImage, isWebUrl, labelsOf, linkOf, optionKeys, readBlobs, sizeOf, textOf } from "./v2.js"

export const render = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
): Effect.Effect<string, SessionError> =>
  Effect.suspend(() => {
    const list = settled(entries)
    const read = options?.blobs
    return Effect.flatMap(resolve(list, options?.leaf), (shown) =>
      Effect.map(
        read === undefined ? Effect.succeed(new Map<string, string>()) : readBlobs(blobsOf(list, true), read),
        (images) => page(header, list, shown.leaf, shown.isDefault, shown.path, options?.title, images)
      ))
  })

/** The Content-Security-Policy of every page: only its own style sheet and script, by hash. */
const policy = (styleHash: string, images: string) =>
  `default-src 'none'; style-src '${styleHash}'; script-src '${SCRIPT_HASH}'; ` +
  `img-src ${images}; font-src 'none'; connect-src 'none'; media-src 'none'; object-src 'none'; ` +
  `frame-src 'none'; worker-src 'none'; manifest-src 'none'; base-uri 'none'; form-action 'none'`
const CONTENT_SECURITY_POLICY = policy(STYLE_HASH, "'none'")
/** Version 2 shows images from `data:` URLs (laid out here, checked by `inlineImage`), never from the network. */
const CONTENT_SECURITY_POLICY_V2 = policy(STYLE_V2_HASH, "data:")

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" }

/** Text for an HTML text node or a quoted attribute (the public `Html.escapeHtml`). */
export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"'\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, (c) =>
    ESCAPES[c] ?? String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)))

/** A text longer than this (characters or lines) is folded to its first lines. */
const LONG_CHARS = 1_200
const LONG_LINES = 16
const PREVIEW_LINES = 6
const PREVIEW_CHARS = 480
/** Single-child chains longer than this fold their middle, keeping a few entries at each end. */
const RUN_FOLD = 10
const RUN_KEEP = 3
const ROW_PREVIEW = 80

/** Cuts `text` to a preview without splitting a surrogate pair. */
const cut = (text: string, lines: number, chars: number): string => {
  let end = Math.min(text.length, chars)
  let seen = 0
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10 && ++seen === lines) {
      end = i
      break
    }
  }
  const last = text.charCodeAt(end - 1)
  if (last >= 0xd800 && last <= 0xdbff) end--
  return text.slice(0, end)
}

/**
 * The first ROW_PREVIEW code points of `text` with whitespace runs as one space,
 * for one line of the tree. Cut first so a long text is not flattened whole;
 * four times the preview leaves room for the runs the flattening joins.
 */
const rowPreview = (text: string): string =>
  truncate(cut(text, Number.POSITIVE_INFINITY, ROW_PREVIEW * 4).replace(/\s+/g, " ").trim(), ROW_PREVIEW)

const lineCount = (text: string): number => {
  let n = 1
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++
  return n
}

/** A text block, verbatim; a long one folded into a `<details>` showing its first lines. */
const textBlock = (text: string, cls: string): string => {
  const lines = lineCount(text)
  if (text.length <= LONG_CHARS && lines <= LONG_LINES) return `<div class="${cls}">${escapeHtml(text)}</div>`
  return `<details class="long"><summary><div class="${cls}">${escapeHtml(cut(text, PREVIEW_LINES, PREVIEW_CHARS))}…</div>` +
    `<span class="more">Show all ${plural(lines, "line")} · ${plural(text.length, "character")}</span></summary>` +
    `<div class="${cls} full">${escapeHtml(text)}</div></details>`
}

const ROLE_CLASS: Record<Message["role"], string> = { user: "u", assistant: "a", tool: "t" }

const roleClass = (message: Message): string =>
  message.role === "tool" && message.isError ? "t e" : ROLE_CLASS[message.role]

const KIND_CLASS: Record<Exclude<V2.Kind, "message">, string> = { compaction: "cp", label: "lb", title: "ti", model: "md", custom: "cu" }

/** The class of an entry's node: its role's (as in version 1, `s` for system), or its kind's. */
const entryClass = (entry: Entry): string => {
  if (entry.version === 1) return roleClass(entry.message)
  if (entry.kind !== "message") return KIND_CLASS[entry.kind]
  const m = entry.message
  return m.role === "system" ? "s" : m.role === "tool" && m.isError ? "t e" : ROLE_CLASS[m.role]
}

/** The name on an entry's node: its role, or its kind. */
const entryName = (entry: Entry): string =>
  entry.version === 1 ? entry.message.role : entry.kind === "message" ? entry.message.role : entry.kind

/** The tool calls a tool message can answer, each with its position in the message (version 2: not provider-executed). */
const callsOf = (entry: Entry): ReadonlyArray<{ readonly id: string; readonly k: number }> => {
  if (entry.version === 1) return entry.message.role === "assistant" ? entry.message.toolCalls.map((call, k) => ({ id: call.id, k })) : []
  if (entry.kind !== "message" || entry.message.role !== "assistant") return []
  return entry.message.content.flatMap((part, k) => (part.type === "tool-call" && part.providerExecuted !== true ? [{ id: part.id, k }] : []))
}

/** The call a tool message answers. */
const answersOf = (entry: Entry): string | undefined =>
  entry.version === 1
    ? entry.message.role === "tool" ? entry.message.toolCallId : undefined
    : entry.kind === "message" && entry.message.role === "tool"
    ? entry.message.toolCallId
    : undefined

/** Where each tool call is answered and which call each tool result answers, by commit index. */
interface Links {
  /** `${entry}:${call}` → the entries answering that call, in commit order (one per branch at most). */
  readonly answers: Map<string, Array<number>>
  /** Tool-result entry → the entry and position of the call it answers. */
  readonly answered: Map<number, { readonly entry: number; readonly call: number }>
}

/**
 * The children of each entry by commit index, in commit order: `kids[start[i]..start[i + 1]]`, and
 * the roots. One array for a whole session (100,000 entries need no list each). With IDs used twice
 * (no store holds such a session), the children of an ID go under the first entry that has it.
 */
interface Children {
  readonly roots: ReadonlyArray<number>
  readonly start: Int32Array
  readonly kids: Int32Array
  /**
   * The children of entries that came after those `start` and `kids` index (`extendPage`): by
   * parent, in commit order, after any `kids` gives. Absent for a page laid out whole.
   */
  readonly more?: ReadonlyMap<number, ReadonlyArray<number>> | undefined
}

const childrenIndex = (entries: ReadonlyArray<Entry>, byId: ReadonlyMap<string, number>): Children => {
  const n = entries.length
  const parent = new Int32Array(n)
  const start = new Int32Array(n + 1)
  const roots: Array<number> = []
  for (let i = 0; i < n; i++) {
    const parentId = entries[i]!.parentId
    const at = parentId === null ? -1 : byId.get(parentId) ?? -2
    parent[i] = at
    if (at === -1) roots.push(i)
    else if (at >= 0) start[at + 1]!++
  }
  for (let i = 0; i < n; i++) start[i + 1]! += start[i]!
  const kids = new Int32Array(n)
  const filled = start.slice(0, n)
  for (let i = 0; i < n; i++) if (parent[i]! >= 0) kids[filled[parent[i]!]!++] = i
  return { roots, start, kids }
}

/** The children of the entry at `i`, by index. */
const childrenAt = (c: Children, i: number): Int32Array => {
  const base = i + 1 < c.start.length ? c.kids.subarray(c.start[i]!, c.start[i + 1]!) : new Int32Array(0)
  const more = c.more?.get(i)
  if (more === undefined) return base
  const all = new Int32Array(base.length + more.length)
  all.set(base)
  all.set(more, base.length)
  return all
}

/** Whether the entry at `i` has no children in `p`. */
export const isLeafIn = (p: Page, i: number): boolean => soleChild(p.children, i) === -1

/**
 * The only child of the entry at `i` (its index), or else -1 - how many children it has (-1: none,
 * -3: two). A number, not a list: the tree follows a chain of 100,000 without making one.
 */
const soleChild = (c: Children, i: number): number => {
  const from = i + 1 < c.start.length ? c.start[i]! : 0
  const to = i + 1 < c.start.length ? c.start[i + 1]! : 0
  const more = c.more === undefined ? undefined : c.more.get(i)
  const count = to - from + (more === undefined ? 0 : more.length)
  return count !== 1 ? -1 - count : to > from ? c.kids[from]! : more![0]!
}

/**
 * Resolves tool links in one depth-first walk over the tree: the calls in scope are those of the
 * current branch's ancestors, added on the way down and removed on the way back, so each result
 * finds the call it answers (the nearest ancestor that made it) without walking up per result.
 * The walk goes over commit indexes: roots, then each entry's children, in commit order, as the
 * core's `childrenOf` gives them.
 */
const linksOf = (entries: ReadonlyArray<Entry>, children: Children): Links => {
  const answers = new Map<string, Array<number>>()
  const answered = new Map<number, { entry: number; call: number }>()
  const scope = new Map<string, Array<{ entry: number; call: number }>>()
  const { roots, start, kids } = children
  const seen = new Uint8Array(entries.length)
  // An entry's index on the way down; its complement (~i, negative) on the way back up.
  const stack: Array<number> = []
  for (let k = roots.length - 1; k >= 0; k--) stack.push(roots[k]!)
  while (stack.length > 0) {
    const top = stack.pop()!
    if (top < 0) {
      for (const call of callsOf(entries[~top]!)) scope.get(call.id)?.pop()
      continue
    }
    const i = top
    if (seen[i] === 1) continue
    seen[i] = 1
    const entry = entries[i]!
    const answering = answersOf(entry)
    if (answering !== undefined) {
      const made = scope.get(answering)?.at(-1)
      if (made !== undefined) {
        answered.set(i, made)
        const key = `${made.entry}:${made.call}`
        const list = answers.get(key)
        if (list === undefined) answers.set(key, [i])
        else list.push(i)
      }
    } else {
      const calls = callsOf(entry)
      for (const { id, k } of calls) {
        const list = scope.get(id)
        if (list === undefined) scope.set(id, [{ entry: i, call: k }])
        else list.push({ entry: i, call: k })
      }
      if (calls.length > 0) stack.push(~i)
    }
    for (let k = start[i + 1]! - 1; k >= start[i]!; k--) stack.push(kids[k]!)
  }
  for (const list of answers.values()) list.sort((a, b) => a - b)
  return { answers, answered }
}

/** A row's preview of a version-2 entry: a message's text, or what the entry says. */
const previewOf = (entry: V2.SessionEntry): string => {
  switch (entry.kind) {
    case "message":
      return textOf(entry.message)
    case "compaction":
      return entry.summary
    case "label":
      return entry.label === null ? `${entry.targetId}: unlabelled` : `${entry.targetId}: ${entry.label}`
    case "title":
      return entry.title
    case "model":
      return `${entry.provider} / ${entry.model}${entry.thinking === undefined ? "" : ` · thinking ${entry.thinking}`}`
    case "custom":
      return `${entry.customType} ${JSON.stringify(entry.data)}`
  }
}

/** The order in which a folded run counts the kinds of version 2 it holds. */
const RUN_NAMES = ["system", "user", "assistant", "tool", "compaction", "label", "title", "model", "custom"] as const

export const LEGEND_V2 = [
  ["s", "system"],
  ["u", "user"],
  ["a", "assistant"],
  ["t", "tool"],
  ["t e", "tool error"],
  ["cp", "compaction"],
  ["lb", "label"],
  ["ti", "title"],
  ["md", "model"],
  ["cu", "custom"]
].map(([cls, name]) => `<span><span class="k ${cls}">${name}</span></span>`).join("")

export const LEGEND = `<span><span class="k u">user</span></span><span><span class="k a">assistant</span></span><span><span class="k t">tool</span></span><span><span class="k t e">tool error</span></span>`

/** What every part of one page reads: the session, where each entry is, the path shown, the links. */
export interface Page {
  readonly header: Header
  /** In commit order; an entry's index here names its row (`r12`) and its card (`m12`). */
  readonly entries: ReadonlyArray<Entry>
  /** The first entry of each ID, by index. */
  readonly byId: ReadonlyMap<string, number>
  readonly onPath: ReadonlySet<number>
  /** The index of the path's leaf, or -1 for the empty path. */
  readonly leafIndex: number
  readonly children: Children
  readonly links: Links
  readonly labels: ReadonlyMap<string, string>
  readonly images: ReadonlyMap<string, string>
  /** Where the page loads an image blob from, for a page served with its blobs (none: by name only, or inline). */
  readonly blobSrc?: ((ref: string, mediaType: string) => string | undefined) | undefined
  /** Whether a folded run's rows are left out, for the page to load when it is opened. */
  readonly lazyRuns?: boolean | undefined
  /** How many IDs `byId` held when this page was made: an extended page's `byId` holds more, and is not extended again. */
  readonly ids: number
}

const e = escapeHtml

export const pageOf = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  path: ReadonlyArray<Entry>,
  images: ReadonlyMap<string, string>,
  served?: Pick<Page, "blobSrc" | "lazyRuns">
): Page => {
  const byId = new Map<string, number>()
  entries.forEach((entry, i) => {
    if (!byId.has(entry.id)) byId.set(entry.id, i)
  })
  // Where the path's entries are (a page of a whole session shows one; a layout, none).
  const at = new Map<Entry, number>()
  if (path.length > 0) entries.forEach((entry, i) => at.set(entry, i))
  const children = childrenIndex(entries, byId)
  return {
    header,
    entries,
    byId,
    onPath: new Set<number>(path.map((entry) => at.get(entry)!)),
    leafIndex: path.length === 0 ? -1 : at.get(path[path.length - 1]!)!,
    children,
    links: linksOf(entries, children),
    labels: labelsOf(entries),
    images,
    blobSrc: served?.blobSrc,
    lazyRuns: served?.lazyRuns,
    ids: byId.size
  }
}

/** How many entries an extended page may add before it is laid out whole again (its children beyond the index grow). */
const EXTENDED_MAX = 50_000

/**
 * `p` (a layout: no path shown) with the entries of `entries` after its own: `entries` starts with
 * every entry of `p`, the same objects. Each new entry is laid out as a whole layout would lay it
 * out: its index by ID, its place among its parent's children, the call it answers (its nearest
 * ancestor that made it), the labels it sets; the work is that of the new entries and their
 * ancestors up to the call each answers, not the session's. The maps `p` keeps are not changed,
 * except `byId`, which only gains IDs beyond `p`'s entries (which `p` never looks up: see
 * `indexIn`). Undefined when it cannot be done so (not a layout, other entries before, too many
 * entries added since the last whole layout): lay out whole.
 */
export const extendPage = (p: Page, entries: ReadonlyArray<Entry>): Page | undefined => {
  const old = p.entries.length
  if (p.leafIndex !== -1 || p.onPath.size > 0 || entries.length < old) return undefined
  for (let i = 0; i < old; i += Math.max(1, old >> 4)) if (entries[i] !== p.entries[i]) return undefined
  if (old > 0 && entries[old - 1] !== p.entries[old - 1]) return undefined
  const byId = p.byId as Map<string, number>
  // Extended once already (`byId` gained IDs): extending it again could give an ID two indexes.
  if (byId.size !== p.ids) return undefined
  const more = new Map(p.children.more ?? [])
  let added = 0
  for (const list of more.values()) added += list.length
  if (added + entries.length - old > EXTENDED_MAX) return undefined
  const roots = p.children.roots.slice()
  const answers = new Map(p.links.answers)
  const answered = new Map(p.links.answered)
  let labels = p.labels
  for (let i = old; i < entries.length; i++) {
    const entry = entries[i]!
    if (!byId.has(entry.id)) byId.set(entry.id, i)
    const parent = entry.parentId === null ? -1 : byId.get(entry.parentId) ?? -2
    if (parent === -1) roots.push(i)
    else if (parent >= 0) more.set(parent, [...(more.get(parent) ?? []), i])
    const answering = answersOf(entry)
    if (answering !== undefined) {
      const made = callAbove(entries, byId, entry, answering)
      if (made !== undefined) {
        answered.set(i, made)
        const key = `${made.entry}:${made.call}`
        answers.set(key, [...(answers.get(key) ?? []), i])
      }
    }
    if (entry.version === 2 && entry.kind === "label") {
      const next = new Map(labels)
      if (entry.label === null) next.delete(entry.targetId)
      else next.set(entry.targetId, entry.label)
      labels = next
    }
  }
  return { ...p, entries, byId, children: { ...p.children, roots, more }, links: { answers, answered }, labels, ids: byId.size }
}

/**
 * The call `id` that `entry` answers, as the tree walk of `linksOf` finds it: the nearest ancestor
 * that answers nothing and made a call with that ID (its last such call).
 */
const callAbove = (
  entries: ReadonlyArray<Entry>,
  byId: ReadonlyMap<string, number>,
  entry: Entry,
  id: string
): { readonly entry: number; readonly call: number } | undefined => {
  let steps = 0
  for (let at = entry.parentId === null ? undefined : byId.get(entry.parentId); at !== undefined && steps <= entries.length; steps++) {
    const above = entries[at]!
    if (answersOf(above) === undefined) {
      const calls = callsOf(above)
      for (let k = calls.length - 1; k >= 0; k--) if (calls[k]!.id === id) return { entry: at, call: calls[k]!.k }
    }
    at = above.parentId === null ? undefined : byId.get(above.parentId)
  }
  return undefined
}

/** The index of entry `id` in `p`, or undefined (an ID an extended page added after `p`'s entries included). */
export const indexIn = (p: Page, id: string): number | undefined => {
  const i = p.byId.get(id)
  return i !== undefined && i < p.entries.length ? i : undefined
}

/** The index of an entry's parent, or -1 for a root (or a parent not in the list). */
const parentOf = (p: Page, entry: Entry): number => (entry.parentId === null ? -1 : p.byId.get(entry.parentId) ?? -1)

/** The card of the entry at `i`. */
export const cardOf = (p: Page, i: number): string => {
  const entry = p.entries[i]!
  return entry.version === 2 ? cardV2(p, entry, i) : cardV1(p, entry, i)
}

/** The whole page: the tree of every entry and one card per entry, the path to `leaf` marked. */
const page = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<Entry>,
  title: string | undefined,
  images: ReadonlyMap<string, string>
): string => {
  const p = pageOf(header, entries, path, images)
  const cards = entries.map((entry, i) => (entry.version === 2 ? cardV2(p, entry, i) : cardV1(p, entry, i)))
  return documentOf(p, leaf, isDefault, path, title, treeOf(p), cards)
}

// ---- The tree: depth-first over the children of each entry (the core's childrenOf, by index). At a fork every child is
// one level in, under its parent; the child on the active path (else the newest)
// comes last, so the active path still reads downwards.

/** The classes every row has: its kind, its level, whether it is on the path or the leaf. */
const rowClass = (p: Page, cls: string, i: number, level: number, extra: string): string =>
  `row ${cls} l${Math.min(level, MAX_LEVEL)}${p.onPath.has(i) ? " act sel" : ""}${i === p.leafIndex ? " cur" : ""}${extra}`

/** A row's button around its name, chips and preview. */
const rowButton = (p: Page, entry: Entry, i: number, cls: string, name: string, chips: string, preview: string, forks: number): string => {
  const fork = forks > 1 ? `<span class="br">${forks} branches</span>` : ""
  return `<button type="button" class="${cls}" id="r${i}" data-p="${parentOf(p, entry)}"${i === p.leafIndex ? " aria-current=\"true\"" : ""}>` +
    `<span class="k">${name}</span>${chips}` +
    `<span class="pv">${e(rowPreview(preview))}</span>${fork}<span class="id">${e(entry.id)}</span></button>`
}

/** The chips of up to three tool calls, then how many more. */
const callChips = (names: ReadonlyArray<string>): string =>
  names.slice(0, 3).map((name) => `<span class="chip">⚙ ${e(name)}</span>`).join("") +
  (names.length > 3 ? `<span class="chip">+${names.length - 3}</span>` : "")

const toolChip = (toolName: string, isError: boolean): string =>
  `<span class="chip${isError ? " err" : ""}">↩ ${e(toolName)}${isError ? " · error" : ""}</span>`

/** The row of the entry at index `i`. */
const rowHtml = (p: Page, i: number, level: number, extra: string, forks: number): string => {
  const entry = p.entries[i]!
  if (entry.version === 2) return rowV2(p, entry, i, level, extra, forks)
  const m = entry.message
  const chips = m.role === "assistant"
    ? callChips(m.toolCalls.map((call) => call.name))
    : m.role === "tool"
    ? toolChip(m.toolName, m.isError)
    : ""
  return rowButton(p, entry, i, rowClass(p, roleClass(m), i, level, extra), m.role, chips, m.content, forks)
}

/** A version-2 row: its kind or role, its chips (its label, the tool it answers, reasoning, files, calls), a preview. */
const rowV2 = (p: Page, entry: V2.SessionEntry, i: number, level: number, extra: string, forks: number): string => {
  let chips = ""
  const label = p.labels.get(entry.id)
  if (label !== undefined) chips += `<span class="chip lbl">⚑ ${e(label)}</span>`
  if (entry.kind === "message") {
    const m = entry.message
    if (m.role === "tool") chips += toolChip(m.toolName, m.isError)
    if (m.role === "assistant" || m.role === "user" || m.role === "tool") {
      const parts: ReadonlyArray<V2.AssistantPart> = m.content
      if (parts.some((part) => part.type === "reasoning")) chips += `<span class="chip">reasoning</span>`
      const files = parts.filter((part) => part.type === "file").length
      if (files > 0) chips += `<span class="chip">${plural(files, "file")}</span>`
      chips += callChips(parts.flatMap((part) => (part.type === "tool-call" ? [part.name] : [])))
    }
  }
  return rowButton(p, entry, i, rowClass(p, entryClass(entry), i, level, extra), entryName(entry), chips, previewOf(entry), forks)
}

/** The summary of a folded run: how many entries, whether the active path goes through, how many of each kind. */
const runSummary = (p: Page, run: ReadonlyArray<number>, level: number): string => {
  const n = { user: 0, assistant: 0, tool: 0 }
  const named = new Map<string, number>()
  let active = false
  for (const i of run) {
    const entry = p.entries[i]!
    if (entry.version === 1) n[entry.message.role]++
    else named.set(entryName(entry), (named.get(entryName(entry)) ?? 0) + 1)
    if (p.onPath.has(i)) active = true
  }
  const parts = p.header.version === 1
    ? [`${n.user} user`, `${n.assistant} assistant`, `${n.tool} tool`]
    : RUN_NAMES.flatMap((name) => (named.has(name) ? [`${named.get(name)} ${name}`] : []))
  // A run left for the page to load names its first entry, its length and its level.
  const lazy = p.lazyRuns === true && run.length > 0 ? ` data-run="${run[0]!}" data-n="${run.length}" data-level="${level}"` : ""
  return `<details class="run l${Math.min(level, MAX_LEVEL)}${active ? " act" : ""}"${lazy}><summary>${plural(run.length, "more entry", "more entries")}` +
    `${active ? " on the active path" : ""} · ${parts.join(", ")}</summary>`
}

interface Segment {
  /** The index of the segment's first entry. */
  readonly start: number
  readonly level: number
  readonly kind: "" | " side" | " root2"
}

/** The rows of the whole tree, each entry once; entries no root reaches come last. */
export const treeOf = (p: Page): Array<string> => {
  const { entries } = p
  const tree: Array<string> = []
  const emitted = new Uint8Array(entries.length)
  const roots = p.children.roots
  const stack: Array<Segment> = roots.map((start, k): Segment => ({ start, level: 0, kind: k === 0 ? "" : " root2" })).reverse()
  while (stack.length > 0) {
    const { start, level, kind } = stack.pop()!
    if (emitted[start] === 1) continue
    // A segment: `start` and its only children, up to an entry with none or several.
    const chain: Array<number> = [start]
    emitted[start] = 1
    // Only children are followed without a list of them each: a chain of 100,000 makes none.
    let only = soleChild(p.children, start)
    while (only >= 0 && emitted[only] === 0) {
      chain.push(only)
      emitted[only] = 1
      only = soleChild(p.children, only)
    }
    const forks = only >= 0 ? 1 : -1 - only
    segmentRows(p, tree, chain, level, kind, forks)
    if (forks > 1) {
      const children = childrenAt(p.children, chain[chain.length - 1]!)
      const continuing = children.find((child) => p.onPath.has(child)) ?? children[children.length - 1]!
      stack.push({ start: continuing, level: level + 1, kind: " side" })
      for (let k = children.length - 1; k >= 0; k--) {
        if (children[k] !== continuing) stack.push({ start: children[k]!, level: level + 1, kind: " side" })
      }
    }
  }
  // Entries no root reaches (only in lists that did not come from a store) are still shown.
  entries.forEach((_, i) => {
    if (emitted[i] === 0) tree.push(rowHtml(p, i, 0, " root2", 1))
  })
  return tree
}

/** The rows of one chain of only children (by index), its middle folded when long; its last entry has `forks` children. */
const segmentRows = (p: Page, tree: Array<string>, chain: ReadonlyArray<number>, level: number, kind: Segment["kind"], forks: number): void => {
  const forksAt = (k: number) => (k === chain.length - 1 ? forks : 1)
  if (chain.length > RUN_FOLD) {
    const folded = chain.slice(RUN_KEEP, chain.length - RUN_KEEP)
    for (let k = 0; k < RUN_KEEP; k++) tree.push(rowHtml(p, chain[k]!, level, k === 0 ? kind : "", forksAt(k)))
    tree.push(runSummary(p, folded, level))
    if (p.lazyRuns !== true) for (const i of folded) tree.push(rowHtml(p, i, level, "", 1))
    tree.push("</details>")
    for (let k = chain.length - RUN_KEEP; k < chain.length; k++) tree.push(rowHtml(p, chain[k]!, level, "", forksAt(k)))
  } else {
    chain.forEach((i, k) => tree.push(rowHtml(p, i, level, k === 0 ? kind : "", forksAt(k))))
  }
}

/**
 * The rows of a folded run left out of a page (`lazyRuns`): `n` entries from the one at `start`,
 * each the only child of the one before, at `level`; fewer where the chain is shorter.
 */
export const runRows = (p: Page, start: number, n: number, level: number): Array<string> => {
  const rows: Array<string> = []
  let i: number | undefined = start
  while (i !== undefined && rows.length < n) {
    rows.push(rowHtml(p, i, level, "", 1))
    const children = childrenAt(p.children, i)
    i = children.length === 1 ? children[0] : undefined
  }
  return rows
}

// ---- The transcript cards, one per entry in commit order (a path is in commit
// order too); the script shows those of the selected path.

/** A card around its head and body. */
const article = (p: Page, cls: string, i: number, head: string, body: string): string =>
  `<article class="msg ${cls}${p.onPath.has(i) ? " on" : ""}${i === p.leafIndex ? " cur" : ""}" id="m${i}">${head}${body}</article>`

const statusHtml = (isError: boolean): string => `<span class="status${isError ? " err" : ""}">${isError ? "error" : "ok"}</span>`

/** Which call a tool message answers: a button to it, or where it was not found. */
const answersHtml = (p: Page, i: number, toolName: string, toolCallId: string): string => {
  // `answered` holds only calls found among the ancestors' assistant messages.
  const made = p.links.answered.get(i)
  return `<div class="link">answers ` + (made !== undefined
    ? `<button type="button" class="go" data-to="c${made.entry}-${made.call}"><span class="tn">${e(toolName)}</span> call <span class="cid">${e(toolCallId)}</span></button> of <span class="id">${e(p.entries[made.entry]!.id)}</span>`
    : `<span class="tn">${e(toolName)}</span> call <span class="cid">${e(toolCallId)}</span> (not found on this branch)`) + `</div>`
}

/** Which entries answer call `k` of entry `i`, as buttons to them. */
const answeredByHtml = (p: Page, i: number, k: number): string => {
  const answers = p.links.answers.get(`${i}:${k}`) ?? []
  return answers.length === 0
    ? "<span>not answered</span>"
    : `<span>answered by ${answers.map((a) => `<button type="button" class="go" data-go="${a}">${e(p.entries[a]!.id)}</button>`).join(", ")}</span>`
}

/** A tool call: its name, ID, who answers it, its arguments, then `extra` (a version-2 call's options). */
const callHtml = (i: number, k: number, name: string, id: string, answeredBy: string, args: unknown, extra: string): string =>
  `<div class="call" id="c${i}-${k}"><div class="ch"><span>⚙ call</span><span class="tn">${e(name)}</span>` +
  `<span class="cid">${e(id)}</span>${answeredBy}</div>${textBlock(JSON.stringify(args, null, 2), "args")}${extra}</div>`

/** The card of a version-1 message: its head (role, IDs, time), its text and its tool calls. */
const cardV1 = (p: Page, entry: SessionEntry, i: number): string => {
  const m = entry.message
  const head = `<div class="mh"><span class="k">${m.role}</span><span class="id">${e(entry.id)}</span>` +
    `<span class="ts">${e(entry.timestamp)}</span><span class="mid">${e(m.id)}</span>` +
    (parentOf(p, entry) < 0 ? "<span>root</span>" : "") +
    (m.role === "tool" ? statusHtml(m.isError) : "") +
    `</div>`
  let body = ""
  if (m.role === "tool") body += answersHtml(p, i, m.toolName, m.toolCallId)
  body += m.content === "" ? `<p class="empty">${m.role === "assistant" && m.toolCalls.length > 0 ? "(tool calls only)" : "(no text)"}</p>` : textBlock(m.content, "tx")
  if (m.role === "assistant") {
    m.toolCalls.forEach((call, k) => {
      body += callHtml(i, k, call.name, call.id, answeredByHtml(p, i, k), call.arguments, "")
    })
  }
  return article(p, roleClass(m), i, head, body)
}

/** The card of a version-2 entry: its head (kind, IDs, time, label), then what it holds. */
const cardV2 = (p: Page, entry: V2.SessionEntry, i: number): string => {
  const label = p.labels.get(entry.id)
  const m = entry.kind === "message" ? entry.message : undefined
  const head = `<div class="mh"><span class="k">${entryName(entry)}</span><span class="id">${e(entry.id)}</span>` +
    `<span class="ts">${e(entry.timestamp)}</span>${m === undefined ? "" : `<span class="mid">${e(m.id)}</span>`}` +
    (parentOf(p, entry) < 0 ? "<span>root</span>" : "") +
    (m?.role === "tool" ? statusHtml(m.isError) : "") +
    (label === undefined ? "" : `<span class="lbl">⚑ ${e(label)}</span>`) +
    `</div>`
  const body = entry.kind === "message" ? messageBodyV2(p, entry.message, i) : kindBody(p, entry)
  return article(p, entryClass(entry), i, head, body)
}

/** A button that selects entry `id`'s path and shows its card, or the ID as text when it is not an entry. */
const goTo = (p: Page, id: string): string => {
  const to = indexIn(p, id)
  return to === undefined ? `<span class="id">${e(id)}</span>` : `<button type="button" class="go" data-go="${to}">${e(id)}</button>`
}

/** The keys of a provider's options, when there are any. */
const optionsHtml = (value: { readonly options?: V2.Opaque }, what: string): string => {
  const keys = optionKeys(value)
  return keys.length === 0 ? "" : `<div class="opt">${what} options: ${keys.map((key) => `<span class="tn">${e(key)}</span>`).join(", ")}</div>`
}

/** What an entry of a kind other than `message` holds. */
const kindBody = (p: Page, entry: Exclude<V2.SessionEntry, { readonly kind: "message" }>): string => {
  switch (entry.kind) {
    case "compaction":
      return `<div class="link">keeps ${entry.firstKeptEntryId === null ? "nothing before it" : `the entries from ${goTo(p, entry.firstKeptEntryId)} on`}` +
        `${entry.tokensBefore === undefined ? "" : ` · ${plural(entry.tokensBefore, "token")} before`}</div>` +
        (entry.summary === "" ? `<p class="empty">(empty summary)</p>` : textBlock(entry.summary, "tx"))
    case "label":
      return `<div class="link">${entry.label === null ? "removes the label of " : ""}${goTo(p, entry.targetId)}` +
        `${entry.label === null ? "" : ` labelled <span class="lbl">⚑ ${e(entry.label)}</span>`}</div>`
    case "title":
      return `<div class="link">titles the session</div>${textBlock(entry.title, "tx")}`
    case "model":
      return `<div class="ch"><span>provider</span><span class="tn">${e(entry.provider)}</span><span>model</span><span class="tn">${e(entry.model)}</span>` +
        `${entry.thinking === undefined ? "" : `<span>thinking</span><span class="tn">${e(entry.thinking)}</span>`}</div>`
    case "custom": {
      const link = linkOf(entry)
      const call = link?.toolCallId === undefined ? "" : ` · started by tool call <span class="tn">${e(link.toolCallId)}</span>`
      return (link === undefined ? "" : `<div class="link">${link.to === "subagent" ? "a subagent's session" : "a subagent of session"} <span class="tn">${e(link.session)}</span>${call}</div>`) +
        `<div class="ch"><span>extension data, never sent to a model</span><span class="tn">${e(entry.customType)}</span></div>` +
        textBlock(JSON.stringify(entry.data, null, 2), "args")
    }
  }
}

/** A version-2 message: the call it answers, its meta and options, then its parts in order. */
const messageBodyV2 = (p: Page, message: V2.Message, i: number): string => {
  let body = ""
  if (message.role === "tool") body += answersHtml(p, i, message.toolName, message.toolCallId)
  if (message.role === "assistant" && message.meta !== undefined) body += metaHtml(message.meta)
  body += optionsHtml(message, "message")
  if (message.role === "system") return body + (message.content === "" ? `<p class="empty">(no text)</p>` : textBlock(message.content, "tx"))
  const parts: ReadonlyArray<V2.AssistantPart> = message.content
  if (parts.length === 0) body += `<p class="empty">(no content)</p>`
  parts.forEach((part, k) => {
    body += partHtml(p, i, parts, part, k)
  })
  if (message.role === "tool" && message.result !== undefined) {
    body += `<div class="call"><div class="ch"><span>result</span></div>${textBlock(JSON.stringify(message.result, null, 2), "args")}</div>`
  }
  return body
}

/** An assistant's model, provider, response, usage and stop reason, and its error. */
const metaHtml = (meta: V2.Meta): string => {
  const facts: Array<string> = []
  const add = (name: string, value: string | undefined, cls = "tn") => {
    if (value !== undefined) facts.push(`<span>${name}</span><span class="${cls}">${e(value)}</span>`)
  }
  add("model", meta.model)
  add("provider", meta.provider)
  add("response", meta.responseId, "cid")
  if (meta.usage !== undefined) {
    const u = meta.usage
    const tokens = [`${u.inputTokens.toLocaleString("en-US")} in`, `${u.outputTokens.toLocaleString("en-US")} out`]
    if (u.reasoningTokens !== undefined) tokens.push(`${u.reasoningTokens.toLocaleString("en-US")} reasoning`)
    if (u.cachedInputTokens !== undefined) tokens.push(`${u.cachedInputTokens.toLocaleString("en-US")} cached`)
    if (u.cacheWriteTokens !== undefined) tokens.push(`${u.cacheWriteTokens.toLocaleString("en-US")} cache write`)
    facts.push(`<span>tokens</span><span>${tokens.join(" · ")}</span>`)
  }
  add("stop", meta.stopReason)
  return `<div class="meta">${facts.join("")}${meta.error === undefined ? "" : `<span class="status err">error</span><span class="tn">${e(meta.error)}</span>`}</div>`
}

/** Part `k` of entry `i`'s message, whose parts are `parts`. */
const partHtml = (p: Page, i: number, parts: ReadonlyArray<V2.AssistantPart>, part: V2.AssistantPart, k: number): string => {
  switch (part.type) {
    case "text":
      return (part.text === "" ? `<p class="empty">(empty text)</p>` : textBlock(part.text, "tx")) + optionsHtml(part, "text")
    case "reasoning":
      return (part.text === ""
        ? `<p class="empty">reasoning, redacted</p>`
        : `<details class="rs"><summary>reasoning · ${plural(part.text.length, "character")}</summary>${textBlock(part.text, "tx")}</details>`) +
        optionsHtml(part, "reasoning")
    case "file":
      return fileHtml(part, p.images, p.blobSrc)
    case "tool-call": {
      let answeredBy: string
      if (part.providerExecuted === true) {
        const result = parts.findIndex((q) => q.type === "tool-result" && q.toolCallId === part.id)
        answeredBy = `<span>run by the provider</span>` +
          (result < 0 ? "<span>no result</span>" : `<button type="button" class="go" data-to="p${i}-${result}">its result</button>`)
      } else {
        answeredBy = answeredByHtml(p, i, k)
      }
      return callHtml(i, k, part.name, part.id, answeredBy, part.arguments, optionsHtml(part, "call"))
    }
    case "tool-result": {
      const call = parts.findIndex((q) => q.type === "tool-call" && q.id === part.toolCallId)
      return `<div class="call" id="p${i}-${k}"><div class="ch"><span>↩ result</span><span class="tn">${e(part.toolName)}</span>` +
        (call < 0
          ? `<span class="cid">${e(part.toolCallId)}</span>`
          : `<button type="button" class="go" data-to="c${i}-${call}"><span class="cid">${e(part.toolCallId)}</span></button>`) +
        `${statusHtml(part.isError)}</div>` +
        `${textBlock(JSON.stringify(part.result, null, 2), "args")}${optionsHtml(part, "result")}</div>`
    }
  }
}

/** A file: an image inline, a web link, a blob by name, or what it is. */
const fileHtml = (part: V2.FilePart, images: ReadonlyMap<string, string>, blobSrc: Page["blobSrc"]): string => {
  const size = sizeOf(part.data)
  const image = inlineImage(part, images)
  const served = image === undefined && "blob" in part.data && isRasterImage(part.mediaType) ? blobSrc?.(part.data.blob, part.mediaType) : undefined
  let shown = ""
  if (image !== undefined) shown = `<img class="img" alt="" src="${image}">`
  else if (served !== undefined) shown = `<img class="img" alt="" loading="lazy" src="${e(served)}">`
  else if ("url" in part.data) {
    shown = isWebUrl(part.data.url)
      ? `<a class="url" href="${e(part.data.url)}" rel="noopener noreferrer nofollow" target="_blank">${e(part.data.url)}</a>`
      : `<span class="url">${e(part.data.url)}</span> <span>(not a web link)</span>`
  } else if ("blob" in part.data) shown = `<span>blob</span> <span class="cid">${e(part.data.blob)}</span>`
  else shown = `<span>(inline data, not shown)</span>`
  return `<div class="file"><div class="ch"><span>file</span>${part.name === undefined ? "" : `<span class="tn">${e(part.name)}</span>`}` +
    `<span class="cid">${e(part.mediaType)}</span>${size === undefined ? "" : `<span>${plural(size, "byte")}</span>`}</div>` +
    `<div class="fd">${shown}</div>${optionsHtml(part, "file")}</div>`
}

// ---- The document around the tree and the cards.

/** The facts under the page's heading: the session, its times, counts and active leaf. */
export const factsHtml = (p: Page, summary: Summary, counts: Counts, leaf: string | null, isDefault: boolean): string => {
  const { header } = p
  const fact = (term: string, value: string) => `<div><dt>${term}</dt><dd>${value}</dd></div>`
  const leafFact = leaf === null ? "none" : `<span class="id">${e(leaf)}</span> (${isNewest(p.entries, leaf, isDefault) ? "the newest entry" : "chosen"})`
  return [
    fact("Session", `<span class="id">${e(header.id)}</span>`),
    ...(header.version === 2 && header.forkedFrom !== undefined
      ? [fact("Forked from", `<span class="id">${e(header.forkedFrom.session)}</span> at <span class="id">${e(header.forkedFrom.entry)}</span>`)]
      : []),
    fact("Created", `<span class="ts">${e(header.timestamp)}</span>`),
    fact("Updated", `<span class="ts">${e(updatedOf(header, summary))}</span>`),
    fact("Entries", counts.entries.toLocaleString("en-US")),
    fact("Branches", `${plural(counts.leaves, "leaf", "leaves")}`),
    fact("Tool calls", `${counts.toolCalls.toLocaleString("en-US")} (${plural(counts.toolResults, "result")}, ${plural(counts.errors, "error")})`),
    fact("Active leaf", leafFact)
  ].join("")
}

/** The complete document around the tree and the cards. */
const documentOf = (
  p: Page,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<Entry>,
  title: string | undefined,
  tree: ReadonlyArray<string>,
  cards: ReadonlyArray<string>
): string => {
  const { header, entries, leafIndex } = p
  const counts = countsOf(entries)
  const summary = summaryOf(header, entries)
  const heading = title ?? (summary.title.trim() === "" ? `Session ${header.id}` : summary.title)
  const facts = factsHtml(p, summary, counts, leaf, isDefault)
  const leafId = leaf === null ? "" : e(leaf)

  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${header.version === 1 ? CONTENT_SECURITY_POLICY : CONTENT_SECURITY_POLICY_V2}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(heading)}</title>
<style>${header.version === 1 ? STYLE : STYLE_V2}</style>
</head>
<body>
<header class="top">
<h1>${e(heading)}</h1>
<dl class="facts">${facts}</dl>
<div class="legend">${header.version === 1 ? LEGEND : LEGEND_V2}<span>● active path · ○ other branches</span><button type="button" class="btn" id="toleaf">Show the active path</button></div>
</header>
<main>
<nav class="pane" id="tree" aria-label="Session tree" data-n="${entries.length}" data-leaf="${leafIndex}">
<h2>${plural(counts.entries, "entry", "entries")} in ${plural(counts.leaves, "branch", "branches")}</h2>
${tree.join("\n")}
</nav>
<section class="pane" id="panel" aria-live="polite">
<h2><span id="pk">${leafIndex < 0 ? "Path" : "Active path"}</span> to <span class="id" id="pid">${leafId}</span> · <span id="pn">${plural(path.length, "entry", "entries")}</span></h2>
${cards.join("\n")}
</section>
</main>
<script>${SCRIPT}</script>
</body>
</html>
`
}

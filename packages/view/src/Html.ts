/**
 * A session as one self-contained HTML page (`export --format html`):
 * every entry of every branch as a tree, the active path marked, and any entry
 * selectable to show its root-to-entry path as a transcript.
 *
 * The page is laid out here, on the server side, with every value from the
 * session escaped as text; the page's one script only shows, hides and
 * highlights what is laid out. A Content-Security-Policy allows nothing but the
 * page's own style sheet and script, by hash: no request of any kind (no URL,
 * font, image or favicon is named), and no injected markup could run or load
 * anything even if escaping failed. Elements are named by their index in
 * commit order (`r12`, `m12`), never by an ID from the session.
 *
 * A version-2 session shows every kind of entry as its own kind of node, each
 * message's parts in order (reasoning collapsed, images inline only from
 * `data:` URLs of base64 raster data, an image blob's bytes included, read
 * through the caller's reader; files at http or https URLs as links,
 * never loaded), labels on the entries they label, and its title. Its policy
 * allows `data:` images, and nothing else more than a version-1 page's does.
 *
 * Readable at 4,096 entries: a chain of only children stays in one column and
 * every child of a fork is indented one level under it, so the picture widens
 * only where the conversation branched; long single-child chains fold into a `<details>`, long texts show their first lines, and transcript cards
 * off screen are skipped by the browser's layout (`content-visibility`).
 */
import type { Entry, Header, Message } from "@session-tree/core/Record"
import type * as V2 from "@session-tree/core/RecordV2"
import type { SessionError } from "@session-tree/core/SessionError"
import * as Effect from "effect/Effect"
import { MAX_LEVEL, SCRIPT, SCRIPT_HASH, STYLE, STYLE_HASH, STYLE_V2, STYLE_V2_HASH } from "./internal/page.js"
import { childrenOf, countsOf, isNewest, type LeafOption, plural, resolve, settled, summaryOf, truncate, updatedOf } from "./internal/session.js"
import { type BlobReader, blobsOf, inlineImage, isWebUrl, labelsOf, optionKeys, readBlobs, sizeOf, textOf } from "./internal/v2.js"

export type { BlobReader }

/** `leaf`: the leaf of the active path; default the newest entry, `null` marks no path. */
export interface Options extends LeafOption {
  /**
   * The page's title; default the session's title as `list` shows it (a version-2 session's
   * newest title entry, else the start of the first user message), else `Session <ID>` when that is blank.
   */
  readonly title?: string | undefined
  /**
   * Reads the session's blobs (`SessionStore.blob`, `Loaded.blob`): an image held in a blob is
   * then shown inline from a `data:` URL of its bytes, like an inline image, so the page stays
   * self-contained. Without it, a blob is shown by its name and size.
   */
  readonly blobs?: BlobReader | undefined
}

/**
 * Renders the whole session as one HTML page (a complete document, UTF-8).
 * Fails with SESSION_UNKNOWN_ENTRY when `options.leaf` names no entry of
 * `entries` (which are in commit order, as a store holds them). With
 * `options.blobs`, each image blob of the session is read once; one the reader
 * cannot give fails the render with its error (SESSION_BLOB_MISSING,
 * SESSION_BLOB_CORRUPT), as does one of another size than its reference says.
 */
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

/**
 * Text for an HTML text node or a quoted attribute: the five markup characters
 * as references, and control characters (other than tab, line feed and carriage
 * return) as their visible Control Pictures, since a parser would drop NUL and
 * the others render as nothing.
 */
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
 * Resolves tool links in one depth-first walk over the core's `childrenOf`: the
 * calls in scope are those of the current branch's ancestors, added on the way
 * down and removed on the way back, so each result finds the call it answers
 * (the nearest ancestor that made it) without walking up per result.
 */
const linksOf = (entries: ReadonlyArray<Entry>, indexOf: Map<Entry, number>): Links => {
  const answers = new Map<string, Array<number>>()
  const answered = new Map<number, { entry: number; call: number }>()
  const scope = new Map<string, Array<{ entry: number; call: number }>>()
  const seen = new Uint8Array(entries.length)
  type Step = { readonly entry: Entry; readonly exit: boolean }
  const stack: Array<Step> = childrenOf(entries, null).map((entry) => ({ entry, exit: false })).reverse()
  while (stack.length > 0) {
    const { entry, exit } = stack.pop()!
    const i = indexOf.get(entry)!
    if (exit) {
      for (const call of callsOf(entry)) scope.get(call.id)?.pop()
      continue
    }
    if (seen[i] === 1) continue
    seen[i] = 1
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
      for (const { id, k } of callsOf(entry)) {
        const list = scope.get(id)
        if (list === undefined) scope.set(id, [{ entry: i, call: k }])
        else list.push({ entry: i, call: k })
      }
    }
    stack.push({ entry, exit: true })
    const children = childrenOf(entries, entry.id)
    for (let k = children.length - 1; k >= 0; k--) stack.push({ entry: children[k]!, exit: false })
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

const LEGEND_V2 = [
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

const LEGEND = `<span><span class="k u">user</span></span><span><span class="k a">assistant</span></span><span><span class="k t">tool</span></span><span><span class="k t e">tool error</span></span>`

const page = (
  header: Header,
  entries: ReadonlyArray<Entry>,
  leaf: string | null,
  isDefault: boolean,
  path: ReadonlyArray<Entry>,
  title: string | undefined,
  images: ReadonlyMap<string, string>
): string => {
  const indexOf = new Map<Entry, number>()
  const byId = new Map<string, number>()
  entries.forEach((entry, i) => {
    indexOf.set(entry, i)
    if (!byId.has(entry.id)) byId.set(entry.id, i)
  })
  const onPath = new Set<number>(path.map((entry) => indexOf.get(entry)!))
  const leafIndex = path.length === 0 ? -1 : indexOf.get(path[path.length - 1]!)!
  const parentOf = (entry: Entry): number => (entry.parentId === null ? -1 : byId.get(entry.parentId) ?? -1)
  const links = linksOf(entries, indexOf)
  const counts = countsOf(entries)
  const summary = summaryOf(header, entries)
  const labels = labelsOf(entries)
  const heading = title ?? (summary.title.trim() === "" ? `Session ${header.id}` : summary.title)
  const e = escapeHtml

  // ---- The tree: depth-first over the core's childrenOf. At a fork every child is
  // one level in, under its parent; the child on the active path (else the newest)
  // comes last, so the active path still reads downwards.
  const tree: Array<string> = []
  const emitted = new Uint8Array(entries.length)

  const rowHtml = (entry: Entry, level: number, extra: string, forks: number): string => {
    if (entry.version === 2) return rowV2(entry, level, extra, forks)
    const i = indexOf.get(entry)!
    const m = entry.message
    const cls = `row ${roleClass(m)} l${Math.min(level, MAX_LEVEL)}${onPath.has(i) ? " act sel" : ""}${i === leafIndex ? " cur" : ""}${extra}`
    let chips = ""
    if (m.role === "assistant") {
      const shownCalls = m.toolCalls.slice(0, 3).map((call) => `<span class="chip">⚙ ${e(call.name)}</span>`).join("")
      chips = shownCalls + (m.toolCalls.length > 3 ? `<span class="chip">+${m.toolCalls.length - 3}</span>` : "")
    } else if (m.role === "tool") {
      chips = `<span class="chip${m.isError ? " err" : ""}">↩ ${e(m.toolName)}${m.isError ? " · error" : ""}</span>`
    }
    const fork = forks > 1 ? `<span class="br">${forks} branches</span>` : ""
    return `<button type="button" class="${cls}" id="r${i}" data-p="${parentOf(entry)}"${i === leafIndex ? " aria-current=\"true\"" : ""}>` +
      `<span class="k">${m.role}</span>${chips}` +
      `<span class="pv">${e(rowPreview(m.content))}</span>${fork}<span class="id">${e(entry.id)}</span></button>`
  }

  /** A version-2 row: its kind or role, its chips (its label, the tool it answers, reasoning, files, calls), a preview. */
  const rowV2 = (entry: V2.SessionEntry, level: number, extra: string, forks: number): string => {
    const i = indexOf.get(entry)!
    const cls = `row ${entryClass(entry)} l${Math.min(level, MAX_LEVEL)}${onPath.has(i) ? " act sel" : ""}${i === leafIndex ? " cur" : ""}${extra}`
    let chips = ""
    const label = labels.get(entry.id)
    if (label !== undefined) chips += `<span class="chip lbl">⚑ ${e(label)}</span>`
    if (entry.kind === "message") {
      const m = entry.message
      if (m.role === "tool") chips += `<span class="chip${m.isError ? " err" : ""}">↩ ${e(m.toolName)}${m.isError ? " · error" : ""}</span>`
      if (m.role === "assistant" || m.role === "user" || m.role === "tool") {
        const parts: ReadonlyArray<V2.AssistantPart> = m.content
        if (parts.some((part) => part.type === "reasoning")) chips += `<span class="chip">reasoning</span>`
        const files = parts.filter((part) => part.type === "file").length
        if (files > 0) chips += `<span class="chip">${plural(files, "file")}</span>`
        const calls = parts.flatMap((part) => (part.type === "tool-call" ? [part] : []))
        chips += calls.slice(0, 3).map((call) => `<span class="chip">⚙ ${e(call.name)}</span>`).join("") +
          (calls.length > 3 ? `<span class="chip">+${calls.length - 3}</span>` : "")
      }
    }
    const fork = forks > 1 ? `<span class="br">${forks} branches</span>` : ""
    return `<button type="button" class="${cls}" id="r${i}" data-p="${parentOf(entry)}"${i === leafIndex ? " aria-current=\"true\"" : ""}>` +
      `<span class="k">${entryName(entry)}</span>${chips}` +
      `<span class="pv">${e(rowPreview(previewOf(entry)))}</span>${fork}<span class="id">${e(entry.id)}</span></button>`
  }

  const runSummary = (run: ReadonlyArray<Entry>, level: number): string => {
    const n = { user: 0, assistant: 0, tool: 0 }
    const named = new Map<string, number>()
    let active = false
    for (const entry of run) {
      if (entry.version === 1) n[entry.message.role]++
      else named.set(entryName(entry), (named.get(entryName(entry)) ?? 0) + 1)
      if (onPath.has(indexOf.get(entry)!)) active = true
    }
    const parts = header.version === 1
      ? [`${n.user} user`, `${n.assistant} assistant`, `${n.tool} tool`]
      : RUN_NAMES.flatMap((name) => (named.has(name) ? [`${named.get(name)} ${name}`] : []))
    return `<details class="run l${Math.min(level, MAX_LEVEL)}${active ? " act" : ""}"><summary>${plural(run.length, "more entry", "more entries")}` +
      `${active ? " on the active path" : ""} · ${parts.join(", ")}</summary>`
  }

  interface Segment {
    readonly start: Entry
    readonly level: number
    readonly kind: "" | " side" | " root2"
  }
  const roots = childrenOf(entries, null)
  const stack: Array<Segment> = roots.map((start, k): Segment => ({ start, level: 0, kind: k === 0 ? "" : " root2" })).reverse()
  while (stack.length > 0) {
    const { start, level, kind } = stack.pop()!
    if (emitted[indexOf.get(start)!] === 1) continue
    // A segment: `start` and its only children, up to an entry with none or several.
    const chain: Array<Entry> = [start]
    emitted[indexOf.get(start)!] = 1
    let children = childrenOf(entries, start.id)
    while (children.length === 1 && emitted[indexOf.get(children[0]!)!] === 0) {
      chain.push(children[0]!)
      emitted[indexOf.get(children[0]!)!] = 1
      children = childrenOf(entries, children[0]!.id)
    }
    const forksAt = (k: number) => (k === chain.length - 1 ? children.length : 1)
    if (chain.length > RUN_FOLD) {
      const folded = chain.slice(RUN_KEEP, chain.length - RUN_KEEP)
      for (let k = 0; k < RUN_KEEP; k++) tree.push(rowHtml(chain[k]!, level, k === 0 ? kind : "", forksAt(k)))
      tree.push(runSummary(folded, level))
      for (const entry of folded) tree.push(rowHtml(entry, level, "", 1))
      tree.push("</details>")
      for (let k = chain.length - RUN_KEEP; k < chain.length; k++) tree.push(rowHtml(chain[k]!, level, "", forksAt(k)))
    } else {
      chain.forEach((entry, k) => tree.push(rowHtml(entry, level, k === 0 ? kind : "", forksAt(k))))
    }
    if (children.length > 1) {
      const continuing = children.find((child) => onPath.has(indexOf.get(child)!)) ?? children[children.length - 1]!
      stack.push({ start: continuing, level: level + 1, kind: " side" })
      for (let k = children.length - 1; k >= 0; k--) {
        if (children[k] !== continuing) stack.push({ start: children[k]!, level: level + 1, kind: " side" })
      }
    }
  }
  // Entries no root reaches (only in lists that did not come from a store) are still shown.
  entries.forEach((entry, i) => {
    if (emitted[i] === 0) tree.push(rowHtml(entry, 0, " root2", 1))
  })

  // ---- The transcript cards, one per entry in commit order (a path is in commit
  // order too); the script shows those of the selected path.
  /** The card of a version-2 entry: its head (kind, IDs, time, label), then what it holds. */
  const cardV2 = (entry: V2.SessionEntry, i: number): string => {
    const parent = parentOf(entry)
    const label = labels.get(entry.id)
    const m = entry.kind === "message" ? entry.message : undefined
    const head = `<div class="mh"><span class="k">${entryName(entry)}</span><span class="id">${e(entry.id)}</span>` +
      `<span class="ts">${e(entry.timestamp)}</span>${m === undefined ? "" : `<span class="mid">${e(m.id)}</span>`}` +
      (parent < 0 ? "<span>root</span>" : "") +
      (m?.role === "tool" ? `<span class="status${m.isError ? " err" : ""}">${m.isError ? "error" : "ok"}</span>` : "") +
      (label === undefined ? "" : `<span class="lbl">⚑ ${e(label)}</span>`) +
      `</div>`
    /** A button that selects entry `id`'s path and shows its card, or the ID as text when it is not an entry. */
    const goTo = (id: string): string => {
      const to = byId.get(id)
      return to === undefined ? `<span class="id">${e(id)}</span>` : `<button type="button" class="go" data-go="${to}">${e(id)}</button>`
    }
    const options = (value: { readonly options?: V2.Opaque }, what: string): string => {
      const keys = optionKeys(value)
      return keys.length === 0 ? "" : `<div class="opt">${what} options: ${keys.map((key) => `<span class="tn">${e(key)}</span>`).join(", ")}</div>`
    }
    let body = ""
    switch (entry.kind) {
      case "compaction":
        body += `<div class="link">keeps ${entry.firstKeptEntryId === null ? "nothing before it" : `the entries from ${goTo(entry.firstKeptEntryId)} on`}` +
          `${entry.tokensBefore === undefined ? "" : ` · ${plural(entry.tokensBefore, "token")} before`}</div>` +
          (entry.summary === "" ? `<p class="empty">(empty summary)</p>` : textBlock(entry.summary, "tx"))
        break
      case "label":
        body += `<div class="link">${entry.label === null ? "removes the label of " : ""}${goTo(entry.targetId)}` +
          `${entry.label === null ? "" : ` labelled <span class="lbl">⚑ ${e(entry.label)}</span>`}</div>`
        break
      case "title":
        body += `<div class="link">titles the session</div>${textBlock(entry.title, "tx")}`
        break
      case "model":
        body += `<div class="ch"><span>provider</span><span class="tn">${e(entry.provider)}</span><span>model</span><span class="tn">${e(entry.model)}</span>` +
          `${entry.thinking === undefined ? "" : `<span>thinking</span><span class="tn">${e(entry.thinking)}</span>`}</div>`
        break
      case "custom":
        body += `<div class="ch"><span>extension data, never sent to a model</span><span class="tn">${e(entry.customType)}</span></div>` +
          textBlock(JSON.stringify(entry.data, null, 2), "args")
        break
      case "message": {
        const message = entry.message
        if (message.role === "tool") {
          const made = links.answered.get(i)
          body += `<div class="link">answers ` + (made !== undefined
            ? `<button type="button" class="go" data-to="c${made.entry}-${made.call}"><span class="tn">${e(message.toolName)}</span> call <span class="cid">${e(message.toolCallId)}</span></button> of <span class="id">${e(entries[made.entry]!.id)}</span>`
            : `<span class="tn">${e(message.toolName)}</span> call <span class="cid">${e(message.toolCallId)}</span> (not found on this branch)`) + `</div>`
        }
        if (message.role === "assistant" && message.meta !== undefined) {
          const meta = message.meta
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
          body += `<div class="meta">${facts.join("")}${meta.error === undefined ? "" : `<span class="status err">error</span><span class="tn">${e(meta.error)}</span>`}</div>`
        }
        body += options(message, "message")
        if (message.role === "system") {
          body += message.content === "" ? `<p class="empty">(no text)</p>` : textBlock(message.content, "tx")
          break
        }
        const parts: ReadonlyArray<V2.AssistantPart> = message.content
        if (parts.length === 0) body += `<p class="empty">(no content)</p>`
        parts.forEach((part, k) => {
          switch (part.type) {
            case "text":
              body += (part.text === "" ? `<p class="empty">(empty text)</p>` : textBlock(part.text, "tx")) + options(part, "text")
              break
            case "reasoning":
              body += part.text === ""
                ? `<p class="empty">reasoning, redacted</p>`
                : `<details class="rs"><summary>reasoning · ${plural(part.text.length, "character")}</summary>${textBlock(part.text, "tx")}</details>`
              body += options(part, "reasoning")
              break
            case "file": {
              const size = sizeOf(part.data)
              const image = inlineImage(part, images)
              let shown = ""
              if (image !== undefined) shown = `<img class="img" alt="" src="${image}">`
              else if ("url" in part.data) {
                shown = isWebUrl(part.data.url)
                  ? `<a class="url" href="${e(part.data.url)}" rel="noopener noreferrer nofollow" target="_blank">${e(part.data.url)}</a>`
                  : `<span class="url">${e(part.data.url)}</span> <span>(not a web link)</span>`
              } else if ("blob" in part.data) shown = `<span>blob</span> <span class="cid">${e(part.data.blob)}</span>`
              else shown = `<span>(inline data, not shown)</span>`
              body += `<div class="file"><div class="ch"><span>file</span>${part.name === undefined ? "" : `<span class="tn">${e(part.name)}</span>`}` +
                `<span class="cid">${e(part.mediaType)}</span>${size === undefined ? "" : `<span>${plural(size, "byte")}</span>`}</div>` +
                `<div class="fd">${shown}</div>${options(part, "file")}</div>`
              break
            }
            case "tool-call": {
              let answeredBy: string
              if (part.providerExecuted === true) {
                const result = parts.findIndex((p) => p.type === "tool-result" && p.toolCallId === part.id)
                answeredBy = `<span>run by the provider</span>` +
                  (result < 0 ? "<span>no result</span>" : `<button type="button" class="go" data-to="p${i}-${result}">its result</button>`)
              } else {
                const answers = links.answers.get(`${i}:${k}`) ?? []
                answeredBy = answers.length === 0
                  ? "<span>not answered</span>"
                  : `<span>answered by ${answers.map((a) => `<button type="button" class="go" data-go="${a}">${e(entries[a]!.id)}</button>`).join(", ")}</span>`
              }
              body += `<div class="call" id="c${i}-${k}"><div class="ch"><span>⚙ call</span><span class="tn">${e(part.name)}</span>` +
                `<span class="cid">${e(part.id)}</span>${answeredBy}</div>${textBlock(JSON.stringify(part.arguments, null, 2), "args")}${options(part, "call")}</div>`
              break
            }
            case "tool-result": {
              const call = parts.findIndex((p) => p.type === "tool-call" && p.id === part.toolCallId)
              body += `<div class="call" id="p${i}-${k}"><div class="ch"><span>↩ result</span><span class="tn">${e(part.toolName)}</span>` +
                (call < 0
                  ? `<span class="cid">${e(part.toolCallId)}</span>`
                  : `<button type="button" class="go" data-to="c${i}-${call}"><span class="cid">${e(part.toolCallId)}</span></button>`) +
                `<span class="status${part.isError ? " err" : ""}">${part.isError ? "error" : "ok"}</span></div>` +
                `${textBlock(JSON.stringify(part.result, null, 2), "args")}${options(part, "result")}</div>`
              break
            }
          }
        })
        if (message.role === "tool" && message.result !== undefined) {
          body += `<div class="call"><div class="ch"><span>result</span></div>${textBlock(JSON.stringify(message.result, null, 2), "args")}</div>`
        }
        break
      }
    }
    return `<article class="msg ${entryClass(entry)}${onPath.has(i) ? " on" : ""}${i === leafIndex ? " cur" : ""}" id="m${i}">${head}${body}</article>`
  }

  const cards = entries.map((entry, i) => {
    if (entry.version === 2) return cardV2(entry, i)
    const m = entry.message
    const parent = parentOf(entry)
    const head = `<div class="mh"><span class="k">${m.role}</span><span class="id">${e(entry.id)}</span>` +
      `<span class="ts">${e(entry.timestamp)}</span><span class="mid">${e(m.id)}</span>` +
      (parent < 0 ? "<span>root</span>" : "") +
      (m.role === "tool" ? `<span class="status${m.isError ? " err" : ""}">${m.isError ? "error" : "ok"}</span>` : "") +
      `</div>`
    let body = ""
    if (m.role === "tool") {
      // `answered` holds only calls found among the ancestors' assistant messages.
      const made = links.answered.get(i)
      body += `<div class="link">answers ` + (made !== undefined
        ? `<button type="button" class="go" data-to="c${made.entry}-${made.call}"><span class="tn">${e(m.toolName)}</span> call <span class="cid">${e(m.toolCallId)}</span></button> of <span class="id">${e(entries[made.entry]!.id)}</span>`
        : `<span class="tn">${e(m.toolName)}</span> call <span class="cid">${e(m.toolCallId)}</span> (not found on this branch)`) + `</div>`
    }
    body += m.content === "" ? `<p class="empty">${m.role === "assistant" && m.toolCalls.length > 0 ? "(tool calls only)" : "(no text)"}</p>` : textBlock(m.content, "tx")
    if (m.role === "assistant") {
      m.toolCalls.forEach((call, k) => {
        const answers = links.answers.get(`${i}:${k}`) ?? []
        const answeredBy = answers.length === 0
          ? "<span>not answered</span>"
          : `<span>answered by ${answers.map((a) => `<button type="button" class="go" data-go="${a}">${e(entries[a]!.id)}</button>`).join(", ")}</span>`
        body += `<div class="call" id="c${i}-${k}"><div class="ch"><span>⚙ call</span><span class="tn">${e(call.name)}</span>` +
          `<span class="cid">${e(call.id)}</span>${answeredBy}</div>${textBlock(JSON.stringify(call.arguments, null, 2), "args")}</div>`
      })
    }
    return `<article class="msg ${roleClass(m)}${onPath.has(i) ? " on" : ""}${i === leafIndex ? " cur" : ""}" id="m${i}">${head}${body}</article>`
  })

  const fact = (term: string, value: string) => `<div><dt>${term}</dt><dd>${value}</dd></div>`
  const leafFact = leaf === null ? "none" : `<span class="id">${e(leaf)}</span> (${isNewest(entries, leaf, isDefault) ? "the newest entry" : "chosen"})`
  const facts = [
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

/**
 * The search run against a reference: the run as it was before it learned to skip
 * what a hit off the page does not need (marks, snippets, a kept object for every
 * hit), kept here whole, with the text it searched by. On random corpora (case
 * variants, near misses, letters beyond ASCII, words only in IDs, lines that do not
 * decode, ties in rank) and random pages, both must give the same hits in the same
 * order, the same total, the same sessions searched and the same unreadable list.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import * as Stream from "effect/Stream"
import { decodeEntryLine } from "../src/Codec.js"
import { decodeHeader, type Entry, type Header } from "../src/Record.js"
import type * as V2 from "../src/RecordV2.js"
import type { Candidates, Hit, SearchResult } from "../src/Search.js"
import { type SessionError, sessionError } from "../src/SessionError.js"
import type { Unreadable } from "../src/Sessions.js"
import { options, queryText, type Session, session, sessionLines, text } from "./support/searchCorpus.js"
import { entryFacts, everyLine, matchText, matcherOf, modelOf, parseQuery, type Plan, planOf, rawMatches, requestOf, roleOf, run, snippetsOf } from "../src/internal/search.js"

// ---- The reference: the run and the searched text as they were ---------------------------------

const flatten = (value: unknown, out: Array<string>, prefix = ""): void => {
  if (value === null || typeof value !== "object") {
    const shown = typeof value === "string" ? value : JSON.stringify(value)
    out.push(prefix === "" ? shown : `${prefix}: ${shown}`)
    return
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value)
  if (entries.length === 0) {
    if (prefix !== "") out.push(prefix)
    return
  }
  for (const [key, v] of entries) flatten(v, out, prefix === "" ? key : Array.isArray(value) ? `${prefix}[${key}]` : `${prefix}.${key}`)
}

const jsonText = (value: unknown): string => {
  const out: Array<string> = []
  flatten(value, out)
  return out.join("\n")
}

const partText = (part: V2.AssistantPart, out: Array<string>): void => {
  switch (part.type) {
    case "text":
    case "reasoning":
      out.push(part.text)
      return
    case "file":
      if (part.name !== undefined) out.push(part.name)
      return
    case "tool-call":
      out.push(`${part.name}\n${jsonText(part.arguments)}`)
      return
    case "tool-result":
      out.push(`${part.toolName}\n${jsonText(part.result)}`)
      return
  }
}

const referenceTextOf = (entry: Entry): string | undefined => {
  const out: Array<string> = []
  if (entry.version === 1) {
    const m = entry.message
    if (m.role === "tool") out.push(m.toolName)
    out.push(m.content)
    if (m.role === "assistant") for (const call of m.toolCalls) out.push(`${call.name}\n${jsonText(call.arguments)}`)
    return out.join("\n")
  }
  switch (entry.kind) {
    case "message": {
      const m = entry.message
      if (m.role === "system") return m.content
      if (m.role === "tool") out.push(m.toolName)
      for (const part of m.content as ReadonlyArray<V2.AssistantPart>) partText(part, out)
      if (m.role === "tool" && m.result !== undefined) out.push(jsonText(m.result))
      return out.join("\n")
    }
    case "compaction":
      return entry.summary
    case "title":
      return entry.title
    default:
      return undefined
  }
}

interface Found {
  readonly location: string
  readonly header: Header
  readonly entry: Entry
  readonly order: number
  readonly text: string
  readonly marks: ReadonlyArray<readonly [number, number]>
}

const before = (a: Found, b: Found): boolean =>
  a.entry.timestamp !== b.entry.timestamp
    ? a.entry.timestamp > b.entry.timestamp
    : a.header.id !== b.header.id
    ? a.header.id < b.header.id
    : a.location !== b.location
    ? a.location < b.location
    : a.order < b.order

class Best {
  readonly kept: Array<Found> = []
  constructor(readonly size: number) {}
  add(found: Found): void {
    const kept = this.kept
    if (this.size === 0 || (kept.length === this.size && !before(found, kept[kept.length - 1]!))) return
    let lo = 0
    let hi = kept.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (before(kept[mid]!, found)) lo = mid + 1
      else hi = mid
    }
    kept.splice(lo, 0, found)
    if (kept.length > this.size) kept.pop()
  }
}

const unreadableOf = (location: string, error: SessionError): Unreadable => ({
  location,
  error: { code: error.code, message: error.line === undefined ? error.reason : `${error.reason} (line ${error.line})` }
})

const headerOf = (text: string): Either.Either<Header, SessionError> => {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (e) {
    return Either.left(sessionError("SESSION_INVALID_JSON", e instanceof Error ? e.message : String(e), { line: 1 }))
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return Either.left(sessionError("SESSION_INVALID_HEADER", "the header is not a JSON object", { line: 1 }))
  }
  return decodeHeader(value as { readonly [key: string]: unknown }, 1)
}

const inTime = (plan: Plan, timestamp: string): boolean => {
  const { since, until } = plan
  if (since !== undefined && (since.length === 10 ? timestamp.slice(0, 10) < since : timestamp < since)) return false
  if (until !== undefined && (until.length === 10 ? timestamp.slice(0, 10) > until : timestamp > until)) return false
  return true
}

const passes = (plan: Plan, entry: Entry): boolean => {
  if (plan.roles !== undefined && !plan.roles.has(roleOf(entry))) return false
  if (plan.models !== undefined) {
    const model = modelOf(entry)
    if (model === undefined || !plan.models.has(model)) return false
  }
  return inTime(plan, entry.timestamp)
}

const hitOf = (found: Found): Hit => {
  const model = modelOf(found.entry)
  return {
    location: found.location,
    session: found.header.id,
    entry: found.entry.id,
    parentId: found.entry.parentId,
    timestamp: found.entry.timestamp,
    role: roleOf(found.entry),
    ...(model === undefined ? {} : { model }),
    snippets: snippetsOf(found.text, found.marks)
  }
}

const reference = (plan: Plan, candidates: ReadonlyArray<Candidates>): SearchResult => {
  const best = new Best(plan.offset + plan.limit)
  const unreadable: Array<Unreadable> = []
  let total = 0
  let searched = 0
  for (const c of candidates) {
    searched++
    if ("error" in c) {
      unreadable.push(unreadableOf(c.location, c.error))
      continue
    }
    let problem: SessionError | undefined
    const header = headerOf(c.header)
    if (Either.isLeft(header)) {
      if (c.lines.some((line) => rawMatches(plan.query, line.text))) unreadable.push(unreadableOf(c.location, header.left))
      continue
    }
    const version = header.right.version
    for (const line of c.lines) {
      const decoded = decodeEntryLine(version, line.text, line.line)
      if (Either.isLeft(decoded)) {
        if (problem === undefined && rawMatches(plan.query, line.text)) problem = decoded.left
        continue
      }
      const entry = decoded.right
      if (!passes(plan, entry)) continue
      const text = referenceTextOf(entry)
      if (text === undefined) continue
      const marks = matchText(plan.query, text)
      if (marks === undefined) continue
      total++
      best.add({ location: c.location, header: header.right, entry, order: line.order, text, marks })
    }
    if (problem !== undefined) unreadable.push(unreadableOf(c.location, problem))
  }
  return {
    hits: best.kept.slice(plan.offset).map(hitOf),
    total,
    searched,
    unreadable: unreadable.sort((a, b) => (a.location < b.location ? -1 : a.location > b.location ? 1 : 0))
  }
}

// ---- Random corpora ---------------------------------------------------------------------------------

const candidatesOf = (sessions: ReadonlyArray<Session>): Array<Candidates> =>
  sessions.map((s, n) => {
    const location = `loc-${n % 3}-${n}`
    return n % 7 === 6 ? { location, error: sessionError("SESSION_INVALID_UTF8", "file is not valid UTF-8", { path: location }) } : everyLine(location, sessionLines(s))
  })

describe("the search run", () => {
  it("gives the reference's hits, order, snippets, total and unreadable sessions on random corpora and pages", () => {
    let hits = 0
    let unreadable = 0
    let paged = 0
    FastCheck.assert(FastCheck.property(FastCheck.array(session, { minLength: 1, maxLength: 6 }), options, (sessions, o) => {
      const plan = Either.getOrThrow(planOf(o))
      const candidates = candidatesOf(sessions)
      const expected = reference(plan, candidates)
      expect(Effect.runSync(run(plan, Stream.fromIterable(candidates)))).toEqual(expected)
      hits += expected.total
      if (expected.total > plan.offset + plan.limit && expected.hits.length > 0) paged++
      unreadable += expected.unreadable.length
    }), { numRuns: 1_500 })
    // The corpora reach what the comparison is about: hits beyond the page, and sessions reported.
    expect(hits).toBeGreaterThan(1_500)
    expect(unreadable).toBeGreaterThan(500)
    expect(paged).toBeGreaterThan(100)
  })

  it("answers from an index of the facts the library makes (entryFacts) as from every line, and runs again when the page contradicts it", () => {
    let decided = 0
    let contradicted = 0
    FastCheck.assert(FastCheck.property(FastCheck.array(session, { minLength: 1, maxLength: 6 }), options, FastCheck.boolean(), (sessions, o, lie) => {
      const plan = Either.getOrThrow(planOf(o))
      const request = requestOf(plan, undefined)
      const candidates = candidatesOf(sessions)
      const expected = Effect.runSync(run(plan, Stream.fromIterable(candidates)))
      if (!request.decidable) return
      // The index a backend would keep: each entry's facts, the decided entries in rank order.
      let fetched = 0
      const indexed = candidates.map((c): Candidates => {
        if ("error" in c) return c
        const factsOf = entryFacts(c.header)
        const facts = c.lines.map((line) => ({ line, facts: factsOf(line.text, line.line) }))
        const holds = (lexemes: ReadonlyArray<string>) => request.lexemes.every((l) => lexemes.includes(l))
        const entries = facts.filter(({ facts }) => facts.decoded?.searched === true && holds(facts.lexemes))
          .sort((a, b) => (a.facts.decoded!.timestamp > b.facts.decoded!.timestamp ? -1 : a.facts.decoded!.timestamp < b.facts.decoded!.timestamp ? 1 : a.line.order - b.line.order))
        const at = (i: number) => entries[i]!
        return {
          location: c.location,
          header: c.header,
          lines: facts.filter(({ facts }) => facts.decoded === undefined && holds(facts.lexemes)).map(({ line }) => line),
          entries: {
            size: entries.length,
            order: (i) => at(i).line.order,
            line: (i) => at(i).line.line,
            timestamp: (i) => at(i).facts.decoded!.timestamp,
            role: (i) => at(i).facts.decoded!.role,
            model: (i) => at(i).facts.decoded!.model
          },
          // A lying index: the page's lines come back cut short (the session changed under the index).
          fetch: (orders) =>
            Effect.sync(() => {
              fetched += orders.length
              return orders.map((order) => {
                const text = c.lines.find((line) => line.order === order)!.text
                return lie ? text.slice(0, -1) : text
              })
            })
        }
      })
      const again = Stream.fromIterable(candidates)
      const fetchedBefore = fetched
      const answered = Effect.runSync(run(plan, Stream.fromIterable(indexed), again))
      expect(answered).toEqual(expected)
      decided++
      if (lie && fetched > fetchedBefore && expected.hits.length > 0) contradicted++
    }), { numRuns: 1_000 })
    expect(decided).toBeGreaterThan(200)
    expect(contradicted).toBeGreaterThan(20)
  })

  it("decides a text as the marking matcher does, on random texts and queries", () => {
    FastCheck.assert(FastCheck.property(text, queryText, (t, q) => {
      const query = Either.getOrThrow(parseQuery(q))
      expect(matcherOf(query)(t)).toBe(matchText(query, t) !== undefined)
    }), { numRuns: 5_000 })
  })
})

/**
 * The hook through which a store hands a backend that keeps listings (a
 * database) the listing of its session with each commit, so that the listing
 * commits with the records it describes. The store only calls it; what a
 * listing holds belongs to `Sessions`, whose summary is the default, so that a
 * store made without a `Sessions` service keeps its listing all the same.
 * Providing `none` keeps no listing.
 */
import * as Context from "effect/Context"
import type { Entry, Header } from "../Record.js"
import type { ListingOf } from "../SessionJournal.js"
import { emptyScan, encodeSummary, type Scan, summarize } from "./summary.js"

/** The records a listing is made of: the header and every accepted entry, the batch being committed included. */
export interface Described {
  readonly header: Header
  readonly entries: ReadonlyArray<Entry>
}

export interface Lister {
  /** The listing text of `records` under the location the backend gives the session; undefined when none is kept. */
  readonly listing: ((location: string, records: Described) => string) | undefined
}

/** What each store's summaries have scanned so far: a store asks at every commit, and its entries only grow. */
const scans = new WeakMap<Described, Scan>()

/** The listing `Sessions` shows: a summary, as the JSON text a backend keeps. */
export const summaries: Lister = {
  listing: (location, records) => {
    let scan = scans.get(records)
    if (scan === undefined) scans.set(records, scan = emptyScan())
    return encodeSummary(summarize(location, records, scan))
  }
}

export const none: Lister = { listing: undefined }

/** What a backend asks for the listing of `records` (read when it asks), or undefined when none is kept. */
export const listingOf = (lister: Lister, records: Described): ListingOf | undefined => {
  const describe = lister.listing
  return describe === undefined ? undefined : (location) => describe(location, records)
}

/** The `Lister` a store asks for the listings it hands its backend: `summaries` unless provided. */
export class SessionLister extends Context.Reference<SessionLister>()("@session-tree/SessionLister", {
  defaultValue: (): Lister => summaries
}) {}

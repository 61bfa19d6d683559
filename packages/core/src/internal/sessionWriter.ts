/**
 * The backend's writer as a store uses it: it hands over one batch at a time,
 * keeps what the store must know of what the backend holds (its canonical size
 * and lines, whether a skipped tail is still there), and locks the store when a
 * failed commit could not be undone.
 */
import type * as Effect from "effect/Effect"
import type { Header } from "../Record.js"
import type { LockedError } from "../SessionError.js"
import type { AppendError, Batch, BlobBytes, Lines, Writer } from "../SessionJournal.js"
import type { CommittedHistory } from "./committed.js"
import { encodeAll, totalBytes } from "./entries.js"
import { type Lister, listingOf } from "./listing.js"

/** New lines for the backend, with the entry ID of each. */
export type NewLines = Lines & { readonly ids: ReadonlyArray<string> }

/** The empty batch of a flush: it asks for the canonical generation only. */
export const NOTHING: NewLines = { lines: [], sizes: [], ids: [] }

export class SessionWriter {
  /** Set by SESSION_ROLLBACK_FAILED: the backend's state is unproven, so nothing more is committed. */
  private lockedBy: LockedError | undefined = undefined
  /** The canonical size of what is committed, every line with its newline; unknown after a load until a cap needs it. */
  private bytes: number | undefined
  /** The canonical lines of what is committed, from when they are first computed until a commit has taken them. */
  private canonical: Lines | undefined
  /**
   * Whether the backend holds the canonical lines of what is committed: the lines a load read
   * until the first batch compares them, "other" while they differ and no commit has succeeded.
   */
  private held: ReadonlyArray<string> | "canonical" | "other"
  /** Whether the session still ends in a skipped incomplete tail that no commit has removed. */
  private tailNow: "none" | "incomplete"
  private readonly listing: Batch["listing"]
  /** The blobs the session holds, by hash, with their sizes: those read at load, then each commit's. */
  readonly blobs: Map<string, number>

  constructor(
    /** Where the session is, as the backend resolved it: what the spans of its commits name. */
    readonly location: string,
    private readonly writer: Writer,
    private readonly header: Header,
    private readonly history: CommittedHistory,
    lister: Lister,
    start: {
      readonly bytes: number | undefined
      readonly canonical: Lines | undefined
      /** The lines the backend read (a load), or "canonical" when it holds what the store gave it (a create). */
      readonly held: ReadonlyArray<string> | "canonical"
      readonly tail: "none" | "incomplete"
      readonly blobs?: ReadonlyMap<string, number> | undefined
    }
  ) {
    this.blobs = new Map(start.blobs)
    this.bytes = start.bytes
    this.canonical = start.canonical
    this.held = start.held
    this.tailNow = start.tail
    // Asked during a commit, when the history holds the batch's entries too.
    this.listing = listingOf(lister, {
      header,
      get entries() {
        return history.history.entries
      }
    })
  }

  get locked(): LockedError | undefined {
    return this.lockedBy
  }

  get tail(): "none" | "incomplete" {
    return this.tailNow
  }

  /** The canonical lines of everything committed, the header's first. */
  private accepted(): Lines {
    return this.canonical ??= encodeAll([this.header, ...this.history.entries])
  }

  /** The canonical lines of what is committed while the backend holds other lines for them (`Batch.canonical`). */
  private rewrite(): Lines | undefined {
    if (typeof this.held !== "string") this.held = sameLines(this.held, this.accepted().lines) ? "canonical" : "other"
    return this.held === "other" ? this.accepted() : undefined
  }

  committedBytes(): number {
    return this.bytes ??= totalBytes(this.accepted())
  }

  /**
   * Hands `lines` and the blobs they are the first to refer to to the backend; the caller tells
   * the outcome to `committed` (what is committed grows by `added` bytes) or `failed`.
   */
  write(lines: NewLines, blobs: ReadonlyArray<BlobBytes> = []): Effect.Effect<void, AppendError> {
    const canonical = this.rewrite()
    return this.writer.append({
      ...lines,
      listing: this.listing,
      ...(canonical !== undefined ? { canonical } : {}),
      ...(blobs.length > 0 ? { blobs } : {})
    })
  }

  /** A batch handed over by `write` is committed, with `added` bytes and `blobs`. */
  committed(added: number, blobs: ReadonlyArray<BlobBytes> = []): void {
    // Unknown stays unknown (a flush after a load): it is computed when a cap needs it.
    if (this.bytes !== undefined) this.bytes += added
    for (const blob of blobs) this.blobs.set(blob.hash, blob.size)
    this.canonical = undefined
    this.held = "canonical"
    this.tailNow = "none"
  }

  /** A batch handed over by `write` failed: SESSION_ROLLBACK_FAILED locks the store. */
  failed(error: AppendError): void {
    if (error._tag === "LockedError") this.lockedBy = error
  }
}

/** Whether `read` holds exactly the lines of `canonical`, in order. */
const sameLines = (read: ReadonlyArray<string>, canonical: ReadonlyArray<string>): boolean => {
  if (read.length !== canonical.length) return false
  for (let i = 0; i < read.length; i++) if (read[i] !== canonical[i]) return false
  return true
}

/**
 * A store's history: every accepted entry, and the entries of the batch being
 * committed after them. The batch's entries are there so that each append of
 * the batch is checked against the ones before it, but only committed entries
 * are ever visible; a failed commit removes the batch again.
 */
import type { History } from "../History.js"
import type { Entry } from "../Record.js"

export class CommittedHistory {
  /** How many entries of `history` are committed; the rest belong to the batch being committed. */
  private committed: number
  /** The frozen array `entries` gives, made on its first read after a commit, so that an append stays O(1). */
  private view: ReadonlyArray<Entry> | undefined = undefined

  /** `history` holds only committed entries when it is handed over. */
  constructor(readonly history: History) {
    this.committed = history.size
  }

  /** Every committed entry in commit order; a frozen array, replaced by each commit. */
  get entries(): ReadonlyArray<Entry> {
    return this.view ??= Object.freeze(this.history.entries.slice(0, this.committed))
  }

  /** A committed entry by ID. */
  get(id: string): Entry | undefined {
    return this.history.get(id, this.committed)
  }

  /** Makes every entry of the history committed: the batch's commit succeeded. */
  commit(): void {
    this.committed = this.history.size
    this.view = undefined
  }

  /** Removes the entries of a batch whose commit did not succeed. */
  rollback(): void {
    if (this.history.size > this.committed) this.history.truncate(this.committed)
  }
}

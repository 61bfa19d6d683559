import * as Schema from "effect/Schema"

/*
 * Defined apart from Codec.ts, which re-exports them, so that the codec's internals need nothing of
 * the public module: an application importing `@session-tree/ai/Agent` alone loads the codec's
 * internals before Codec.ts, which must not be evaluated in the middle of them.
 */

export const NAMESPACE = "session-tree"

export class BlobMissingError extends Schema.TaggedError<BlobMissingError>("@session-tree/ai/BlobMissingError")(
  "BlobMissingError",
  {
    blob: Schema.String,
    size: Schema.Number,
    reason: Schema.String
  }
) {
  /** The code of the core's errors for a blob that cannot be read. */
  readonly code = "SESSION_BLOB_MISSING" as const
  override get message(): string {
    return `${this.code}: ${this.reason}`
  }
}

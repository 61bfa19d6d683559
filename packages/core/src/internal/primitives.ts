/**
 * The Schemas both format versions share: IDs, timestamps, JSON objects.
 * A module of its own, so that each version's module can import them.
 */
import * as Schema from "effect/Schema"
import { isCanonicalTimestamp } from "./timestamp.js"

export const Id = Schema.String.pipe(Schema.minLength(1))
export const Timestamp = Schema.String.pipe(
  Schema.filter(isCanonicalTimestamp, { message: () => "expected a canonical ISO-8601 UTC timestamp" })
)

/** A JSON object; its values are checked to be JSON by the line parser (load) or the snapshot (append). */
export const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })


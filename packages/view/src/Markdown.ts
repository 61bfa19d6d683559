/**
 * A session's root-to-leaf path as a Markdown transcript (`export --format
 * markdown`), in either version of the format.
 *
 * Every value that comes from the session (message text, IDs, tool names,
 * arguments, timestamps, labels, titles, media types, file names) is untrusted
 * and is shown verbatim only inside code: texts and JSON in fenced blocks whose
 * fence is longer than any backtick run in them, single-line values in code
 * spans built the same way. So no content can close a block, start a heading,
 * add raw HTML or a link: the structure of the document is the renderer's
 * alone. Its only HTML is its own `<details>` around reasoning (collapsed by
 * default); its only links and images are http and https URLs of plain URL
 * characters and `data:` URLs of base64 raster images, checked before use. Terminal control
 * characters (all but tab, line feed and carriage return) are shown as their
 * `\uXXXX` escapes, as the text views show them, since a transcript is often
 * printed to a terminal.
 */
import type { Entry, Header } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/markdown.js"
import type { LeafOption } from "./internal/session.js"
import type { BlobReader } from "./internal/v2.js"

/**
 * Reads the bytes of a blob a file part refers to.
 *
 * @since 0.1.0
 * @category reexports
 */
export type { BlobReader }

/**
 * The leaf of the path shown; default the newest entry, `null` the empty path.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends LeafOption {
  /**
   * Reads the session's blobs (`SessionStore.blob`, `Loaded.blob`): each blob on the path is
   * then read and checked before the transcript names it, so a missing or corrupt blob fails the
   * render instead of appearing in it.
   */
  readonly blobs?: BlobReader | undefined
  /**
   * Everything the records hold for a program, not only what a reader needs: every entry's,
   * message's and call's ID, provider options (their keys), the model's meta (model, provider,
   * response, usage, stop reason), blob hashes, and a tool's JSON result beside its text.
   * Default: a transcript for a reader, whose sections refer to each other by number.
   */
  readonly verbose?: boolean | undefined
}

/**
 * Renders the root-to-`leaf` path of a session as Markdown: a header block
 * (title, created and updated times, entry counts, which leaf), then one
 * numbered section per message, user / assistant / tool result told apart, with
 * each assistant's tool calls (name, JSON arguments, the section that answers
 * it) and, for each tool result, the call it answers and whether it is an
 * error; a tool's result once (its text, or its JSON value when it has no text).
 * With `options.verbose`, every ID, provider option, model meta and blob hash too.
 *
 * A version-2 session is titled by its title entry when it has one, and shows
 * every entry of the path by its kind: a message's system prompt or parts in
 * order (text, reasoning collapsed, files, tool calls, provider-executed
 * results), its model, usage, stop reason and error; a compaction's summary and
 * what it keeps; a label, a title, a model change, a custom entry (its type and
 * data). A labelled entry shows its label (the newest label entry for it).
 *
 * A file held in a blob is one line naming it (media type, size, the start of
 * its hash): a transcript carries no blob's bytes. With `options.blobs`, each
 * blob on the path is read first; one the reader cannot give fails the render
 * with its error (SESSION_BLOB_MISSING, SESSION_BLOB_CORRUPT).
 *
 * `options.leaf` defaults to the newest entry (the last of `entries`, where a
 * loaded tree starts); `null` renders the header over an empty path. An ID that
 * is not an entry of `entries` fails with SESSION_UNKNOWN_ENTRY.
 *
 * `entries` are in commit order, as a store holds them.
 *
 * @since 0.1.0
 * @category rendering
 */
export const render: (
  header: Header,
  entries: ReadonlyArray<Entry>,
  options?: Options
) => Effect.Effect<string, SessionError> = internal.render

/**
 * A single-line value as a code span. A value holding a line break or another
 * control character is shown JSON-quoted, so the line stays one line and the
 * reader sees the escapes; the span's backtick fence is longer than any run in
 * the value, padded with spaces where CommonMark strips one.
 *
 * @since 0.1.0
 * @category rendering
 */
export const inlineCode: (value: string) => string = internal.inlineCode

/**
 * Text in a fenced code block, verbatim. The fence is backticks, at least three
 * and one more than the longest backtick run of the text, so no line of the
 * text can close it. The fence goes on a line of its own after the text, so a
 * final line break of the content stays visible as an empty last line.
 *
 * @since 0.1.0
 * @category rendering
 */
export const fencedBlock: (text: string, info?: string) => string = internal.fencedBlock

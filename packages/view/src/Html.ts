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
import type { Entry, Header } from "@session-tree/core/Record"
import type { SessionError } from "@session-tree/core/SessionError"
import type * as Effect from "effect/Effect"
import * as internal from "./internal/html.js"
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
 * `leaf`: the leaf of the active path; default the newest entry, `null` marks no path.
 *
 * @since 0.1.0
 * @category models
 */
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
 * Text for an HTML text node or a quoted attribute: the five markup characters
 * as references, and control characters (other than tab, line feed and carriage
 * return) as their visible Control Pictures, since a parser would drop NUL and
 * the others render as nothing.
 *
 * @since 0.1.0
 * @category rendering
 */
export const escapeHtml: (text: string) => string = internal.escapeHtml

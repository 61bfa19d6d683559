/**
 * A session as one self-contained HTML page (`export --format html`): every entry of every branch
 * as a tree, the active path marked, and any entry selectable to show its root-to-entry path as a
 * transcript.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Html from "./Html.js"
/**
 * The HTML view in parts, for a page that is served rather than exported whole
 * (`@session-tree/server`): the same rows, cards, facts and style as `Html.render`, laid out once
 * per session and asked for a part at a time, so that a session of 100,000 entries sends only
 * what is on screen.
 *
 * @since 0.2.0
 * @category modules
 */
export * as HtmlParts from "./HtmlParts.js"
/**
 * A session's root-to-leaf path as a Markdown transcript (`export --format markdown`), in either
 * version of the format.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Markdown from "./Markdown.js"
/**
 * Text and JSON views of a session for a terminal: the active path (`log`) and the whole tree
 * (`tree`), in either version of the format.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Text from "./Text.js"

/**
 * The links between a session and its subagents' sessions, as imports write them
 * (`docs/import.md`, "Subagents"): in the parent, a `custom` entry `session-tree:subagent` on the
 * conversation's branch right where the subagent started, naming its session and the tool call
 * that started it; in the subagent's session, its first entry, `session-tree:subagent-of`, naming
 * the parent's session (and the tool call, where the source says it).
 *
 * @since 0.2.0
 */
import * as links from "./internal/links.js"

/** @since 0.2.0 @category constants */
export const SUBAGENT: typeof links.SUBAGENT = links.SUBAGENT
/** @since 0.2.0 @category constants */
export const SUBAGENT_OF: typeof links.SUBAGENT_OF = links.SUBAGENT_OF

/**
 * A link to another session: its ID, the tool call that started the subagent (where known) and
 * the entry that holds the link.
 *
 * @since 0.2.0
 * @category models
 */
export type Link = links.Link

/**
 * The subagents' sessions a session's entries name, in entry order.
 *
 * @since 0.2.0
 * @category links
 */
export const subagentsOf: (entries: ReadonlyArray<{ readonly version: number }>) => ReadonlyArray<Link> = links.subagentsOf

/**
 * The session that started this one, when it is a subagent's.
 *
 * @since 0.2.0
 * @category links
 */
export const parentOf: (entries: ReadonlyArray<{ readonly version: number }>) => Link | undefined = links.parentOf

/**
 * The Promise facade of SPEC B7, for code outside Effect and for the checkpoint
 * test: `@session-tree/file`'s `Promise` module, which runs the Effect API over
 * the file backend.
 */
export { SessionError, SessionStore, SessionTree } from "@session-tree/file/Promise"
export type { CourseMessage, SessionEntry, SessionHeader, SessionOptions } from "@session-tree/file/Promise"

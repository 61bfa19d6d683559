/**
 * The Promise facade of SPEC B7, for code outside Effect and for the checkpoint
 * test: `@session-tree/file`'s `Promise` module, which runs the Effect API over
 * the file backend, held to version 1 of the format (the course format). It
 * creates version-1 sessions and reads nothing else: a version-2 header is
 * SESSION_UNSUPPORTED_VERSION. So its entries and messages are version-1 values.
 */
import * as Promise_ from "@session-tree/file/Promise"
import type { CourseMessage, SessionEntry, SessionHeader } from "@session-tree/file/Promise"
import * as NodeUtil from "node:util"

export { SessionError } from "@session-tree/file/Promise"
export type { CourseMessage, SessionEntry, SessionHeader, SessionOptions } from "@session-tree/file/Promise"

/**
 * The options with `version: 1` added. Copied by descriptor, so no getter of the caller runs here;
 * the library validates the rest. A Proxy is passed on as it is, for the library to refuse.
 */
const version1 = (options: unknown): Promise_.CreateOptions => {
  if (typeof options !== "object" || options === null || NodeUtil.types.isProxy(options) || Array.isArray(options)) {
    return (options === undefined ? { version: 1 } : options) as Promise_.CreateOptions
  }
  return Object.create(Object.getPrototypeOf(options), {
    ...Object.getOwnPropertyDescriptors(options),
    version: { value: 1, enumerable: true, writable: false, configurable: true }
  }) as Promise_.CreateOptions
}

/** One version-1 session file, held open for appending. */
export class SessionStore extends Promise_.SessionStore {
  static override create<S extends Promise_.SessionStore>(this: new(...args: never) => S, path: string, options?: Promise_.SessionOptions & { readonly id?: string }): Promise<S> {
    return Promise_.SessionStore.create.call(this as never, path, version1(options)) as Promise<S>
  }

  static override load<S extends Promise_.SessionStore>(this: new(...args: never) => S, path: string, options?: Promise_.SessionOptions): Promise<S> {
    return Promise_.SessionStore.load.call(this as never, path, version1(options)) as Promise<S>
  }

  static override open<S extends Promise_.SessionStore>(this: new(...args: never) => S, path: string, options?: Promise_.SessionOptions): Promise<S> {
    return Promise_.SessionStore.open.call(this as never, path, version1(options)) as Promise<S>
  }

  override get header(): SessionHeader {
    return super.header as SessionHeader
  }

  override get entries(): ReadonlyArray<SessionEntry> {
    return super.entries as ReadonlyArray<SessionEntry>
  }

  override get(id: string): SessionEntry | undefined {
    return super.get(id) as SessionEntry | undefined
  }

  override append(parentId: string | null, message: CourseMessage): Promise<SessionEntry> {
    return super.append(parentId, message) as Promise<SessionEntry>
  }
}

/** The branches of a version-1 store. */
export class SessionTree extends Promise_.SessionTree {
  override get entries(): ReadonlyArray<SessionEntry> {
    return super.entries as ReadonlyArray<SessionEntry>
  }

  override get activeEntries(): ReadonlyArray<SessionEntry> {
    return super.activeEntries as ReadonlyArray<SessionEntry>
  }

  override get activeMessages(): ReadonlyArray<CourseMessage> {
    return super.activeMessages as ReadonlyArray<CourseMessage>
  }

  override append(message: CourseMessage): Promise<SessionEntry> {
    return super.append(message) as Promise<SessionEntry>
  }

  override children(id: string | null): ReadonlyArray<SessionEntry> {
    return super.children(id) as ReadonlyArray<SessionEntry>
  }

  override get leaves(): ReadonlyArray<SessionEntry> {
    return super.leaves as ReadonlyArray<SessionEntry>
  }

  override pathTo(id: string): ReadonlyArray<SessionEntry> {
    return super.pathTo(id) as ReadonlyArray<SessionEntry>
  }
}

/**
 * Objects that live as long as the module, so that the loader's optimized code
 * survives between loads.
 *
 * V8 reaches the hidden class of a History (its fields are added one by one)
 * and of a frozen entry, message or tool call only through transitions it
 * holds weakly. Once the last object of such a class is collected, the class
 * is dropped, and so is every piece of optimized code that depends on it (the
 * checks run once per loaded entry); the next load then starts from
 * unoptimized code. One live History and one entry of each message kind, built
 * by the loader's own path, keep those classes alive.
 */
import { History } from "../History.js"
import { decodeCanonicalLine, type SessionEntry } from "../Record.js"

const line = (message: string): string =>
  `{"type":"entry","version":1,"id":"a","parentId":"p","timestamp":"2026-01-02T03:04:05.006Z","message":${message}}`

/**
 * Exported, not only declared: a module-level value that nothing reads may die
 * once the module has run, and then it keeps nothing alive. The History here
 * is never used; the entries are frozen.
 */
export const kept: { readonly history: History; readonly entries: ReadonlyArray<SessionEntry | undefined> } = {
  history: new History(),
  entries: [
    line("{\"role\":\"user\",\"id\":\"m\",\"content\":\"\"}"),
    line("{\"role\":\"assistant\",\"id\":\"m\",\"content\":\"\",\"toolCalls\":[{\"id\":\"c\",\"name\":\"n\",\"arguments\":{}}]}"),
    line("{\"role\":\"tool\",\"id\":\"m\",\"toolCallId\":\"c\",\"toolName\":\"n\",\"content\":\"\",\"isError\":false}")
  ].map((text) => decodeCanonicalLine(JSON.parse(text), text))
}

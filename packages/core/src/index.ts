/**
 * Claude Code transcripts (`~/.claude/projects/<project>/<session>.jsonl`, and the subagents'
 * `agent-<id>.jsonl` beside them or under `<session>/subagents/`) → version-2 sessions (`import`,
 * `sync`; `docs/import.md` gives the mapping).
 *
 * @since 0.1.0
 * @category modules
 */
export * as ClaudeSession from "./ClaudeSession.js"
/**
 * Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`) → a version-2 session
 * (`docs/import.md`, "Codex rollouts", gives the mapping, kind by kind).
 *
 * @since 0.2.0
 * @category modules
 */
export * as CodexSession from "./CodexSession.js"
/**
 * Record lines → a validated history, and records → their canonical lines (`docs/format.md`).
 *
 * @since 0.1.0
 * @category modules
 */
export * as Codec from "./Codec.js"
/**
 * Context: what a model is shown of one branch.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Conversation from "./Conversation.js"
/**
 * History: the entries of one session in commit order, with the indexes that check IDs, parents
 * and tool links (`docs/format.md`, "Tool links") in time independent of the size of the history
 * for the usual shapes.
 *
 * @since 0.1.0
 * @category modules
 */
export * as History from "./History.js"
/**
 * The common front of every import, by `import FILE` or by `sync`: which format a source is, read
 * from its content; its lines, with a torn last line (the agent still writing it) left out and
 * reported; damage refused whole, naming the line, or (`skipDamaged`) left out and recorded, each
 * line (its number, bytes and why) in a `custom` entry `session-tree:damaged-line` of the session
 * and in the result; and the format's converter (`ClaudeSession`, `PiSession`, `CodexSession`),
 * whose sessions, counts and withheld lines the result holds.
 *
 * @since 0.2.0
 * @category modules
 */
export * as Import from "./Import.js"
/**
 * One line of text → one plain JSON object (`docs/format.md`, "Lines, caps and the tail").
 *
 * @since 0.1.0
 * @category modules
 */
export * as Json from "./Json.js"
/**
 * Where session and entry IDs come from.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Ids from "./Ids.js"
/**
 * The memory backend: sessions as arrays of canonical lines in a `Map`, for tests and examples.
 *
 * @since 0.1.0
 * @category modules
 */
export * as MemoryJournal from "./MemoryJournal.js"
/**
 * Caller-supplied options of the Promise facade: `now` (epoch milliseconds, for timestamps) and
 * `createId` (entry IDs), turned into the `CallerClock` and `Ids` services the Effect API reads.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Options from "./Options.js"
/**
 * Pi coding-agent session files (format v3, `@mariozechner/pi-coding-agent`) → this project's
 * records (`import --from pi`).
 *
 * @since 0.1.0
 * @category modules
 */
export * as PiSession from "./PiSession.js"
/**
 * Records: the header, the entries and Message IR v1, defined once, as Schemas (`docs/format.md`,
 * "Records" and "Message IR v1").
 *
 * @since 0.1.0
 * @category modules
 */
export * as Record from "./Record.js"
/**
 * Version 2, the agent format: its header, its six entry kinds and Message IR v2, defined once,
 * as Schemas (`docs/format.md`, "Version 2").
 *
 * @since 0.1.0
 * @category modules
 */
export * as RecordV2 from "./RecordV2.js"
/**
 * The library's errors, one class for each party that must act: the caller (`InputError`),
 * whoever repairs stored data (`CorruptError`), a caller that may reload and retry
 * (`ConflictError`), the operator of the disk, network or server (`IoError`), and the operator of
 * a store left in an unproven state (`LockedError`).
 *
 * @since 0.1.0
 * @category reexports
 */
export * from "./SessionError.js"
/**
 * Search across sessions: words and phrases in every session's message text, tool arguments and
 * results (`docs/serve.md`, "Search"), the same answers on every backend.
 *
 * @since 0.2.0
 * @category modules
 */
export * as Search from "./Search.js"
/**
 * The port for many sessions: which sessions a backend holds, and a token that changes whenever
 * one of them changes, so that a listing knows what it must read again.
 *
 * @since 0.1.0
 * @category modules
 */
export * as SessionCatalog from "./SessionCatalog.js"
/**
 * The port through which a backend says what changed, as it changes: a file written or removed in
 * a directory (`fs.watch`), a commit in a database (`LISTEN`/`NOTIFY`, sent in the commit's
 * transaction).
 *
 * @since 0.2.0
 * @category modules
 */
export * as SessionChanges from "./SessionChanges.js"
/**
 * The port between the store and a backend: a backend persists the canonical lines of a session's
 * records, reads them back, and says whether another writer got there first.
 *
 * @since 0.1.0
 * @category modules
 */
export * as SessionJournal from "./SessionJournal.js"
/**
 * Sessions: the many sessions of one backend — create, load and read by location, list them
 * newest change first, the most recently changed one, fork a branch into a new session, delete a
 * whole session, export the canonical JSONL generation, import records from elsewhere.
 *
 * @since 0.1.0
 * @category modules
 */
export * as Sessions from "./Sessions.js"
/**
 * The links between a session and its subagents' sessions, as imports write them
 * (`docs/import.md`, "Subagents"): in the parent, a `custom` entry `session-tree:subagent` on the
 * conversation's branch right where the subagent started, naming its session and the tool call
 * that started it; in the subagent's session, its first entry, `session-tree:subagent-of`, naming
 * the parent's session (and the tool call, where the source says it).
 *
 * @since 0.2.0
 * @category modules
 */
export * as Subagents from "./Subagents.js"
/**
 * Sync (`session-tree sync SOURCE… --to DIR | --db URL`, `docs/sync.md`): every transcript under
 * the given files and directories (Claude Code projects, Codex sessions, Pi sessions; the format
 * detected from the content) kept as one session each, subagents each their own, with IDs derived
 * from the source, so that a rerun is idempotent: - an unchanged source costs the `stat` its walk
 * already made, and writes nothing; - a grown one appends its new complete entries, in one commit
 * per session; - a source whose imported part changed is reported (SESSION_SOURCE_CHANGED) and
 * left alone; - what a source is still writing waits: a torn last line, and a response whose
 * blocks may still be arriving, until a later line shows it complete or the source has been quiet
 * for `quietMs` (judged by its modification time).
 *
 * @since 0.2.0
 * @category modules
 */
export * as Sync from "./Sync.js"
/**
 * SessionStore: one session, its accepted history in memory, and durable appends through
 * whichever backend provides the `SessionJournal`.
 *
 * @since 0.1.0
 * @category modules
 */
export * as SessionStore from "./SessionStore.js"
/**
 * SessionTree: the current leaf of a session and the root-to-leaf projection of its entries.
 *
 * @since 0.1.0
 * @category modules
 */
export * as SessionTree from "./SessionTree.js"
/**
 * Usage across sessions: the tokens (and, where the usage carries it, the cost) that version-2
 * assistant messages record in `meta.usage`, summed per session, day or model (`session-tree
 * stats`, `Sessions.stats`, the server's list).
 *
 * @since 0.2.0
 * @category modules
 */
export * as Stats from "./Stats.js"
